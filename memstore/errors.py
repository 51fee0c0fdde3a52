"""memstore's exceptions: one base class, so the CLI can turn any of them into one line and exit 1."""

from __future__ import annotations


class MemstoreError(Exception):
    """Base of every error memstore raises on purpose."""


class ValidationError(MemstoreError, ValueError):
    """A record or an input line that cannot be stored, with where and which field."""

    def __init__(self, location: str, field: str | None, problem: str) -> None:
        self.location = location
        self.field = field
        self.problem = problem
        # repr() escapes a field name (an input's JSON key) so the message stays on one line.
        where = f"{location}: field {field!r}" if field else location
        super().__init__(f"{where}: {problem}".replace("\n", "\\n").replace("\r", "\\r"))


class IdConflictError(MemstoreError):
    """A different record already holds this id, live or archived."""


class NotFoundError(MemstoreError):
    """No memory or run with that id."""


def memory_not_found(memory_id: str, namespace: str | None = None) -> NotFoundError:
    # The same words for an unknown id and for one in another namespace: a caller scoped to a
    # namespace learns nothing about the others.
    scope = "" if namespace is None else f" in namespace {namespace!r}"
    return NotFoundError(f"no memory with id {memory_id!r}{scope}")


class OutOfScopeError(MemstoreError):
    """A view kept to one namespace (`MemoryStore.scoped`) was asked for what reads or changes every namespace."""


class SchemaError(MemstoreError):
    """The database's schema is not one this memstore can use."""


class StoreBusyError(MemstoreError):
    """The write lock could not be had within the busy timeout."""


class RecallCheckError(MemstoreError):
    """Recall checks failed against a job's would-be state; the job was rolled back."""

    def __init__(self, report) -> None:
        self.report = report
        failed = [c for c in report.checks if not c.passed]
        named = "; ".join(f"{c.query!r} expects {c.expect_id!r} (top {', '.join(c.top_ids) or 'none'})" for c in failed)
        super().__init__(
            f"{len(failed)} of {len(report.checks)} recall checks failed, so the {report.kind} was rolled back: {named}"
        )
