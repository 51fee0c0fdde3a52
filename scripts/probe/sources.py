"""The probe's sources and targets that are another program's files (issue 40): an OpenMemory export
that unpacks past the import's bound, a LangGraph store whose `store` is a recursive view or holds
rows LangGraph never writes, a WAL-mode SqliteStore file, a hard link to the store; `copy` into
LangGraph's file or any other program's SQLite file.

What must hold: the import (or copy) ends, refused with one line naming the file (and the item and
field for a row), nothing written; a source is left as it was, nothing beside it; or, for a good
source, it is imported whole.
"""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
import struct
import zipfile
from pathlib import Path

from .common import Backend, Tally, cli, one_line_error, tail


def _langgraph_file(path: Path, *, wal: bool = False) -> Path:
    """A real LangGraph SqliteStore file with one item (WAL mode, closed, as an app leaves it)."""
    from langgraph.store.sqlite import SqliteStore

    path.unlink(missing_ok=True)
    with SqliteStore.from_conn_string(str(path)) as app:
        app.setup()
        if wal:
            app.conn.execute("PRAGMA journal_mode = WAL")
        app.put(("users", "u1"), "tea", {"content": "Likes green tea."})
    return path


def _beside(path: Path) -> list[str]:
    return sorted(name for name in os.listdir(path.parent) if name.startswith(path.name))


def _refused(tally: Tally, backend: Backend, location: str, label: str, args: list[str], names: tuple[str, ...], work: Path) -> None:
    before = backend.fingerprint(location)
    problem = one_line_error(cli(work, location, *args, timeout=120), *names)
    tally.trial([problem and f"{label}: {problem}", None if backend.fingerprint(location) == before else f"{label}: written although refused"])


def postgres_view(backend: Backend) -> str:
    """A database of LangGraph's PostgresStore whose `store` is then a recursive view (its URL); a
    statement there stops after 60 s, should an import ever read it without end."""
    from langgraph.store.postgres import PostgresStore
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    url = backend.new("langgraph-view")
    with PostgresStore.from_conn_string(make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)) as app:
        app.setup()
        app.put(("users", "u1"), "tea", {"content": "Likes green tea."})
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as conn:
        conn.execute(text(f"ALTER DATABASE {make_url(url).database} SET statement_timeout = '60s'"))
        conn.execute(text("ALTER TABLE store RENAME TO store_items"))
        conn.execute(text("CREATE VIEW store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes) AS WITH RECURSIVE n(i) AS "
                          "(SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT 'p', CAST(i AS TEXT), CAST('{}' AS jsonb), now(), now(), "
                          "CAST(NULL AS timestamptz), CAST(NULL AS real) FROM n"))  # fmt: skip
    engine.dispose()
    return url


