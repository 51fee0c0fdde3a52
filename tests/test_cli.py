"""The `memstore` command line, through click's CliRunner, a real subprocess and the real sqlite3 shell."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memstore import MemoryStore
from memstore.cli import cli
from memstore.cli.app import COMMANDS
from memstore.migrate import SCHEMA_HEAD

from .conftest import SEED_SAMPLE, import_counts

MEMSTORE_BIN = str(Path(sys.executable).with_name("memstore"))

SEED_HYGIENE_FIXTURE = """\
{"id": "m1", "text": "alpha beta gamma delta epsilon zeta eta theta iota kappa", "created_at": "2026-10-01", "recall_count": 6, "last_recalled_at": "2026-10-10"}
{"id": "m2", "text": "alpha beta gamma delta epsilon zeta eta theta iota kappa", "created_at": "2026-10-02", "recall_count": 0}
{"id": "m3", "text": "alpha beta gamma delta epsilon zeta eta theta iota lambda", "created_at": "2026-09-20", "recall_count": 2, "last_recalled_at": "2026-10-05"}
{"id": "m4", "text": "Old vendor pricing was forty dollars per seat", "created_at": "2024-01-01", "recall_count": 0}
{"id": "m5", "text": "The office wifi is not open to guests", "created_at": "2026-08-01", "recall_count": 3, "last_recalled_at": "2026-10-01"}
{"id": "m6", "text": "The office wifi is open to guests", "created_at": "2026-09-01", "recall_count": 1, "last_recalled_at": "2026-10-02"}
{"id": "m7", "text": "Pinned safety note keep this record", "created_at": "2024-06-01", "recall_count": 0, "pinned": true}
"""


@pytest.fixture
def run(db_path):
    runner = CliRunner()

    def invoke(*args, input=None):
        return runner.invoke(cli, ["--db", str(db_path), *args], input=input, catch_exceptions=False)

    return invoke


@pytest.fixture
def sample_file(tmp_path):
    path = tmp_path / "sample.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in SEED_SAMPLE))
    return path


def test_seed_sample_through_the_cli_leaves_m3_then_m2(run, sample_file, db_path):
    assert run("import", str(sample_file)).output == "imported 3 memories (0 already stored)\n"
    result = run("consolidate", "--capacity", "5", "--json", "--list-kept")
    assert result.exit_code == 0
    report = json.loads(result.output)
    assert report["kept_ids"] == ["m3", "m2"]
    assert report["archived"] == [
        {"id": "m1", "namespace": "default", "reason": "duplicate", "superseded_by": "m2", "similarity": None, "text": "User prefers dark mode."}
    ]
    assert [r["id"] for r in json.loads(run("list", "--json").output)] == ["m3", "m2"]


def test_norm_key_reads_back_through_the_real_sqlite3_shell(run, sample_file, db_path):
    run("import", str(sample_file))
    run("consolidate", "--capacity", "5")
    shell = shutil.which("sqlite3")
    assert shell, "the sqlite3 shell is part of the test setup (scripts/test installs it)"
    out = subprocess.run(
        [shell, str(db_path), "SELECT id, norm_key FROM memories ORDER BY importance DESC, timestamp DESC, id;"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert out == "m3|deploys on fridays\nm2|user prefers dark mode\n"


def test_the_installed_command_runs_in_a_real_subprocess(tmp_path, sample_file):
    env = dict(os.environ, MEMSTORE_DB=str(tmp_path / "sub.db"))
    subprocess.run([MEMSTORE_BIN, "import", str(sample_file)], env=env, check=True, capture_output=True)
    done = subprocess.run([MEMSTORE_BIN, "consolidate", "-c", "5"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("run 1: 3 live before; kept 2 (0 pinned), archived 1 duplicates and 0 evicted")
    assert done.stdout.endswith("undo with: memstore restore --run 1\n")
    bad = subprocess.run([MEMSTORE_BIN, "show", "nope"], env=env, capture_output=True, text=True)
    assert (bad.returncode, bad.stderr) == (1, "Error: no memory with id 'nope'\n")


def test_bad_import_names_file_line_and_field_and_writes_nothing(run, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "text": "fine"}\n\n{"id": "b", "text": "x", "importance": "high"}\n')
    result = run("import", str(path))
    assert result.exit_code == 1
    assert result.output == f"Error: {path} line 3: field 'importance': must be an integer in 1..5, got 'high'\n"
    assert json.loads(run("list", "--json").output) == []


def test_import_from_stdin_json_array(run):
    result = run("import", "-", "--json", input=json.dumps(SEED_SAMPLE))
    assert import_counts(result.output) == {"added": 3, "unchanged": 0, "skipped": 0}
    again = run("import", "-", "--json", input=json.dumps(SEED_SAMPLE))
    assert import_counts(again.output) == {"added": 0, "unchanged": 3, "skipped": 0}


def test_import_of_the_hygiene_format_derives_timestamp_and_fact_key(run, tmp_path):
    path = tmp_path / "memories.jsonl"
    path.write_text(SEED_HYGIENE_FIXTURE + '{"id": "k", "text": "t", "created_at": "2026-01-01", "updated_at": "2026-02-01T12:00:00Z", "key": "plan"}\n')
    assert run("import", str(path)).exit_code == 0
    m4 = json.loads(run("show", "m4", "--json").output)
    assert m4["timestamp"] == m4["created_at"] == 1704067200000  # 2024-01-01 UTC
    m1 = json.loads(run("show", "m1", "--json").output)
    assert (m1["recall_count"], m1["last_recalled_at"]) == (6, 1791590400000)
    k = json.loads(run("show", "k", "--json").output)
    assert (k["timestamp"], k["fact_key"]) == (1769947200000, "plan")
    assert json.loads(run("show", "m7", "--json").output)["pinned"] is True


def test_export_then_import_round_trips(run, sample_file, tmp_path):
    run("import", str(sample_file))
    run("consolidate", "-c", "5")
    live = run("export").output
    archived = run("export", "--archived").output
    assert [json.loads(line)["id"] for line in live.splitlines()] == ["m3", "m2"]
    assert [json.loads(line)["reason"] for line in archived.splitlines()] == ["duplicate"]
    assert "norm_key" not in live
    other = CliRunner().invoke(cli, ["--db", str(tmp_path / "copy.db"), "import", "-"], input=live)
    assert other.exit_code == 0, other.output
    copy = CliRunner().invoke(cli, ["--db", str(tmp_path / "copy.db"), "export"]).output
    assert copy == live


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
def test_export_refuses_to_write_over_the_store_itself(run, db_path, suffix):
    run("add", "User prefers dark mode.", "--id", "m1")
    result = run("export", "-o", str(db_path) + suffix)
    assert result.exit_code == 1 and "is the store itself" in result.output and result.output.count("\n") == 1
    assert [json.loads(line)["id"] for line in run("export").output.splitlines()] == ["m1"]


def test_namespace_and_all_namespaces_are_exclusive(run):
    result = CliRunner().invoke(cli, ["list", "--namespace", "a", "--all-namespaces"])
    assert result.exit_code == 2 and "not both" in result.output


def test_runs_and_restore(run, sample_file):
    run("import", str(sample_file))
    run("consolidate", "-c", "0")
    runs = json.loads(run("runs", "--json").output)
    assert [(r["id"], r["status"], r["kept"], r["duplicates"], r["evicted"]) for r in runs] == [(1, "applied", 0, 1, 2)]
    assert run("restore", "--run", "1").output.splitlines() == [
        "run 1 restored: 3 memories back in the live set", "  back: m1  User prefers dark mode.", "  back: m2  user prefers DARK mode",
        "  back: m3  Deploys on Fridays",
    ]  # fmt: skip
    assert len(json.loads(run("list", "--json").output)) == 3


def test_restore_twice_is_an_error_with_exit_1(run, sample_file):
    run("import", str(sample_file))
    run("consolidate", "-c", "1")
    assert run("restore", "--run", "1").exit_code == 0
    result = run("restore", "--run", "1")
    assert (result.exit_code, result.output) == (1, "Error: run 1 was already restored\n")
    assert run("restore", "--run", "42").exit_code == 1


def test_add_prints_the_id_and_rejects_bad_values(run):
    assert run("add", "User prefers dark mode.", "--id", "m1", "-i", "4").output == "m1\n"
    row = json.loads(run("show", "m1", "--json").output)
    assert (row["importance"], row["norm_key"]) == (4, "user prefers dark mode")
    bad = run("add", "x", "--importance", "9")
    assert bad.exit_code == 1 and bad.output == "Error: memory: field 'importance': must be an integer in 1..5, got 9\n"
    conflict = run("add", "another text", "--id", "m1")
    assert conflict.exit_code == 1 and "already holds a different memory" in conflict.output
    assert run("add", "x", "--meta", "{not json").exit_code == 2


def test_dry_run_writes_nothing(run, sample_file):
    run("import", str(sample_file))
    out = run("consolidate", "-c", "1", "--dry-run").output
    assert out.startswith("dry run, nothing written: 3 live; would keep 1 (0 pinned), archive 1 duplicates and 1 evicted")
    assert len(json.loads(run("list", "--json").output)) == 3
    assert json.loads(run("runs", "--json").output) == []


def test_undo_hint_names_the_store_given_with_db(run, sample_file, db_path):
    run("import", str(sample_file))
    assert run("consolidate", "-c", "5").output.endswith(f"undo with: memstore --db {db_path} restore --run 1\n")


def test_read_commands_do_not_create_a_missing_store(tmp_path):
    missing = tmp_path / "typo.db"
    for args in (["list"], ["show", "x"], ["runs"], ["consolidate", "-c", "1"], ["export"]):
        result = CliRunner().invoke(cli, ["--db", str(missing), *args])
        assert result.exit_code == 1, args
        assert result.output == f"Error: no memstore database at {missing}; create it with `memstore init`\n"
    assert not missing.exists()


def test_path_defaults_to_the_app_dir_and_follows_env(tmp_path, monkeypatch):
    result = CliRunner().invoke(cli, ["path"])
    assert result.output == str(tmp_path / "config" / "memstore" / "memstore.db") + "\n"
    monkeypatch.setenv("MEMSTORE_DB", str(tmp_path / "env.db"))
    assert CliRunner().invoke(cli, ["path"]).output == str(tmp_path / "env.db") + "\n"


def test_list_shows_a_readable_table(run, sample_file):
    run("import", str(sample_file))
    lines = run("list").output.splitlines()
    assert lines[0].split() == ["id", "namespace", "importance", "written", "(UTC)", "expires", "(UTC)", "pinned", "text"]
    assert [line.split()[0] for line in lines[2:]] == ["m3", "m1", "m2"]


NEW_YEAR = 1767225600000  # 2026-01-01T00:00:00Z


def test_list_history_and_show_print_utc_date_times_and_json_keeps_the_ms(run):
    run("add", "Deploys on Fridays", "--id", "m1", "--timestamp", str(NEW_YEAR), "--expires-at", "2031-05-06T07:08:09Z")
    lines = run("list").output.splitlines()
    assert lines[0].split()[3:7] == ["written", "(UTC)", "expires", "(UTC)"]
    assert "2026-01-01 00:00:00  2031-05-06 07:08:09" in lines[2] and str(NEW_YEAR) not in lines[2]
    shown = dict(line.split(None, 1) for line in run("show", "m1").output.splitlines() if len(line.split(None, 1)) == 2)
    assert (shown["timestamp"], shown["expires_at"]) == ("2026-01-01 00:00:00 UTC", "2031-05-06 07:08:09 UTC")
    assert json.loads(run("show", "m1", "--json").output)["timestamp"] == NEW_YEAR
    assert json.loads(run("list", "--json").output)[0]["expires_at"] == 1935817689000
    run("update", "m1", "--text", "Deploys on Thursdays")
    history = run("history", "m1").output.splitlines()
    assert history[0].split()[5:9] == ["written", "(UTC)", "archived", "(UTC)"]
    assert "2026-01-01 00:00:00" in history[2] and str(NEW_YEAR) not in history[2]
    archived = run("list", "--archived").output.splitlines()
    assert archived[0].split()[5:7] == ["archived", "(UTC)"] and archived[2].split()[:2] == ["m1", "default"]


def test_runs_shows_the_newest_20_and_what_each_did(run):
    run("import", "-", input="".join(json.dumps({"id": f"m{n:02}", "text": f"fact {n}"}) + "\n" for n in range(22)))
    for n in range(21):
        run("forget", f"m{n:02}")
    run("add", "fact 21", "--id", "copy")  # the same text as m21: a duplicate
    run("consolidate", "-c", "5")
    lines = run("runs").output.splitlines()
    assert lines[0].split() == ["run", "kind", "namespace", "started", "(UTC)", "status", "did"]
    assert len(lines) == 2 + 20 + 1 and lines[-1] == "(runs 1-20, newest first; --offset 20 shows older ones, --all every one)"
    assert lines[2].split()[:2] == ["22", "consolidate"] and lines[2].endswith("applied  1 duplicate")
    assert lines[3].split()[:2] == ["21", "forget"] and lines[3].endswith("applied  1 forgotten")
    assert len(run("runs", "--all").output.splitlines()) == 2 + 22
    assert len(run("runs", "--limit", "3").output.splitlines()) == 2 + 3 + 1
    assert [r["id"] for r in json.loads(run("runs", "--json").output)] == list(range(22, 2, -1))
    older = run("runs", "--offset", "20").output.splitlines()
    assert [line.split()[0] for line in older[2:]] == ["2", "1"]
    assert json.loads(run("runs", "--json", "--limit", "1").output)[0]["did"] == {"duplicates": 1}


def test_runs_n_shows_one_run_whole_and_restore_dry_run_previews_the_undo(run, sample_file, db_path):
    run("import", str(sample_file))
    run("consolidate", "-c", "1")
    whole = run("runs", "1").output.splitlines()
    assert whole[0].startswith("run 1: consolidate in default, started ") and whole[0].endswith(" UTC, applied")
    assert whole[1] == "did: 1 duplicate, 1 evicted"
    assert whole[2:6] == [
        "archived (2):", "id  namespace  reason     superseded_by  cosine  text", "--  ---------  ---------  -------------  ------  " + "-" * 23,
        "m1  default    duplicate  m2                     User prefers dark mode.",
    ]  # fmt: skip
    assert whole[6].split() == ["m2", "default", "evicted", "user", "prefers", "DARK", "mode"]
    assert whole[-1] == f"undo with: memstore --db {db_path} restore --run 1 (--dry-run shows what it would bring back)"
    preview = run("restore", "--run", "1", "--dry-run")
    assert preview.output.splitlines() == [
        "dry run, nothing written: restoring run 1 (consolidate) would change: 2 memories back in the live set",
        "  back: m1  User prefers dark mode.", "  back: m2  user prefers DARK mode", f"restore with: memstore --db {db_path} restore --run 1",
    ]  # fmt: skip
    assert [m["id"] for m in json.loads(run("list", "--json").output)] == ["m3"]
    assert json.loads(run("restore", "--run", "1", "--dry-run", "--json").output)["restored_ids"] == ["m1", "m2"]
    run("restore", "--run", "1")
    restored = run("runs", "1").output.splitlines()
    assert ", restored " in restored[0] and not any(line.startswith("undo") for line in restored)
    assert restored[restored.index("restored (2):") + 1 :][:2] == ["  m1  User prefers dark mode.", "  m2  user prefers DARK mode"]
    missing = run("runs", "9")
    assert (missing.exit_code, missing.output) == (1, "Error: no run 9; `memstore runs` lists them\n")


def test_consolidate_prints_a_summary_and_the_first_archived_rows(run):
    run("import", "-", input="".join(json.dumps({"id": f"m{n:02}", "text": f"fact {n}"}) + "\n" for n in range(13)))
    lines = run("consolidate", "-c", "0", "--dry-run").output.splitlines()
    assert lines[0] == "dry run, nothing written: 13 live; would keep 0 (0 pinned), archive 0 duplicates and 13 evicted"
    assert len(lines) == 1 + 2 + 10 + 1 and lines[-1] == "... and 3 more (--all lists every one, --json too)"
    every = run("consolidate", "-c", "0", "--all").output.splitlines()
    assert len(every) == 1 + 2 + 13 + 1 and every[-1].startswith("undo with: ")
    pruned = run("prune", "--dry-run", "--all")
    assert pruned.exit_code == 0


@pytest.mark.parametrize("rows", [3, 3000], ids=["buffered", "while-printing"])
def test_a_closed_pipe_ends_the_command_quietly(tmp_path, rows):
    """`memstore list | head -1`: no traceback, no "Broken pipe" error, exit 0. With few rows the
    output waits in stdout's buffer until exit; with many the write fails while printing."""
    env = dict(os.environ, MEMSTORE_DB=str(tmp_path / "pipe.db"))
    with MemoryStore(env["MEMSTORE_DB"]) as store:
        store.add_many([{"id": f"m{n}", "text": f"memory number {n} " * 5} for n in range(rows)])
    for read_first_line in (True, False):
        reader = subprocess.Popen([MEMSTORE_BIN, "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        if read_first_line:
            assert reader.stdout.readline().startswith(b"id ")
        reader.stdout.close()
        errors = reader.stderr.read()
        assert (reader.wait(timeout=60), errors) == (0, b"")


def test_an_export_into_a_missing_folder_names_the_folder(run, tmp_path):
    run("add", "fact", "--id", "m1")
    done = run("export", "-o", str(tmp_path / "nope" / "out.jsonl"))
    assert (done.exit_code, done.output) == (1, f"Error: {tmp_path / 'nope'} does not exist (the folder to write out.jsonl in)\n")
    assert not (tmp_path / "nope").exists()


def test_an_unopenable_database_is_one_line_exit_1(tmp_path):
    result = CliRunner().invoke(cli, ["--db", str(tmp_path), "list"])  # a directory, not a file
    assert result.exit_code == 1 and result.output.startswith("Error: ") and result.output.count("\n") == 1


def every_command() -> dict[str, click.Command]:
    """The group's commands by name, each loaded from its module as a run of it loads it."""
    ctx = click.Context(cli)
    return {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}


def test_every_command_has_an_example_in_its_help():
    commands = every_command()
    assert len(commands) == len(COMMANDS) >= 20
    for name, command in commands.items():
        assert "Example:" in (command.help or ""), name


def test_a_mistyped_command_is_answered_with_the_command_meant():
    result = CliRunner().invoke(cli, ["embedings"])
    assert result.exit_code == 2 and "Error: No such command 'embedings'. Did you mean 'embeddings'?" in result.output


def test_the_command_map_names_every_command_its_modules_define():
    """A command defined in a module but missing from COMMANDS would never run: every top-level
    command of the modules COMMANDS points into is in it, under its own name."""
    defined = {}
    for module_name in {where.split(":")[0] for where in COMMANDS.values()}:
        module = importlib.import_module(f"memstore.cli.{module_name}")
        found = [value for value in vars(module).values() if isinstance(value, click.Command)]
        inside_groups = {id(sub) for group in found if isinstance(group, click.Group) for sub in group.commands.values()}
        defined |= {command.name: module_name for command in found if id(command) not in inside_groups}
    assert defined == {name: where.split(":")[0] for name, where in COMMANDS.items()}


def test_import_reports_progress_per_line(store, tmp_path):
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps({"id": f"p{i}", "text": f"fact {i}"}) + "\n" for i in range(50)))
    seen = []
    with path.open("rb") as source:
        store.import_from("memstore", source, name=str(path), progress=lambda line, total: seen.append((line, total)))
    assert seen[0] == (1, 51) and seen[-1] == (50, 51) and len(seen) == 50


