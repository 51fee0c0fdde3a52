"""`memstore check`: finds what hand edits and accidents leave behind, and `--fix` repairs what it can."""

from __future__ import annotations

import json
from .sqlitelib import sqlite3

from click.testing import CliRunner

from memstore.cli import cli

from .conftest import SEED_SAMPLE


def run(db_path, *args):
    return CliRunner().invoke(cli, ["--db", str(db_path), *args])


def test_a_healthy_store_passes(sqlite_store, db_path):
    sqlite_store.add_many(SEED_SAMPLE)
    sqlite_store.consolidate(1)
    result = run(db_path, "check")
    assert (result.exit_code, result.output) == (0, "ok: 10 checks, 0 findings\n")


def test_text_edited_in_the_shell_is_found_and_fixed(sqlite_store, db_path):
    sqlite_store.add_many(SEED_SAMPLE)
    sqlite_store.consolidate(5)
    shell = sqlite3.connect(db_path)
    shell.execute("UPDATE memories SET text = 'Ships on MONDAYS!' WHERE id = 'm3'")
    shell.execute("UPDATE memory_archive SET text = 'Something else.' WHERE id = 'm1'")
    shell.commit()
    found = run(db_path, "check", "--json")
    assert found.exit_code == 1
    assert [f["detail"] for f in json.loads(found.output)["findings"]] == [
        "memories 'm3': norm_key should be 'ships on mondays'",
        "memory_archive 'm1': norm_key should be 'something else'",
    ]
    fixed = run(db_path, "check", "--fix")
    assert fixed.exit_code == 0 and fixed.output.count("fixed  norm_key") == 2
    assert sqlite_store.get("m3")["norm_key"] == "ships on mondays"
    assert run(db_path, "check").exit_code == 0


def test_an_id_both_live_and_archived_is_reported(sqlite_store, db_path):
    sqlite_store.add_many(SEED_SAMPLE)
    shell = sqlite3.connect(db_path)
    shell.execute(
        "INSERT INTO memory_archive (id, namespace, text, norm_key, timestamp, importance, pinned, created_at,"
        " updated_at, recall_count, archived_at, reason) SELECT id, namespace, text, norm_key, timestamp,"
        " importance, pinned, created_at, updated_at, recall_count, 0, 'manual' FROM memories WHERE id = 'm2'"
    )
    shell.commit()
    result = run(db_path, "check")
    assert result.exit_code == 1 and "FOUND  ids: 'm2' is both live and archived" in result.output


def test_a_recall_index_out_of_step_is_found_and_rebuilt(sqlite_store, db_path):
    sqlite_store.add("hello world", id="a")
    shell = sqlite3.connect(db_path)
    shell.execute("INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', (SELECT rowid FROM memories WHERE id = 'a'), 'hello world')")
    shell.commit()
    assert sqlite_store.recall("hello", touch=False) == []
    found = run(db_path, "check")
    assert found.exit_code == 1 and "fts: the recall index is out of step" in found.output
    assert run(db_path, "check", "--fix").exit_code == 0
    assert [r["id"] for r in sqlite_store.recall("hello", touch=False)] == ["a"]


def test_a_missing_trigger_and_a_lost_desc_are_reported(sqlite_store, db_path):
    shell = sqlite3.connect(db_path)
    shell.execute("DROP TRIGGER memories_fts_after_update")
    shell.execute("DROP INDEX ix_memories_rank")
    shell.execute("CREATE INDEX ix_memories_rank ON memories (namespace, pinned, importance, timestamp, id)")
    shell.commit()
    result = run(db_path, "check", "--fix")
    assert result.exit_code == 1
    assert "FOUND  fts: trigger memories_fts_after_update is missing" in result.output
    assert "FOUND  indexes: index ix_memories_rank is" in result.output


def test_a_schema_behind_head_is_reported(sqlite_store, db_path):
    shell = sqlite3.connect(db_path)
    shell.execute("UPDATE alembic_version SET version_num = '0001'")
    shell.commit()
    report = sqlite_store.check()
    assert not report.ok and any(f.check == "schema" and "0001" in f.detail for f in report.findings)


def test_a_write_committed_by_another_process_during_the_check_is_no_finding(sqlite_store, db_path):
    """FTS5 checks its index with an INSERT. Run inside the checks' read snapshot, it failed as soon
    as another writer had committed since the snapshot began, and the check reported a damaged index."""
    from sqlalchemy import event

    from memstore import MemoryStore

    sqlite_store.add("User prefers dark mode.", id="m1")
    other = MemoryStore(db_path)  # another writer, with its own connection
    written = []

    @event.listens_for(sqlite_store.engine, "before_cursor_execute")
    def write_meanwhile(conn, cursor, statement, *args):
        if statement.startswith("PRAGMA journal_mode") and not written:  # inside the read snapshot
            written.append(other.add(f"an agent's turn {len(written)}")["id"])

    try:
        report = sqlite_store.check()
    finally:
        event.remove(sqlite_store.engine, "before_cursor_execute", write_meanwhile)
        other.close()
    assert written and report.ok, report.findings
    assert "fts" in report.checks_run


def test_values_a_shell_edit_broke_are_found_and_reads_of_them_say_so(sqlite_store, db_path):
    sqlite_store.add("good", id="g")
    sqlite_store.add("second", id="t")
    with sqlite3.connect(db_path) as conn:  # SQLite's loose typing lets a hand edit store these
        conn.execute("""UPDATE memories SET meta = '{"a":1' WHERE id = 'g'""")
        conn.execute("UPDATE memories SET timestamp = 'abc' WHERE id = 't'")
    report = sqlite_store.check()
    assert [f.detail for f in report.findings if f.check == "values"] == [
        "memories 't': timestamp holds a text; correct it in the shell",
        "memories 'g': meta holds text that is not JSON; correct it in the shell",
    ]
    shown = run(db_path, "show", "g")
    assert shown.exit_code == 1 and shown.output.count("\n") == 1 and "memstore check" in shown.output
