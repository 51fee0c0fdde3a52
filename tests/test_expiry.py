"""Memories that expire: invisible to every read from their end, archived as `expired` by the next
job (before any rule ranks them), brought back by restore as they were."""

from __future__ import annotations

import io
import json
import time

import pytest
from click.testing import CliRunner
from sqlalchemy import event

from memstore import MemoryStore, ValidationError
from memstore.cli import cli
from memstore.records import now_ms

from .sqlitelib import sqlite3

HOUR_MS = 3_600_000


@pytest.fixture
def run(db_path):
    def invoke(*args: str, stdin: str | None = None):
        return CliRunner().invoke(cli, ["--db", str(db_path), *args], input=stdin)

    return invoke


@pytest.mark.slow
def test_a_memory_added_with_ttl_2s_is_recalled_before_and_not_after_then_archived_as_expired_and_restored(run, db_path):
    assert run("add", "The door code is 4512.", "--id", "old").exit_code == 0
    time.sleep(0.01)
    assert run("add", "the door code is 4512", "--id", "new", "--ttl", "2s").exit_code == 0
    assert [r["id"] for r in json.loads(run("recall", "door code", "--json").output)] == ["new", "old"]
    time.sleep(2.1)
    assert [r["id"] for r in json.loads(run("recall", "door code", "--json").output)] == ["old"]
    assert [r["id"] for r in json.loads(run("list", "--json").output)] == ["old"]
    shown = run("show", "new")
    assert [line.split() for line in shown.output.splitlines() if line.startswith("state")] == [["state", "expired"]]
    assert json.loads(run("show", "new", "--json").output)["state"] == "expired"

    # The newer copy has expired, so the older one is no longer its duplicate: it survives.
    consolidated = json.loads(run("consolidate", "--capacity", "10", "--json").output)
    assert [(a["id"], a["reason"]) for a in consolidated["archived"]] == [("new", "expired")]
    assert consolidated["expired"] == 1 and consolidated["duplicates"] == 0
    assert [r["id"] for r in json.loads(run("list", "--json").output)] == ["old"]
    with sqlite3.connect(db_path) as shell:
        assert shell.execute("SELECT reason FROM memory_archive WHERE id = 'new'").fetchall() == [("expired",)]
        assert shell.execute("SELECT kind, expired FROM consolidation_runs").fetchall() == [("consolidate", 1)]
    shell.close()

    restored = run("restore", "--run", str(consolidated["run_id"]))
    assert restored.exit_code == 0, restored.output
    back = json.loads(run("show", "new", "--json").output)
    assert back["state"] == "expired" and "archived_at" not in back  # back as it was: in the live table, expired
    assert run("update", "new", "--no-expiry").exit_code == 0  # a person may give it a lasting life again
    assert len(json.loads(run("recall", "door code", "--json").output)) == 2


@pytest.mark.parametrize(
    "args, field",
    [
        (("--ttl", "banana"), "--ttl"),
        (("--ttl", "-5s"), "--ttl"),
        (("--ttl", "0s"), "--ttl"),
        (("--ttl", "30"), "--ttl"),
        (("--ttl", "5w"), "--ttl"),
        (("--expires-at", "2026-13-01"), "--expires-at"),
        (("--expires-at", "tomorrow"), "--expires-at"),
        (("--expires-at", "--5"), "--expires-at"),
        (("--expires-at", "\u0661\u0662"), "--expires-at"),  # Arabic-Indic digits: not Unix ms
        (("--expires-at", "1_000"), "--expires-at"),
        (("--ttl", "1d", "--expires-at", "2030-01-01"), "ttl"),
    ],
)
def test_a_bad_lifetime_is_a_one_line_error_naming_the_field_and_nothing_is_written(run, db_path, args, field):
    result = run("add", "A fact.", *args)
    assert result.exit_code == 1 and result.output.count("\n") == 1 and field in result.output, result.output
    assert result.output.startswith("Error: ")
    if db_path.exists():
        with MemoryStore(db_path) as store:
            assert store.count(None) == 0


