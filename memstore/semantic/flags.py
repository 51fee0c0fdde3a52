"""Contradiction flags: listing them for a person, dismissing one. Resolving one is a supersede
(memstore.lifecycle), and restoring a run reopens or removes the flags it touched."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select, update

from ..db import rows_in
from ..errors import MemstoreError, NotFoundError
from ..schema import contradiction_flags as flags
from ..schema import memories, memory_archive


def _text_of(conn: Connection, ids: set[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for table in (memories, memory_archive):
        found.update((row.id, row.text) for row in rows_in(conn, select(table.c.id, table.c.text), table.c.id, sorted(ids)))
    return found


def list_flags(conn: Connection, namespace: str | None, status: str = "open") -> list[dict[str, Any]]:
    query = select(flags).where(flags.c.status == status).order_by(flags.c.id.desc())
    if namespace is not None:
        query = query.where(flags.c.namespace == namespace)
    rows = [dict(row) for row in conn.execute(query).mappings()]
    texts = _text_of(conn, {row["older_id"] for row in rows} | {row["newer_id"] for row in rows})
    for row in rows:
        row["older_text"], row["newer_text"] = texts.get(row["older_id"]), texts.get(row["newer_id"])
    return rows


def dismiss(conn: Connection, flag_id: int, now: int) -> None:
    status = conn.execute(select(flags.c.status).where(flags.c.id == flag_id)).scalar_one_or_none()
    if status is None:
        raise NotFoundError(f"no flag {flag_id}; `memstore flags` lists the open ones")
    if status != "open":
        raise MemstoreError(f"flag {flag_id} is already {status}")
    conn.execute(update(flags).where(flags.c.id == flag_id).values(status="dismissed", closed_at=now))
