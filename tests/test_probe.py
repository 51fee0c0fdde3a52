"""The probe of issue 29 (scripts/probe/) at its smallest size, on SQLite and the test run's
PostgreSQL server: every probe must hold.

Larger: `.venv/bin/python -m scripts.probe --trials 20 --size 500` (see its docstring); the tally
of a default run is in docs/reliability.md ("The probe").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import REPO


@pytest.mark.slow
def test_every_probe_holds_at_the_smallest_size(tmp_path, postgres, model_dir):
    out = tmp_path / "probe.json"
    done = subprocess.run(
        [sys.executable, "-m", "scripts.probe", "--trials", "1", "--size", "40", "--pg-url", postgres.admin_url,
         "--model-dir", str(model_dir), "--json", str(out), "--workdir", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=1800, env={**os.environ, "MEMSTORE_TEST_MODEL_DIR": str(model_dir)}, cwd=REPO,
    )  # fmt: skip
    document = json.loads(out.read_text())
    not_held = [p for p in document["probes"] if p["held"] != p["times"]]
    assert done.returncode == 0 and document["held"] and not not_held, done.stdout + json.dumps(not_held, indent=1, ensure_ascii=False)
    # Every kind the issue lists ran, on both backends where it has a path there.
    ran = {(p["kind"], p["backend"]) for p in document["probes"] if p["times"]}
    assert {("killed run", "SQLite"), ("killed run", "PostgreSQL"), ("concurrent runs", "SQLite"), ("concurrent runs", "PostgreSQL"),
            ("full disk", "SQLite"), ("bad input", "SQLite"), ("bad input", "PostgreSQL")} <= ran  # fmt: skip
    skipped = [p for p in document["probes"] if p["skipped"]]
    assert all(p["skipped"] == "skipped: not root" for p in skipped), skipped
    assert all(p["times"] > 0 for p in document["probes"] if not p["skipped"])
    # The table the docs quote: one row per probe and backend, and the total.
    assert "| kind of probe | what was tried | times | held | not held |" in done.stdout
    assert "ALL HELD" in done.stdout
