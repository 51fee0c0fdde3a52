"""The write path: rows prepared by `memstore.records` go into `memories`, in the caller's transaction.

An agent writes every turn and retries failed calls, so a record is checked against what is stored
first: a record already stored under its id is a retry (unchanged), a different record under a
stored id (live or archived) is a conflict. The common case, ids never seen, costs one probe
statement per chunk of ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, select

from .db import chunked
from .errors import IdConflictError, ValidationError
from .lookups import stored_rows
from .records import PreparedRow, is_retry_of, require_embedding_fits
from .schema import memories, unexpired
from .schema import memory_archive as archive


@dataclass
class AddResult:
    added: int
    unchanged: int  # identical records already stored (retries)
    ids: list[str]  # the id of every record written or found unchanged, in input order
    rejected: list[str] = field(default_factory=list)  # with skip_invalid: why each skipped record was
    added_ids: list[str] = field(default_factory=list)  # the ids this write added, in input order

    @property
    def skipped(self) -> int:
        return len(self.rejected)


# How many of a chunk of ids are taken, live or archived; when none is, no whole row needs reading.
_ids = bindparam("ids", expanding=True)
_WRITE_PROBE = select(
    select(func.count()).select_from(memories).where(memories.c.id.in_(_ids)).scalar_subquery(),
    select(func.count()).select_from(archive).where(archive.c.id.in_(_ids)).scalar_subquery(),
)


def _probe_ids(conn: Connection, ids: list[str]) -> dict[str, dict[str, Any]]:
    """The stored rows (live or archived) holding any of `ids`; whole rows are read only for
    chunks where an id is taken (a retry or a conflict)."""
    found: dict[str, dict[str, Any]] = {}
    for chunk in chunked(ids):
        live_taken, archived_taken = conn.execute(_WRITE_PROBE, {"ids": chunk}).one()
        if live_taken or archived_taken:
            found.update(stored_rows(conn, chunk))
    return found


def add_in_transaction(
    conn: Connection, prepared: Sequence[PreparedRow], now: int, *, skip_invalid: bool
) -> tuple[AddResult, dict[str, dict[str, Any]]]:
    """Write the new rows of `prepared`, as written at `now` (read once the transaction holds the
    store); return what happened and the stored row of every id written or found unchanged.

    A repeated id within the batch, or a different record under a stored id, raises; with
    `skip_invalid` that record is skipped instead and named in `AddResult.rejected`.
    """
    rejected: list[str] = []
    unique: list[PreparedRow] = []
    first_location: dict[str, str] = {}
    for item in prepared:
        row_id = item.row["id"]
        if row_id in first_location:
            error = ValidationError(item.location, "id", f"repeats the id {row_id!r} of {first_location[row_id]}")
            if not skip_invalid:
                raise error
            rejected.append(str(error))
            continue
        first_location[row_id] = item.location
        unique.append(item)
    stored = _probe_ids(conn, [item.row["id"] for item in unique])
    new_rows, kept = [], []
    for item in unique:
        existing = stored.get(item.row["id"])
        if existing is None:
            row = item.stamped(now)
            new_rows.append(row)
            stored[row["id"]] = row
        elif not is_retry_of(item, existing):
            archived = " (archived)" if existing.get("archived_at") is not None else ""
            error = IdConflictError(f"{item.location}: field 'id': {item.row['id']!r} already holds a different memory{archived}")
            if not skip_invalid:
                raise error
            rejected.append(str(error))
            continue
        kept.append(item.row["id"])
    # seq is the database's to assign, in this order. One row (add()): RETURNING hands its seq
    # back, so the row add() returns is the stored row, whole.
    if len(new_rows) == 1:
        new_rows[0]["seq"] = conn.execute(insert(memories).returning(memories.c.seq), new_rows[0]).scalar_one()
    elif new_rows:
        conn.execute(insert(memories), new_rows)
    written = set(kept)
    carried = [item for item in unique if item.embedding is not None and item.row["id"] in written]
    if carried:
        _store_embeddings(conn, carried, now)
    added_ids = [row["id"] for row in new_rows]
    result = AddResult(added=len(new_rows), unchanged=len(kept) - len(new_rows), ids=kept, rejected=rejected, added_ids=added_ids)
    return result, stored


def same_key_ids(conn: Connection, row: dict[str, Any], now: int) -> list[str]:
    """The other live memories of `row`'s namespace with its normalised key, not expired at `now`, by id."""
    return list(
        conn.execute(
            select(memories.c.id)
            .where(memories.c.namespace == row["namespace"], memories.c.norm_key == row["norm_key"], memories.c.id != row["id"])
            .where(unexpired(memories, now))
            .order_by(memories.c.id)
        ).scalars()
    )


def _store_embeddings(conn: Connection, items: Sequence[PreparedRow], now: int) -> None:
    """The vectors records came with, as vectors of the store's model, in the caller's transaction:
    each must be of that model and width, or nothing is written."""
    from .vectors.embedder import to_blob
    from .vectors.storage import model_of, store_vectors

    model = model_of(conn)
    for item in items:
        require_embedding_fits(item.embedding, None if model is None else (model.name, model.dim), item.location)
    store_vectors(conn, model, [item.row["id"] for item in items], [to_blob(item.embedding.vector) for item in items], now)
