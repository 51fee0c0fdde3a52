"""Vector storage: embeddings in `memory_vectors`, the store's model in `memstore_settings`.

Vectors are computed incrementally: `pending` lists the live memories with no vector for the store's
model (new ones, restored ones whose model changed, every one after a model change), and
`store_vectors` writes a batch of them. Archiving and restoring a memory keep its vector: the table
is keyed by memory id, which archived and live rows share.

The reads a search makes are here too: `all_live_vectors` (every live vector of a namespace: the
NumPy path), `live_vectors` (which of some candidates are live, with their vectors: how every path
judges its candidates), `live_ids`, `vectors_of`, and `vectors_to_copy` (every vector of a
namespace's memories, live or archived, embedded since a stamp: what a copy of them held outside the
store, in memory or in a file, reads to catch up). The counters a copy compares itself with are
`current_counters` and `newest_embedding`: every write of vectors bumps the version, every model set
bumps the epoch. Which way a search goes is `memstore.vectors.search`'s.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Integer, Text, cast, delete, func, insert, select, update

from ..db import chunked, rows_in
from ..errors import MemstoreError
from ..schema import is_unexpired, memories, memory_archive, memory_vectors, memstore_settings, unexpired
from . import index as vector_index
from .embedder import from_blobs

if TYPE_CHECKING:
    import numpy as np

MODEL_SETTING = "embedding_model"  # the model's name as recorded with each vector
SOURCE_SETTING = "embedding_source"  # what to open the model with: a fastembed name or a directory
DIM_SETTING = "embedding_dim"
# Bumped by every write of vectors, so a process holding them in memory knows, from one row, whether
# to look for new ones.
VERSION_SETTING = "vectors_version"
# Bumped each time a model is set: the vectors of a model set before are gone or being replaced
# (a sync with another model deletes them), so what a process holds in memory is read afresh.
EPOCH_SETTING = "embedding_epoch"
# A random name given with each epoch: copies of the vectors kept outside the store (vector files)
# tell by it that they belong to this store, not to an earlier store of the same path.
EPOCH_ID_SETTING = "embedding_epoch_id"


@dataclass(frozen=True)
class EmbeddingModel:
    name: str
    source: str
    dim: int


def _settings(conn: Connection) -> dict[str, str]:
    return dict(conn.execute(select(memstore_settings.c.key, memstore_settings.c.value)).all())


def model_of(conn: Connection) -> EmbeddingModel | None:
    """The store's embedding model, or None when embeddings were never enabled."""
    settings = _settings(conn)
    if MODEL_SETTING not in settings:
        return None
    return EmbeddingModel(settings[MODEL_SETTING], settings[SOURCE_SETTING], int(settings[DIM_SETTING]))


def _bump(conn: Connection, key: str) -> None:
    """Add one to the counter `key` of memstore_settings (its row lock makes writers take turns)."""
    bumped = conn.execute(
        update(memstore_settings).where(memstore_settings.c.key == key).values(value=cast(cast(memstore_settings.c.value, Integer) + 1, Text))
    ).rowcount
    if not bumped:  # a store whose model was enabled before the counter existed
        conn.execute(insert(memstore_settings).values(key=key, value="1"))


def newest_embedding(conn: Connection, model: EmbeddingModel) -> int | None:
    """The largest embedded_at among the vectors of `model`; None when it has none."""
    return conn.execute(select(func.max(memory_vectors.c.embedded_at)).where(memory_vectors.c.model == model.name)).scalar_one()


def set_model(conn: Connection, model: EmbeddingModel) -> str | None:
    """Record `model` as the store's and rebuild the vector index for it; returns why pgvector could
    not be enabled, if it could not (`memstore.vectors.search.search_notice` says where search runs)."""
    values = {MODEL_SETTING: model.name, SOURCE_SETTING: model.source, DIM_SETTING: str(model.dim)}
    conn.execute(delete(memstore_settings).where(memstore_settings.c.key.in_(list(values))))
    conn.execute(insert(memstore_settings), [{"key": key, "value": value} for key, value in values.items()])
    if VERSION_SETTING not in _settings(conn):
        conn.execute(insert(memstore_settings).values(key=VERSION_SETTING, value="0"))
    _bump(conn, EPOCH_SETTING)
    conn.execute(delete(memstore_settings).where(memstore_settings.c.key == EPOCH_ID_SETTING))
    conn.execute(insert(memstore_settings).values(key=EPOCH_ID_SETTING, value=secrets.token_hex(8)))
    refused = vector_index.enable_pgvector(conn)
    vector_index.rebuild(conn, model.name, model.dim)
    return refused


