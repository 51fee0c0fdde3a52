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
