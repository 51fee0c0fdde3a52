"""Importers from the tools people keep memories in today (docs/import.md gives each mapping).

Each format's module has `read(source, namespace) -> list[SourceRecord | ValidationError]`: it
reads its whole source (never writing to it) and maps every record onto memstore's fields;
`memstore.importers.apply` checks them and writes them in one transaction.
"""

from __future__ import annotations

from importlib import import_module

# The format's name (`memstore import --from NAME`) -> its module. "memstore" is memstore's own
# JSON/JSONL (memstore.io), read by the store itself.
FORMATS = {
    "memstore": None,
    "langgraph": "langgraph",
    "mcp-memory": "mcp_memory",
    "mem0": "mem0",
    "mcp-memory-service": "mcp_memory_service",
    "uteke": "uteke",
    "basic-memory": "basic_memory",
}


def reader(source_format: str):
    """The `read` function of a format other than memstore's own."""
    module = FORMATS[source_format]
    return import_module(f"{__package__}.{module}").read


__all__ = ["FORMATS", "reader"]
