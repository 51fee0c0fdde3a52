"""The probe's table of probes and its command line: which probes on which backends, running them
(the backends side by side), the table and the JSON (see the package's docstring)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import scripts.probe
from scripts import REPO

from . import inputs, runs, web_doors
from . import listeners as http
from . import sources, vector_files
from .common import Backend, Tally

KILLED, CONCURRENT, DISK, BAD = "killed run", "concurrent runs", "full disk", "bad input"


@dataclass
class Ctx:
    """What a probe gets: its backend, the prepared stores, a work dir, the trial count, the PG admin URL."""

    backend: Backend
    bases: runs.Bases
    work: Path
    trials: int
    pg_url: str | None

    def copy(self, label: str, base: str | None = None) -> str:
        return self.backend.clone(base or self.bases.synced, label)


BOTH, SQLITE, PG = ("SQLite", "PostgreSQL"), ("SQLite",), ("PostgreSQL",)

# name: (kind, what was tried, backends, the probe). One function per probe kind, in its module.
# The listeners' token and Host checks, `--ttl` parsing and the targets of `export -o` do not touch
# the database, so they run on SQLite only; a SQLite path has no password, so that one is PG's;
# torture's full disk is SQLite's (a full disk on a PostgreSQL server is the server's to report).
PROBES: dict[str, tuple[str, str, tuple[str, ...], Callable[[Ctx, Tally], list[Tally] | None]]] = {
    "kill-sync": (KILLED, "kill -9 during `embeddings sync`", BOTH, lambda c, t: runs.probe_kill_sync(t, c.bases, c.trials)),
    "kill-import": (KILLED, "kill -9 during `import` of a file with vectors", BOTH, lambda c, t: runs.probe_kill_import(t, c.bases, c.trials)),
    "kill-maintain": (KILLED, "kill -9 during `maintain` (every phase)", BOTH, lambda c, t: runs.probe_kill_maintain(t, c.bases, c.trials)),
    "kill-restore": (KILLED, "kill -9 during `restore` of a run", BOTH, lambda c, t: runs.probe_kill_restore(t, c.bases, c.trials)),
    "maintains": (CONCURRENT, "4 `maintain`s started at once", BOTH, lambda c, t: runs.probe_maintains_at_once(t, c.bases, c.trials)),
    "writers": (CONCURRENT, "3 writer processes beside a `maintain` loop", BOTH,
                lambda c, t: runs.probe_writers_beside_maintain(t, c.bases, c.trials)),
    "http-clients": (CONCURRENT, "MCP over HTTP, 4 clients beside a `maintain` loop", BOTH,
                     lambda c, t: runs.probe_http_clients_beside_maintain(t, c.bases, c.trials)),
    "langgraph-ttl": (CONCURRENT, "LangGraph puts with TTL, 3 processes x 3 threads, sweepers, `maintain` loop", BOTH,
                      lambda c, t: runs.probe_langgraph_ttl(t, c.bases, c.trials)),
    "disk-full": (DISK, "the job on a disk that fills up halfway", SQLITE, lambda c, t: runs.probe_full_disk(t, c.bases, min(c.trials, 2))),
    "tokens": (BAD, "token variants: missing, wrong, Basic, prefix, query string, cookie, scheme case, spaces; no token off loopback",
               SQLITE, lambda c, t: http.probe_tokens(t, c.work, c.copy("tokens"))),
    "rebinding": (BAD, "Host/Origin rebinding on 127.0.0.1, 127.0.0.2, 127.9.8.7, localhost and 3 spellings of ::1", SQLITE,
                  lambda c, t: http.probe_rebinding(t, c.work, c.copy("rebinding"))),
    "garbage": (BAD, "raw JSON-RPC garbage over HTTP and stdio, 50 MB bodies", BOTH,
                lambda c, t: http.probe_garbage(t, c.work, c.backend, c.copy("garbage"))),
    "namespaces": (BAD, "remember/show/update/forget(id=…) of ids live, archived, nowhere in another namespace", BOTH,
                   lambda c, t: http.probe_other_namespaces(t, c.work, c.backend, c.copy("scoped"))),
    "web": (BAD, "`memstore web --namespace a`: token variants, rebinding Host, no form field, b's ids and runs", BOTH,
            lambda c, t: http.probe_web(t, c.work, c.backend, c.copy("web"))),
    "web-scope": (BAD, "`memstore web --namespace a`: maintain's preview and run, the overview, a run over every namespace, b's text broken", BOTH,
                  lambda c, t: web_doors.probe_web_scope(t, c.work, c.backend, c.backend.new("web-scope"))),
    "web-read-only": (CONCURRENT, "`memstore web --read-only`: GET /maintain beside a writer holding the store, an add beside a preview", BOTH,
                      lambda c, t: web_doors.probe_web_read_only(t, c.work, c.backend, c.copy("web-read-only", c.bases.pending))),
    "web-cookie": (BAD, "the web cookie (session value, name, flags, after a restart); redirects to //host, /\\host, tab, CR/LF", SQLITE,
                   lambda c, t: web_doors.probe_web_cookie(t, c.work, c.backend, c.copy("web-cookie"))),
    "web-numbers": (BAD, "web addresses and forms past 64 bits: run ids, cursors, moments, importance --3", BOTH,
                    lambda c, t: web_doors.probe_web_numbers(t, c.work, c.backend, c.backend.new("web-numbers"))),
    "web-bidi": (BAD, "bidi controls (12 kinds) in ids and namespaces on every page that shows them", BOTH,
                 lambda c, t: web_doors.probe_web_bidi(t, c.work, c.backend, c.backend.new("web-bidi"))),
    "vectors": (BAD, "odd vectors in `import`: widths, other model, NaN, 1e400, 400 digits, empty, wrong types", BOTH,
                lambda c, t: needs_model(c, t) and inputs.probe_odd_vectors(t, c.work, c.backend, c.copy("vectors", c.bases.enabled_empty), c.bases.vectors_file)),
    "deep-meta": (BAD, "meta nested 100,000 deep (import, add, LangGraph)", BOTH, lambda c, t: inputs.probe_deep_meta(t, c.work, c.backend, c.copy("deep"))),
    "time": (BAD, "64-bit time extremes, then every reading and job command", BOTH,
             lambda c, t: inputs.probe_time_extremes(t, c.work, c.backend, c.copy("time"))),
    "odd-namespaces": (BAD, "odd namespaces: empty, NUL, 100,000 chars, RTL marks, escapes, surrogate, dot", BOTH,
                       lambda c, t: inputs.probe_odd_namespaces(t, c.work, c.backend, c.copy("odd-ns"))),
    "password": (BAD, "a URL with a password through every command (server up and down)", PG,
                 lambda c, t: inputs.probe_password(t, c.work, c.backend.new("password") if c.backend.is_pg else None)),
    "ttl-digits": (BAD, "`--ttl ١٢s` and other non-ASCII digits in --ttl and --expires-at", SQLITE,
                   lambda c, t: inputs.probe_ttl_digits(t, c.work, c.backend, c.copy("ttl"))),
    "odd-time": (BAD, "hybrid recall of 'the last 999…9 days' (CLI, MCP, LangGraph); --as-of past 64 bits, after year 9999, 0001-01-15", BOTH,
                 lambda c, t: needs_model(c, t) and inputs.probe_odd_time(t, c.work, c.backend, c.copy("odd-time"))),
    "sources": (BAD, "import a zip of 3 GB, a gzip of 257 MiB, a LangGraph store that is a recursive view, rows with NULL, integer or blob "
                "prefix or key, values 700 or 5,000 deep, times 1e308, a WAL-mode file, a hard link to the store", BOTH,
                lambda c, t: sources.probe_sources(t, c.work, c.backend, c.copy("sources"), sources.postgres_view(c.backend) if c.backend.is_pg else None)),
    "copy-targets": (BAD, "`copy` into LangGraph's SqliteStore file (WAL), another program's SQLite file, a hard link to the source", SQLITE,
                     lambda c, t: sources.probe_copy_targets(t, c.work, c.backend, c.copy("copy-source"))),
    "token-file": (BAD, "`memstore web --token-file` empty, a blank first line, not UTF-8", SQLITE,
                   lambda c, t: inputs.probe_token_file(t, c.work, c.copy("token-file"))),
    "targets": (BAD, "`export -o` and `backup --force` into a FIFO, `export -o` a symlink", SQLITE, lambda c, t: probe_targets(c, t)),
    "vectors-folder": (BAD, "a vectors folder another user made (0777, uid 65534), the owner's 0777 one or a link, its files links to the "
                       "owner's file; then check, check --fix, recall", SQLITE,
                       lambda c, t: needs_model(c, t) and vector_files.probe_vectors_folder(t, c.work, c.copy)),
    "vector-files": (BAD, "vector files deleted, a killed rewrite's .partial-PID, headers odd, 100,000 deep, ahead or reordered, a NaN "
                     "row, .lock a folder or a dangling link, STORE-vectors a file; then a recall that counts itself", SQLITE,
                     lambda c, t: needs_model(c, t) and vector_files.probe_vector_files(t, c.work, c.copy)),
}


def needs_model(ctx: Ctx, tally: Tally) -> bool:
    if not ctx.bases.model_dir:
        tally.skipped = "no embedding model (--model-dir)"
    return ctx.bases.model_dir is not None


def probe_targets(ctx: Ctx, tally: Tally) -> list[Tally]:
    """The FIFO and symlink row, and the device node's own row (root only)."""
    device = Tally(BAD, "`export -o` and `backup --force` into a device node (os.mknod)", ctx.backend.name)
    inputs.probe_special_targets(tally, device, ctx.work, ctx.backend, ctx.copy("targets"))
    return [device]