def _modules_after(
    code: str, cwd: Path, prefixes: tuple[str, ...] = ("memstore", "alembic", "sqlalchemy.orm", "sqlalchemy.dialects.postgresql")
) -> set[str]:
    """The modules starting with `prefixes` (by default memstore's, alembic's and the heavier
    SQLAlchemy ones) a fresh interpreter has loaded after running `code`."""
    script = code + f"\nimport sys, json; print(json.dumps(sorted(m for m in sys.modules if m.startswith({prefixes!r}))))"
    done = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


# What a per-turn hook's command on a SQLite store must not pay for (the PostgreSQL dialect: 25 ms).
JOB_MODULES = {
    "alembic", "memstore.consolidate", "memstore.prune", "memstore.expire", "memstore.runs", "memstore.hygiene",
    "memstore.fulltext", "memstore.recall", "memstore.recall_checks", "memstore.integrity", "memstore.backup",
    "memstore.reference", "sqlalchemy.orm", "sqlalchemy.dialects.postgresql",
}  # fmt: skip


def test_importing_the_cli_loads_neither_alembic_nor_the_job(tmp_path):
    assert not _modules_after("import memstore.cli", tmp_path) & JOB_MODULES


@pytest.mark.parametrize("command", [["add", "User prefers dark mode."], ["list"], ["show", "m1"]])
def test_a_command_on_a_store_at_head_loads_only_what_it_uses(tmp_path, command):
    db = tmp_path / "store.db"
    with MemoryStore(db) as store:
        store.add("first", id="m1")
    code = (
        "from click.testing import CliRunner\nfrom memstore.cli import cli\n"
        f"result = CliRunner().invoke(cli, {['--db', str(db), *command]!r}, catch_exceptions=False)\n"
        "assert result.exit_code == 0, result.output"
    )
    assert not _modules_after(code, tmp_path) & JOB_MODULES


