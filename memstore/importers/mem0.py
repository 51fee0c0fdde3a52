"""mem0 and OpenMemory: what mem0 returns, saved as JSON, and OpenMemory's export.

- mem0's `Memory.get_all()` / `search()` (and the platform client's `get_all`): `{"results": [...]}`
  or a bare list of memories {id, memory, hash, metadata, created_at, updated_at, user_id,
  agent_id, run_id, actor_id, role, expiration_date, categories, ...}; the graph's
  `"relations"` ({source, relationship, target}) when the dump has them.
- OpenMemory's export (`POST /api/v1/backup/export`): the zip itself, or the `memories.json` or
  `memories.jsonl.gz` (also unzipped) inside it. Each memory {id, content, metadata, state
  active|paused|archived|deleted, app, categories, created_at, updated_at, ...}.

An export is read whole, so what a compressed file unpacks to is bounded: `MAX_UNPACKED_BYTES` per
file (a zip's member, a gzip's content); beyond it the import stops at that bound, before reading
the rest, with one line naming the file (a 3 MB zip may unpack to 3 GB). Unpacked by hand, the same
file is read whatever its size: its size on disk is what it holds.

A memory lands in the namespace given with -n, else its user_id (else agent_id, else run_id; for
OpenMemory, the exported user's user_id), else "default". created_at is the memory's time,
expiration_date (a day) its end. A memory OpenMemory kept but not as active (paused, archived,
deleted) arrives in the archive, its state in meta. Every field not mapped is kept in meta.
"""

from __future__ import annotations

import gzip
import io
import os
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..defaults import DEFAULT_NAMESPACE
from ..errors import ValidationError
from ..io import jsonl_items, strict_json
from .common import Read, SourceRecord, day_end_ms, imported_id, json_document, moment_ms, optional, required

# mem0 fields that become a memory's own fields; `score` (a search's relevance) says nothing of the
# memory and is the one field left out. Every other field is kept in meta under its own name.
MEM0_MAPPED = frozenset({"id", "memory", "created_at", "updated_at", "expiration_date", "score"})
OPENMEMORY_MAPPED = frozenset({"id", "content", "created_at", "updated_at", "state", "app", "app_id", "categories", "category_ids", "user_id"})
LIVE_STATES = frozenset({"active"})
# The most a compressed export unpacks to, per file: far above any export of memories (half a
# million, each with its fields), small enough that reading it as JSON fits in a few GB.
MAX_UNPACKED_BYTES = 256 * 2**20
OPENMEMORY_STATES = frozenset({"active", "paused", "archived", "deleted"})


def _namespace(record: Mapping[str, Any], given: str | None, location: str) -> str:
    if given is not None:
        return given
    for field in ("user_id", "agent_id", "run_id"):
        value = optional(record, field, location, str)
        if value is not None:
            return value
    return DEFAULT_NAMESPACE


def _mem0_memory(record: Any, location: str, namespace: str | None) -> SourceRecord:
    if not isinstance(record, dict):
        raise ValidationError(location, None, "must be a JSON object (a mem0 memory)")
    source_id = required(record, "id", location)
    target = _namespace(record, namespace, location)
    created_at = moment_ms(required(record, "created_at", location), location, "created_at")
    meta = {"imported_from": "mem0", "source_id": source_id}
    meta.update((name, value) for name, value in record.items() if name not in MEM0_MAPPED and value is not None)
    return SourceRecord("memory", location, {
        "id": imported_id("mem0", target, source_id),
        "namespace": target,
        "text": required(record, "memory", location),
        "timestamp": created_at,
        "created_at": created_at,
        "updated_at": moment_ms(record.get("updated_at"), location, "updated_at"),
        "expires_at": day_end_ms(record.get("expiration_date"), location, "expiration_date"),
        "meta": meta,
    })  # fmt: skip


def _graph_relation(record: Any, location: str, namespace: str) -> SourceRecord:
    if not isinstance(record, dict):
        raise ValidationError(location, None, "must be a JSON object (a mem0 graph relation)")
    parts = [required(record, field, location) for field in ("source", "relationship", "target")]
    meta = {"imported_from": "mem0", "relation": dict(zip(("source", "relationship", "target"), parts))}
    meta.update((name, value) for name, value in record.items() if name not in meta["relation"] and value is not None)
    return SourceRecord("relation", location, {
        "id": imported_id("mem0", namespace, "relation", *parts), "namespace": namespace, "text": " ".join(parts), "meta": meta,
    })  # fmt: skip


