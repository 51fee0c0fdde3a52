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

from sqlalchemy import Connection, select

from .defaults import DEFAULT_IMPORTANCE
from .db import CHUNK, chunked
from .item_values import lifetime_ms, memory_text, ttl_minutes, value_of
from .lifecycle import extend_lifetimes, forget_in_transaction, update_in_transaction
from .records import one_memory, same_json, update_changes
from .runs import lock_jobs, lock_key
from .schema import memories, unexpired
from .writes import add_in_transaction

# One put: (namespace, key, value or None for a delete, TTL in minutes or None).
Put = tuple[str, str, "dict[str, Any] | None", "float | None"]


def find_items(conn: Connection, keys: Iterable[tuple[str, str]], now: int) -> dict[tuple[str, str], dict[str, Any]]:
    """The live memory answering to each (namespace, key), not expired at `now`: the one holding
    that fact_key (the newest, then smallest id, if several), else one without a fact_key whose id
    is the key. Keys no memory answers to are left out. Two queries per chunk of keys, whatever
    the namespaces (a superset by namespace and key, narrowed here)."""
    wanted = sorted({(namespace, key) for namespace, key in keys if "\x00" not in key})  # NUL: no memory holds it
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for chunk in chunked(wanted, CHUNK // 2):
        namespaces, names = sorted({namespace for namespace, _ in chunk}), sorted({key for _, key in chunk})
        in_chunk = set(chunk)
        holding = select(memories).where(memories.c.namespace.in_(namespaces), memories.c.fact_key.in_(names), unexpired(memories, now))
        for row in conn.execute(holding.order_by(memories.c.timestamp.desc(), memories.c.id)).mappings():
            if (row["namespace"], row["fact_key"]) in in_chunk:
                found.setdefault((row["namespace"], row["fact_key"]), dict(row))
        unanswered = sorted({key for namespace, key in chunk if (namespace, key) not in found})
        if unanswered:
            named = select(memories).where(memories.c.id.in_(unanswered), memories.c.fact_key.is_(None), unexpired(memories, now))
            for row in conn.execute(named).mappings():
                if (row["namespace"], row["id"]) in in_chunk and (row["namespace"], row["id"]) not in found:
                    found[(row["namespace"], row["id"])] = dict(row)
    return found


def find_item(conn: Connection, namespace: str, key: str, now: int) -> dict[str, Any] | None:
    """The live memory answering to `key` in `namespace` (`find_items`), or None."""
    return find_items(conn, [(namespace, key)], now).get((namespace, key))


def lock_keys(conn: Connection, puts: Sequence[Put]) -> None:
    """Lock every key the puts write, in sorted order (two batches locking in their own orders could
    deadlock on PostgreSQL); SQLite's BEGIN IMMEDIATE holds the whole store already."""
    for namespace, key in sorted({(namespace, key) for namespace, key, _, _ in puts}):
        lock_key(conn, namespace, key)


def put_in_transaction(conn: Connection, puts: Sequence[Put], now: int) -> None:
    """LangGraph's puts, each of a value (None: delete) under a key with a TTL in minutes (None:
    none), at `now`, their keys locked already (`lock_keys`), one put per key. The new items are
    written together; a replaced or deleted item is its own run."""
    new_items = []
    rows = find_items(conn, [(namespace, key) for namespace, key, _, _ in puts], now)
    # An update or a delete locks its namespace's jobs (lifecycle); taken here, all of them and in one
    # order, before the first write: two batches taking them put by put could deadlock on PostgreSQL.
    for namespace in sorted({namespace for namespace, key in rows}):
        lock_jobs(conn, namespace)
    for namespace, key, value, ttl in puts:
        row = rows.get((namespace, key))
        if value is None:
            if row is not None:
                forget_in_transaction(conn, [row["id"]], None, namespace, now)
            continue
        text, meta = memory_text(value), {"value": value, **({} if ttl is None else {"ttl_minutes": ttl})}
        ends_at = None if ttl is None else now + lifetime_ms(ttl)
        if row is None:
            new_items.append(one_memory(text, None, namespace, None, DEFAULT_IMPORTANCE, False, key, meta, None, ends_at))
            continue
        # The same value with the same kind of life (a lasting one stays lasting, whatever wrote it).
        if same_json(value_of(row), value) and ttl_minutes(row) == ttl and (row["expires_at"] is None) == (ttl is None):
            # The value it holds already (a retried node): no new version, its lifetime starts again.
            if ttl is not None:
                extend_lifetimes(conn, {row["id"]: ends_at}, None, now)
            continue
        # A memory written by other means takes the key as its fact_key. The timestamp is now, as
        # update's own default: it keeps a change that only JSON sees (1 -> 1.0, 1 -> true), which
        # update's == would call "no change", from being refused.
        no_expiry = ttl is None and row["expires_at"] is not None
        changes = update_changes(
            now, f"update {row['id']}", text=text, meta=meta, timestamp=now, fact_key=key if row["fact_key"] is None else None,
            expires_at=ends_at, no_expiry=no_expiry,
        )
        update_in_transaction(conn, row["id"], changes, namespace, now)
    if new_items:
        add_in_transaction(conn, new_items, now, skip_invalid=False)


def refresh_in_transaction(conn: Connection, rows: Iterable[Mapping[str, Any]], now: int) -> int:
    """Start again, from `now`, the lifetimes of `rows` that have a TTL (LangGraph's refresh on
    read); not of one given a lasting life since (`update --no-expiry` keeps the put's meta)."""
    ends = {row["id"]: now + lifetime_ms(ttl_minutes(row)) for row in rows if ttl_minutes(row) and row["expires_at"] is not None}
    return extend_lifetimes(conn, ends, None, now) if ends else 0


__all__ = ["Put", "find_item", "find_items", "lock_keys", "put_in_transaction", "refresh_in_transaction"]
