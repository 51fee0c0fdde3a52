"""8. Lock hygiene: a write that cannot get the lock within the busy timeout."""

from __future__ import annotations

import time
from typing import Any

from scripts.data import build_store
from scripts.stores import sqlite3, store_check

from .common import rounded, scenario_dir


def scenario_lock(workdir=None, *, trials: int = 20, busy_timeout_ms: int = 200, seed: int = 8) -> dict[str, Any]:
    """Another connection holds BEGIN IMMEDIATE: a write (add, add_many, the job, on alternate trials) fails
    after the busy timeout with StoreBusyError and a clear message, no connection stays checked out, and
    once the lock is released the next write succeeds. One store serves every trial, so a leaked
    connection or transaction would pile up."""
    from memstore import MemoryStore, StoreBusyError

    with scenario_dir(workdir, "lock") as work:
        db = work / "store.db"
        build_store(db, 200, seed=seed)
        store = MemoryStore(db, create=False, busy_timeout_ms=busy_timeout_ms)
        failures: list[str] = []
        waits: list[float] = []
        messages: set[str] = set()
        kinds = ("add", "add_many", "consolidate")
        try:
            for t in range(trials):
                kind = kinds[t % len(kinds)]
                holder = sqlite3.connect(db, isolation_level=None, timeout=5)
                holder.execute("BEGIN IMMEDIATE")
                live_before = store.count(None)  # reads go on while the lock is held (WAL)
                start = time.perf_counter()
                try:
                    if kind == "add":
                        store.add(f"locked out {t}", id=f"lock-{t}")
                    elif kind == "add_many":
                        store.add_many([{"id": f"lock-{t}", "text": f"locked out {t}"}])
                    else:
                        store.consolidate(10, namespace=None)
                    failures.append(f"trial {t}: {kind} succeeded while another connection held the write lock")
                except StoreBusyError as exc:
                    messages.add(str(exc))
                    if "lock" not in str(exc).lower():
                        failures.append(f"trial {t}: unclear message {str(exc)!r}")
                except Exception as exc:
                    failures.append(f"trial {t}: {kind} raised {type(exc).__name__}: {exc} (not StoreBusyError)")
                waited = time.perf_counter() - start
                waits.append(waited * 1000)
                if waited < busy_timeout_ms / 1000 * 0.9:
                    failures.append(f"trial {t}: gave up after {waited * 1000:.0f} ms, before the {busy_timeout_ms} ms timeout")
                if store.engine.pool.checkedout():
                    failures.append(f"trial {t}: {store.engine.pool.checkedout()} connection(s) checked out after the failure")
                holder.execute("ROLLBACK")
                holder.close()
                if store.count(None) != live_before:
                    failures.append(f"trial {t}: the failed {kind} changed the live set")
                try:
                    row = store.add(f"after the lock {t}", id=f"after-{t}")
                    if row["id"] != f"after-{t}":
                        failures.append(f"trial {t}: next add returned {row['id']!r}")
                except Exception as exc:
                    failures.append(f"trial {t}: the next add failed: {type(exc).__name__}: {exc}")
                if store.engine.pool.checkedout():
                    failures.append(f"trial {t}: connection checked out after the successful add")
            pool_status = store.engine.pool.status()
        finally:
            store.close()
        ok, findings = store_check(db)
        return {
            "size": f"{trials} lock-outs, busy_timeout {busy_timeout_ms} ms",
            "trials": trials,
            "busy_timeout_ms": busy_timeout_ms,
            "wait_ms_min": rounded(min(waits, default=None)),
            "wait_ms_max": rounded(max(waits, default=None)),
            "messages": sorted(messages),
            "pool_status": pool_status,
            "check_ok": ok,
            "check_findings": findings,
            "failures": failures[:20],
            "failure_count": len(failures),
            "passed": not failures and ok and len(messages) >= 1,
        }
