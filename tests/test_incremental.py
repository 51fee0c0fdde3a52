"""Incremental consolidation leaves exactly the store a full run leaves, over any history of writes."""

from __future__ import annotations

from .sqlitelib import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore import MemoryStore, MemstoreError

from .conftest import empty_store
from .strategies import NAMESPACES, examples, lifetimes, memory_texts, timestamps

ROW_FIELDS = ("id", "namespace", "text", "timestamp", "importance", "pinned", "recall_count", "last_recalled_at")

write = st.fixed_dictionaries(
    {
        "text": memory_texts,
        "timestamp": timestamps,
        "importance": st.sampled_from([1, 2, 5]),
        "pinned": st.integers(0, 6).map(lambda n: n == 0),
        "namespace": st.sampled_from(NAMESPACES[:2]),
        "recall_count": st.sampled_from([0, 2]),
        "expires_at": lifetimes,
    }
)
step = st.one_of(
    st.tuples(st.just("write"), st.lists(write, min_size=1, max_size=6)),
    st.tuples(st.just("consolidate"), st.integers(0, 6), st.sampled_from([NAMESPACES[0], NAMESPACES[1], None])),
    st.tuples(st.just("restore"), st.integers(0, 5)),
    # The lifecycle operations are runs too: forget a memory, update one (a new version with a new
    # seq), or let one supersede another of its namespace.
    st.tuples(st.just("forget"), st.integers(0, 20)),
    st.tuples(st.just("update"), st.integers(0, 20), memory_texts, timestamps),
    st.tuples(st.just("supersede"), st.integers(0, 20), st.integers(0, 20)),
    # Shell edits that keep every group as clean as the last run left it (the high-water mark's
    # premise) but that the trigger-kept live counts must survive: INSERT OR REPLACE deletes without
    # firing DELETE triggers.
    # A shell insert gives no seq: SQLite numbers it, and the next run must see its key.
    st.tuples(st.just("shell"), st.integers(0, 20), st.sampled_from(["replace", "delete", "pin", "insert", "lapse"])),
)

SHELL_EDITS = {
    "replace": "INSERT OR REPLACE INTO memories SELECT * FROM memories WHERE id = :id",
    "delete": "DELETE FROM memories WHERE id = :id",
    "pin": "UPDATE memories SET pinned = 2 WHERE id = :id",
    # A lifetime that ends after the last run looked (time passing, without waiting for it).
    "lapse": "UPDATE memories SET expires_at = 1 WHERE id = :id",
    "insert": (  # a newer copy of a live fact, under an id never used
        "INSERT OR IGNORE INTO memories (id, namespace, text, norm_key, timestamp, importance, created_at, updated_at)"
        " SELECT id || '+', namespace, text, norm_key, timestamp + 1, importance, created_at, updated_at"
        " FROM memories WHERE id = :id AND id || '+' NOT IN (SELECT id FROM memory_archive)"
    ),
}


@pytest.fixture(scope="module")
def twin_stores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("incremental")
    with MemoryStore(folder / "incremental.db") as incremental, MemoryStore(folder / "full.db") as full:
        yield incremental, full


def _shell_edit(store, kind, pick):
    path = store.engine.url.database
    with sqlite3.connect(path) as shell:
        ids = [row[0] for row in shell.execute("SELECT id FROM memories ORDER BY id")]
        if ids:
            shell.execute(SHELL_EDITS[kind], {"id": ids[pick % len(ids)]})
    shell.close()


def _live_counts_table_matches_rows(store):
    with sqlite3.connect(store.engine.url.database) as shell:
        kept = shell.execute(
            "SELECT namespace, unpinned, pinned FROM memory_live_counts WHERE unpinned + pinned > 0 ORDER BY namespace"
        ).fetchall()
        rows = shell.execute(
            "SELECT namespace, sum(coalesce(pinned = 0, 0)), sum(coalesce(pinned = 0, 0) = 0) FROM memories"
            " GROUP BY namespace ORDER BY namespace"
        ).fetchall()
    shell.close()
    return kept == rows


def _six_facts_after_a_run(path):
    """A store of m0..m5 (m0 the oldest), all kept by a first run at capacity 6."""
    with MemoryStore(path) as store:
        store.add_many([{"id": f"m{n}", "text": f"fact {n}", "timestamp": n} for n in range(6)])
        store.consolidate(6)


