"""Contradiction flags for a person: listing them, dismissing one (a run, which `restore` undoes),
and the open flags of the memories recall returns. Resolving one is a supersede
(memstore.lifecycle); what becomes of a flag when its memories change is memstore.flag_lifecycle."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, or_, select, update

from ..db import chunked, rows_in
from ..errors import MemstoreError, NotFoundError, ValidationError
from ..runs import insert_run, lock_jobs
from ..schema import FLAG_STATUSES
from ..schema import contradiction_flags as flags
from ..schema import memories, memory_archive

# What `flags(status=...)` takes: one status, or every flag.
FLAG_FILTERS = (*FLAG_STATUSES, "all")


def _sides(conn: Connection, ids: set[str]) -> dict[str, tuple[str, str]]:
    """Each id's text and state ("live" or "archived")."""
    found: dict[str, tuple[str, str]] = {}
    for table, state in ((memory_archive, "archived"), (memories, "live")):
        found.update((row.id, (row.text, state)) for row in rows_in(conn, select(table.c.id, table.c.text), table.c.id, sorted(ids)))
    return found


def require_status(status: str) -> str:
    if status not in FLAG_FILTERS:
        raise ValidationError("flags", "status", f"must be one of {', '.join(FLAG_FILTERS)}, not {status!r}")
    return status


def list_flags(conn: Connection, namespace: str | None, status: str = "open") -> list[dict[str, Any]]:
    """Flags of one namespace (None: all) with `status` ("all": every one), newest first, each with
    both sides' texts and states (`older_text`, `older_state`, ...)."""
    query = select(flags).order_by(flags.c.id.desc())
    if require_status(status) != "all":
        query = query.where(flags.c.status == status)
    if namespace is not None:
        query = query.where(flags.c.namespace == namespace)
    rows = [dict(row) for row in conn.execute(query).mappings()]
    sides = _sides(conn, {row["older_id"] for row in rows} | {row["newer_id"] for row in rows})
    for row in rows:
        for side in ("older", "newer"):
            row[f"{side}_text"], row[f"{side}_state"] = sides.get(row[f"{side}_id"], (None, None))
    return rows


def dismiss(conn: Connection, flag_id: int, now: int) -> dict[str, Any]:
    """Dismiss an open flag, as a run of kind `dismiss` (`restore` opens the flag again); the pair
    is not flagged again. Returns {"flag_id", "run_id", "namespace"}."""
    row = conn.execute(select(flags.c.status, flags.c.namespace).where(flags.c.id == flag_id)).first()
    if row is None:
        raise NotFoundError(f"no flag {flag_id}; `memstore flags` lists the open ones")
    if row.status != "open":
        raise MemstoreError(f"flag {flag_id} is already {row.status}")
    lock_jobs(conn, row.namespace)
    run_id = insert_run(conn, "dismiss", row.namespace, now, 0, params={"flag": flag_id})
    conn.execute(update(flags).where(flags.c.id == flag_id).values(status="dismissed", verdict="dismissed", closed_at=now, closed_by_run=run_id))
    return {"flag_id": flag_id, "run_id": run_id, "namespace": row.namespace}


def open_flag_marks(conn: Connection, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """For each of `ids` (recall's answer) that is a side of an open flag: {"id", "other_id"}, the
    oldest such flag. One indexed statement per chunk of ids (either side has its index)."""
    marks: dict[str, dict[str, Any]] = {}
    wanted = set(ids)
    for chunk in chunked(sorted(wanted)):
        query = select(flags.c.id, flags.c.older_id, flags.c.newer_id).where(
            flags.c.status == "open", or_(flags.c.older_id.in_(chunk), flags.c.newer_id.in_(chunk))
        )
        for flag_id, older, newer in sorted(conn.execute(query).all()):
            for side, other in ((older, newer), (newer, older)):
                if side in wanted and (side not in marks or flag_id < marks[side]["id"]):
                    marks[side] = {"id": flag_id, "other_id": other}
    return marks
