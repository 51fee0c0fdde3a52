"""Reads for the faces: one memory, a fact by its key, listings, counts, runs, namespaces. Each runs
on a connection inside the caller's read transaction; every query that returns rows has a total
order ending in id. Light on purpose: a per-turn `memstore list` or `show` loads only this."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, func, select

from .errors import memory_not_found
from .lookups import stored_rows
from .schema import RANK_ORDER, memories
from .schema import consolidation_runs as runs
from .schema import memory_archive as archive


def get_row(conn: Connection, memory_id: str, namespace: str | None) -> dict[str, Any]:
    """The memory with this id, live or archived; in another namespace it is not found."""
    found = stored_rows(conn, [memory_id]).get(memory_id)
    if found is None or (namespace is not None and found["namespace"] != namespace):
        raise memory_not_found(memory_id, namespace)
    return found


def find_fact(conn: Connection, namespace: str, fact_key: str) -> dict[str, Any] | None:
    """The live memory of `namespace` holding `fact_key` (the newest, then smallest id, if several)."""
    query = (
        select(memories)
        .where(memories.c.namespace == namespace, memories.c.fact_key == fact_key)
        .order_by(memories.c.timestamp.desc(), memories.c.id)
        .limit(1)
    )
    row = conn.execute(query).mappings().first()
    return None if row is None else dict(row)


def iter_rows(
    conn: Connection,
    namespace: str | None,
    *,
    archived: bool = False,
    limit: int | None = None,
    namespace_prefix: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Rows of one namespace (None: all), live in (namespace, rank) order or archived by archive
    time. `namespace_prefix="a.b"` takes the namespaces "a.b" and "a.b.*" instead."""
    table = archive if archived else memories
    order = (table.c.archived_at, table.c.id) if archived else (table.c.namespace, *RANK_ORDER)
    query = select(table).order_by(*order).limit(limit)
    if namespace is not None:
        query = query.where(table.c.namespace == namespace)
    if namespace_prefix is not None:
        query = query.where(
            (table.c.namespace == namespace_prefix) | table.c.namespace.startswith(namespace_prefix + ".", autoescape=True)
        )
    for row in conn.execute(query).mappings():
        yield dict(row)


def count_rows(conn: Connection, namespace: str | None, *, archived: bool = False) -> int:
    table = archive if archived else memories
    query = select(func.count()).select_from(table)
    if namespace is not None:
        query = query.where(table.c.namespace == namespace)
    return conn.execute(query).scalar_one()


def run_rows(conn: Connection, limit: int | None) -> list[dict[str, Any]]:
    """Runs, newest first."""
    return [dict(row) for row in conn.execute(select(runs).order_by(runs.c.id.desc()).limit(limit)).mappings()]


def namespace_names(conn: Connection) -> list[str]:
    return list(conn.execute(select(memories.c.namespace).distinct().order_by(memories.c.namespace)).scalars())


# Rows per round trip when an export carries vectors.
EXPORT_BATCH = 500


def with_vectors(conn: Connection, rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """`rows`, each with `embedding` {"model", "vector"} when it has a vector of the store's model
    (the numbers are the stored float32 values, exactly)."""
    import struct
    from itertools import islice

    from .db import rows_in
    from .schema import memory_vectors
    from .semantic.vectors import model_of

    model = model_of(conn)
    while batch := list(islice(rows, EXPORT_BATCH)):
        vectors: dict[str, bytes] = {}
        if model is not None:
            # The model compared here: with it in SQL, SQLite walks the model's index over every vector.
            query = select(memory_vectors.c.memory_id, memory_vectors.c.model, memory_vectors.c.vector)
            found = rows_in(conn, query, memory_vectors.c.memory_id, [row["id"] for row in batch])
            vectors = {found_row.memory_id: found_row.vector for found_row in found if found_row.model == model.name}
        for row in batch:
            blob = vectors.get(row["id"])
            if blob is not None:
                row["embedding"] = {"model": model.name, "vector": list(struct.unpack(f"<{len(blob) // 4}f", blob))}
            yield row
