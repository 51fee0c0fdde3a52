"""Recall's source at a past moment: `memstore recall --as-of T`.

The memories live at T are `memstore.reads.rows_at`'s (the rules are there). Recall as of T ranks
the namespace's memories visible at T by recall's own rules, on the same path as the live set's
(`memstore.recall.pipeline`): full text as each backend scores it (`memstore.recall.lexical`),
vectors by cosine, both fused as hybrid recall fuses them. It reads only; recall counts are never
touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection

from ..reads import rows_at
from ..schema import is_unexpired
from ..vectors.search import cosines
from ..vectors.storage import require_model
from .lexical import NamespaceCounts, ranked_at


class AsOfSource:
    """The memories of `namespace` live at the moment `at`, as they were then (a `Source`)."""

    def __init__(self, conn: Connection, namespace: str, at: int) -> None:
        self.conn, self.namespace, self.at = conn, namespace, at
        self.moment = at
        # The rows the live table held at `at`, those expired by then included: the namespace's
        # size and word counts, as its full-text index had them.
        self.present = rows_at(conn, namespace, at, expired=True)
        self.visible = {row["id"]: row for row in self.present if is_unexpired(row, at)}
        self._similarity: dict[str, float] | None = None

    def lexical(self, query: str, k: int) -> list[dict[str, Any]]:
        return ranked_at(self.conn, self.namespace, query, self.present, self.at, k)[0]

    def lexical_with_counts(self, query: str, k: int) -> tuple[list[dict[str, Any]], list[str], NamespaceCounts]:
        found, words = ranked_at(self.conn, self.namespace, query, self.present, self.at, k)
        return found, words.words, NamespaceCounts(words.holding, len(self.present))

    def _cosines(self, query_vector: Any) -> dict[str, float]:
        """The cosine of every visible memory with a vector, best first, ties by id (one query per source)."""
        if self._similarity is None:
            self._similarity = cosines(self.conn, require_model(self.conn), sorted(self.visible), query_vector)
        return self._similarity

    def nearest(self, query_vector: Any, k: int) -> list[tuple[str, float]]:
        return list(self._cosines(query_vector).items())[:k]

    def cosines(self, ids: Sequence[str], query_vector: Any) -> dict[str, float]:
        similarity = self._cosines(query_vector)
        return {memory_id: similarity[memory_id] for memory_id in ids if memory_id in similarity}

    def rows(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {memory_id: self.visible[memory_id] for memory_id in ids if memory_id in self.visible}
