"""PostgreSQL: the same models, migrations and job SQL on a real server, with the same results as SQLite."""

from __future__ import annotations

import json
import threading

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, inspect, text

from memstore import MemoryStore, MemstoreError, SchemaError
from memstore.cli import cli
from memstore.db import make_engine, write_transaction
from memstore.migrate import alembic_config, comparison_options, current_revision

from .conftest import BACKENDS, empty_store
from .schema_head import head_revision
from .strategies import NAMESPACES, examples, stores
from .test_cli import SEED_HYGIENE_FIXTURE

MODEL_TABLES = {
    "memories", "memory_archive", "consolidation_runs", "memory_merges", "memory_vectors", "memstore_settings", "contradiction_flags",
    "memory_gaps",
}  # fmt: skip


@pytest.fixture
def empty_pg(postgres):
    name = postgres.new_database(migrated=False)
    yield postgres.url(name)
    postgres.drop_database(name)


def migrate(engine, direction, target):
    with write_transaction(engine) as conn:
        getattr(command, direction)(alembic_config(conn), target)


def tables(engine) -> set[str]:
    return set(inspect(engine).get_table_names()) - {"alembic_version"}


def test_migrations_build_the_schema_on_postgresql_and_match_the_models(empty_pg):
    engine = make_engine(empty_pg)
    migrate(engine, "upgrade", "head")
    assert tables(engine) == MODEL_TABLES
    with engine.connect() as conn:
        assert current_revision(conn) == head_revision()
        assert compare_metadata(MigrationContext.configure(conn, opts=comparison_options(conn)), comparison_options(conn)["target_metadata"]) == []
        collations = dict(
            conn.execute(
                text("SELECT column_name, collation_name FROM information_schema.columns WHERE table_name = 'memories'")
            ).all()
        )
        indexes = {row[0] for row in conn.execute(text("SELECT indexname FROM pg_indexes WHERE tablename = 'memories'"))}
    assert collations["id"] == collations["namespace"] == collations["norm_key"] == "C"
    assert {"ix_memories_stage1", "ix_memories_rank", "memories_fts_gin"} <= indexes
    engine.dispose()


def test_every_revision_goes_down_and_up_again_on_postgresql(empty_pg):
    engine = make_engine(empty_pg)
    revisions = [s.revision for s in reversed(list(ScriptDirectory.from_config(alembic_config()).walk_revisions()))]
    for revision in revisions:
        migrate(engine, "upgrade", revision)
        migrate(engine, "downgrade", "-1")
        migrate(engine, "upgrade", revision)
        with engine.connect() as conn:
            assert current_revision(conn) == revision
    migrate(engine, "downgrade", "base")
    assert tables(engine) == set()
    migrate(engine, "upgrade", "head")
    assert tables(engine) == MODEL_TABLES
    engine.dispose()


def test_0005_on_a_filled_postgresql_store_numbers_seq_and_the_sequence_continues(empty_pg):
    engine = make_engine(empty_pg)
    migrate(engine, "upgrade", "0004")
    with engine.begin() as conn:
        for n, seq in enumerate([7, 0, 7, 3]):  # duplicates and zeros, as 0003-0004 could leave them
            conn.execute(
                text(
                    "INSERT INTO memories (id, text, norm_key, timestamp, importance, created_at, updated_at, seq)"
                    " VALUES (:id, 'fact', 'fact', 1, 3, 0, 0, :seq)"
                ),
                {"id": f"m{n}", "seq": seq},
            )
    migrate(engine, "upgrade", "head")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT id, seq FROM memories ORDER BY seq")).all() == [("m1", 1), ("m3", 2), ("m0", 3), ("m2", 4)]
    engine.dispose()
    with MemoryStore(empty_pg) as store:
        assert store.add("new fact", id="new")["seq"] == 5
    migrate(make_engine(empty_pg), "downgrade", "0004")


@pytest.mark.parametrize("backend", BACKENDS)
def test_ids_tied_on_everything_else_sort_by_code_point_on_both_backends(backend, request, tmp_path):
    url = str(tmp_path / "s.db") if backend == "sqlite" else request.getfixturevalue("pg_url")
    with MemoryStore(url) as store:
        store.add_many([{"id": i, "text": f"fact {i}", "timestamp": 1, "importance": 3} for i in ("é", "a", "B")])
        assert [m["id"] for m in store.list()] == ["B", "a", "é"]
        report = store.consolidate(2, list_kept=True)
        assert report.kept_ids == ["B", "a"] and [a.id for a in report.archived] == ["é"]
        store.add_many([{"id": i, "text": "same fact", "timestamp": 1, "importance": 3} for i in ("é2", "a2", "B2")])
        assert store.consolidate(10).archived[0].superseded_by == "B2"


