"""The overview reads no whole table of memories (issue 42: "nothing on the overview scans the store
at any size"), and revision 0015, whose index its week's expiring count reads, goes down and up.

The plans are SQLite's EXPLAIN QUERY PLAN of the statements the overview and the mistyped-namespace
answer run through the facade's engine (as tests/test_plans.py reads the jobs'): memstore never runs
ANALYZE, so a small store shows the plan a big one gets.
"""

from __future__ import annotations

from sqlalchemy import inspect, text

from memstore import MemoryStore
from memstore.db import make_engine
from memstore.defaults import DAY_MS
from memstore.records import now_ms

from . import test_migrations as migrations
from . import test_plans as plan_tests
from .sqlitelib import sqlite3

# The tables whose size is the store's: a statement may seek in them, never walk one whole.
STORE_TABLES = ("memories", "memory_archive")
# The week's expiring count reads the namespace's range of memories with a lifetime, nothing else.
EXPIRING_INDEX = "USING COVERING INDEX ix_memories_namespace_expires_at (namespace=? AND expires_at>? AND expires_at<?)"


def _fill(store: MemoryStore) -> None:
    """Three namespaces: memories with a lifetime inside the week, after it and without one,
    pinned ones, and some archived (a forget), so every figure of the overview has rows to read."""
    now = now_ms()
    store.add_many([
        {"id": f"{namespace}-{i}", "text": f"Fact {i} of {namespace}.", "namespace": namespace, "pinned": i % 7 == 0,
         "expires_at": (now + DAY_MS, now + 30 * DAY_MS, None)[i % 3]}
        for namespace in ("projects", "notes", "default") for i in range(30)
    ])  # fmt: skip
    store.forget(["projects-1", "notes-2"])


def _statements(store: MemoryStore, job) -> list[tuple[str, tuple]]:
    """test_plans' statements of `job()`, each on one line."""
    return [(" ".join(statement.split()), parameters) for statement, parameters in plan_tests._statements(store, job)]


def _plans(db_path, statements: list[tuple[str, tuple]]) -> dict[str, list[str]]:
    shell = sqlite3.connect(db_path)
    try:
        return {
            statement: [str(step[-1]) for step in shell.execute(f"EXPLAIN QUERY PLAN {statement}", parameters)]
            for statement, parameters in statements
            if statement.split()[0].upper() in ("SELECT", "WITH")
        }
    finally:
        shell.close()


def _scans(plans: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(statement, step) for each step that walks a whole store table (or a whole index of one)."""
    return [
        (statement, step)
        for statement, steps in plans.items()
        for step in steps
        if any(step.startswith(f"SCAN {table}") for table in STORE_TABLES)
    ]


def test_the_overview_scans_no_table_of_memories_and_counts_the_week_off_its_index(sqlite_store, db_path):
    store = sqlite_store
    _fill(store)
    for namespace in (None, "projects"):
        ran = _statements(store, lambda: store.overview(chosen=namespace))
        plans = _plans(db_path, ran)
        assert _scans(plans) == [], namespace
        expiring = [steps for statement, steps in plans.items() if "memories.expires_at <=" in statement]
        assert len(expiring) == 1 and any(EXPIRING_INDEX in step for step in expiring[0]), expiring
        assert any(table in statement for statement in plans for table in STORE_TABLES)  # it did read them
    # The figures read that way: 10 of each namespace's 30 expire within the week, one forgotten.
    detail = store.overview(chosen="projects").detail
    assert (detail.namespace, detail.expiring_week, detail.archived) == ("projects", 10, {"forgotten": 1})
    figures = store.overview()
    assert [(row.namespace, row.live, row.pinned) for row in figures.rows] == [
        ("default", 30, 5), ("notes", 29, 5), ("projects", 29, 5)
    ]  # fmt: skip


def test_a_mistyped_namespace_finds_the_nearest_names_without_reading_every_memory(sqlite_store, db_path):
    store = sqlite_store
    _fill(store)
    store.forget([f"default-{i}" for i in range(30)])  # a namespace only the archive holds still counts
    store.add_many([{"id": "z", "text": "A fact far from the others.", "namespace": "zzz"}])

    ran = _statements(store, lambda: store.namespace_known("project"))
    known = store.namespace_known("project")

    assert _scans(_plans(db_path, ran)) == []
    assert known["exists"] is False and known["nearest"][0] == "projects"
    assert known["namespaces"] == ["default", "notes", "projects", "zzz"]


def test_0015_indexes_each_namespaces_lifetimes_and_goes_down_and_up_on_each_backend(store_url: str) -> None:
    with MemoryStore(store_url) as store:
        store.add_many([{"id": "a", "text": "fact a", "expires_at": now_ms() + DAY_MS}, {"id": "b", "text": "fact b"}])
    engine = make_engine(store_url)
    try:
        def indexes() -> dict[str, str]:
            with engine.connect() as conn:
                if conn.dialect.name == "sqlite":
                    query = "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memories' AND sql IS NOT NULL"
                else:
                    query = "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories'"
                return {name: " ".join(sql.split()).lower() for name, sql in conn.execute(text(query))}

        made = indexes()["ix_memories_namespace_expires_at"]
        assert "(namespace, expires_at)" in made  # partial on both backends: PostgreSQL writes its predicate in brackets
        assert made.replace("(", "").replace(")", "").endswith("where expires_at is not null")
        migrations.migrate(engine, "downgrade", "0014")
        assert "ix_memories_namespace_expires_at" not in indexes() and "ix_memories_expires_at" in indexes()
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM memories")).scalar_one() == 2
        migrations.migrate(engine, "upgrade", "head")
        assert indexes()["ix_memories_namespace_expires_at"] == made
        assert migrations.schema_diff(engine) == [] and migrations.drift(engine) == []
        with engine.connect() as conn:
            assert "ix_memories_namespace_expires_at" in {index["name"] for index in inspect(conn).get_indexes("memories")}
        with MemoryStore(store_url) as store:
            assert store.overview(chosen="default").detail.expiring_week == 1
    finally:
        engine.dispose()


def test_a_mistyped_namespace_lists_every_namespace_of_memories_and_the_archive_on_each_backend(store):
    # The loose index scan is one recursive statement on both backends; names sort by code point.
    store.add_many([{"id": f"m{n}", "text": f"Fact {n}.", "namespace": name} for n, name in enumerate(("b", "B", "a-2", "a", "ä"))])
    store.forget(["m0"])  # "b" is held by the archive alone

    known = store.namespace_known("c")

    assert known["exists"] is False and known["namespaces"] == ["B", "a", "a-2", "b", "ä"]
