"""5. Disk full during the job: the job through the CLI on a disk that fills up halfway through it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from scripts import REPO, module_command
from scripts.data import build_store
from scripts.stores import copy_store, integrity, snapshot, store_check, write_lock_free

from .common import NAMESPACES, memstore_cli, scenario_dir


def try_mount(directory: Path, size: int) -> str | None:
    """Mount a tmpfs of `size` bytes; None on success, else why not."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "not root"
    try:
        result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
                                capture_output=True, text=True, timeout=30)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None if result.returncode == 0 else (result.stderr.strip() or f"mount exited {result.returncode}")


def unmount(directory: Path) -> None:
    if subprocess.run(["umount", str(directory)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(directory)], capture_output=True)


def scenario_disk_full(workdir=None, *, memories: int = 20_000, method: str = "auto", seed: int = 5) -> dict[str, Any]:
    """The job through the CLI on a disk that fills up halfway through it: exit 1 with a one-line error,
    the store exactly as before, opens and passes check(); once space is freed the job succeeds.

    method: "tmpfs" (a tmpfs sized to the store plus half the job's growth), "max_page_count" (the job's
    connections may not grow the file past the store plus half the job's growth), or "auto" (tmpfs if
    it can be mounted, else max_page_count).
    """
    from memstore import MemoryStore

    if method not in ("auto", "tmpfs", "max_page_count"):
        raise ValueError(f"unknown method {method!r}")
    with scenario_dir(workdir, "disk-full") as work:
        pristine = work / "pristine.db"
        built = build_store(pristine, memories, fact_ratio=0.5, namespaces=NAMESPACES, prior=memories // 5, seed=seed)
        capacity = max(1, int(memories * 0.15))
        before = snapshot(pristine)
        db_bytes = pristine.stat().st_size

        # How much the job grows the store: its WAL before the checkpoint, and the pages it adds.
        reference = copy_store(pristine, work / "reference.db")
        with MemoryStore(reference, create=False) as store:
            with store.engine.connect() as conn:
                pages_before = conn.exec_driver_sql("PRAGMA page_count").scalar()
                page_size = conn.exec_driver_sql("PRAGMA page_size").scalar()
            store.consolidate(capacity, namespace=None)
            wal_growth = Path(f"{reference}-wal").stat().st_size
            with store.engine.connect() as conn:
                page_growth = conn.exec_driver_sql("PRAGMA page_count").scalar() - pages_before
        after = snapshot(reference)["timeless"]

        cli = [*memstore_cli()]
        job_args = ["consolidate", "--capacity", str(capacity), "--all-namespaces"]
        mount_error = None
        mounted = None
        used = method
        figures: dict[str, Any] = {}
        try:
            if method in ("auto", "tmpfs"):
                mnt = work / "tmpfs"
                mnt.mkdir()
                slack = max(16 * 1024, (wal_growth // 2) // 4096 * 4096)
                size = (db_bytes + 32 * 1024 + slack + 4095) // 4096 * 4096  # the store, its -shm, half the growth
                mount_error = try_mount(mnt, size)
                if mount_error is None:
                    mounted, used = mnt, "tmpfs"
                    figures.update(tmpfs_bytes=size, slack_bytes=slack)
                elif method == "tmpfs":
                    raise RuntimeError(f"cannot mount a tmpfs: {mount_error}")
                else:
                    used = "max_page_count"
            if used == "tmpfs":
                store_path = copy_store(pristine, mounted / "store.db")
                command = [*cli, "--db", str(store_path), *job_args]
            else:
                store_path = copy_store(pristine, work / "store.db")
                limit = pages_before + max(1, page_growth // 2)
                figures.update(max_page_count=limit, pages_before=pages_before, page_growth=page_growth)
                command = module_command("scripts.torture.capped_cli", str(limit), "--db", str(store_path), *job_args)
            run = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=REPO)
            stderr_lines = run.stderr.strip().splitlines()
            error_line = stderr_lines[0] if stderr_lines else ""
            clear_error = (
                run.returncode == 1
                and len(stderr_lines) == 1
                and error_line.startswith("Error: ")
                and "Traceback" not in run.stderr
                and "full" in error_line.lower()
            )
            unchanged = snapshot(store_path)["full"] == before["full"]
            checked = integrity(store_path)
            ok, findings = store_check(store_path)
            lock_free = write_lock_free(store_path)
            # Free the space (or lift the limit): the same job must now succeed.
            if used == "tmpfs":
                subprocess.run(["mount", "-o", f"remount,size={db_bytes * 4 + wal_growth * 4}", str(mounted)], check=True)
                retry = subprocess.run([*cli, "--db", str(store_path), *job_args], capture_output=True, text=True, timeout=600)
            else:
                retry = subprocess.run([*cli, "--db", str(store_path), *job_args], capture_output=True, text=True, timeout=600)
            retry_ok = retry.returncode == 0 and snapshot(store_path)["timeless"] == after
        finally:
            if mounted is not None:
                unmount(mounted)
        figures = {
            "size": f"{built['live']:,} live + {built['archived']:,} archived, {used}",
            "memories": built["live"],
            "method": used,
            "mount_error": mount_error,
            "store_bytes": db_bytes,
            "job_wal_growth_bytes": wal_growth,
            "job_page_growth": page_growth,
            "page_size": page_size,
            **figures,
            "exit_code": run.returncode,
            "error_line": error_line,
            "stdout": run.stdout.strip()[:200],
            "clear_error": clear_error,
            "store_unchanged": unchanged,
            "integrity": checked[:3],
            "opens_and_check_ok": ok,
            "check_findings": findings,
            "write_lock_free": lock_free,
            "retry_after_space_freed_ok": retry_ok,
            "retry_stderr": retry.stderr.strip()[:300],
        }
        figures["passed"] = clear_error and unchanged and checked == ["ok"] and ok and lock_free and retry_ok
        return figures
