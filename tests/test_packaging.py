"""The wheel ships the migrations, and an installed memstore (no checkout in sight) can create a store.

One wheel build and one fresh venv per module; the build runs on a copy of the source tree so it
never writes build/ or *.egg-info into the checkout other people are working in.
"""

from __future__ import annotations

import os
import shutil
from .sqlitelib import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .schema_head import head_revision

REPO_ROOT = Path(__file__).resolve().parents[1]
SHIPPED_FILES = (
    "memstore/migrations/env.py",
    "memstore/migrations/script.py.mako",
    "memstore/migrations/versions/0001_initial_schema.py",
    "memstore/py.typed",
    "memstore/mcp/tools.py",
    "memstore/mcp/transport.py",
    "memstore/cli/__init__.py",
    "memstore/integrations/langgraph.py",
)
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis",
    "*.db", "*.db-wal", "*.db-shm", "bench-results", "tests",
)  # fmt: skip


def run(args: list[str], *, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MEMSTORE_DB", "PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{args} failed:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("build")
    source = work / "src"
    shutil.copytree(REPO_ROOT, source, ignore=NOT_SOURCE)
    outdir = work / "dist"
    run([sys.executable, "-m", "build", "--wheel", "--outdir", str(outdir)], cwd=source)
    wheels = list(outdir.glob("memstore_agents-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed (not editable); returns its bin directory."""
    venv = tmp_path_factory.mktemp("venv") / "env"
    run([sys.executable, "-m", "venv", str(venv)], cwd=venv.parent)
    bin_dir = venv / "bin"
    run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)], cwd=venv.parent)
    return bin_dir


def test_wheel_ships_the_migrations_and_the_type_marker(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    missing = [name for name in SHIPPED_FILES if name not in names]
    assert missing == []
    # The top-level checkout folder must not leak into the wheel under its own name.
    assert not any(name.startswith("migrations/") for name in names)


def test_installed_memstore_uses_the_migrations_inside_the_package(installed: Path, tmp_path: Path) -> None:
    result = run(
        [str(installed / "python"), "-c", "import memstore.migrate as m; print(m.migrations_dir())"], cwd=tmp_path
    )
    location = Path(result.stdout.strip())
    assert location.is_dir()
    assert installed.parent in location.parents
    assert REPO_ROOT not in location.parents


def test_installed_memstore_init_creates_a_store_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    assert REPO_ROOT not in tmp_path.parents
    db = tmp_path / "x.db"

    result = run([str(installed / "memstore"), "--db", str(db), "init"], cwd=tmp_path)

    assert head_revision() in result.stdout
    with sqlite3.connect(db) as conn:
        tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        versions = [v for (v,) in conn.execute("SELECT version_num FROM alembic_version")]
    assert {"memories", "memory_archive", "consolidation_runs"} <= tables
    assert versions == [head_revision()]


def test_without_the_mcp_extra_memstore_mcp_says_what_to_install(installed: Path, tmp_path: Path) -> None:
    # The wheel installed bare: the core works, the optional faces name their extra.
    result = subprocess.run(
        [str(installed / "memstore"), "--db", str(tmp_path / "s.db"), "mcp"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    assert result.stderr == "Error: the MCP server needs the mcp extra: pip install 'memstore-agents[mcp]'\n"
    langgraph = subprocess.run(
        [str(installed / "python"), "-c", "import memstore.integrations.langgraph"], capture_output=True, text=True, timeout=120
    )
    assert langgraph.returncode == 1 and "pip install 'memstore-agents[langgraph]'" in langgraph.stderr
