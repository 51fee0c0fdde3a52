"""Memories by key, as LangGraph's store reads and writes them (`MemoryStore.get_item`, `.put_items`,
`.refresh_items`).

A put reads (which memory holds the key?) and then writes (adds, updates or forgets it), in the
caller's write transaction; on PostgreSQL the transaction first locks every (namespace, key) it
writes, in one order, so two processes or two `MemoryStore` objects putting one key take turns: one
memory per key, the last put wins. Nothing here needs LangGraph installed; the mapping rules are
memstore.item_values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection

from .defaults import DEFAULT_IMPORTANCE
from .errors import NotFoundError
from .item_values import lifetime_ms, memory_text, ttl_minutes, value_of
from .lifecycle import extend_lifetimes, forget_in_transaction, update_in_transaction
from .reads import find_fact, get_row
from .records import lifetime_change, memory_state, one_memory, same_json
from .runs import lock_key
from .writes import add_in_transaction

# One put: (namespace, key, value or None for a delete, TTL in minutes or None).
Put = tuple[str, str, "dict[str, Any] | None", "float | None"]


def find_item(conn: Connection, namespace: str, key: str, now: int) -> dict[str, Any] | None:
    """The live memory answering to `key` in `namespace`: the one holding that fact_key, else one
    without a fact_key whose id is `key`."""
    if "\x00" in key:
        return None  # no memory can hold it (and PostgreSQL refuses it as a parameter)
    row = find_fact(conn, namespace, key)
    if row is not None:
        return row
    try:
        row = get_row(conn, key, namespace)
    except NotFoundError:
        return None
    return row if memory_state(row, now) == "live" and row["fact_key"] is None else None


def lock_keys(conn: Connection, puts: Sequence[Put]) -> None:
    """Lock every key the puts write, in sorted order (two batches locking in their own orders could
    deadlock on PostgreSQL); SQLite's BEGIN IMMEDIATE holds the whole store already."""
    for namespace, key in sorted({(namespace, key) for namespace, key, _, _ in puts}):
        lock_key(conn, namespace, key)


def put_in_transaction(conn: Connection, put: Put, now: int) -> None:
    """LangGraph's put of a value (None: delete) under a key, with a TTL in minutes (None: none), at
    `now`, its key locked already (`lock_keys`). A replaced or deleted item is its own run."""
    namespace, key, value, ttl = put
    row = find_item(conn, namespace, key, now)
    if value is None:
        if row is not None:
            forget_in_transaction(conn, [row["id"]], None, namespace, now)
        return
    text, meta = memory_text(value), {"value": value, **({} if ttl is None else {"ttl_minutes": ttl})}
    ends_at = None if ttl is None else now + lifetime_ms(ttl)
    # The same value with the same kind of life (a lasting one stays lasting, whatever wrote it).
    unchanged = row is not None and same_json(value_of(row), value) and (
        ttl_minutes(row) == ttl and (row["expires_at"] is None) == (ttl is None)
    )
    if unchanged:
        # The value it holds already (a retried node): no new version, its lifetime starts again.
        if ttl is not None:
            extend_lifetimes(conn, {row["id"]: ends_at}, None, now)
        return
    if row is None:
        prepared = one_memory(text, None, namespace, None, DEFAULT_IMPORTANCE, False, key, meta, None, ends_at)
        add_in_transaction(conn, [prepared], now, skip_invalid=False)
        return
    # A memory written by other means takes the key as its fact_key. The timestamp is now, as
    # update's own default: it keeps a change that only JSON sees (1 -> 1.0, 1 -> true), which
    # update's == would call "no change", from being refused.
    changes: dict[str, Any] = {"text": text, "meta": meta, "timestamp": now}  # as MemoryStore.update builds it
    if row["fact_key"] is None:
        changes["fact_key"] = key
    no_expiry = ttl is None and row["expires_at"] is not None
    changes.update(lifetime_change(None, ends_at, no_expiry, now, f"update {row['id']}"))
    update_in_transaction(conn, row["id"], changes, namespace, now)


def refresh_in_transaction(conn: Connection, rows: Iterable[Mapping[str, Any]], now: int) -> int:
    """Start again, from `now`, the lifetimes of `rows` that have a TTL (LangGraph's refresh on
    read); not of one given a lasting life since (`update --no-expiry` keeps the put's meta)."""
    ends = {row["id"]: now + lifetime_ms(ttl_minutes(row)) for row in rows if ttl_minutes(row) and row["expires_at"] is not None}
    return extend_lifetimes(conn, ends, None, now) if ends else 0


__all__ = ["Put", "find_item", "lock_keys", "put_in_transaction", "refresh_in_transaction"]
