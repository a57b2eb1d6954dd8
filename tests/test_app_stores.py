"""The app against the stores it may read: empty, missing, crafted or broken ones, and URLs that probe outside them."""

import shutil
from pathlib import Path

import pandas as pd
import pytest
from apptest import PAGES, ROOT, open_page, page_text, specs

from core.results import packs


@pytest.mark.parametrize("page", list(PAGES))
def test_empty_store_shows_the_command_not_a_traceback(page, stores_root):
    (stores_root / "empty").mkdir()
    at = open_page(page, store="empty")
    if page == "train":
        assert at.button or at.get("form")
        return
    want = "python -m core pretrained" if page == "in_practice" else "python -m core sweep"
    assert any(want in i.value for i in at.info), [i.value for i in at.info]


@pytest.mark.parametrize("probe", ["/etc", "/nonexistent", "../../../../etc", "escape", "nope", "x/../data", "data/x"])
def test_store_in_the_url_reads_only_named_stores_and_echoes_no_path(probe, stores_root, tmp_path):
    outside = tmp_path / "outside"
    (outside / "runs").mkdir(parents=True)
    (stores_root / "escape").symlink_to(outside)  # a symlink out of the root is refused like any other
    at = open_page("overview", store=probe)
    assert at.sidebar.selectbox(key="store").value == "data"  # the bundled results, nothing else
    text = page_text(at) + " ".join(w.value for w in at.sidebar.get("warning"))
    for leak in (str(ROOT), str(tmp_path), "/etc", "nonexistent", "is not a directory"):
        assert leak not in text
    warnings = [w.value for w in at.sidebar.get("warning")]
    assert warnings == ["That store is not available here; showing the bundled results."]


def test_a_named_store_under_the_root_is_offered_and_opens(stores_root):
    shutil.copytree(ROOT / "data" / "packs", stores_root / "mine" / "packs")
    at = open_page("overview", store="mine")
    assert at.sidebar.selectbox(key="store").options == ["data", "mine"]
    assert at.sidebar.selectbox(key="store").value == "mine" and not at.sidebar.get("warning")


@pytest.mark.parametrize("page", ["similarity", "attention_maps"])
def test_missing_weights_are_a_caption_and_broken_ones_a_warning(page, stores_root):
    from core.analysis import findings
    from core.results import store as st

    store = stores_root / "damaged"
    for sub in ("packs", "weights"):
        shutil.copytree(ROOT / "data" / sub, store / sub)
    best = findings.at_best_lr(findings.at_main_size(st.load_runs(store)))  # what the page shows by default
    kept = best[(best.attention == "standard") & best.run_id.map(lambda r: st.weights_path(store, r).exists())]
    gone, broken = kept.run_id.iloc[:2]
    st.weights_path(store, gone).unlink()
    st.weights_path(store, broken).write_bytes(b"not safetensors")
    at = open_page(page, store="damaged", attn="standard,stacked")
    warning = " ".join(w.value for w in at.get("warning"))
    assert f"weights/{broken}.safetensors" in warning and f"weights/{gone}.safetensors" not in warning
    assert any("keep no weights" in c.value for c in at.caption)
    assert any(f"weights/{gone}.safetensors" in t.value for t in at.text)  # listed in the expander
    assert len(specs(at)) >= 1


def test_in_practice_shows_any_number_of_models_and_a_store_without_an_encoder(stores_root, tmp_path):
    from test_checkpoints import gpt2, llama

    from core.analysis import checkpoints
    from core.results import store as st

    store = stores_root / "mine"
    (store / "runs").mkdir(parents=True)
    keep = st.load_runs(ROOT / "data")
    keep = keep[(keep.attention == "standard") & (keep.task == "reverse")].run_id[:3]
    packs.unpack(ROOT / "data", store, keep)
    for rid in keep:
        (store / "weights").mkdir(exist_ok=True)
        if st.weights_path(ROOT / "data", rid).exists():
            shutil.copy(st.weights_path(ROOT / "data", rid), store / "weights")
    for make, name in ((llama, "tiny-llama"), (gpt2, "tiny-gpt2")):
        make(tmp_path / name)
        checkpoints.run(store, tmp_path / name, log=lambda *_: None)
    at = open_page("in_practice", store="mine")
    assert not at.exception and not at.warning, [w.value for w in at.warning]
    assert any("decoders" in i.value and "only" in i.value for i in at.info)
    names = {t.get("name") for spec in specs(at) for t in spec["data"]}
    assert {"tiny-llama", "tiny-gpt2"} <= names


