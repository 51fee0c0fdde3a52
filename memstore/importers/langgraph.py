"""LangGraph's own stores: a `SqliteStore` file or a `PostgresStore` database, read from their
`store` table (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes).

Each item becomes the memory `MemstoreStore` would have written for it (memstore.integrations):
namespace = the item's prefix ("users.u1.memories"), fact_key = its key, meta = {"value": value,
"ttl_minutes": ttl, "imported_from": "langgraph"}, its text taken from the value as a put takes it. Its times and its end
(expires_at) are carried, so `MemstoreStore` gives back the same value, times and remaining
lifetime. Vectors (`store_vectors`) came from the app's own embedding function and are not
carried: the memories wait for `memstore embeddings sync`.

The source is opened read-only: a SQLite file with `mode=ro`, a PostgreSQL database in a
READ ONLY transaction. Needs no LangGraph installed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, inspect, text
from sqlalchemy.exc import SQLAlchemyError

from ..db import database_url, shown_location, sqlite_driver
from ..errors import MemstoreError, ValidationError
from ..item_values import memory_text
from ..io import strict_json
from .common import Read, SourceRecord, imported_id, moment_ms

COLUMNS = ("prefix", "key", "value", "created_at", "updated_at", "expires_at", "ttl_minutes")
# Older SqliteStore files predate the TTL columns: they are read as NULL there.
_OPTIONAL = frozenset({"expires_at", "ttl_minutes"})


def _engine(source: str):
    if "://" in source:
        return create_engine(database_url(source))
    path = Path(source).expanduser()
    if not path.is_file():
        raise MemstoreError(f"{source}: no such file (a LangGraph SqliteStore file, or a PostgresStore URL)")
    uri = f"{path.resolve().as_uri()}?mode=ro"
    driver = sqlite_driver()
    return create_engine("sqlite://", module=driver, creator=lambda: driver.connect(uri, uri=True))


def _rows(source: str) -> list[dict[str, Any]]:
    try:
        return _read_rows(source)
    except (SQLAlchemyError, ValueError, ImportError) as exc:  # named as the source's, not the target store's
        reason = getattr(exc, "orig", None) or exc
        raise MemstoreError(f"{shown_location(source)}: cannot read it as a LangGraph store: {reason}".splitlines()[0]) from None


def _read_rows(source: str) -> list[dict[str, Any]]:
    engine = _engine(source)
    try:
        with engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SET TRANSACTION READ ONLY"))
            present = {column["name"] for column in inspect(conn).get_columns("store")} if inspect(conn).has_table("store") else set()
            missing = [name for name in COLUMNS if name not in present and name not in _OPTIONAL]
            if missing:
                raise MemstoreError(f"{shown_location(source)}: not a LangGraph store (its table 'store' has no {missing[0]!r})")
            selected = ", ".join(name if name in present else f"NULL AS {name}" for name in COLUMNS)
            result = conn.execute(text(f"SELECT {selected} FROM store ORDER BY prefix, key"))  # noqa: S608 (names are ours)
            return [dict(row._mapping) for row in result]
    finally:
        engine.dispose()


def _value(raw: Any, location: str) -> dict[str, Any]:
    if isinstance(raw, (bytes, bytearray)):
        raw = raw.decode("utf-8", "surrogateescape")
    if isinstance(raw, str):  # SqliteStore keeps JSON text; PostgresStore's jsonb arrives decoded
        try:
            raw = strict_json(raw)
        except ValueError as exc:
            raise ValidationError(location, "value", f"is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ValidationError(location, "value", f"must be a JSON object, got {type(raw).__name__}")
    return raw


def _ttl(raw: Any, location: str) -> float | int | None:
    if raw is None:
        return None
    # Zero is kept: PostgresStore's column is an INT, so a put's ttl=0.5 is stored there as 0 (its
    # next read with refresh ends the item); carried as it is, the item behaves as it did.
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not raw >= 0:
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
        location = f"{name} item {number} ({row['prefix']!r}, {row['key']!r})"
        try:
            value = _value(row["value"], location)
            ttl = _ttl(row["ttl_minutes"], location)
            target = row["prefix"] if namespace is None else f"{namespace}.{row['prefix']}"
            meta: dict[str, Any] = {"value": value, "imported_from": "langgraph"}
            if ttl is not None:
                meta["ttl_minutes"] = ttl
            records.append(SourceRecord("item", location, {
                "id": imported_id("langgraph", target, row["key"]),
                "namespace": target,
                "fact_key": row["key"],
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
