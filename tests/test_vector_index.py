"""Vector search in the database: sqlite-vec on SQLite, pgvector on PostgreSQL, per namespace; kept
in step with the live set in the same transactions; the same answers as the NumPy path; the file
still a file for the plain sqlite3 shell; vectors that travel with export and import.

Plumbing (the index follows every change, both paths agree) uses hand-made vectors; the claims
about recall (SQLite and PostgreSQL agree, a moved store needs no re-embedding) use the real model.
"""

from __future__ import annotations

import io
import json
import random
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from memstore import MemoryStore, ValidationError
from memstore.cli import cli
from memstore.db import read_transaction, write_transaction
from memstore.records import now_ms
from memstore.vectors.search import search
from memstore.vectors.storage import model_of

from .conftest import REPO
from .handmade import store_handmade_vectors

# sqlite-vec lives in the store's own connection: these run under a Python that can load it (the
# test command's second one); the PostgreSQL cases run there too.
pytestmark = pytest.mark.sqlite_vec

DIM = 8


def unit(rng: random.Random) -> list[float]:
    vector = [rng.gauss(0, 1) for _ in range(DIM)]
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]


def filled(store: MemoryStore, count: int = 60, namespaces: int = 3, seed: int = 7) -> dict[str, list[float]]:
    rng = random.Random(seed)
    records = [{"id": f"m{i:03d}", "text": f"fact number {i}", "namespace": f"ns{i % namespaces}", "timestamp": i} for i in range(count)]
    store.add_many(records)
    vectors = {r["id"]: unit(rng) for r in records}
    store_handmade_vectors(store, vectors)
    return vectors


def index_rows(store: MemoryStore) -> set[tuple[str, str]]:
    with read_transaction(store.engine) as conn:
        return set(conn.execute(text("SELECT memory_id, namespace FROM memory_vector_index")).all())


def live_with_vectors(store: MemoryStore) -> set[tuple[str, str]]:
    with read_transaction(store.engine) as conn:
        return set(conn.execute(text("SELECT m.id, m.namespace FROM memories m JOIN memory_vectors v ON v.memory_id = m.id")).all())


def status_of(store: MemoryStore) -> dict:
    return store.embedding_status()


def test_the_index_lives_in_the_database_and_holds_the_live_vectors(store):
    filled(store)
    assert status_of(store)["search"] == ("sqlite-vec" if store.is_sqlite else "pgvector")
    assert status_of(store)["notice"] is None
    assert index_rows(store) == live_with_vectors(store) and len(index_rows(store)) == 60


def test_the_index_follows_every_change_of_the_live_set(store):
    filled(store, count=30)
    store.add("fact number 0", id="dup-of-m000", namespace="ns0", timestamp=100)  # same key: the job archives m000
    report = store.consolidate(capacity=5, namespace="ns0")
    assert index_rows(store) == live_with_vectors(store)
    store.forget(["m001"])
    store.update("m004", text="fact number 4, corrected")
    assert index_rows(store) == live_with_vectors(store)
    store.restore(report.run_id)
    assert ("m000", "ns0") in index_rows(store) and index_rows(store) == live_with_vectors(store)
    assert store.check().ok


def test_search_in_the_index_answers_what_numpy_answers_over_the_namespace(store):
    vectors = filled(store, count=200, namespaces=4)
    rng = random.Random(3)
    with read_transaction(store.engine) as conn:
        model = model_of(conn)
        for _ in range(20):
            query = unit(rng)
            namespace = f"ns{rng.randrange(4)}"
            import numpy as np

            expected = sorted(
                ((i, float(np.dot(v, query))) for i, v in vectors.items() if int(i[1:]) % 4 == int(namespace[2:])),
                key=lambda hit: (-hit[1], hit[0]),
            )
            for k in (1, 5, 17):
                got = search(conn, model, np.array(query, dtype=np.float32), namespace, k, now=now_ms())
                if store.is_sqlite:  # an exact scan of the namespace
                    assert [i for i, _ in got] == [i for i, _ in expected[:k]]
                else:  # HNSW is approximate
                    assert len(set(i for i, _ in got) & set(i for i, _ in expected[:k])) >= 0.8 * k



