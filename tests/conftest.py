"""Fixtures every test file may use."""

import pytest


@pytest.fixture
def stores_root(tmp_path, monkeypatch):
    root = tmp_path / "stores"
    root.mkdir()
    monkeypatch.setenv("ATTENTION_LAB_STORES", str(root))
    return root
