"""Vector storage and search: embeddings in `memory_vectors`, the store's model in `memstore_settings`.

Vectors are computed incrementally: `pending` lists the live memories with no vector for the store's
model (new ones, restored ones whose model changed, every one after a model change), and `store`
writes a batch of them. Archiving and restoring a memory keep its vector: the table is keyed by
memory id, which archived and live rows share.

Search answers the k live memories of one namespace nearest to a query, exactly, ties by id:

* in the database when it can (`memstore.vector_index`: sqlite-vec on SQLite, pgvector on
  PostgreSQL), which hands over the nearest candidates of the namespace;
* else with NumPy over that namespace's vectors alone (`search`);
* and in a process that searches a namespace again, from that namespace's vectors held in memory
  (`NamespaceVectors`), refreshed with what was embedded since.

Each way ends the same: the candidates' cosines computed from the stored blobs in float64, best
first, ties by id, so the three give the same answers (HNSW on PostgreSQL is approximate: it may
miss a neighbour an exact scan finds). A vector that is not `vector_index.usable` (a hand edit cut
it short or wrote a NaN) is skipped by each, never an error for its namespace.
"""

from __future__ import annotations

import math
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Integer, Text, cast, delete, func, insert, select, update

from .. import vector_index
from ..db import chunked, rows_in, sqlite_vec_path
from ..errors import MemstoreError
from ..schema import is_unexpired, memories, memory_archive, memory_vectors, memstore_settings, unexpired
from .embed import from_blobs, to_blob

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
# Candidates checked for liveness in a first round, as a multiple of k (a round with too few live
# ones among them looks four times deeper).
CANDIDATES_PER_RESULT = 2
# How far a cosine computed in float32 (sqlite-vec's and pgvector's distances, the NumPy coarse
# pass) may stray from the exact one over 384 dimensions: measured up to about 1.3e-6; a margin
# well above that, so a candidate is never judged sure, or left out, on float noise.
FLOAT32_SLACK = 1e-5


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
    """Record `model` as the store's and rebuild the vector index for it; returns a notice when
    search cannot run in the database here (see `search_notice`)."""
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
    return refused or search_notice(conn, model)


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


def ensure_index(conn: Connection, model: EmbeddingModel) -> bool:
    """Build the vector index when this connection can and it does not hold `model` in step (a
    store migrated or changed where the extension was missing); whether it was built."""
    if vector_index.backend(conn) is None or vector_index.state(conn) == model.name:
        return False
    return vector_index.rebuild(conn, model.name, model.dim)


def search_backend(conn: Connection, model: EmbeddingModel) -> str:
    """Where a search of this connection runs: "sqlite-vec", "pgvector", "vector-file" (NumPy over
    the vector files beside a SQLite store: `memstore.semantic.vector_file`) or "numpy"."""
    if vector_index.ready(conn, model.name):
        return vector_index.backend(conn) or "numpy"
    return "vector-file" if vector_file_store(conn, model) is not None else "numpy"


def vector_file_store(conn: Connection, model: EmbeddingModel) -> str | None:
    """The store's file when searches of this connection read vector files beside it: a SQLite file
    whose connection cannot keep the vector index in it (no sqlite-vec here). Else None."""
    database = conn.engine.url.database if conn.dialect.name == "sqlite" else None
    if database in (None, "", ":memory:") or vector_index.ready(conn, model.name):
        return None
    return database


def current_counters(conn: Connection) -> tuple[int, int, str | None]:
    """(vectors_version, embedding_epoch, embedding_epoch_id) as this connection sees them: what a
    copy of the vectors held elsewhere compares itself with."""
    settings = _settings(conn)
    return int(settings.get(VERSION_SETTING, 0)), int(settings.get(EPOCH_SETTING, 0)), settings.get(EPOCH_ID_SETTING)


def namespace_vectors_since(conn: Connection, model: EmbeddingModel, namespace: str, since: int | None) -> tuple[int, dict[str, bytes]]:
    """(the newest embedded_at of `model` when read, {id: blob}) of every vector of `model` whose
    memory, live or archived, is in `namespace`, embedded at or after `since` (None: all)."""
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
        # and never a neighbour (`_best`).
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


def _ranked(ids: Sequence[str], vectors: np.ndarray, query_vector: np.ndarray) -> list[tuple[str, float]]:
    """(id, cosine) best first, ties by id; cosines in float64, the same whichever way the
    candidates were found."""
    import numpy as np

    if not len(ids):
        return []
    similarity = np.asarray(vectors, dtype=np.float64) @ np.asarray(query_vector, dtype=np.float64)
    hits = [(memory_id, float(value)) for memory_id, value in zip(ids, similarity)]
    # A vector holding a NaN or an infinity has no cosine: never a hit (a NaN would also break the sort).
    return sorted((hit for hit in hits if math.isfinite(hit[1])), key=lambda hit: (-hit[1], hit[0]))


