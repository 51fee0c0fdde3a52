"""Recall as of a past moment: `memstore recall --as-of T`.

The memories live at T are `memstore.reads.rows_at`'s (the rules are there). Recall as of T ranks
the namespace's memories visible at T by recall's own rules: full text as each backend scores it
(SQLite: FTS5's BM25 formula over the namespace's rows the live table held then, the statistics
the full-text index had, counted in that namespace; PostgreSQL: ts_rank, which needs none),
vectors by cosine, both fused as hybrid recall fuses them. It reads only; recall counts are never
touched.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from sqlalchemy import Connection, func, select, union_all

from .fulltext import PG_SEPARATORS, by_words_held, choose_words, query_expression
from .reads import present_rows, rows_at
from .schema import is_unexpired, memories, unexpired
from .schema import memory_archive as archive
from .semantic.fusion import LEXICAL, SEMANTIC, fuse, judged, word_weights
from .semantic.vectors import cosines, require_model
from .words import tokens, without_diacritics

# BM25's constants as SQLite's FTS5 fixes them.
BM25_K1 = 1.2
BM25_B = 0.75


def bm25(words: list[str], documents: list[list[str]]) -> list[float]:
    """Each document's BM25 score for `words` (higher is better), computed as SQLite's FTS5 computes
    it (fts5_aux.c): idf = log((N - n + 0.5) / (n + 0.5)), floored at 1e-6; per word
    idf * f * (k1 + 1) / (f + k1 * (1 - b + b * D / avgdl)), summed in the query's word order."""
    total_tokens = sum(len(document) for document in documents)
    if not documents or not total_tokens:
        return [0.0] * len(documents)
    average = total_tokens / len(documents)
    frequencies = [Counter(document) for document in documents]
    idf = {}
    for word in words:
        holding = sum(1 for frequency in frequencies if word in frequency)
        idf[word] = math.log((len(documents) - holding + 0.5) / (holding + 0.5))
        if idf[word] <= 0.0:
            idf[word] = 1e-6
    scores = []
    for frequency, document in zip(frequencies, documents):
        score = 0.0
        for word in words:
            f = frequency.get(word, 0)
            score += idf[word] * ((f * (BM25_K1 + 1.0)) / (f + BM25_K1 * (1 - BM25_B + BM25_B * len(document) / average)))
        scores.append(score)
    return scores


def _as_written(text: str) -> str:
    return text


def _lexical(conn: Connection, namespace: str, query: str, present: list[dict[str, Any]], at: int, k: int):
    """The full-text ranking at `at`: the top k visible rows, each with `score`, and the query's
    words. Scored as the backend's recall scores: BM25 as FTS5 computes it on SQLite, PostgreSQL's
    own ts_rank there (it needs no statistics of the rest of the store)."""
    # On SQLite words match as its index matches them, accents folded ("cafe" finds "café").
    fold = without_diacritics if conn.dialect.name == "sqlite" else _as_written
    documents = [tokens(fold(row["text"])) for row in present]
    held = [set(document) for document in documents]
    # Counted among the namespace's memories at `at`, which are all this ranking sees.
    words = choose_words(query, lambda word: sum(1 for each in held if fold(word) in each))
    searched = [fold(word) for word in words.words]
    wanted = set(searched)
    if not wanted:
        return [], words
    visible = [i for i, row in enumerate(present) if is_unexpired(row, at) and wanted & held[i]]
    if words.all_common:
        return by_words_held(words.words, [present[i] for i in visible], k), words
    if conn.dialect.name == "postgresql":
        scores = _ts_rank(conn, namespace, at, words.words)
        ranked = sorted(scores, key=lambda memory_id: (-scores[memory_id], memory_id))[:k]
        by_id = {row["id"]: row for row in present}
        return [dict(by_id[memory_id], score=scores[memory_id]) for memory_id in ranked], words
    scores = bm25(searched, documents)
    ranked = sorted(visible, key=lambda i: (-scores[i], present[i]["id"]))[:k]
    return [dict(present[i], score=scores[i]) for i in ranked], words


def _ts_rank(conn: Connection, namespace: str, at: int, words: list[str]) -> dict[str, float]:
    """PostgreSQL's full-text score of each memory of `namespace` visible at `at` that holds any of
    `words`, as its recall computes it (memstore.fulltext.RECALL_SQL)."""
    visible = union_all(*(present_rows(table, at, namespace).where(unexpired(table, at)) for table in (memories, archive))).subquery("visible")
    document = func.to_tsvector("simple", func.translate(visible.c.text, PG_SEPARATORS, " " * len(PG_SEPARATORS)))  # as pg_document
    tsquery = func.to_tsquery("simple", query_expression(words, "postgresql"))
    rows = conn.execute(select(visible.c.id, func.ts_rank(document, tsquery)).where(document.op("@@")(tsquery)))
    return {memory_id: float(score) for memory_id, score in rows}


def ranked_at(
    conn: Connection, query: str, k: int, namespace: str, at: int, mode: str, query_vector: Any, depth: int
) -> list[dict[str, Any]]:
    """Recall's answer as of `at` in `mode` ("lexical", "semantic" or "hybrid"; the query embedded
    already unless lexical), each row with `score` and `found_by`; `depth` is how deep each ranking
    is read before hybrid recall fuses them."""
    present = rows_at(conn, namespace, at, expired=True)
    if mode == "lexical":
        return [dict(row, found_by=[LEXICAL]) for row in _lexical(conn, namespace, query, present, at, k)[0]]
    visible = {row["id"]: row for row in present if is_unexpired(row, at)}
    similarity = cosines(conn, require_model(conn), sorted(visible), query_vector)
    hits = list(similarity.items())[: depth if mode == "hybrid" else k]
    if mode == "semantic":
        return [dict(visible[memory_id], score=cosine, found_by=[SEMANTIC]) for memory_id, cosine in hits]
    lexical, words = _lexical(conn, namespace, query, present, at, depth)
    found = {row["id"]: row for row in lexical} | {memory_id: visible[memory_id] for memory_id, _ in hits}
    weights = word_weights(words.words, words.holding, len(present))
    candidates = judged(found, {row["id"] for row in lexical}, {memory_id for memory_id, _ in hits}, similarity, weights, words.holding)
    return [dict(found[hit.id], score=hit.score, found_by=list(hit.found_by)) for hit in fuse(candidates, k)]


__all__ = ["bm25", "ranked_at"]
