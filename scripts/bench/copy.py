"""The move scenario of the bench (``--only copy``; also part of ``--only all``): `memstore copy`
of a whole store between backends, as `memstore.transfer.copy_into` (what the command calls).

The source is the store of tests/copy_history.py at ``--copy-size`` memories (default 100,000):
memories over 10 namespaces, a consolidation run, a forget, updates, a supersede, a restore, writes
after the last run, and a random unit vector of the real model (``--model-dir``, 384 dimensions)
for every memory. It is copied SQLite -> PostgreSQL, PostgreSQL -> SQLite and SQLite -> SQLite
(a throwaway PostgreSQL server with pgvector, tests/pgserver.py), each once, into a new target.
Reported per direction: the wall time of the copy, how much of it went to the tables (every row
read and written) and how much to the derived data after them (the vector index above all: on
PostgreSQL an HNSW graph built over the live vectors), and the rate, memories (live + archived)
per second of the whole copy.

    .venv/bin/python -m scripts.bench --only copy [--copy-size 100000]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from memstore import MemoryStore
from memstore.transfer import copy_into
from tests import copy_history


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def timed_copy(source: str, target: str) -> dict:
    tables_done: list[float] = []
    with MemoryStore(source, create=False) as store:
        started = time.perf_counter()
        report = copy_into(store.engine, target, progress=lambda table, rows: tables_done.append(time.perf_counter()))
        total = time.perf_counter() - started
    moved = report.rows["memories"] + report.rows["memory_archive"]
    return {
        "seconds": round(total, 2), "tables_seconds": round(tables_done[-1] - started, 2),
        "derived_seconds": round(total - (tables_done[-1] - started), 2), "memories": moved,
        "rate_per_s": round(moved / total), "rows": report.rows, "vector_search": report.vector_search,
    }  # fmt: skip


def run_copy(args, work: Path) -> dict:
    from sqlalchemy import create_engine, text

    from tests.pgserver import start_temp_postgres

    size = args.copy_size
    source = work / "copy-source.db"
    log(f"== copy: building the {size:,} store with history and vectors ...")
    copy_history.build(source, size, args.model_dir, args.seed)
    out: dict = {"size": size}
    server = start_temp_postgres()
    try:
        admin = create_engine(server.url(), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text("CREATE DATABASE bench_copy"))
        admin.dispose()
        pg = server.url("bench_copy")
        for name, (src, dst) in {
            "sqlite_to_postgresql": (str(source), pg),
            "postgresql_to_sqlite": (pg, str(work / "copy-from-pg.db")),
            "sqlite_to_sqlite": (str(source), str(work / "copy-from-sqlite.db")),
        }.items():
            log(f"== copy: {name} ...")
            out[name] = timed_copy(src, dst)
            figures = out[name]
            log(f"  {figures['seconds']} s ({figures['tables_seconds']} s tables, {figures['derived_seconds']} s derived), "
                f"{figures['rate_per_s']:,} memories/s, vector search {figures['vector_search']}")  # fmt: skip
    finally:
        server.stop()
    return out


def copy_rows(copy: dict) -> list[dict]:
    """The rows the bench prints for this scenario."""
    rows = []
    for name in ("sqlite_to_postgresql", "postgresql_to_sqlite", "sqlite_to_sqlite"):
        figures = copy[name]
        rows.append(dict(scenario=f"copy {name.replace('_to_', ' -> ').replace('postgresql', 'PG')} ({figures['rate_per_s']:,}/s; "
                                  f"derived {figures['derived_seconds']} s)", size=copy["size"], memstore=figures["seconds"],
                         baseline=None, ratio=None, ratio_def="", target="-", met=None))  # fmt: skip
    return rows
