"""The LangGraph scenario of the bench (``--only langgraph``; also part of ``--only all``):
`MemstoreStore` against LangGraph's own `SqliteStore`, each on a SQLite file of its own, in one run.

* **put**: one ``put`` of a new key, ``--langgraph-puts`` times (default 400), the two stores taking
  turns put by put so that both see the same machine; each store holds 2,000 items already (200
  users' ``memories`` namespaces). Reported: each store's p50, and their ratio (target <= 2).
* **batch of 20**: ``batch`` of 20 ``PutOp`` of new keys, ``--langgraph-puts`` / 20 times, against
  one put on the same store, taking turns likewise. Reported: the p50 of a batch over the p50 of a
  put, for each store (memstore's target <= 5: a batch is one transaction).

Values are ``{"content": TEXT, "n": i}``, TEXT from the bench's synthetic texts (scripts/data.py); no TTL,
no index.

    .venv/bin/python -m scripts.bench --only langgraph [--langgraph-puts 400]
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from scripts.data import generate_records

PUT_TARGET = 2.0  # memstore's put p50 / SqliteStore's put p50
BATCH_TARGET = 5.0  # memstore's batch-of-20 p50 / memstore's put p50
BATCH = 20
PREFILL = 2_000


def _open_stores(work: Path):
    from langgraph.store.sqlite import SqliteStore

    from memstore.integrations.langgraph import MemstoreStore

    theirs_context = SqliteStore.from_conn_string(str(work / "langgraph.db"))
    theirs = theirs_context.__enter__()
    theirs.setup()
    ours = MemstoreStore(work / "memstore.db")
    return ours, theirs, theirs_context


def _fill(store, texts: list[str]) -> None:
    from langgraph.store.base import PutOp

    ops = [PutOp(("users", f"u{i % 200}", "memories"), f"seed-{i}", {"content": texts[i % len(texts)], "n": i}) for i in range(PREFILL)]
    for start in range(0, len(ops), 500):
        store.batch(ops[start : start + 500])


def _timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def run_langgraph(args, work: Path) -> dict:
    from langgraph.store.base import PutOp

    folder = work / "langgraph"
    folder.mkdir(exist_ok=True)
    texts = [record["text"] for record in generate_records(1_000, args.seed)[0]]
    ours, theirs, theirs_context = _open_stores(folder)
    try:
        _fill(ours, texts)
        _fill(theirs, texts)
        puts = {"memstore": [], "sqlitestore": []}
        for i in range(args.langgraph_puts):
            value = {"content": texts[i % len(texts)], "n": i}
            puts["memstore"].append(_timed(lambda: ours.put(("users", f"u{i % 200}", "memories"), f"put-{i}", value)))
            puts["sqlitestore"].append(_timed(lambda: theirs.put(("users", f"u{i % 200}", "memories"), f"put-{i}", value)))
        batches = {"memstore": [], "sqlitestore": []}
        singles = {"memstore": [], "sqlitestore": []}
        for round_ in range(max(1, args.langgraph_puts // BATCH)):
            ops = [PutOp(("users", f"u{(round_ + j) % 200}", "memories"), f"batch-{round_}-{j}", {"content": texts[j], "n": j}) for j in range(BATCH)]
            for name, store in (("memstore", ours), ("sqlitestore", theirs)):
                batches[name].append(_timed(lambda: store.batch(ops)))
                singles[name].append(_timed(lambda: store.put(("users", "single", "memories"), f"single-{round_}", {"content": texts[round_ % len(texts)]})))
    finally:
        ours.close()
        theirs_context.__exit__(None, None, None)
    p50 = {name: statistics.median(times) for name, times in puts.items()}
    batch_p50 = {name: statistics.median(times) for name, times in batches.items()}
    single_p50 = {name: statistics.median(times) for name, times in singles.items()}
    return {
        "puts": args.langgraph_puts, "prefill": PREFILL, "batch": BATCH,
        "put_p50_s": p50, "put_ratio": p50["memstore"] / p50["sqlitestore"],
        "batch_p50_s": batch_p50, "single_p50_s": single_p50,
        "batch_ratio": {name: batch_p50[name] / single_p50[name] for name in batch_p50},
    }  # fmt: skip


def langgraph_rows(figures: dict) -> list[dict]:
    """The rows the bench prints for this scenario (times in seconds)."""
    p50, batch, single = figures["put_p50_s"], figures["batch_p50_s"], figures["single_p50_s"]
    ratio = figures["batch_ratio"]
    return [
        dict(scenario=f"LangGraph put p50 (MemstoreStore / SqliteStore, {figures['puts']} puts, {figures['prefill']:,} items)", size=figures["puts"],
             memstore=p50["memstore"], baseline=p50["sqlitestore"], ratio=figures["put_ratio"], ratio_def="memstore/SqliteStore",
             target=f"<= {PUT_TARGET:g}", met=figures["put_ratio"] <= PUT_TARGET),
        dict(scenario=f"LangGraph batch of {figures['batch']} puts p50 / one put p50 (MemstoreStore)", size=figures["batch"],
             memstore=batch["memstore"], baseline=single["memstore"], ratio=ratio["memstore"], ratio_def="batch/put",
             target=f"<= {BATCH_TARGET:g}", met=ratio["memstore"] <= BATCH_TARGET),
        dict(scenario=f"  the same for SqliteStore (for reference: {ratio['sqlitestore']:.2f}x)", size=figures["batch"],
             memstore=batch["sqlitestore"], baseline=single["sqlitestore"], ratio=ratio["sqlitestore"], ratio_def="batch/put",
             target="-", met=None),
    ]  # fmt: skip


def langgraph_failures(figures: dict) -> list[str]:
    return [f"LangGraph {row['scenario']}: {row['ratio']:.2f} misses {row['target']}" for row in langgraph_rows(figures) if row["met"] is False]
