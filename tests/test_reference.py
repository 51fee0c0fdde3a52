import copy

import pytest

from memstore import consolidate_memories
from memstore.reference import plan_consolidation

from .conftest import SEED_SAMPLE


def mem(id, text, timestamp, importance, **extra):
    return {"id": id, "text": text, "timestamp": timestamp, "importance": importance, **extra}


def test_seed_sample_keeps_m3_then_m2():
    assert [m["id"] for m in consolidate_memories(SEED_SAMPLE, 5)] == ["m3", "m2"]


def test_returns_the_original_dicts_and_leaves_the_input_alone():
    memories = copy.deepcopy(SEED_SAMPLE)
    before = copy.deepcopy(memories)
    kept = consolidate_memories(memories, 5)
    assert kept[0] is memories[2] and kept[1] is memories[1]
    assert memories == before


def test_newer_copy_survives_even_when_less_important():
    kept = consolidate_memories([mem("a", "x", 1, 5), mem("b", "X!", 2, 1)], 10)
    assert [m["id"] for m in kept] == ["b"]


def test_timestamp_tie_goes_to_higher_importance_then_smallest_id():
    assert [m["id"] for m in consolidate_memories([mem("a", "x", 1, 2), mem("b", "x", 1, 4)], 9)] == ["b"]
    assert [m["id"] for m in consolidate_memories([mem("b", "x", 1, 2), mem("a", "x.", 1, 2)], 9)] == ["a"]


def test_ids_compare_by_code_point():
    ids = [m["id"] for m in consolidate_memories([mem("é", "1", 0, 3), mem("a", "2", 0, 3), mem("B", "3", 0, 3)], 9)]
    assert ids == ["B", "a", "é"]


def test_dedup_runs_before_eviction_so_copies_cannot_crowd_out_a_distinct_fact():
    memories = [mem(f"c{i}", "same fact" + "!" * i, 10 + i, 5) for i in range(3)] + [mem("d", "other", 1, 4)]
    assert [m["id"] for m in consolidate_memories(memories, 2)] == ["c2", "d"]


def test_capacity_zero_keeps_nothing_but_pinned():
    memories = [mem("a", "x", 1, 1), mem("p", "y", 0, 1, pinned=True)]
    assert [m["id"] for m in consolidate_memories(memories, 0)] == ["p"]


def test_pinned_memory_wins_its_group_and_does_not_count_toward_capacity():
    memories = [mem("new", "Fact", 99, 5), mem("pin", "fact.", 1, 1, pinned=True), mem("z", "other", 5, 2)]
    plan = plan_consolidation(memories, 1)
    assert [m["id"] for m in plan.kept] == ["z", "pin"]
    assert [(m["id"], winner) for m, winner in plan.duplicates] == [("new", "pin")]
    assert plan.evicted == []


def test_empty_input_and_capacity_above_count():
    assert consolidate_memories([], 3) == []
    assert len(consolidate_memories(SEED_SAMPLE, 10**9)) == 2


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"id": "x", "text": "t", "timestamp": 1, "importance": 0}, "record 1: field 'importance'"),
        ({"id": "x", "text": "t", "timestamp": 1, "importance": True}, "record 1: field 'importance'"),
        ({"id": "x", "text": "t", "timestamp": 1.5, "importance": 3}, "record 1: field 'timestamp'"),
        ({"id": "x", "text": "t", "timestamp": 2**63, "importance": 3}, "record 1: field 'timestamp'"),
        ({"id": "x", "text": "t", "importance": 3}, "record 1: field 'timestamp': is missing"),
        ({"id": 7, "text": "t", "timestamp": 1, "importance": 3}, "record 1: field 'id'"),
        ({"id": "x", "text": None, "timestamp": 1, "importance": 3}, "record 1: field 'text'"),
        ({"id": "m1", "text": "t", "timestamp": 1, "importance": 3}, "record 1: field 'id': duplicates"),
        ("not a dict", "record 1: must be an object"),
    ],
)
def test_bad_records_raise_value_error_naming_index_and_field(bad, message):
    with pytest.raises(ValueError, match=message):
        consolidate_memories([SEED_SAMPLE[0], bad], 3)


def test_negative_capacity_raises():
    with pytest.raises(ValueError, match="capacity"):
        consolidate_memories(SEED_SAMPLE, -1)


def test_expired_memories_leave_first_so_an_expired_copy_never_wins_nor_takes_capacity():
    memories = [
        mem("old", "Door code 4512", 1, 3),
        mem("new", "door code 4512!", 9, 3, expires_at=100),  # newest copy, but its lifetime is over at 100
        mem("pin", "Pinned but over", 5, 3, pinned=True, expires_at=50),
        mem("keep", "Another fact", 2, 1, expires_at=101),
    ]
    plan = plan_consolidation(memories, 2, now=100)
    assert [m["id"] for m in plan.expired] == ["new", "pin"]
    assert [m["id"] for m in plan.kept] == ["old", "keep"] and plan.duplicates == [] and plan.evicted == []
    # Without `now` lifetimes are not looked at: the newest copy wins, as the seed rules say.
    assert [m["id"] for m in consolidate_memories(memories, 2)] == ["new", "pin", "keep"]
