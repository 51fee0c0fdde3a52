"""The SQL job against the pure-Python reference, on real SQLite files, over generated stores."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore import MemoryStore
from memstore.reference import plan_consolidation

from .conftest import BACKENDS, empty_store
from .strategies import NAMESPACES, examples, stores

RULE_FIELDS = ("id", "namespace", "text", "timestamp", "importance", "pinned")
RECALL_FIELDS = ("recall_count", "last_recalled_at")


@pytest.fixture(scope="module", params=BACKENDS)
def shared_store(request, tmp_path_factory):
    """One store per backend for all examples; each example starts by emptying it."""
    if request.param == "sqlite":
        with MemoryStore(tmp_path_factory.mktemp("crosscheck") / "store.db") as opened:
            yield opened
        return
    postgres = request.getfixturevalue("postgres")
    name = postgres.new_database()
    with MemoryStore(postgres.url(name)) as opened:
        yield opened
    postgres.drop_database(name)


def rule_view(row: dict) -> tuple:
    return tuple(row[field] for field in RULE_FIELDS)


@settings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=stores(), capacity=st.integers(0, 10), target=st.sampled_from([*NAMESPACES, None]))
def test_sql_job_leaves_exactly_what_the_reference_keeps(shared_store, records, capacity, target):
    store = shared_store
    empty_store(store)
    store.add_many(records)
    by_id = {r["id"]: r for r in records}

    dry = store.consolidate(capacity, target, dry_run=True, list_kept=True)
    assert store.count(None) == len(records) and store.count(None, archived=True) == 0
    assert store.runs() == []

    report = store.consolidate(capacity, target, list_kept=True)
    assert dry.kept_ids == report.kept_ids and dry.archived == report.archived

    expected_kept, expected_archived = [], {}
    for namespace in NAMESPACES:
        inputs = [r for r in records if r["namespace"] == namespace]
        live = store.list(namespace)
        if target not in (None, namespace):
            assert sorted(rule_view(r) for r in live) == sorted(rule_view(r) for r in inputs)
            continue
        plan = plan_consolidation(inputs, capacity)
        # Same rows, same order, same values.
        assert [rule_view(r) for r in live] == [rule_view(m) for m in plan.kept]
        expected_kept += [m["id"] for m in plan.kept]
        expected_archived |= {m["id"]: ("duplicate", winner) for m, winner in plan.duplicates}
        expected_archived |= {m["id"]: ("evicted", None) for m in plan.evicted}

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
    assert sorted(map(full_view, store.list(None))) == sorted(map(full_view, records))
    assert store.count(None, archived=True) == 0
