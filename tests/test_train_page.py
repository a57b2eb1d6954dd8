"""The Train page through AppTest: off when read-only, names refused with one line and no path, a sweep owned
by the session that started it (the real click path is tests/test_browser.py's)."""

import time

import pytest
from apptest import ROOT, open_page
from streamlit.testing.v1 import AppTest


def test_train_page_is_off_when_read_only(monkeypatch, stores_root):
    monkeypatch.setenv("ATTENTION_LAB_READONLY", "1")
    at = open_page("train")
    assert any("Training is off here" in i.value for i in at.info)
    monkeypatch.delenv("ATTENTION_LAB_READONLY")
    stores_root.chmod(0o555)  # an operator's read-only stores directory holds for a root server too
    try:
        at = open_page("train")
        assert any("Training is off here" in i.value for i in at.info)
    finally:
        stores_root.chmod(0o755)


def train_page() -> AppTest:
    """The Train page run as its own script. Through app.py's router AppTest (streamlit 1.67) delivers the
    button's click to the page but the page reads it as not clicked; a real server does register it, which
    tests/test_browser.py checks by clicking Start in chromium. Run alone, the page goes through
    ui.require_router's switch to st.navigation (a rerun) exactly as on a server's first page load."""
    at = AppTest.from_file(str(ROOT / "pages" / "train.py"), default_timeout=180)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _train(at: AppTest, name: str, steps: int = 200) -> AppTest:
    at.text_input(key="tr_store").set_value(name)
    at.multiselect(key="tr_attn").set_value(["standard"])
    at.multiselect(key="tr_tasks").set_value(["reverse"])
    at.number_input(key="tr_seeds").set_value(1)
    at.number_input(key="tr_steps").set_value(steps)
    at.button(key="tr_start").click()
    return at.run()


@pytest.mark.parametrize("name", ["data", "../x", "/tmp/x", "a/b", "x" * 65, "sp ace"])
def test_train_refuses_targets_outside_the_root(name, stores_root):
    at = _train(train_page(), name)
    assert at.error and "store name:" in at.error[0].value
    assert not any(stores_root.iterdir())


@pytest.mark.parametrize("entry", ["loop", "linkout", "afile", "dangling"])
def test_train_says_taken_for_any_unlisted_entry_with_no_traceback_or_path(entry, stores_root, tmp_path):
    target = {"loop": stores_root / "loop", "linkout": tmp_path, "dangling": tmp_path / "gone"}
    if entry == "afile":
        (stores_root / entry).write_text("not a store")
    else:
        (stores_root / entry).symlink_to(target[entry])
    at = _train(train_page(), entry, steps=10)
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert errors == [f"store name: {entry!r} is taken; pick another name"]
    assert str(stores_root) not in " ".join(errors) and str(tmp_path) not in " ".join(errors)


def test_a_sweep_belongs_to_the_session_that_started_it(stores_root):
    from core.dashboard import jobs

    first = _train(train_page(), "mine", steps=2000)  # long enough to still run while a second session looks
    assert not first.error, [e.value for e in first.error]
    job = jobs.current()
    assert job is not None and job.store_name == "mine" and (stores_root / "mine").is_dir()
    assert job.state == "running" and [b for b in first.run().button if b.label == "Cancel"]
    second = train_page()  # another browser session
    assert job.state == "running" and "another visitor" in " ".join(p.proto.text for p in second.get("progress"))
    assert not [b for b in second.button if b.label == "Cancel"]
    first.button(key="tr_cancel").click().run()  # its owner can cancel it
    while job.state == "running":
        time.sleep(0.1)
    assert job.state == "cancelled" and not list((stores_root / "mine").glob("runs/*.parquet"))


def test_a_finished_sweep_reports_its_counts_to_its_session(stores_root):
    """(That the new store is in the same session's Store list at once is checked in chromium, test_browser.py:
    AppTest runs the Train page without the router's sidebar.)"""
    from core.dashboard import jobs

    at = _train(train_page(), "fresh", steps=10)
    assert not at.exception and not at.error, [e.value for e in at.error]
    job = jobs.current()
    while job.state == "running":
        time.sleep(0.1)
    at.run()
    assert any("trained 1 runs" in s.value for s in at.success), [s.value for s in at.success]
