"""Hardening of what goes in and out through files (issue 29, items 8, 9 and 10).

- `import --skip-invalid` skips and names a record whose `embedding` is of another model or width,
  found with the record's other fields; without it that record stops the import, named by file,
  line and field, before anything is written.
- A 400-digit integer in a vector is a line-numbered error, not "unexpected OverflowError"; a
  lifetime (`--ttl`, MCP's `expires_in`) takes ASCII digits only, as a moment (`--expires-at`) does.
- A file memstore writes is replaced (temporary file, rename) only when it is a regular file or
  absent: a character device or a FIFO is written into, a symlink is followed.

Every test runs the installed `memstore` in a subprocess, on SQLite and PostgreSQL where the path
exists (`backup` is SQLite-only).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from memstore import MemoryStore
from memstore.files import replaced_privately
from memstore.validate import parse_ttl

from .sqlitelib import sqlite3

MEMSTORE = str(Path(sys.executable).with_name("memstore"))
TIMEOUT = 120


def run(store_url: str, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess:
    """`memstore ARGS` on the store; never a traceback."""
    env = dict(os.environ, MEMSTORE_DB=str(store_url))
    done = subprocess.run([MEMSTORE, *args], env=env, input=input, capture_output=True, timeout=TIMEOUT)
    done.out = done.stdout.decode("utf-8", "replace")
    done.err = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in done.out + done.err, done.err
    return done


def assert_one_error(done: subprocess.CompletedProcess, prefix: str) -> None:
    """Exit 1, nothing on stdout, one line on stderr that starts with `prefix`."""
    assert done.returncode == 1, (done.out, done.err)
    assert done.out == ""
    assert done.err.count("\n") == 1 and done.err.endswith("\n"), repr(done.err)
    assert done.err.startswith(prefix), repr(done.err)
    assert "unexpected" not in done.err


def stored_ids(store_url: str) -> set[str]:
    with MemoryStore(store_url) as store:
        return {row["id"] for row in store.iter_rows(None)} | {row["id"] for row in store.iter_rows(None, archived=True)}


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# 8. A vector of another model or width, found with the record's other fields.
# ---------------------------------------------------------------------------------------------

UNIT = [1.0] + [0.0] * 383


@pytest.fixture
def model_store(store_url, model_dir):
    """An empty store on each backend with the real model enabled; yields the model's name."""
    with MemoryStore(store_url) as store:
        store.enable_embeddings(model_dir)
        yield store.embedding_status()["model"]


def test_skip_invalid_skips_and_names_a_vector_of_another_model_or_width(store_url, model_store, tmp_path):
    name = model_store
    path = write_jsonl(tmp_path / "vectors.jsonl", [
        {"id": "good", "text": "kept with its vector", "embedding": {"model": name, "vector": UNIT}},
        {"id": "other-model", "text": "a vector of another model", "embedding": {"model": "another-model", "vector": UNIT}},
        {"id": "narrow", "text": "a vector too narrow", "embedding": {"model": name, "vector": [1.0, 0.0]}},
        {"id": "plain", "text": "no vector at all"},
    ])  # fmt: skip
    done = run(store_url, "import", "--skip-invalid", str(path))
    assert done.returncode == 0, done.err
    assert done.err.splitlines() == [
        f"skipped: {path} line 2: field 'embedding': is from the model 'another-model', the store's is {name!r}",
        f"skipped: {path} line 3: field 'embedding': has 2 numbers, the store's model 384",
    ]
    assert done.out.strip() == "imported 2 memories (0 already stored); skipped 2 invalid records"
    assert stored_ids(store_url) == {"good", "plain"}
    with MemoryStore(store_url) as store:
        assert store.embedding_status()["pending"] == 1  # "plain" waits for a sync; "good" came with its vector


def test_skip_invalid_skips_a_vector_when_the_store_has_no_model(store_url, tmp_path):
    path = write_jsonl(tmp_path / "vectors.jsonl", [
        {"id": "plain", "text": "no vector"},
        {"id": "carried", "text": "a vector, but no model here", "embedding": {"model": "m", "vector": [1.0, 0.0]}},
    ])  # fmt: skip
    done = run(store_url, "import", "--skip-invalid", str(path))
    assert done.returncode == 0, done.err
    assert done.err.splitlines() == [
        f"skipped: {path} line 2: field 'embedding': the store has no embedding model: run `memstore embeddings enable` first"
    ]
    assert stored_ids(store_url) == {"plain"}


