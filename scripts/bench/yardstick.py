"""The O(n^2) yardstick that memstore.hygiene.similar_pairs is checked against: every pair compared.

The bench (core, report) times it beside the indexed search and requires the same pairs; the tests
(tests/test_hygiene.py) compare the two on generated sets. Nothing in memstore runs it.
"""

from __future__ import annotations

from collections.abc import Sequence

from memstore.hygiene import SimilarPair, jaccard


def exhaustive_pairs(token_sets: Sequence[frozenset[str]], threshold: float) -> list[SimilarPair]:
    """The pairs (i < j) whose Jaccard similarity is at least `threshold`, found by comparing every pair."""
    return [
        SimilarPair(i, j, similarity)
        for i in range(len(token_sets))
        for j in range(i + 1, len(token_sets))
        if (similarity := jaccard(token_sets[i], token_sets[j])) >= threshold
    ]