def test_the_cli_works_end_to_end_on_postgresql(pg_url, tmp_path):
    fixture = tmp_path / "memories.jsonl"
    fixture.write_text(SEED_HYGIENE_FIXTURE)
    checks = tmp_path / "checks.json"
    checks.write_text('[{"query": "office wifi guests", "expect_id": "m5"}, {"query": "alpha beta gamma", "expect_id": "m1"}]')

    def run(*args):
        result = CliRunner().invoke(cli, ["--db", pg_url, *args])
        return result

    assert run("init").exit_code == 0
    assert run("import", str(fixture)).output == "imported 7 memories (0 already stored)\n"
    assert run("add", "User prefers dark mode.", "--id", "d1").output == "d1\n"
    report = json.loads(run("report", "--now", "2026-10-12", "--json").output)
    assert (report["total_records"], len(report["near_duplicate_pairs"]), report["exact_duplicate_groups"]) == (8, 3, [["m1", "m2"]])
    assert [r["id"] for r in json.loads(run("recall", "office wifi", "--json").output)] == ["m5", "m6"]
    assert run("verify", str(checks)).exit_code == 0
    pruned = json.loads(run("prune", "--now", "2026-10-12", "--checks", str(checks), "--json").output)
    assert [(a["id"], a["reason"]) for a in pruned["archived"]] == [("m1", "duplicate"), ("m4", "stale")]
    assert run("verify", str(checks)).exit_code == 0
    consolidated = json.loads(run("consolidate", "-c", "2", "--json").output)
    assert consolidated["evicted"] == 3
    assert len(json.loads(run("runs", "--json").output)) == 2
    assert run("restore", "--run", str(consolidated["run_id"])).exit_code == 0
    assert len(run("export").output.splitlines()) == 6
    assert len(run("export", "--archived").output.splitlines()) == 2
    assert run("check").exit_code == 0
    backup = run("backup", str(tmp_path / "copy.db"))
    assert (backup.exit_code, backup.output) == (1, "Error: backup works on SQLite stores only; for PostgreSQL use pg_dump\n")


def test_two_jobs_started_at_once_do_not_both_apply(pg_url):
    with MemoryStore(pg_url) as store:
        store.add_many([{"id": f"m{i}", "text": f"fact {i % 50}", "timestamp": i, "importance": 1 + i % 5} for i in range(400)])
        start = threading.Barrier(2)
        reports = []

        def job():
            with MemoryStore(pg_url) as mine:
                start.wait()
                reports.append(mine.consolidate(20))

        threads = [threading.Thread(target=job) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        archived = sorted(len(r.archived) for r in reports)
        assert archived == [0, 380]  # one run did the work; the other, serialised behind it, had none left
        assert store.count() == 20 and store.count(archived=True) == 380


def test_a_writer_is_not_blocked_by_a_running_job(pg_url):
    """A job holds its namespace lock for its whole transaction; an agent's add does not wait for it."""
    with MemoryStore(pg_url) as store:
        engine = create_engine(pg_url)
        with engine.connect() as job_conn, job_conn.begin():
            job_conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended('default', 0))"))
            writer = threading.Thread(target=lambda: store.add("written while a job runs", id="during"))
            writer.start()
            writer.join(120)  # a bound for a hung test, not a speed: the add returns while the lock is held
            assert not writer.is_alive()
            blocked = threading.Thread(target=lambda: store.consolidate(10))
            blocked.start()
            blocked.join(0.5)
            assert blocked.is_alive()  # the second job waits for the first
        blocked.join(30)
        assert not blocked.is_alive() and store.get("during")["text"] == "written while a job runs"
        engine.dispose()


@pytest.fixture(scope="module")
def paired_stores(tmp_path_factory, postgres):
    name = postgres.new_database()
    with MemoryStore(tmp_path_factory.mktemp("paired") / "s.db") as lite, MemoryStore(postgres.url(name)) as pg:
        yield lite, pg
    postgres.drop_database(name)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(records=stores(), capacity=st.integers(0, 10), target=st.sampled_from([*NAMESPACES, None]))
