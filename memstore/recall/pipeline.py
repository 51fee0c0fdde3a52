"""The one path of a recall, now or as of a past moment: a ranking by the words, by meaning, or both
fused.

A `Source` is what a recall reads, in the caller's transaction: the live set at `now`
(`memstore.recall.live`: the full-text and vector indexes) or the memories live at a past moment
(`memstore.recall.as_of`: recomputed from the rows). `ranked` asks it for each mode's candidates;
hybrid recall judges them (`hybrid_candidates`) and fuses them (`memstore.recall.fusion`). Nothing
here reads the database but through the source, and nothing is touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from .fusion import LEXICAL, SEMANTIC, Candidate, fuse, judged, word_weights
from .lexical import NamespaceCounts
from .when import windows


def fusion_depth(k: int) -> int:
    """How deep each ranking is read before hybrid recall fuses them into k: the union of both
    rankings' top `fusion_depth(k)` is what the fusion judges."""
    return max(4 * k, 20)


class Source(Protocol):
    """The memories of one namespace a recall sees, at one moment (`moment`, Unix ms)."""

    moment: int

    def lexical(self, query: str, k: int) -> list[dict[str, Any]]:
        """The full-text ranking's top k rows, best first, each with `score`."""

    def lexical_with_counts(self, query: str, k: int) -> tuple[list[dict[str, Any]], list[str], NamespaceCounts]:
        """`lexical`'s answer, the query's words it searched on, and how many memories of the
        namespace hold each word (among how many)."""

    def nearest(self, query_vector: Any, k: int) -> list[tuple[str, float]]:
        """The k memories nearest to the query by meaning: (id, cosine), best first, ties by id."""

    def cosines(self, ids: Sequence[str], query_vector: Any) -> dict[str, float]:
        """The cosine of each of `ids` that has a vector."""

    def rows(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The rows of `ids` this source sees, by id (a memory gone since its ranking: left out)."""


def ranked(source: Source, query: str, k: int, mode: str, query_vector: Any) -> list[dict[str, Any]]:
    """Recall's answer in `mode` ("lexical", "semantic" or "hybrid"; the query embedded already
    unless lexical), best first, each row with `score` and `found_by`."""
    if mode == "lexical":
        return [dict(row, found_by=[LEXICAL]) for row in source.lexical(query, k)]
    depth = fusion_depth(k)
    hits = source.nearest(query_vector, depth)
    if mode == "semantic":
        rows = source.rows([memory_id for memory_id, _ in hits[:k]])
        return [dict(rows[memory_id], score=cosine, found_by=[SEMANTIC]) for memory_id, cosine in hits[:k] if memory_id in rows]
    rows, candidates = hybrid_candidates(source, query, query_vector, depth, hits)
    return [dict(rows[hit.id], score=hit.score, found_by=list(hit.found_by)) for hit in fuse(candidates, k)]


def hybrid_candidates(
    source: Source, query: str, query_vector: Any, depth: int, hits: list[tuple[str, float]]
) -> tuple[dict[str, dict[str, Any]], list[Candidate]]:
    """What hybrid recall fuses: the rows of the top `depth` of both rankings (`hits`: the vector
    ranking's), and each as a `Candidate`: its cosine, its coverage of the query's words weighed in
    the namespace, which rankings found it, whether it was written in a time the query names."""
    found, words, counts = source.lexical_with_counts(query, depth)
    lexical = {row["id"]: row for row in found}
    semantic = dict(hits)
    # Every candidate is judged on its cosine, the ones only the words found included.
    similarity = {**source.cosines([memory_id for memory_id in lexical if memory_id not in semantic], query_vector), **semantic}
    rows = {**source.rows([memory_id for memory_id in semantic if memory_id not in lexical]), **lexical}
    weights = word_weights(words, counts.holding, counts.memories)
    return rows, judged(rows, lexical, semantic, similarity, weights, counts.holding, windows(query, source.moment))
