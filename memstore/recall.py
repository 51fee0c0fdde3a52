"""Recall: the k live memories that best match a query, by full text, by meaning, or both fused.

`Recall` belongs to one `MemoryStore` object and keeps what is worth keeping between calls: the
in-process vector index. The query's embedding is made before any transaction (it takes
milliseconds; a transaction should not wait on a model), then both rankings read one snapshot.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from sqlalchemy import Connection, Engine, select

from .db import read_transaction, rows_in, write_transaction
from .defaults import RECALL_MODES
from .errors import MemstoreError, ValidationError
from .fulltext import query_words, recall_rows, recall_rows_and_counts, touch
from .records import now_ms
from .schema import is_unexpired, memories
from .semantic.flags import open_flag_marks
from .semantic.fusion import LEXICAL, SEMANTIC, Candidate, Fused, fuse, judged, word_weights
from .semantic.vector_file import search
from .semantic.vectors import NamespaceVectors, cosines, has_vectors, require_model

def fusion_depth(k: int) -> int:
    """How deep each ranking is read before hybrid recall fuses them into k: the union of both
    rankings' top `fusion_depth(k)` is what the fusion judges."""
    return max(4 * k, 20)


def validate_mode(mode: str | None) -> None:
    if mode is not None and mode not in RECALL_MODES:
        raise ValidationError("recall", "mode", f"must be one of {', '.join(RECALL_MODES)}, not {mode!r}")


