"""`memstore copy`: a whole store, history included, moved SQLite -> PostgreSQL -> SQLite exactly,
and what works on the copy as on the original (restore of an old run, recall as of a moment,
pending vectors, dismissed flags, the next incremental run)."""

from __future__ import annotations

import json
import os
import random
import time

import pytest
from click.testing import CliRunner
from sqlalchemy import Text, cast, select

from memstore import MemoryStore
from memstore.cli import cli
from memstore.db import make_engine, read_transaction
from memstore.records import now_ms
from memstore.schema import FTS_TABLE, VECTOR_INDEX_TABLE, metadata
from memstore.vectors.storage import EmbeddingModel
from memstore.transfer import copy_into

from . import copy_history
from .sqlitelib import sqlite3
from .test_semantic_store import FACTS

# The source's own vector index is derived data, rebuilt (or not, without the extension) in the target.
DERIVED_SETTINGS = ("vector_index",)


def run(*args: str, db: str | None = None):
    return CliRunner().invoke(cli, [*(["--db", db] if db else []), *args], catch_exceptions=False)


def ok(*args: str, db: str | None = None) -> str:
    result = run(*args, db=db)
    assert result.exit_code == 0, result.output
    return result.output


def raw_tables(path) -> dict[str, list[tuple]]:
    """Every row of every table of a SQLite file memstore keeps (its own tables, the live counts,
    sqlite_sequence, alembic_version), each value with its storage class, in a stable order. The
    FTS5 and sqlite-vec shadow tables are left out: they are rebuilt, and their pages depend on the
    order of past writes; the index is checked against the rows instead."""
    with sqlite3.connect(path) as conn:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        out = {}
        for name in names:
            if name.startswith((FTS_TABLE, VECTOR_INDEX_TABLE)):
                continue
            columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{name}")')]
            typed = ", ".join(f'"{c}", typeof("{c}")' for c in columns)
            rows = conn.execute(f'SELECT {typed} FROM "{name}"').fetchall()
            if name == "memstore_settings":
                rows = [row for row in rows if row[0] not in DERIVED_SETTINGS]
            if name == "sqlite_sequence":  # sqlite-vec's shadow tables number their rows too
                rows = [row for row in rows if not row[0].startswith(VECTOR_INDEX_TABLE)]
            out[name] = sorted(rows, key=repr)
    return out


def core_rows(location: str) -> dict[str, list[tuple]]:
    """Every memstore table as SQLAlchemy reads it (JSON columns as their stored text), by key."""
    engine = make_engine(location)
    try:
        with read_transaction(engine) as conn:
            out = {}
            for table in metadata.sorted_tables:
                columns = [cast(c, Text) if c.name == "meta" else c for c in table.columns]
                rows = conn.execute(select(*columns).order_by(*table.primary_key.columns)).all()
                out[table.name] = [tuple(r) for r in rows if table.name != "memstore_settings" or r[0] not in DERIVED_SETTINGS]
            return out
    finally:
        engine.dispose()


