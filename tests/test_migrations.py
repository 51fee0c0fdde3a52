"""The schema migrations: one head, up from nothing, models == DDL, every step reversible, and the
guard that keeps an old memstore away from a database a newer one migrated.

Every test runs on a real SQLite file in tmp_path; nothing is mocked.
"""

from __future__ import annotations

import os
from .sqlitelib import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from click.testing import CliRunner
from sqlalchemy import Engine, inspect, text

from memstore.cli import cli
from memstore.db import make_engine, write_transaction
from memstore.errors import SchemaError
from memstore.migrate import SCHEMA_HEAD, alembic_config, comparison_options, current_revision, index_drift, upgrade
from memstore.models import LIVE_COUNTS_TABLE, Base
from memstore.store import MemoryStore

from .schema_head import head_revision

REPO_ROOT = Path(__file__).resolve().parents[1]
# The models' tables plus SQLite's full-text index over memories.text and its shadow tables, and
# the trigger-kept live counts.
FTS_TABLES = {"memories_fts", "memories_fts_data", "memories_fts_idx", "memories_fts_docsize", "memories_fts_config"}
MEMSTORE_TABLES = set(Base.metadata.tables) | FTS_TABLES | {LIVE_COUNTS_TABLE}
MODEL_INDEXES = {idx.name for table in Base.metadata.tables.values() for idx in table.indexes}


# -- helpers ----------------------------------------------------------------------------------


def scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def revisions_base_to_head() -> list[str]:
    """Every revision id, oldest first (walk_revisions goes head -> base)."""
    return [script.revision for script in reversed(list(scripts().walk_revisions("base", "heads")))]


def tables(path: Path) -> set[str]:
    """User tables in the file, read with the stdlib driver so the check does not rely on memstore."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        return {name for (name,) in rows}


def version_in_file(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [v for (v,) in conn.execute("SELECT version_num FROM alembic_version")]


def migrate(engine: Engine, direction: str, target: str) -> None:
    """Run an Alembic command the way memstore does: on its connection, inside one write transaction."""
    with write_transaction(engine) as conn:
        getattr(command, direction)(alembic_config(conn), target)


def revision_of(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return current_revision(conn)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def engine(db_path: Path) -> Iterator[Engine]:
    engine = make_engine(db_path)
    yield engine
    engine.dispose()


@pytest.fixture
def migrated(engine: Engine) -> Engine:
    assert upgrade(engine) == head_revision()
    return engine


def schema_diff(engine: Engine) -> list:
    """Alembic autogenerate's comparison, configured as migrations/env.py configures it."""
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts=comparison_options(conn))
        return compare_metadata(context, Base.metadata)