def touched(conn: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Count a recall of `rows`: recall_count + 1 and last_recalled_at = now."""
    now = now_ms()
    touch(conn, [row["id"] for row in rows], now)
    return [dict(row, recall_count=row["recall_count"] + 1, last_recalled_at=now) for row in rows]


def answered(conn: Connection, rows: list[dict[str, Any]], touch: bool = False) -> list[dict[str, Any]]:
    """Recall's answer as a caller gets it: touched if asked, and each row with `open_flag`, the
    open contradiction flag it is a side of ({"id", "other_id"}) or None."""
    rows = touched(conn, rows) if touch else rows
    marks = open_flag_marks(conn, [row["id"] for row in rows])
    return [dict(row, open_flag=marks.get(row["id"])) for row in rows]


class Recall:
    """Recall over one store's engine; `query_vector(text)` embeds a query with the store's model."""

    def __init__(self, engine: Engine, query_vector: Callable[[str], Any]) -> None:
        self.engine = engine
        self.query_vector = query_vector
        # The namespaces searched by this object, and the vectors of those searched more than once,
        # in memory (refreshed with what was embedded since): the first search of a namespace
        # runs in the database, later ones from memory.
        self.searched: set[tuple[str, str]] = set()
        self.in_memory: dict[tuple[str, str], NamespaceVectors] = {}
        self.lock = threading.Lock()

    def _transaction(self, touch: bool) -> AbstractContextManager[Connection]:
        return write_transaction(self.engine) if touch else read_transaction(self.engine)

    def recall(self, query: str, k: int, namespace: str, *, touch: bool, mode: str | None) -> list[dict[str, Any]]:
        """The k best live memories of `namespace`, best first, each with `score`, `found_by` and
        `open_flag`; touched (recall_count + 1) unless `touch` is False. See MemoryStore.recall for the modes."""
        validate_mode(mode)
        if mode is None or mode == "lexical":
            # The common case, a store without vectors, is answered in one transaction.
            with self._transaction(touch) as conn:
                if mode == "lexical" or not has_vectors(conn):
                    return answered(conn, self.ranked_rows(conn, query, k, namespace, "lexical", None), touch)
        chosen, vectors = self._embedded([query], mode)
        with self._transaction(touch) as conn:
            return answered(conn, self.ranked_rows(conn, query, k, namespace, chosen, vectors.get(query)), touch)

    def recall_as_of(self, query: str, k: int, namespace: str, at: int, *, mode: str | None) -> list[dict[str, Any]]:
        """Recall's answer among the memories of `namespace` live at `at` (memstore.as_of), in the
        mode `recall` would use; nothing is touched."""
        from .as_of import ranked_at

        validate_mode(mode)
        chosen, vectors = "lexical", {}
        if mode != "lexical":
            with read_transaction(self.engine) as conn:
                wanted = mode or ("hybrid" if has_vectors(conn) else "lexical")
            if wanted != "lexical":
                chosen, vectors = self._embedded([query], mode)
        with read_transaction(self.engine) as conn:
            return answered(conn, ranked_at(conn, query, k, namespace, at, chosen, vectors.get(query), fusion_depth(k)))

    def ranked_rows(
        self, conn: Connection, query: str, k: int, namespace: str, mode: str, query_vector: Any
    ) -> list[dict[str, Any]]:
        """Recall's answer in the caller's transaction, in `mode` (the query embedded already, unless
        lexical); nothing is touched."""
        if mode == "lexical":
            return [dict(row, found_by=[LEXICAL]) for row in recall_rows(conn, query, k, namespace)]
        return self._fused_rows(conn, query, k, namespace, query_vector, hybrid=mode == "hybrid")

    def _embedded(self, queries: list[str], mode: str | None) -> tuple[str, dict[str, Any]]:
        """The mode recall answers in, and the queries embedded for it (before any transaction: the
        model takes milliseconds, a transaction should not wait on it)."""
        chosen = mode or "hybrid"
        if chosen == "lexical":
            return chosen, {}
        try:
            return chosen, {query: self.query_vector(query) for query in dict.fromkeys(queries)}
        except MemstoreError:
            if mode is not None:
                raise
            # By default, recall that cannot load the model (the semantic extra missing here, the
            # model's directory moved) is still full-text recall.
            return "lexical", {}

    def for_checks(self, queries: list[str], mode: str | None = None) -> CheckRanking:
        """How recall checks rank, ready before their transaction: the mode `recall` uses by default
        (hybrid when the store has vectors, else lexical) unless `mode` says otherwise."""
        validate_mode(mode)
        if mode is None:
            with read_transaction(self.engine) as conn:
                mode = None if has_vectors(conn) else "lexical"
        chosen, vectors = self._embedded(queries, mode)
        # The checks rank inside the job's transaction, which may embed and then roll back (a dry
        # run): what they hold in memory belongs to a Recall of their own, gone with the job.
        return CheckRanking(Recall(self.engine, self.query_vector), chosen, vectors)

    def semantic_search(self, query: str, k: int, namespace: str) -> list[tuple[str, float]]:
        """The k live memories of `namespace` nearest to `query` by meaning: (id, cosine), best first."""
        query_vector = self.query_vector(query)
        with read_transaction(self.engine) as conn:
            return self.vector_hits(conn, query_vector, namespace, k)

    def vector_hits(self, conn: Connection, query_vector: Any, namespace: str, k: int) -> list[tuple[str, float]]:
        """Vector search in the caller's transaction: in the database the first time this object
        searches `namespace`, from that namespace's vectors in memory afterwards (same answers)."""
        model = require_model(conn)
        key = (model.name, namespace)
        with self.lock:
            held = self.in_memory.get(key)
            if held is None and key in self.searched:
                held = self.in_memory[key] = NamespaceVectors(model, namespace)
            self.searched.add(key)
        if held is not None:
            return held.search(conn, query_vector, k)
        return search(conn, model, query_vector, namespace, k)

    def _fused_rows(
        self, conn: Connection, query: str, k: int, namespace: str, query_vector: Any, *, hybrid: bool
    ) -> list[dict[str, Any]]:
        """Rows of the semantic hits, or of their fusion with the full-text ranking, best first."""
        depth = fusion_depth(k)
        hits = self.vector_hits(conn, query_vector, namespace, depth)
        if not hybrid:
            ranked = [Fused(memory_id, similarity, (SEMANTIC,)) for memory_id, similarity in hits[:k]]
            return self._rows_of(conn, ranked)
        rows, candidates = self.hybrid_candidates(conn, query, namespace, query_vector, depth, hits)
        return [dict(rows[hit.id], score=hit.score, found_by=list(hit.found_by)) for hit in fuse(candidates, k)]

    def hybrid_candidates(
        self, conn: Connection, query: str, namespace: str, query_vector: Any, depth: int, hits: list[tuple[str, float]] | None = None
    ) -> tuple[dict[str, dict[str, Any]], list[Candidate]]:
        """What hybrid recall fuses: the live rows of the top `depth` of both rankings, and each as a
        `Candidate` (its cosine, its coverage of the query's words, which rankings found it).
        `hits`: the vector ranking, when the caller has it already."""
        if hits is None:
            hits = self.vector_hits(conn, query_vector, namespace, depth)
        words = query_words(conn, query)
        # Words weigh what they say about this namespace's memories, not the store's.
        ranked, counts = recall_rows_and_counts(conn, words, depth, namespace)
        lexical = {row["id"]: row for row in ranked}
        semantic = dict(hits)
        # Every candidate is judged on its cosine, the ones only the words found included.
        similarity = {**self._cosines(conn, namespace, [i for i in lexical if i not in semantic], query_vector), **semantic}
        rows = {**self._live_rows(conn, [memory_id for memory_id in semantic if memory_id not in lexical]), **lexical}
        weights = word_weights(words.words, counts.holding, counts.memories)
        candidates = judged(rows, lexical, semantic, similarity, weights, counts.holding)
        return rows, candidates

    def _cosines(self, conn: Connection, namespace: str, ids: list[str], query_vector: Any) -> dict[str, float]:
        """`cosines` of `ids` (memories of `namespace`): from that namespace's vectors in memory when
        this object holds them (vector_hits has just refreshed them), else from the database."""
        model = require_model(conn)
        with self.lock:
            held = self.in_memory.get((model.name, namespace))
        return cosines(conn, model, ids, query_vector) if held is None else held.cosines(ids, query_vector)

    @staticmethod
    def _live_rows(conn: Connection, ids: list[str]) -> dict[str, dict[str, Any]]:
        """The live rows of `ids`, not expired: a hit archived since the vector search is left out."""
        now = now_ms()
        return {row.id: dict(row._mapping) for row in rows_in(conn, select(memories), memories.c.id, ids) if is_unexpired(row._mapping, now)}

    def _rows_of(self, conn: Connection, ranked: list[Fused]) -> list[dict[str, Any]]:
        live = self._live_rows(conn, [hit.id for hit in ranked])
        return [dict(live[hit.id], score=hit.score, found_by=list(hit.found_by)) for hit in ranked if hit.id in live]


class CheckRanking:
    """Recall as a recall check sees it: one mode, the checks' queries embedded up front."""

    def __init__(self, recall: Recall, mode: str, vectors: dict[str, Any]) -> None:
        self.recall = recall
        self.mode = mode
        self.vectors = vectors

    def top_ids(self, conn: Connection, query: str, k: int, namespace: str) -> list[str]:
        """The ids recall returns for `query`, best first, in the state `conn` sees."""
        return [row["id"] for row in self.recall.ranked_rows(conn, query, k, namespace, self.mode, self.vectors.get(query))]