@pytest.mark.parametrize("bad", ["model", "width"])
def test_without_skip_invalid_a_bad_vector_stops_the_import_before_anything_is_written(store_url, model_store, tmp_path, bad):
    name = model_store
    embedding = {"model": "another-model", "vector": UNIT} if bad == "model" else {"model": name, "vector": [1.0, 0.0]}
    problem = f"is from the model 'another-model', the store's is {name!r}" if bad == "model" else "has 2 numbers, the store's model 384"
    path = write_jsonl(tmp_path / "vectors.jsonl", [
        {"id": "first", "text": "a good one"},
        {"id": "second", "text": "the bad vector", "embedding": embedding},
        # Found only once the import writes (an id twice in one file): the record before it, with a
        # field that is wrong, is the one the error must name.
        {"id": "first", "text": "the id of line 1 again"},
    ])  # fmt: skip
    done = run(store_url, "import", str(path))
    assert_one_error(done, f"Error: {path} line 2: field 'embedding': {problem}")
    assert stored_ids(store_url) == set()


# ---------------------------------------------------------------------------------------------
# 9. A huge integer in a vector; a lifetime in other digits than ASCII.
# ---------------------------------------------------------------------------------------------

HUGE = "9" * 400  # an integer JSON allows and Python parses, too large for a float


def test_a_huge_integer_in_a_vector_is_a_line_numbered_error(store_url, tmp_path):
    huge_record = '{"id": "huge", "text": "x", "embedding": {"model": "m", "vector": [0.5, ' + HUGE + "]}}"
    jsonl = write_jsonl(tmp_path / "huge.jsonl", [{"id": "good", "text": "fine"}, huge_record])
    done = run(store_url, "import", str(jsonl))
    assert_one_error(done, f"Error: {jsonl} line 2: field 'embedding': ")
    assert stored_ids(store_url) == set()
    array = tmp_path / "huge.json"
    array.write_text('[\n{"id": "good", "text": "fine"},\n\n' + huge_record + "\n]\n", encoding="utf-8")
    done = run(store_url, "import", str(array))
    assert_one_error(done, f"Error: {array} line 4: field 'embedding': ")
    assert stored_ids(store_url) == set()
    done = run(store_url, "import", "--skip-invalid", str(jsonl))
    assert done.returncode == 0 and done.err.startswith(f"skipped: {jsonl} line 2: field 'embedding': "), done.err
    assert stored_ids(store_url) == {"good"}


NON_ASCII_LIFETIMES = ["١٢s", "۱۲h", "１２m", "1٫5d", "१०s"]  # Arabic-Indic, Persian, fullwidth, Arabic separator, Devanagari


@pytest.mark.slow
@pytest.mark.parametrize("lifetime", NON_ASCII_LIFETIMES)
def test_ttl_takes_ascii_digits_only_as_expires_at_does(store_url, lifetime):
    done = run(store_url, "add", "A fact with an odd lifetime.", "--id", "m1", "--ttl", lifetime)
    assert_one_error(done, "Error: --ttl: is not a lifetime: ")
    assert run(store_url, "add", "A fact.", "--id", "m2", "--ttl", "12s").returncode == 0  # ASCII: fine
    done = run(store_url, "update", "m2", "--ttl", lifetime)
    assert_one_error(done, "Error: --ttl: is not a lifetime: ")
    with MemoryStore(store_url) as store:
        assert stored_ids(store_url) == {"m2"}
        assert store.get("m2")["text"] == "A fact."


OTHER_DIGIT_OPTIONS = [
    ("add", "x", "--timestamp", "١٢"),  # a moment, as --expires-at
    ("add", "x", "--importance", "٣"),
    ("prune", "--min-age-days", "١٢", "--dry-run"),  # a duration
    ("prune", "--stale-threshold", "٠.٥", "--dry-run"),
    ("list", "--limit", "３"),
    ("add", "x", "--timestamp", "1_000"),  # int() takes it; nobody writes a moment so
]


