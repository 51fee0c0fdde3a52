"""A store with a history, at any size, for the tests of `memstore copy` and its benchmark
(scripts/bench/copy.py): memories over several namespaces (exact duplicates, pinned, with meta and
fact keys, some expired, some expiring later), random unit vectors filed under the real model's
name (what a copy moves does not depend on the vectors' values; embedding 100,000 texts would take
minutes), a consolidation run that archives the expired, duplicates and evicted, a forget, updates,
supersedes, a restore, and writes after the last run (pending for the next incremental run)."""

from __future__ import annotations

import random
from pathlib import Path

from memstore import MemoryStore
from memstore.db import write_transaction
from memstore.records import now_ms
from memstore.vectors import index as vector_index
from memstore.vectors.storage import EmbeddingModel, model_of, set_model
from scripts.data import file_random_vectors

NAMESPACES = 10
WORDS = (
    "deploy staging server friday user prefers dark mode editor rate limit api requests minute team standup "
    "weekday office coffee machine floor lisbon porto database backup nightly release notes customer invoice"
).split()
ADD_BATCH = 50_000


def records(size: int, seed: int, now: int) -> list[dict]:
    rng = random.Random(seed)
    out: list[dict] = []
    for n in range(size):
        namespace = f"ns{n % NAMESPACES}"
        if n >= NAMESPACES * 10 and rng.random() < 0.05:  # an exact copy of an earlier memory of its namespace
            text = out[n - NAMESPACES * rng.randrange(1, 10)]["text"]
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(4, 12))) + f" #{n}"
        record = {
            "id": f"m{n:07d}", "namespace": namespace, "text": text, "timestamp": now - rng.randrange(10**9),
            "importance": rng.randint(1, 5), "pinned": rng.random() < 0.01,
        }  # fmt: skip
        roll = rng.random()
        if roll < 0.10:
            record["meta"] = {"source": "copy-test", "n": n, "score": rng.random(), "tags": ["a", "ü"]}
        if roll > 0.99:
            record["expires_at"] = now - 1_000  # already expired: the run archives it
        elif roll > 0.98:
            record["expires_at"] = now + 86_400_000
        if rng.random() < 0.05:
            record["fact_key"] = f"fact.{n % 997}"
        out.append(record)
    return out


def build(location: str | Path, size: int, model_dir: Path | None = None, seed: int = 1, *, model: EmbeddingModel | None = None) -> dict:
    """Build the store at `location`, its vectors filed under the model in `model_dir` (the real
    one, 384 wide) or under `model` (a hand-made one no process can load); returns the run ids and
    moments before and after the runs."""
    now = now_ms()
    rows = records(size, seed, now)
    expiring = {r["id"] for r in rows if "expires_at" in r}
    rng = random.Random(seed + 1)
    with MemoryStore(location) as store:
        for start in range(0, size, ADD_BATCH):
            store.add_many(rows[start : start + ADD_BATCH])
        if model is None:
            store.enable_embeddings(model_dir)
        with write_transaction(store.engine) as conn:
            if model is not None:
                set_model(conn, model)
            vector_index.drop(conn)  # filled once below: quicker than row by row
        file_random_vectors(store, [r["id"] for r in rows], seed)
        with write_transaction(store.engine) as conn:
            model = model_of(conn)
            vector_index.rebuild(conn, model.name, model.dim)
        before_runs = now_ms()
        capacity = max(1, int(size / NAMESPACES * 0.8))
        consolidated = store.consolidate(capacity, namespace=None)
        live_rows = [m for m in store.iter_rows(None) if not m["pinned"] and m["id"] not in expiring]
        rng.shuffle(live_rows)
        live = [m["id"] for m in live_rows]
        forgotten = store.forget(live[: max(1, size // 500)], reason="copy test")
        for memory_id in live[-max(1, size // 5000) :]:
            store.update(memory_id, text=f"corrected {memory_id}", importance=5)
        old = live_rows[size // 500 + 1]
        newer = next(m["id"] for m in live_rows[size // 500 + 2 :] if m["namespace"] == old["namespace"])
        store.supersede(old["id"], by=newer)
        restored = store.forget(live[size // 500 + 3 : size // 500 + 6])
        store.restore(restored.run_id)
        after_runs = now_ms()
        # Written after the last run: what the next incremental run reads, and (without vectors
        # yet) what `embeddings sync` embeds.
        late = records(max(1, size // 100), seed + 2, now_ms())
        store.add_many([{**record, "id": f"late{n:07d}"} for n, record in enumerate(late)])
    return {
        "consolidate_run": consolidated.run_id, "forget_run": forgotten.run_id, "restored_run": restored.run_id,
        "before_runs": before_runs, "after_runs": after_runs,
    }  # fmt: skip
