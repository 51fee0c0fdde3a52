"""Hybrid recall's fusion: the full-text ranking and the vector ranking, keeping what each finds.

Every candidate, found by the words or by the vectors, is judged on two scores it has whichever
ranking found it, each comparable from one query to the next:

    score = cosine + LEXICAL_WEIGHT * familiarity * coverage [+ TIME_WEIGHT]

* `cosine`: its similarity in meaning to the query (unit vectors, so -1 .. 1).
* `coverage`: the share of the query's information the memory's words hold, 0 .. 1: each word of
  the query that recall searches on (`memstore.fulltext.query_words`) weighs its inverse document
  frequency in the namespace searched, log((N - n + 0.5) / (n + 0.5)) as BM25 weighs it, N
  memories of which n hold the word; coverage is the weight of the words the memory holds over
  the weight of all of them.
* `familiarity`: the same share, held by the namespace as a whole (the weight of the query's words
  that at least one of its memories holds), 0 .. 1, one figure per query.

The one weight adapts by itself to each query. A question that names people, places and events
("What breed is Maya's dog Biscuit?") has rare words the namespace knows, and the memory holding
them covers most of the query's weight: it rises above memories that are only about the same
topic. A question in other words than its memory matches, at best, a word of low weight, or its
words are ones the namespace never uses (familiarity is low: "lockjaw jab" where the memories say
"tetanus booster"): the word matches it finds are incidental, they count little, and the cosine
decides. Plain reciprocal rank fusion (the baseline scripts/eval_recall.py measures) and a
relative bonus (a score over the best score of the query) cannot tell the two apart: both give the
best word match of every query the same reward, however little it matched.

A query that names a stretch of time ("last week", "in March": `memstore.recall.when`) adds
TIME_WEIGHT to each candidate written inside it: among memories about the same thing, the ones
from the time asked about come first. A query naming no time is ranked as before.

Deterministic: equal scores are ordered by id. Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..words import tokens
from .when import inside

# What full coverage of the query's words is worth, in cosine (chosen on the tuning halves of
# tests/data: see docs/semantic.md and scripts/eval_recall.py --tune).
LEXICAL_WEIGHT = 0.65
# What being written in the stretch of time the query names is worth, in cosine (chosen on the
# tuning part of LongMemEval: docs/semantic.md).
TIME_WEIGHT = 0.25

LEXICAL = "lexical"
SEMANTIC = "semantic"


@dataclass(frozen=True)
class Fused:
    """One fused result: its `score` (higher is better) and which rankings found it."""

    id: str
    score: float
    found_by: tuple[str, ...]


@dataclass(frozen=True)
class Candidate:
    """A memory either ranking found, with what the fusion judges it on."""

    id: str
    cosine: float | None  # None: no vector yet (the memory waits for `embeddings sync`)
    word_match: float  # familiarity * coverage of the query's words, 0 .. 1
    found_by: tuple[str, ...]
    in_time: bool = False  # written in a stretch of time the query names


def word_weights(words: Sequence[str], holding: Mapping[str, int], total: int) -> dict[str, float]:
    """Each query word's weight: its inverse document frequency among `total` memories, `holding[w]`
    of which hold it (BM25's formula, floored just above zero as SQLite's FTS5 floors it). A count
    above `total` (a common word counted in the whole store, `total` the namespace's) is read as
    every memory holding it.

    >>> word_weights(["the"], {"the": 5001}, 40)
    {'the': 1e-06}
    """
    weights = {}
    for word in words:
        held = min(holding.get(word, 0), total)
        weights[word] = max(math.log((total - held + 0.5) / (held + 0.5)), 1e-6)
    return weights


def familiarity(weights: Mapping[str, float], holding: Mapping[str, int]) -> float:
    """The share of the query's word weight on words at least one memory holds (`holding[w]`: how
    many do), 0 .. 1: how much of the question is said in the namespace's own words.

    >>> round(familiarity({"lockjaw": 5.9, "jab": 5.9, "tetanus": 4.0}, {"lockjaw": 0, "jab": 0, "tetanus": 2}), 2)
    0.25
    """
    total = sum(weights.values())
    return sum(weight for word, weight in weights.items() if holding.get(word, 0)) / total if total > 0 else 0.0


def judged(
    rows: Mapping[str, Mapping[str, object]], lexical: Collection[str], semantic: Collection[str],
    similarity: Mapping[str, float], weights: Mapping[str, float], holding: Mapping[str, int],
    spans: Sequence[tuple[int, int]] = (),
) -> list[Candidate]:
    """Each of `rows` (by id) as a Candidate: its cosine (`similarity`, None without a vector), its
    word match (familiarity * coverage of the query's `weights`; `holding`: how many memories hold
    each word), which rankings found it (`lexical`, `semantic`: their ids), and whether its
    timestamp falls in one of `spans` (the query's time windows, `memstore.recall.when`)."""
    familiar = familiarity(weights, holding)
    return [
        Candidate(memory_id, similarity.get(memory_id), familiar * coverage(weights, str(row["text"])),
                  tuple(name for name, found in ((LEXICAL, memory_id in lexical), (SEMANTIC, memory_id in semantic)) if found),
                  bool(spans) and inside(int(row["timestamp"]), spans))
        for memory_id, row in rows.items()
    ]  # fmt: skip


def coverage(weights: Mapping[str, float], text: str) -> float:
    """The share of the query's word weight that `text` holds, 0 .. 1.

    >>> round(coverage({"biscuit": 5.0, "dog": 3.0, "breed": 2.0}, "Maya: Biscuit is a beagle, our first dog."), 2)
    0.8
    """
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    held = set(tokens(text))
    return sum(weight for word, weight in weights.items() if word in held) / total


def fuse(
    candidates: Iterable[Candidate], k: int, *, lexical_weight: float = LEXICAL_WEIGHT, time_weight: float = TIME_WEIGHT
) -> list[Fused]:
    """The top `k` candidates by cosine + lexical_weight * word_match (+ time_weight when written in
    a time the query names), ties by id. A candidate with no
    vector yet is given the lowest cosine of the others (an upper bound of what it might have
    scored among them, so a fresh memory still competes on its words).

    >>> ranked = fuse([Candidate("dog", 0.41, 0.8, ("lexical", "semantic")),
    ...                Candidate("walks", 0.55, 0.1, ("semantic",)),
    ...                Candidate("fonts", 0.20, 0.2, ("lexical",))], 2)
    >>> [(r.id, round(r.score, 2), r.found_by) for r in ranked]
    [('dog', 0.93, ('lexical', 'semantic')), ('walks', 0.61, ('semantic',))]
    """
    if k <= 0:
        return []
    candidates = list(candidates)
    floor = min((c.cosine for c in candidates if c.cosine is not None), default=0.0)
    scored = [
        Fused(c.id, (floor if c.cosine is None else c.cosine) + lexical_weight * c.word_match + time_weight * c.in_time, c.found_by)
        for c in candidates
    ]
    scored.sort(key=lambda fused: (-fused.score, fused.id))
    return scored[:k]