def _numpy_answer(conn, model, query, namespace: str, k: int):
    from memstore.vectors.ranking import top
    from memstore.vectors.storage import all_live_vectors

    ids, vectors = all_live_vectors(conn, model, namespace, now=now_ms())
    return top(ids, vectors, query, k)


def test_the_kth_largest_cosine_is_found_through_block_maxima_exactly():
    """The in-memory search finds its threshold from the maxima of blocks of values: for every
    size around the block's, every k, and values with many ties, it is the k-th largest."""
    import numpy as np

    from memstore.vectors.ranking import TOP_BLOCK, kth_largest

    rng = np.random.default_rng(7)
    for size in (1, 2, TOP_BLOCK - 1, TOP_BLOCK, TOP_BLOCK + 1, 3 * TOP_BLOCK + 5, 5_000):
        for values in (rng.standard_normal(size).astype(np.float32), rng.integers(0, 4, size).astype(np.float32)):
            ordered = sorted(values.tolist(), reverse=True)
            for k in sorted({1, 2, 3, 40, size // 2 + 1, size} & set(range(1, size + 1))):
                assert kth_largest(values, k) == ordered[k - 1], (size, k)


def test_a_nan_vector_is_never_a_neighbour():
    import numpy as np

    from memstore.vectors.ranking import top

    vectors = np.tile(np.array([[1.0, 0.0]], dtype=np.float32), (300, 1)) * np.linspace(0.1, 1, 300, dtype=np.float32)[:, None]
    vectors[5] = np.nan
    ids = [f"m{i:03d}" for i in range(300)]
    assert [i for i, _ in top(ids, vectors, np.array([1.0, 0.0], dtype=np.float32), 3)] == ["m299", "m298", "m297"]
    assert "m005" not in [i for i, _ in top(ids[:4] + ids[5:6], np.vstack([vectors[:4], vectors[5:6]]), np.array([1.0, 0.0]), 10)]


def test_past_sqlite_vecs_depth_limit_the_index_answers_what_numpy_answers(sqlite_store):
    """sqlite-vec returns at most 4,096 neighbours a query: a search that needs more (ties, k past
    it, the nearest ones no longer live) must still give the NumPy path's answer."""
    import numpy as np

    from memstore.vectors.index import SQLITE_MAX_K

    store = sqlite_store
    ties = SQLITE_MAX_K + 100
    # The ids first by id embedded last: the index lists ties in its own order, not by id.
    store.add_many([{"id": f"b{i:05d}", "text": f"tied fact {i}", "namespace": "ties", "timestamp": i} for i in range(ties)])
    store.add_many([{"id": f"n{i:05d}", "text": f"near fact {i}", "namespace": "gone", "timestamp": i} for i in range(ties)])
    store.add_many([{"id": f"f{i:03d}", "text": f"far fact {i}", "namespace": "gone", "timestamp": i} for i in range(20)])
    vectors = {f"b{i:05d}": [1.0, 0.0, 0.0, 0.0] for i in range(ties)}
    vectors |= {f"n{i:05d}": [1.0, 0.0, 0.0, 0.0] for i in range(ties)}
    vectors |= {f"f{i:03d}": [0.0, 1.0, 0.0, 0.0] for i in range(20)}
    store_handmade_vectors(store, vectors)
    store.add_many([{"id": f"a{i}", "text": f"late tied fact {i}", "namespace": "ties", "timestamp": i} for i in range(5)])
    from memstore.vectors.embedder import to_blob
    from memstore.vectors.storage import store_vectors

    with write_transaction(store.engine) as conn:
        model = model_of(conn)
        store_vectors(conn, model, [f"a{i}" for i in range(5)], [to_blob([1.0, 0.0, 0.0, 0.0])] * 5, 2000)
        # Every nearest memory of "gone" expired (as a shell user might set it): only the far ones live.
        conn.execute(text("UPDATE memories SET expires_at = 1 WHERE id LIKE 'n%'"))
    query = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    with read_transaction(store.engine) as conn:
        assert store.embedding_status()["search"] == "sqlite-vec"
        for namespace, k in (("ties", 3), ("ties", SQLITE_MAX_K + 50), ("gone", 5)):
            got = search(conn, model, query, namespace, k, now=now_ms())
            assert got == _numpy_answer(conn, model, query, namespace, k)
        assert [i for i, _ in search(conn, model, query, "ties", 3, now=now_ms())] == ["a0", "a1", "a2"]
        assert len(search(conn, model, query, "ties", SQLITE_MAX_K + 50, now=now_ms())) == SQLITE_MAX_K + 50
        assert [i for i, _ in search(conn, model, query, "gone", 5, now=now_ms())] == ["f000", "f001", "f002", "f003", "f004"]

SUBPROCESS_SEARCH = """
import json, sys
sys.modules["sqlean"] = None  # this Python's sqlite3 cannot load extensions: the NumPy path
sys.modules["sqlite_vec"] = None
import numpy as np
from memstore import MemoryStore
from memstore.db import read_transaction, vec_loaded
from memstore.records import now_ms
from memstore.vectors.search import search
from memstore.vectors.storage import model_of
path, queries = sys.argv[1], json.loads(sys.argv[2])
with MemoryStore(path) as store, read_transaction(store.engine) as conn:
    status = store.embedding_status()
    model = model_of(conn)
    answers = {
        way: [search(conn, model, np.array(q, dtype=np.float32), ns, 7, now=now_ms(), path=way) for ns, q in queries]
        for way in ("numpy", "vector-file")
    }
    print(json.dumps({"loaded": vec_loaded(conn), "status": status, "answers": answers}))
"""


def test_a_python_without_sqlite_vec_answers_the_same_through_numpy(sqlite_store, db_path):
    filled(sqlite_store, count=150, namespaces=3)
    rng = random.Random(11)
    queries = [(f"ns{rng.randrange(3)}", unit(rng)) for _ in range(12)]
    with read_transaction(sqlite_store.engine) as conn:
        import numpy as np

        mine = [search(conn, model_of(conn), np.array(q, dtype=np.float32), ns, 7, now=now_ms()) for ns, q in queries]
    sqlite_store.close()
    done = subprocess.run([sys.executable, "-c", SUBPROCESS_SEARCH, str(db_path), json.dumps(queries)], capture_output=True, text=True, check=True)
    theirs = json.loads(done.stdout)
    assert theirs["loaded"] is False and theirs["status"]["search"] == "vector-file"
    assert "sqlite-vec is not installed" in theirs["status"]["notice"]
    for way in ("numpy", "vector-file"):  # NumPy over SQL, over the files
        answers = theirs["answers"][way]
        assert [[i for i, _ in answer] for answer in answers] == [[i for i, _ in answer] for answer in mine]
        assert all(abs(a - b) < 1e-9 for x, y in zip(answers, mine) for (_, a), (_, b) in zip(x, y))


SUBPROCESS_FORGET = """
import sys
sys.modules["sqlean"] = None
sys.modules["sqlite_vec"] = None
from memstore import MemoryStore
with MemoryStore(sys.argv[1]) as store:
    store.forget(["m002"])
"""


def test_a_change_made_without_sqlite_vec_marks_the_index_stale_and_sync_rebuilds_it(sqlite_store, db_path):
    filled(sqlite_store, count=20)
    sqlite_store.close()
    subprocess.run([sys.executable, "-c", SUBPROCESS_FORGET, str(db_path)], check=True)
    with MemoryStore(db_path) as store:
        assert status_of(store)["search"] == "vector-file" and "out of step" in status_of(store)["notice"]
        assert [f.check for f in store.check().findings] == ["vector_index"]
        store.sync_embeddings()  # rebuilds it
        assert status_of(store)["search"] == "sqlite-vec" and index_rows(store) == live_with_vectors(store)


def test_check_finds_an_index_out_of_step_and_fix_rebuilds_it(sqlite_store, db_path):
    filled(sqlite_store, count=20)
    shell = shutil.which("sqlite3")
    subprocess.run([shell, str(db_path), "DELETE FROM memories WHERE id = 'm003';"], check=True)  # a hand edit
    report = sqlite_store.check()
    assert [(f.check, f.fixed) for f in report.findings] == [("vector_index", False)]
    assert "holds 1 memories that are not live" in report.findings[0].detail
    assert sqlite_store.check(fix=True).ok and sqlite_store.check().ok
    assert index_rows(sqlite_store) == live_with_vectors(sqlite_store)


def test_the_plain_sqlite3_shell_reads_and_writes_a_store_with_an_index(sqlite_store, db_path, model_dir):
    sqlite_store.add_many([{"id": "m1", "text": "User prefers dark mode."}, {"id": "m2", "text": "Biscuit is a beagle."}])
    sqlite_store.enable_embeddings(model_dir)
    sqlite_store.sync_embeddings()
    shell = shutil.which("sqlite3")
    assert shell, "the sqlite3 shell is part of the test setup (scripts/test installs it)"

    def run(sql: str) -> str:
        done = subprocess.run([shell, str(db_path), sql], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    for table in ("memories", "memory_archive", "memory_vectors", "memstore_settings", "consolidation_runs", "contradiction_flags"):
        run(f"SELECT count(*) FROM {table};")
    assert run("SELECT count(*) FROM memory_vectors;") == "2"
    run("INSERT INTO memories (id, namespace, text, norm_key, timestamp, importance, created_at, updated_at) "
        "VALUES ('m3', 'default', 'The office wifi is guest-5g.', 'the office wifi is guest-5g', 1, 3, 1, 1);")  # fmt: skip
    # Without the extension the shell cannot read the index itself, and says so in one line.
    refused = subprocess.run([shell, str(db_path), "SELECT count(*) FROM memory_vector_index;"], capture_output=True, text=True)
    assert refused.returncode != 0 and "no such module: vec0" in refused.stderr
    assert sqlite_store.embedding_status()["pending"] == 1  # the shell's row waits for a vector
    sqlite_store.sync_embeddings()
    assert [row["id"] for row in sqlite_store.recall("wireless network at the office", 1, touch=False, mode="semantic")] == ["m3"]


def test_enabling_embeddings_on_postgresql_creates_pgvector_and_an_hnsw_index(pg_url):
    with MemoryStore(pg_url) as store:
        filled(store, count=10)  # records the model as `embeddings enable` does, pgvector created on the way
        with read_transaction(store.engine) as conn:
            indexes = dict(conn.execute(text("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memory_vector_index'")).all())
            column = conn.execute(text(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'memory_vector_index'::regclass AND attname = 'embedding'"
            )).scalar_one()  # fmt: skip
        assert column == f"vector({DIM})"
        assert any("USING hnsw (embedding vector_cosine_ops)" in definition for definition in indexes.values())


def test_without_the_right_to_create_pgvector_enable_says_what_to_run(postgres, model_dir):
    name = postgres.new_database()
    admin_url = postgres.url(name)
    with MemoryStore(admin_url):
        pass
    engine = MemoryStore(admin_url).engine
    with engine.begin() as conn:
        conn.execute(text("DROP ROLE IF EXISTS memstore_plain"))
        conn.execute(text("CREATE ROLE memstore_plain LOGIN"))
        conn.execute(text(f"GRANT ALL ON DATABASE {name} TO memstore_plain"))
        conn.execute(text("GRANT ALL ON ALL TABLES IN SCHEMA public TO memstore_plain"))
        conn.execute(text("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO memstore_plain"))
        conn.execute(text("GRANT CREATE ON SCHEMA public TO memstore_plain"))
    engine.dispose()
    plain_url = admin_url.replace("postgresql+psycopg://postgres@", "postgresql+psycopg://memstore_plain@")
    try:
        with MemoryStore(plain_url) as store:
            chosen = store.enable_embeddings(model_dir)
            assert chosen["search"] == "numpy"
            assert "CREATE EXTENSION vector;" in chosen["notice"]
            store.add("User prefers dark mode.", id="m1")
            store.sync_embeddings()
            assert [row["id"] for row in store.recall("colour scheme", 1, touch=False, mode="semantic")] == ["m1"]
    finally:
        postgres.drop_database(name)


def _reworded(count: int = 120):
    memories = [json.loads(line) for line in (REPO / "tests" / "data" / "recall_memories.jsonl").read_text().splitlines() if line.strip()]
    questions = [json.loads(line) for line in (REPO / "tests" / "data" / "recall_questions.jsonl").read_text().splitlines() if line.strip()]
    return memories, questions[:count]


def test_a_sqlite_store_moves_to_postgresql_with_its_vectors_and_recall_agrees(sqlite_store, pg_url, model_dir):
    memories, questions = _reworded()
    sqlite_store.add_many({"id": m["id"], "text": m["text"]} for m in memories)
    sqlite_store.enable_embeddings(model_dir)
    sqlite_store.sync_embeddings()
    exported = io.StringIO()
    assert sqlite_store.export(exported, None, with_vectors=True) == len(memories)
    with MemoryStore(pg_url) as moved:
        moved.enable_embeddings(model_dir)
        result = moved.import_from("memstore", io.StringIO(exported.getvalue()), name="move.jsonl")
        assert result.added == len(memories)
        status = moved.embedding_status()
        assert status["pending"] == 0 and status["search"] == "pgvector"
        overlap = []
        for question in questions:
            here = [row["id"] for row in sqlite_store.recall(question["question"], 5, touch=False)]
            there = [row["id"] for row in moved.recall(question["question"], 5, touch=False)]
            overlap.append(len(set(here) & set(there)) / 5)
        assert sum(overlap) / len(overlap) >= 0.9


def test_imported_vectors_must_be_of_the_stores_model_and_width(sqlite_store, model_dir, tmp_path):
    sqlite_store.enable_embeddings(model_dir)
    name = sqlite_store.embedding_status()["model"]
    good = {"id": "m1", "text": "x", "embedding": {"model": name, "vector": [1.0] + [0.0] * 383}}
    wrong_model = {"id": "m2", "text": "y", "embedding": {"model": "another-model", "vector": [1.0] + [0.0] * 383}}
    wrong_width = {"id": "m3", "text": "z", "embedding": {"model": name, "vector": [1.0, 0.0]}}
    for bad, problem in ((wrong_model, "is from the model 'another-model'"), (wrong_width, "has 2 numbers, the store's model 384")):
        source = io.StringIO(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
        with pytest.raises(ValidationError, match=rf"bad.jsonl line 2: field 'embedding': {problem}"):
            sqlite_store.import_from("memstore", source, name="bad.jsonl")
        assert sqlite_store.count() == 0  # nothing of the import was written
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": "m4", "text": "w", "embedding": {"model": name, "vector": [0.0, 0.0]}}) + "\n")
    out = CliRunner().invoke(cli, ["--db", str(sqlite_store.location), "import", str(path)])
    assert out.exit_code == 1 and out.output.strip().endswith("line 1: field 'embedding': vector must be finite and not all zero")
    sqlite_store.import_from("memstore", io.StringIO(json.dumps({**good, "embedding": {"model": name, "vector": [3.0] + [0.0] * 383}})), name="ok.jsonl")
    with read_transaction(sqlite_store.engine) as conn:
        import struct

        blob = conn.execute(text("SELECT vector FROM memory_vectors WHERE memory_id = 'm1'")).scalar_one()
    assert struct.unpack("<384f", blob)[0] == 1.0  # stored at unit length


def test_the_nightly_semantic_phase_asks_the_index_for_the_new_memories_neighbours(store):
    from memstore.semantic.phases import _pairs_by_matrix, candidate_pairs

    filled(store, count=120, namespaces=1)
    with write_transaction(store.engine) as conn:
        model = model_of(conn)
        rows = conn.execute(text(
            "SELECT m.id, m.seq, v.embedded_at, v.vector FROM memories m JOIN memory_vectors v ON v.memory_id = m.id ORDER BY m.id"
        )).all()  # fmt: skip
        mark = (sorted(row.seq for row in rows)[-11], 10**15, frozenset())  # the ten newest are new
        by_index, compared = candidate_pairs(conn, model, "ns0", mark, 0.3, now_ms())
        by_matrix, _ = _pairs_by_matrix(rows, model, mark, 0.3)
        assert compared == 10 and by_index
        if store.is_sqlite:
            assert [(p.a, p.b) for p in by_index] == [(p.a, p.b) for p in by_matrix]
        else:
            assert len({(p.a, p.b) for p in by_index} & {(p.a, p.b) for p in by_matrix}) >= 0.9 * len(by_matrix)



def test_a_new_memory_with_more_neighbours_than_sqlite_vec_returns_gets_every_pair(sqlite_store):
    # sqlite-vec returns at most 4,096 neighbours: past that the phase compares with the matrix.
    from memstore.semantic.phases import _pairs_by_matrix, candidate_pairs
    from memstore.vectors.index import SQLITE_MAX_K

    store = sqlite_store
    count = SQLITE_MAX_K + 100
    store.add_many([{"id": f"m{i:05d}", "text": f"fact number {i}", "namespace": "ns0", "timestamp": i} for i in range(count)])
    store_handmade_vectors(store, {f"m{i:05d}": [1.0, 0.0, 0.0, 0.0] for i in range(count)})
    with write_transaction(store.engine) as conn:
        model = model_of(conn)
        rows = conn.execute(text(
            "SELECT m.id, m.seq, v.embedded_at, v.vector FROM memories m JOIN memory_vectors v ON v.memory_id = m.id ORDER BY m.id"
        )).all()  # fmt: skip
        mark = (max(row.seq for row in rows) - 1, 10**15, frozenset())  # the newest is new
        by_index, compared = candidate_pairs(conn, model, "ns0", mark, 0.5, now_ms())
        by_matrix, _ = _pairs_by_matrix(rows, model, mark, 0.5)
    assert len(by_matrix) == count - 1
    assert [(p.a, p.b) for p in by_index] == [(p.a, p.b) for p in by_matrix]

def test_the_migration_builds_the_index_on_a_filled_store_and_takes_it_down(store_url):
    from alembic import command

    from memstore.migrate import alembic_config

    with MemoryStore(store_url) as store:
        filled(store, count=25)
        before = index_rows(store)
        with write_transaction(store.engine) as conn:
            command.downgrade(alembic_config(conn), "0007")
        with read_transaction(store.engine) as conn:
            gone = conn.execute(text("SELECT count(*) FROM memstore_settings WHERE key = 'vector_index'")).scalar_one()
            assert gone == 0
            tables = conn.dialect.get_table_names(conn)
            assert "memory_vector_index" not in tables
        with write_transaction(store.engine) as conn:
            command.upgrade(alembic_config(conn), "0008")
        assert index_rows(store) == before and status_of(store)["search"] in ("sqlite-vec", "pgvector")
