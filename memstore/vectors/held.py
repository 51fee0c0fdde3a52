"""Vectors a process holds in memory between searches (the first of the four ways of
`memstore.vectors.search`).

`HeldCopies` belongs to one store object (its `Recall`): the namespaces it searched, and a
`MemoryCopy` of each it searched more than once. A copy holds every vector of the store's model
whose memory, live or archived, is in the namespace (archiving does not touch vectors, and a
restored memory is searchable again at once), refreshed from the store's counters with what was
embedded since; liveness is checked in SQL on the best candidates.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection

from .embedder import from_blobs
from .ranking import CANDIDATES_PER_RESULT, coarse_cosines, exact_ranking, top_of
from .storage import EmbeddingModel, current_counters, live_ids, vectors_to_copy

if TYPE_CHECKING:
    import numpy as np


@dataclass
class MemoryCopy:
    """One namespace's vectors in memory, for a process that searches it again and again (see the
    module's docstring). One search at a time."""

    model: EmbeddingModel
    namespace: str
    lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)
    ids: list[str] = field(default_factory=list)
    # (n, dim) float32, a vector per row, in the order of `ids`: `coarse_cosines` reads it on one
    # thread (the product is most of a search).
    rows: Any = None
    position: dict[str, int] = field(default_factory=dict)
    version: int = -1  # the store's vectors_version when last read
    epoch: int | None = None  # the store's embedding_epoch when last read
    newest: int = -1  # the newest embedded_at read

    def refresh(self, conn: Connection) -> None:
        import numpy as np

        version, epoch, _ = current_counters(conn)
        if epoch != self.epoch:  # a model was set since: read the namespace afresh
            self.rows, self.epoch, self.newest = None, epoch, -1
        elif version == self.version:
            return
        since = self.newest if self.rows is not None else None
        if since is None:
            self.ids, self.position, self.rows = [], {}, np.zeros((0, self.model.dim), dtype=np.float32)
        newest, fresh = vectors_to_copy(conn, self.model, self.namespace, since)
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
                    self.rows[at] = vector
            if appended:
                self.ids.extend(memory_id for memory_id, _ in appended)
                self.rows = np.vstack([self.rows, np.stack([vector for _, vector in appended])])
        self.version = version
        self.newest = max(self.newest, newest)

    def _top(self, query_vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        return top_of(self.ids, coarse_cosines(self.rows, query_vector), lambda chosen: self.rows[chosen], query_vector, k)

    def cosines(self, ids: Sequence[str], query_vector: np.ndarray) -> dict[str, float]:
        """What `search.cosines` answers for `ids` of this namespace, from memory (as last refreshed)."""
        with self.lock:
            held = sorted(memory_id for memory_id in set(ids) if memory_id in self.position)
            return dict(exact_ranking(held, self.rows[[self.position[memory_id] for memory_id in held]], query_vector))

    def search(self, conn: Connection, query_vector: np.ndarray, k: int, *, now: int) -> list[tuple[str, float]]:
        """What `search.search` answers at `now`, from memory."""
        with self.lock:
            self.refresh(conn)
            if k <= 0 or not self.ids:
                return []
            depth = max(CANDIDATES_PER_RESULT * k, 10)
            while True:
                found = self._top(query_vector, min(depth, len(self.ids)))
                live = live_ids(conn, [memory_id for memory_id, _ in found], self.namespace, now=now)
                hits = [hit for hit in found if hit[0] in live]
                if len(hits) >= k or depth >= len(self.ids):
                    return hits[:k]
                depth *= 4


class HeldCopies:
    """The namespaces one process searched, and a `MemoryCopy` of those it searched more than once:
    the first search of a namespace runs in the store, later ones from memory."""

    def __init__(self) -> None:
        self.searched: set[tuple[str, str]] = set()
        self.copies: dict[tuple[str, str], MemoryCopy] = {}
        self.lock = threading.Lock()

    def for_search(self, model: EmbeddingModel, namespace: str) -> MemoryCopy | None:
        """The copy to search `namespace` from: None the first time it is searched (the store
        answers), a copy in memory from the second time on. Counts the search."""
        key = (model.name, namespace)
        with self.lock:
            copy = self.copies.get(key)
            if copy is None and key in self.searched:
                copy = self.copies[key] = MemoryCopy(model, namespace)
            self.searched.add(key)
        return copy

    def held(self, model: EmbeddingModel, namespace: str) -> MemoryCopy | None:
        """The copy of `namespace` held in memory, if any (refreshed by its last search)."""
        with self.lock:
            return self.copies.get((model.name, namespace))