def _openmemory_memory(record: Any, location: str, namespace: str, apps: dict[str, str], categories: dict[str, str]) -> SourceRecord:
    if not isinstance(record, dict):
        raise ValidationError(location, None, "must be a JSON object (an OpenMemory memory)")
    source_id = required(record, "id", location)
    state = required(record, "state", location)
    if state not in OPENMEMORY_STATES:
        raise ValidationError(location, "state", f"must be one of {', '.join(sorted(OPENMEMORY_STATES))}, got {state!r:.40}")
    created_at = moment_ms(required(record, "created_at", location), location, "created_at")
    # memories.jsonl.gz names the app and categories; memories.json gives ids, named in its own lists.
    app = record.get("app") if record.get("app") is not None else apps.get(record.get("app_id"))
    names = record.get("categories") if record.get("categories") is not None else [categories.get(i, i) for i in record.get("category_ids") or []]
    meta: dict[str, Any] = {"imported_from": "openmemory", "source_id": source_id, "state": state}
    if app is not None:
        meta["app"] = app
    if names:
        meta["categories"] = names
    meta.update((name, value) for name, value in record.items() if name not in OPENMEMORY_MAPPED and value not in (None, {}))
    return SourceRecord("memory", location, {
        "id": imported_id("openmemory", namespace, source_id),
        "namespace": namespace,
        "text": required(record, "content", location),
        "timestamp": created_at,
        "created_at": created_at,
        "updated_at": moment_ms(record.get("updated_at"), location, "updated_at"),
        "meta": meta,
    }, None if state in LIVE_STATES else state)  # fmt: skip


def _each(items: list[tuple[str, Any]], build) -> list[Read]:
    records: list[Read] = []
    for location, value in items:
        try:
            records.append(build(value, location))
        except ValidationError as error:
            records.append(error)
    return records


def _mem0_document(document: Any, name: str, namespace: str | None) -> list[Read]:
    relations: list[Any] = []
    if isinstance(document, dict) and "results" in document:
        results, relations = document["results"], document.get("relations") or []
    else:
        results = document
    if not isinstance(results, list) or not isinstance(relations, list):
        raise ValidationError(name, None, "is not what mem0 returns: a list of memories, or {\"results\": [...]}")
    records = _each([(f"{name} memory {index}", value) for index, value in enumerate(results, start=1)], lambda value, location: _mem0_memory(value, location, namespace))
    if relations:
        users = {value.get("user_id") for value in results if isinstance(value, dict)}
        target = namespace if namespace is not None else users.pop() if len(users) == 1 and None not in users else DEFAULT_NAMESPACE
        records += _each([(f"{name} relation {index}", value) for index, value in enumerate(relations, start=1)], lambda value, location: _graph_relation(value, location, target))
    return records


def _openmemory_json(document: dict[str, Any], name: str, namespace: str | None) -> list[Read]:
    user = document.get("user") if isinstance(document.get("user"), dict) else {}
    target = namespace if namespace is not None else user.get("user_id") if isinstance(user.get("user_id"), str) and user.get("user_id") else DEFAULT_NAMESPACE
    apps = {app.get("id"): app.get("name") for app in document.get("apps") or [] if isinstance(app, dict)}
    categories = {category.get("id"): category.get("name") for category in document.get("categories") or [] if isinstance(category, dict)}
    memories = document["memories"]
    if not isinstance(memories, list):
        raise ValidationError(name, "memories", "must be a list")
    items = [(f"{name} memory {index}", value) for index, value in enumerate(memories, start=1)]
    return _each(items, lambda value, location: _openmemory_memory(value, location, target, apps, categories))


