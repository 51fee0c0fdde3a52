"""A contradiction flag follows its memories: the one place that says what becomes of a flag when a
side leaves the live set, is updated, or comes back.

- A run that archives a side of an open flag closes it: status `resolved`, `verdict` the side's
  archive reason (forgotten, superseded, duplicate, semantic_duplicate, expired, evicted, stale),
  `closed_at` and `closed_by_run` that run (`close_flags`, called by every run that archives).
- An update moves the flags of the version it replaces onto the new version, instead of leaving
  them on the archived one for a second flag to be raised on the new one (`move_flags`); restoring
  the update moves them back (`unmove_flags`).
- Restoring the run that settled a flag opens it again, unless a side is still out of the live
  set, archived by another run: then that run settles it (`reopen_flags`).

Everything here runs on a connection the caller holds inside one write transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, bindparam, select, update

from .db import rows_in
from .lookups import stored_rows
from .schema import contradiction_flags as flags
from .schema import memory_archive as archive

# The flags an update moves: the open ones, and the dismissed ones when the text stays the same (a
# dismissal judged two texts; a new text is a new claim, which the contradict phase may flag).
MOVED_BY_ANY_UPDATE = ("open",)
MOVED_UNLESS_TEXT_CHANGES = ("open", "dismissed")


def close_flags(conn: Connection, run_id: int, now: int) -> list[int]:
    """Close every open flag a side of which this run archived, with that side's archive reason as
    the verdict (the older side's when the run archived both); returns their ids.

    Driven by the open flags' sides, looked up in the archive by id: the cost follows the open
    flags, not the size of the run."""
    left: dict[int, str] = {}
    for side in (flags.c.older_id, flags.c.newer_id):
        found = conn.execute(
            select(flags.c.id, archive.c.reason)
            .join(archive, archive.c.id == side)
            .where(flags.c.status == "open", archive.c.run_id == run_id)
            .order_by(flags.c.id)
        ).all()
        for flag_id, reason in found:
            left.setdefault(flag_id, reason)
    if left:
        conn.execute(
            update(flags).where(flags.c.id == bindparam("b_id"))
            .values(status="resolved", verdict=bindparam("b_verdict"), closed_at=now, closed_by_run=run_id),
            [{"b_id": flag_id, "b_verdict": reason} for flag_id, reason in sorted(left.items())],
        )  # fmt: skip
    return sorted(left)


def _pair(rows: dict[str, dict[str, Any]], a: str, b: str) -> tuple[str, str]:
    """(older, newer) by (timestamp, id), as the contradict phase orders a pair."""
    known = [row for row in (rows.get(a), rows.get(b)) if row is not None]
    if len(known) < 2:
        return (a, b) if a < b else (b, a)
    older, newer = sorted(known, key=lambda row: (row["timestamp"], row["id"]))
    return older["id"], newer["id"]


def _repoint(conn: Connection, rows: Iterable[Any], old_id: str, new_id: str) -> list[int]:
    """Point each flag of `rows` that names `old_id` at `new_id` instead, its pair ordered again."""
    rows = list(rows)
    ids = {new_id} | {row.older_id for row in rows} | {row.newer_id for row in rows}
    stored = stored_rows(conn, sorted(ids))
    moved = []
    for row in rows:
        other = row.newer_id if row.older_id == old_id else row.older_id
        older, newer = _pair(stored, new_id, other)
        conn.execute(update(flags).where(flags.c.id == row.id).values(older_id=older, newer_id=newer))
        moved.append(row.id)
    return moved


def move_flags(conn: Connection, old_id: str, new_id: str, *, text_changed: bool) -> list[int]:
    """Move the flags of `old_id` (being replaced by its update) onto `new_id`; returns their ids,
    which the update run records so that restoring it moves them back."""
    statuses = MOVED_BY_ANY_UPDATE if text_changed else MOVED_UNLESS_TEXT_CHANGES
    rows = conn.execute(
        select(flags.c.id, flags.c.older_id, flags.c.newer_id)
        .where((flags.c.older_id == old_id) | (flags.c.newer_id == old_id), flags.c.status.in_(statuses))
        .order_by(flags.c.id)
    ).all()
    return _repoint(conn, rows, old_id, new_id)


def unmove_flags(conn: Connection, flag_ids: Iterable[int], written: str, restored: str) -> None:
    """Move the flags an update moved onto the version it wrote (`written`) back to the version the
    restore brings back (`restored`)."""
    rows = conn.execute(
        select(flags.c.id, flags.c.older_id, flags.c.newer_id)
        .where(flags.c.id.in_(sorted(flag_ids)), (flags.c.older_id == written) | (flags.c.newer_id == written))
        .order_by(flags.c.id)
    ).all()
    _repoint(conn, rows, written, restored)


def reopen_flags(conn: Connection, run_id: int, memory_id: str | None = None) -> None:
    """After the restore of `run_id`: the flags it settled open again, but a flag a side of which is
    still archived (by another run) is settled by that run instead. With `memory_id` (one memory
    of the run restored alone), only the flags that memory is a side of."""
    query = select(flags.c.id, flags.c.older_id, flags.c.newer_id).where(flags.c.closed_by_run == run_id)
    if memory_id is not None:
        query = query.where((flags.c.older_id == memory_id) | (flags.c.newer_id == memory_id))
    settled = conn.execute(query.order_by(flags.c.id)).all()
    if not settled:
        return
    sides = sorted({row.older_id for row in settled} | {row.newer_id for row in settled})
    query = select(archive.c.id, archive.c.reason, archive.c.archived_at, archive.c.run_id)
    out = {row.id: row for row in rows_in(conn, query, archive.c.id, sides)}
    for row in settled:
        still_out = out.get(row.older_id) or out.get(row.newer_id)
        if still_out is None:
            values = {"status": "open", "verdict": None, "closed_at": None, "closed_by_run": None}
        else:
            values = {"status": "resolved", "verdict": still_out.reason, "closed_at": still_out.archived_at, "closed_by_run": still_out.run_id}
        conn.execute(update(flags).where(flags.c.id == row.id).values(**values))

