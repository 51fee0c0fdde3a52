"""A throwaway PostgreSQL server for tests and benchmarks: initdb + pg_ctl in a temp dir, on a free port.

Used by the test suite (tests/conftest.py) and scripts; not by the library itself. It finds the
Debian `postgresql` package's binaries (or any `initdb` on PATH) and, when run as root, runs the
server as the `postgres` user, since PostgreSQL refuses to run as root.
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


def find_bin_dir() -> Path:
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


def start_temp_postgres() -> TempPostgres:
    root = Path(tempfile.mkdtemp(prefix="memstore-pg-"))
    os.chmod(root, 0o755)
    return TempPostgres(root=root, bin_dir=find_bin_dir(), port=free_port()).start()