def ensure_index(conn: Connection, model: EmbeddingModel) -> bool:
    """Build the vector index when this connection can and it does not hold `model` in step (a
    store migrated or changed where the extension was missing); whether it was built."""
    if vector_index.backend(conn) is None or vector_index.state(conn) == model.name:
        return False
    return vector_index.rebuild(conn, model.name, model.dim)


def current_counters(conn: Connection) -> tuple[int, int, str | None]:
    """(vectors_version, embedding_epoch, embedding_epoch_id) as this connection sees them: what a
    copy of the vectors held elsewhere compares itself with."""
    settings = _settings(conn)
    return int(settings.get(VERSION_SETTING, 0)), int(settings.get(EPOCH_SETTING, 0)), settings.get(EPOCH_ID_SETTING)


def vectors_to_copy(conn: Connection, model: EmbeddingModel, namespace: str, since: int | None) -> tuple[int, dict[str, bytes]]:
    """(the newest embedded_at of `model` when read, {id: blob}) of every vector of `model` whose
    memory, live or archived, is in `namespace`, embedded at or after `since` (None: all): what a
    copy of the namespace's vectors (`memstore.vectors.held.MemoryCopy`, `vector_file.FileCopy`)
    reads, whole or to catch up."""
    # Read before the vectors: a batch committed in between (a writer outside this snapshot) is
    # stamped above this and read next time, never skipped.
    newest = newest_embedding(conn, model)
    fresh: dict[str, bytes] = {}
    for table in (memories, memory_archive):
        query = select(memory_vectors.c.memory_id, memory_vectors.c.model, memory_vectors.c.vector).join(
            table, table.c.id == memory_vectors.c.memory_id
        )
        if since is None:  # the whole namespace, off its own index (the model compared below)
            query = query.where(table.c.namespace == namespace)
        else:  # what was embedded since, off the model's (model, embedded_at) index
            query = query.where(memory_vectors.c.model == model.name, memory_vectors.c.embedded_at >= since, table.c.namespace == namespace)
        # A vector of the wrong length would shift every row after it; one holding a NaN is kept,
        # and never a neighbour (`ranking.top_of`).
        rows = (row for row in conn.execute(query) if row.model == model.name and vector_index.fits(row.vector, model.dim))
        fresh.update((row.memory_id, row.vector) for row in rows)
    return (-1 if newest is None else newest), fresh


def require_model(conn: Connection) -> EmbeddingModel:
    model = model_of(conn)
    if model is None:
        raise MemstoreError("embeddings are not enabled for this store: run `memstore embeddings enable` first")
    return model


def has_vectors(conn: Connection) -> bool:
    """Whether the store has embeddings enabled and at least one vector from its model (cheap: the
    settings row and one index probe)."""
    model = model_of(conn)
    if model is None:
        return False
    return conn.execute(select(memory_vectors.c.memory_id).where(memory_vectors.c.model == model.name).limit(1)).first() is not None


def pending(conn: Connection, model: EmbeddingModel, limit: int | None = None, after_seq: int = 0) -> list[tuple[str, str, int]]:
    """(id, text, seq) of live memories with no vector from `model`, in write order, past `after_seq`
    (so a sync reads on from its last batch instead of skipping the embedded rows again)."""
    embedded = select(memory_vectors.c.memory_id).where(
        memory_vectors.c.memory_id == memories.c.id, memory_vectors.c.model == model.name
    )
    query = (
        select(memories.c.id, memories.c.text, memories.c.seq)
        .where(memories.c.seq > after_seq, ~embedded.exists())
        .order_by(memories.c.seq)
        .limit(limit)
    )
    return [tuple(row) for row in conn.execute(query)]


def count_pending(conn: Connection, model: EmbeddingModel) -> int:
    embedded = select(memory_vectors.c.memory_id).where(
        memory_vectors.c.memory_id == memories.c.id, memory_vectors.c.model == model.name
    )
    return conn.execute(select(func.count()).select_from(memories).where(~embedded.exists())).scalar_one()


