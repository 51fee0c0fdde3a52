"""Typed ORM models over memstore's tables, for code that wants `Session` and mapped objects.

The tables themselves are defined once, in `memstore.schema`; each model maps one of them
(declarative with an imperative table), so the two cannot drift. memstore's own code runs on the
Core tables and never imports this module on its hot paths.

>>> from sqlalchemy import select
>>> from memstore.models import Memory
>>> print(select(Memory.id).where(Memory.norm_key == "x"))
SELECT memories.id 
FROM memories 
WHERE memories.norm_key = :norm_key_1
"""

from __future__ import annotations

from typing import Any, Optional

from sqlalchemy.orm import DeclarativeBase, Mapped

from . import schema
from .schema import *  # noqa: F401,F403  (the schema's names, for code that imported them from here)
from .schema import __all__ as _schema_names


class Base(DeclarativeBase):
    metadata = schema.metadata


class _MemoryFields:
    """The columns shared by the live set and the archive, typed."""

    id: Mapped[str]
    namespace: Mapped[str]
    text: Mapped[str]
    norm_key: Mapped[str]
    timestamp: Mapped[int]
    importance: Mapped[int]
    pinned: Mapped[bool]
    created_at: Mapped[int]
    updated_at: Mapped[int]
    last_recalled_at: Mapped[Optional[int]]
    recall_count: Mapped[int]
    fact_key: Mapped[Optional[str]]
    meta: Mapped[Optional[dict[str, Any]]]
    seq: Mapped[int]
    expires_at: Mapped[Optional[int]]
    stored_at: Mapped[Optional[int]]


class Memory(_MemoryFields, Base):
    """The live set: what recall sees and what consolidation ranks."""

    __table__ = schema.memories
    # A memory is named by its id (session.get(Memory, "m1")); seq is only the table's row key.
    __mapper_args__ = {"primary_key": [schema.memories.c.id]}


class ArchivedMemory(_MemoryFields, Base):
    """Every record that left the live set, whole, with why and by which run."""

    __table__ = schema.memory_archive

    archived_at: Mapped[int]
    reason: Mapped[str]
    superseded_by: Mapped[Optional[str]]
    run_id: Mapped[Optional[int]]
    similarity: Mapped[Optional[float]]


class ConsolidationRun(Base):
    """One row per applied run: its parameters, what it did, and whether it was undone."""

    __table__ = schema.consolidation_runs

    id: Mapped[int]
    kind: Mapped[str]
    namespace: Mapped[Optional[str]]
    capacity: Mapped[Optional[int]]
    params: Mapped[Optional[dict[str, Any]]]
    status: Mapped[str]
    started_at: Mapped[int]
    finished_at: Mapped[int]
    live_before: Mapped[int]
    kept: Mapped[int]
    duplicates: Mapped[int]
    evicted: Mapped[int]
    stale: Mapped[int]
    restored_at: Mapped[Optional[int]]
    high_water_seq: Mapped[Optional[int]]
    expired: Mapped[int]
    parent_run_id: Mapped[Optional[int]]


class MemoryMerge(Base):
    """Recall history a run moved onto a survivor, so restore can take it back."""

    __table__ = schema.memory_merges

    run_id: Mapped[int]
    survivor_id: Mapped[str]
    absorbed_recall_count: Mapped[int]
    last_recalled_at_before: Mapped[Optional[int]]
    last_recalled_at_after: Mapped[Optional[int]]


class MemoryGap(Base):
    """A time a memory was out of the live set and came back (archived by run_id, then restored)."""

    __table__ = schema.memory_gaps

    id: Mapped[int]
    memory_id: Mapped[str]
    archived_at: Mapped[int]
    restored_at: Mapped[int]
    run_id: Mapped[int]


class Setting(Base):
    """A setting of the store itself, such as the embedding model in use."""

    __table__ = schema.memstore_settings

    key: Mapped[str]
    value: Mapped[str]


class MemoryVector(Base):
    """One memory's embedding for one model, a little-endian float32 blob of unit length."""

    __table__ = schema.memory_vectors

    memory_id: Mapped[str]
    model: Mapped[str]
    dim: Mapped[int]
    vector: Mapped[bytes]
    embedded_at: Mapped[int]


class ContradictionFlag(Base):
    """A pair of memories that may contradict each other, for a person to resolve or dismiss."""

    __table__ = schema.contradiction_flags

    id: Mapped[int]
    namespace: Mapped[str]
    older_id: Mapped[str]
    newer_id: Mapped[str]
    similarity: Mapped[float]
    reason: Mapped[str]
    status: Mapped[str]
    run_id: Mapped[int]
    flagged_at: Mapped[int]
    closed_at: Mapped[Optional[int]]
    closed_by_run: Mapped[Optional[int]]


__all__ = [
    "ArchivedMemory", "Base", "ConsolidationRun", "ContradictionFlag", "Memory", "MemoryGap", "MemoryMerge", "MemoryVector",
    "Setting",
    *_schema_names,
]  # fmt: skip
