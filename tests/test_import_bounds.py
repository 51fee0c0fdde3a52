"""Sources that never end, or are not what they say (issue 40, finding 6): an import reads at most
what a source can honestly hold, reads a SQLite source without leaving a file beside it, and knows
the store under any of its names. Each failure is one line naming the file, the record and the
field; nothing is written.

- a compressed OpenMemory export is unpacked up to `mem0.MAX_UNPACKED_BYTES`, never further;
- a LangGraph `store` that is a view (a recursive one never ends) is refused, on both backends;
- a LangGraph row whose prefix or key is not text, whose value nests too deeply, whose times or
  TTL no store can hold, is its item's error (or skipped with --skip-invalid);
- a WAL-mode SqliteStore file is read as immutable: no `-wal` or `-shm` is left beside it;
- a hard link to the store is the store itself.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import sqlite3
import struct
import subprocess
import sys
import zipfile

import pytest
from click.testing import CliRunner
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from memstore import MemoryStore
from memstore.cli import cli
from memstore.importers import mem0

SMALL_BOUND = 2 * 2**20  # the bound the mem0 tests set, so an export over it is small


def invoke(db, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db), *args])


def one_line_error(result) -> str:
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1 and "unexpected" not in result.stderr and "Traceback" not in result.stderr, result.stderr
    return result.stderr


def nothing_written(db) -> bool:
    if not os.path.exists(db):
        return True
    with MemoryStore(db) as store:
        return store.count(None) == 0


# -- OpenMemory exports that unpack past the bound --------------------------------------------


def memories_json(size: int) -> bytes:
    """OpenMemory's memories.json with one memory, padded with JSON whitespace to `size` bytes."""
    memory = {"id": "m1", "content": "Likes tea.", "state": "active", "created_at": "2026-01-02T03:04:05"}
    document = json.dumps({"user": {"user_id": "alice"}, "memories": [memory]}).encode()
    return document[:-1] + b" " * (size - len(document)) + b"}"


def export_zip(path, member: str, data: bytes) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(member, data)


def test_an_export_that_unpacks_past_the_bound_is_one_line_and_is_not_unpacked_further(tmp_path, db_path, monkeypatch):
    monkeypatch.setattr(mem0, "MAX_UNPACKED_BYTES", SMALL_BOUND, raising=False)
    over = memories_json(SMALL_BOUND + 1)
    jsonl_over = json.dumps({"id": "m1", "content": "Likes tea.", "state": "active", "created_at": "2026-01-02"}).encode() + b"\n" * SMALL_BOUND
    export_zip(tmp_path / "export.zip", "memories.json", over)
    export_zip(tmp_path / "jsonl.zip", "memories.jsonl.gz", gzip.compress(jsonl_over))
    (tmp_path / "memories.jsonl.gz").write_bytes(gzip.compress(jsonl_over))
    for source, inner in [("export.zip", "export.zip:memories.json"), ("jsonl.zip", "jsonl.zip:memories.jsonl.gz"), ("memories.jsonl.gz", "memories.jsonl.gz")]:
        error = one_line_error(invoke(db_path, "import", "--from", "mem0", str(tmp_path / source)))
        assert error == f"Error: {tmp_path / inner}: unpacks to more than 2 MiB, the most an import unpacks; unpack it yourself and import the file inside\n"
        assert nothing_written(db_path)
    # At the bound it is read; unpacked by hand, the file over it too: its size is what it holds.
    export_zip(tmp_path / "export.zip", "memories.json", memories_json(SMALL_BOUND))
    assert invoke(db_path, "import", "--from", "mem0", str(tmp_path / "export.zip")).exit_code == 0
    (tmp_path / "memories.json").write_bytes(over)
    assert invoke(db_path, "import", "--from", "mem0", str(tmp_path / "memories.json")).stdout.startswith("imported 0 memories (1 already stored)")


def test_a_zip_that_says_its_member_unpacks_to_3_gb_is_refused_before_unpacking(tmp_path, db_path):
    """The real bound: a member whose size in the zip's directory is 3 GB is refused by that size."""
    path = tmp_path / "bomb.zip"
    export_zip(path, "memories.json", memories_json(1000))
    data = bytearray(path.read_bytes())
    directory = data.rindex(b"PK\x01\x02")  # the member's entry in the central directory
    struct.pack_into("<I", data, directory + 24, 3 * 10**9)  # its uncompressed size
    path.write_bytes(bytes(data))
    error = one_line_error(invoke(db_path, "import", "--from", "mem0", str(path)))
    assert error.startswith(f"Error: {path}:memories.json: unpacks to more than {mem0.MAX_UNPACKED_BYTES // 2**20} MiB")
    assert nothing_written(db_path)


# -- LangGraph stores that are not what LangGraph writes ---------------------------------------


@pytest.fixture
def sqlite_source(tmp_path):
    path = tmp_path / "langgraph.db"
    with SqliteStore.from_conn_string(str(path)) as source:
        source.setup()
        source.put(("users", "u1"), "tea", {"content": "Likes green tea."})
    return path