def test_a_command_loads_the_module_of_its_own_commands_only(tmp_path):
    db = tmp_path / "store.db"
    MemoryStore(db).close()
    code = (
        "from click.testing import CliRunner\nfrom memstore.cli import cli\n"
        f"result = CliRunner().invoke(cli, ['--db', {str(db)!r}, 'add', 'x'], catch_exceptions=False)\n"
        "assert result.exit_code == 0, result.output"
    )
    command_modules = {f"memstore.cli.{where.split(':')[0]}" for where in COMMANDS.values()}
    assert _modules_after(code, tmp_path) & command_modules == {"memstore.cli.memories"}


def test_add_loads_one_sqlite_library(tmp_path):
    """`add` loads Python's own sqlite3 and no second SQLite library (sqlean), with or without the
    semantic extra installed: two copies of SQLite must not open one file in a process."""
    db = tmp_path / "store.db"
    MemoryStore(db).close()
    code = (
        "from click.testing import CliRunner\nfrom memstore.cli import cli\n"
        f"result = CliRunner().invoke(cli, ['--db', {str(db)!r}, 'add', 'x'], catch_exceptions=False)\n"
        "assert result.exit_code == 0, result.output"
    )
    loaded = {name.split(".")[0] for name in _modules_after(code, tmp_path, prefixes=("sqlite3", "sqlean"))}
    assert loaded == {"sqlite3"}


