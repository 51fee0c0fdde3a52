"""What the probe's modules share: the tally of a probe, the stores it runs on, the real CLI, and
looking at a store from outside. See the package's docstring for the probe itself.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scripts.data import spelled_records
from scripts.stores import connect, copy_store
from scripts.torture.common import memstore_cli

PYTHON = sys.executable
CLI = memstore_cli()


@dataclass
class Tally:
    """One row of the table: a kind of probe, what was tried, on which backend, and how it went.

    A trial holds when none of its checks found a problem; `problems` keeps the first few found."""

    kind: str
    what: str
    backend: str = "SQLite"
    times: int = 0
    held: int = 0
    problems: list[str] = field(default_factory=list)
    skipped: str | None = None
    seconds: float = 0.0
    notes: dict[str, Any] = field(default_factory=dict)  # figures beside the verdicts (kills that landed, ...)

    def trial(self, problems: list[str] | str | None = None) -> bool:
        problems = [problems] if isinstance(problems, str) else [p for p in problems or [] if p]
        self.times += 1
        if problems:
            self.problems += [f"#{self.times}: {p}" for p in problems][: max(0, 12 - len(self.problems))]
        else:
            self.held += 1
        return not problems

    def expect(self, ok: bool, problem: str) -> bool:
        """One check that is a trial of its own."""
        return self.trial(None if ok else problem)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "what": self.what, "backend": self.backend, "times": self.times, "held": self.held,
                "not_held": self.times - self.held, "skipped": self.skipped, "problems": self.problems, "notes": self.notes,
                "seconds": round(self.seconds, 1)}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Where the stores live: SQLite files in a work directory, or databases on a PostgreSQL server
# ---------------------------------------------------------------------------------------------


class Backend:
    """Makes fresh stores and copies of stores, and reads them from outside memstore."""

    _numbers = itertools.count()

    def __init__(self, name: str, work: Path, admin_url: str | None = None) -> None:
        self.name, self.work, self.admin_url = name, work, admin_url
        self.databases: list[str] = []
        self._engines: dict[str, Any] = {}
        if admin_url:
            from sqlalchemy import create_engine

            self.admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")

    @property
    def is_pg(self) -> bool:
        return self.admin_url is not None

    def new(self, label: str) -> str:
        """The location of a new, empty store (memstore creates its schema on first use)."""
        n = next(self._numbers)
        if not self.is_pg:
            return str(self.work / f"{label}-{n}.db")
        name = f"probe_{os.getpid()}_{n}"
        self._admin(f'CREATE DATABASE "{name}"')
        self.databases.append(name)
        return self._url(name)

    def clone(self, source: str, label: str) -> str:
        """A copy of a store that no process is using."""
        n = next(self._numbers)
        if not self.is_pg:
            return str(copy_store(Path(source), self.work / f"{label}-{n}.db"))  # the WAL folded in first
        self.forget_engine(source)
        name, template = f"probe_{os.getpid()}_{n}", source.rsplit("/", 1)[1]
        self._admin(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{template}' AND pid <> pg_backend_pid()")
        self._admin(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        self.databases.append(name)
        return self._url(name)

    def _url(self, database: str) -> str:
        from sqlalchemy.engine import make_url

        return make_url(self.admin_url).set(database=database).render_as_string(hide_password=False)

    def _admin(self, sql: str) -> None:
        from sqlalchemy import text

        with self.admin.connect() as conn:
            conn.execute(text(sql))

    def rows(self, location: str, sql: str) -> list[tuple]:
        """Rows of a query, read outside memstore (plain sqlite3 / SQLAlchemy without a pool)."""
        if not self.is_pg:
            conn = connect(Path(location))
            try:
                return [tuple(row) for row in conn.execute(sql)]
            finally:
                conn.close()
        from sqlalchemy import create_engine, text
        from sqlalchemy.pool import NullPool

        engine = self._engines.get(location) or self._engines.setdefault(location, create_engine(location, poolclass=NullPool))
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(sql))]

    def forget_engine(self, location: str) -> None:
        engine = self._engines.pop(location, None)
        if engine is not None:
            engine.dispose()

    def ids(self, location: str) -> tuple[set[str], set[str]]:
        """(live ids, archived ids)."""
        return ({r[0] for r in self.rows(location, "SELECT id FROM memories")},
                {r[0] for r in self.rows(location, "SELECT id FROM memory_archive")})  # fmt: skip

    def fingerprint(self, location: str) -> str:
        """A hash of every memory, live and archived, every run and vector: "nothing written" compares two."""
        digest = hashlib.sha256()
        for table, key in (("memories", "id"), ("memory_archive", "id"), ("consolidation_runs", "id"), ("memory_vectors", "memory_id")):
            for row in self.rows(location, f"SELECT * FROM {table} ORDER BY {key}"):
                digest.update(repr(row).encode())
        return digest.hexdigest()

    def pending(self, location: str) -> int:
        """Live memories without a vector."""
        sql = "SELECT count(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id)"
        return self.rows(location, sql)[0][0]

    def close(self) -> None:
        for location in list(self._engines):
            self.forget_engine(location)
        for name in self.databases:
            try:
                self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            except Exception:  # a database left behind on a throwaway server is no finding
                pass
        if self.is_pg:
            self.admin.dispose()


# ---------------------------------------------------------------------------------------------
# The real command line
# ---------------------------------------------------------------------------------------------


def env(work: Path, **extra: str) -> dict[str, str]:
    """The environment of every child: no MEMSTORE_DB or token of the user's, the app dir inside the work dir."""
    kept = {k: v for k, v in os.environ.items() if k not in ("MEMSTORE_DB", "MEMSTORE_MCP_TOKEN")}
    return {**kept, "XDG_CONFIG_HOME": str(work / "config"), "PYTHONUNBUFFERED": "1", **extra}