def fts_in_step(path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('integrity-check', 1)")


def tick() -> int:
    """A moment strictly between two writes (times are in ms)."""
    time.sleep(0.003)
    moment = now_ms()
    time.sleep(0.003)
    return moment


def history_store(path, model_dir) -> dict:
    """A small store with every kind of history, the real model's vectors and a dismissed flag."""
    with MemoryStore(path) as store:
        store.add_many(FACTS)
        store.add_many([
            {"id": "k1", "text": "User prefers dark mode.", "timestamp": 20, "importance": 4, "meta": {"from": "chat", "n": 1.5}},
            {"id": "k2", "text": "user prefers dark mode", "timestamp": 21, "fact_key": "ui.theme"},
            {"id": "k3", "text": "User prefers DARK mode!", "timestamp": 22, "namespace": "work"},
            {"id": "k4", "text": "user prefers dark mode", "timestamp": 23, "namespace": "work", "importance": 1},
            {"id": "w1", "text": "Nightly backup runs at 2am.", "timestamp": 24, "namespace": "work", "importance": 1},
            {"id": "w2", "text": "Release notes go to the wiki.", "timestamp": 25, "namespace": "work", "importance": 2},
            {"id": "gone", "text": "Door code is 4512.", "timestamp": 26, "expires_at": now_ms() - 10},
            {"id": "soon", "text": "Door code today is 7731.", "timestamp": 27, "expires_at": now_ms() + 86_400_000},
        ])  # fmt: skip
        store.enable_embeddings(model_dir)
        store.sync_embeddings()
        store.maintain(["contradict"])
        flags = store.flags()
        assert len(flags) >= 2
        store.dismiss_flag(flags[0]["id"])
        before = tick()
        consolidated = store.consolidate(capacity=6, namespace=None)
        assert consolidated.duplicates and consolidated.evicted and consolidated.expired
        after_consolidate = tick()
        forgotten = store.forget(["u1"], reason="moved offices")
        store.update("t1", text="The team standup is every weekday at 10:00.")
        store.supersede("c1", by="c2")
        store.restore(forgotten.run_id)
        after_restore = tick()
        store.forget(["k2"])
        store.add("A fact written after the last run.", id="late", namespace="work")
    # A row written in the shell: no stored_at, meta NULL (not the JSON 'null' memstore writes).
    with sqlite3.connect(path) as shell:
        shell.execute("INSERT INTO memories (id, namespace, text, norm_key, timestamp, importance, created_at, updated_at) "
                      "VALUES ('shell1', 'default', 'Typed in the shell.', 'typed in the shell', 30, 2, 30, 30)")  # fmt: skip
    return {"consolidate_run": consolidated.run_id, "moments": [before, after_consolidate, after_restore]}


def test_a_store_with_history_moves_sqlite_to_postgresql_to_sqlite_exactly(tmp_path, pg_url, model_dir):
    source, back = str(tmp_path / "source.db"), str(tmp_path / "back.db")
    built = history_store(source, model_dir)

    assert ok("copy", source, pg_url).startswith("copied ")
    assert json.loads(ok("copy", pg_url, back, "--json"))["rows"]["contradiction_flags"] >= 2

    # Every table, value for value and storage class for storage class, vectors byte for byte; the
    # counters (sqlite_sequence) and the live counts included.
    original = raw_tables(source)
    assert original["memory_vectors"] and original["memory_archive"] and original["memory_gaps"]
    assert raw_tables(back) == original
    fts_in_step(back)
    # PostgreSQL held the same values in between.
    assert core_rows(pg_url) == core_rows(source)
    for location in (pg_url, back):
        with MemoryStore(location) as copy:
            assert copy.check().ok

    # What worked on the original works on the copies, with the same answers.
    stores = {"source": source, "postgresql": pg_url, "back": back}
    for moment in built["moments"]:
        for namespace in ("default", "work"):
            answers = {
                name: (ok("recall", "dark mode", "-n", namespace, "--as-of", str(moment), "--json", db=db),
                       ok("list", "-n", namespace, "--as-of", str(moment), "--json", db=db))
                for name, db in stores.items()
            }  # fmt: skip
            assert answers["back"] == answers["source"] == answers["postgresql"]
    pending = json.loads(ok("embeddings", "status", "--json", db=source))["pending"]
    assert pending == 3  # the shell's row, the late one and the updated version
    for name, db in stores.items():
        assert json.loads(ok("embeddings", "status", "--json", db=db))["pending"] == pending, name
        assert ok("flags", "--all-namespaces", "--json", db=db) == ok("flags", "--all-namespaces", "--json", db=source)
        # The dismissed pair stays dismissed: the contradict phase raises no flag again.
        ok("maintain", "--phases", "contradict", "--all-namespaces", db=db)
        assert json.loads(ok("flags", "--all-namespaces", "--json", db=db))["total"] == json.loads(ok("flags", "--all-namespaces", "--json", db=source))["total"]
    # The oldest run undone on each copy brings back what it archived; the next write is numbered
    # past every seq the source gave (a new id, not a reused one).
    restored = {name: json.loads(ok("restore", "--run", str(built["consolidate_run"]), "--json", db=db)) for name, db in stores.items() if name != "source"}
    assert restored["back"] == restored["postgresql"] and restored["back"]["restored_ids"]
    with sqlite3.connect(source) as conn:
        given = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'memories'").fetchone()[0]
    for db in (pg_url, back):
        with MemoryStore(db) as copy:
            assert copy.add("written on the copy", id="new")["seq"] > given + len(restored["back"]["restored_ids"]) - 1


def test_the_next_incremental_run_on_a_copy_does_what_it_would_have_done_on_the_original(tmp_path, model_dir):
    source, copy, twin = tmp_path / "source.db", tmp_path / "copy.db", tmp_path / "twin.db"
    history_store(source, model_dir)
    ok("copy", str(source), str(copy))
    ok("backup", str(twin), db=str(source))
    for db in (copy, twin):
        with MemoryStore(db) as store:
            store.add_many([{"id": "n1", "text": "user prefers dark mode", "namespace": "work"}, {"id": "n2", "text": "Fresh fact."}])
    reports = []
    for db in (copy, twin):
        with MemoryStore(db) as store:
            report = store.consolidate(capacity=3, namespace=None)
            reports.append((report.incremental, [(a.id, a.reason, a.superseded_by) for a in report.archived]))
    assert reports[0] == reports[1] and reports[0][0] is True


def test_a_target_that_holds_memories_is_refused_with_one_line(tmp_path, pg_url):
    source, target = str(tmp_path / "source.db"), str(tmp_path / "target.db")
    ok("add", "one", db=source)
    ok("add", "already here", db=target)
    for db in (target, pg_url):
        ok("add", "already here", "--id", "x", db=db)
        result = run("copy", source, db)
        assert result.exit_code == 1
        assert result.output.count("\n") == 1 and "already holds" in result.output and "Traceback" not in result.output
    assert run("copy", source, source).output.startswith("Error: ") and run("copy", source, source).exit_code == 1
    missing = run("copy", str(tmp_path / "nope.db"), str(tmp_path / "new.db"))
    assert missing.exit_code == 1 and "no memstore database" in missing.output
    assert not (tmp_path / "new.db").exists()


def test_a_copy_that_fails_halfway_leaves_the_target_empty(tmp_path, pg_url):
    # PostgreSQL's b-tree refuses a key over 2,704 bytes that SQLite stores: the copy fails on that
    # row, after others were written, and none of them stays.
    source = str(tmp_path / "source.db")
    rng = random.Random(1)
    with MemoryStore(source) as store:
        store.add_many([{"id": f"m{n}", "text": f"fact {n}"} for n in range(3000)])
        store.add("".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(20_000)), id="huge")
    result = run("copy", source, pg_url)
    assert result.exit_code == 1 and result.output.startswith("Error: database error") and result.output.count("\n") == 1
    assert all(not rows for rows in core_rows(pg_url).values())


