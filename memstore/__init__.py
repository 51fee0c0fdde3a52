"""memstore: a persistent memory store for AI agents, kept small and free of duplicates."""

from .consolidate import ConsolidationReport, RestoreReport
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
from .reference import consolidate_memories
from .search import CheckResult
from .store import AddResult, MemoryStore

__all__ = [
    "AddResult", "CheckResult", "ConsolidationReport", "IdConflictError", "MemoryStore", "MemstoreError",
    "NotFoundError", "RecallCheckError", "RestoreReport", "SchemaError", "StoreBusyError", "ValidationError",
    "consolidate_memories", "normalize_key",
]  # fmt: skip
