"""Recall's source in the live set at `now`: the full-text index (`memstore.fulltext`, with the
namespace's word counts: `memstore.recall.lexical`), the vector search (`memstore.vectors.search`,
with the copies of the vectors a `Recall` keeps between calls: `memstore.vectors.held.HeldCopies`),
and the live rows, each read at the one `now` of the recall.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, select

from ..db import rows_in
from ..fulltext import query_words, recall_rows
from ..schema import is_unexpired, memories
from ..vectors.held import HeldCopies
from ..vectors.search import cosines, search
from ..vectors.storage import require_model
from .lexical import NamespaceCounts, recall_rows_and_counts


class LiveSource:
    """The live memories of `namespace` not expired at `now`, as `conn` sees them (a `Source`)."""

    def __init__(self, conn: Connection, namespace: str, now: int, vectors: HeldCopies) -> None:
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
        return search(self.conn, require_model(self.conn), query_vector, self.namespace, k, now=self.now, held=self.vectors)

    def cosines(self, ids: Sequence[str], query_vector: Any) -> dict[str, float]:
        model = require_model(self.conn)
        return cosines(self.conn, model, ids, query_vector, self.vectors.held(model, self.namespace))

    def rows(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The live rows of `ids` not expired at `now`: a hit archived since the vector search is left out."""
        found = rows_in(self.conn, select(memories), memories.c.id, list(ids))
        return {row.id: dict(row._mapping) for row in found if is_unexpired(row._mapping, self.now)}
