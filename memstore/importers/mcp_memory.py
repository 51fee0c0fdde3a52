"""The reference MCP memory server's knowledge graph (`@modelcontextprotocol/server-memory`): its
`memory.jsonl`, and the legacy `memory.json`, which holds the same JSON Lines.

Each line is an entity ({"type": "entity", "name", "entityType", "observations": [...]}) or a
relation ({"type": "relation", "from", "to", "relationType"}). One memory per observation, its
text naming the entity ("Alice_Smith (person): Works as a nurse"); one per relation ("Alice_Smith
leads Project_Falcon"); an entity with no observation is one memory of its own ("Acme
(organization)"), so no entity is lost. The server keeps no times: the memories are dated when
they are imported.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..io import jsonl_items
from ..defaults import DEFAULT_NAMESPACE
from .common import Read, SourceRecord, imported_id, required, with_extra

ENTITY_FIELDS = frozenset({"type", "name", "entityType", "observations"})
RELATION_FIELDS = frozenset({"type", "from", "to", "relationType"})


def _entity(value: dict[str, Any], location: str, namespace: str) -> list[SourceRecord]:
    name = required(value, "name", location)
    entity_type = required(value, "entityType", location)
    observations = value.get("observations", [])
    if not isinstance(observations, list):
        raise ValidationError(location, "observations", "must be a list of strings")
    meta = with_extra({"imported_from": "mcp-memory", "entity": name, "entity_type": entity_type}, value, ENTITY_FIELDS)
    if not observations:
        record = {"id": imported_id("mcp-memory", namespace, "entity", name), "namespace": namespace, "text": f"{name} ({entity_type})", "meta": meta}
        return [SourceRecord("entity", location, record)]
    records = []
    for index, observation in enumerate(observations):
        if not isinstance(observation, str):
            raise ValidationError(location, f"observations[{index}]", f"must be a string, got {observation!r:.40}")
        record = {
            "id": imported_id("mcp-memory", namespace, "observation", name, observation),
            "namespace": namespace, "text": f"{name} ({entity_type}): {observation}", "meta": meta,
        }  # fmt: skip
        records.append(SourceRecord("observation", f"{location} observation {index + 1}", record))
    return records


def _relation(value: dict[str, Any], location: str, namespace: str) -> SourceRecord:
    source, relation_type, target = (required(value, field, location) for field in ("from", "relationType", "to"))
    relation = {"from": source, "type": relation_type, "to": target}
    meta = with_extra({"imported_from": "mcp-memory", "relation": relation}, value, RELATION_FIELDS)
    record = {
        "id": imported_id("mcp-memory", namespace, "relation", source, relation_type, target),
        "namespace": namespace, "text": f"{source} {relation_type} {target}", "meta": meta,
    }  # fmt: skip
    return SourceRecord("relation", location, record)


def read(source: str | os.PathLike[str], namespace: str | None) -> list[Read]:
    """Every entity, observation and relation of a memory.jsonl (or memory.json) file."""
    path = Path(source).expanduser()
    target = namespace if namespace is not None else DEFAULT_NAMESPACE
    records: list[Read] = []
    for line, value in jsonl_items(path.read_bytes(), os.fspath(source)):
        location = f"{os.fspath(source)} line {line}"
        if isinstance(value, ValidationError):
            records.append(value)
            continue
        try:
            if not isinstance(value, dict):
                raise ValidationError(location, None, "must be a JSON object")
            kind = value.get("type")
            if kind == "entity":
                records.extend(_entity(value, location, target))
            elif kind == "relation":
                records.append(_relation(value, location, target))
            else:
                raise ValidationError(location, "type", f"must be 'entity' or 'relation', got {kind!r:.40}")
        except ValidationError as error:
            records.append(error)
    return records


__all__ = ["read"]