def _vectors_of(
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
    found = sorted(_vectors_of(conn, model, ids, namespace, now).items())
    return [memory_id for memory_id, _ in found], from_blobs((blob for _, blob in found), model.dim)


def live_ids(conn: Connection, ids: Sequence[str], namespace: str, *, now: int) -> set[str]:
    """Which of `ids` are live memories of `namespace`, not expired at `now` (compared
    here: with the namespace in SQL, SQLite may walk the namespace's index instead of
    looking the few ids up)."""
    rows = rows_in(conn, select(memories.c.id, memories.c.namespace, memories.c.expires_at), memories.c.id, list(ids))
    return {row.id for row in rows if row.namespace == namespace and is_unexpired(row._mapping, now)}


def search(
    conn: Connection, model: EmbeddingModel, query_vector: np.ndarray, namespace: str, k: int, *, now: int
) -> list[tuple[str, float]]:
    """The k live memories of `namespace` not expired at `now` most similar
    to `query_vector`: (id, cosine), best first, ties by id. In the database's vector index when it
    is ready, else over the namespace's vectors with NumPy."""
    if k <= 0:
        return []
    if vector_index.ready(conn, model.name):
        found = _search_index(conn, model, query_vector, namespace, k, now)
        if found is not None:
            return found
    ids, vectors = namespace_vectors(conn, model, namespace, now=now)
    return _top(ids, vectors, query_vector, k)


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
        ranked = _ranked(ids, vectors, query_vector)
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


def namespace_vectors(conn: Connection, model: EmbeddingModel, namespace: str, *, now: int) -> tuple[list[str], np.ndarray]:
    """Every live memory of `namespace`, not expired at `now`, with a vector
    of `model`, by id, and the vectors: what the NumPy path reads (that namespace's only)."""
    rows = conn.execute(
        select(memories.c.id, memory_vectors.c.model, memory_vectors.c.vector)
        .join(memory_vectors, memory_vectors.c.memory_id == memories.c.id)
        .where(memories.c.namespace == namespace, unexpired(memories, now))  # the model compared below: see _vectors_of
        .order_by(memories.c.id)
    )
    # Of the wrong length, left out; holding a NaN, never a neighbour (`_best`): testing every value
    # here (`vector_index.usable`) would cost a search of 100,000 about half a second more.
    rows = [row for row in rows if row.model == model.name and vector_index.fits(row.vector, model.dim)]
    return [row.id for row in rows], from_blobs((row.vector for row in rows), model.dim)


def _top(ids: Sequence[str], vectors: np.ndarray, query_vector: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The top k of `ids` by cosine, ties by id (`vectors`: their rows): see `_best`."""
    import numpy as np

    if not len(ids):
        return []
    return _best(ids, vectors @ np.asarray(query_vector, dtype=np.float32), lambda chosen: vectors[chosen], query_vector, k)


def _best(ids: Sequence[str], coarse: np.ndarray, rows: Callable[[Any], np.ndarray], query_vector: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The top k of `ids` by cosine, ties by id: `coarse`, their float32 cosines, picks the
    candidates (all whose cosine reaches the k-th's, less FLOAT32_SLACK), then `_ranked` orders
    them on their vectors (`rows(indices)`)."""
    chosen = _chosen(coarse, k)
    return _ranked([ids[i] for i in chosen], rows(chosen), query_vector)[:k]


def _chosen(coarse: np.ndarray, k: int) -> np.ndarray:
    """The positions of the candidates for the top k by `coarse` (float32 cosines): every finite one
    that reaches the k-th largest, less FLOAT32_SLACK."""
    import numpy as np

    # A vector holding a NaN or an infinity is never a neighbour (NumPy would sort a NaN above every
    # cosine, and an infinite one would make the k-th largest infinite and leave no candidate).
    coarse = np.where(np.isfinite(coarse), coarse, -np.inf)
    if len(coarse) > k:
        return np.flatnonzero((coarse >= _kth_largest(coarse, k) - FLOAT32_SLACK) & np.isfinite(coarse))
    return np.flatnonzero(np.isfinite(coarse))


# Values per block when looking for the k-th largest of many (`_kth_largest`).
TOP_BLOCK = 64


def _kth_largest(values: np.ndarray, k: int) -> float:
    """The k-th largest of `values` (1 <= k <= len(values)). The k-th largest of the blocks' maxima
    is a floor under it (k blocks hold a value at least that large each), so only the values that
    reach the floor, a few per block at most, are partitioned: a quarter of the time of
    partitioning all of them at 100,000."""
    import numpy as np

    blocks = len(values) // TOP_BLOCK
    if blocks >= k:
        maxima = values[: blocks * TOP_BLOCK].reshape(blocks, TOP_BLOCK).max(axis=1)
        values = values[values >= np.partition(maxima, blocks - k)[blocks - k]]
    return float(np.partition(values, len(values) - k)[len(values) - k])


@dataclass
class NamespaceVectors:
    """One namespace's vectors in memory, for a process that searches it again and again: every
    vector of `model` whose memory, live or archived, is in the namespace (archiving does not touch
    vectors, and a restored memory is searchable again at once), refreshed with what was embedded
    since; liveness is checked in SQL on the best candidates. One search at a time."""

    model: EmbeddingModel
    namespace: str
    lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)
    ids: list[str] = field(default_factory=list)
    # (dim, n) float32, a vector per column: NumPy's product of a vector with a matrix laid out this
    # way reads the matrix about half again as fast as with a vector per row (5 ms against 8 at
    # 100,000 x 384 here), and that product is most of a search.
    columns: Any = None
    position: dict[str, int] = field(default_factory=dict)
    version: int = -1  # the store's vectors_version when last read
    epoch: str | None = None  # the store's embedding_epoch when last read
    newest: int = -1  # the newest embedded_at read

    def refresh(self, conn: Connection) -> None:
        import numpy as np

        settings = _settings(conn)
        version, epoch = int(settings.get(VERSION_SETTING, 0)), settings.get(EPOCH_SETTING)
        if epoch != self.epoch:  # a model was set since: read the namespace afresh
            self.columns, self.epoch, self.newest = None, epoch, -1
        elif version == self.version:
            return
        since = self.newest if self.columns is not None else None
        if since is None:
            self.ids, self.position, self.columns = [], {}, np.zeros((self.model.dim, 0), dtype=np.float32)
        newest, fresh = namespace_vectors_since(conn, self.model, self.namespace, since)
        if fresh:
            ordered = sorted(fresh.items())
            vectors = from_blobs((blob for _, blob in ordered), self.model.dim)
            appended = []
            for (memory_id, _), vector in zip(ordered, vectors):
                at = self.position.get(memory_id)
                if at is None:
                    self.position[memory_id] = len(self.ids) + len(appended)
                    appended.append((memory_id, vector))
                else:
                    self.columns[:, at] = vector
            if appended:
                self.ids.extend(memory_id for memory_id, _ in appended)
                self.columns = np.hstack([self.columns, np.stack([vector for _, vector in appended], axis=1)])
        self.version = version
        self.newest = max(self.newest, newest)

    def _top(self, query_vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        import numpy as np

        coarse = np.asarray(query_vector, dtype=np.float32) @ self.columns
        return _best(self.ids, coarse, lambda chosen: self.columns[:, chosen].T, query_vector, k)

    def cosines(self, ids: Sequence[str], query_vector: np.ndarray) -> dict[str, float]:
        """What `cosines` answers for `ids` of this namespace, from memory (as last refreshed)."""
        with self.lock:
            held = sorted(memory_id for memory_id in set(ids) if memory_id in self.position)
            return dict(_ranked(held, self.columns[:, [self.position[memory_id] for memory_id in held]].T, query_vector))

    def search(self, conn: Connection, query_vector: np.ndarray, k: int, *, now: int) -> list[tuple[str, float]]:
        """What `search` answers at `now`, from memory."""
        with self.lock:
            self.refresh(conn)
            if k <= 0 or not self.ids:
                return []
            depth = max(CANDIDATES_PER_RESULT * k, 10)
            while True:
                candidates = self._top(query_vector, min(depth, len(self.ids)))
                live = live_ids(conn, [memory_id for memory_id, _ in candidates], self.namespace, now=now)
                found = [hit for hit in candidates if hit[0] in live]
                if len(found) >= k or depth >= len(self.ids):
                    return found[:k]
                depth *= 4


def cosines(conn: Connection, model: EmbeddingModel, ids: Sequence[str], query_vector: np.ndarray) -> dict[str, float]:
    """The cosine of each of `ids` that has a vector from `model` to `query_vector` (unit vectors)."""
    found = sorted(_vectors_of(conn, model, ids).items())
    return dict(_ranked([memory_id for memory_id, _ in found], from_blobs((blob for _, blob in found), model.dim), query_vector))