def drift(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return index_drift(conn)


def set_version(path: Path, version: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE alembic_version SET version_num = ?", (version,))
    assert version_in_file(path) == [version]


# -- one head ---------------------------------------------------------------------------------


def test_migrations_folder_has_exactly_one_head() -> None:
    heads = scripts().get_heads()
    assert len(heads) == 1, f"branched migrations, heads: {heads}"
    assert heads[0] == head_revision()


def test_schema_head_names_alembics_head() -> None:
    # Opening a store compares its revision with SCHEMA_HEAD without loading Alembic: a new
    # migration must move SCHEMA_HEAD too, or every open would run the upgrade machinery.
    assert SCHEMA_HEAD == head_revision()


def test_migration_chain_starts_at_base_and_is_linear() -> None:
    ordered = revisions_base_to_head()
    script_dir = scripts()
    assert script_dir.get_revision(ordered[0]).down_revision is None
    for older, newer in zip(ordered, ordered[1:]):
        assert script_dir.get_revision(newer).down_revision == older
    assert ordered[-1] == head_revision()


# -- upgrade from nothing ---------------------------------------------------------------------


def test_upgrading_an_empty_database_creates_the_tables_at_head(engine: Engine, db_path: Path) -> None:
    assert revision_of(engine) is None

    migrate(engine, "upgrade", "head")

    assert tables(db_path) == MEMSTORE_TABLES | {"alembic_version"}
    assert version_in_file(db_path) == [head_revision()]
    assert revision_of(engine) == head_revision()


def test_upgrade_creates_every_index_of_the_models(migrated: Engine, db_path: Path) -> None:
    with sqlite3.connect(db_path) as conn:
        names = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}
    assert names == MODEL_INDEXES


# -- models == DDL ----------------------------------------------------------------------------


def test_models_match_the_migrated_schema(migrated: Engine) -> None:
    assert schema_diff(migrated) == []
    assert drift(migrated) == []


def test_schema_comparison_notices_a_missing_index(migrated: Engine) -> None:
    # Proof that the comparison above can fail: take away an index the models declare.
    with write_transaction(migrated) as conn:
        conn.exec_driver_sql("DROP INDEX ix_memory_archive_run_id")

    diff = schema_diff(migrated)
    assert [op[0] for op in diff] == ["add_index"]
    assert diff[0][1].name == "ix_memory_archive_run_id"
    assert drift(migrated) == ["index ix_memory_archive_run_id is missing"]


@pytest.mark.parametrize(
    ("index", "without_desc"),
    [
        ("ix_memories_rank", "CREATE INDEX ix_memories_rank ON memories (namespace, pinned, importance, timestamp, id)"),
        (
            "ix_memories_stage1",
            "CREATE INDEX ix_memories_stage1 ON memories (namespace, norm_key, pinned, timestamp DESC, importance DESC, id)",
        ),
    ],
)
def test_index_drift_reports_an_index_that_lost_its_desc(migrated: Engine, index: str, without_desc: str) -> None:
    # What a careless batch-mode table rebuild leaves behind: same columns, sort order gone.
    with write_transaction(migrated) as conn:
        conn.exec_driver_sql(f"DROP INDEX {index}")
        conn.exec_driver_sql(without_desc)

    reported = drift(migrated)

    assert len(reported) == 1
    assert reported[0].startswith(f"index {index} is ")
    assert f"`{without_desc}`" in reported[0]


# -- down and up again ------------------------------------------------------------------------


def test_every_revision_downgrades_and_upgrades_again(engine: Engine, db_path: Path) -> None:
    script_dir = scripts()
    for revision in revisions_base_to_head():
        previous = script_dir.get_revision(revision).down_revision

        migrate(engine, "upgrade", revision)
        assert revision_of(engine) == revision
        schema_at_revision = tables(db_path)

        migrate(engine, "downgrade", "-1")
        assert revision_of(engine) == previous

        migrate(engine, "upgrade", revision)
        assert revision_of(engine) == revision
        assert tables(db_path) == schema_at_revision

    assert revision_of(engine) == head_revision()
    assert schema_diff(engine) == []
    assert drift(engine) == []

    migrate(engine, "downgrade", "base")
    assert revision_of(engine) is None
    assert tables(db_path) & MEMSTORE_TABLES == set()
    assert tables(db_path) <= {"alembic_version"}
    with sqlite3.connect(db_path) as conn:
        leftover_indexes = conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").fetchall()
    assert leftover_indexes == []

    migrate(engine, "upgrade", "head")
    assert revision_of(engine) == head_revision()
    assert tables(db_path) == MEMSTORE_TABLES | {"alembic_version"}
    assert schema_diff(engine) == []
    assert drift(engine) == []


# -- the alembic command line in the checkout ---------------------------------------------------


def run_alembic(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    alembic = Path(sys.executable).parent / "alembic"
    assert alembic.exists(), f"no alembic executable next to {sys.executable}"
    env = {**os.environ, "MEMSTORE_DB": str(db)}
    return subprocess.run(
        [str(alembic), *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_alembic_upgrade_head_and_check_pass_from_the_checkout(db_path: Path) -> None:
    upgraded = run_alembic("upgrade", "head", db=db_path)
    assert upgraded.returncode == 0, upgraded.stderr
    assert version_in_file(db_path) == [head_revision()]
    assert MEMSTORE_TABLES <= tables(db_path)

    checked = run_alembic("check", db=db_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "No new upgrade operations detected" in checked.stdout + checked.stderr


def test_alembic_check_fails_on_a_database_that_differs_from_the_models(db_path: Path) -> None:
    # The subprocess check above must be able to fail: a missing index is an upgrade operation.
    assert run_alembic("upgrade", "head", db=db_path).returncode == 0
    with sqlite3.connect(db_path) as conn:
        conn.execute("DROP INDEX ix_memory_archive_run_id")

    checked = run_alembic("check", db=db_path)
    assert checked.returncode != 0
    assert "ix_memory_archive_run_id" in checked.stdout + checked.stderr


# -- opening older and newer databases ----------------------------------------------------------


def older_revisions() -> list[str | None]:
    """Every revision before head, and base (None): a store at any of them must open."""
    return [None, *revisions_base_to_head()[:-1]]


@pytest.mark.parametrize("revision", older_revisions(), ids=lambda r: r or "base")
def test_opening_a_store_at_an_older_revision_upgrades_it_to_head(
    engine: Engine, db_path: Path, revision: str | None
) -> None:
    migrate(engine, "upgrade", "head")
    migrate(engine, "downgrade", revision or "base")
    engine.dispose()
    assert version_in_file(db_path) == ([revision] if revision else [])
    if revision is None:
        assert tables(db_path) & MEMSTORE_TABLES == set()

    with MemoryStore(db_path) as store:
        store.add("User prefers dark mode.", id="m1")
        assert store.get("m1")["text"] == "User prefers dark mode."

    assert version_in_file(db_path) == [head_revision()]
    assert MEMSTORE_TABLES <= tables(db_path)


def test_opening_a_database_file_without_alembic_version_creates_the_schema(db_path: Path) -> None:
    sqlite3.connect(db_path).close()  # an existing, empty SQLite file
    assert db_path.exists()
    assert tables(db_path) == set()

    with MemoryStore(db_path):
        pass

    assert tables(db_path) == MEMSTORE_TABLES | {"alembic_version"}
    assert version_in_file(db_path) == [head_revision()]


def test_opening_a_store_migrated_by_a_newer_memstore_refuses(db_path: Path) -> None:
    MemoryStore(db_path).close()
    set_version(db_path, "ffff_future")

    with pytest.raises(SchemaError, match="newer memstore") as raised:
        MemoryStore(db_path)

    assert "ffff_future" in str(raised.value)
    # Refusing must leave the file as it was, not "upgrade" it.
    assert version_in_file(db_path) == ["ffff_future"]


def test_cli_refuses_a_store_migrated_by_a_newer_memstore_with_one_line(db_path: Path) -> None:
    MemoryStore(db_path).close()
    set_version(db_path, "ffff_future")

    result = CliRunner().invoke(cli, ["--db", str(db_path), "list"], prog_name="memstore")

    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)  # click's clean exit, not an escaped error
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    assert "newer memstore" in lines[0]
    assert "Traceback" not in result.output
    assert result.stdout == ""
    assert version_in_file(db_path) == ["ffff_future"]


def test_upgrading_a_filled_store_counts_its_live_rows(engine: Engine, db_path: Path) -> None:
    # 0004 adds memory_live_counts: it must start from the rows already there, shell values included.
    with MemoryStore(db_path) as store:
        store.add_many([{"id": f"m{n}", "text": f"fact {n}", "namespace": ("a", "b")[n % 2], "pinned": n % 3 == 0} for n in range(9)])
    migrate(engine, "downgrade", "0003")
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE memories SET pinned = '' WHERE id = 'm1'")
    migrate(engine, "upgrade", "head")
    with sqlite3.connect(db_path) as conn:
        counts = conn.execute("SELECT namespace, unpinned, pinned FROM memory_live_counts ORDER BY namespace").fetchall()
    # a: m0 m2 m4 m6 m8 (m0, m6 pinned); b: m1 m3 m5 m7 (m3 pinned, m1 holds '', which is not = 0)
    assert counts == [("a", 3, 2), ("b", 2, 2)]


def test_upgrading_to_0005_renumbers_seq_in_write_order_and_keeps_the_store_whole(engine: Engine, db_path: Path) -> None:
    # At 0004 seq is a plain column (0 for rows older than 0003); 0005 makes it the rowid.
    with MemoryStore(db_path) as store:
        store.add_many([{"id": f"m{n}", "text": f"fact {n % 3} about tea", "timestamp": n} for n in range(6)])
        store.consolidate(2)
    migrate(engine, "downgrade", "0004")
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE memories SET seq = 0 WHERE id = 'm5'")  # as if written before 0003
        before = conn.execute("SELECT id FROM memories ORDER BY seq, rowid").fetchall()
        assert conn.execute("SELECT count(*) FROM consolidation_runs WHERE high_water_seq IS NOT NULL").fetchone() == (1,)
    migrate(engine, "upgrade", "head")
    engine.dispose()
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT id FROM memories ORDER BY seq").fetchall() == before
        assert [n for (n,) in conn.execute("SELECT seq FROM memories ORDER BY seq")] == [1, 2]
        assert conn.execute("SELECT count(*) FROM consolidation_runs WHERE high_water_seq IS NOT NULL").fetchone() == (0,)
        assert conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'memories'").fetchone() == (2,)
    with MemoryStore(db_path) as store:
        assert store.check().ok  # integrity, indexes (DESC kept), recall index, live counts
        assert sorted(r["id"] for r in store.recall("tea", k=5, touch=False)) == ["m4", "m5"]
        store.add("fact 1 about tea!", id="new", timestamp=100)
        assert [r["seq"] for r in store.list() if r["id"] == "new"] == [3]
        report = store.consolidate(2)
        assert not report.incremental  # the old marks were cleared: one full run
        assert [(a.id, a.reason) for a in report.archived] == [("m4", "duplicate")]


def test_the_0005_rebuild_keeps_a_users_views_triggers_indexes_and_foreign_keys_on_memories(engine: Engine, db_path: Path) -> None:
    with MemoryStore(db_path) as store:
        store.add_many([{"id": "m1", "text": "pinned fact", "pinned": True}, {"id": "m2", "text": "plain fact"}])
    migrate(engine, "downgrade", "0004")
    with sqlite3.connect(db_path) as conn:
        conn.execute("CREATE VIEW pinned_memories AS SELECT id, text FROM memories WHERE pinned")
        conn.execute("CREATE TABLE notes (memory_id TEXT)")
        conn.execute(
            "CREATE TRIGGER notes_touch AFTER INSERT ON notes BEGIN "
            "UPDATE memories SET recall_count = recall_count + 1 WHERE id = new.memory_id; END"
        )
        conn.execute("CREATE INDEX my_own_index ON memories (fact_key)")
        conn.execute("CREATE TABLE links (memory_id TEXT REFERENCES memories (id))")
        conn.execute("INSERT INTO links VALUES ('m1')")
    for direction, target in (("upgrade", "head"), ("downgrade", "0004"), ("upgrade", "head")):
        migrate(engine, direction, target)
        with sqlite3.connect(db_path) as conn:
            assert conn.execute("SELECT id FROM pinned_memories").fetchall() == [("m1",)]
            conn.execute("INSERT INTO notes VALUES ('m2')")
            assert "my_own_index" in {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
            assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT recall_count FROM memories WHERE id = 'm2'").fetchone() == (3,)


def test_the_0005_rebuild_refuses_a_table_with_columns_of_the_users_own(engine: Engine, db_path: Path) -> None:
    with MemoryStore(db_path) as store:
        store.add("fact", id="m1")
    migrate(engine, "downgrade", "0004")
    with sqlite3.connect(db_path) as conn:
        conn.execute("ALTER TABLE memories ADD COLUMN source TEXT")
        conn.execute("UPDATE memories SET source = 'import'")
    with pytest.raises(SchemaError, match=r"memories has columns memstore does not know \(source\)"):
        migrate(engine, "upgrade", "head")
    engine.dispose()
    assert version_in_file(db_path) == ["0004"]
    with sqlite3.connect(db_path) as conn:  # rolled back whole: the column and its data are there
        assert conn.execute("SELECT id, source FROM memories").fetchall() == [("m1", "import")]


def test_seq_cannot_be_changed_from_the_shell_and_check_misses_its_guard(db_path: Path) -> None:
    with MemoryStore(db_path) as store:
        store.add("fact", id="m1")
    with sqlite3.connect(db_path) as conn:
        with pytest.raises(sqlite3.IntegrityError, match="memories.seq is the write order"):
            conn.execute("UPDATE memories SET seq = 100 WHERE id = 'm1'")
        conn.execute("UPDATE memories SET seq = seq, importance = 4 WHERE id = 'm1'")  # seq unchanged: allowed
        conn.execute("DROP TRIGGER memories_seq_is_write_order")
    result = CliRunner().invoke(cli, ["--db", str(db_path), "check"])
    assert result.exit_code == 1 and "trigger memories_seq_is_write_order is missing" in result.output


# The archive's rows by name (revision 0007 adds a column the older revisions do not have).
ARCHIVE_ROWS = (
    "SELECT id, namespace, text, norm_key, timestamp, importance, pinned, created_at, updated_at, last_recalled_at,"
    " recall_count, fact_key, meta, seq, archived_at, reason, superseded_by, run_id FROM memory_archive ORDER BY id"
)


def test_0006_keeps_the_archive_whole_and_a_downgrade_waits_for_forgotten_rows(engine: Engine, db_path: Path) -> None:
    with MemoryStore(db_path) as store:
        store.add_many([{"id": f"m{n}", "text": f"fact {n % 3} about tea", "timestamp": n} for n in range(6)])
        store.consolidate(2)  # duplicates and an eviction in the archive
        forgot = store.forget(["m5"])
    with sqlite3.connect(db_path) as conn:
        conn.execute("CREATE INDEX my_archive_reasons ON memory_archive (reason, id)")  # a user's own index
        before = conn.execute(ARCHIVE_ROWS).fetchall()
    with pytest.raises(SchemaError, match=r"1 archived memories were forgotten, superseded or merged by meaning.*restore their runs"):
        migrate(engine, "downgrade", "0005")
    assert revision_of(engine) == head_revision()  # the whole downgrade rolled back
    with MemoryStore(db_path) as store:
        store.restore(forgot.run_id)
    with sqlite3.connect(db_path) as conn:
        kept = conn.execute(ARCHIVE_ROWS).fetchall()
    assert kept == [row for row in before if row[0] != "m5"]

    migrate(engine, "downgrade", "0005")
    with sqlite3.connect(db_path) as conn:
        assert conn.execute(ARCHIVE_ROWS).fetchall() == kept
        indexes = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert "my_archive_reasons" in indexes and "ix_memory_archive_superseded_by" not in indexes
        with pytest.raises(sqlite3.IntegrityError, match="reason_known"):
            conn.execute("UPDATE memory_archive SET reason = 'forgotten' WHERE id = ?", (kept[0][0],))

    migrate(engine, "upgrade", "head")
    with sqlite3.connect(db_path) as conn:
        assert conn.execute(ARCHIVE_ROWS).fetchall() == kept
        indexes = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"my_archive_reasons", "ix_memory_archive_superseded_by", "ix_memories_fact_key"} <= indexes
        conn.execute("DROP INDEX my_archive_reasons")  # the user's, which the models rightly do not know
    assert schema_diff(engine) == [] and drift(engine) == []


def test_0009_adds_time_and_a_downgrade_waits_for_expired_rows_on_each_backend(store_url: str) -> None:
    with MemoryStore(store_url) as store:
        store.add_many([{"id": "a", "text": "fact a"}, {"id": "b", "text": "fact b", "expires_at": 1}])
        forgot = store.forget(["a"])
        store.restore(forgot.run_id)  # a gap, which 0008 has no table for: dropped with the table
        expired = store.expire()
    engine = make_engine(store_url)
    try:
        with pytest.raises(SchemaError, match=r"1 archived memories expired.*restore their runs"):
            migrate(engine, "downgrade", "0008")
        assert revision_of(engine) == head_revision()  # the whole downgrade rolled back
        with MemoryStore(store_url) as store:
            store.restore(expired.run_id)
        migrate(engine, "downgrade", "0008")
        with engine.connect() as conn:
            columns = {c["name"] for c in inspect(conn).get_columns("memories")}
            assert not {"expires_at", "stored_at"} & columns and "memory_gaps" not in inspect(conn).get_table_names()
        migrate(engine, "upgrade", "head")
        assert schema_diff(engine) == [] and drift(engine) == []
        with MemoryStore(store_url) as store:
            # Rows from before 0009 have no stored_at: their created_at says when they entered.
            entered = store.get("a")["created_at"]
            assert store.list(as_of=entered - 1) == [] and "a" in [r["id"] for r in store.list(as_of=entered)]
            assert store.get("b")["expires_at"] is None  # a lifetime 0008 could not hold is gone with its column
    finally:
        engine.dispose()


def test_0010_holds_summed_recall_counts_in_64_bits_and_a_downgrade_waits_for_them(store_url: str) -> None:
    big = 2**31 - 1
    with MemoryStore(store_url) as store:
        store.add_many([{"id": "a", "text": "User likes tea.", "recall_count": big}, {"id": "b", "text": "user likes tea", "recall_count": big}])
        store.consolidate(10)  # on PostgreSQL's INTEGER the sum was "integer out of range"
        assert store.get("a")["recall_count"] == 2 * big
    engine = make_engine(store_url)
    try:
        if engine.dialect.name == "postgresql":
            with pytest.raises(SchemaError, match=r"1 memories have a recall count past 2,147,483,647"):
                migrate(engine, "downgrade", "0009")
            assert revision_of(engine) == head_revision()  # the whole downgrade rolled back
            with write_transaction(engine) as conn:
                conn.exec_driver_sql("UPDATE memories SET recall_count = 7")
        migrate(engine, "downgrade", "0009")  # SQLite: nothing to change, its INTEGER is 64 bits
        with engine.connect() as conn:
            (column,) = [c for c in inspect(conn).get_columns("memories") if c["name"] == "recall_count"]
            assert type(column["type"]).__name__ == "INTEGER"
        migrate(engine, "upgrade", "head")
        assert schema_diff(engine) == [] and drift(engine) == []
        with MemoryStore(store_url) as store:
            assert store.get("a")["recall_count"] == (7 if engine.dialect.name == "postgresql" else 2 * big)
    finally:
        engine.dispose()


def test_0012_names_how_each_flag_was_settled_and_closes_those_an_archived_side_left_open(store_url: str) -> None:
    with MemoryStore(store_url) as store:
        store.add_many([{"id": name, "text": f"fact {name}", "timestamp": n} for n, name in enumerate("abcdef")])
        forgot = store.forget(["a"])
    engine = make_engine(store_url)
    try:
        migrate(engine, "downgrade", "0011")
        with write_transaction(engine) as conn:
            # As 0011 left them: a flag open on a forgotten side, a supersede's and a dismissal.
            for older, newer, status in (("a", "b", "open"), ("c", "d", "resolved"), ("e", "f", "dismissed")):
                closed = None if status == "open" else forgot.run_id
                conn.execute(
                    text("INSERT INTO contradiction_flags (namespace, older_id, newer_id, similarity, reason, status, run_id, flagged_at,"
                         " closed_at, closed_by_run) VALUES ('default', :o, :n, 0.9, 'test', :s, :run, 1, :at, :by)"),
                    {"o": older, "n": newer, "s": status, "run": forgot.run_id, "at": closed, "by": closed},
                )  # fmt: skip
        migrate(engine, "upgrade", "head")
        assert schema_diff(engine) == [] and drift(engine) == []
        with MemoryStore(store_url) as store:
            settled = sorted((f["older_id"], f["status"], f["verdict"], f["closed_by_run"]) for f in store.flags(None, status="all"))
            archived_at = store.get("a")["archived_at"]
            assert store.flags(None, status="resolved")[-1]["closed_at"] == archived_at
        assert settled == [("a", "resolved", "forgotten", forgot.run_id), ("c", "resolved", "superseded", forgot.run_id),
                           ("e", "dismissed", "dismissed", forgot.run_id)]  # fmt: skip
        migrate(engine, "downgrade", "0011")
        with engine.connect() as conn:
            assert "verdict" not in {c["name"] for c in inspect(conn).get_columns("contradiction_flags")}
        migrate(engine, "upgrade", "head")
    finally:
        engine.dispose()
