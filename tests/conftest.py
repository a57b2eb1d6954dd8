"""Fixtures every test file may use."""

import functools
import sys

import pytest


@pytest.fixture(autouse=True, scope="session")
def _scan_installed_components_once():
    """Every new AppTest scans every installed distribution's metadata for Streamlit components (0.3 s each on
    this idle machine, a hundred-odd AppTests a run); nothing is installed while the tests run, so scan once."""
    from streamlit.components.v2 import manifest_scanner

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            manifest_scanner, "scan_component_manifests", functools.cache(manifest_scanner.scan_component_manifests)
        )
        yield


@pytest.fixture(autouse=True)
def _main_module_kept():
    """An AppTest run leaves its script as sys.modules["__main__"] (Streamlit's script runner installs it there);
    every spawned process and forkserver started later would then import, and so run, that page as its main
    module. Put the test process's own back after each test."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


@pytest.fixture
def stores_root(tmp_path, monkeypatch):
    root = tmp_path / "stores"
    root.mkdir()
    monkeypatch.setenv("ATTENTION_LAB_STORES", str(root))
    return root


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """An empty stores root for one browser module's server."""
    return tmp_path_factory.mktemp("stores")


@pytest.fixture(scope="module")
def server(stores):
    """A fresh streamlit server for one browser module: (url, process)."""
    from browser import serving

    with serving(stores) as served:
        yield served


@pytest.fixture(scope="session")
def extension(tmp_path_factory):
    """Store a: a criterion sweep to cap 60, then extended to 150; store b: swept to 150 straight. Read only:
    a test that changes a store copies it first."""
    from tiny import criterion_sweep

    from core.results import store as st

    tmp = tmp_path_factory.mktemp("extension")
    criterion_sweep(tmp / "a", 60)
    short = st.load_runs(tmp / "a")
    assert (short.stop == "cap").any() and (short.stop != "cap").any()  # some go on from their saved state
    criterion_sweep(tmp / "a", 150)
    criterion_sweep(tmp / "b", 150)
    return tmp / "a", tmp / "b"
