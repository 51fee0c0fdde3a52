"""LangGraph items as memstore memories, the pure part: the text an item is remembered by, its value
and its lifetime. No database here: the faces (memstore.integrations.langgraph) and the importer
(memstore.importers.langgraph) use these rules, and memstore.keyed writes by them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


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


__all__ = ["canonical_json", "lifetime_ms", "memory_text", "ttl_minutes", "value_of"]
