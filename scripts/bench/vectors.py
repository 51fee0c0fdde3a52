"""The vector-search scenarios of the bench (``--only vectors``; also part of ``--only all``).

Stores are generated as the rest of the bench generates them (scripts/data.py), their
memories spread over a number of namespaces, and given **random unit vectors** filed under the
real model's name (the offline model, ``--model-dir``): what a search costs does not depend on the
vectors' values, and embedding a million memories would take hours on two cores. Queries are
embedded by the real model. Recall quality is measured by scripts/eval_recall.py, not here.

* ``recall_process``: ``memstore --db STORE recall QUERY --no-touch`` as a process (the way an
  agent's per-turn hook calls it), default mode (hybrid, the store having vectors) against
  ``--mode lexical``, interleaved, ``--process-runs`` times each (default 7), median wall time and
  peak resident memory of the process (``wait4``). Stores: 1,000 memories in one namespace and in
  10 (namespaces of 100), 100,000 in one and in 1,000 (namespaces of 100); the query goes to the
  store's first namespace. Targets: at 100,000 hybrid <= 2.5 x lexical; a recall in a namespace of
  100 of the 100,000 store <= 1.25 x the same on the 1,000 store; the hybrid process peaks <= 300 MB.
* ``long_lived``: one process (one ``MemoryStore``), ``recall(q, 5, namespace, touch=False)``
  hybrid, p50 over ``--queries`` queries (default 200) in namespaces drawn at random, against the
  p50 of embedding the query alone (``store.embeddings.query_vector``). The first search of a
  namespace runs in the database, later ones from that namespace's vectors in memory. Stores:
  100,000 in one namespace (target <= 20 ms over the embedding), 1,000,000 over 1,000 namespaces
  (target <= 50 ms over the embedding), 1,000,000 in one namespace (for reference: an exact search
  over a million vectors). On PostgreSQL with pgvector (a throwaway server, tests/pgserver.py):
  100,000 in one namespace and over 1,000, and the process scenario at 100,000.
* ``sync``: ``embeddings sync`` of ``--sync-size`` real conversation turns (LongMemEval's, from the
  slice the tests keep in tests/data/longmemeval; default 2,000, the slice's 1,946 and no more)
  against the bare embedder on the same texts sorted by length, in one run: the rate sync reaches of
  the embedder's best (target >= 0.85). The bare embedder in arrival order is shown for reference.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from memstore import MemoryStore
from memstore.vectors import vector_file
from memstore.vectors.embedder import Embedder
from scripts import REPO, module_command
from scripts.data import add_random_vectors, generate_records

from .common import MEMSTORE_BIN


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build_store(location: str, size: int, namespaces: int, model_dir: Path, seed: int) -> None:
    """`size` generated memories over `namespaces` namespaces (ns0, ns1, ...), with random unit
    vectors of the real model; the vector index built once, over all of them."""
    records, _ = generate_records(size, seed)
    for n, record in enumerate(records):
        record["namespace"] = f"ns{n % namespaces}"
    with MemoryStore(location) as store:
        for start in range(0, size, 50_000):
            store.add_many(records[start : start + 50_000])
        add_random_vectors(store, [r["id"] for r in records], model_dir, seed)
        # Where search reads vector files, `embeddings sync` writes them after its commits; these
        # vectors were stored directly, so they are written here, as the index is just above.
        vector_file.bring_up_to_date(store.engine, {record["namespace"] for record in records})
        assert store.embedding_status()["pending"] == 0


# The process scenario runs from a small launcher process of its own (launcher.py): Linux keeps a
# process's peak resident memory across fork and exec, so a command forked from this process (which
# holds whole stores by then) would report this process's peak as its own.


def bench_process(location: str, query: str, runs: int) -> dict:
    """`memstore recall` as a process, hybrid (the default) and lexical interleaved: median wall
    seconds of each, and the hybrid process's peak resident MB (wait4)."""
    base = [str(MEMSTORE_BIN), "--db", location, "recall", query, "-n", "ns0", "--no-touch"]
    done = subprocess.run(module_command("scripts.bench.launcher", json.dumps(base), str(runs)), capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-800:])
    return json.loads(done.stdout)


