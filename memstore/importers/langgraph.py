"""LangGraph's own stores: a `SqliteStore` file or a `PostgresStore` database, read from their
`store` table (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes).

Each item becomes the memory `MemstoreStore` would have written for it (memstore.integrations):
namespace = the item's prefix ("users.u1.memories"), fact_key = its key, meta = {"value": value,
"ttl_minutes": ttl, "imported_from": "langgraph"}, its text taken from the value as a put takes it. Its times and its end
(expires_at) are carried, so `MemstoreStore` gives back the same value, times and remaining
lifetime. Vectors (`store_vectors`) came from the app's own embedding function and are not
carried: the memories wait for `memstore embeddings sync`.

The source is opened read-only and left as it was: a PostgreSQL database in a READ ONLY
transaction; a SQLite file with `mode=ro`, as immutable when no connection has it open
(`memstore.db.read_only_uri`: no `-wal` or `-shm` is left beside it), read again through its WAL if
one opened it meanwhile. Its `store` must be a table: a view's rows may never end (a recursive
view), so a view is refused. Prefix and key are text, as LangGraph writes them; another type is
the item's field error. Needs no LangGraph installed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, inspect, text
from sqlalchemy.exc import SQLAlchemyError

from ..db import IMMUTABLE, database_url, read_only_uri, shown_location, sqlite_driver
from ..errors import MemstoreError, ValidationError
from ..item_values import memory_text
from ..io import strict_json
from .common import Read, SourceRecord, imported_id, moment_ms, require_shallow

COLUMNS = ("prefix", "key", "value", "created_at", "updated_at", "expires_at", "ttl_minutes")
# Older SqliteStore files predate the TTL columns: they are read as NULL there.
_OPTIONAL = frozenset({"expires_at", "ttl_minutes"})


def _sqlite_path(source: str) -> Path:
    path = Path(source).expanduser()
    if not path.is_file():
        raise MemstoreError(f"{source}: no such file (a LangGraph SqliteStore file, or a PostgresStore URL)")
    return path.resolve()


def _sqlite_engine(uri: str):
    driver = sqlite_driver()

    def connect():
        connection = driver.connect(uri, uri=True)
        connection.text_factory = _text_or_bytes
        return connection

    return create_engine("sqlite://", module=driver, creator=connect)


def _text_or_bytes(stored: bytes) -> str | bytes:
    """A SQLite text as a str, or its bytes when it is not UTF-8: the item it is in is then refused
    by its own error, where the driver's decoding would fail the whole read."""
    try:
        return stored.decode("utf-8")
    except UnicodeDecodeError:
        return stored


def _rows(source: str) -> list[dict[str, Any]]:
    try:
        if "://" in source:
            return _read_rows(source, create_engine(database_url(source)))
        path = _sqlite_path(source)
        uri = read_only_uri(path)
        rows = _read_rows(source, _sqlite_engine(uri))
        if uri.endswith(IMMUTABLE) and Path(f"{path}-wal").exists():  # a connection opened it as it was read
            rows = _read_rows(source, _sqlite_engine(read_only_uri(path, may_be_immutable=False)))
        return rows
    except (SQLAlchemyError, ValueError, ImportError, OSError) as exc:  # named as the source's, not the target store's
        reason = getattr(exc, "orig", None) or exc
        raise MemstoreError(f"{shown_location(source)}: cannot read it as a LangGraph store: {reason}".splitlines()[0]) from None


