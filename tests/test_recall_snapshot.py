"""A recall reads one snapshot and takes no write lock: it answers while another writer holds the
store, and its count is written after (issue 43). On both backends, and as the CLI runs it."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from memstore import MemoryStore

from .sqlitelib import sqlite3

MEMSTORE = str(Path(sys.executable).with_name("memstore"))


def answer_while(hold, recall) -> list:
    """`recall()` run in a thread while `hold` keeps another writer's transaction open; its answer,
    which must come before the writer lets go (the join is a bound for a hung test, not a speed)."""
    answers: list = []
    worker = threading.Thread(target=lambda: answers.append(recall()))
    with hold():
        worker.start()
        worker.join(120)
        assert not worker.is_alive(), "the recall waited for the writer"
    return answers[0]


def holding_the_store(store_url: str, store: MemoryStore):
    """Another writer in the middle of a transaction: SQLite's write lock (BEGIN IMMEDIATE), or on
    PostgreSQL a row lock on every memory (an UPDATE not yet committed)."""
    from contextlib import contextmanager

    @contextmanager
    def hold():
        if store.is_sqlite:
            holder = sqlite3.connect(store_url, isolation_level=None, check_same_thread=False)
            holder.execute("BEGIN IMMEDIATE")
            holder.execute("UPDATE memories SET importance = importance")
            try:
                yield
            finally:
                holder.execute("ROLLBACK")
                holder.close()
            return
        engine = create_engine(store_url)
        try:
            with engine.connect() as conn:
                conn.execute(text("UPDATE memories SET importance = importance"))  # autobegun, held until the rollback
                yield
                conn.rollback()
        finally:
            engine.dispose()

    return hold


def test_a_recall_answers_while_another_writer_holds_the_store_and_its_count_lands_after(store, store_url):
    store.add("User prefers dark mode.", id="m1", timestamp=10)
    store.add("Deploys on Fridays", id="m2", timestamp=20)
    rows = answer_while(holding_the_store(store_url, store), lambda: store.recall("dark mode"))
    assert [(row["id"], row["recall_count"]) for row in rows] == [("m1", 1)]  # shown as counted already
    store.count_recalls()
    assert store.get("m1")["recall_count"] == 1 and store.get("m1")["last_recalled_at"] == rows[0]["last_recalled_at"]
    # Two recalls before the count is written: each answer shows its own count, both land.
    first = store.recall("dark mode")
    second = store.recall("dark mode")
    assert (first[0]["recall_count"], second[0]["recall_count"]) == (2, 3)
    assert store.get("m1")["recall_count"] == 3  # any other call of the store writes them first
    assert store.get("m2")["recall_count"] == 0


def test_the_count_of_a_recall_lands_when_the_store_closes(store_url):
    with MemoryStore(store_url) as store:
        store.add("User prefers dark mode.", id="m1")
        assert store.recall("dark mode")[0]["recall_count"] == 1
    with MemoryStore(store_url) as store:
        assert store.get("m1")["recall_count"] == 1


def test_memstore_recall_prints_its_answer_before_it_counts_it(tmp_path):
    db = tmp_path / "agent.db"
    subprocess.run([MEMSTORE, "--db", str(db), "add", "User prefers dark mode.", "--id", "m1"], check=True, capture_output=True)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the store
    recall = subprocess.Popen([MEMSTORE, "--db", str(db), "recall", "dark mode", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        answer = recall.stdout.readline()  # printed while the lock is still held
        assert '"id": "m1"' in answer and '"recall_count": 1' in answer
        assert recall.poll() is None  # still waiting to count it
    finally:
        holder.execute("COMMIT")
    assert recall.wait(timeout=120) == 0, recall.stderr.read()
    with MemoryStore(str(db)) as store:
        assert store.get("m1")["recall_count"] == 1


# Run in a process of its own: the threads it has are NumPy's and nothing else's.
SEARCHING_ALONE = """
import os, sys
import numpy as np
from memstore.vectors.ranking import coarse_cosines, top

def switches():  # times each thread but this one has been put on a CPU so far
    me = str(os.getpid())  # the main thread's id is the process's
    return {task: int(open(f"/proc/self/task/{task}/schedstat").read().split()[2])
            for task in os.listdir("/proc/self/task") if task != me}

rng = np.random.default_rng(0)
rows = rng.standard_normal((20_000, 384)).astype(np.float32)
rows /= np.linalg.norm(rows, axis=1, keepdims=True)
ids = [f"m{i:05d}" for i in range(len(rows))]
before = switches()
for query in rows[:20]:
    assert top(ids, rows, query, 5)[0][0] == ids[int(np.argmax(coarse_cosines(rows, query)))]
after = switches()
print(len(before), sum(after.get(task, 0) - count for task, count in before.items()))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads each thread's schedule from Linux's /proc")
def test_a_vector_search_runs_on_the_searching_thread_alone():
    # NumPy's `rows @ query` went to its BLAS, which (OpenBLAS) woke a worker thread per core for
    # it; the worker then spun tens of milliseconds of CPU after each product, so recalls back to
    # back kept a second core of two busy (recall beside writers, issue 43).
    threads, woken = map(int, subprocess.run([sys.executable, "-c", SEARCHING_ALONE], capture_output=True, text=True, check=True).stdout.split())
    if threads == 0:
        pytest.skip("this NumPy starts no thread of its own")
    assert woken == 0, f"NumPy's {threads} other thread(s) were put on a CPU {woken} times during 20 searches"