def start_postgres(given: str | None, log) -> tuple[str | None, object | None, str | None]:
    """(admin URL, server to stop, why skipped)."""
    if given:
        return given, None, None
    try:
        from tests.pgserver import start_temp_postgres

        server = start_temp_postgres()
        log(f"[probe] throwaway PostgreSQL at {server.url()} ({server.bin_dir})")
        return server.url(), server, None
    except Exception as exc:
        return None, None, f"no PostgreSQL: {type(exc).__name__}: {exc}"


def run(names: list[str], backends: list[Backend], *, trials: int, size: int, model_dir: Path | None, pg_url: str | None, log) -> list[Tally]:
    tallies: list[Tally] = []
    for backend in backends:
        bases = runs.Bases(backend, backend.work, size, model_dir)
        ctx = Ctx(backend, bases, backend.work, trials, pg_url)
        for name in names:
            kind, what, where, probe = PROBES[name]
            # The password probe needs no store of its own: with no server it runs (server down) beside SQLite.
            if backend.name not in where and not (name == "password" and not pg_url):
                continue
            tally = Tally(kind, what if pg_url or name != "password" else what.replace("up and ", ""), "PostgreSQL" if name == "password" else backend.name)
            log(f"[probe] {tally.backend}: {name} ...")
            began, extra = time.monotonic(), []
            try:
                extra = probe(ctx, tally) or []
            except Exception as exc:  # a probe that could not run is a failure, reported like the others
                import traceback

                tally.trial(f"the probe itself failed: {type(exc).__name__}: {exc}")
                log(traceback.format_exc())
            tally.seconds = time.monotonic() - began
            for t in (tally, *extra):
                log(f"[probe] {t.backend}: {name}: {t.held}/{t.times} held{f' ({t.skipped})' if t.skipped else ''} in {tally.seconds:.0f} s")
                tallies.append(t)
    return tallies


