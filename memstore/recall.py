"""Recall: the k live memories that best match a query, by full text, by meaning, or both fused.

`Recall` belongs to one `MemoryStore` object and keeps what is worth keeping between calls: the
in-process vector index. The query's embedding is made before any transaction (it takes
milliseconds; a transaction should not wait on a model), then both rankings read one snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from sqlalchemy import Connection, Engine, select

from .db import read_transaction, write_transaction
from .defaults import RECALL_MODES
from .errors import MemstoreError, ValidationError
from .fulltext import recall_rows, touch
from .records import now_ms
from .schema import memories
from .semantic.fusion import Fused, fuse
from .semantic.vectors import VectorIndex, has_vectors, require_model

def fusion_depth(k: int) -> int:
    """How deep each ranking is read before hybrid recall fuses them into k."""
    return max(4 * k, 20)


def check_mode(mode: str | None) -> None:
    if mode is not None and mode not in RECALL_MODES:
        raise ValidationError("recall", "mode", f"must be one of {', '.join(RECALL_MODES)}, not {mode!r}")


def touched(conn: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Count a recall of `rows`: recall_count + 1 and last_recalled_at = now."""
    now = now_ms()
    touch(conn, [row["id"] for row in rows], now)
    return [dict(row, recall_count=row["recall_count"] + 1, last_recalled_at=now) for row in rows]


class Recall:
    """Recall over one store's engine; `query_vector(text)` embeds a query with the store's model."""

    def __init__(self, engine: Engine, query_vector: Callable[[str], Any]) -> None:
        self.engine = engine
        self.query_vector = query_vector
        # The vectors of the store's model, in memory, refreshed with what was embedded since.
        self.vector_index: VectorIndex | None = None

    def _transaction(self, touch: bool) -> AbstractContextManager[Connection]:
        return write_transaction(self.engine) if touch else read_transaction(self.engine)

    def recall(self, query: str, k: int, namespace: str, *, touch: bool, mode: str | None) -> list[dict[str, Any]]:
        """The k best live memories of `namespace`, best first, each with `score` and `found_by`;
        touched (recall_count + 1) unless `touch` is False. See MemoryStore.recall for the modes."""
        check_mode(mode)
        if mode is None or mode == "lexical":
            # The common case, a store without vectors, is answered in one transaction.
            with self._transaction(touch) as conn:
                if mode == "lexical" or not has_vectors(conn):
                    rows = [dict(row, found_by=["lexical"]) for row in recall_rows(conn, query, k, namespace)]
                    return touched(conn, rows) if touch else rows
        chosen = mode or "hybrid"
        query_vector = None
        try:
            query_vector = self.query_vector(query)
        except MemstoreError:
            if mode is not None:
                raise
            # By default, recall that cannot load the model (the semantic extra missing here, the
            # model's directory moved) is still full-text recall.
            chosen = "lexical"
        with self._transaction(touch) as conn:
            if chosen == "lexical":
                rows = [dict(row, found_by=["lexical"]) for row in recall_rows(conn, query, k, namespace)]
            else:
                rows = self._fused_rows(conn, query, k, namespace, query_vector, hybrid=chosen == "hybrid")
            return touched(conn, rows) if touch else rows

    def semantic_search(self, query: str, k: int, namespace: str) -> list[tuple[str, float]]:
        """The k live memories of `namespace` nearest to `query` by meaning: (id, cosine), best first."""
        query_vector = self.query_vector(query)
        with read_transaction(self.engine) as conn:
            return self.vector_hits(conn, query_vector, namespace, k)

    def vector_hits(self, conn: Connection, query_vector: Any, namespace: str, k: int) -> list[tuple[str, float]]:
        """Vector search in the caller's transaction, through this object's in-memory index."""
        model = require_model(conn)
        if self.vector_index is None or self.vector_index.model != model:
            self.vector_index = VectorIndex(model)
        return self.vector_index.search(conn, query_vector, namespace, k)

    def _fused_rows(
        self, conn: Connection, query: str, k: int, namespace: str, query_vector: Any, *, hybrid: bool
    ) -> list[dict[str, Any]]:
        """Rows of the semantic hits, or of their fusion with the full-text ranking, best first."""
        if hybrid:
            # Full-text matches only earn a bounded bonus in the fusion: the first few are enough.
            lexical = [(row["id"], row["score"]) for row in recall_rows(conn, query, max(2 * k, 10), namespace)]
        hits = self.vector_hits(conn, query_vector, namespace, fusion_depth(k))
        if hybrid:
            ranked = fuse(lexical, hits, k)
        else:
            ranked = [Fused(memory_id, similarity, ("semantic",)) for memory_id, similarity in hits[:k]]
        # Live rows only: a hit archived since the vector search is left out.
        live = {
            row["id"]: dict(row)
            for row in conn.execute(select(memories).where(memories.c.id.in_([hit.id for hit in ranked]))).mappings()
        }
        return [dict(live[hit.id], score=hit.score, found_by=list(hit.found_by)) for hit in ranked if hit.id in live]