def _state(store):
    live = [tuple(m[f] for f in ROW_FIELDS) for m in store.list(None)]
    archived = sorted((m["id"], m["reason"], m["superseded_by"], m["run_id"]) for m in store.list(None, archived=True))
    runs = [(r["id"], r["status"], r["kept"], r["duplicates"], r["evicted"], r["expired"]) for r in store.runs()]
    return live, archived, runs


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, max_size=12))
def test_incremental_and_full_runs_leave_identical_stores(twin_stores, steps):
    incremental, full = twin_stores
    for store in twin_stores:
        empty_store(store)
    written = 0
    for action, *args in steps:
        if action == "write":
            batch = [dict(record, id=f"w{written + n}") for n, record in enumerate(args[0])]
            written += len(batch)
            for store in twin_stores:
                store.add_many(batch)
        elif action == "consolidate":
            capacity, namespace = args
            fast = incremental.consolidate(capacity, namespace, list_kept=False)
            slow = full.consolidate(capacity, namespace, full=True, list_kept=True)
            assert fast.archived == slow.archived
            assert (fast.kept_count, fast.pinned_kept) == (len(slow.kept_ids), slow.pinned_kept)
            assert _live_counts_table_matches_rows(incremental)  # a drift was found and recounted
        elif action == "shell":
            for store in twin_stores:
                _shell_edit(store, args[1], args[0])
        elif action in ("forget", "update", "supersede"):
            live = [m["id"] for m in full.list(None)]
            if live:
                picked = live[args[0] % len(live)]
                if action == "forget":
                    both(twin_stores, lambda store: store.forget([picked]))
                elif action == "update":
                    text, timestamp = args[1], args[2]
                    both(twin_stores, lambda store: store.update(picked, text=text, timestamp=timestamp, new_id=f"{picked}~"))
                else:
                    by = live[args[1] % len(live)]
                    both(twin_stores, lambda store: store.supersede(picked, by=by))
        else:
            applied = [r["id"] for r in full.runs() if r["status"] == "applied"]
            if applied:
                run_id = applied[args[0] % len(applied)]
                # Undoing an update whose new version has since left the live set is refused: alike.
                both(twin_stores, lambda store: store.restore(run_id))
        assert _state(incremental) == _state(full)


def both(twin_stores, operation) -> None:
    """Apply one operation to both stores; an error (an update that changes nothing, a supersede
    across namespaces, ...) must be the same error on both, and then neither store changed."""
    outcomes = []
    for store in twin_stores:
        try:
            operation(store)
            outcomes.append(None)
        except MemstoreError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]


def test_a_second_run_is_incremental_and_reads_only_new_keys(tmp_path):
    with MemoryStore(tmp_path / "s.db") as store:
        store.add_many([{"id": f"m{i}", "text": f"fact {i % 10}", "timestamp": i} for i in range(50)])
        first = store.consolidate(10)
        assert not first.incremental and (first.duplicates, first.evicted) == (40, 0)
        store.add_many([{"id": "new", "text": "Fact 3!", "timestamp": 100}, {"id": "other", "text": "brand new", "timestamp": 1}])
        second = store.consolidate(10)
        assert second.incremental
        assert [(a.id, a.reason, a.superseded_by) for a in second.archived] == [("m43", "duplicate", "new"), ("other", "evicted", None)]
        assert store.consolidate(10, full=True).archived == []


def test_counts_survive_a_pinned_value_written_from_the_shell(tmp_path):
    # The schema has no CHECK on `pinned`; a shell user can store 2. The job counts each distinct
    # value as its own group and must still add them up, in the report and in Stage 2's excess.
    path = tmp_path / "pins.db"
    with MemoryStore(path) as store:
        store.add_many([{"id": f"m{n}", "text": f"fact {n}", "timestamp": n, "pinned": n < 3} for n in range(10)])
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE memories SET pinned = 2 WHERE id = 'm0'")
    with MemoryStore(path) as store:
        first = store.consolidate(5, full=True, list_kept=False)
        assert (first.live_before, first.kept_count, first.pinned_kept, first.evicted) == (10, 8, 3, 2)
        store.add_many([{"id": f"n{n}", "text": f"new {n}", "timestamp": 100 + n} for n in range(3)])
        second = store.consolidate(5, list_kept=False)
        assert second.incremental
        assert (second.live_before, second.kept_count, second.pinned_kept, second.evicted) == (11, 8, 3, 3)
        assert sorted(store.consolidate(5, dry_run=True, list_kept=True).kept_ids) == sorted(r["id"] for r in store.list())


@pytest.mark.parametrize("stored", ["2", "''", "x'00'"])
def test_a_shell_pinned_value_is_classed_as_the_stages_class_it(tmp_path, stored):
    # The stages keep `pinned = 0` rows unpinned and every other value pinned; the run's counts
    # (and so Stage 2's excess when incremental) and the report's pinned_kept, however it is
    # counted, must class odd values the same way.
    for full, list_kept in ((True, True), (True, False), (False, True), (False, False)):
        path = tmp_path / f"odd-{full}-{list_kept}.db"
        _six_facts_after_a_run(path)
        with sqlite3.connect(path) as conn:
            conn.execute(f"UPDATE memories SET pinned = {stored} WHERE id = 'm1'")
        with MemoryStore(path) as store:
            store.add_many([{"id": "new", "text": "new fact", "timestamp": 100}])
            report = store.consolidate(5, full=full, list_kept=list_kept)
            assert report.incremental is not full
            assert [entry.id for entry in report.archived] == ["m0"]  # the oldest; m1 counts as pinned
            assert (report.live_before, report.kept_count, report.pinned_kept) == (7, 6, 1)


