#!/usr/bin/env python3
"""Time `import` of an `export --all-namespaces --with-vectors` file into SQLite and PostgreSQL.

    .venv/bin/python scripts/bench_import.py [--size 100000] [--model-dir .model-cache/minilm]

A SQLite store of `--size` memories over 7 namespaces gets random unit vectors filed under the real
model's name and width (as scripts/bench_vectors.py fakes them: embedding would take hours), is
exported once, and the file is imported into a fresh SQLite store and into a fresh database on a
throwaway PostgreSQL server with pgvector (tests/pgserver.py), each store's model enabled first.
Prints seconds and records per second of each import (`MemoryStore.import_file`, as `memstore
import` calls it), and checks that nothing is left pending.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sqlalchemy import create_engine, text

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memstore import MemoryStore, vector_index  # noqa: E402
from memstore.db import write_transaction  # noqa: E402
from memstore.records import now_ms  # noqa: E402
from memstore.semantic.vectors import model_of, store_vectors  # noqa: E402
from tests.pgserver import start_temp_postgres  # noqa: E402


def build_export(folder: Path, size: int, model_dir: Path) -> Path:
    ids = [f"m{n:07d}" for n in range(size)]
    with MemoryStore(folder / "source.db") as store:
        store.add_many(
            {"id": memory_id, "namespace": f"ns{n % 7}", "text": f"memory number {n} about thing {n % 977}", "timestamp": n, "importance": 1 + n % 5}
            for n, memory_id in enumerate(ids)
        )
        store.enable_embeddings(model_dir)
        with write_transaction(store.engine) as conn:
            model = model_of(conn)
            vector_index.drop(conn)
            vectors = np.random.default_rng(1).standard_normal((size, model.dim)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            store_vectors(conn, model, ids, [vector.astype("<f4").tobytes() for vector in vectors], now_ms())
        exported = folder / "export.jsonl"
        with exported.open("w") as stream:
            store.export(stream, None, with_vectors=True)
    return exported


def time_import(location: str, exported: Path, model_dir: Path, size: int) -> None:
    with MemoryStore(location) as store:
        store.enable_embeddings(model_dir)
        start = time.perf_counter()
        with exported.open("rb") as stream:
            added = store.import_file(stream, exported.name).added
        seconds = time.perf_counter() - start
        status = store.embedding_status()
    assert added == size and status["pending"] == 0, (added, status)
    backend = "postgresql" if location.startswith("postgresql") else "sqlite"
    print(f"{backend:<10}  {size:,} records  {seconds:6.1f} s  {size / seconds:7,.0f} records/s  search: {status['search']}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--model-dir", type=Path, default=REPO / ".model-cache" / "minilm")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memstore-bench-import-") as folder:
        exported = build_export(Path(folder), args.size, args.model_dir)
        print(f"export: {exported.stat().st_size / 1e6:,.0f} MB", flush=True)
        time_import(str(Path(folder) / "target.db"), exported, args.model_dir, args.size)
        server = start_temp_postgres()
        try:
            with create_engine(server.url(), isolation_level="AUTOCOMMIT").connect() as conn:
                conn.execute(text("CREATE DATABASE bench_import"))
            time_import(server.url("bench_import"), exported, args.model_dir, args.size)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
