"""The torture suite (scripts/torture/) at small sizes: the same scenario functions, the same checks.

Full sizes: `.venv/bin/python -m scripts.torture` (see its docstring). Each test here asserts the
scenario's verdict and the figures the issue names, so a failure says which promise broke.
"""

from __future__ import annotations

import json
import os

import pytest

from scripts.torture.crash import scenario_crash
from scripts.torture.disk_full import scenario_disk_full, try_mount, unmount
from scripts.torture.faults import FAULT_KINDS, scenario_faults
from scripts.torture.lock import scenario_lock
from scripts.torture.suite import main
from scripts.torture.writers import scenario_concurrent, scenario_killed_writers


def explain(result: dict) -> str:
    return json.dumps({k: v for k, v in result.items() if k != "traceback"}, indent=1, default=str)[:4000]


def test_crash_during_consolidation_ends_in_before_or_after_state(tmp_path):
    result = scenario_crash(tmp_path, memories=2_000, trials=6)
    assert result["passed"], explain(result)
    assert result["neither_state"] == 0
    assert result["before_state"] + result["after_state"] == 6
    assert result["killed"] >= 1 and result["failure_count"] == 0


def test_concurrent_writers_lose_nothing_and_never_see_a_lock_error(tmp_path):
    result = scenario_concurrent(tmp_path, memories=2_000, capacity=1_500, writers=3, seconds=3, job_pause=0.2)
    assert result["passed"], explain(result)
    assert result["locked_errors"] == 0 and result["other_errors"] == 0
    assert result["missing_ids"] == 0 and result["content_mismatches"] == 0
    assert result["acked"] > 0 and result["job_runs"] >= 1 and result["job_errors"] == 0
    assert result["p50_ms"] is not None and result["p99_ms"] is not None


def test_writers_killed_mid_write_lose_no_acknowledged_id_and_leave_no_partial_row(tmp_path):
    result = scenario_killed_writers(
        tmp_path, memories=2_000, capacity=1_500, writers=3, seconds=4, job_pause=0.2
    )
    assert result["passed"], explain(result)
    assert result["kills"] >= 1 and result["acked"] > 0
    assert result["missing_ids"] == 0 and result["partial_rows"] == 0 and result["content_mismatches"] == 0


def test_a_fault_at_every_statement_of_the_job_leaves_the_store_unchanged(tmp_path):
    result = scenario_faults(tmp_path, memories=2_000)
    assert result["passed"], explain(result)
    assert result["statements_in_job"] >= 10
    assert result["faults_injected"] == result["statements_in_job"] * len(FAULT_KINDS)
    assert set(result["completed_at_k"].values()) == {result["statements_in_job"] + 1}
    assert result["raised_to_caller"]["sqlite-busy"] == ["memstore.errors.StoreBusyError"]
    assert result["store_changed_after_failure"] == 0 and result["failure_count"] == 0


def _can_mount_tmpfs(tmp_path) -> bool:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    if try_mount(probe, 64 * 1024) is not None:
        return False
    unmount(probe)
    return True


@pytest.mark.parametrize("method", ["tmpfs", "max_page_count"])
def test_disk_full_during_the_job_rolls_back_with_a_clear_error(tmp_path, method):
    # A real small tmpfs where this machine lets us mount one (root with CAP_SYS_ADMIN, as here and in
    # CI); otherwise the same failure through SQLite's max_page_count, never a skip.
    if method == "tmpfs" and not _can_mount_tmpfs(tmp_path):
        method = "max_page_count"
    result = scenario_disk_full(tmp_path, memories=2_000, method=method)
    assert result["passed"], explain(result)
    assert result["method"] == method
    assert result["exit_code"] == 1 and result["clear_error"]
    assert result["error_line"].startswith("Error: ") and "disk is full" in result["error_line"]
    assert result["store_unchanged"] and result["opens_and_check_ok"] and result["retry_after_space_freed_ok"]


def test_a_write_locked_out_past_the_timeout_fails_cleanly_and_the_next_one_succeeds(tmp_path):
    result = scenario_lock(tmp_path, trials=3)
    assert result["passed"], explain(result)
    assert result["failure_count"] == 0
    assert result["wait_ms_min"] >= 180
    assert any("locked" in message for message in result["messages"])


def test_the_script_runs_a_scenario_and_writes_its_table_and_json(tmp_path, capsys):
    out = tmp_path / "torture.json"
    code = main(["--quick", "--only", "lock", "--json", str(out), "--workdir", str(tmp_path / "work")])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "lock" in printed and "PASS" in printed
    document = json.loads(out.read_text())
    assert document["mode"] == "quick" and document["passed"] is True
    assert [s["scenario"] for s in document["scenarios"]] == ["lock"]
