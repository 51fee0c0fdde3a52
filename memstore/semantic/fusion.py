"""Hybrid recall: fuse the full-text ranking with the vector ranking, keeping what each finds.

Plain reciprocal rank fusion (RRF) gives a weak list and a strong list equal votes: a memory that
matched the query's generic words ("user", "use") at lexical rank 1 outvotes the memory the vectors
found at rank 2. Asked in other words, full-text search finds little, so RRF throws away much of what
the vectors found (measured in ``docs/semantic.md``).

`fuse` judges every candidate by its cosine similarity to the query, the one score that is
comparable across memories, and gives a full-text match a bounded bonus:

    score = cosine + LEXICAL_WEIGHT * lexical_score / best_lexical_score

* A memory found by the vectors keeps its place unless another candidate is within
  `LEXICAL_WEIGHT` of its cosine *and* matched the words: a lexical hit re-orders near-ties, never
  buries a clear vector hit.
* A memory found by the words and plausible in meaning (cosine near the top) rises into the results;
  one found by the words only gets the lowest cosine of the vector list (an upper bound of its own)
  plus its bonus. Callers that can should pass the real cosines of the full-text hits in `semantic`
  too (the store has their vectors), so every candidate is judged on its own similarity.
* With no vectors (an empty `semantic`), the order is the full-text order; with no full-text
  matches, the vector order.

Deterministic: equal scores are ordered by id. Pure Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# The largest cosine gap a full-text match can close (tuned on half of
# tests/data/recall_questions.jsonl, checked on the other half: see docs/semantic.md).
LEXICAL_WEIGHT = 0.1
# The constant of plain reciprocal rank fusion, as usually published; kept as the baseline.
RRF_K = 60

LEXICAL = "lexical"
SEMANTIC = "semantic"


@dataclass(frozen=True)
class Fused:
    """One fused result: its `score` (higher is better) and which rankings found it."""

    id: str
    score: float
    found_by: tuple[str, ...]


def _first_scores(ranking: Sequence[tuple[str, float]]) -> dict[str, float]:
    """id -> score, keeping the first (best) entry of an id listed twice."""
    scores: dict[str, float] = {}
    for memory_id, score in ranking:
        scores.setdefault(memory_id, float(score))
    return scores


def _found_by(memory_id: str, lexical: dict[str, float], semantic: dict[str, float]) -> tuple[str, ...]:
    return tuple(name for name, found in ((LEXICAL, lexical), (SEMANTIC, semantic)) if memory_id in found)


def fuse(
    lexical: Sequence[tuple[str, float]],
    semantic: Sequence[tuple[str, float]],
    k: int,
    *,
    lexical_weight: float = LEXICAL_WEIGHT,
) -> list[Fused]:
    """The top `k` of the union of two rankings, by cosine plus a bounded full-text bonus.

    `lexical` is (id, score) best first, higher is better, any positive scale (BM25, ts_rank);
    `semantic` is (id, cosine). See the module docstring for the rule.

    >>> ranked = fuse([("m2", 8.0), ("m9", 2.0)], [("m1", 0.71), ("m2", 0.69), ("m3", 0.40)], 3)
    >>> [(r.id, round(r.score, 3), r.found_by) for r in ranked]
    [('m2', 0.79, ('lexical', 'semantic')), ('m1', 0.71, ('semantic',)), ('m9', 0.425, ('lexical',))]
    """
    if k <= 0:
        return []
    words = _first_scores(lexical)
    cosines = _first_scores(semantic)
    best_words = max(words.values(), default=0.0)
    floor = min(cosines.values(), default=0.0)

    def score(memory_id: str) -> float:
        bonus = lexical_weight * max(words[memory_id], 0.0) / best_words if memory_id in words and best_words > 0 else 0.0
        return cosines.get(memory_id, floor) + bonus

    scored = [(score(memory_id), memory_id) for memory_id in cosines.keys() | words.keys()]
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [Fused(memory_id, value, _found_by(memory_id, words, cosines)) for value, memory_id in scored[:k]]


def reciprocal_rank_fusion(
    lexical: Sequence[tuple[str, float]], semantic: Sequence[tuple[str, float]], k: int, *, rrf_k: int = RRF_K
) -> list[Fused]:
    """Plain RRF, score = sum of 1 / (rrf_k + rank) over the rankings: the baseline `fuse` is measured
    against (see the module docstring for why it is not the default)."""
    if k <= 0:
        return []
    words = _first_scores(lexical)
    cosines = _first_scores(semantic)
    totals: dict[str, float] = {}
    for ranking in (words, cosines):
        for rank, memory_id in enumerate(ranking, start=1):
            totals[memory_id] = totals.get(memory_id, 0.0) + 1.0 / (rrf_k + rank)
    ordered = sorted(totals.items(), key=lambda item: (-item[1], item[0]))
    return [Fused(memory_id, value, _found_by(memory_id, words, cosines)) for memory_id, value in ordered[:k]]