@pytest.mark.slow
def test_100000_memories_with_vectors_and_history_move_there_and_back_exactly(tmp_path, pg_url):
    source, back = tmp_path / "source.db", tmp_path / "back.db"
    # Hand-made 16-wide vectors: the blobs move the same whatever their width, and PostgreSQL's
    # HNSW graph over 80,000 random 384-wide vectors alone takes minutes to build.
    copy_history.build(source, 100_000, model=EmbeddingModel("random-16", "/nonexistent/model", 16))
    with MemoryStore(source) as store:
        copy_into(store.engine, pg_url)
    with MemoryStore(pg_url) as store:
        report = copy_into(store.engine, back)
    assert report.rows["memory_vectors"] == 100_000 and report.rows["memory_archive"] > 10_000
    assert raw_tables(back) == raw_tables(source)
    fts_in_step(back)
    with MemoryStore(pg_url) as store:
        assert store.embedding_status()["search"] == "pgvector"


def beside(path) -> list[str]:
    return sorted(name for name in os.listdir(path.parent) if name.startswith(path.name))


def test_another_programs_sqlite_file_is_refused_before_it_is_touched(tmp_path):
    """LangGraph's SqliteStore file (WAL mode, as an app leaves it) or any SQLite file whose tables
    are not memstore's: copy migrated it and wrote the store into it (issue 40, finding 9)."""
    from langgraph.store.sqlite import SqliteStore

    source = str(tmp_path / "source.db")
    ok("add", "one", db=source)
    langgraph = tmp_path / "langgraph.db"
    with SqliteStore.from_conn_string(str(langgraph)) as app:
        app.setup()
        app.conn.execute("PRAGMA journal_mode = WAL")
        app.put(("users", "u1"), "tea", {"content": "Likes tea."})
    notes = tmp_path / "notes.db"
    with sqlite3.connect(notes) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    conn.close()
    for other, tables in [(langgraph, "'store', 'store_migrations'"), (notes, "'notes'")]:
        before = other.read_bytes()
        result = run("copy", source, str(other))
        assert (result.exit_code, result.output) == (
            1, f"Error: {other} holds tables that are not memstore's ({tables}): another program's file, not a store; copy into a new file or an empty store\n",
        )  # fmt: skip
        assert other.read_bytes() == before and beside(other) == [other.name]


def test_an_empty_store_that_shares_its_file_with_langgraph_takes_a_copy_and_a_hard_link_is_the_source(tmp_path):
    from langgraph.store.sqlite import SqliteStore

    source = tmp_path / "source.db"
    ok("add", "one", "--id", "m1", db=str(source))
    shared = tmp_path / "shared.db"
    ok("init", db=str(shared))
    with SqliteStore.from_conn_string(str(shared)) as app:
        app.setup()
        app.put(("users", "u1"), "tea", {"content": "Likes tea."})
    assert run("copy", str(source), str(shared)).exit_code == 0
    with MemoryStore(shared) as copied, sqlite3.connect(shared) as conn:
        assert [row["id"] for row in copied.list()] == ["m1"]
        assert conn.execute("SELECT key FROM store").fetchall() == [("tea",)]
    conn.close()
    link = tmp_path / "link.db"
    os.link(source, link)
    result = run("copy", str(source), str(link))
    assert (result.exit_code, result.output) == (1, f"Error: {link} is the source store itself; copy into a new or empty store\n")
