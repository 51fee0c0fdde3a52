"""Shared fixtures: every test gets its own real SQLite file, and nothing touches the user's store."""

from __future__ import annotations

import pytest

from memstore import MemoryStore

SEED_SAMPLE = [
    {"id": "m1", "text": "User prefers dark mode.", "timestamp": 10, "importance": 3},
    {"id": "m2", "text": "  user prefers   DARK mode ", "timestamp": 20, "importance": 1},
    {"id": "m3", "text": "Deploys on Fridays", "timestamp": 5, "importance": 5},
]


@pytest.fixture(autouse=True)
def isolated_app_dir(tmp_path, monkeypatch):
    """Point memstore's default location into the test's temp dir."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("MEMSTORE_DB", raising=False)


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "store.db"


@pytest.fixture
def store(db_path):
    with MemoryStore(db_path) as opened:
        yield opened
