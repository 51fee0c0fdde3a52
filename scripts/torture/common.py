"""What the torture scenarios share: percentiles, the scenario's directory, the child processes'
command lines, waiting for them, and telling a lock error from another."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from scripts import REPO, module_command

PYTHON = sys.executable
# The namespaces of the stores the job runs over (every namespace at once, as the nightly job does).
NAMESPACES = ("default", "agent-b")


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def rounded(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


@contextmanager
def scenario_dir(workdir: str | os.PathLike[str] | None, name: str) -> Iterator[Path]:
    """The scenario's directory (absolute: its children run from the repository's root): a
    subdirectory of `workdir`, or a temporary one removed afterwards."""
    if workdir is not None:
        path = Path(workdir).resolve() / name
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        yield path
        return
    path = Path(tempfile.mkdtemp(prefix=f"memstore-torture-{name}-")).resolve()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def start_child(mode: str, *args: str, **popen) -> subprocess.Popen:
    """`python -m scripts.torture MODE ARGS` (a child of scripts/torture/children.py), from the root."""
    return subprocess.Popen(module_command("scripts.torture", mode, *args), cwd=REPO, **popen)


def memstore_cli() -> list[str]:
    """The installed `memstore` command next to this interpreter, else the same entry point via -c."""
    script = Path(PYTHON).parent / "memstore"
    if script.exists():
        return [str(script)]
    return [PYTHON, "-c", "import sys; from memstore.cli import main; sys.argv[0] = 'memstore'; main()"]


def wait_for(paths: list[Path], timeout: float, procs: list[subprocess.Popen] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        for proc in procs or []:
            if proc.poll() is not None:
                raise RuntimeError(f"child {proc.args} exited early with code {proc.returncode}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"children not ready after {timeout} s: {[str(p) for p in paths if not p.exists()]}")
        time.sleep(0.01)


def wait_for_file(path: Path) -> None:
    while not path.exists():
        time.sleep(0.002)


def is_locked_error(kind: str, message: str) -> bool:
    text = message.lower()
    return kind == "StoreBusyError" or "database is locked" in text or "database is busy" in text