def test_recall_loads_full_text_search_but_not_alembic_or_the_job(tmp_path):
    db = tmp_path / "store.db"
    MemoryStore(db).close()
    code = f"from click.testing import CliRunner\nfrom memstore.cli import cli\nCliRunner().invoke(cli, ['--db', {str(db)!r}, 'recall', 'x'])"
    loaded = _modules_after(code, tmp_path)
    assert "memstore.fulltext" in loaded
    assert not loaded & {"alembic", "memstore.consolidate", "memstore.integrity", "sqlalchemy.orm", "sqlalchemy.dialects.postgresql"}


def test_a_store_behind_head_still_loads_alembic_and_is_upgraded(tmp_path):
    db = tmp_path / "new.db"  # missing: created and migrated
    loaded = _modules_after(f"from memstore import MemoryStore\nMemoryStore({str(db)!r}).close()", tmp_path)
    assert "alembic" in loaded
    assert sqlite3_rows(db, "SELECT version_num FROM alembic_version") == [(SCHEMA_HEAD,)]


def sqlite3_rows(path: Path, query: str) -> list[tuple]:
    import sqlite3

    with sqlite3.connect(path) as conn:
        return conn.execute(query).fetchall()


def _no_change_report(tmp_path: Path, size: int) -> str:
    db = tmp_path / f"store-{size}.db"
    with MemoryStore(db) as store:
        store.add_many({"id": f"m{n:05d}", "text": f"fact number {n}", "timestamp": n} for n in range(size))
        store.consolidate(size)  # consolidated: the next run changes nothing
    result = CliRunner().invoke(cli, ["--db", str(db), "consolidate", "--capacity", str(size), "--json"], catch_exceptions=False)
    assert result.exit_code == 0
    return result.output