@pytest.mark.slow
@pytest.mark.parametrize("args", OTHER_DIGIT_OPTIONS, ids=lambda args: "-".join(a.lstrip("-") for a in args if a.startswith("--")))
def test_every_number_option_takes_ascii_digits_only(store_url, args):
    assert run(store_url, "add", "A fact.", "--id", "m1").returncode == 0
    done = run(store_url, *args)
    assert done.returncode == 2 and done.out == "", (done.out, done.err)
    assert done.err.splitlines()[-1].startswith("Error: Invalid value for "), done.err
    assert "is not a number in ASCII digits" in done.err
    assert stored_ids(store_url) == {"m1"}


def test_one_rule_for_a_lifetime_in_every_face():
    # The CLI's --ttl and the MCP tools' `expires_in` are both parsed by validate.parse_ttl.
    from memstore.cli import options
    from memstore.mcp import tools

    assert options.parse_ttl is parse_ttl and tools.parse_ttl is parse_ttl
    assert parse_ttl("12s") == 12.0 and parse_ttl(" 1.5h ") == 5400.0
    for lifetime in NON_ASCII_LIFETIMES:
        with pytest.raises(ValueError, match="is not a lifetime"):
            parse_ttl(lifetime, "expires_in")


def test_mcp_remember_refuses_a_lifetime_in_other_digits(tmp_path):
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    db = tmp_path / "store.db"

    async def scenario() -> list[str]:
        params = StdioServerParameters(command=MEMSTORE, args=["--db", str(db), "mcp"], env=dict(os.environ))
        answers = []
        with (tmp_path / "mcp.log").open("a") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                for lifetime in ("١٢s", "12s"):
                    result = await session.call_tool("remember", {"text": f"brief {lifetime}", "expires_in": lifetime})
                    answers.append(("error: " if result.is_error else "ok: ") + result.content[0].text)
        return answers

    async def bounded():
        with anyio.fail_after(60):
            return await scenario()

    refused, accepted = anyio.run(bounded)
    assert refused.startswith("error: ") and "expires_in" in refused and "is not a lifetime" in refused, refused
    assert accepted.startswith("ok: "), accepted


# ---------------------------------------------------------------------------------------------
# 10. A device, a FIFO or a symlink as the target of `export -o` and `backup --force`.
# ---------------------------------------------------------------------------------------------

NULL_DEVICE = os.makedev(1, 3)  # /dev/null's numbers on Linux


