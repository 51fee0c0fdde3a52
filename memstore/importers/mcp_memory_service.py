"""mcp-memory-service's JSON export (its `sync/exporter.py`, as `scripts/sync/export_memories.py`
writes it): {"export_metadata": {...}, "memories": [{content, content_hash, tags, created_at,
updated_at, memory_type, metadata, store, export_source, embedding?}]}, times in Unix seconds.

Each memory lands in the namespace given with -n, else its `store` (exports since 5.x), else
"default"; its id comes from its content_hash, the service's own id. Tags, type and metadata go to
meta, with every field not mapped. Vectors (`embedding`, written with --include-embeddings) are of
the service's model and are not carried: the memories wait for `memstore embeddings sync`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..defaults import DEFAULT_NAMESPACE
from ..errors import ValidationError
from .common import Read, SourceRecord, epoch_seconds_ms, imported_id, json_document, optional, required

# `store` stays in meta too: with -n, memories of several stores share one namespace.
MAPPED = frozenset({"content", "content_hash", "created_at", "updated_at", "embedding"})


def _memory(record: Any, location: str, namespace: str | None) -> SourceRecord:
    if not isinstance(record, dict):
        raise ValidationError(location, None, "must be a JSON object (an exported memory)")
    content_hash = required(record, "content_hash", location)
    store = optional(record, "store", location, str)
    target = namespace if namespace is not None else store or DEFAULT_NAMESPACE
    created_at = epoch_seconds_ms(required(record, "created_at", location, (int, float)), location, "created_at")
    meta = {"imported_from": "mcp-memory-service", "content_hash": content_hash}
    meta.update((name, value) for name, value in record.items() if name not in MAPPED and value not in (None, {}))
    return SourceRecord("memory", location, {
        "id": imported_id("mcp-memory-service", target, store or "", content_hash),
        "namespace": target,
        "text": required(record, "content", location),
        "timestamp": created_at,
        "created_at": created_at,
        "updated_at": epoch_seconds_ms(record.get("updated_at"), location, "updated_at"),
        "meta": meta,
    })  # fmt: skip


def read(source: str | os.PathLike[str], namespace: str | None) -> list[Read]:
    """Every memory of an mcp-memory-service export file."""
    name = os.fspath(source)
    document = json_document(Path(source).expanduser().read_bytes(), name)
    if not isinstance(document, dict) or not isinstance(document.get("memories"), list):
        raise ValidationError(name, "memories", "is not an mcp-memory-service export: it needs a list 'memories'")
    records: list[Read] = []
    for index, value in enumerate(document["memories"], start=1):
        try:
            records.append(_memory(value, f"{name} memory {index}", namespace))
        except ValidationError as error:
            records.append(error)
    return records


__all__ = ["read"]
