"""Recall in the bench's per-size run: the p50 of `recall` against the one FTS5 statement through
sqlite3, over two query mixes (uniform and Zipf words)."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from memstore.store import MemoryStore
from scripts.data import make_queries
from scripts.stores import copy_store, remove_store

from .common import log, raw_connect

RAW_RECALL = (
    "SELECT m.* FROM memories_fts JOIN memories AS m ON m.rowid = memories_fts.rowid "
    "WHERE memories_fts MATCH ? AND m.namespace = ? ORDER BY bm25(memories_fts), m.id LIMIT ?"
)


def bench_recall(work: Path, base: Path, args) -> dict:
    from memstore.db import read_transaction
    from memstore.words import tokens
    from memstore.fulltext import query_expression, query_words

    path = work / "recall.db"
    copy_store(base, path, sync=True)
    out = {}
    for mix in ("uniform", "zipf"):
        queries = make_queries(args.seed, args.queries, zipf=mix == "zipf")
        store = MemoryStore(path)
        try:
            for q in queries[:5]:  # warm the page cache
                store.recall(q, k=5, touch=False)
            ms_times, ms_ids = [], []
            for q in queries:
                start = time.perf_counter()
                rows = store.recall(q, k=5, touch=False)
                ms_times.append(time.perf_counter() - start)
                ms_ids.append([row["id"] for row in rows])
            # Untimed: the words recall searched on, and the queries made only of common words.
            with read_transaction(store.engine) as conn:
                chosen = [query_words(conn, q) for q in queries]
            searched = [words.words for words in chosen]
            all_common = [words.all_common for words in chosen]  # ranked among the newest, not by BM25
        finally:
            store.close()
        conn = raw_connect(path)

        def raw_run(words_of) -> tuple[list[float], list[list[str]]]:
            times, answers = [], []
            for q, words in zip(queries, words_of):
                expression = query_expression(words, "sqlite")
                start = time.perf_counter()
                cursor = conn.execute(RAW_RECALL, (expression, "default", 5))
                rows = cursor.fetchall()
                times.append(time.perf_counter() - start)
                id_at = [column[0] for column in cursor.description].index("id")
                answers.append([row[id_at] for row in rows])
            return times, answers

        # The baseline: the one statement over the words recall searched on (the same answer).
        raw_times, raw_ids = raw_run(searched)
        # For reference: the one statement over every word of the query, as recall searched before
        # common words dropped out, and how often its top 5 differs.
        every_times, every_ids = raw_run([list(dict.fromkeys(tokens(q))) for q in queries])
        conn.close()
        ms_sorted = sorted(ms_times)
        only_common = [t for t, common in zip(ms_times, all_common) if common]
        out[mix] = {
            "memstore_p50": statistics.median(ms_times),
            "memstore_p95": ms_sorted[int(0.95 * (len(ms_sorted) - 1))],
            "raw_p50": statistics.median(raw_times),
            # A query made only of common words is ranked by its own rule (fulltext._recall_among_newest),
            # so only the queries carrying a rarer word must match the one statement.
            "answers_identical_to_raw": all(a == b for a, b, common in zip(ms_ids, raw_ids, all_common) if not common),
            "raw_every_word_p50": statistics.median(every_times),
            "top5_differs_from_every_word": sum(a != b for a, b in zip(ms_ids, every_ids)),
            "queries_dropping_words": sum(len(w) < len(set(tokens(q))) for q, w in zip(queries, searched)),
            "queries_only_common_words": len(only_common),
            "memstore_p50_only_common_words": statistics.median(only_common) if only_common else None,
            "queries": len(queries),
            "queries_with_hits": sum(bool(ids) for ids in ms_ids),
            "examples": queries[:3],
        }
        r = out[mix]
        log(f"  recall {mix}: memstore p50 {r['memstore_p50'] * 1e3:.2f} ms, raw p50 {r['raw_p50'] * 1e3:.2f} ms "
            f"(identical: {r['answers_identical_to_raw']}), every word raw p50 {r['raw_every_word_p50'] * 1e3:.2f} ms; "
            f"{r['queries_dropping_words']} queries dropped words, {len(only_common)} only common words, "
            f"top 5 differs in {r['top5_differs_from_every_word']}")
    remove_store(path)
    return out
