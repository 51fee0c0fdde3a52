"""The pure-Python reference of the consolidation rules: the oracle every SQL path is tested against.

It reads plain dicts and imports nothing from the database layer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import ValidationError
from .normalize import normalize_key
from .validate import require_capacity, require_rule_fields

Memory = Mapping[str, Any]


def stage1_order(memory: Memory) -> tuple:
    """Order inside a collision group: pinned first, then newest, more important, smallest id."""
    return (not memory.get("pinned", False), -memory["timestamp"], -memory["importance"], memory["id"])


def rank_order(memory: Memory) -> tuple:
    """Stage 2 ranking: importance DESC, timestamp DESC, id ASC."""
    return (-memory["importance"], -memory["timestamp"], memory["id"])


@dataclass
class ConsolidationPlan:
    """What one run does to one namespace: who stays, who is archived and why."""

    kept: list[Memory] = field(default_factory=list)  # in rank order, pinned included
    duplicates: list[tuple[Memory, str]] = field(default_factory=list)  # (loser, superseded_by id)
    evicted: list[Memory] = field(default_factory=list)
    expired: list[Memory] = field(default_factory=list)  # their lifetime ended: out before any rule


def is_expired(memory: Memory, now: int | None) -> bool:
    """Has the memory's lifetime (`expires_at`, Unix ms; none: forever) ended by `now`?"""
    return now is not None and memory.get("expires_at") is not None and memory["expires_at"] <= now


def plan_consolidation(memories: Sequence[Memory], capacity: int, now: int | None = None) -> ConsolidationPlan:
    """Apply Stage 1 and Stage 2 to one namespace's memories without changing them.

    With `now`, the memories whose lifetime has ended by then leave first, pinned or not, and the
    rules apply to the rest: an expired copy never wins its key group, nor takes capacity."""
    require_capacity(capacity)
    seen_ids: dict[str, int] = {}
    for index, memory in enumerate(memories):
        location = f"record {index}"
        require_rule_fields(memory, location)
        if memory["id"] in seen_ids:
            raise ValidationError(location, "id", f"duplicates the id of record {seen_ids[memory['id']]}")
        seen_ids[memory["id"]] = index

    plan = ConsolidationPlan(expired=[m for m in memories if is_expired(m, now)])
    groups: dict[str, list[Memory]] = {}
    for memory in memories:
        if not is_expired(memory, now):
            groups.setdefault(normalize_key(memory["text"]), []).append(memory)

    survivors: list[Memory] = []
    for group in groups.values():
        group = sorted(group, key=stage1_order)
        winner = group[0]
        for rank, memory in enumerate(group):
            # Pinned memories are never archived; every other non-first member is a duplicate.
            if memory.get("pinned", False) or rank == 0:
                survivors.append(memory)
            else:
                plan.duplicates.append((memory, winner["id"]))

    pinned = [m for m in survivors if m.get("pinned", False)]
    unpinned = sorted((m for m in survivors if not m.get("pinned", False)), key=rank_order)
    # Pinned memories do not count toward capacity.
    plan.kept = sorted(pinned + unpinned[:capacity], key=rank_order)
    plan.evicted = unpinned[capacity:]
    return plan


def consolidate_memories(memories: Sequence[Memory], capacity: int, now: int | None = None) -> list[Memory]:
    """Return the memories that survive consolidation, in Stage 2 order.

    The result holds the original dict objects, at most ``capacity`` of them
    (plus any pinned ones); the input list is not modified. With `now`, memories expired by
    then are not among them.

    >>> mem = [
    ...     {"id": "m1", "text": "User prefers dark mode.", "timestamp": 10, "importance": 3},
    ...     {"id": "m2", "text": "  user prefers   DARK mode ", "timestamp": 20, "importance": 1},
    ...     {"id": "m3", "text": "Deploys on Fridays", "timestamp": 5, "importance": 5},
    ... ]
    >>> [m["id"] for m in consolidate_memories(mem, 5)]
    ['m3', 'm2']
    """
    return plan_consolidation(memories, capacity, now).kept
