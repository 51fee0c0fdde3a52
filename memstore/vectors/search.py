"""Vector search: the k live memories of one namespace nearest to a query vector, exactly, ties by id.

A search goes one of four ways, and `search_path` alone chooses it:

1. **memory** (`held.MemoryCopy`): a process that searched the namespace before (a long-lived store
   object, an MCP server) holds its vectors in memory, refreshed with what was embedded since;
2. **the index in the database** ("sqlite-vec" on SQLite, "pgvector" on PostgreSQL:
   `memstore.vectors.index`), when this connection can keep it and it holds the store's model in
   step; it hands over the namespace's nearest candidates;
3. **the vector file** ("vector-file": `memstore.vectors.vector_file`), for a SQLite store whose
   connection cannot load sqlite-vec: the namespace's vectors mapped from a file beside the store;
4. **the rows** ("numpy"): the namespace's live vectors read from `memory_vectors`, ranked with NumPy.
   The index and the file fall back to it when they cannot answer (sqlite-vec's depth limit, a file
   that cannot be read or written).

Each way ends the same (`memstore.vectors.ranking`): the candidates' cosines computed from their
vectors in float64, best first, ties by id, judged live at `now` in SQL, so all four give the same
answers (HNSW on PostgreSQL is approximate: it may miss a neighbour an exact scan finds). A vector
that is not `index.usable` (a hand edit cut it short or wrote a NaN) is skipped by each, never an
error for its namespace.

The walk of `memstore recall`'s query, in this wing: `embeddings.Embeddings.query_vector` embeds it
(`query_model.QueryModel` for a model directory, `embedder.Embedder` for a fastembed name); recall's
live source (`memstore.recall.live`) calls `search` with the `held.HeldCopies` of its store object,
and `cosines` for the candidates only the words found; the ranking of both is recall's.
`search_path(conn, model)` without a copy is what `memstore embeddings status` reports as "search",
and `search_notice` says why a store searches without its index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy import Connection

from ..db import sqlite_vec_path
from . import index as vector_index
from .embedder import from_blobs, to_blob
from .held import HeldCopies, MemoryCopy
from .ranking import CANDIDATES_PER_RESULT, FLOAT32_SLACK, exact_ranking, top
from .storage import EmbeddingModel, all_live_vectors, live_vectors, vectors_of
from .vector_file import search_file, vector_file_store

if TYPE_CHECKING:
    import numpy as np

MEMORY, VECTOR_FILE, ROWS = "memory", "vector-file", "numpy"


def search_path(conn: Connection, model: EmbeddingModel, copy: MemoryCopy | None = None) -> str:
    """The way a search of this connection goes (see the module's docstring): "memory" when given
    the `copy` of the namespace held in memory, else "sqlite-vec" or "pgvector", "vector-file" or
    "numpy"."""
    if copy is not None:
        return MEMORY
    if vector_index.ready(conn, model.name):
        return vector_index.backend(conn) or ROWS
    return VECTOR_FILE if vector_file_store(conn, model) is not None else ROWS


def search(
    conn: Connection, model: EmbeddingModel, query_vector: np.ndarray, namespace: str, k: int, *, now: int,
    held: HeldCopies | None = None, path: str | None = None,
) -> list[tuple[str, float]]:
    """The k live memories of `namespace` not expired at `now` most similar to `query_vector`: (id,
    cosine), best first, ties by id, the way `search_path` chooses (`held`: the copies this process
    keeps between searches). `path` forces a way (the tests and the bench compare them)."""
    if k <= 0:
        return []
    copy = held.for_search(model, namespace) if held is not None else None
    path = path or search_path(conn, model, copy)
    if path == MEMORY:
        return (copy or MemoryCopy(model, namespace)).search(conn, query_vector, k, now=now)
    found = None
    if path in ("sqlite-vec", "pgvector"):
        found = _search_index(conn, model, query_vector, namespace, k, now)
    elif path == VECTOR_FILE:
        found = search_file(conn, model, query_vector, namespace, k, now=now)
    if found is not None:
        return found
    ids, vectors = all_live_vectors(conn, model, namespace, now=now)
    return top(ids, vectors, query_vector, k)


def _search_index(
    conn: Connection, model: EmbeddingModel, query_vector: np.ndarray, namespace: str, k: int, now: int
) -> list[tuple[str, float]] | None:
    """The index's answer, or None when it cannot prove one (ties past what it may return)."""
    blob = to_blob(query_vector)
    limit = vector_index.depth_limit(conn)
    depth = max(CANDIDATES_PER_RESULT * k, 10)
    while True:
        if limit is not None:
            depth = min(depth, limit)
        found = vector_index.nearest(conn, blob, namespace, depth)
        ids, vectors = live_vectors(conn, model, [memory_id for memory_id, _ in found], namespace, now=now)
        ranked = exact_ranking(ids, vectors, query_vector)
        if len(found) < depth:  # the index holds no more of this namespace
            return ranked[:k]
        # Every memory the index did not return is at most as similar as the furthest one it did
        # (pgvector's relaxed order may not list that one last): those strictly above it are sure
        # (float32 distances against float64 cosines: FLOAT32_SLACK).
        bound = 1.0 - max(distance for _, distance in found)
        sure = [hit for hit in ranked if hit[1] > bound + FLOAT32_SLACK]
        if len(sure) >= k:
            return sure[:k]
        if depth == limit:  # as deep as the index goes, and still not sure
            return None
        depth *= 4


def cosines(
    conn: Connection, model: EmbeddingModel, ids: Sequence[str], query_vector: np.ndarray, copy: MemoryCopy | None = None
) -> dict[str, float]:
    """The cosine of each of `ids` that has a vector from `model` to `query_vector` (unit vectors):
    from the `copy` of their namespace held in memory when given (its last search refreshed it),
    else from the store."""
    if copy is not None:
        return copy.cosines(ids, query_vector)
    found = sorted(vectors_of(conn, model, ids).items())
    return dict(exact_ranking([memory_id for memory_id, _ in found], from_blobs((blob for _, blob in found), model.dim), query_vector))


def search_notice(conn: Connection, model: EmbeddingModel) -> str | None:
    """One line when vector search cannot run in the database here, saying why and what to do."""
    if vector_index.ready(conn, model.name):
        return None
    if vector_index.state(conn) == vector_index.STALE and vector_index.backend(conn) is not None:
        return "the vector index is out of step; `memstore embeddings sync` or `memstore check --fix` rebuilds it"
    if conn.dialect.name == "postgresql":
        return "vector search runs in NumPy, one namespace at a time: pgvector is not enabled (a database owner can run: CREATE EXTENSION vector;)"
    missing = "sqlite-vec is not installed (pip install 'memstore-agents[semantic]')"
    if vector_file_store(conn, model) is not None:
        if sqlite_vec_path() is not None:  # installed, so it is this Python's sqlite3 that cannot
            missing = "this Python's sqlite3 cannot load extensions, and memstore opens the store with no other SQLite (docs/reliability.md)"
        return f"vector search runs in NumPy over the vector files beside the store (STORE-vectors/): {missing}"
    return f"vector search runs in NumPy, one namespace at a time: {missing}"
