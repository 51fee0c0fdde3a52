"""Moved: hybrid recall's fusion is `memstore.recall.fusion`. What is left here serves the scripts
until they import from there: the names `scripts/eval_recall.py` imports from this module, and
plain reciprocal rank fusion, the baseline that script measures `fuse` against (recall never runs
it). In memstore only `memstore.semantic`'s own exports of `fuse` and `Fused` still come through here.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..recall.fusion import LEXICAL, LEXICAL_WEIGHT, SEMANTIC, Candidate, Fused, fuse

# The constant of plain reciprocal rank fusion, as usually published.
RRF_K = 60


def _first_scores(ranking: Sequence[tuple[str, float]]) -> dict[str, float]:
    """id -> score, keeping the first (best) entry of an id listed twice."""
    scores: dict[str, float] = {}
    for memory_id, score in ranking:
        scores.setdefault(memory_id, float(score))
    return scores


def reciprocal_rank_fusion(
    lexical: Sequence[tuple[str, float]], semantic: Sequence[tuple[str, float]], k: int, *, rrf_k: int = RRF_K
) -> list[Fused]:
    """Plain RRF, score = sum of 1 / (rrf_k + rank) over the rankings: the baseline `fuse` is measured
    against (memstore.recall.fusion's docstring says why it is not the default)."""
    if k <= 0:
        return []
    words = _first_scores(lexical)
    cosines = _first_scores(semantic)
    totals: dict[str, float] = {}
    for ranking in (words, cosines):
        for rank, memory_id in enumerate(ranking, start=1):
            totals[memory_id] = totals.get(memory_id, 0.0) + 1.0 / (rrf_k + rank)
    ordered = sorted(totals.items(), key=lambda item: (-item[1], item[0]))
    found = {memory_id: tuple(name for name, ranking in ((LEXICAL, words), (SEMANTIC, cosines)) if memory_id in ranking) for memory_id in totals}
    return [Fused(memory_id, value, found[memory_id]) for memory_id, value in ordered[:k]]


__all__ = ["LEXICAL", "LEXICAL_WEIGHT", "RRF_K", "SEMANTIC", "Candidate", "Fused", "fuse", "reciprocal_rank_fusion"]
