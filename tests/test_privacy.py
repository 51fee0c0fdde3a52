"""Every file memstore creates is its owner's alone (0600, directories 0700), whatever the umask;
files that already exist keep the mode their owner gave them. The tests run under umask 022."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore import MemoryStore, MemstoreError
from memstore.cli import cli

from .conftest import SEED_SAMPLE

REPO = Path(__file__).resolve().parents[1]


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def invoke(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def test_the_tests_run_under_umask_022():
    current = os.umask(0o022)
    os.umask(current)
    assert current == 0o022


def test_a_new_store_and_its_wal_files_are_private(tmp_path):
    path = tmp_path / "new" / "deeper" / "agent.db"
    with MemoryStore(path) as store:
        store.add_many(SEED_SAMPLE)
        # While the store is open SQLite keeps its -wal and -shm files beside it.
        files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
        assert all(f.exists() for f in files)
        assert [mode(f) for f in files] == [0o600, 0o600, 0o600]
    assert mode(tmp_path / "new") == mode(tmp_path / "new" / "deeper") == 0o700


@pytest.mark.parametrize("umask", [0o000, 0o277])
def test_private_whatever_the_umask(tmp_path, umask):
    previous = os.umask(umask)
    try:
        MemoryStore(tmp_path / "dir" / "store.db").close()
    finally:
        os.umask(previous)
    assert mode(tmp_path / "dir" / "store.db") == 0o600
    assert mode(tmp_path / "dir") == 0o700


def test_the_default_app_directory_is_private(tmp_path):
    result = invoke_default("add", "hello")
    assert result.exit_code == 0, result.output
    app_dir = tmp_path / "config" / "memstore"  # conftest points XDG_CONFIG_HOME at tmp_path/config
    assert mode(app_dir) == 0o700
    assert mode(app_dir / "memstore.db") == 0o600


def invoke_default(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_an_existing_store_keeps_the_mode_its_owner_set(tmp_path):
    path = tmp_path / "shared.db"
    MemoryStore(path).close()
    os.chmod(path, 0o640)
    with MemoryStore(path) as store:
        store.add("still group-readable, as the owner chose")
        assert mode(f"{path}-wal") == 0o640  # SQLite gives the WAL the store's own mode
    assert mode(path) == 0o640


def test_backups_are_private_and_a_forced_overwrite_keeps_the_old_files_mode(tmp_path):
    db = tmp_path / "store.db"
    with MemoryStore(db) as store:
        store.add_many(SEED_SAMPLE)
        store.backup(tmp_path / "copy.db")
        assert mode(tmp_path / "copy.db") == 0o600
        os.chmod(tmp_path / "copy.db", 0o640)
        store.backup(tmp_path / "copy.db", force=True)
        assert mode(tmp_path / "copy.db") == 0o640
    assert sorted(p.name for p in tmp_path.iterdir() if "partial" in p.name) == []



def test_a_backup_never_writes_into_a_partial_file_someone_else_made(tmp_path):
    # In a shared directory another user could plant the partial file, world-readable, before
    # the backup opens it: the backup refuses, and nothing is copied into it.
    db = tmp_path / "store.db"
    with MemoryStore(db) as store:
        store.add_many(SEED_SAMPLE)
        planted = tmp_path / f".copy.db.partial-{os.getpid()}"
        planted.touch(mode=0o666)
        os.chmod(planted, 0o666)
        with pytest.raises(MemstoreError, match="is in the way"):
            store.backup(tmp_path / "copy.db")
    assert planted.stat().st_size == 0 and not (tmp_path / "copy.db").exists()


def test_a_sqlite_uri_filename_is_refused_rather_than_created_readable(tmp_path):
    # SQLite would create the file a URI names itself, with the umask's mode, and memstore would
    # make a private file at a path that is not the store: so only paths are taken.
    result = CliRunner().invoke(cli, ["--db", f"sqlite:///file:{tmp_path}/uri.db?uri=true", "init"])
    assert result.exit_code == 1 and result.output.count("\n") == 1 and "not a SQLite URI filename" in result.output
    assert list(tmp_path.iterdir()) == [] and not Path("file:").exists()

def test_exports_are_private_and_an_existing_file_keeps_its_mode(tmp_path):
    db = tmp_path / "store.db"
    with MemoryStore(db) as store:
        store.add_many(SEED_SAMPLE)
    out = tmp_path / "export.jsonl"
    assert invoke(db, "export", "-o", str(out)).exit_code == 0
    assert mode(out) == 0o600
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["m3", "m1", "m2"]  # rank order
    os.chmod(out, 0o644)
    assert invoke(db, "export", "-o", str(out), "--archived").exit_code == 0
    assert mode(out) == 0o644 and out.read_text() == ""  # truncated and rewritten: nothing archived yet


def test_check_reports_a_store_others_can_read_and_fix_makes_it_private(tmp_path):
    db = tmp_path / "store.db"
    MemoryStore(db).close()
    os.chmod(db, 0o644)
    found = invoke(db, "check")
    assert found.exit_code == 1
    assert f"FOUND  permissions: {db} is mode 0644: other local users can open it" in found.output
    fixed = invoke(db, "check", "--fix")
    assert fixed.exit_code == 0 and f"fixed  permissions: {db} is mode 0644" in fixed.output
    assert mode(db) == 0o600
    assert "permissions" not in invoke(db, "check").output


@pytest.mark.slow
def test_the_quickstart_store_is_private(tmp_path):
    store = tmp_path / "try.db"
    done = subprocess.run(
        [str(REPO / "scripts" / "quickstart")], env={**os.environ, "MEMSTORE_DB": str(store)},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "run 1: 10 live before; kept 5 (1 pinned), archived 3 duplicates and 2 evicted" in done.stdout
    assert mode(store) == 0o600


PASSWORD = "s3cret-pw"


def test_a_database_password_never_reaches_output(pg_url, tmp_path):
    """Every command run against a PostgreSQL URL that carries a password (the test server trusts
    loopback, so it is accepted and ignored), successes and failures alike: the password appears
    in no output, no log line, no run record."""
    url = pg_url.replace("postgres@", f"postgres:{PASSWORD}@", 1)
    assert PASSWORD in url
    missing_db = url.rsplit("/", 1)[0] + "/no_such_database"
    (tmp_path / "in.jsonl").write_text('{"id": "i1", "text": "Imported fact."}\n')
    (tmp_path / "checks.json").write_text('[{"query": "fact", "expect_id": "p1"}]')
    runs = [
        ["init"], ["path"], ["add", "A fact about Paris.", "--id", "p1"], ["add", "Another fact.", "--id", "p2"],
        ["add", "another fact!", "--id", "p3"], ["list"], ["list", "--json"], ["show", "p1"], ["history", "p1"],
        ["import", str(tmp_path / "in.jsonl")], ["export"], ["report"], ["report", "--json"], ["recall", "fact"],
        ["consolidate", "--capacity", "10"], ["consolidate", "--capacity", "10", "--dry-run", "--json"],
        ["prune", "--dry-run"], ["maintain"], ["maintain", "--json"], ["runs"], ["runs", "--json"], ["restore", "--run", "1"],
        ["forget", "p2"], ["update", "p1", "--text", "A corrected fact about Paris."], ["flags"],
        ["verify", str(tmp_path / "checks.json")], ["check"], ["check", "--json"], ["embeddings", "status"],
        ["backup", str(tmp_path / "backup.db")], ["copy", url, str(tmp_path / "copy.db")],
        ["copy", str(tmp_path / "copy.db"), url],  # refused: the target holds memories, and is named
        ["show", "nope"], ["add", ""],
    ]  # fmt: skip
    outputs = []
    for args in runs:
        result = CliRunner().invoke(cli, ["--db", url, *args])
        outputs.append((args, result.exit_code, result.output + (result.stderr if result.stderr_bytes is not None else "")))
        assert not isinstance(result.exception, (AssertionError, TypeError)), (args, result.exception)
    by_command = {tuple(args): (code, output) for args, code, output in outputs}
    for args in (["list"], ["init"]):  # a database that is not there: errors name the URL
        result = CliRunner().invoke(cli, ["--db", missing_db, *args])
        outputs.append((args, result.exit_code, result.output))
        assert result.exit_code == 1 and result.output.startswith("Error: database error at postgresql+psycopg://postgres:***@")
    leaked = [(args, output) for args, _, output in outputs if PASSWORD in output]
    assert leaked == []
    assert by_command[("path",)] == (0, url.replace(PASSWORD, "***") + "\n")
    assert "undo with: memstore --db 'postgresql+psycopg://postgres:***@" in by_command[("consolidate", "--capacity", "10")][1]
    assert by_command[("copy", str(tmp_path / "copy.db"), url)][0] == 1
    assert sum(code == 0 for _, code, _ in outputs) >= 25  # the commands ran, not only failed
    # The server's log, on stdio until its input ends.
    done = subprocess.run(
        [str(Path(sys.executable).with_name("memstore")), "--db", url, "mcp"], stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert "on stdio" in done.stderr and PASSWORD not in done.stdout + done.stderr
    # Nothing the store records holds it either.
    with MemoryStore(url) as store:
        assert PASSWORD not in json.dumps(store.runs(), default=str) and PASSWORD not in store.url