def store_vectors(conn: Connection, model: EmbeddingModel, ids: Sequence[str], blobs: Sequence[bytes], now: int) -> None:
    """Write (or replace) the vectors of `ids`.

    The version counter is bumped first: its row lock makes concurrent writers of vectors (two
    syncs on PostgreSQL) take turns, so each batch's embedded_at, above every one stored, only ever
    grows. A reader that remembers the newest embedded_at it saw then misses nothing.
    """
    _bump(conn, VERSION_SETTING)
    newest = newest_embedding(conn, model)
    stamp = now if newest is None else max(now, newest + 1)
    for chunk in chunked(ids):  # an IN list of every id would pass the databases' parameter limits
        conn.execute(delete(memory_vectors).where(memory_vectors.c.memory_id.in_(chunk)))
    conn.execute(
        insert(memory_vectors),
        [{"memory_id": i, "model": model.name, "dim": model.dim, "vector": b, "embedded_at": stamp} for i, b in zip(ids, blobs)],
    )
    vector_index.add(conn, ids)


def vectors_of(
    conn: Connection, model: EmbeddingModel, ids: Sequence[str], namespace: str | None = None, now: int | None = None
) -> dict[str, bytes]:
    """The blobs of `model` for `ids` (and, with `namespace`, only of live memories of it not expired
    at `now`), looked up by memory id. The model is compared here, not in SQL: with it SQLite walks the model's index
    over every vector instead of looking the few ids up. A vector that is not usable is left out."""
    if namespace is None:
        query = select(memory_vectors.c.memory_id, memory_vectors.c.model, memory_vectors.c.vector)
        return {
            row.memory_id: row.vector
            for row in rows_in(conn, query, memory_vectors.c.memory_id, list(ids))
            if row.model == model.name and vector_index.usable(row.vector, model.dim)
        }
    query = select(
        memory_vectors.c.memory_id, memory_vectors.c.model, memory_vectors.c.vector, memories.c.namespace, memories.c.expires_at
    ).join(memories, memories.c.id == memory_vectors.c.memory_id)
    assert now is not None, "a namespace's live vectors are read at a moment"
    return {
        row.memory_id: row.vector
        for row in rows_in(conn, query, memory_vectors.c.memory_id, list(ids))
        if row.model == model.name and row.namespace == namespace and is_unexpired(row._mapping, now)
        and vector_index.usable(row.vector, model.dim)
    }


def live_vectors(
    conn: Connection, model: EmbeddingModel, ids: Sequence[str], namespace: str, *, now: int
) -> tuple[list[str], np.ndarray]:
    """The ids of `ids` that are live memories of `namespace`, not expired at `now`, with a
    vector of `model`, by id, and their vectors."""
    found = sorted(vectors_of(conn, model, ids, namespace, now).items())
    return [memory_id for memory_id, _ in found], from_blobs((blob for _, blob in found), model.dim)


def live_ids(conn: Connection, ids: Sequence[str], namespace: str, *, now: int) -> set[str]:
    """Which of `ids` are live memories of `namespace`, not expired at `now` (compared
    here: with the namespace in SQL, SQLite may walk the namespace's index instead of
    looking the few ids up)."""
    rows = rows_in(conn, select(memories.c.id, memories.c.namespace, memories.c.expires_at), memories.c.id, list(ids))
    return {row.id for row in rows if row.namespace == namespace and is_unexpired(row._mapping, now)}


def all_live_vectors(conn: Connection, model: EmbeddingModel, namespace: str, *, now: int) -> tuple[list[str], np.ndarray]:
    """Every live memory of `namespace`, not expired at `now`, with a vector
    of `model`, by id, and the vectors: what the NumPy path reads (that namespace's only)."""
    rows = conn.execute(
        select(memories.c.id, memory_vectors.c.model, memory_vectors.c.vector)
        .join(memory_vectors, memory_vectors.c.memory_id == memories.c.id)
        .where(memories.c.namespace == namespace, unexpired(memories, now))  # the model compared below: see vectors_of
        .order_by(memories.c.id)
    )
    # Of the wrong length, left out; holding a NaN, never a neighbour (`ranking.top_of`): testing every value
    # here (`vector_index.usable`) would cost a search of 100,000 about half a second more.
    rows = [row for row in rows if row.model == model.name and vector_index.fits(row.vector, model.dim)]
    return [row.id for row in rows], from_blobs((row.vector for row in rows), model.dim)


