"""Fixtures every test file may use."""

import pytest


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
