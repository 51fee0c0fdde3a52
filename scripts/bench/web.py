"""The web page scenario of the bench (``--only web``; also part of ``--only all``): what
`memstore web`'s overview and search pages cost over the `MemoryStore` reads they make.

The store: the bench's generated memories (scripts/data.py) over ``--web-namespaces``
namespaces (default 1,000; the first is ``default``, the others ``ns1`` ...; ``/`` details the largest),
at each of ``--web-sizes`` (default 100,000 and 1,000,000; ``--quick``: 100,000). 2 % carry a
lifetime ending within two weeks. It is given a history, as a store is after some nightly jobs: a
first consolidation of every namespace at 90 % of a namespace's share (one run), then five rounds of
1,000 new writes and an incremental consolidation, 50 lifecycle runs (forget, update, supersede)
in namespaces drawn at random, and 100 open contradiction flags (written directly: raising them
needs embeddings, and the page only counts and lists them). Built stores are kept in
``--web-cache DIR`` when given, and reused by later runs (the pages only read, and search does not
touch), else built in the work directory each run.

Timed server-side, in one process: the ASGI app `memstore web` serves (``pages.create_app``
behind ``guard.Guard``, the token as a bearer header, no Host check) called directly with a
request scope, from the call until the response body is sent (routing, the token check, the
page's reads, the template, the security headers); no HTTP parsing, no socket. Against it, in the
same run and interleaved with it (the order turning each round):

* ``/`` (the overview, ``--web-runs`` times, default 50) against the reads ``pages.overview`` makes,
  made alone: ``store.scoped(None).overview`` (memstore.overview: the largest namespaces and the store's totals, the largest namespace's detail, the
  run series) in one read transaction, then
  ``store.runs(10)``. Targets: p50 <= 2 x the reads' p50 (at 100,000 and 1,000,000), and p50 <= 100 ms
  at 1,000,000. Each read's own p50 is reported, for reference.
* ``/memories?q=Q&namespace=NS`` (``--web-runs`` queries, default 50, the first of the bench's Zipf
  mix, whose common words find something in a namespace of 1,000, each in a namespace drawn at random) against ``store.recall(Q, 20, NS, touch=False)``, what the page
  calls to answer it. Target: p50 <= 2 x recall's p50 (at 100,000 and 1,000,000). Many of these
  queries find nothing in their namespace (how many is reported): the page then also checks that the
  namespace exists (``namespace_known``, an EXISTS) and reads which others hold the words (``namespaces_matching``, its hint), both inside
  the page's time and not in the baseline; the hint's read is also timed apart, for reference, as
  are the namespaces its form suggests (``store.scoped(None).suggested_namespaces``).

For reference, the same two pages through a real server: ``memstore web`` as a process (uvicorn on
loopback), fetched with httpx from this process, wall time at the client (``--web-runs`` each).

If ``pages.overview`` changes what it reads, ``overview_reads`` below must follow it.

    .venv/bin/python -m scripts.bench --only web [--quick] [--web-sizes 100000 1000000] [--web-cache DIR]
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

from sqlalchemy import select

from memstore import MemoryStore
from memstore.db import read_transaction, write_transaction
from memstore.records import now_ms
from memstore.schema import contradiction_flags, memories
from scripts.data import DAY_MS, generate_records

from .common import MEMSTORE_BIN
TOKEN = "bench-web-token-0123456789abcdef"
COOKIE_PORT = 1
SEARCH_K = 20  # what the search page asks recall for (web.search.SEARCH_K)
HINT_NAMES = 3  # how many other namespaces an empty answer's hint names (web.search.HINT_NAMES)
BUILD_VERSION = 1  # bump when build_store changes what it builds, so cached stores are rebuilt
HISTORY_ROUNDS, LIFECYCLE_RUNS, OPEN_FLAGS = 5, 50, 100


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def namespace_name(n: int) -> str:
    return "default" if n == 0 else f"ns{n}"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(share * (len(ordered) - 1) + 0.5), len(ordered) - 1)]


# -- the store ----------------------------------------------------------------------------------------


def build_store(path: Path, size: int, namespaces: int, seed: int) -> dict:
    """The store described in the module's docstring; returns what it holds."""
    records, _ = generate_records(size, seed)
    rng = random.Random(seed + 41)
    now = now_ms()
    for n, record in enumerate(records):
        record["namespace"] = namespace_name(n % namespaces)
        if rng.random() < 0.02:
            record["expires_at"] = now + rng.randrange(DAY_MS, 14 * DAY_MS)
    capacity = max(size // namespaces * 9 // 10, 1)
    with MemoryStore(path) as store:
        for start in range(0, size, 50_000):
            store.add_many(records[start : start + 50_000])
        log(f"  {size:,} added; consolidating every namespace at capacity {capacity:,} ...")
        store.consolidate(capacity, namespace=None)
        for round_ in range(HISTORY_ROUNDS):
            writes = []
            for i in range(1_000):
                base = records[rng.randrange(size)]
                repeat = rng.random() < 0.3
                writes.append({"text": base["text"] if repeat else f"{base['text']} (round {round_}, note {i})",
                               "namespace": namespace_name(rng.randrange(namespaces)), "importance": rng.randint(1, 5)})  # fmt: skip
            store.add_many(writes)
            store.consolidate(capacity, namespace=None)
        log(f"  {HISTORY_ROUNDS} rounds of 1,000 writes and a consolidation; {LIFECYCLE_RUNS} lifecycle runs ...")
        for i in range(LIFECYCLE_RUNS):
            namespace = namespace_name(rng.randrange(namespaces))
            with read_transaction(store.engine) as conn:
                live = list(conn.execute(select(memories.c.id).where(memories.c.namespace == namespace)
                                         .order_by(memories.c.id).limit(3)).scalars())  # fmt: skip
            if len(live) < 3:
                continue
            if i % 3 == 0:
                store.forget([live[0]], namespace=namespace)
            elif i % 3 == 1:
                store.update(live[0], text=f"corrected in the bench's history, run {i}", namespace=namespace)
            else:
                store.supersede(live[0], by=live[1], namespace=namespace)
        run_id = store.runs(1)[0]["id"]
        flags = []
        for i in range(OPEN_FLAGS):
            namespace = namespace_name(rng.randrange(namespaces))
            with read_transaction(store.engine) as conn:
                pair = list(conn.execute(select(memories.c.id).where(memories.c.namespace == namespace)
                                         .order_by(memories.c.id.desc()).limit(2)).scalars())  # fmt: skip
            if len(pair) == 2 and all((pair[1], pair[0]) != (f["older_id"], f["newer_id"]) for f in flags):
                flags.append({"namespace": namespace, "older_id": pair[1], "newer_id": pair[0], "similarity": 0.9,
                              "reason": "bench: a pair written as flagged", "status": "open", "run_id": run_id, "flagged_at": now})  # fmt: skip
        with write_transaction(store.engine) as conn:
            conn.execute(contradiction_flags.insert(), flags)
        live, archived, runs = store.count(), store.count(archived=True), len(store.runs())
    return {"size": size, "namespaces": namespaces, "capacity": capacity, "live": live, "archived": archived,
            "runs": runs, "open_flags": len(flags)}  # fmt: skip


def stored(work: Path, cache: Path | None, size: int, namespaces: int, seed: int) -> tuple[Path, dict]:
    """The built store for these parameters: from the cache when it holds one, else built (into the
    cache when given). A marker file written after the build says it finished."""
    import json

    folder = cache if cache is not None else work
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"web-{size}-{namespaces}ns-seed{seed}-v{BUILD_VERSION}.db"
    marker = Path(f"{path}.built.json")
    if cache is not None and marker.exists() and path.exists():
        log(f"== web: reusing the built store {path}")
        return path, json.loads(marker.read_text())
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    log(f"== web: building {size:,} memories over {namespaces:,} namespaces in {path} ...")
    started = time.perf_counter()
    info = build_store(path, size, namespaces, seed)
    info["build_seconds"] = round(time.perf_counter() - started, 1)
    marker.write_text(json.dumps(info) + "\n")
    log(f"  built in {info['build_seconds']} s: {info}")
    return path, info


# -- the two sides ----------------------------------------------------------------------------------


def guarded_app(store: MemoryStore):
    from memstore.web.guard import Guard
    from memstore.web.pages import create_app

    return Guard(create_app(store, token=TOKEN), token=TOKEN, allowed_hosts=None, cookie_port=COOKIE_PORT)


async def asgi_get(app, path: str, query: str = "") -> tuple[float, int, int]:
    """One GET through the ASGI app: (seconds from the call until the body is sent, status, body bytes)."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": query.encode(), "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8767"), (b"authorization", f"Bearer {TOKEN}".encode())],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8767),
    }  # fmt: skip
    sent: dict = {"status": None, "bytes": 0}

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            sent["status"] = message["status"]
        elif message["type"] == "http.response.body":
            sent["bytes"] += len(message.get("body", b""))

    start = time.perf_counter()
    await app(scope, receive, send)
    return time.perf_counter() - start, sent["status"], sent["bytes"]


def overview_reads(store: MemoryStore, parts: dict[str, list[float]] | None = None) -> float:
    """The reads pages.overview makes for `/` (no namespace asked for: the largest namespaces'
    figures and the store's totals, the largest namespace's detail and staleness, the run series:
    `store.scoped(None).overview`, one read transaction; then `runs(10)`), alone; seconds. With
    `parts`, each read's own time."""
    view = store.scoped(None)
    clock = time.perf_counter
    start = clock()
    view.overview(None)
    t1 = clock()
    view.runs(10)
    end = clock()
    if parts is not None:
        for name, seconds in (("scoped.overview", t1 - start), ("runs(10)", end - t1)):
            parts.setdefault(name, []).append(seconds)
    return end - start


def namespace_list(store: MemoryStore) -> list[str]:
    """What the search page reads to suggest namespaces (`ScopedStore.suggested_namespaces`)."""
    return store.scoped(None).suggested_namespaces()


def bench_size(path: Path, info: dict, queries: list[str], args) -> dict:
    rng = random.Random(args.seed + 43)
    searches = [(query, namespace_name(rng.randrange(info["namespaces"]))) for query in queries[: args.web_runs]]
    loop = asyncio.new_event_loop()
    out: dict = {**info}
    with MemoryStore(path) as store:
        app = guarded_app(store)
        # Warm up: templates compiled, the page cache holding what both sides read.
        for _ in range(3):
            elapsed, status, size = loop.run_until_complete(asgi_get(app, "/"))
            assert status == 200, status
            overview_reads(store)
        for query, namespace in searches[:5]:
            store.recall(query, SEARCH_K, namespace, touch=False)
            loop.run_until_complete(asgi_get(app, "/memories", urlencode({"q": query, "namespace": namespace})))
        out["overview_bytes"] = size

        page, reads, parts = [], [], {}
        for n in range(args.web_runs):
            steps = [lambda: page.append(loop.run_until_complete(asgi_get(app, "/"))[0]),
                     lambda: reads.append(overview_reads(store, parts))]  # fmt: skip
            for step in steps if n % 2 == 0 else reversed(steps):
                step()
        out["overview"] = {"page": page, "reads": reads, "parts": {name: statistics.median(xs) for name, xs in parts.items()}}
        log(f"  /: p50 {statistics.median(page) * 1e3:.1f} ms, its reads alone {statistics.median(reads) * 1e3:.1f} ms "
            f"({', '.join(f'{k} {v * 1e3:.1f}' for k, v in out['overview']['parts'].items())} ms)")  # fmt: skip

        page, recall, names, found, sizes, hints, empty = [], [], [], 0, [], [], 0
        for n, (query, namespace) in enumerate(searches):
            def call_page() -> None:
                elapsed, status, size = loop.run_until_complete(asgi_get(app, "/memories", urlencode({"q": query, "namespace": namespace})))
                assert status == 200, status
                page.append(elapsed)
                sizes.append(size)

            def call_recall() -> None:
                nonlocal found, empty
                start = time.perf_counter()
                rows = store.recall(query, SEARCH_K, namespace, touch=False)
                recall.append(time.perf_counter() - start)
                found += len(rows)
                if not rows:
                    empty += 1
                    start = time.perf_counter()
                    store.scoped(None).namespaces_matching(query, namespace, limit=HINT_NAMES)
                    hints.append(time.perf_counter() - start)

            steps = [call_page, call_recall]
            for step in steps if n % 2 == 0 else reversed(steps):
                step()
            if n % 4 == 0:
                start = time.perf_counter()
                namespace_list(store)
                names.append(time.perf_counter() - start)
        out["search"] = {"page": page, "recall": recall, "namespaces": names, "rows_found": found, "empty_answers": empty,
                         "hints": hints, "page_bytes_p50": statistics.median(sizes), "queries": len(searches)}  # fmt: skip
        hint = f", the hint's read {statistics.median(hints) * 1e3:.1f} ms" if hints else ""
        log(f"  search: page p50 {statistics.median(page) * 1e3:.1f} ms, recall alone {statistics.median(recall) * 1e3:.1f} ms, "
            f"its namespace list {statistics.median(names) * 1e3:.1f} ms{hint}; {found / len(searches):.1f} rows a query, "
            f"{empty} of {len(searches)} found nothing")  # fmt: skip
    loop.close()
    out["server"] = bench_server(path, searches, args.web_runs)
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def bench_server(path: Path, searches: list[tuple[str, str]], runs: int) -> dict:
    """`memstore web` as a process (uvicorn on loopback), the pages fetched with httpx: wall time at the client."""
    import httpx

    port = free_port()
    env = dict(os.environ, MEMSTORE_WEB_TOKEN=TOKEN)
    process = subprocess.Popen([str(MEMSTORE_BIN), "--db", str(path), "web", "--listen", f"127.0.0.1:{port}"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)  # fmt: skip
    try:
        process.stdout.readline()  # the address: printed once the store is open, just before uvicorn starts
        headers = {"Authorization": f"Bearer {TOKEN}", "Host": f"127.0.0.1:{port}"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=60) as client:
            for _ in range(100):
                try:
                    client.get("/")
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            overview, search = [], []
            for n in range(runs):
                start = time.perf_counter()
                response = client.get("/")
                overview.append(time.perf_counter() - start)
                assert response.status_code == 200, response.status_code
                query, namespace = searches[n % len(searches)]
                start = time.perf_counter()
                response = client.get("/memories", params={"q": query, "namespace": namespace})
                search.append(time.perf_counter() - start)
                assert response.status_code == 200, response.status_code
    finally:
        process.terminate()
        process.wait(timeout=30)
    log(f"  through memstore web (uvicorn, httpx): / p50 {statistics.median(overview) * 1e3:.1f} ms, "
        f"search p50 {statistics.median(search) * 1e3:.1f} ms")  # fmt: skip
    return {"overview": overview, "search": search}


def run_web(args, work: Path, queries: list[str]) -> dict:
    sizes = [100_000] if args.quick else sorted(args.web_sizes)
    out: dict = {"sizes": []}
    for size in sizes:
        path, info = stored(work, args.web_cache, size, args.web_namespaces, args.seed)
        log(f"== web: {size:,} memories over {args.web_namespaces:,} namespaces ...")
        out["sizes"].append(bench_size(path, info, queries, args))
        if args.web_cache is None:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            shutil.rmtree(f"{path}-vectors", ignore_errors=True)
    return out


def web_rows(web: dict) -> list[dict]:
    """The rows the bench prints for this scenario."""
    med = statistics.median
    rows = []
    for figures in web["sizes"]:
        size, at_1m = figures["size"], figures["size"] == 1_000_000
        judged = size in (100_000, 1_000_000)  # the sizes the ratio targets are held at
        o, s = figures["overview"], figures["search"]
        page, reads = med(o["page"]), med(o["reads"])
        ratio = page / reads
        rows.append(dict(scenario=f"web / p50 vs its reads ({figures['namespaces']:,} ns)", size=size, memstore=page, baseline=reads,
                         ratio=ratio, ratio_def="page/reads", target="<= 2", met=ratio <= 2 if judged else None))
        rows.append(dict(scenario="  web / p50 server-side", size=size, memstore=page, baseline=None, ratio=None, ratio_def="",
                         target="<= 100 ms (at 1M)", met=page <= 0.100 if at_1m else None))
        rows.append(dict(scenario="  p95 of the same", size=size, memstore=percentile(o["page"], 0.95), baseline=percentile(o["reads"], 0.95),
                         ratio=None, ratio_def="", target="(for reference)", met=None))
        for name, seconds in o["parts"].items():
            rows.append(dict(scenario=f"  read: {name}", size=size, memstore=seconds, baseline=None, ratio=None, ratio_def="",
                             target="(for reference)", met=None))
        page, recall = med(s["page"]), med(s["recall"])
        ratio = page / recall
        rows.append(dict(scenario="web search p50 vs recall(q, 20, ns)", size=size, memstore=page, baseline=recall,
                         ratio=ratio, ratio_def="page/recall", target="<= 2", met=ratio <= 2 if judged else None))
        rows.append(dict(scenario="  p95 of the same", size=size, memstore=percentile(s["page"], 0.95), baseline=percentile(s["recall"], 0.95),
                         ratio=None, ratio_def="", target="(for reference)", met=None))
        rows.append(dict(scenario="  read: the page's namespace list", size=size, memstore=med(s["namespaces"]), baseline=None,
                         ratio=None, ratio_def="", target="(for reference)", met=None))
        if s.get("hints"):
            rows.append(dict(scenario=f"  read: the hint ({s['empty_answers']} of {s['queries']} found nothing)", size=size,
                             memstore=med(s["hints"]), baseline=None, ratio=None, ratio_def="", target="(for reference)", met=None))
        server = figures.get("server")
        if server:
            rows.append(dict(scenario="  through memstore web + httpx: / p50", size=size, memstore=med(server["overview"]), baseline=None,
                             ratio=None, ratio_def="", target="(for reference)", met=None))
            rows.append(dict(scenario="  through memstore web + httpx: search p50", size=size, memstore=med(server["search"]),
                             baseline=None, ratio=None, ratio_def="", target="(for reference)", met=None))
    return rows  # fmt: skip
