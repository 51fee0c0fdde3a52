"""Vector files: where the store's connection cannot hold sqlite-vec, searches read the vectors from
files beside the store (memstore.vectors.vector_file), and answer exactly what NumPy over the
store's own rows answers, through every change of the live set and of the vectors, after damage,
and from a snapshot older than the files.

The tests take sqlite-vec away from memstore's connections (`memstore.db.sqlite_vec_path` answers
None), so they hold the same way on a Python whose sqlite3 could load it; on the test command's
main Python it cannot anyway.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest

import memstore.db
from memstore import MemoryStore
from memstore.db import read_transaction, write_transaction
from memstore.records import now_ms, one_memory
from memstore.vectors import storage, vector_file
from memstore.vectors.embedder import to_blob
from memstore.vectors.search import search
from memstore.writes import add_in_transaction

from .handmade import store_handmade_vectors

DIM = 8
NAMESPACES = ("ns0", "ns1", "ns2")


@pytest.fixture(autouse=True)
def no_sqlite_vec(monkeypatch):
    monkeypatch.setattr(memstore.db, "sqlite_vec_path", lambda: None)


def unit(rng: random.Random) -> list[float]:
    vector = [rng.gauss(0, 1) for _ in range(DIM)]
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]


def records(first: int, count: int) -> list[dict]:
    return [{"id": f"m{i:04d}", "text": f"fact number {i}", "namespace": NAMESPACES[i % 3], "timestamp": i} for i in range(first, first + count)]


def embed_more(store: MemoryStore, new: dict[str, list[float]], now: int) -> None:
    """Vectors for `new`, of the model the store has (no new model: the files are brought up to date)."""
    with write_transaction(store.engine) as conn:
        model = storage.model_of(conn)
        storage.store_vectors(conn, model, list(new), [to_blob(v) for v in new.values()], now)


def both_ways(store: MemoryStore, queries: list[tuple[str, list[float]]], k: int) -> tuple[list, list]:
    with read_transaction(store.engine) as conn:
        model = storage.model_of(conn)
        from_files = [search(conn, model, np.array(q, dtype=np.float32), ns, k, now=now_ms(), path="vector-file") for ns, q in queries]
        in_store = [search(conn, model, np.array(q, dtype=np.float32), ns, k, now=now_ms(), path="numpy") for ns, q in queries]
    return from_files, in_store


def assert_same_answers(store: MemoryStore, seed: int) -> None:
    rng = random.Random(seed)
    queries = [(rng.choice(NAMESPACES), unit(rng)) for _ in range(10)]
    for k in (1, 5, 23):
        from_files, in_store = both_ways(store, queries, k)
        assert [[i for i, _ in answer] for answer in from_files] == [[i for i, _ in answer] for answer in in_store]
        assert all(abs(a - b) < 1e-9 for x, y in zip(from_files, in_store) for (_, a), (_, b) in zip(x, y))


@pytest.fixture
def filled(db_path):
    rng = random.Random(5)
    with MemoryStore(db_path) as store:
        store.add_many(records(0, 150))
        store_handmade_vectors(store, {r["id"]: unit(rng) for r in records(0, 150)})
        yield store, rng


def test_a_store_without_sqlite_vec_searches_its_vector_files(filled, db_path):
    store, _ = filled
    status = store.embedding_status()
    assert status["search"] == "vector-file" and "vector files beside the store" in status["notice"]
    assert_same_answers(store, seed=1)
    folder = vector_file.directory_of(str(db_path))
    assert len(list(folder.glob("*.json"))) == 3  # one file per namespace searched


def test_the_files_follow_new_vectors_archiving_restoring_and_a_new_model(filled):
    store, rng = filled
    assert_same_answers(store, seed=2)
    store.add_many(records(150, 60))
    embed_more(store, {r["id"]: unit(rng) for r in records(150, 60)}, now=2000)
    assert_same_answers(store, seed=3)  # appended
    embed_more(store, {"m0003": unit(rng), "m0151": unit(rng)}, now=3000)
    assert_same_answers(store, seed=4)  # replaced in place
    report = store.consolidate(capacity=10)
    store.forget(["m0004"])
    assert_same_answers(store, seed=5)  # archived: left out on liveness
    store.restore(report.run_id)
    assert_same_answers(store, seed=6)
    store_handmade_vectors(store, {f"m{i:04d}": unit(rng) for i in range(0, 210, 2)})  # a new model: half embedded
    assert_same_answers(store, seed=7)


def test_the_files_are_the_owners_alone(filled, db_path):
    store, _ = filled
    assert_same_answers(store, seed=1)
    folder = vector_file.directory_of(str(db_path))
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {stat.S_IMODE(path.stat().st_mode) for path in folder.iterdir()} == {0o600}


def test_damaged_or_half_written_files_are_rebuilt_or_read_as_far_as_their_header_says(filled, db_path):
    store, rng = filled
    assert_same_answers(store, seed=1)
    folder = vector_file.directory_of(str(db_path))
    rows = sorted(folder.glob("*.f32"))
    headers = sorted(folder.glob("*.json"))
    with open(rows[0], "ab") as extra:  # a writer stopped after its rows, before its header
        extra.write(to_blob(unit(rng)) * 3)
    os.truncate(rows[1], rows[1].stat().st_size - 5)  # cut short
    headers[2].write_text("{not json", encoding="utf-8")
    assert_same_answers(store, seed=1)
    assert all(json.loads(path.read_text(encoding="utf-8"))["format"] == vector_file.FORMAT for path in headers)


def test_a_snapshot_older_than_the_files_answers_from_its_own_vectors(filled, db_path):
    store, rng = filled
    assert_same_answers(store, seed=1)
    query = ("ns0", unit(rng))
    store.add("fact number 999", id="near", namespace="ns0", timestamp=999)  # live, not embedded yet
    with read_transaction(store.engine) as conn:  # this snapshot starts before its vector
        model = storage.model_of(conn)
        before = search(conn, model, np.array(query[1], dtype=np.float32), "ns0", 10, now=now_ms(), path="numpy")
        assert "near" not in [i for i, _ in before]
        with MemoryStore(db_path) as other:  # another process embeds it, right at the query
            embed_more(other, {"near": query[1]}, now=5000)
            assert_same_answers(other, seed=1)  # brings the files past this snapshot
        assert search(conn, model, np.array(query[1], dtype=np.float32), "ns0", 10, now=now_ms(), path="vector-file") == before
    assert "near" in [i for i, _ in both_ways(store, [query], 10)[0][0]]


def test_a_dry_run_inside_a_write_transaction_leaves_the_files_as_they_were(filled, db_path):
    store, rng = filled
    assert_same_answers(store, seed=1)
    folder = vector_file.directory_of(str(db_path))
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    query = unit(rng)
    with pytest.raises(RuntimeError), write_transaction(store.engine) as conn:
        store_conn_model = storage.model_of(conn)
        add_in_transaction(conn, [one_memory("x", "uncommitted", "ns0", 1, None, False, None, None, None, None)], 1, skip_invalid=False)
        storage.store_vectors(conn, store_conn_model, ["uncommitted"], [to_blob(query)], 9000)
        hits = search(conn, store_conn_model, np.array(query, dtype=np.float32), "ns0", 3, now=now_ms(), path="vector-file")
        assert hits[0][0] == "uncommitted"  # the transaction sees its own vector, from the store
        raise RuntimeError("rolled back")
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before
    assert_same_answers(store, seed=1)


def test_files_left_by_an_earlier_store_of_the_same_path_are_not_taken_for_this_ones(db_path):
    rng = random.Random(8)
    for generation in range(2):  # the same ids and counters, other vectors
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)
        with MemoryStore(db_path) as store:
            store.add_many(records(0, 60))
            store_handmade_vectors(store, {r["id"]: unit(rng) for r in records(0, 60)})
            assert_same_answers(store, seed=1)
    assert len(list(vector_file.directory_of(str(db_path)).glob("*.json"))) == 3


def test_a_store_restored_from_a_backup_finds_what_it_embeds_after(filled, db_path, tmp_path):
    store, rng = filled
    backup = tmp_path / "backup.db"
    store.backup(backup)
    store.add_many(records(150, 30))
    embed_more(store, {r["id"]: unit(rng) for r in records(150, 30)}, now=2000)
    assert_same_answers(store, seed=2)  # the files hold the newer line
    store.close()
    shutil.copyfile(backup, db_path)  # the owner goes back to the backup; the files stay
    for suffix in ("-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    with MemoryStore(db_path) as restored:
        restored.add_many(records(300, 30))
        embed_more(restored, {r["id"]: unit(rng) for r in records(300, 30)}, now=3000)  # counts versions seen again
        assert_same_answers(restored, seed=3)


def test_embeddings_sync_writes_the_files_of_the_namespaces_it_embedded(db_path, model_dir):
    with MemoryStore(db_path) as store:
        store.enable_embeddings(model_dir)
        store.add("The user lives in Porto.", id="a", namespace="alice")
        store.add("The user's dog is called Rex.", id="b", namespace="bob")
        store.sync_embeddings()
        folder = vector_file.directory_of(str(db_path))
        headers = {json.loads(path.read_text(encoding="utf-8"))["namespace"]: path for path in folder.glob("*.json")}
        assert sorted(headers) == ["alice", "bob"]
        written = {name: path.stat().st_mtime_ns for name, path in headers.items()}
        assert [hit[0] for hit in store.semantic_search("where does the user live", 1, "alice")] == ["a"]
        assert {name: path.stat().st_mtime_ns for name, path in headers.items()} == written  # current: not written again
