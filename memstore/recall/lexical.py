"""Recall's full-text side: the ranking by the words and the namespace's word counts that hybrid
recall weighs the words by, in the live set (through the full-text index: `memstore.fulltext`) or
among the memories live at a past moment.

At a past moment the ranking is the backend's own, recomputed: on SQLite FTS5's BM25 formula over
the namespace's rows the live table held then, with the statistics the full-text index had,
counted in that namespace; on PostgreSQL ts_rank, which needs none.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, func, select, text, union_all

from ..fulltext import (
    MAX_LIMIT, PG_SEPARATORS, QueryWords, by_words_held, choose_words, pg_document, query_expression, recall_rows, whole_rows,
)  # fmt: skip
from ..live_counts import namespace_share
from ..reads import present_rows
from ..schema import FTS_TABLE, is_unexpired, memories, unexpired
from ..schema import memory_archive as archive
from ..words import tokens, without_diacritics


@dataclass(frozen=True)
class NamespaceCounts:
    """How many memories of one namespace hold each of the query's words (`holding`), among how
    many (`memories`): what hybrid recall weighs the words by."""

    holding: dict[str, int]
    memories: int


# -- the live set ---------------------------------------------------------------------------------

# The memories of one namespace holding any of the words, expired ones included (as the
# namespace's size counts them), each with its full-text rank (lower is better: RECALL_SQL's
# order), in one pass over the words' entries in the index, each looked up by rowid, and stopped
# past NAMESPACE_MATCHES_READ of them.
NAMESPACE_MATCHES_SQL = {
    "sqlite": (
        f"SELECT m.seq, m.id, m.text, m.expires_at, bm25({FTS_TABLE}) AS rank FROM {FTS_TABLE} CROSS JOIN memories AS m "
        f"ON m.seq = {FTS_TABLE}.rowid WHERE {FTS_TABLE} MATCH :expression AND m.namespace = :namespace LIMIT :limit"
    ),
    "postgresql": (
        f"SELECT seq, id, text, expires_at, -ts_rank({pg_document('text')}, query) AS rank FROM memories, to_tsquery('simple', :expression) AS query "
        f"WHERE {pg_document('text')} @@ query AND namespace = :namespace LIMIT :limit"
    ),
}
# Up to this many matches, a namespace's are read whole, ranked and counted in one pass: the texts
# are split into words in Python, which costs about 10 microseconds a memory. More (a namespace
# that is most of a big store) are ranked and counted in the index instead.
NAMESPACE_MATCHES_READ = 1_000
NAMESPACE_WORD_COUNT_SQL = {
    "sqlite": (
        f"SELECT count(*) FROM {FTS_TABLE} CROSS JOIN memories AS m ON m.seq = {FTS_TABLE}.rowid "
        f"WHERE {FTS_TABLE} MATCH :word AND m.namespace = :namespace"
    ),
    "postgresql": f"SELECT count(*) FROM memories WHERE {pg_document('text')} @@ to_tsquery('simple', :word) AND namespace = :namespace",
}


def recall_rows_and_counts(
    conn: Connection, words: QueryWords, k: int, namespace: str, now: int
) -> tuple[list[dict[str, Any]], NamespaceCounts]:
    """`recall_rows`' answer at `now` for `words` (the query's, `query_words`), and how many
    memories of `namespace` hold each word: what hybrid recall needs, the first to rank, the second
    to weigh.

    A namespace that is the whole store has the store's counts, made already; so has a query made
    only of common words (counting them in one namespace would read most of the index: such
    counts, above the namespace's size, weigh nothing). Any other namespace with at most
    NAMESPACE_MATCHES_READ memories holding the words is read once for both: they are ranked as
    RECALL_SQL ranks them, and counted as hybrid recall's coverage reads a text (`tokens`). Past
    that, recall_rows ranks, and the index counts the words in the namespace, unless it holds at
    least half the store: then it is weighed as the store."""
    namespace_memories, elsewhere = namespace_share(conn, namespace)
    if k <= 0 or not words.words or words.all_common or not elsewhere:
        return recall_rows(conn, "", k, namespace, words=words, now=now), NamespaceCounts(dict(words.holding), namespace_memories)
    dialect = conn.dialect.name
    parameters = {"expression": query_expression(words.words, dialect), "namespace": namespace, "limit": NAMESPACE_MATCHES_READ + 1}
    matches = conn.execute(text(NAMESPACE_MATCHES_SQL[dialect]), parameters).all()
    if len(matches) <= NAMESPACE_MATCHES_READ:
        held = dict.fromkeys(words.words, 0)
        for row in matches:
            present = set(tokens(row.text))
            for word in words.words:
                held[word] += word in present
        best = sorted((row for row in matches if is_unexpired(row._mapping, now)), key=lambda row: (row.rank, row.id))[: min(k, MAX_LIMIT)]
        whole = whole_rows(conn, [row.seq for row in best])
        return [dict(whole[row.seq], score=-row.rank) for row in best], NamespaceCounts(held, namespace_memories)
    ranked = recall_rows(conn, "", k, namespace, words=words, now=now)
    if elsewhere <= namespace_memories:
        # Most of the store: weighed as the store, whose counts are made (they differ from the
        # namespace's by at most the other half's, a log-scale weight by at most log 2).
        return ranked, NamespaceCounts(dict(words.holding), namespace_memories + elsewhere)
    statement = text(NAMESPACE_WORD_COUNT_SQL[dialect])
    held = {word: conn.execute(statement, {"word": query_expression([word], dialect), "namespace": namespace}).scalar_one() for word in words.words}
    return ranked, NamespaceCounts(held, namespace_memories)


# -- a past moment --------------------------------------------------------------------------------

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


def ranked_at(
    conn: Connection, namespace: str, query: str, present: Sequence[dict[str, Any]], at: int, k: int
) -> tuple[list[dict[str, Any]], QueryWords]:
    """The full-text ranking at `at`: the top k of `present` (the namespace's rows the live table
    held then, `memstore.reads.rows_at` with the expired) not expired then, each with `score`; and
    the query's words, each counted among `present`, which are all this ranking sees."""
    # On SQLite words match as its index matches them, accents folded ("cafe" finds "café");
    # PostgreSQL's as written (`str` of a text is that text).
    fold = without_diacritics if conn.dialect.name == "sqlite" else str
    documents = [tokens(fold(row["text"])) for row in present]
    held = [set(document) for document in documents]
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
