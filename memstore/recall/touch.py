"""Recall's answer as a caller gets it: the recall counted on the rows returned (recall_count + 1,
last_recalled_at), unless the caller reads without touching, and each row's open contradiction flag."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, update

from ..db import chunked
from ..schema import memories
from ..semantic.flags import open_flag_marks


def touch(conn: Connection, ids: list[str], now: int) -> None:
    """Count a recall of `ids`: recall_count + 1 and last_recalled_at = now."""
    for chunk in chunked(ids):  # k is the caller's: one IN list of every id could pass the parameter limit
        conn.execute(
            update(memories)
            .where(memories.c.id.in_(chunk))
            .values(recall_count=memories.c.recall_count + 1, last_recalled_at=now)
        )


def answered(conn: Connection, rows: list[dict[str, Any]], touched_at: int | None) -> list[dict[str, Any]]:
    """`rows` as recall returns them: counted as recalled at `touched_at` (None: not touched), and
    each with `open_flag`, the open contradiction flag it is a side of ({"id", "other_id"}) or None."""
    if touched_at is not None:
        touch(conn, [row["id"] for row in rows], touched_at)
        rows = [dict(row, recall_count=row["recall_count"] + 1, last_recalled_at=touched_at) for row in rows]
    marks = open_flag_marks(conn, [row["id"] for row in rows])
    return [dict(row, open_flag=marks.get(row["id"])) for row in rows]