def format_table(tallies: list[Tally]) -> str:
    lines = ["| kind of probe | what was tried | times | held | not held |", "|---|---|---:|---:|---:|"]
    for t in tallies:
        what = f"{t.what} ({t.backend})" + (f" — {t.skipped}" if t.skipped else "")
        lines.append(f"| {t.kind} | {what} | {t.times} | {t.held} | {t.times - t.held} |")
    total = sum(t.times for t in tallies)
    lines.append(f"| **all** | | **{total}** | **{sum(t.held for t in tallies)}** | **{total - sum(t.held for t in tallies)}** |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m scripts.probe", description=scripts.probe.__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--trials", type=int, default=3, help="times each killed or concurrent run is tried (default: %(default)s)")
    parser.add_argument("--size", type=int, default=60, help="memories in the prepared stores (default: %(default)s)")
    parser.add_argument("--only", nargs="+", choices=list(PROBES), metavar="NAME", help=f"only these probes: {', '.join(PROBES)}")
    parser.add_argument("--pg-url", help="an admin URL of a PostgreSQL server with pgvector (default: start a throwaway one)")
    parser.add_argument("--no-pg", action="store_true", help="SQLite only")
    default_model = os.environ.get("MEMSTORE_TEST_MODEL_DIR") or str(REPO / ".model-cache" / "minilm")
    parser.add_argument("--model-dir", default=default_model, help="the embedding model (default: %(default)s)")
    parser.add_argument("--json", help="write the figures here as JSON")
    parser.add_argument("--workdir", help="keep the stores and logs here (default: a temp dir, removed)")
    args = parser.parse_args(argv)
    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731

    model_dir = Path(args.model_dir) if Path(args.model_dir, "model.onnx").exists() else None
    if model_dir is None:
        print(f"skipped: vectors ({args.model_dir} holds no model): sync, import with vectors and odd vectors")
    work = Path(args.workdir or tempfile.mkdtemp(prefix="memstore-probe-")).resolve()  # absolute: children run from the root
    work.mkdir(parents=True, exist_ok=True)
    names = args.only or list(PROBES)
    started, began = datetime.now(timezone.utc), time.monotonic()
    pg_url, server, why = (None, None, "--no-pg") if args.no_pg else start_postgres(args.pg_url, log)
    if why:
        print(f"skipped: PostgreSQL ({why})")
    backends = [Backend("SQLite", work / "sqlite")] + ([Backend("PostgreSQL", work / "postgresql", pg_url)] if pg_url else [])
    for backend in backends:
        backend.work.mkdir(parents=True, exist_ok=True)
    try:
        # The backends side by side (their stores, ports and work dirs are their own): half the wait.
        with ThreadPoolExecutor(len(backends)) as pool:
            done = pool.map(lambda b: run(names, [b], trials=args.trials, size=args.size, model_dir=model_dir, pg_url=pg_url, log=log), backends)
            tallies = [tally for part in done for tally in part]
    finally:
        for backend in backends:
            backend.close()
        if server is not None:
            server.stop()
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    held = all(t.held == t.times for t in tallies)
    seconds = time.monotonic() - began
    print(format_table(tallies))
    for t in tallies:
        for problem in t.problems if t.held < t.times else []:
            print(f"NOT HELD  {t.kind}: {t.what} ({t.backend}) {problem}")
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"\n{'ALL HELD' if held else 'NOT ALL HELD'}: {sum(t.times for t in tallies)} tries in {seconds:.0f} s "
          f"(--trials {args.trials} --size {args.size}, commit {commit or '?'}, Python {platform.python_version()})")  # fmt: skip
    if args.json:
        document = {"started": started.isoformat(timespec="seconds"), "seconds": round(seconds, 1), "commit": commit, "held": held,
                    "trials": args.trials, "size": args.size, "postgresql": pg_url is not None, "probes": [t.as_dict() for t in tallies]}  # fmt: skip
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0 if held else 1

