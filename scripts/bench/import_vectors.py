"""Time `import` of an `export --all-namespaces --with-vectors` file into SQLite and PostgreSQL.

    .venv/bin/python -m scripts.bench.import_vectors [--size 100000] [--model-dir .model-cache/minilm]

A SQLite store of `--size` generated memories (scripts/data.py) over 7 namespaces gets random unit
vectors filed under the real model's name and width (``add_random_vectors``, as the bench's vector
scenarios fake them: embedding would take hours), is exported once, and the file is imported into
a fresh SQLite store and into a fresh database on a throwaway PostgreSQL server with pgvector
(tests/pgserver.py), each store's model enabled first.
Prints seconds and records per second of each import (`MemoryStore.import_from("memstore", ...)`, as `memstore
import` calls it), and checks that nothing is left pending.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from sqlalchemy import create_engine, text

from memstore import MemoryStore
from scripts import REPO
from scripts.data import add_random_vectors, generate_records
from tests.pgserver import start_temp_postgres


def build_export(folder: Path, size: int, model_dir: Path, seed: int = 1) -> Path:
    records, _ = generate_records(size, seed)
    for n, record in enumerate(records):
        record["namespace"] = f"ns{n % 7}"
    with MemoryStore(folder / "source.db") as store:
        store.add_many(records)
        # The index is not needed: the vectors are only exported.
        add_random_vectors(store, [r["id"] for r in records], model_dir, seed, rebuild_index=False)
        exported = folder / "export.jsonl"
        with exported.open("w") as stream:
            store.export(stream, None, with_vectors=True)
    return exported


def time_import(location: str, exported: Path, model_dir: Path, size: int) -> None:
    with MemoryStore(location) as store:
        store.enable_embeddings(model_dir)
        start = time.perf_counter()
        with exported.open("rb") as stream:
            added = store.import_from("memstore", stream, name=exported.name).added
        seconds = time.perf_counter() - start
        status = store.embedding_status()
    assert added == size and status["pending"] == 0, (added, status)
    backend = "postgresql" if location.startswith("postgresql") else "sqlite"
    print(f"{backend:<10}  {size:,} records  {seconds:6.1f} s  {size / seconds:7,.0f} records/s  search: {status['search']}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m scripts.bench.import_vectors", description=__doc__.splitlines()[0])
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