def _read_rows(source: str, engine: Engine) -> list[dict[str, Any]]:
    try:
        with engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SET TRANSACTION READ ONLY"))
            inspector = inspect(conn)
            if "store" in {name.lower() for name in inspector.get_view_names()}:
                raise MemstoreError(f"{shown_location(source)}: not a LangGraph store (its 'store' is a view, not a table: an import reads a table)")
            present = {column["name"] for column in inspector.get_columns("store")} if inspector.has_table("store") else set()
            missing = [name for name in COLUMNS if name not in present and name not in _OPTIONAL]
            if missing:
                raise MemstoreError(f"{shown_location(source)}: not a LangGraph store (its table 'store' has no {missing[0]!r})")
            # PostgreSQL's jsonb read as its text: decoded by the driver, a value nested too deeply
            # would fail the whole read rather than be its item's error.
            as_text = conn.dialect.name == "postgresql"
            selected = ", ".join(
                ("CAST(value AS TEXT) AS value" if name == "value" and as_text else name) if name in present else f"NULL AS {name}"
                for name in COLUMNS
            )
            result = conn.execute(text(f"SELECT {selected} FROM store ORDER BY prefix, key"))  # noqa: S608 (names are ours)
            return [dict(row._mapping) for row in result]
    finally:
        engine.dispose()


def _text(raw: Any, location: str, field: str) -> str:
    """A prefix or a key: text, as LangGraph writes it."""
    if raw is None:
        raise ValidationError(location, field, "is missing")
    if not isinstance(raw, str):
        kind = "a blob" if isinstance(raw, (bytes, bytearray, memoryview)) else f"{raw!r:.40}"
        raise ValidationError(location, field, f"must be text, got {kind}")
    return raw


def _value(raw: Any, location: str) -> dict[str, Any]:
    if isinstance(raw, (bytes, bytearray)):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(location, "value", f"is not UTF-8 text (byte {exc.start + 1})") from None
    if isinstance(raw, str):  # SqliteStore keeps JSON text; PostgresStore's jsonb is read as its text
        try:
            raw = strict_json(raw)
        except ValueError as exc:
            raise ValidationError(location, "value", f"is not JSON: {exc}") from None
        except RecursionError:
            raise ValidationError(location, "value", "is not JSON memstore can read: nested too deeply") from None
    if not isinstance(raw, dict):
        raise ValidationError(location, "value", f"must be a JSON object, got {type(raw).__name__}")
    return require_shallow(raw, location, "value")


def _ttl(raw: Any, location: str) -> float | int | None:
    if raw is None:
        return None
    # Zero is kept: PostgresStore's column is an INT, so a put's ttl=0.5 is stored there as 0 (its
    # next read with refresh ends the item); carried as it is, the item behaves as it did.
    # At most what a put takes (memstore.integrations.langgraph: the lifetime's seconds within 2**53).
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0 <= raw * 60 < 2**53:
        raise ValidationError(location, "ttl_minutes", f"must be a number of minutes, got {raw!r:.40}")
    # A whole number of minutes reads back as the int a put gave (REAL columns hand back 5.0).
    return int(raw) if float(raw).is_integer() else float(raw)


def read(source: str | os.PathLike[str], namespace: str | None) -> list[Read]:
    """Every item of the LangGraph store at `source`; with `namespace`, under it ("app" + prefix
    "users.u1" -> "app.users.u1")."""
    source = os.fspath(source)
    name = shown_location(source)
    records: list[Read] = []
    for number, row in enumerate(_rows(source), start=1):
        location = f"{name} item {number} ({row['prefix']!r:.80}, {row['key']!r:.80})"
        try:
            prefix, key = _text(row["prefix"], location, "prefix"), _text(row["key"], location, "key")
            value = _value(row["value"], location)
            ttl = _ttl(row["ttl_minutes"], location)
            target = prefix if namespace is None else f"{namespace}.{prefix}"
            meta: dict[str, Any] = {"value": value, "imported_from": "langgraph"}
            if ttl is not None:
                meta["ttl_minutes"] = ttl
            records.append(SourceRecord("item", location, {
                "id": imported_id("langgraph", target, key),
                "namespace": target,
                "fact_key": key,
                "text": memory_text(value),
                "meta": meta,
                "created_at": moment_ms(row["created_at"], location, "created_at"),
                "updated_at": moment_ms(row["updated_at"], location, "updated_at"),
                "expires_at": moment_ms(row["expires_at"], location, "expires_at"),
            }))  # fmt: skip
        except ValidationError as error:
            records.append(error)
    return records


__all__ = ["read"]
