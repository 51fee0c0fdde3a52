"""`memstore maintain` on its own: the phases run in dependency order, each one run; a failed phase
skips exactly the phases that need its result; a dry run shows exactly what the real run applies;
the WAL is checkpointed once at the end. Hand-made vectors: the plumbing is under test here, the
meaning is tested with the real model in test_semantic_store.py."""

from __future__ import annotations

import shutil
from .sqlitelib import sqlite3
import time

import pytest
from sqlalchemy import select, text

from memstore import MemoryStore

from .handmade import store_handmade_vectors

DAY_MS = 86_400_000
NOW = 1_790_000_000_000  # 2026-09-21
MEMORIES = [
    # Exact duplicates: dedup archives the older copy.
    {"id": "dup1", "text": "User prefers dark mode.", "timestamp": NOW - 9 * DAY_MS},
    {"id": "dup2", "text": "user prefers dark mode", "timestamp": NOW - 8 * DAY_MS},
    # The same fact in other words: the semantic phase merges them.
    {"id": "s1", "text": "Deploy v2.1 to staging at 3pm.", "timestamp": NOW - 7 * DAY_MS},
    {"id": "s2", "text": "Staging deploy is scheduled for 3pm.", "timestamp": NOW - 6 * DAY_MS},
    # A changed value: flagged by contradict, never merged.
    {"id": "c1", "text": "The API rate limit is 100 rpm.", "timestamp": NOW - 5 * DAY_MS},
    {"id": "c2", "text": "The API rate limit is 500 rpm.", "timestamp": NOW - 4 * DAY_MS},
    # Untouched for years: stale.
    {"id": "old", "text": "Parking is on level two.", "timestamp": 0, "created_at": 0},
    # Its lifetime is over: expire archives it before any rule ranks it.
    {"id": "code", "text": "The door code is 4512.", "timestamp": NOW - DAY_MS, "expires_at": NOW},
]
VECTORS = {
    "dup1": [1, 0, 0, 0, 0, 0], "dup2": [1, 0, 0, 0, 0, 0],
    "s1": [0, 1, 0, 0, 0, 0], "s2": [0, 0.95, 0.31225, 0, 0, 0],
    "c1": [0, 0, 0, 1, 0, 0], "c2": [0, 0, 0, 0.96, 0.28, 0],
    "old": [0, 0, 0, 0, 0, 1], "code": [0, 0, 0, 0, 0.6, 0.8],
}  # fmt: skip
CHECKS = [{"query": "API rate limit", "expect_id": "c2"}]
WRITING_PHASES = ("expire", "dedup", "semantic", "contradict", "stale", "evict")


@pytest.fixture
def filled(store):
    store.add_many(MEMORIES)
    store_handmade_vectors(store, VECTORS)
    return store


def maintain(store: MemoryStore, **options):
    return store.maintain(capacity=2, checks=CHECKS, stale=True, **options)


def statuses(report) -> list[tuple[str, str]]:
    return [(phase.name, phase.status) for phase in report.phases]


def test_every_phase_runs_in_dependency_order_each_its_own_run(filled):
    report = maintain(filled)
    assert statuses(report) == [(name, "ok") for name in ("check", *WRITING_PHASES, "verify")]
    by_name = {phase.name: phase for phase in report.phases}
    run_ids = [by_name[name].run_id for name in WRITING_PHASES]
    assert run_ids == sorted(run_ids) and len(set(run_ids)) == len(WRITING_PHASES)
    phase_runs = [run for run in reversed(filled.runs()) if run["kind"] != "maintain"]
    assert [(run["id"], run["kind"]) for run in phase_runs] == list(zip(run_ids, WRITING_PHASES))
    # One run groups them: the invocation's, whose undo takes every phase back.
    assert {run["parent_run_id"] for run in phase_runs} == {report.run_id} and filled.run(report.run_id)["kind"] == "maintain"
    assert by_name["check"].run_id is None and by_name["verify"].run_id is None
    archived = {entry["id"]: (entry["reason"], entry["superseded_by"]) for p in report.phases for entry in p.archived}
    assert archived == {
        "code": ("expired", None), "dup1": ("duplicate", "dup2"), "s1": ("semantic_duplicate", "s2"), "old": ("stale", None),
        # capacity 2 keeps c2 and c1, the newest of equal importance
        "dup2": ("evicted", None), "s2": ("evicted", None),
    }  # fmt: skip
    assert [(f["a"], f["b"]) for f in by_name["contradict"].flags] == [("c1", "c2")]
    assert [m["id"] for m in filled.list()] == ["c2", "c1"]


def test_the_stale_phase_archives_nothing_unless_asked(filled):
    report = filled.maintain(capacity=100)
    stale = {phase.name: phase for phase in report.phases}["stale"]
    assert (stale.status, stale.error, stale.run_id) == ("skipped", "archives nothing unless asked (--stale)", None) and report.ok
    assert "old" in [m["id"] for m in filled.list()] and "stale" not in {run["kind"] for run in filled.runs()}
    asked = filled.maintain(["stale"], stale=True).phases[0]
    assert [(entry["id"], entry["reason"]) for entry in asked.archived] == [("old", "stale")]


def test_a_phase_that_changes_nothing_records_no_run(filled):
    from memstore.db import read_transaction
    from memstore.schema import memstore_settings

    maintain(filled)
    before = filled.runs()
    again = maintain(filled)
    assert again.ok and [phase.run_id for phase in again.phases] == [None] * 8
    assert filled.runs() == before  # `memstore runs` lists only what changed the store
    # How far the empty phases compared is kept for the next run of their kind.
    with read_transaction(filled.engine) as conn:
        keys = conn.execute(select(memstore_settings.c.key).where(memstore_settings.c.key.like("compared:%")).order_by(memstore_settings.c.key)).scalars().all()
    assert keys == ["compared:contradict:default", "compared:dedup:default", "compared:semantic:default"]
    third = {phase.name: phase for phase in maintain(filled).phases}
    assert third["semantic"].counts["compared"] == third["contradict"].counts["compared"] == 0
    filled.restore(before[0]["id"])  # the runs that did change something still undo