def make_null_device(path: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("making a character device needs root")
    os.mknod(path, stat.S_IFCHR | 0o666, NULL_DEVICE)
    return path


def assert_still_null_device(path: Path) -> None:
    info = os.lstat(path)
    assert stat.S_ISCHR(info.st_mode) and info.st_rdev == NULL_DEVICE, f"{path} is now {stat.filemode(info.st_mode)}"


class FifoReader:
    """A thread that opens `path` for reading (which waits for a writer) and reads it to the end."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path, 0o600)
        self.path, self.data = path, None
        # A daemon: if the FIFO is replaced, its open() waits for a writer forever.
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as pipe:
            self.data = pipe.read()

    def received(self) -> bytes | None:
        self.thread.join(timeout=30)
        return self.data

    def assert_still_fifo(self) -> None:
        info = os.lstat(self.path)
        assert stat.S_ISFIFO(info.st_mode), f"{self.path} is now {stat.filemode(info.st_mode)}"


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if "partial" in p.name)


@pytest.fixture
def one_memory(store_url):
    with MemoryStore(store_url) as store:
        store.add("The office is on the third floor.", id="m1")
    return store_url


def test_export_into_a_character_device_writes_into_it(one_memory, tmp_path):
    device = make_null_device(tmp_path / "null")
    done = run(one_memory, "export", "--all-namespaces", "-o", str(device))
    assert done.returncode == 0, done.err
    assert_still_null_device(device)
    assert leftovers(tmp_path) == []


def test_export_into_a_fifo_writes_into_it(one_memory, tmp_path):
    reader = FifoReader(tmp_path / "pipe")
    done = run(one_memory, "export", "--all-namespaces", "-o", str(reader.path))
    assert done.returncode == 0, done.err
    reader.assert_still_fifo()
    received = reader.received()
    assert received is not None and [json.loads(line)["id"] for line in received.splitlines()] == ["m1"]
    assert leftovers(tmp_path) == []


def test_export_to_dev_stdout_writes_into_the_pipe(one_memory):
    # /dev/stdout links to /proc/self/fd/1; when that is a pipe it has no file name to resolve to,
    # and a temporary file "beside" it cannot be made.
    done = run(one_memory, "export", "--all-namespaces", "-o", "/dev/stdout")
    assert done.returncode == 0, done.err
    assert [json.loads(line)["id"] for line in done.out.splitlines()] == ["m1"]


def test_export_through_a_symlink_writes_the_file_it_points_to(one_memory, tmp_path):
    real = tmp_path / "real.jsonl"
    real.write_text("old\n")
    os.chmod(real, 0o640)
    link = tmp_path / "link.jsonl"
    link.symlink_to(real.name)
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to("made-by-export.jsonl")
    for target in (link, dangling):
        done = run(one_memory, "export", "--all-namespaces", "-o", str(target))
        assert done.returncode == 0, done.err
        assert target.is_symlink()
    assert [json.loads(line)["id"] for line in real.read_text().splitlines()] == ["m1"]
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # the file it points to keeps its mode
    made = tmp_path / "made-by-export.jsonl"
    assert [json.loads(line)["id"] for line in made.read_text().splitlines()] == ["m1"]
    assert stat.S_IMODE(made.stat().st_mode) == 0o600
    assert leftovers(tmp_path) == []


@pytest.fixture
def sqlite_one_memory(tmp_path):
    db = tmp_path / "store.db"
    with MemoryStore(db) as store:
        store.add("The office is on the third floor.", id="m1")
    return db


def test_backup_force_into_a_character_device_writes_into_it(sqlite_one_memory, tmp_path):
    device = make_null_device(tmp_path / "null")
    done = run(sqlite_one_memory, "backup", str(device))
    assert_one_error(done, f"Error: {device} already exists; pass --force")
    done = run(sqlite_one_memory, "backup", "--force", str(device))
    assert done.returncode == 0, done.err
    assert_still_null_device(device)
    assert leftovers(tmp_path) == []


def test_backup_force_into_a_fifo_writes_the_copy_into_it(sqlite_one_memory, tmp_path):
    reader = FifoReader(tmp_path / "pipe")
    done = run(sqlite_one_memory, "backup", "--force", str(reader.path))
    assert done.returncode == 0, done.err
    reader.assert_still_fifo()
    received = reader.received()
    assert received is not None and received.startswith(b"SQLite format 3\x00")
    copy = tmp_path / "received.db"
    copy.write_bytes(received)
    con = sqlite3.connect(copy)
    try:
        assert con.execute("SELECT id FROM memories").fetchall() == [("m1",)]
    finally:
        con.close()
    assert leftovers(tmp_path) == []


def test_backup_force_through_a_symlink_replaces_the_file_it_points_to(sqlite_one_memory, tmp_path):
    real = tmp_path / "real.db"
    real.write_text("old")
    link = tmp_path / "link.db"
    link.symlink_to(real.name)
    done = run(sqlite_one_memory, "backup", "--force", str(link))
    assert done.returncode == 0, done.err
    assert link.is_symlink() and real.read_bytes().startswith(b"SQLite format 3\x00")
    assert leftovers(tmp_path) == []


def test_every_replaced_file_follows_a_symlink_and_writes_into_a_device(tmp_path):
    # The helper every file memstore writes goes through (export -o, the vector files).
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with replaced_privately(link) as file:
        file.write("new")
    assert link.is_symlink() and real.read_text() == "new"
    reader = FifoReader(tmp_path / "pipe")
    with replaced_privately(reader.path, binary=True) as file:
        file.write(b"bytes")
    reader.assert_still_fifo()
    assert reader.received() == b"bytes"
    device = make_null_device(tmp_path / "null")
    with replaced_privately(device, binary=True) as file:  # binary files are synced: not a device
        file.write(b"gone")
    assert_still_null_device(device)
    assert leftovers(tmp_path) == []
