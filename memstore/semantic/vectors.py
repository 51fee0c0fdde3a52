"""Vector storage and search: embeddings in `memory_vectors`, the store's model in `memstore_settings`.

Vectors are computed incrementally: `pending` lists the live memories with no vector for the store's
model (new ones, restored ones whose model changed, every one after a model change), and `store`
writes a batch of them. Archiving and restoring a memory keep its vector: the table is keyed by
memory id, which archived and live rows share.

Search is exact cosine over unit vectors (a dot product) with NumPy, on both backends. A process
that searches more than once keeps the vectors of the store's model in memory (`VectorIndex`) and
reads only what was embedded since; liveness and namespace are checked in SQL on the best
candidates, since archiving does not touch the vectors.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Integer, Text, cast, delete, func, insert, select, update

from ..db import rows_in
from ..errors import MemstoreError
from ..schema import memories, memory_vectors, memstore_settings
from .embed import from_blobs

if TYPE_CHECKING:
    import numpy as np

MODEL_SETTING = "embedding_model"  # the model's name as recorded with each vector
SOURCE_SETTING = "embedding_source"  # what to open the model with: a fastembed name or a directory
DIM_SETTING = "embedding_dim"
# Bumped by every write of vectors, so a process holding them in memory knows, from one row, whether
# to look for new ones.
VERSION_SETTING = "vectors_version"
# Candidates checked for liveness in a first round, as a multiple of k (a round with too few live
# ones among them looks four times deeper).
CANDIDATES_PER_RESULT = 2


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


def vectors_version(conn: Connection) -> int:
    return int(_settings(conn).get(VERSION_SETTING, 0))


def set_model(conn: Connection, model: EmbeddingModel) -> None:
    values = {MODEL_SETTING: model.name, SOURCE_SETTING: model.source, DIM_SETTING: str(model.dim)}
    conn.execute(delete(memstore_settings).where(memstore_settings.c.key.in_(list(values))))
    conn.execute(insert(memstore_settings), [{"key": key, "value": value} for key, value in values.items()])
    if VERSION_SETTING not in _settings(conn):
        conn.execute(insert(memstore_settings).values(key=VERSION_SETTING, value="0"))


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
    bumped = conn.execute(
        update(memstore_settings)
        .where(memstore_settings.c.key == VERSION_SETTING)
        .values(value=cast(cast(memstore_settings.c.value, Integer) + 1, Text))
    ).rowcount
    if not bumped:  # a store whose model was enabled before the counter existed
        conn.execute(insert(memstore_settings).values(key=VERSION_SETTING, value="1"))
    newest = conn.execute(
        select(func.max(memory_vectors.c.embedded_at)).where(memory_vectors.c.model == model.name)
    ).scalar_one()
    stamp = now if newest is None else max(now, newest + 1)
    conn.execute(delete(memory_vectors).where(memory_vectors.c.memory_id.in_(list(ids))))
    conn.execute(
        insert(memory_vectors),
        [{"memory_id": i, "model": model.name, "dim": model.dim, "vector": b, "embedded_at": stamp} for i, b in zip(ids, blobs)],
    )


@dataclass
class VectorIndex:
    """The vectors of one model, in memory, kept up to date with what was embedded since. One
    search at a time (a graph may search from several threads through one store object)."""

    model: EmbeddingModel
    lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)
    ids: list[str] = field(default_factory=list)
    matrix: Any = None  # (n, dim) float32
    position: dict[str, int] = field(default_factory=dict)
    version: int = -1  # the store's vectors_version when last read
    newest: int = -1  # the newest embedded_at read

    def refresh(self, conn: Connection) -> None:
        import numpy as np

        version = vectors_version(conn)
        if version == self.version:
            return
        of_model = memory_vectors.c.model == self.model.name
        # Vectors are only ever added or replaced (a replaced one gets a newer embedded_at), so
        # reading from the newest time seen catches every change.
        since = self.newest if self.matrix is not None else None
        if since is None:
            self.ids, self.position, self.matrix = [], {}, np.zeros((0, self.model.dim), dtype=np.float32)
        query = select(memory_vectors.c.memory_id, memory_vectors.c.vector).where(of_model)
        if since is not None:
            query = query.where(memory_vectors.c.embedded_at >= since)
        rows = conn.execute(query.order_by(memory_vectors.c.memory_id)).all()
        fresh = [(memory_id, blob) for memory_id, blob in rows]
        if fresh:
            vectors = from_blobs((blob for _, blob in fresh), self.model.dim)
            appended = []
            for (memory_id, _), vector in zip(fresh, vectors):
                at = self.position.get(memory_id)
                if at is None:
                    self.position[memory_id] = len(self.ids) + len(appended)
                    appended.append((memory_id, vector))
                else:
                    self.matrix[at] = vector
            if appended:
                self.ids.extend(memory_id for memory_id, _ in appended)
                self.matrix = np.vstack([self.matrix, np.stack([vector for _, vector in appended])])
        self.version = version
        self.newest = max(self.newest, conn.execute(
            select(func.coalesce(func.max(memory_vectors.c.embedded_at), -1)).where(of_model)
        ).scalar_one())  # fmt: skip

    def search(self, conn: Connection, query_vector: np.ndarray, namespace: str, k: int) -> list[tuple[str, float]]:
        """The k live memories of `namespace` most similar to `query_vector`: (id, cosine), best first,
        ties by id."""
        with self.lock:
            return self._search(conn, query_vector, namespace, k)

    def _search(self, conn: Connection, query_vector: np.ndarray, namespace: str, k: int) -> list[tuple[str, float]]:
        import numpy as np

        self.refresh(conn)
        if k <= 0 or not self.ids:
            return []
        similarity = self.matrix @ query_vector.astype(np.float32)
        # Best first, ties by id: ids are sorted once per search of the candidates only.
        depth = max(CANDIDATES_PER_RESULT * k, 10)
        while True:
            depth = min(depth, len(self.ids))
            top = np.argpartition(-similarity, depth - 1)[:depth] if depth < len(self.ids) else np.arange(len(self.ids))
            candidates = sorted(((-float(similarity[i]), self.ids[i]) for i in top))
            live = _live_in(conn, [memory_id for _, memory_id in candidates], namespace)
            found = [(memory_id, -negative) for negative, memory_id in candidates if memory_id in live]
            # Every vector outside the candidates scores at most the last candidate's score, so k
            # live ones strictly above it are the answer; otherwise look deeper.
            cutoff = candidates[-1][0]
            sure = [hit for hit in found if -hit[1] < cutoff]
            if len(sure) >= k or depth == len(self.ids):
                return found[:k] if depth == len(self.ids) else sure[:k]
            depth *= 4


def cosines(conn: Connection, model: EmbeddingModel, ids: Sequence[str], query_vector: np.ndarray) -> dict[str, float]:
    """The cosine of each of `ids` that has a vector from `model` to `query_vector` (unit vectors)."""
    rows = list(rows_in(conn, select(memory_vectors.c.memory_id, memory_vectors.c.vector).where(memory_vectors.c.model == model.name), memory_vectors.c.memory_id, list(ids)))
    if not rows:
        return {}
    similarity = from_blobs((blob for _, blob in rows), model.dim) @ query_vector
    return {memory_id: float(value) for (memory_id, _), value in zip(rows, similarity)}


def _live_in(conn: Connection, ids: Iterable[str], namespace: str) -> set[str]:
    """Which of `ids` are live memories of `namespace`."""
    # Namespace compared here, not in SQL: with it SQLite may walk the namespace's whole index
    # instead of looking the few ids up.
    rows = rows_in(conn, select(memories.c.id, memories.c.namespace), memories.c.id, list(ids))
    return {memory_id for memory_id, of in rows if of == namespace}