def bench_long_lived(location: str, namespaces: int, queries: list[str], seed: int) -> dict:
    rng = random.Random(seed)
    hybrid, embed = [], []
    with MemoryStore(location) as store:
        store.recall(queries[0], 5, "ns0", touch=False)  # loads the query model once
        for query in queries:
            namespace = f"ns{rng.randrange(namespaces)}"
            t = time.perf_counter()
            store.embeddings.query_vector(query)
            embed.append(time.perf_counter() - t)
            t = time.perf_counter()
            store.recall(query, 5, namespace, touch=False)
            hybrid.append(time.perf_counter() - t)
        search = store.embedding_status()["search"]
    return {"hybrid_p50": statistics.median(hybrid), "embed_p50": statistics.median(embed), "search": search,
            "hybrid_p95": sorted(hybrid)[int(0.95 * (len(hybrid) - 1))]}  # fmt: skip


def remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(f"{path}-vectors", ignore_errors=True)  # the vector files of a Python without sqlite-vec


def run_vectors(args, work: Path, queries: list[str], parts: tuple[str, ...] | None = None) -> dict:
    """Every scenario of the module's docstring, or only `parts` of the last two ("sync", "beside_writers")."""
    query = queries[0]
    out: dict = {"process": [], "long_lived": [], "postgresql": {}}
    if parts is not None:
        from .beside_writers import bench_beside_writers

        scenarios = {"sync": lambda: bench_sync(args, work), "beside_writers": lambda: bench_beside_writers(args, work, queries)}
        return {**out, **{part: scenarios[part]() for part in parts}}
    big = args.vectors_size
    for size, namespaces in ((1_000, 1), (1_000, 10), (big, 1), (big, big // 100)):
        path = work / f"vectors-{size}-{namespaces}.db"
        log(f"== vectors: building {size:,} memories over {namespaces:,} namespace(s) ...")
        build_store(str(path), size, namespaces, args.model_dir, args.seed)
        figures = bench_process(str(path), query, args.process_runs)
        log(f"  process: hybrid {figures['hybrid']:.3f} s, lexical {figures['lexical']:.3f} s, hybrid peak {figures['hybrid_peak_mb']:.0f} MB")
        out["process"].append({"size": size, "namespaces": namespaces, **figures})
        with MemoryStore(str(path)) as opened:
            out["search"] = opened.embedding_status()["search"]
        log(f"  vector search runs in: {out['search']} (Python {sys.version.split()[0]} at {sys.executable})")
        if (size, namespaces) == (big, 1):
            figures = bench_long_lived(str(path), namespaces, queries, args.seed)
            log(f"  long-lived: hybrid p50 {figures['hybrid_p50'] * 1e3:.1f} ms, embedding {figures['embed_p50'] * 1e3:.1f} ms")
            out["long_lived"].append({"size": size, "namespaces": namespaces, **figures})
        remove(path)
    for namespaces in (1_000, 1):
        size = args.vectors_big
        path = work / f"vectors-{size}-{namespaces}.db"
        log(f"== vectors: building {size:,} memories over {namespaces:,} namespace(s) ...")
        build_store(str(path), size, namespaces, args.model_dir, args.seed)
        figures = bench_long_lived(str(path), namespaces, queries, args.seed)
        log(f"  long-lived: hybrid p50 {figures['hybrid_p50'] * 1e3:.1f} ms, embedding {figures['embed_p50'] * 1e3:.1f} ms")
        out["long_lived"].append({"size": size, "namespaces": namespaces, **figures})
        remove(path)
    out["postgresql"] = bench_postgresql(args, queries)
    out["sync"] = bench_sync(args, work)
    from .beside_writers import bench_beside_writers

    out["beside_writers"] = bench_beside_writers(args, work, queries)
    return out


def bench_sync(args, work: Path) -> dict:
    """`embeddings sync` against the bare embedder on the same texts, sorted by length and not: the
    three taken in turn, `--repeats` rounds, the median of each (a loaded machine slows them alike)."""
    from scripts.longmemeval import load

    memories, _ = load("slice")
    texts = [memory["text"] for memory in memories[: args.sync_size]]
    embedder = Embedder(args.model_dir)
    embedder.embed(["warm up"])  # the model loaded before anything is timed
    rounds: dict[str, list[float]] = {"embedder_sorted": [], "embedder_arrival": [], "sync": []}
    embedded = 0
    for round_number in range(max(1, args.repeats)):
        for name, ordered in (("embedder_sorted", sorted(texts, key=len)), ("embedder_arrival", texts)):
            t = time.perf_counter()
            for _ in embedder.embed_batches(ordered):
                pass
            rounds[name].append(time.perf_counter() - t)
        path = work / f"sync-{round_number}.db"
        with MemoryStore(str(path)) as store:
            store.add("warm up", id="warm")
            store.enable_embeddings(args.model_dir)
            store.sync_embeddings()  # one memory: loads the store's model before anything is timed
            store.add_many([{"id": f"t{n}", "text": text, "timestamp": n} for n, text in enumerate(texts)])
            t = time.perf_counter()
            embedded = store.sync_embeddings()["embedded"]
            rounds["sync"].append(time.perf_counter() - t)
        remove(path)
    timed: dict = {"size": len(texts), "rounds": len(rounds["sync"]), **{name: statistics.median(values) for name, values in rounds.items()}}
    log(f"  sync: {embedded:,} of {len(texts):,} in {timed['sync']:.1f} s; bare embedder sorted {timed['embedder_sorted']:.1f} s, "
        f"in arrival order {timed['embedder_arrival']:.1f} s (medians of {timed['rounds']})")
    return timed


def bench_postgresql(args, queries: list[str]) -> dict:
    from tests.pgserver import start_temp_postgres

    server = start_temp_postgres()
    try:
        from sqlalchemy import create_engine, text

        admin = create_engine(server.url(), isolation_level="AUTOCOMMIT")
        out: dict = {"long_lived": []}
        for namespaces in (1, args.vectors_size // 100):
            name = f"bench_{namespaces}"
            with admin.connect() as conn:
                conn.execute(text(f"CREATE DATABASE {name}"))
            url = server.url(name)
            log(f"== vectors on PostgreSQL: building {args.vectors_size:,} memories over {namespaces:,} namespace(s) ...")
            build_store(url, args.vectors_size, namespaces, args.model_dir, args.seed)
            figures = bench_long_lived(url, namespaces, queries, args.seed)
            log(f"  long-lived: hybrid p50 {figures['hybrid_p50'] * 1e3:.1f} ms, embedding {figures['embed_p50'] * 1e3:.1f} ms ({figures['search']})")
            out["long_lived"].append({"size": args.vectors_size, "namespaces": namespaces, **figures})
            if namespaces == 1:
                out["process"] = {"size": args.vectors_size, "namespaces": 1, **bench_process(url, queries[0], args.process_runs)}
        admin.dispose()
        return out
    finally:
        server.stop()


def vector_rows(vec: dict) -> list[dict]:
    """The rows the bench prints for these scenarios."""
    by = {(p["size"], p["namespaces"]): p for p in vec["process"]}
    rows = []
    for (size, namespaces), p in sorted(by.items()):
        ratio = p["hybrid"] / p["lexical"]
        rows.append(dict(scenario=f"recall process, hybrid vs lexical ({namespaces:,} ns)", size=size, memstore=p["hybrid"],
                         baseline=p["lexical"], ratio=ratio, ratio_def="(hybrid/lexical)",
                         target="<= 2.5 (at 100k)" if size >= 100_000 else "(for reference)",
                         met=ratio <= 2.5 if size >= 100_000 else None))  # fmt: skip
        rows.append(dict(scenario="  first hybrid process after the vectors were written", size=size, memstore=p["first_hybrid"],
                         baseline=p["hybrid"], ratio=p["first_hybrid"] / p["hybrid"], ratio_def="(first/median)",
                         target="(for reference)", met=None))  # fmt: skip
        rows.append(dict(scenario="  peak memory of the hybrid process (MB)", size=size, memstore=None, baseline=None,
                         ratio=p["hybrid_peak_mb"], ratio_def="MB", target="<= 300 MB", met=p["hybrid_peak_mb"] <= 300))  # fmt: skip
    small, big = by.get((1_000, 10)), max((p for p in vec["process"] if p["namespaces"] > 10), key=lambda p: p["size"], default=None)
    if small and big:
        ratio = big["hybrid"] / small["hybrid"]
        rows.append(dict(scenario="recall in a namespace of 100: big store vs 1k store", size=big["size"], memstore=big["hybrid"],
                         baseline=small["hybrid"], ratio=ratio, ratio_def="(100k/1k)", target="<= 1.25", met=ratio <= 1.25))  # fmt: skip
    for lived in vec["long_lived"]:
        over = lived["hybrid_p50"] - lived["embed_p50"]
        limit = 0.020 if lived["size"] <= 100_000 else 0.050 if lived["namespaces"] > 1 else None
        rows.append(dict(scenario=f"hybrid p50 long-lived ({lived['namespaces']:,} ns)", size=lived["size"], memstore=lived["hybrid_p50"],
                         baseline=lived["embed_p50"], ratio=over, ratio_def="s over embed",
                         target=f"<= {limit * 1e3:.0f} ms over embed" if limit else "(for reference)",
                         met=over <= limit if limit else None))  # fmt: skip
    pg = vec.get("postgresql") or {}
    for lived in pg.get("long_lived", []):
        rows.append(dict(scenario=f"PostgreSQL+pgvector hybrid p50 ({lived['namespaces']:,} ns)", size=lived["size"],
                         memstore=lived["hybrid_p50"], baseline=lived["embed_p50"], ratio=lived["hybrid_p50"] - lived["embed_p50"],
                         ratio_def="s over embed", target="(for reference)", met=None))  # fmt: skip
    if beside := vec.get("beside_writers"):
        from .beside_writers import beside_writers_rows

        rows += beside_writers_rows(beside)
    if sync := vec.get("sync"):
        rate = sync["embedder_sorted"] / sync["sync"]  # sync's texts per second over the sorted embedder's
        rows.append(dict(scenario="embeddings sync vs bare embedder (texts sorted by length)", size=sync["size"], memstore=sync["sync"],
                         baseline=sync["embedder_sorted"], ratio=rate, ratio_def="(rate/embedder's)", target=">= 0.85",
                         met=rate >= 0.85))  # fmt: skip
        rows.append(dict(scenario="  bare embedder, arrival order vs sorted", size=sync["size"], memstore=sync["embedder_arrival"],
                         baseline=sync["embedder_sorted"], ratio=sync["embedder_arrival"] / sync["embedder_sorted"],
                         ratio_def="(arrival/sorted)", target="(for reference)", met=None))  # fmt: skip
    if "process" in pg:
        p = pg["process"]
        rows.append(dict(scenario="PostgreSQL recall process, hybrid vs lexical", size=p["size"], memstore=p["hybrid"],
                         baseline=p["lexical"], ratio=p["hybrid"] / p["lexical"], ratio_def="(hybrid/lexical)",
                         target="(for reference)", met=None))  # fmt: skip
    return rows