def cli(work: Path, location: str | None, *args: str, input: str | bytes | None = None, timeout: float = 300,
        env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:  # fmt: skip
    """`memstore [--db LOCATION] ARGS`, run to its end; stdout and stderr as text."""
    command = [*CLI, *(["--db", location] if location is not None else []), *args]
    raw = isinstance(input, bytes)
    done = subprocess.run(command, input=input, capture_output=True, timeout=timeout, env=env(work, **(env_extra or {})), text=not raw)
    if raw:
        done.stdout, done.stderr = (done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))
    return done


def start(work: Path, location: str, *args: str, log: Path | None = None, env_extra: dict[str, str] | None = None) -> subprocess.Popen:
    """`memstore --db LOCATION ARGS` in the background (stderr to `log`)."""
    err = open(log, "ab") if log else subprocess.DEVNULL
    try:
        return subprocess.Popen([*CLI, "--db", location, *args], stdout=subprocess.DEVNULL, stderr=err, env=env(work, **(env_extra or {})))
    finally:
        if log:
            err.close()


def ok_run(done: subprocess.CompletedProcess, what: str) -> str | None:
    """None when the command exited 0 without a traceback; else the problem."""
    if done.returncode == 0 and "Traceback" not in done.stderr:
        return None
    return f"{what}: exit {done.returncode}: {tail(done.stderr or done.stdout)}"


def one_line_error(done: subprocess.CompletedProcess, *names: str) -> str | None:
    """None when the command failed as memstore promises: exit 1, one line 'Error: ...' on stderr
    that names every one of `names` (file, line, field), no traceback; else what differed."""
    lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("notice: ")]
    if done.returncode != 1:
        return f"exit {done.returncode} (not 1): {tail(done.stderr or done.stdout)}"
    if "Traceback" in done.stderr or len(lines) != 1 or not lines[0].startswith("Error: "):
        return f"not a one-line error: {tail(done.stderr)}"
    missing = [name for name in names if name not in lines[0]]
    return f"error does not name {missing}: {lines[0][:200]}" if missing else None


def tail(text: str, chars: int = 240) -> str:
    text = " | ".join(line for line in text.strip().splitlines() if line.strip())
    return text if len(text) <= chars else "…" + text[-chars:]


def check_clean(work: Path, location: str) -> str | None:
    """`memstore check` finds nothing (integrity_check among its checks)."""
    done = cli(work, location, "check")
    return None if done.returncode == 0 else f"check: exit {done.returncode}: {tail(done.stdout + done.stderr)}"


def kill_at(command: subprocess.Popen, delay: float) -> bool:
    """SIGKILL `command` `delay` seconds from now, unless it ended before; True if it was killed."""
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline:
        if command.poll() is not None:
            return False
        time.sleep(min(0.01, max(0.0, deadline - time.monotonic())))
    if command.poll() is not None:
        return False
    command.kill()
    command.wait()
    return True


def kill_delays(trials: int, seconds: float, rng: random.Random) -> list[float]:
    """Instants spread over a run of `seconds` (and a little past it), one per trial."""
    return [(i + rng.random()) / trials * seconds * 1.1 for i in range(trials)]


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def wait_for_port(host: str, port: int, server: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server on {host}:{port} exited with {server.returncode} before listening")
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listening on {host}:{port} after {timeout} s")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def records(n: int, seed: int, namespaces: tuple[str, ...] = ("default", "agent-b")) -> list[dict]:
    """`n` memories in torture's style (facts in many spellings, a year of timestamps), as JSON records."""
    rows = spelled_records(n, random.Random(seed), max(1, n // 2), namespaces, "m")
    return [{k: v for k, v in row.items() if v is not None} for row in rows]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def clean_dir(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def mcp_exchange(work: Path, location: str, lines: list[bytes], want_id: int, *args: str, timeout: float = 120) -> tuple[int, list[dict], str]:
    """`memstore mcp ARGS` on stdio: write `lines`, read answers until the one with id `want_id` (or
    the server's end), then close stdin. (Closed at once, the SDK drops the answers in flight.)
    Returns (exit code, the JSON answers, stderr)."""
    server = subprocess.Popen([*CLI, "--db", location, "mcp", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env(work))  # fmt: skip
    answers: list[dict] = []
    errors: list[bytes] = []
    drain = threading.Thread(target=lambda: errors.append(server.stderr.read()), daemon=True)
    drain.start()
    timer = threading.Timer(timeout, server.kill)
    timer.start()
    try:
        server.stdin.write(b"".join(line + b"\n" for line in lines))
        server.stdin.flush()
        for raw in server.stdout:
            try:
                answers.append(json.loads(raw))
            except ValueError:
                answers.append({"not json": raw.decode(errors="replace")})
            if answers[-1].get("id") == want_id:
                break
    except BrokenPipeError:
        pass
    finally:
        try:
            server.stdin.close()
        except BrokenPipeError:
            pass
        code = server.wait()
        timer.cancel()
        drain.join(timeout=10)
    return code, answers, b"".join(errors).decode(errors="replace")
