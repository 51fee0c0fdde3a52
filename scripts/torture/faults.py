"""4. Fault injection: an exception at the k-th statement of the job, for every k until it completes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scripts.data import build_store
from scripts.stores import copy_store, integrity, snapshot, sqlite3, store_check, write_lock_free

from .common import NAMESPACES, scenario_dir


class InjectedFault(RuntimeError):
    """Raised by the torture suite at the k-th statement of the job."""


# What is raised at the k-th statement: a plain Python exception (a bug in the job's own code), a
# driver error as SQLite reports an I/O failure, and one as SQLite reports a lock (memstore turns
# that one into StoreBusyError).
FAULT_KINDS: dict[str, Callable[[str], BaseException]] = {
    "python": lambda where: InjectedFault(f"injected fault {where}"),
    "sqlite-io": lambda where: sqlite3.OperationalError(f"disk I/O error (injected fault {where})"),
    "sqlite-busy": lambda where: sqlite3.OperationalError(f"database is locked (injected fault {where})"),
}


def _caused_by_injection(exc: BaseException | None) -> bool:
    seen = set()
    while exc is not None and id(exc) not in seen:
        if "injected fault" in str(exc):
            return True
        seen.add(id(exc))
        exc = getattr(exc, "orig", None) or exc.__cause__ or exc.__context__
    return False


def scenario_faults(
    workdir=None, *, memories: int = 50_000, kinds: tuple[str, ...] = tuple(FAULT_KINDS), seed: int = 4, max_k: int = 100_000
) -> dict[str, Any]:
    """An exception at the k-th statement the job executes, for k = 1, 2, ... until a run completes, once
    per kind of fault: after every failure the store is exactly as before (rows, archive, runs, merges),
    no connection is checked out, the write lock is free, and the store opens and passes check()."""
    from sqlalchemy import event

    from memstore import MemoryStore

    with scenario_dir(workdir, "faults") as work:
        pristine = work / "pristine.db"
        built = build_store(pristine, memories, fact_ratio=0.5, namespaces=NAMESPACES, prior=memories // 5, seed=seed)
        capacity = max(1, int(memories * 0.15))
        before = snapshot(pristine)

        # The expected after-state, and what the job executes, from a run without faults.
        statements: list[str] = []
        trial = copy_store(pristine, work / "trial.db")
        with MemoryStore(trial, create=False) as store:
            record = lambda conn, cursor, statement, *rest: statements.append(" ".join(statement.split())[:70])  # noqa: E731
            event.listen(store.engine, "before_cursor_execute", record)
            store.consolidate(capacity, namespace=None)
            event.remove(store.engine, "before_cursor_execute", record)
        after = snapshot(trial)["timeless"]

        failures: list[str] = []
        foreign_errors: list[str] = []
        raised: dict[str, set[str]] = {kind: set() for kind in kinds}
        completed_at: dict[str, int | None] = {}
        injected = 0
        for kind in kinds:
            completed_at[kind] = None
            for k in range(1, max_k + 1):
                trial = copy_store(pristine, work / "trial.db")
                store = MemoryStore(trial, create=False)
                executed = 0

                def fault(conn, cursor, statement, parameters, context, executemany, k=k, kind=kind):
                    nonlocal executed
                    executed += 1
                    if executed == k:
                        raise FAULT_KINDS[kind](f"at statement {k}: {' '.join(statement.split())[:60]}")

                event.listen(store.engine, "before_cursor_execute", fault)
                completed = False
                try:
                    store.consolidate(capacity, namespace=None)
                    completed = True
                except Exception as exc:
                    raised[kind].add(f"{type(exc).__module__}.{type(exc).__name__}")
                    if not _caused_by_injection(exc):
                        foreign_errors.append(f"{kind} k={k}: {type(exc).__name__}: {exc}"[:300])
                finally:
                    event.remove(store.engine, "before_cursor_execute", fault)
                checked_out = store.engine.pool.checkedout()
                lock_free = write_lock_free(trial)
                store.close()
                where = f"{kind} k={k}"
                if completed:
                    completed_at[kind] = k
                    if snapshot(trial)["timeless"] != after:
                        failures.append(f"{where}: the completed run differs from the expected after-state")
                    break
                injected += 1
                if checked_out:
                    failures.append(f"{where}: {checked_out} connection(s) still checked out after the failure")
                if not lock_free:
                    failures.append(f"{where}: the write lock is still held after the failure")
                if snapshot(trial)["full"] != before["full"]:
                    failures.append(f"{where}: the store changed after a failure at statement {k}")
                checked = integrity(trial)
                if checked != ["ok"]:
                    failures.append(f"{where}: integrity_check {checked[:3]}")
                ok, findings = store_check(trial)
                if not ok:
                    failures.append(f"{where}: check() failed after reopening: {findings}")
        every_k = all(at == len(statements) + 1 for at in completed_at.values())
        return {
            "size": f"{built['live']:,} live + {built['archived']:,} archived, every k of {len(statements)} statements x {len(kinds)} kinds",
            "memories": built["live"],
            "statements_in_job": len(statements),
            "kinds": list(kinds),
            "k_tried": max((at or max_k) for at in completed_at.values()) if completed_at else 0,
            "faults_injected": injected,
            "completed_at_k": completed_at,
            "raised_to_caller": {kind: sorted(names) for kind, names in raised.items()},
            "store_changed_after_failure": sum("changed" in f for f in failures),
            "statement_heads": sorted({" ".join(s.split()[:3]) for s in statements}),
            "foreign_errors": foreign_errors[:5],
            "failures": failures[:20],
            "failure_count": len(failures),
            "passed": bool(kinds) and every_k and not failures and not foreign_errors,
        }
