"""The probe of issues 29 and 40 (scripts/probe/) at its smallest size, on SQLite and the test run's
PostgreSQL server: every probe must hold.

The probes run in groups, one `python -m scripts.probe --only ...` each, so that the test run's
workers share them out (one run of them all is the longest thing the suite does); together the
groups name every probe once.

Larger: `.venv/bin/python -m scripts.probe --trials 20 --size 500` (see its docstring); the tally
of a default run is in docs/reliability.md ("The probe").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from scripts.probe.cli import PROBES

from .conftest import REPO

GROUPS = {
    "killed": ["kill-sync", "kill-import", "kill-maintain", "kill-restore"],
    "concurrent": ["maintains", "writers", "disk-full"],
    "clients": ["http-clients", "langgraph-ttl"],
    "listeners": ["tokens", "rebinding", "garbage", "namespaces", "web"],
    "web-doors": ["web-scope", "web-read-only", "web-cookie", "web-numbers", "web-bidi"],
    "inputs": ["deep-meta", "odd-namespaces", "ttl-digits"],
    "time": ["time", "password"],
    "model-inputs": ["vectors", "odd-time"],
    "sources": ["sources", "copy-targets", "token-file", "targets"],
    "vector-files": ["vectors-folder", "vector-files"],
}
# What the probe must have tried in each group, on each backend where it has a path there.
MUST_RUN = {
    "killed": {("killed run", "SQLite"), ("killed run", "PostgreSQL")},
    "concurrent": {("concurrent runs", "SQLite"), ("concurrent runs", "PostgreSQL"), ("full disk", "SQLite")},
    "inputs": {("bad input", "SQLite"), ("bad input", "PostgreSQL")},
}


def test_the_groups_name_every_probe_once():
    named = [name for group in GROUPS.values() for name in group]
    assert sorted(named) == sorted(PROBES) and len(named) == len(set(named))


@pytest.mark.slow
@pytest.mark.parametrize("group", GROUPS)
def test_every_probe_holds_at_the_smallest_size(group, tmp_path, postgres, model_dir):
    out = tmp_path / "probe.json"
    done = subprocess.run(
        [sys.executable, "-m", "scripts.probe", "--only", *GROUPS[group], "--trials", "1", "--size", "40", "--pg-url",
         postgres.admin_url, "--model-dir", str(model_dir), "--json", str(out), "--workdir", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=1800, env={**os.environ, "MEMSTORE_TEST_MODEL_DIR": str(model_dir)}, cwd=REPO,
    )  # fmt: skip
    document = json.loads(out.read_text())
    not_held = [p for p in document["probes"] if p["held"] != p["times"]]
    assert done.returncode == 0 and document["held"] and not not_held, done.stdout + json.dumps(not_held, indent=1, ensure_ascii=False)
    ran = {(p["kind"], p["backend"]) for p in document["probes"] if p["times"]}
    assert MUST_RUN.get(group, set()) <= ran
    skipped = [p for p in document["probes"] if p["skipped"]]
    assert all(p["skipped"] == "skipped: not root" for p in skipped), skipped
    assert all(p["times"] > 0 for p in document["probes"] if not p["skipped"])
    # The table the docs quote: one row per probe and backend, and the total.
    assert "| kind of probe | what was tried | times | held | not held |" in done.stdout
    assert "ALL HELD" in done.stdout
