"""The probe's killed and concurrent runs (the probe runs them; see the package's docstring).

A killed run is the real command started on a copy of a prepared store and SIGKILLed at an instant
spread over its duration (measured first); then the store must hold every memory it held, pass
`memstore check`, and the same command run again must finish. Concurrent runs start several real
processes at once on one store; every write a client was told succeeded must then be live or
archived by a run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import threading
import time
from functools import cached_property
from pathlib import Path

from scripts import REPO, module_command
from scripts.torture.children import analyse_writer_logs, read_jsonl, spawn_writer
from scripts.torture.common import wait_for, wait_for_file
from scripts.torture.disk_full import scenario_disk_full

from .common import (Backend, Tally, check_clean, clean_dir, cli, free_port, kill_at, kill_delays, ok_run, records,
                          start, stop, tail, wait_for_port, write_jsonl)  # fmt: skip

TOKEN = "probe-token-4f9a2c"


class Bases:
    """The prepared stores of one backend, made once and copied for every trial."""

    def __init__(self, backend: Backend, work: Path, size: int, model_dir: Path | None) -> None:
        self.backend, self.work, self.size, self.model_dir = backend, work, size, model_dir

    def _must(self, done: subprocess.CompletedProcess, what: str) -> None:
        if ok_run(done, what):
            raise RuntimeError(ok_run(done, what))

    @cached_property
    def pending(self) -> str:
        """`size` memories in two namespaces, the model enabled, nothing embedded yet."""
        location = self.backend.new("pending")
        source = write_jsonl(self.work / "records.jsonl", records(self.size, seed=29))
        self._must(cli(self.work, location, "import", str(source)), "import")
        if self.model_dir:
            self._must(cli(self.work, location, "embeddings", "enable", "--model", str(self.model_dir)), "embeddings enable")
        return location

    @cached_property
    def synced(self) -> str:
        """The same, every memory embedded."""
        location = self.backend.clone(self.pending, "synced")
        if self.model_dir:
            self._must(cli(self.work, location, "embeddings", "sync"), "embeddings sync")
        return location

    @cached_property
    def vectors_file(self) -> Path:
        path = self.work / f"with-vectors-{self.backend.name}.jsonl"
        self._must(cli(self.work, self.synced, "export", "--all-namespaces", "--with-vectors", "-o", str(path)), "export")
        return path

    @cached_property
    def enabled_empty(self) -> str:
        """No memory yet, the model enabled: an import with vectors stores them as they come."""
        location = self.backend.new("empty")
        self._must(cli(self.work, location, "embeddings", "enable", "--model", str(self.model_dir)), "embeddings enable")
        return location

    @cached_property
    def restorable(self) -> tuple[str, int]:
        """The synced store after a run that archived about two thirds of it (with their vectors)."""
        location = self.backend.clone(self.synced, "restorable")
        done = cli(self.work, location, "consolidate", "--all-namespaces", "--capacity", str(max(1, self.size // 6)), "--json")
        self._must(done, "consolidate")
        return location, json.loads(done.stdout)["run_id"]


# ---------------------------------------------------------------------------------------------
# Killed runs
# ---------------------------------------------------------------------------------------------


def _kill_trials(tally: Tally, bases: Bases, base: str, args: list[str], verify, trials: int, seed: int) -> None:
    """Measure one uninterrupted run of `memstore ARGS` on a copy of `base`, then kill `trials` runs
    at instants spread over it; `verify(location, killed)` lists what did not hold after each."""
    backend, work = bases.backend, bases.work
    calibration = backend.clone(base, "calibrate")
    began = time.monotonic()
    cli(work, calibration, "runs")  # the start-up: interpreter, imports, opening the store
    startup = time.monotonic() - began
    began = time.monotonic()
    done = cli(work, calibration, *args)
    seconds = time.monotonic() - began
    if ok_run(done, " ".join(args)):
        tally.trial(f"an uninterrupted run failed: {ok_run(done, ' '.join(args))}")
        return
    # Kill instants spread over the run past most of its start-up, where the command does its work.
    floor = min(0.8 * startup, 0.5 * seconds)
    for i, delay in enumerate(floor + d for d in kill_delays(trials, seconds - floor, random.Random(seed))):
        location = backend.clone(base, f"killed-{i}")
        process = start(work, location, *args, log=work / "killed.log")
        killed = kill_at(process, delay)
        if not killed:
            process.wait(timeout=600)
        tally.notes["killed"] = tally.notes.get("killed", 0) + killed  # the others had finished by then
        tally.notes["run_seconds"] = round(seconds, 2)
        backend.forget_engine(location)
        tally.trial(verify(location, killed))


def probe_kill_sync(tally: Tally, bases: Bases, trials: int) -> None:
    """kill -9 during `embeddings sync`: no memory lost or archived, the store clean, and a second
    sync embeds what the first did not reach."""
    if not bases.model_dir:
        tally.skipped = "no embedding model (--model-dir)"
        return
    backend, work = bases.backend, bases.work
    live, archived = backend.ids(bases.pending)

    def verify(location: str, killed: bool) -> list[str]:
        problems = [None if backend.ids(location) == (live, archived) else "the memories changed", check_clean(work, location)]
        problems.append(ok_run(cli(work, location, "embeddings", "sync"), "sync again"))
        problems.append(None if backend.pending(location) == 0 else f"{backend.pending(location)} still pending after a second sync")
        return problems

    _kill_trials(tally, bases, bases.pending, ["embeddings", "sync"], verify, trials, seed=1)


def probe_kill_import(tally: Tally, bases: Bases, trials: int) -> None:
    """kill -9 during `import` of a file with vectors: all of it or none of it, the store clean; the
    import run again brings every memory with its vector."""
    if not bases.model_dir:
        tally.skipped = "no embedding model (--model-dir)"
        return
    backend, work, source = bases.backend, bases.work, bases.vectors_file
    expected = {json.loads(line)["id"] for line in source.read_text(encoding="utf-8").splitlines()}

    def verify(location: str, killed: bool) -> list[str]:
        live, _ = backend.ids(location)
        problems = [None if live in (set(), expected) else f"{len(live)} of {len(expected)} memories imported: a torn import",
                    check_clean(work, location), ok_run(cli(work, location, "import", str(source)), "import again")]  # fmt: skip
        problems.append(None if backend.ids(location)[0] == expected else "the second import did not bring every memory")
        problems.append(None if backend.pending(location) == 0 else f"{backend.pending(location)} imported without their vector")
        return problems

    _kill_trials(tally, bases, bases.enabled_empty, ["import", str(source)], verify, trials, seed=2)


def _conserved(backend: Backend, location: str, everything: set[str]) -> str | None:
    live, archived = backend.ids(location)
    if live & archived:
        return f"{len(live & archived)} ids both live and archived"
    return None if live | archived == everything else f"{len(everything - live - archived)} memories lost"


def probe_kill_maintain(tally: Tally, bases: Bases, trials: int) -> None:
    """kill -9 during `maintain` (every phase, vectors included): every memory live or archived, the
    store clean, and maintain run again succeeds."""
    backend, work = bases.backend, bases.work
    everything = set().union(*backend.ids(bases.synced))
    args = ["maintain", "--all-namespaces", "--capacity", str(max(1, bases.size // 5))]

    def verify(location: str, killed: bool) -> list[str]:
        problems = [_conserved(backend, location, everything), check_clean(work, location)]
        return problems + [ok_run(cli(work, location, *args), "maintain again"), _conserved(backend, location, everything)]

    _kill_trials(tally, bases, bases.synced, args, verify, trials, seed=3)


def probe_kill_restore(tally: Tally, bases: Bases, trials: int) -> None:
    """kill -9 during `restore` of a run that archived two thirds of the store: the run undone whole
    or not at all, the store clean, and restore run again leaves it undone."""
    backend, work = bases.backend, bases.work
    base, run = bases.restorable
    live_before, run_ids = backend.ids(base)
    everything = live_before | run_ids

    def verify(location: str, killed: bool) -> list[str]:
        live, archived = backend.ids(location)
        whole = archived == run_ids or (run_ids <= live and not archived)
        problems = [None if whole else f"restore torn: {len(run_ids & live)} of {len(run_ids)} back", _conserved(backend, location, everything)]
        problems.append(check_clean(work, location))
        again = cli(work, location, "restore", "--run", str(run))
        if again.returncode != 0 and not (again.returncode == 1 and "already" in again.stderr and "Traceback" not in again.stderr):
            problems.append(ok_run(again, "restore again"))
        problems.append(None if backend.ids(location) == (everything, set()) else "the run is not undone after restore again")
        return problems

    _kill_trials(tally, bases, base, ["restore", "--run", str(run)], verify, trials, seed=4)


# ---------------------------------------------------------------------------------------------
# Concurrent runs
# ---------------------------------------------------------------------------------------------


def _maintain_loop(work: Path, location: str, until: threading.Event, outcomes: list[str | None], capacity: int) -> threading.Thread:
    """`maintain` over and over in a thread until `until` is set; each outcome (None: it succeeded)."""

    def loop() -> None:
        while not until.is_set():
            done = cli(work, location, "maintain", "--all-namespaces", "--capacity", str(capacity))
            outcomes.append(ok_run(done, "maintain") or ("'locked' in maintain's output" if "locked" in done.stderr else None))

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def _note(tally: Tally, **figures: int) -> None:
    for name, value in figures.items():
        tally.notes[name] = tally.notes.get(name, 0) + value


def probe_maintains_at_once(tally: Tally, bases: Bases, trials: int, processes: int = 4) -> None:
    """Several `maintain`s started at once on one store: each succeeds, nothing is lost, the store is clean."""
    backend, work = bases.backend, bases.work
    everything = set().union(*backend.ids(bases.synced))
    for i in range(trials):
        location = backend.clone(bases.synced, f"maintains-{i}")
        args = ["maintain", "--all-namespaces", "--capacity", str(max(1, bases.size // 5))]
        logs = [work / f"maintain-{i}-{n}.log" for n in range(processes)]
        running = [start(work, location, *args, log=log) for log in logs]
        codes = [process.wait(timeout=600) for process in running]
        problems = [f"maintain {n} exited {code}: {tail(logs[n].read_text())}" for n, code in enumerate(codes) if code]
        problems += [f"maintain {n}: {tail(log.read_text())}" for n, log in enumerate(logs) if "locked" in log.read_text() or "Traceback" in log.read_text()]
        tally.trial(problems + [_conserved(backend, location, everything), check_clean(work, location)])


def probe_writers_beside_maintain(tally: Tally, bases: Bases, trials: int, writers: int = 3, seconds: float = 6.0) -> None:
    """Writer processes adding every ~50 ms (torture's `_writer`) while `maintain` runs over and over:
    every acknowledged add is live or archived, no writer saw an error, every maintain succeeded."""
    backend = bases.backend
    for i in range(trials):
        work = clean_dir(bases.work / f"writers-{backend.name}-{i}")
        location = backend.clone(bases.synced, f"writers-{i}")
        spawned = [spawn_writer(work, location, str(w), 100 * i + w, interval=0.05, seconds=seconds,
                                fact_count=bases.size, explicit_ids=False) for w in range(writers)]  # fmt: skip
        wait_for([Path(f"{log}.ready") for _, log in spawned], 120, [p for p, _ in spawned])
        outcomes: list[str | None] = []
        writing = threading.Event()
        loop = _maintain_loop(work, location, writing, outcomes, max(1, bases.size // 5))
        (work / "go").touch()
        codes = [process.wait(timeout=seconds + 300) for process, _ in spawned]
        writing.set()
        loop.join(timeout=600)
        found = analyse_writer_logs([log for _, log in spawned])
        _note(tally, acknowledged=len(found["acked"]), maintain_runs=len(outcomes))
        live, archived = backend.ids(location)
        lost = [i for i in found["acked"] if i not in live | archived]
        problems = [f"{len(lost)} of {len(found['acked'])} acknowledged adds lost" if lost else None,
                    f"writers saw {len(found['errors'])} errors: {found['errors'][:2]}" if found["errors"] else None,
                    f"writer exit codes {codes}" if any(codes) else None, None if found["acked"] else "nothing acknowledged",
                    None if outcomes else "maintain never ran", check_clean(bases.work, location)]  # fmt: skip
        tally.trial(problems + [o for o in outcomes if o][:3])


def probe_http_clients_beside_maintain(tally: Tally, bases: Bases, trials: int, clients: int = 4, calls: int = 15) -> None:
    """An MCP server over HTTP (with a token), several SDK clients remembering at once, `maintain`
    over and over beside them: every acknowledged remember is live or archived, the log is clean."""
    import anyio
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    backend, work = bases.backend, bases.work

    async def client(url: str, n: int, acked: list[str]) -> None:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)
        async with http, streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for c in range(calls):
                text = f"shared fact number {c}" if c % 2 == 0 else f"fact {c} of client {n}"
                result = await session.call_tool("remember", {"text": text, "importance": 1 + c % 5})
                if result.is_error:
                    raise RuntimeError(f"remember failed: {result.content}")
                acked.append(result.structured_content["id"])

    for i in range(trials):
        location = backend.clone(bases.synced, f"http-{i}")
        port, log = free_port(), work / f"http-{backend.name}-{i}.log"
        server = start(work, location, "mcp", "--http", f"127.0.0.1:{port}", log=log, env_extra={"MEMSTORE_MCP_TOKEN": TOKEN})
        acked: list[str] = []
        outcomes: list[str | None] = []
        problems: list[str | None] = []
        try:
            wait_for_port("127.0.0.1", port, server)
            done = threading.Event()
            loop = _maintain_loop(work, location, done, outcomes, max(1, bases.size // 5))

            async def all_clients() -> None:
                with anyio.fail_after(600):
                    async with anyio.create_task_group() as group:
                        for n in range(clients):
                            group.start_soon(client, f"http://127.0.0.1:{port}/mcp", n, acked)

            try:
                anyio.run(all_clients)
            except Exception as exc:  # a client that failed is a finding, reported with the others
                problems.append(f"a client failed: {type(exc).__name__}: {tail(str(exc))}")
            done.set()
            loop.join(timeout=600)
        finally:
            stop(server)
        live, archived = backend.ids(location)
        lost = [a for a in acked if a not in live | archived]
        _note(tally, acknowledged=len(acked), maintain_runs=len(outcomes))
        text = log.read_text(errors="replace")
        problems += [f"{len(lost)} of {len(acked)} acknowledged remembers lost" if lost else None,
                     f"{len(acked)} of {clients * calls} remembers acknowledged" if len(acked) != clients * calls else None,
                     "Traceback or 'locked' in the server log" if "Traceback" in text or "locked" in text else None,
                     None if outcomes else "maintain never ran", check_clean(work, location)]  # fmt: skip
        tally.trial(problems + [o for o in outcomes if o][:3])


def child_putter(argv: list[str]) -> int:
    """(Child process.) LangGraph puts with a TTL from several threads, this process's TTL sweeper
    running; each put logged with the moment it returned, one os.write per line."""
    parser = argparse.ArgumentParser(prog="python -m scripts.probe _putter")
    for name in ("--db", "--log", "--label", "--go"):
        parser.add_argument(name, required=True)
    parser.add_argument("--threads", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--ttl-seconds", type=float, default=3.0)
    args = parser.parse_args(argv)
    import logging

    from memstore.integrations.langgraph import MemstoreStore

    logging.basicConfig(level=logging.WARNING)  # a failed sweep is logged: the parent counts those lines
    store = MemstoreStore(args.db, ttl={"default_ttl": args.ttl_seconds / 60, "sweep_interval_minutes": 0.5 / 60})
    sweeper = store.start_ttl_sweeper()
    fd = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    emit = lambda entry: os.write(fd, (json.dumps(entry) + "\n").encode())  # noqa: E731
    Path(args.log + ".ready").touch()
    wait_for_file(Path(args.go))
    end = time.monotonic() + args.seconds

    def put(t: int) -> None:
        seq = 0
        while time.monotonic() < end:
            # Five keys per thread: most puts replace a live (or expired, or swept) value of the key.
            key, content = f"k{seq % 5}", f"note {args.label}.{t}.{seq}"
            try:
                store.put(("probe", args.label, str(t)), key, {"content": content}, ttl=args.ttl_seconds / 60)
                emit({"key": key, "content": content, "ns": f"probe.{args.label}.{t}", "acked_ms": int(time.time() * 1000)})
            except Exception as exc:
                emit({"error": f"{type(exc).__name__}: {exc}"[:300]})
            seq += 1

    threads = [threading.Thread(target=put, args=(t,)) for t in range(args.threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    emit({"sweeper_running": not sweeper.done()})
    store.close()
    return 0


def probe_langgraph_ttl(tally: Tally, bases: Bases, trials: int, processes: int = 3, seconds: float = 6.0) -> None:
    """LangGraph puts with a 3 s TTL from 3 processes x 3 threads, a TTL sweeper in each, `maintain`
    over and over beside them: every acknowledged put is stored (live or archived), none was saved
    already expired (its end after the moment the put returned), no sweep failed."""
    backend = bases.backend
    for i in range(trials):
        work = clean_dir(bases.work / f"langgraph-{backend.name}-{i}")
        location = backend.clone(bases.synced, f"langgraph-{i}")
        logs = [work / f"putter-{p}.jsonl" for p in range(processes)]
        children = [subprocess.Popen(module_command("scripts.probe", "_putter", "--db", location, "--log", str(log), "--label", f"p{p}",
                                                    "--go", str(work / "go"), "--seconds", str(seconds)),
                                     cwd=REPO, stderr=open(work / f"putter-{p}.stderr", "wb"), stdout=subprocess.DEVNULL)
                    for p, log in enumerate(logs)]  # fmt: skip
        wait_for([Path(f"{log}.ready") for log in logs], 120, children)
        outcomes: list[str | None] = []
        putting = threading.Event()
        loop = _maintain_loop(work, location, putting, outcomes, max(1, bases.size // 5))
        (work / "go").touch()
        codes = [child.wait(timeout=seconds + 300) for child in children]
        putting.set()
        loop.join(timeout=600)
        entries = [entry for log in logs for entry in read_jsonl(log)]
        stored: dict[tuple[str, str, str], int | None] = {}
        for table in ("memories", "memory_archive"):
            for ns, key, meta, expires in backend.rows(location, f"SELECT namespace, fact_key, meta, expires_at FROM {table} WHERE namespace LIKE 'probe.%'"):
                meta = json.loads(meta) if isinstance(meta, str) else meta
                stored[(ns, key, meta["value"]["content"])] = expires
        puts = [e for e in entries if "acked_ms" in e]
        _note(tally, acknowledged=len(puts), maintain_runs=len(outcomes))
        lost = [e for e in puts if (e["ns"], e["key"], e["content"]) not in stored]
        expired = [e for e in puts if (e["ns"], e["key"], e["content"]) in stored and (stored[(e["ns"], e["key"], e["content"])] or 0) <= e["acked_ms"]]
        sweeps_failed = sum((work / f"putter-{p}.stderr").read_text(errors="replace").count("sweep failed") for p in range(processes))
        problems = [f"{len(lost)} of {len(puts)} acknowledged puts lost" if lost else None,
                    f"{len(expired)} of {len(puts)} puts saved already expired, e.g. {expired[0]}" if expired else None,
                    f"{sweeps_failed} sweeps failed" if sweeps_failed else None,
                    None if sum(1 for e in entries if e.get("sweeper_running")) == processes else "a sweeper stopped",
                    f"put errors: {[e['error'] for e in entries if 'error' in e][:2]}" if any("error" in e for e in entries) else None,
                    f"putter exit codes {codes}" if any(codes) else None, None if puts else "no put acknowledged",
                    None if outcomes else "maintain never ran", check_clean(work, location)]  # fmt: skip
        tally.trial(problems + [o for o in outcomes if o][:3])


def probe_full_disk(tally: Tally, bases: Bases, trials: int) -> None:
    """The torture suite's disk-full scenario: the job on a disk that fills halfway (a small tmpfs when this
    user may mount one, else SQLite's max_page_count), exit 1 with one line, the store unchanged."""
    for i in range(trials):
        result = scenario_disk_full(bases.work / f"disk-full-{i}", memories=max(2_000, bases.size * 10), seed=5 + i)
        tally.what = f"the job on a disk that fills up halfway ({result['method']})"
        tally.trial(None if result["passed"] else f"{result['error_line'] or result['exit_code']}; unchanged {result['store_unchanged']}")
