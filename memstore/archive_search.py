"""Full-text search over the archive, so a person finds what was archived without guessing a date
(`memstore recall --archived`).

The archive has no full-text index (it is written by every run and read by a person now and
then), so the search reads the archived texts of the namespace (or of every namespace), in
batches, and ranks them as recall's full-text side ranks the live set: the query's words chosen as
recall chooses them (function words and common words drop out when a rarer word is left), each
text scored with FTS5's BM25 formula over the archived texts searched (memstore.recall.lexical.bm25),
best first, ties by id. Words match as SQLite's full-text index matches them, accents folded, on
both backends. Its cost follows the size of the archive searched.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select

from .db import rows_in
from .fulltext import by_words_held, choose_words
from .recall.lexical import bm25
from .schema import memory_archive as archive
from .words import tokens, without_diacritics

# Archived texts read per round trip.
READ_BATCH = 5_000


def search_archive(conn: Connection, query: str, k: int, namespace: str | None) -> list[dict[str, Any]]:
    """The k archived memories of `namespace` (None: all) that best match `query`, best first, ties
    by id, each its archived row with `score` (higher is better)."""
    if k <= 0:
        return []
    texts = select(archive.c.id, archive.c.text).order_by(archive.c.id).execution_options(yield_per=READ_BATCH)
    if namespace is not None:
        texts = texts.where(archive.c.namespace == namespace)
    ids: list[str] = []
    documents: list[list[str]] = []
    for memory_id, text in conn.execute(texts):
        ids.append(memory_id)
        documents.append(tokens(without_diacritics(text)))
    held = [set(document) for document in documents]
    words = choose_words(query, lambda word: sum(1 for each in held if without_diacritics(word) in each))
    searched = [without_diacritics(word) for word in words.words]
    wanted = set(searched)
    matching = [i for i in range(len(ids)) if wanted & held[i]]
    if not matching:
        return []
    if words.all_common:
        best = by_words_held(searched, [{"id": ids[i], "text": " ".join(documents[i])} for i in matching], k)
        ranked = [(row["id"], row["score"]) for row in best]  # most words held, then shortest, then id
    else:
        every = bm25(searched, documents)
        ranked = [(ids[i], every[i]) for i in sorted(matching, key=lambda i: (-every[i], ids[i]))[:k]]
    rows = {row.id: dict(row._mapping) for row in rows_in(conn, select(archive), archive.c.id, [memory_id for memory_id, _ in ranked])}
    return [dict(rows[memory_id], score=score) for memory_id, score in ranked]