def probe_sources(tally: Tally, work: Path, backend: Backend, location: str, pg_source: str | None) -> None:
    """Each odd source through `memstore import`: ends in one line naming it, nothing written."""
    # OpenMemory: a zip whose memories.json says it unpacks to 3 GB (its directory entry: made in a
    # millisecond, where a real one takes seconds), and a gzip that truly unpacks past 256 MiB.
    bomb = work / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("memories.json", json.dumps({"memories": []}))
    data = bytearray(bomb.read_bytes())
    struct.pack_into("<I", data, data.rindex(b"PK\x01\x02") + 24, 3 * 10**9)
    bomb.write_bytes(bytes(data))
    _refused(tally, backend, location, "a zip of 3 GB", ["import", "--from", "mem0", str(bomb)], (str(bomb), "unpacks to more than"), work)
    spaces = work / "memories.jsonl.gz"
    with gzip.open(spaces, "wb", compresslevel=1) as packed:
        chunk = b" " * 2**20
        for _ in range(257):
            packed.write(chunk)
    _refused(tally, backend, location, "a gzip of 257 MiB", ["import", "--from", "mem0", str(spaces)], (str(spaces), "unpacks to more than"), work)
    spaces.unlink()
    # LangGraph: `store` a recursive view (SQLite file; on PostgreSQL, a PostgresStore database).
    view = _langgraph_file(work / "view.db")
    with sqlite3.connect(view) as conn:
        conn.execute("ALTER TABLE store RENAME TO store_items")
        conn.execute("CREATE VIEW store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes) AS WITH RECURSIVE n(i) AS "
                     "(SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT 'p', CAST(i AS TEXT), '{}', NULL, NULL, NULL, NULL FROM n")  # fmt: skip
    conn.close()
    sources = [(str(view), str(view))] + ([(pg_source, pg_source.rpartition("/")[2])] if pg_source else [])
    for source, shown in sources:
        _refused(tally, backend, location, f"a recursive view ({shown})", ["import", "--from", "langgraph", source], (shown, "is a view"), work)
    # LangGraph rows it never writes: `store` without column types, one odd row at a time.
    odd = _langgraph_file(work / "odd-rows.db")
    with sqlite3.connect(odd) as conn:
        conn.execute("ALTER TABLE store RENAME TO store_typed")
        conn.execute("CREATE TABLE store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes)")
    conn.close()
    rows = {
        "prefix NULL": ((None, "k", "{}", None, None), "prefix"), "prefix an integer": ((7, "k", "{}", None, None), "prefix"),
        "prefix a blob": ((b"\x80", "k", "{}", None, None), "prefix"), "key NULL": (("p", None, "{}", None, None), "key"),
        "key an integer": (("p", 5, "{}", None, None), "key"), "key a blob": (("p", b"\xff", "{}", None, None), "key"),
        "value 5,000 deep": (("p", "deep", '{"a":' + "[" * 5000 + "]" * 5000 + "}", None, None), "value"),
        "value 700 deep": (("p", "deep", '{"a":' + "[" * 700 + "]" * 700 + "}", None, None), "value"),
        "created_at 1e308": (("p", "k", "{}", 1e308, None), "created_at"), "ttl_minutes 1e308": (("p", "k", "{}", None, 1e308), "ttl_minutes"),
    }  # fmt: skip
    for label, (row, field) in rows.items():
        with sqlite3.connect(odd) as conn:
            conn.execute("DELETE FROM store")
            conn.execute("INSERT INTO store (prefix, key, value, created_at, ttl_minutes) VALUES (?, ?, ?, ?, ?)", row)
        conn.close()
        _refused(tally, backend, location, f"a row with {label}", ["import", "--from", "langgraph", str(odd)], (str(odd), "item 1", field), work)
    # A WAL-mode SqliteStore file, closed: imported whole, nothing left beside it.
    wal = _langgraph_file(work / "wal.db", wal=True)
    before = wal.read_bytes()
    done = cli(work, location, "import", "--from", "langgraph", str(wal))
    tally.expect(done.returncode == 0 and _beside(wal) == [wal.name] and wal.read_bytes() == before,
                 f"a WAL-mode file: exit {done.returncode}, beside it {_beside(wal)}: {tail(done.stderr)}")  # fmt: skip
    # A hard link to the store (SQLite): the store itself.
    if not backend.is_pg:
        link = work / "store-link.db"
        link.unlink(missing_ok=True)
        os.link(location, link)
        _refused(tally, backend, location, "a hard link to the store", ["import", "--from", "langgraph", str(link)], (str(link), "is the store itself"), work)


def probe_copy_targets(tally: Tally, work: Path, backend: Backend, location: str) -> None:
    """`memstore copy STORE FILE` into LangGraph's SqliteStore file (WAL mode, as an app leaves it)
    and into another program's SQLite file: one line, the file byte for byte as it was, nothing
    beside it; a hard link to the source is the source."""
    other = work / "other-app.db"
    other.unlink(missing_ok=True)
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.close()
    for target in (_langgraph_file(work / "copy-into-langgraph.db", wal=True), other):
        before = target.read_bytes()
        problem = one_line_error(cli(work, None, "copy", location, str(target)), str(target), "not memstore's")
        tally.trial([problem and f"copy into {target.name}: {problem}",
                     None if target.read_bytes() == before and _beside(target) == [target.name] else f"copy into {target.name}: changed"])  # fmt: skip
    link = work / "copy-link.db"
    link.unlink(missing_ok=True)
    os.link(location, link)
    tally.trial(one_line_error(cli(work, None, "copy", location, str(link)), str(link), "the source store itself"))