def test_sqlite_and_postgresql_give_identical_results_for_the_same_store(paired_stores, records, capacity, target):
    outcomes = []
    for store in paired_stores:
        empty_store(store)
        store.add_many(records)
        report = store.consolidate(capacity, target, list_kept=True)
        live = [(m["id"], m["recall_count"], m["last_recalled_at"]) for m in store.list(None)]
        archived = [(m["id"], m["reason"], m["superseded_by"]) for m in store.list(None, archived=True)]
        outcomes.append((report.kept_ids, [a.__dict__ for a in report.archived], live, sorted(archived)))
    assert outcomes[0] == outcomes[1]


def test_backup_refuses_on_postgresql(pg_url, tmp_path):
    with MemoryStore(pg_url) as store, pytest.raises(MemstoreError, match="pg_dump"):
        store.backup(tmp_path / "x.db")


def test_0006_on_postgresql_widens_the_reasons_and_a_downgrade_waits_for_forgotten_rows(pg_url):
    with MemoryStore(pg_url) as store:
        store.add_many([{"id": "a", "text": "fact a"}, {"id": "b", "text": "fact b"}, {"id": "b2", "text": "fact b, corrected"}])
        forgot = store.forget(["a"], reason="test")
        store.supersede("b", by="b2")
    engine = make_engine(pg_url)
    with pytest.raises(SchemaError, match="2 archived memories were forgotten, superseded or merged by meaning"):
        migrate(engine, "downgrade", "0005")
    with MemoryStore(pg_url) as store:
        store.restore(forgot.run_id)
        store.restore(store.runs()[0]["id"])
    migrate(engine, "downgrade", "0005")
    with engine.begin() as conn, pytest.raises(Exception, match="ck_memory_archive_reason_known"):
        conn.execute(text("INSERT INTO memory_archive (id, text, norm_key, timestamp, importance, created_at, updated_at, archived_at, reason) VALUES ('x', 't', 't', 1, 3, 1, 1, 1, 'forgotten')"))
    migrate(engine, "upgrade", "head")
    with engine.connect() as conn:
        assert current_revision(conn) == head_revision()
    engine.dispose()


def test_a_read_transaction_on_postgresql_is_one_snapshot(pg_url):
    # READ COMMITTED, PostgreSQL's default, would show the second statement a commit made between
    # the two; recall's two rankings and the vector cache's two reads must see one state.
    from memstore.db import read_transaction

    with MemoryStore(pg_url) as store, MemoryStore(pg_url) as writer:
        store.add("Before the snapshot.", id="before")
        with read_transaction(store.engine) as conn:
            first = conn.execute(text("SELECT count(*) FROM memories")).scalar_one()
            writer.add("After the snapshot began.", id="after")
            assert conn.execute(text("SELECT count(*) FROM memories")).scalar_one() == first == 1
            assert conn.execute(text("SHOW transaction_isolation")).scalar_one() == "repeatable read"
        with read_transaction(store.engine) as conn:
            assert conn.execute(text("SELECT count(*) FROM memories")).scalar_one() == 2
        with write_transaction(store.engine) as conn:  # writers keep the server's default
            assert conn.execute(text("SHOW transaction_isolation")).scalar_one() == "read committed"


def test_recall_on_postgresql_queries_the_expression_its_gin_index_is_built_on(pg_url):
    """Revision 0011 froze the index's expression; memstore.fulltext builds its queries with
    pg_document. If the two drifted apart, every recall would scan the table."""
    from memstore.fulltext import WORD_COUNT_SQL, pg_document

    with MemoryStore(pg_url) as store:
        store.add_many([{"id": f"m{n}", "text": f"Contact user{n}@example.com"} for n in range(50)])
        with store.engine.connect() as conn:
            conn.exec_driver_sql("SET enable_seqscan = off")
            plan = conn.execute(text("EXPLAIN " + WORD_COUNT_SQL["postgresql"]), {"word": "example", "limit": 10}).scalars().all()
            indexdef = conn.execute(text("SELECT indexdef FROM pg_indexes WHERE indexname = 'memories_fts_gin'")).scalar_one()
    assert any("memories_fts_gin" in line for line in plan), plan
    assert "translate(text" in indexdef and pg_document("text").startswith("to_tsvector('simple', translate(")
