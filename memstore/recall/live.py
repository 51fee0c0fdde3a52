"""Recall's source in the live set at `now`: the full-text index (`memstore.fulltext`, with the
namespace's word counts: `memstore.recall.lexical`), the vector search (`memstore.semantic`), and the
live rows, each read at the one `now` of the recall.

`HeldVectors` is what a `Recall` keeps between calls: the namespaces it searched, and the vectors
of those searched more than once, in memory.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, select

from ..db import rows_in
from ..fulltext import query_words, recall_rows
from ..schema import is_unexpired, memories
from ..semantic.vector_file import search
from ..semantic.vectors import NamespaceVectors, cosines, require_model
from .lexical import NamespaceCounts, recall_rows_and_counts


class HeldVectors:
    """The namespaces searched by one `Recall`, and the vectors of those searched more than once, in
    memory (refreshed with what was embedded since): the first search of a namespace runs in the
    database, later ones from memory."""

    def __init__(self) -> None:
        self.searched: set[tuple[str, str]] = set()
        self.in_memory: dict[tuple[str, str], NamespaceVectors] = {}
        self.lock = threading.Lock()

    def hits(self, conn: Connection, query_vector: Any, namespace: str, k: int, now: int) -> list[tuple[str, float]]:
        """The k live memories of `namespace` not expired at `now` nearest to `query_vector`: in the
        database the first time `namespace` is searched, from its vectors in memory afterwards (same
        answers)."""
        model = require_model(conn)
        key = (model.name, namespace)
        with self.lock:
            held = self.in_memory.get(key)
            if held is None and key in self.searched:
                held = self.in_memory[key] = NamespaceVectors(model, namespace)
            self.searched.add(key)
        if held is not None:
            return held.search(conn, query_vector, k, now=now)
        return search(conn, model, query_vector, namespace, k, now=now)

    def cosines(self, conn: Connection, namespace: str, ids: Sequence[str], query_vector: Any) -> dict[str, float]:
        """`cosines` of `ids` (memories of `namespace`): from that namespace's vectors in memory when
        they are held (`hits` has just refreshed them), else from the database."""
        model = require_model(conn)
        with self.lock:
            held = self.in_memory.get((model.name, namespace))
        return cosines(conn, model, ids, query_vector) if held is None else held.cosines(ids, query_vector)


class LiveSource:
    """The live memories of `namespace` not expired at `now`, as `conn` sees them (a `Source`)."""

    def __init__(self, conn: Connection, namespace: str, now: int, vectors: HeldVectors) -> None:
        self.conn, self.namespace, self.now, self.vectors = conn, namespace, now, vectors
        self.moment = now

    def lexical(self, query: str, k: int) -> list[dict[str, Any]]:
        return recall_rows(self.conn, query, k, self.namespace, now=self.now)

    def lexical_with_counts(self, query: str, k: int) -> tuple[list[dict[str, Any]], list[str], NamespaceCounts]:
        words = query_words(self.conn, query)
        # Words weigh what they say about this namespace's memories, not the store's.
        found, counts = recall_rows_and_counts(self.conn, words, k, self.namespace, self.now)
        return found, words.words, counts

    def nearest(self, query_vector: Any, k: int) -> list[tuple[str, float]]:
        return self.vectors.hits(self.conn, query_vector, self.namespace, k, self.now)

    def cosines(self, ids: Sequence[str], query_vector: Any) -> dict[str, float]:
        return self.vectors.cosines(self.conn, self.namespace, ids, query_vector)

    def rows(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The live rows of `ids` not expired at `now`: a hit archived since the vector search is left out."""
        found = rows_in(self.conn, select(memories), memories.c.id, list(ids))
        return {row.id: dict(row._mapping) for row in found if is_unexpired(row._mapping, self.now)}