def test_update_sets_changes_and_clears_a_lifetime_each_a_new_version(run):
    run("add", "Sprint goal: ship search.", "--id", "goal")
    with_ttl = json.loads(run("update", "goal", "--ttl", "14d", "--json").output)
    assert 14 * 24 * HOUR_MS - 5_000 < with_ttl["expires_at"] - now_ms() <= 14 * 24 * HOUR_MS
    kept = json.loads(run("update", with_ttl["id"], "--text", "Sprint goal: ship search v2.", "--json").output)
    assert kept["expires_at"] == with_ttl["expires_at"]  # carried, like every field not given
    cleared = json.loads(run("update", kept["id"], "--no-expiry", "--json").output)
    assert cleared["expires_at"] is None
    at = json.loads(run("update", cleared["id"], "--expires-at", "2030-01-02T03:04:05.678Z", "--json").output)
    assert at["expires_at"] == 1893553445678
    same = run("update", at["id"], "--expires-at", "1893553445678")
    assert same.exit_code == 1 and "changes nothing" in same.output
    both = run("update", at["id"], "--no-expiry", "--ttl", "1d")
    assert both.exit_code == 1 and "no_expiry" in both.output


def test_import_takes_expires_at_as_iso_or_unix_ms_and_rows_show_it(run, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(
        '{"id": "a", "text": "Travelling this week.", "expires_at": "2030-01-01T00:00:00Z"}\n'
        '{"id": "b", "text": "Door code 4512.", "expires_at": 1893456000000}\n'
        '{"id": "c", "text": "Lasting fact."}\n'
    )
    assert run("import", str(source)).exit_code == 0
    rows = {r["id"]: r["expires_at"] for r in json.loads(run("list", "--json").output)}
    assert rows == {"a": 1893456000000, "b": 1893456000000, "c": None}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "d", "text": "x"}\n{"id": "e", "text": "y", "expires_at": "soon"}\n')
    result = run("import", str(bad))
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert "line 2" in result.output and "expires_at" in result.output
    assert sorted(rows) == sorted(r["id"] for r in json.loads(run("list", "--json").output))  # nothing half-written


def test_export_keeps_expired_memories_not_yet_archived_and_import_brings_them_back_expired(tmp_path):
    with MemoryStore(tmp_path / "a.db") as store:
        store.add("Gone soon.", id="gone", expires_at=now_ms() - 1)
        store.add("Stays.", id="stays")
        stream = io.StringIO()
        assert store.export(stream, None) == 2
    with MemoryStore(tmp_path / "b.db") as copy:
        copy.import_from("memstore", io.StringIO(stream.getvalue()), name="move.jsonl")
        assert [r["id"] for r in copy.list()] == ["stays"] and copy.get("gone")["expires_at"] is not None


def test_the_api_takes_ttl_or_expires_at_and_a_retry_with_ttl_is_still_a_retry(store):
    before = now_ms()
    row = store.add("Door code 4512.", id="d", ttl=60)
    assert before + 60_000 <= row["expires_at"] <= now_ms() + 60_000
    time.sleep(0.01)
    assert store.remember("Door code 4512.", id="d", ttl=60)["status"] == "unchanged"
    with pytest.raises(ValidationError, match="not both"):
        store.add("x", ttl=5, expires_at=now_ms())
    for bad in (0, -1, float("inf"), float("nan"), True, "5s"):
        with pytest.raises(ValidationError, match="ttl"):
            store.add("x", ttl=bad)
    with pytest.raises(ValidationError, match="expires_at"):
        store.add("x", expires_at="tomorrow")
    assert store.count(None) == 1


