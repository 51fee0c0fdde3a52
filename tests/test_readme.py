"""The README tells the truth: its Python block runs, its schema is the real one, its SQL works in sqlite3."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from memstore import MemoryStore
from memstore.cli import cli

from .conftest import SEED_SAMPLE

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def fenced_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_python_api_block_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (block,) = fenced_blocks("python")
    exec(compile(block, "README.md", "exec"), {})
    assert (tmp_path / "agent.db").exists()


def test_schema_block_is_the_schema_a_fresh_store_has(db_path):
    MemoryStore(db_path).close()
    shell = subprocess.run([shutil.which("sqlite3"), str(db_path), ".schema"], capture_output=True, text=True, check=True)
    real = [s for s in shell.stdout.split(";\n") if s.strip() and "alembic_version" not in s]
    schema_block = next(b for b in fenced_blocks("sql") if "CREATE TABLE memories" in b)
    documented = [s for s in schema_block.split(";\n") if s.strip()]
    assert [s.strip().rstrip(";") for s in documented] == [s.strip().rstrip(";") for s in real]


def test_documented_queries_run_in_the_sqlite3_shell(db_path):
    with MemoryStore(db_path) as store:
        store.add_many(SEED_SAMPLE)
        store.consolidate(5)
    queries = next(b for b in fenced_blocks("sql") if "SELECT" in b and "CREATE TABLE" not in b)
    done = subprocess.run([shutil.which("sqlite3"), str(db_path)], input=queries, capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""
    assert "m1|duplicate|m2|1|" in done.stdout  # why m1 is gone
    assert "m1|duplicate|User prefers dark mode." in done.stdout  # every copy of one fact
    assert "m2|live|  user prefers   DARK mode " in done.stdout


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_every_cli_command_is_documented(command):
    assert f"`memstore {command}" in README