def test_a_run_that_changes_nothing_reports_the_same_on_100_and_10000_memories(tmp_path):
    import re

    small, large = _no_change_report(tmp_path, 100), _no_change_report(tmp_path, 10_000)
    assert small.count("\n") == large.count("\n") == 1  # one line
    assert "kept_ids" not in small and json.loads(large)["kept"] == 10_000
    # Same document, byte for byte, once each number is written at one width: the live set's size
    # shows only in the digits of its counts.
    def same_width(report: str) -> str:
        return re.sub(r"\d+", "0", report)

    assert same_width(small) == same_width(large)
    assert len(large) - len(small) == 3 * len("10000") - 3 * len("100")  # capacity, live_before, kept


def test_list_kept_asks_for_every_kept_id(run, sample_file):
    run("import", str(sample_file))
    listed = json.loads(run("consolidate", "--capacity", "5", "--dry-run", "--json", "--list-kept").output)
    assert listed["kept_ids"] == ["m3", "m2"]
    human = run("consolidate", "--capacity", "5", "--list-kept").output
    assert "kept: m3 m2\n" in human


def test_only_the_commands_whose_checks_gate_the_run_say_so():
    # maintain's verify phase runs after the other phases have committed: it reports, it does not hold back.
    helps = {name: CliRunner().invoke(cli, [name, "--help"]).output for name in ("consolidate", "prune", "maintain")}
    assert "apply only if all pass" in helps["consolidate"] and "apply only if all pass" in helps["prune"]
    assert "apply only if all pass" not in helps["maintain"] and "holds nothing back" in helps["maintain"]


@pytest.mark.parametrize("command", [["show", "\udcff"], ["history", "\udcff"], ["list", "-n", "\udcff"], ["forget", "\udcff"]])
def test_an_argument_that_is_not_utf8_is_one_line_naming_it(run, command):
    run("add", "x", "--id", "g")
    result = run(*command)
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert "not valid UTF-8" in result.output and "unexpected" not in result.output


def test_a_memorys_control_characters_reach_a_terminal_as_escapes_not_as_commands(run):
    # A memory's text is whatever an agent read: an escape sequence in it must not drive the terminal
    # of the person who lists it, nor a bidirectional override reorder what they read.
    text = "Invoice paid\x1b[2J\x1b]0;owned\x07 \u202egnp.exe"
    run("add", text, "--id", "m1")
    for command in (["list"], ["show", "m1"], ["recall", "invoice"], ["history", "m1"]):
        output = run(*command).output
        assert "\x1b" not in output and "\x07" not in output and "\u202e" not in output, command
        assert "Invoice paid\\x1b[2J" in output, command
    assert json.loads(run("show", "m1", "--json").output)["text"] == text  # --json keeps the text exact
