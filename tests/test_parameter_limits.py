"""Statements stay under the databases' limits on bound parameters whatever the input's size
(issue 28): PostgreSQL's protocol carries at most 65,535 per statement, a default build of SQLite
32,766. An import of 100,000 memories with vectors once sent every id in one IN list."""

from __future__ import annotations

import json
import random
import sqlite3

import numpy as np
import pytest
from click.testing import CliRunner
from sqlalchemy import event, func, select, text

from memstore import MemoryStore
from memstore.cli import cli
from memstore.db import CHUNK, MAX_PARAMETERS, chunked, write_transaction
from memstore.records import now_ms
from memstore.schema import memory_vectors
from memstore.vectors.storage import EmbeddingModel, set_model, store_vectors

# Vectors filed under a model of a few dimensions: what the limits concern is how many rows go in,
# not how wide each vector is, and an HNSW build over 100,000 vectors of 384 takes over a minute
# on two cores (scripts/bench/import_vectors.py measures that import with the real model's width).
MODEL = EmbeddingModel("test/random-16", "test/random-16", 16)


def unit_vectors(count: int, dim: int, seed: int) -> list[bytes]:
    vectors = np.random.default_rng(seed).standard_normal((count, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [vector.astype("<f4").tobytes() for vector in vectors]


def fill(store: MemoryStore, count: int, namespaces: int) -> None:
    """`count` memories over `namespaces` namespaces, each with a random unit vector of MODEL."""
    ids = [f"m{n:06d}" for n in range(count)]
    store.add_many(
        {"id": memory_id, "namespace": f"ns{n % namespaces}", "text": f"memory {n} of topic {n % 97}", "timestamp": n, "importance": 1 + n % 5}
        for n, memory_id in enumerate(ids)
    )
    with write_transaction(store.engine) as conn:
        set_model(conn, MODEL)
        store_vectors(conn, MODEL, ids, unit_vectors(count, MODEL.dim, seed=count), now_ms())


def test_chunks_of_in_lists_stay_under_both_limits():
    # The write path's probe holds its list twice; room is left for a statement's own parameters.
    assert 2 * CHUNK + 100 <= MAX_PARAMETERS <= 32_766 < 65_535
    values = list(range(3 * CHUNK + 1))
    assert [len(chunk) for chunk in chunked(values)] == [CHUNK, CHUNK, CHUNK, 1]
    assert [value for chunk in chunked(values) for value in chunk] == values


# Under both builds: with sqlite-vec in the store, its index table's statements are checked too.
@pytest.mark.every_python
def test_imports_runs_and_recalls_of_thousands_stay_under_a_low_sqlite_limit(tmp_path):
    """Every statement of an import with vectors, a recall touching thousands, an eviction of
    thousands and its restore, with SQLite's limit lowered to what one chunked statement needs: a
    statement whose parameters grew with its input fails here with 'too many SQL variables'."""
    limit = 2 * CHUNK + 100
    source = MemoryStore(tmp_path / "source.db")
    fill(source, 3_000, namespaces=1)
    exported = tmp_path / "export.jsonl"
    with exported.open("w") as stream:
        source.export(stream, None, with_vectors=True)
    source.close()

    store = MemoryStore(tmp_path / "limited.db")
    with write_transaction(store.engine) as conn:
        set_model(conn, MODEL)

    @event.listens_for(store.engine, "connect")
    def lower_the_limit(dbapi_connection, record):
        dbapi_connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, limit)

    store.engine.dispose()  # connections opened from here on carry the lowered limit
    with store.engine.connect() as conn:
        assert conn.connection.dbapi_connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) == limit
    with exported.open("rb") as stream:
        assert store.import_from("memstore", stream, name=exported.name).added == 3_000
    assert len(store.recall("memory", k=2_500, namespace="ns0", mode="lexical")) == 2_500
    run = store.consolidate(capacity=500, namespace="ns0")
    assert run.evicted == 2_500
    store.restore(run.run_id)
    assert store.count("ns0") == 3_000
    assert store.embedding_status()["pending"] == 0
    store.close()


@pytest.mark.slow
def test_an_export_of_100000_memories_with_vectors_imports_into_postgresql(tmp_path, pg_url):
    """`export --all-namespaces --with-vectors` of a 100,000-memory SQLite store, `import` into
    PostgreSQL with pgvector: every memory and vector there, vectors byte for byte, the HNSW index
    in step, nothing pending."""
    count = 100_000
    source_path = tmp_path / "source.db"
    with MemoryStore(source_path) as source:
        fill(source, count, namespaces=10)
    exported = tmp_path / "export.jsonl"
    runner = CliRunner()
    done = runner.invoke(cli, ["--db", str(source_path), "export", "--all-namespaces", "--with-vectors", "-o", str(exported)])
    assert done.exit_code == 0, done.output

    with MemoryStore(pg_url) as target:
        with write_transaction(target.engine) as conn:
            set_model(conn, MODEL)
    done = runner.invoke(cli, ["--db", pg_url, "import", str(exported), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output.strip().splitlines()[-1])["added"] == count

    sample = sorted(random.Random(28).sample([f"m{n:06d}" for n in range(count)], 200))
    with MemoryStore(pg_url) as target:
        assert target.count(None) == count
        assert {namespace: target.count(namespace) for namespace in target.namespaces()} == {f"ns{n}": count // 10 for n in range(10)}
        status = target.embedding_status()
        assert (status["pending"], status["search"]) == (0, "pgvector")
        with target.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(memory_vectors)).scalar_one() == count
            assert conn.execute(text("SELECT count(*) FROM memory_vector_index")).scalar_one() == count
            imported = dict(conn.execute(select(memory_vectors.c.memory_id, memory_vectors.c.vector).where(memory_vectors.c.memory_id.in_(sample))).all())
    with MemoryStore(source_path) as source, source.engine.connect() as conn:
        original = dict(conn.execute(select(memory_vectors.c.memory_id, memory_vectors.c.vector).where(memory_vectors.c.memory_id.in_(sample))).all())
    assert len(original) == len(sample) and {key: bytes(value) for key, value in imported.items()} == original