def test_phases_asked_for_in_any_order_run_in_dependency_order(filled):
    report = filled.maintain(["verify", "evict", "dedup", "check"], capacity=2)
    assert [phase.name for phase in report.phases] == ["check", "dedup", "evict", "verify"]


def _refuse(store: MemoryStore, table: str, when: str) -> None:
    """A trigger that makes the database refuse some inserts: a phase that writes one fails for real."""
    with store.engine.begin() as conn:
        if store.is_sqlite:
            conn.execute(text(f"CREATE TRIGGER refuse BEFORE INSERT ON {table} WHEN {when} "
                              "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"))  # fmt: skip
        else:
            conn.execute(text(f"CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN IF {when} THEN "
                              "RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql"))  # fmt: skip
            conn.execute(text(f"CREATE TRIGGER refuse BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION refuse()"))


FAILURES = {
    # phase: (what makes it fail, the phases its failure skips)
    "expire": (("memory_archive", "NEW.reason = 'expired'"), {"dedup", "semantic", "contradict", "stale", "evict"}),
    "dedup": (("memory_archive", "NEW.reason = 'duplicate'"), {"semantic", "contradict", "evict"}),
    "semantic": (("memory_archive", "NEW.reason = 'semantic_duplicate'"), {"contradict"}),
    "contradict": (("contradiction_flags", "NEW.older_id = 'c1'"), set()),
    "stale": (("memory_archive", "NEW.reason = 'stale'"), set()),
    "evict": (("memory_archive", "NEW.reason = 'evicted'"), set()),
}


@pytest.mark.parametrize("failing", sorted(FAILURES))
def test_a_failed_phase_skips_exactly_the_phases_that_need_it(filled, failing):
    (table, when), skipped = FAILURES[failing]
    _refuse(filled, table, when)
    report = maintain(filled)
    expected = [(name, "failed" if name == failing else "skipped" if name in skipped else "ok")
                for name in ("check", *WRITING_PHASES, "verify")]  # fmt: skip
    assert statuses(report) == expected and not report.ok
    failed = report.phases[[name for name, _ in expected].index(failing)]
    assert "refused by the test" in failed.error and failed.run_id is None and failed.archived == []
    assert failing not in {run["kind"] for run in filled.runs()}  # rolled back whole
    for phase in report.phases:
        if phase.status == "skipped":
            assert phase.error.startswith("needs ")


def test_a_failed_check_skips_every_phase_that_writes(filled):
    with filled.engine.begin() as conn:
        conn.execute(text("UPDATE memories SET norm_key = 'edited by hand' WHERE id = 'c1'"))
    report = maintain(filled)
    assert statuses(report) == [("check", "failed"), *((name, "skipped") for name in WRITING_PHASES), ("verify", "failed")]
    assert "norm_key" in report.phases[0].error
    assert filled.runs() == []


def _seen(report) -> list:
    return [
        (p.name, p.status, p.error, [(a["id"], a["reason"], a["superseded_by"], a["similarity"]) for a in p.archived],
         [(f["a"], f["b"], f["reason"]) for f in p.flags], {k: v for k, v in p.counts.items() if k != "findings"})
        for p in report.phases
    ]  # fmt: skip


@pytest.mark.parametrize("failing", [None, "semantic"])
def test_a_dry_run_shows_exactly_what_the_real_run_applies(filled, failing):
    if failing is not None:
        _refuse(filled, *FAILURES[failing][0])
    before = filled.list(None)
    dry = maintain(filled, dry_run=True)
    assert dry.dry_run and filled.list(None) == before and filled.runs() == [] and filled.flags() == []
    real = maintain(filled)
    assert _seen(dry) == _seen(real)


def test_the_wal_is_checkpointed_once_maintain_is_done(sqlite_store, db_path, tmp_path):
    store = sqlite_store  # one store object for the whole test, as in a long-lived server
    store.add_many(MEMORIES)
    store_handmade_vectors(store, VECTORS)
    report = store.maintain(["dedup", "stale"], stale=True)
    assert statuses(report) == [("dedup", "ok"), ("stale", "ok")]
    # The database file alone, without its -wal, already holds what maintain archived.
    alone = tmp_path / "alone.db"
    shutil.copyfile(db_path, alone)
    with sqlite3.connect(alone) as copy:
        archived = copy.execute("SELECT id, reason FROM memory_archive ORDER BY id").fetchall()
    assert archived == [("code", "expired"), ("dup1", "duplicate"), ("old", "stale")]


def threads_held(checkpoints) -> int:
    """The checkpoint threads a BackgroundCheckpoints holds on to (finished ones are let go at the next start)."""
    with checkpoints._lock:
        return len(checkpoints._running)


def test_finished_checkpoint_threads_are_not_kept(sqlite_store):
    store = sqlite_store
    for round_ in range(5):
        store.add("Deploys happen on Fridays.", id=f"m{round_}")
        store.consolidate(capacity=100)
        deadline = time.monotonic() + 30
        while store.checkpoints.running() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert store.checkpoints.running() == 0
    store.add("Deploys happen on Fridays!", id="last")
    store.consolidate(capacity=100)
    assert threads_held(store.checkpoints) <= 1
