"""Memory hygiene, pure Python: staleness, near-duplicate and contradiction detection, the report.

Definitions follow the hygiene procedure in the specification:

* tokens: `memstore.words.tokens` (runs of letters and digits of the lowercased text);
* Jaccard similarity of two token sets (two empty sets count as 1.0, one empty set as 0.0);
* days idle: whole days from the last touch (``last_recalled_at``, else ``updated_at``, else
  ``created_at``) to the moment ages are counted to (``ages_at``), never negative;
* staleness: ``min(days_idle / 180, 1.0)`` times 1.0 (never recalled), 0.75 (recalled 1-4 times) or
  0.5 (5 or more), rounded to 3 places.

Near-duplicate pairs are found without comparing all pairs: an exact all-pairs similarity join with
prefix filtering (tokens ordered rarest first; two sets with Jaccard >= t must share two tokens
among the first ``|x| - ceil(t * |x|) + 2`` of each), then every candidate is verified exactly.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .defaults import DAY_MS, NEAR_DUPLICATE_THRESHOLD
from .words import REPORT_NEGATIONS, token_set

STALE_AFTER_DAYS = 180
CONTRADICTION_THRESHOLD = 0.5

def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def last_touch(memory: Mapping[str, Any]) -> int:
    for field in ("last_recalled_at", "updated_at", "created_at"):
        if memory.get(field) is not None:
            return memory[field]
    raise ValueError(f"memory {memory.get('id')!r} has no date")


def days_idle(memory: Mapping[str, Any], ages_at: int) -> int:
    return max((ages_at - last_touch(memory)) // DAY_MS, 0)


def staleness(memory: Mapping[str, Any], ages_at: int) -> float:
    score = min(days_idle(memory, ages_at) / STALE_AFTER_DAYS, 1.0)
    recalls = memory.get("recall_count") or 0
    if recalls >= 5:
        score *= 0.5
    elif recalls >= 1:
        score *= 0.75
    return round(score, 3)


@dataclass(frozen=True)
class SimilarPair:
    first: int  # indexes into the input sequence, first < second
    second: int
    similarity: float


def similar_pairs(
    token_sets: Sequence[frozenset[str]], threshold: float, sides: Sequence[bool] | None = None
) -> list[SimilarPair]:
    """Every pair with Jaccard >= threshold (0 < threshold <= 1), exactly, without comparing all pairs.

    An all-pairs similarity join with a two-token prefix filter (the l-prefix scheme of AdaptJoin,
    l = 2). Tokens are ordered rarest first and records visited smallest first. Two sets x, y with
    |y| <= |x| and Jaccard >= t share at least ``alpha = ceil(t/(1+t) * (|x|+|y|))`` tokens; then the
    first ``|x| - alpha + 2`` tokens of x and the first ``|y| - alpha + 2`` of y share at least two
    (the two rarest shared tokens lie in both). Lower bounds of alpha that need only one size give
    the prefixes: ``ceil(t*|x|)`` for the probing x, ``ceil(2t/(1+t)*|y|)`` for the indexed y. A
    record is a candidate only when it is hit twice, which drops the many records that share one
    common word by chance; candidates are verified with the exact Jaccard. With `sides`, only pairs
    whose sides differ are reported (used for contradictions: one side negated, the other not).
    """
    if not 0 < threshold <= 1:
        raise ValueError("threshold must be in (0, 1]")
    frequency = Counter(token for tokens_ in token_sets for token in tokens_)
    # Tokens become their rank, rarest first: prefixes then hold the most selective tokens.
    rank = {token: i for i, token in enumerate(sorted(frequency, key=lambda t: (frequency[t], t)))}
    ordered = [sorted(rank[token] for token in tokens_) for tokens_ in token_sets]
    sizes = [len(tokens_) for tokens_ in ordered]
    side_of = sides if sides is not None else [False] * len(token_sets)

    pairs: list[SimilarPair] = []
    empties = [i for i, size in enumerate(sizes) if not size]
    for n, i in enumerate(empties):  # two empty sets are identical (Jaccard 1.0)
        pairs.extend(SimilarPair(i, j, 1.0) for j in empties[n + 1 :] if sides is None or side_of[i] != side_of[j])

    # Float bounds get a tiny epsilon on the safe side: a longer prefix or a lower bound only adds
    # candidates for the exact check, never loses a pair.
    eps = 1e-9
    ceil = math.ceil
    index_overlap = 2 * threshold / (1 + threshold)
    # Per side and token: the records indexed under it, in visiting order, hence by size; `skip`
    # counts the leading entries already too small for every later probe (the length filter).
    postings: dict[bool, dict[int, list[int]]] = {False: defaultdict(list), True: defaultdict(list)}
    skip: dict[bool, dict[int, int]] = {False: defaultdict(int), True: defaultdict(int)}
    for i in sorted((i for i, size in enumerate(sizes) if size), key=lambda i: (sizes[i], i)):
        mine, size = ordered[i], sizes[i]
        least_overlap = ceil(threshold * size - eps)  # alpha for any partner of size t*|x| .. |x|
        # Hit twice, unless a single shared token can already be enough (sets of one token).
        hits_needed = min(2, least_overlap)
        probe_prefix = min(size, size - least_overlap + 2)
        index_prefix = min(size, size - ceil(index_overlap * size - eps) + 2)
        min_size = threshold * size - eps
        probed_side = (not side_of[i]) if sides is not None else False
        probed, probed_skip = postings[probed_side], skip[probed_side]
        hits: Counter[int] = Counter()
        for token in mine[:probe_prefix]:
            bucket = probed.get(token)
            if not bucket:
                continue
            start = probed_skip[token]
            while start < len(bucket) and sizes[bucket[start]] < min_size:
                start += 1  # sizes only grow from here on, so this entry is never needed again
            probed_skip[token] = start
            hits.update(bucket[start:] if start else bucket)  # counted in C: the hot loop
        own = postings[side_of[i]] if sides is not None else probed
        for token in mine[:index_prefix]:
            own[token].append(i)
        mine_set = token_sets[i]
        for j in [j for j, count in hits.items() if count >= hits_needed]:
            common = len(mine_set & token_sets[j])
            similarity = common / (size + sizes[j] - common)  # jaccard(), inlined
            if similarity >= threshold:
                pairs.append(SimilarPair(min(i, j), max(i, j), similarity))
    pairs.sort(key=lambda p: (p.first, p.second))
    return pairs


def build_report(
    memories: Sequence[Mapping[str, Any]],
    ages_at: int,
    *,
    near_threshold: float = NEAR_DUPLICATE_THRESHOLD,
    contradiction_threshold: float = CONTRADICTION_THRESHOLD,
) -> dict[str, Any]:
    """The inventory report over live memories (dicts with the `memories` columns)."""
    memories = sorted(memories, key=lambda m: m["id"])
    sets = [token_set(m["text"]) for m in memories]
    negated = [bool(s & REPORT_NEGATIONS) for s in sets]

    # Duplicates, near-duplicates and contradictions are only ever looked for within a namespace.
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for memory in memories:
        groups[memory["namespace"], memory["norm_key"]].append(memory["id"])
    exact_groups = sorted((g for g in groups.values() if len(g) > 1), key=lambda g: g[0])

    by_namespace: dict[str, list[int]] = defaultdict(list)
    for index, memory in enumerate(memories):
        by_namespace[memory["namespace"]].append(index)
    near_pairs, contradictions = [], []
    for members in by_namespace.values():
        member_sets = [sets[i] for i in members]
        for pair in similar_pairs(member_sets, near_threshold):
            a, b = memories[members[pair.first]], memories[members[pair.second]]
            if a["norm_key"] != b["norm_key"]:
                near_pairs.append({"ids": [a["id"], b["id"]], "jaccard": round(pair.similarity, 3)})
        # A negation contradiction needs exactly one negated side: join the two sides only.
        for pair in similar_pairs(member_sets, contradiction_threshold, sides=[negated[i] for i in members]):
            a, b = memories[members[pair.first]], memories[members[pair.second]]
            contradictions.append({"ids": [a["id"], b["id"]], "jaccard": round(pair.similarity, 3), "reason": "negation differs"})
    near_pairs.sort(key=lambda p: p["ids"])
    flagged = {tuple(c["ids"]) for c in contradictions}
    by_fact: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, memory in enumerate(memories):
        if memory.get("fact_key") is not None:
            by_fact[memory["namespace"], memory["fact_key"]].append(index)
    for members in by_fact.values():
        for n, i in enumerate(members):
            for j in members[n + 1 :]:
                a, b = memories[i], memories[j]
                if a["norm_key"] != b["norm_key"] and (a["id"], b["id"]) not in flagged:
                    similarity = round(jaccard(sets[i], sets[j]), 3)
                    contradictions.append({"ids": [a["id"], b["id"]], "jaccard": similarity, "reason": "same fact_key, different text"})
    contradictions.sort(key=lambda c: c["ids"])

    scores = sorted(
        (
            {
                "id": m["id"],
                "staleness": staleness(m, ages_at),
                "days_idle": days_idle(m, ages_at),
                "recall_count": m.get("recall_count") or 0,
                "pinned": bool(m.get("pinned")),
            }
            for m in memories
        ),
        key=lambda s: (-s["staleness"], s["id"]),
    )
    idle = sorted(s["days_idle"] for s in scores)
    return {
        "total_records": len(memories),
        "total_text_chars": sum(len(m["text"]) for m in memories),
        "oldest_days_idle": idle[-1] if idle else 0,
        "median_days_idle": idle[len(idle) // 2] if idle else 0,
        "never_recalled": sum(1 for m in memories if not m.get("recall_count")),
        "pinned": sum(1 for m in memories if m.get("pinned")),
        "exact_duplicate_groups": exact_groups,
        "near_duplicate_pairs": near_pairs,
        "contradiction_flags": contradictions,
        "staleness": scores,
    }


def stale_ids(
    memories: Iterable[Mapping[str, Any]], ages_at: int, stale_threshold: float, min_age_days: int
) -> list[str]:
    """Unpinned memories whose staleness and days idle both reach the thresholds, by id."""
    return sorted(
        m["id"]
        for m in memories
        if not m.get("pinned")
        and staleness(m, ages_at) >= stale_threshold
        and days_idle(m, ages_at) >= min_age_days
    )
