"""Looking memories up by id, whichever table holds them: ids are unique across the live set and
the archive, so an id names one row of one of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, select

from .db import rows_in
from .schema import memories
from .schema import memory_archive as archive


def stored_rows(conn: Connection, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Live or archived rows holding any of `ids`; an archived row carries the archive's fields
    (`archived_at`, `reason`, ...), a live one does not."""
    found: dict[str, dict[str, Any]] = {}
    for table in (memories, archive):
        for row in rows_in(conn, select(table), table.c.id, ids):
            found[row.id] = dict(row._mapping)
    return found


def texts_of(conn: Connection, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """For each of `ids` stored live or archived: {"id", "namespace", "text", "timestamp", "state"}
    ("live" or "archived"): what a person reads beside an id."""
    found: dict[str, dict[str, Any]] = {}
    for table, state in ((archive, "archived"), (memories, "live")):
        query = select(table.c.id, table.c.namespace, table.c.text, table.c.timestamp)
        for row in rows_in(conn, query, table.c.id, sorted(set(ids))):
            found[row.id] = {"id": row.id, "namespace": row.namespace, "text": row.text, "timestamp": row.timestamp, "state": state}
    return found


def with_texts(conn: Connection, ids: Sequence[str]) -> list[dict[str, Any]]:
    """`ids` in their order, each as `texts_of` gives it ({"id", "text": None, ...} if no longer stored)."""
    found = texts_of(conn, ids)
    return [found.get(memory_id) or {"id": memory_id, "namespace": None, "text": None, "timestamp": None, "state": None} for memory_id in ids]
