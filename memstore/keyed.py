"""LangGraph items as memstore memories: the text an item is remembered by, its value and lifetime,
and a put as one write.

A put reads (which memory holds the key?) and then writes (adds, updates or forgets it). Both happen
in one write transaction, and on PostgreSQL under a lock of the (namespace, key), so two processes
or two `MemstoreStore` objects putting one key take turns: one memory per key, the last put wins.
Nothing here needs LangGraph installed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, Engine

from ..db import write_transaction
from ..defaults import DEFAULT_IMPORTANCE
from ..errors import NotFoundError
from ..lifecycle import extend_lifetimes, forget_in_transaction, update_in_transaction
from ..reads import find_fact, get_row
from ..records import lifetime_change, memory_state, now_ms, one_memory, same_json
from ..runs import lock_key
from ..writes import add_in_transaction


def canonical_json(value: Any) -> str:
    """One spelling per JSON value: sorted keys, no spaces, characters as they are."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def memory_text(value: Mapping[str, Any]) -> str:
    """The text a value is remembered (recalled, deduplicated) by.

    `value["content"]` when it is a string (LangMem's manage_memory writes {"content": "..."}); its
    canonical JSON when it is an object (LangMem's structured memories); else `value["text"]` when it
    is a string; else the canonical JSON of the whole value.

    >>> memory_text({"content": "User likes tea."})
    'User likes tea.'
    >>> memory_text({"kind": "Preference", "content": {"what": "tea", "likes": True}})
    '{"likes":true,"what":"tea"}'
    >>> memory_text({"theme": "dark"})
    '{"theme":"dark"}'
    """
    content = value.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        return canonical_json(content)
    text = value.get("text")
    if isinstance(text, str):
        return text
    return canonical_json(value)


def ttl_minutes(row: Mapping[str, Any]) -> float | None:
    """The TTL a put gave the item (None: it lives until deleted)."""
    meta = row["meta"]
    return meta.get("ttl_minutes") if isinstance(meta, Mapping) else None


def lifetime_ms(minutes: float) -> int:
    """A TTL in minutes as whole milliseconds, never shorter; rounded first, so that float noise
    (119 / 60_000 * 60_000 == 119.00000000000001) does not add a millisecond."""
    return math.ceil(round(minutes * 60_000, 6))


def value_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """The item value of a memory: what a put stored, or {"content": text} for one written by other means."""
    meta = row["meta"]
    if isinstance(meta, Mapping) and isinstance(meta.get("value"), dict):
        return meta["value"]
    return {"content": row["text"]}


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


def put_item(engine: Engine, namespace: str, key: str, value: dict[str, Any] | None, ttl: float | None) -> None:
    """LangGraph's put of `value` (None: delete) under `key`, with a TTL in minutes (None: none)."""
    with write_transaction(engine) as conn:
        lock_key(conn, namespace, key)
        # Read once the put holds the store and its key: a put that queued is dated (and its
        # lifetime started) when it is written, never saved already expired.
        now = now_ms()
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


__all__ = ["canonical_json", "find_item", "lifetime_ms", "memory_text", "put_item", "ttl_minutes", "value_of"]
