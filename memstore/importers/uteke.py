"""Uteke's JSONL export (`uteke export`, crates/uteke-core `Uteke::export`): one memory a line,
{content, tags, metadata, created_at (RFC 3339), source?, namespace?}; older exports have only the
first four.

Each memory lands in the namespace given with -n, else its own `namespace`, else "default". The
export carries no id: a memory's id is derived from its namespace, content and created_at, so a
second import of the same file (or of a later export holding it) adds nothing. Tags, metadata and
source go to meta, with every field not mapped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..defaults import DEFAULT_NAMESPACE
from ..errors import ValidationError
from ..io import jsonl_items
from .common import Read, SourceRecord, imported_id, moment_ms, optional, required

# `namespace` stays in meta too: with -n, memories of several namespaces share one.
MAPPED = frozenset({"content", "created_at"})


def _memory(record: Any, location: str, namespace: str | None) -> SourceRecord:
    if not isinstance(record, dict):
        raise ValidationError(location, None, "must be a JSON object (an exported memory)")
    content = required(record, "content", location)
    created = required(record, "created_at", location)
    own = optional(record, "namespace", location, str)
    target = namespace if namespace is not None else own or DEFAULT_NAMESPACE
    created_at = moment_ms(created, location, "created_at")
    meta = {"imported_from": "uteke"}
    meta.update((name, value) for name, value in record.items() if name not in MAPPED and value not in (None, {}, []))
    return SourceRecord("memory", location, {
        "id": imported_id("uteke", target, own or "", content, created),
        "namespace": target, "text": content, "timestamp": created_at, "created_at": created_at, "meta": meta,
    })  # fmt: skip


def read(source: str | os.PathLike[str], namespace: str | None) -> list[Read]:
    """Every memory of a Uteke export file."""
    name = os.fspath(source)
    records: list[Read] = []
    for line, value in jsonl_items(Path(source).expanduser().read_bytes(), name):
        try:
            if isinstance(value, ValidationError):
                raise value
            records.append(_memory(value, f"{name} line {line}", namespace))
        except ValidationError as error:
            records.append(error)
    return records


__all__ = ["read"]
