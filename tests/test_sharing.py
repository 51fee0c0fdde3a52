"""Sharing the store file with other users of SQLite in the same process loses nothing.

Each test runs tests/sharing_child.py in a child process of the Python running the tests (the test
command runs this module under two builds: one whose `sqlite3` can load extensions and one whose
cannot), which writes through memstore while LangGraph's SqliteSaver or a plain `sqlite3`
connection uses the same file, prints what memstore acknowledged, and then is killed, exits without
cleanup, or closes. The parent then reads the file with the real `sqlite3` shell: every
acknowledged write is there, and the file passes `PRAGMA integrity_check`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memstore import MemoryStore
from memstore.db import sqlite_driver

pytestmark = pytest.mark.every_python

CHILD = Path(__file__).with_name("sharing_child.py")
# (how the child ends, the semantic extra importable, the store has vectors)
SETUPS = [
    pytest.param("kill", True, True, id="kill-semantic-vectors"),
    pytest.param("exit", True, False, id="exit-semantic"),
    pytest.param("kill", False, False, id="kill-no-semantic"),
    pytest.param("exit", False, True, id="exit-no-semantic-store-with-vectors"),
]


def shell(db: Path, sql: str) -> str:
    done = subprocess.run([shutil.which("sqlite3") or "sqlite3", str(db), sql], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def prepared(db: Path, vectors: bool, model_dir: Path | None) -> Path:
    """A store file (with embeddings enabled on the real model, when `vectors`)."""
    with MemoryStore(db) as store:
        if vectors:
            assert model_dir is not None
            store.enable_embeddings(model_dir)
    return db


def run_child(scenario: str, db: Path, end: str, semantic: bool, vectors: bool) -> list[str]:
    """The writes the child saw acknowledged, after it ended as told."""
    argv = [sys.executable, str(CHILD), scenario, str(db), end]
    argv += [] if semantic else ["--no-semantic"]
    argv += ["--vectors"] if vectors else []
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    expected_code = -9 if end == "kill" else 0
    assert done.returncode == expected_code, done.stderr[-3000:]
    return done.stdout.split()


def intact(db: Path) -> None:
    assert shell(db, "PRAGMA integrity_check;") == "ok"


def test_memstore_opens_stores_with_the_sqlite3_every_other_library_uses(monkeypatch):
    import sqlite3

    assert sqlite_driver() is sqlite3
    monkeypatch.setenv("MEMSTORE_SQLITE_LIBRARY", "sqlean")  # the documented opt-in
    assert sqlite_driver().__name__ == "sqlean"


def test_an_unknown_sqlite_library_is_one_line_and_exit_1(tmp_path):
    done = subprocess.run(
        [str(Path(sys.executable).with_name("memstore")), "--db", str(tmp_path / "a.db"), "add", "x"],
        capture_output=True, text=True, env={**os.environ, "MEMSTORE_SQLITE_LIBRARY": "apsw"}, timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == ["Error: MEMSTORE_SQLITE_LIBRARY='apsw': must be sqlite3 or sqlean"]


@pytest.mark.slow
@pytest.mark.parametrize(("end", "semantic", "vectors"), [*SETUPS, pytest.param("close", True, True, id="close-semantic-vectors")])
def test_langgraph_checkpointer_and_memstore_in_one_file_keep_every_acknowledged_write(tmp_path, model_dir, end, semantic, vectors):
    db = prepared(tmp_path / "agent.db", vectors, model_dir)
    acknowledged = run_child("checkpointer", db, end, semantic, vectors)
    assert acknowledged == [f"fact-{turn}" for turn in range(1, 6)]
    intact(db)
    assert sorted(shell(db, "SELECT fact_key FROM memories WHERE namespace = 'user.1';").split()) == sorted(acknowledged)
    # LangGraph's own data: each of the 5 turns left its checkpoints, the last one the final state.
    assert int(shell(db, "SELECT count(DISTINCT checkpoint_id) FROM checkpoints WHERE thread_id = 't1';")) >= 5 * 3


@pytest.mark.slow
@pytest.mark.parametrize(("end", "semantic", "vectors"), SETUPS)
def test_a_sqlite3_reader_between_adds_loses_none_of_them(tmp_path, model_dir, end, semantic, vectors):
    db = prepared(tmp_path / "agent.db", vectors, model_dir)
    acknowledged = run_child("reader", db, end, semantic, vectors)
    assert len(acknowledged) == 40
    intact(db)
    assert shell(db, "SELECT count(*) FROM memories;") == "40"
    assert sorted(shell(db, "SELECT id FROM memories;").split()) == sorted(acknowledged)


@pytest.mark.slow
@pytest.mark.parametrize(("end", "semantic", "vectors"), SETUPS)
def test_a_langgraph_put_over_a_key_after_a_sqlite3_read_keeps_both_versions(tmp_path, model_dir, end, semantic, vectors):
    db = prepared(tmp_path / "agent.db", vectors, model_dir)
    assert run_child("overwrite", db, end, semantic, vectors) == ["colour-0", "colour-1"]
    intact(db)
    assert shell(db, "SELECT text FROM memories WHERE namespace = 'user';") == "favourite colour, version 1"
    assert shell(db, "SELECT text FROM memory_archive WHERE namespace = 'user';") == "favourite colour, version 0"


@pytest.mark.slow
@pytest.mark.parametrize(("end", "semantic", "vectors"), SETUPS[:2])
def test_an_mcp_server_a_langgraph_store_a_reader_a_backup_and_check_in_one_process_lose_nothing(tmp_path, model_dir, end, semantic, vectors):
    db = prepared(tmp_path / "agent.db", vectors, model_dir)
    acknowledged = run_child("mixed", db, end, semantic, vectors)
    assert len(acknowledged) == 21 and "backup" in acknowledged
    intact(db)
    ids = set(shell(db, "SELECT id FROM memories WHERE namespace = 'agent' AND fact_key IS NULL;").split())
    keys = set(shell(db, "SELECT fact_key FROM memories WHERE namespace = 'agent' AND fact_key IS NOT NULL;").split())
    assert ids | keys == set(acknowledged) - {"backup"}
    backup = Path(f"{db}.backup")
    intact(backup)
    assert shell(backup, "SELECT count(*) FROM memories;") == "10"  # the five turns before it, two writes each
