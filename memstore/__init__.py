"""memstore: a persistent memory store for AI agents, kept small and free of duplicates."""

from __future__ import annotations

from typing import Any

from .errors import (
    IdConflictError,
    MemstoreError,
    NotFoundError,
    RecallCheckError,
    SchemaError,
    StoreBusyError,
    ValidationError,
)
from .normalize import normalize_key
from .store import MemoryStore
from .writes import AddResult

# Report classes of the job and of recall, and the pure-Python reference of the rules, loaded on
# first use: `import memstore` (and a per-turn `memstore add`) does not pay for the job, recall,
# hygiene and reference modules.
_LAZY = {
    "ConsolidationReport": "runs", "RestoreReport": "restore", "CheckResult": "recall_checks", "RecallCheckResult": "recall_checks",
    "LifecycleReport": "lifecycle", "consolidate_memories": "reference",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AddResult", "CheckResult", "ConsolidationReport", "IdConflictError", "LifecycleReport", "MemoryStore", "MemstoreError",
    "NotFoundError", "RecallCheckError", "RecallCheckResult", "RestoreReport", "SchemaError", "StoreBusyError", "ValidationError",
    "consolidate_memories", "normalize_key",
]  # fmt: skip