def test_an_empty_named_namespace_still_runs_incrementally(tmp_path):
    with MemoryStore(tmp_path / "empty-ns.db") as store:
        store.add("a fact", id="a", namespace="work")
        store.consolidate(5, namespace=None)
        later = store.consolidate(5, namespace="nothing-here")
        assert later.incremental and later.live_before == 0 and later.archived == []


def test_live_counts_follow_every_write_path_and_shell_edit(tmp_path):
    path = tmp_path / "counts.db"
    with MemoryStore(path) as store:
        store.add_many([{"id": f"m{n}", "text": f"fact {n % 4}", "timestamp": n, "pinned": n == 0} for n in range(8)])
        store.add("elsewhere", id="w1", namespace="work")
        assert _live_counts_table_matches_rows(store)
        run = store.consolidate(2)
        assert _live_counts_table_matches_rows(store)
        store.restore(run.run_id)
        assert _live_counts_table_matches_rows(store)
    with sqlite3.connect(path) as shell:
        shell.execute("UPDATE memories SET namespace = 'work', pinned = 1 WHERE id = 'm3'")
        shell.execute("UPDATE memories SET pinned = '' WHERE id = 'm0'")  # '' = 0 is false: pinned
        shell.execute("DELETE FROM memories WHERE id = 'm4'")
    shell.close()
    with MemoryStore(path) as store:
        assert _live_counts_table_matches_rows(store)
        assert store.check().ok


def test_a_replace_from_the_shell_is_recounted_not_believed(tmp_path):
    # INSERT OR REPLACE deletes the old row without firing DELETE triggers: the kept counts go one
    # above the rows. An incremental run must notice and evict by the real count.
    path = tmp_path / "replace.db"
    _six_facts_after_a_run(path)
    with sqlite3.connect(path) as shell:
        shell.execute("INSERT OR REPLACE INTO memories SELECT * FROM memories WHERE id = 'm5'")
        assert shell.execute("SELECT unpinned FROM memory_live_counts").fetchone() == (7,)
    shell.close()
    with MemoryStore(path) as store:
        found = store.check()
        assert [f.detail for f in found.findings if f.check == "live_counts"] == [
            "namespace 'default': memory_live_counts says 7 unpinned and 0 pinned, the rows say 6 and 0"
        ]
        store.add("new fact", id="new", timestamp=100)
        report = store.consolidate(6, list_kept=False)
        assert report.incremental and report.live_before == 7
        assert [entry.id for entry in report.archived] == ["m0"]
        assert _live_counts_table_matches_rows(store)


def test_without_their_triggers_the_counts_are_not_used(tmp_path):
    path = tmp_path / "no-trigger.db"
    _six_facts_after_a_run(path)
    with sqlite3.connect(path) as shell:
        # Without the update trigger a move between namespaces goes uncounted, and the totals
        # still agree: only the missing trigger gives it away.
        shell.execute("DROP TRIGGER memory_live_counts_after_update")
        shell.execute("UPDATE memories SET namespace = 'work' WHERE id = 'm3'")
    shell.close()
    with MemoryStore(path) as store:
        store.add("new fact", id="new", timestamp=100)
        report = store.consolidate(5, list_kept=False)
        assert report.incremental and report.live_before == 6
        assert [entry.id for entry in report.archived] == ["m0"]
        findings = [f.detail for f in store.check(fix=True).findings if f.check == "live_counts"]
        assert findings[0] == "trigger memory_live_counts_after_update is missing: memory_live_counts no longer follows writes"


def test_a_row_inserted_from_the_shell_is_seen_by_the_next_incremental_run(tmp_path):
    # The shell user gives no seq: SQLite's AUTOINCREMENT numbers the row past every seq ever used,
    # even though the run just archived the row that held the largest one.
    path = tmp_path / "shell-insert.db"
    with MemoryStore(path) as store:
        store.add_many([{"id": f"m{n}", "text": f"fact {n}", "timestamp": 10 - n} for n in range(4)])
        first = store.consolidate(3)
        assert [a.id for a in first.archived] == ["m3"]  # the oldest, and the last written
    with sqlite3.connect(path) as shell:
        shell.execute(
            "INSERT INTO memories (id, text, norm_key, timestamp, importance, created_at, updated_at)"
            " VALUES ('typed', 'Fact 1!', 'fact 1', 50, 3, 0, 0)"
        )
        assert shell.execute("SELECT seq FROM memories WHERE id = 'typed'").fetchone() == (5,)
    shell.close()
    with MemoryStore(path) as store:
        report = store.consolidate(3)
        assert report.incremental
        assert [(a.id, a.reason, a.superseded_by) for a in report.archived] == [("m1", "duplicate", "typed")]