def test_expired_memories_are_invisible_to_every_read_until_a_job_archives_them(store):
    past = now_ms() - 1
    store.add_many([
        {"id": "gone", "text": "Door code 4512.", "expires_at": past, "fact_key": "door", "namespace": "n1"},
        {"id": "kept", "text": "Door code 7781.", "namespace": "n2"},
    ])  # fmt: skip
    assert [r["id"] for r in store.list(None)] == ["kept"]
    assert store.count(None) == 1 and store.namespaces() == ["n2"]
    assert store.recall("door code", namespace="n1") == []
    assert store.find_fact("n1", "door") is None
    assert store.get("gone")["expires_at"] == past  # show still shows it
    report = store.expire()
    assert [(a.id, a.reason) for a in report.archived] == [("gone", "expired")] and report.expired == 1
    assert store.expire().run_id is None  # nothing left to expire: no run
    # Pinned or not, a memory's own lifetime ends it.
    store.add("Pinned, but only for now.", id="pin", pinned=True, expires_at=now_ms() - 1)
    assert [a.id for a in store.prune(None).archived] == ["pin"]


def test_every_statement_that_finds_expired_memories_reads_them_off_the_expiry_index(sqlite_store, db_path):
    # The statements the jobs run, explained by SQLite itself: a plan that walks a namespace index
    # instead reads every memory of the namespace to find the few with a lifetime.
    sqlite_store.add_many([{"text": f"Fact number {i}.", "namespace": "n1"} for i in range(50)])
    sqlite_store.add("Soon gone.", namespace="n1", expires_at=now_ms() - 1)
    statements: list[tuple[str, tuple]] = []

    @event.listens_for(sqlite_store.engine, "before_cursor_execute")
    def keep(conn, cursor, statement, parameters, context, executemany):  # noqa: ARG001
        if "expires_at <=" in statement:
            statements.append((statement, parameters))

    sqlite_store.expire(namespace="n1")
    sqlite_store.add("Gone too.", namespace="n1", expires_at=now_ms() - 1)
    sqlite_store.consolidate(10, namespace="n1")
    sqlite_store.prune("n1")
    assert len(statements) >= 6
    with sqlite3.connect(db_path) as shell:
        for statement, parameters in statements:
            plan = " ".join(str(step) for step in shell.execute(f"EXPLAIN QUERY PLAN {statement}", parameters))
            assert "ix_memories_expires_at" in plan and "namespace=?" not in plan, (statement, plan)
    shell.close()


def test_the_meaning_phases_never_pair_a_memory_with_an_expired_one(store):
    # An expired copy is out of sight: merged with a live fact it would win as the newer one and the
    # live fact would be archived under it; paired with a changed value it would be flagged.
    from .handmade import store_handmade_vectors

    store.add_many([
        {"id": "live", "text": "The user lives in Lisbon, Portugal.", "timestamp": 1},
        {"id": "copy", "text": "The user lives in Lisbon, Portugal!", "timestamp": 2, "expires_at": now_ms() - 1},
        {"id": "moved", "text": "The user lives in Porto, Portugal.", "timestamp": 3, "expires_at": now_ms() - 1},
    ])  # fmt: skip
    store_handmade_vectors(store, {"live": [1.0, 0.0], "copy": [1.0, 0.0], "moved": [1.0, 0.0]})
    report = store.maintain(["semantic", "contradict"])
    assert [(p.name, p.status, p.archived, p.flags) for p in report.phases] == [("semantic", "ok", [], []), ("contradict", "ok", [], [])]
    assert [r["id"] for r in store.list(None)] == ["live"]


def test_a_lifetime_beyond_the_calendar_is_shown_in_ms(run):
    # Any 64-bit ms is a valid end; past year 9999 (or before year 1) there is no date to print.
    assert run("add", "Far future.", "--id", "far", "--ttl", "3000000d").exit_code == 0
    assert run("add", "Long past.", "--id", "past", "--expires-at", "-99999999999999").exit_code == 0
    far, past = run("show", "far"), run("show", "past")
    assert far.exit_code == 0 and past.exit_code == 0, far.output + past.output
    assert [line.split() for line in past.output.splitlines() if line.startswith("expires_at")] == [["expires_at", "-99999999999999"]]
    [far_line] = [line.split() for line in far.output.splitlines() if line.startswith("expires_at")]
    assert len(far_line) == 2 and int(far_line[1]) > now_ms()