def _openmemory_jsonl(data: bytes, name: str, namespace: str | None) -> list[Read]:
    target = namespace if namespace is not None else DEFAULT_NAMESPACE
    records: list[Read] = []
    for line, value in jsonl_items(data, name):
        if isinstance(value, ValidationError):
            records.append(value)
            continue
        records += _each([(f"{name} line {line}", value)], lambda value, location: _openmemory_memory(value, location, target, {}, {}))
    return records


def _too_large(name: str) -> ValidationError:
    return ValidationError(
        name, None, f"unpacks to more than {MAX_UNPACKED_BYTES // 2**20} MiB, the most an import unpacks; unpack it yourself and import the file inside"
    )


def _gunzip(data: bytes, name: str) -> bytes:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            unpacked = stream.read(MAX_UNPACKED_BYTES + 1)  # never more: the rest is not read at all
    except (OSError, EOFError, zlib.error) as exc:
        raise ValidationError(name, None, f"is not a whole gzip file ({exc})") from None
    if len(unpacked) > MAX_UNPACKED_BYTES:
        raise _too_large(name)
    return unpacked


def _member(archive: zipfile.ZipFile, member: str, name: str) -> bytes:
    """A member of the zip, unpacked; one that says (or turns out) to be larger than the bound is
    refused before or while unpacking, never after."""
    if archive.getinfo(member).file_size > MAX_UNPACKED_BYTES:
        raise _too_large(name)
    with archive.open(member) as stream:
        unpacked = stream.read(MAX_UNPACKED_BYTES + 1)
    if len(unpacked) > MAX_UNPACKED_BYTES:
        raise _too_large(name)
    return unpacked


def _zip(path: Path, name: str, namespace: str | None) -> list[Read]:
    try:
        return _zip_members(path, name, namespace)
    except (zipfile.BadZipFile, EOFError, zlib.error, RuntimeError, NotImplementedError) as exc:  # cut short, encrypted, unknown compression
        raise ValidationError(name, None, f"is not a whole zip file ({exc})") from None


def _zip_members(path: Path, name: str, namespace: str | None) -> list[Read]:
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        # memories.json is the whole export (the user, app and category names); the .jsonl.gz
        # holds the same memories, and is read when it is all the zip has.
        if "memories.json" in names:
            inner = f"{name}:memories.json"
            return _openmemory_json_bytes(_member(archive, "memories.json", inner), inner, namespace)
        if "memories.jsonl.gz" in names:
            inner = f"{name}:memories.jsonl.gz"
            return _openmemory_jsonl(_gunzip(_member(archive, "memories.jsonl.gz", inner), inner), inner, namespace)
    raise ValidationError(name, None, "is not an OpenMemory export: the zip holds neither memories.json nor memories.jsonl.gz")


def _openmemory_json_bytes(data: bytes, name: str, namespace: str | None) -> list[Read]:
    document = json_document(data, name)
    if not isinstance(document, dict) or "memories" not in document:
        raise ValidationError(name, None, "is not OpenMemory's memories.json (no 'memories')")
    return _openmemory_json(document, name, namespace)


def _is_openmemory_jsonl(data: bytes) -> bool:
    """True when the first line is a whole OpenMemory record by itself (memories.jsonl, unzipped);
    a JSON document's first line is not a whole object unless the document is one line."""
    first_line = data.removeprefix(b"\xef\xbb\xbf").lstrip().split(b"\n", 1)[0]
    try:
        first = strict_json(first_line.decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return isinstance(first, dict) and "content" in first and "memories" not in first


def read(source: str | os.PathLike[str], namespace: str | None) -> list[Read]:
    """Every memory of a mem0 dump or an OpenMemory export (the file's shape tells which)."""
    path = Path(source).expanduser()
    name = os.fspath(source)
    data = path.read_bytes()
    if data[:4] == b"PK\x03\x04" or zipfile.is_zipfile(path):  # a zip, even one cut short
        return _zip(path, name, namespace)
    if data[:2] == b"\x1f\x8b":
        return _openmemory_jsonl(_gunzip(data, name), name, namespace)
    if _is_openmemory_jsonl(data):
        return _openmemory_jsonl(data, name, namespace)
    document = json_document(data, name)
    if isinstance(document, dict) and "memories" in document:
        return _openmemory_json(document, name, namespace)
    return _mem0_document(document, name, namespace)


__all__ = ["read"]
