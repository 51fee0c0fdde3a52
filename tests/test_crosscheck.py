"""The SQL job against the pure-Python reference, on real SQLite files, over generated stores."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore.records import now_ms
from memstore.reference import is_expired, plan_consolidation

from .conftest import empty_store
from .strategies import NAMESPACES, examples, stores

RULE_FIELDS = ("id", "namespace", "text", "timestamp", "importance", "pinned")
RECALL_FIELDS = ("recall_count", "last_recalled_at")


def rule_view(row: dict) -> tuple:
    return tuple(row[field] for field in RULE_FIELDS)


@settings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=stores(), capacity=st.integers(0, 10), target=st.sampled_from([*NAMESPACES, None]))
def test_sql_job_leaves_exactly_what_the_reference_keeps(shared_store, records, capacity, target):
    store = shared_store
    empty_store(store)
    store.add_many(records)
    by_id = {r["id"]: r for r in records}
    now = now_ms()  # the lifetimes drawn are long over or far off, so any moment of the test will do
    visible = [r for r in records if not is_expired(r, now)]

    dry = store.consolidate(capacity, target, dry_run=True, list_kept=True)
    assert store.count(None) == len(visible) and store.count(None, archived=True) == 0
    assert store.runs() == []

    report = store.consolidate(capacity, target, list_kept=True)
    assert dry.kept_ids == report.kept_ids and dry.archived == report.archived

    expected_kept, expected_archived = [], {}
    for namespace in NAMESPACES:
        inputs = [r for r in records if r["namespace"] == namespace]
        live = store.list(namespace)
        if target not in (None, namespace):
            assert sorted(rule_view(r) for r in live) == sorted(rule_view(r) for r in inputs if not is_expired(r, now))
            continue
        plan = plan_consolidation(inputs, capacity, now)
        # Same rows, same order, same values.
        assert [rule_view(r) for r in live] == [rule_view(m) for m in plan.kept]
        expected_kept += [m["id"] for m in plan.kept]
        expected_archived |= {m["id"]: ("duplicate", winner) for m, winner in plan.duplicates}
        expected_archived |= {m["id"]: ("evicted", None) for m in plan.evicted}
        expected_archived |= {m["id"]: ("expired", None) for m in plan.expired}

    assert report.kept_ids == expected_kept
    archived = store.list(None, archived=True)
    assert {r["id"]: (r["reason"], r["superseded_by"]) for r in archived} == expected_archived
    for row in archived:  # moved whole: text and every rule field unchanged
        assert rule_view(row) == rule_view(by_id[row["id"]]) and row["run_id"] == report.run_id

    # Survivors inherit their duplicates' recall history; archived duplicates keep their own.
    absorbed = {}
    for loser_id, (reason, winner) in expected_archived.items():
        if reason == "duplicate":
            absorbed.setdefault(winner, []).append(by_id[loser_id])
    for row in store.list(None) + archived:
        original = by_id[row["id"]]
        family = [original] + absorbed.get(row["id"], [])
        times = [m["last_recalled_at"] for m in family if m["last_recalled_at"] is not None]
        assert row["recall_count"] == sum(m["recall_count"] for m in family)
        assert row["last_recalled_at"] == (max(times) if times else None)

    again = store.consolidate(capacity, target, list_kept=True)
    assert again.archived == []

    store.restore(report.run_id)
    full_view = lambda r: rule_view(r) + tuple(r[f] for f in RECALL_FIELDS)  # noqa: E731
    assert sorted(map(full_view, store.list(None))) == sorted(map(full_view, visible))
    # Expired ones are back too, as they were: still expired, so still not listed.
    assert store.count(None, archived=True) == 0 and all(store.get(r["id"]).get("archived_at") is None for r in records)
    assert store.count(None, archived=True) == 0