CRAFTED = [
    ("runtime", "bench/training.parquet", "engine"),
    ("runtime", "bench/attention.parquet", "ratio"),
    ("similarity", "analysis/init.parquet", "value"),
    ("similarity", "analysis/random.parquet", "by_construction"),
]


@pytest.mark.parametrize("page, table, drop", CRAFTED)
def test_a_crafted_table_missing_a_column_is_skipped_not_a_crash(page, table, drop, stores_root):
    """Valid metadata, a required column gone: the schema layer skips the file (warning the server log), the
    page renders as for a store without that table."""
    from core.results import store as st

    store = stores_root / "crafted"
    for sub in ("packs", "weights", "bench", "analysis"):
        shutil.copytree(ROOT / "data" / sub, store / sub)
    path = store / table
    st.write_table(path, pd.read_parquet(path).drop(columns=drop), st.read_meta(path))
    at = open_page(page, store="crafted", attn="standard,stacked", tasks="reverse")
    assert not at.exception, [e.value for e in at.exception]


def test_unreadable_run_files_are_a_counted_caption_in_the_sidebar(stores_root):
    from core.results import store as st

    store = stores_root / "damaged"
    (store / "runs").mkdir(parents=True)
    keep = st.load_runs(ROOT / "data")
    packs.unpack(ROOT / "data", store, keep[(keep.attention == "standard") & (keep.task == "reverse")].run_id[:3])
    (store / "runs" / "garbled.parquet").write_bytes(b"not a run")
    (store / "runs" / "loop.parquet").symlink_to("loop.parquet")  # cannot even be stat-ed: counted too
    at = open_page("loss_curves", store="damaged")
    assert any("2 run file(s) in this store cannot be read" in c.value for c in at.sidebar.caption)
    assert any("runs/loop.parquet" in t.value for t in at.sidebar.text)
    assert any("runs/garbled.parquet" in t.value for t in at.sidebar.text)


def _mode_000(monkeypatch, folder: Path):
    """What a non-root server meets at a mode-000 folder: EACCES listing it, and stat-ing or opening anything in
    it (injected in Python's calls: tests run as root, which reads anything)."""
    import builtins
    import errno
    import os

    def guard(real, strictly_inside: bool):
        def call(path, *a, **kw):
            p = os.fspath(path) if not isinstance(path, int) else ""
            if p.startswith(f"{folder}/") or (not strictly_inside and p == str(folder)):
                raise PermissionError(errno.EACCES, "Permission denied", p)
            return real(path, *a, **kw)

        return call

    for where, name, strict in (
        (os, "scandir", False),
        (os, "listdir", False),
        (os, "stat", True),
        (builtins, "open", True),
    ):
        monkeypatch.setattr(where, name, guard(getattr(where, name), strict))


@pytest.mark.parametrize(
    "folder, page", [("packs", "overview"), ("weights", "similarity"), ("analysis", "learning_rate")]
)
def test_a_store_folder_the_server_cannot_read_is_one_named_warning(stores_root, monkeypatch, folder, page):
    from streamlit.testing.v1 import AppTest

    store = stores_root / "locked"
    shutil.copytree(ROOT / "data", store)
    _mode_000(monkeypatch, store / folder)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["store"] = "locked"
    at.run()
    if page != "overview" and not at.warning:
        at.switch_page(f"pages/{page}.py")
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    said = [w.value for w in at.warning if "cannot be read here" in w.value]
    assert len(said) == 1 and f"(Permission denied: locked/{folder}" in said[0], at.warning
    assert str(stores_root) not in " ".join(w.value for w in at.warning)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_in_practice_with_no_finite_pretrained_value_says_so(stores_root, value):
    from core.results import store as st

    store = stores_root / "crafted"
    shutil.copytree(ROOT / "data", store, ignore=shutil.ignore_patterns("pretrained"))
    pre = st.load_named(ROOT / "data", "pretrained")
    for model, part in pre.groupby("model"):
        st.write_table(store / "pretrained" / f"{model}.parquet", part.assign(value=value), {"kind": "pretrained"})
    at = open_page("in_practice", store="crafted")
    assert any("No pretrained results in this store" in i.value for i in at.info)