@pytest.fixture
def postgres_source(postgres):
    name = postgres.new_database(migrated=False)
    url = make_url(postgres.url(name)).set(drivername="postgresql").render_as_string(hide_password=False)
    with PostgresStore.from_conn_string(url) as source:
        source.setup()
        source.put(("users", "u1"), "tea", {"content": "Likes green tea."})
    admin = create_engine(postgres.url(name), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:  # should an import ever run a query without end, it stops here
        conn.execute(text(f"ALTER DATABASE {name} SET statement_timeout = '30s'"))
    admin.dispose()
    yield url, postgres.url(name)
    postgres.drop_database(name)


# A `store` with LangGraph's columns whose rows never end.
RECURSIVE_VIEW = """
    CREATE {recursive} VIEW store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes) AS
    WITH RECURSIVE numbers(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM numbers)
    SELECT 'users.u1', CAST(n AS TEXT), {value}, {moment}, {moment}, {no_moment}, CAST(NULL AS REAL) FROM numbers
"""


def import_in_a_process(db, source: str):
    """`memstore import --from langgraph SOURCE` in its own process: a read without end is stopped
    by the timeout (and fails the test) instead of stopping the test run."""
    code = "import sys; from memstore.cli import cli; sys.exit(cli())"
    return subprocess.run(
        [sys.executable, "-c", code, "--db", str(db), "import", "--from", "langgraph", source], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_store_that_is_a_recursive_view_is_refused_not_read_forever(backend, request, db_path):
    if backend == "sqlite":
        source = str(request.getfixturevalue("sqlite_source"))
        with sqlite3.connect(source) as conn:
            conn.execute("ALTER TABLE store RENAME TO store_items")
            conn.execute(RECURSIVE_VIEW.format(recursive="", value="'{}'", moment="NULL", no_moment="NULL"))
    else:
        source, admin_url = request.getfixturevalue("postgres_source")
        engine = create_engine(admin_url)
        with engine.begin() as conn:
            conn.execute(text("ALTER TABLE store RENAME TO store_items"))
            conn.execute(text(RECURSIVE_VIEW.format(recursive="", value="CAST('{}' AS jsonb)", moment="now()", no_moment="CAST(NULL AS timestamptz)")))
        engine.dispose()
    result = import_in_a_process(db_path, source)
    shown = source if backend == "sqlite" else make_url(source).render_as_string(hide_password=True)
    assert (result.returncode, result.stderr) == (1, f"Error: {shown}: not a LangGraph store (its 'store' is a view, not a table: an import reads a table)\n")
    assert nothing_written(db_path)


def untyped_copy(source) -> None:
    """The SqliteStore file's `store` as a table without column types, as another program may
    write one: a prefix or a key may then be NULL, an integer or a blob."""
    with sqlite3.connect(source) as conn:
        conn.execute("ALTER TABLE store RENAME TO store_typed")
        conn.execute("CREATE TABLE store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes)")
        conn.execute("INSERT INTO store SELECT prefix, key, value, created_at, updated_at, expires_at, ttl_minutes FROM store_typed")


DEEP = '{"content": "deep", "tree": ' + "[" * 600 + "]" * 600 + "}"  # parsed, but no store writes it back at 990
DEEPER = '{"content": "deeper", "tree": ' + "[" * 5000 + "]" * 5000 + "}"
# (prefix, key, value, created_at, ttl_minutes) -> the item's error
BAD_ROWS = [
    ((None, "k1", "{}", None, None), "(None, 'k1'): field 'prefix': is missing"),
    ((7, "k2", "{}", None, None), "(7, 'k2'): field 'prefix': must be text, got 7"),
    ((b"\x80u", "k3", "{}", None, None), "(b'\\x80u', 'k3'): field 'prefix': must be text, got a blob"),
    (("users.u2", None, "{}", None, None), "('users.u2', None): field 'key': is missing"),
    (("users.u2", 5, "{}", None, None), "('users.u2', 5): field 'key': must be text, got 5"),
    (("users.u2", b"\xff\x00", "{}", None, None), "('users.u2', b'\\xff\\x00'): field 'key': must be text, got a blob"),
    (("users.u2", "deep", DEEP, None, None), "('users.u2', 'deep'): field 'value': is nested more than 500 levels deep"),
    (("users.u2", "deeper", DEEPER, None, None), "('users.u2', 'deeper'): field 'value': is not JSON memstore can read: nested too deeply"),
    (("users.u2", "bytes", b'{"content": "\xff"}', None, None), "('users.u2', 'bytes'): field 'value': is not UTF-8 text (byte 14)"),
    (("users.u2", "born", "{}", 1e308, None), "('users.u2', 'born'): field 'created_at': must be an ISO-8601 date, got 1e+308"),
    (("users.u2", "lasting", "{}", None, 1e308), "('users.u2', 'lasting'): field 'ttl_minutes': must be a number of minutes, got 1e+308"),
]


def test_rows_langgraph_never_writes_are_each_their_items_one_line_error(sqlite_source, db_path):
    untyped_copy(sqlite_source)
    for row, error in BAD_ROWS:
        with sqlite3.connect(sqlite_source) as conn:
            conn.execute("DELETE FROM store WHERE key IS NOT 'tea'")
            conn.execute("INSERT INTO store (prefix, key, value, created_at, ttl_minutes) VALUES (?, ?, ?, ?, ?)", row)
        result = invoke(db_path, "import", "--from", "langgraph", str(sqlite_source))
        assert one_line_error(result).startswith(f"Error: {sqlite_source} item ") and one_line_error(result).endswith(f"{error}\n")
        assert nothing_written(db_path)
    with sqlite3.connect(sqlite_source) as conn:
        conn.execute("DELETE FROM store WHERE key IS NOT 'tea'")
        conn.executemany("INSERT INTO store (prefix, key, value, created_at, ttl_minutes) VALUES (?, ?, ?, ?, ?)", [row for row, _ in BAD_ROWS])
    skipped = invoke(db_path, "import", "--from", "langgraph", str(sqlite_source), "--skip-invalid")
    assert skipped.exit_code == 0, skipped.output
    assert skipped.stdout.splitlines()[0] == f"imported 1 memories (0 already stored); skipped {len(BAD_ROWS)} invalid records", skipped.stderr
    assert sorted(line.partition("): ")[2] for line in skipped.stderr.splitlines()) == sorted(error.partition("): ")[2] for _, error in BAD_ROWS)


def test_a_postgres_store_with_a_value_nested_too_deeply_or_a_null_key_is_its_items_error(postgres_source, db_path):
    source, admin_url = postgres_source
    engine = create_engine(admin_url)
    with engine.begin() as conn:
        conn.execute(text("ALTER TABLE store DROP CONSTRAINT store_pkey"))
        conn.execute(text("ALTER TABLE store ALTER COLUMN key DROP NOT NULL"))
        insert = text("INSERT INTO store (prefix, key, value) VALUES ('users.u2', :key, CAST(:value AS jsonb))")
        conn.execute(insert, {"key": "deeper", "value": DEEPER})
        conn.execute(insert, {"key": None, "value": "{}"})
    engine.dispose()
    shown = make_url(source).render_as_string(hide_password=True)
    error = one_line_error(invoke(db_path, "import", "--from", "langgraph", source))
    assert error == f"Error: {shown} item 2 ('users.u2', 'deeper'): field 'value': is not JSON memstore can read: nested too deeply\n"
    skipped = invoke(db_path, "import", "--from", "langgraph", source, "--skip-invalid")
    assert skipped.exit_code == 0 and skipped.stdout.splitlines()[0] == "imported 1 memories (0 already stored); skipped 2 invalid records"
    assert "item 3 ('users.u2', None): field 'key': is missing" in skipped.stderr


# -- reading a SQLite source leaves nothing beside it ------------------------------------------


def beside(path) -> list[str]:
    return sorted(name for name in os.listdir(path.parent) if name.startswith(path.name))


def test_a_wal_mode_store_file_is_imported_without_a_wal_or_shm_left_beside_it(sqlite_source, db_path):
    with sqlite3.connect(sqlite_source) as conn:
        assert conn.execute("PRAGMA journal_mode = WAL").fetchone() == ("wal",)
    conn.close()
    assert beside(sqlite_source) == ["langgraph.db"]
    before = sqlite_source.read_bytes()
    result = invoke(db_path, "import", "--from", "langgraph", str(sqlite_source))
    assert result.exit_code == 0 and result.stdout.startswith("imported 1 memories"), result.output
    assert beside(sqlite_source) == ["langgraph.db"] and sqlite_source.read_bytes() == before


def test_a_wal_mode_store_an_app_has_open_is_read_through_its_wal(sqlite_source, db_path):
    """Immutable would miss what waits in the -wal: with the app's connection open it is read as any
    reader reads it, and the app's files stay the app's."""
    with SqliteStore.from_conn_string(str(sqlite_source)) as app:
        app.conn.execute("PRAGMA journal_mode = WAL")
        app.conn.execute("PRAGMA wal_autocheckpoint = 0")
        app.put(("users", "u1"), "coffee", {"content": "Switched to coffee."})
        assert "langgraph.db-wal" in beside(sqlite_source)
        result = invoke(db_path, "import", "--from", "langgraph", str(sqlite_source))
        assert result.exit_code == 0 and result.stdout.startswith("imported 2 memories"), result.output
    assert beside(sqlite_source) == ["langgraph.db"]  # the app's last close removed its own files


# -- the store under another name -------------------------------------------------------------


def test_a_hard_link_to_the_store_is_the_store_itself(tmp_path, db_path):
    assert invoke(db_path, "add", "Likes tea.").exit_code == 0
    link = tmp_path / "other-name.db"
    os.link(db_path, link)
    for source_format in ("langgraph", "memstore"):
        result = invoke(db_path, "import", "--from", source_format, str(link))
        assert one_line_error(result) == f"Error: {link} is the store itself: import it into another store (--db)\n"
    with MemoryStore(db_path) as store:
        assert store.count(None) == 1
