"""Recall's answer as a caller gets it, and the recall counted on it.

A recall reads everything it ranks in one read snapshot and answers from it; counting the recall
(recall_count + 1, last_recalled_at) is a write, so it is not done there, where it would make the
answer wait for every other writer. `PendingTouches` holds the counts of the recalls answered so
far; the store writes them in one short write transaction when it next uses its engine or closes
(the CLI prints its answer first). An answer shows its rows as counted already.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any

from sqlalchemy import Connection, case, update

from ..db import chunked
from ..schema import memories
from ..semantic.flags import open_flag_marks


class PendingTouches:
    """The recalls counted but not written yet: per id, how many and the latest moment. Safe to
    share between threads (a store may serve several)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._latest: dict[str, int] = {}

    def __bool__(self) -> bool:
        return bool(self._counts)

    def add(self, ids: list[str], now: int) -> None:
        with self._lock:
            for memory_id in ids:
                self._counts[memory_id] = self._counts.get(memory_id, 0) + 1
                self._latest[memory_id] = max(now, self._latest.get(memory_id, now))

    def counted(self, rows: list[dict[str, Any]], touched_at: int) -> list[dict[str, Any]]:
        """`rows` as they read once this recall and those pending are written."""
        with self._lock:
            return [dict(row, recall_count=row["recall_count"] + self._counts.get(row["id"], 0) + 1, last_recalled_at=touched_at) for row in rows]

    def take(self) -> dict[tuple[int, int], list[str]]:
        """Everything pending, grouped by (count, moment), and forgotten here: the caller writes it
        (and gives it back with `give_back` if the write fails)."""
        with self._lock:
            groups: dict[tuple[int, int], list[str]] = defaultdict(list)
            for memory_id in sorted(self._counts):
                groups[(self._counts[memory_id], self._latest[memory_id])].append(memory_id)
            self._counts.clear()
            self._latest.clear()
            return dict(groups)

    def give_back(self, groups: dict[tuple[int, int], list[str]]) -> None:
        with self._lock:
            for (count, moment), ids in groups.items():
                for memory_id in ids:
                    self._counts[memory_id] = self._counts.get(memory_id, 0) + count
                    self._latest[memory_id] = max(moment, self._latest.get(memory_id, moment))


def write_touches(conn: Connection, groups: dict[tuple[int, int], list[str]]) -> None:
    """Count the recalls of `take()`: recall_count + count, last_recalled_at = the later of the two
    moments (a memory archived meanwhile is not counted: it is no longer recalled)."""
    for (count, moment), ids in sorted(groups.items()):
        for chunk in chunked(ids):  # k is the caller's: one IN list of every id could pass the parameter limit
            conn.execute(
                update(memories)
                .where(memories.c.id.in_(chunk))
                .values(recall_count=memories.c.recall_count + count,
                        last_recalled_at=case((memories.c.last_recalled_at > moment, memories.c.last_recalled_at), else_=moment))
            )  # fmt: skip


def answered(conn: Connection, rows: list[dict[str, Any]], touched_at: int | None, pending: PendingTouches) -> list[dict[str, Any]]:
    """`rows` as recall returns them, each with `open_flag`, the open contradiction flag it is a
    side of ({"id", "other_id"}) or None; counted as recalled at `touched_at` and added to `pending`
    (None: not touched)."""
    if touched_at is not None:
        rows = pending.counted(rows, touched_at)
        pending.add([row["id"] for row in rows], touched_at)
    marks = open_flag_marks(conn, [row["id"] for row in rows])
    return [dict(row, open_flag=marks.get(row["id"])) for row in rows]
