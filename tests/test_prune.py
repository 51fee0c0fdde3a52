"""Prune, verify, recall-gated jobs, merged recall history and backups: the seed's hygiene pass, end to end."""

from __future__ import annotations

import json
import multiprocessing
from .sqlitelib import sqlite3
import time

import pytest
from click.testing import CliRunner

from memstore import MemoryStore, RecallCheckError
from memstore.cli import cli
from memstore.io import iso_to_ms

from .test_cli import SEED_HYGIENE_FIXTURE

CHECKS = [{"query": "office wifi guests", "expect_id": "m5"}, {"query": "alpha beta gamma", "expect_id": "m1"}]


@pytest.fixture
def hygiene_store(tmp_path):
    """The seed's worked example imported through the CLI; returns (invoke, tmp_path)."""
    db = tmp_path / "memories.db"
    fixture = tmp_path / "memories.jsonl"
    fixture.write_text(SEED_HYGIENE_FIXTURE)
    (tmp_path / "checks.json").write_text(json.dumps(CHECKS))
    (tmp_path / "stale-check.json").write_text(json.dumps([{"query": "vendor pricing seat", "expect_id": "m4"}]))

    def invoke(*args):
        return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)

    assert invoke("import", str(fixture)).exit_code == 0
    return invoke, tmp_path


def test_seed_worked_example_prune_keeps_five_and_archives_the_stale_record_and_one_duplicate(hygiene_store):
    invoke, tmp = hygiene_store
    before = invoke("verify", str(tmp / "checks.json"))
    assert before.exit_code == 0 and before.output.endswith("2/2 checks passed\n")

    pruned = json.loads(invoke("prune", "--now", "2026-10-12", "--json", "--list-kept").output)
    assert pruned["kept"] == 5 and pruned["pinned_kept"] == 1
    assert [(a["id"], a["reason"], a["superseded_by"]) for a in pruned["archived"]] == [
        ("m1", "duplicate", "m2"),  # newest copy wins (the seed kept the first)
        ("m4", "stale", None),
    ]
    assert "m7" in pruned["kept_ids"]  # pinned, staleness 1.0, kept

    after = invoke("verify", str(tmp / "checks.json"))
    assert after.exit_code == 0, after.output
    assert "expects m1 (now m2)" in after.output

    stale_check = invoke("verify", str(tmp / "stale-check.json"))
    assert stale_check.exit_code == 1 and "0/1 checks passed" in stale_check.output

    assert invoke("restore", "--run", str(pruned["run_id"])).exit_code == 0
    assert invoke("verify", str(tmp / "stale-check.json")).exit_code == 0
    assert len(json.loads(invoke("list", "--json").output)) == 7


def test_survivor_inherits_recall_history_and_restore_takes_it_back(hygiene_store):
    invoke, _ = hygiene_store
    invoke("prune", "--now", "2026-10-12")
    survivor = json.loads(invoke("show", "m2", "--json").output)
    assert (survivor["recall_count"], survivor["last_recalled_at"]) == (6, iso_to_ms("2026-10-10"))
    archived = json.loads(invoke("show", "m1", "--json").output)
    assert (archived["recall_count"], archived["last_recalled_at"]) == (6, iso_to_ms("2026-10-10"))
    invoke("restore", "--run", "1")
    restored = json.loads(invoke("show", "m2", "--json").output)
    assert (restored["recall_count"], restored["last_recalled_at"]) == (0, None)


def test_recall_made_after_a_merge_survives_its_restore(store):
    store.add_many(
        [
            {"id": "old", "text": "Fact!", "timestamp": 1, "recall_count": 4, "last_recalled_at": 50},
            {"id": "new", "text": "fact", "timestamp": 2, "recall_count": 1, "last_recalled_at": 10},
        ]
    )
    run = store.consolidate(10)
    assert (store.get("new")["recall_count"], store.get("new")["last_recalled_at"]) == (5, 50)
    store.recall("fact")
    store.restore(run.run_id)
    new = store.get("new")
    assert new["recall_count"] == 2 and new["last_recalled_at"] > 50  # its own 1, plus the recall since


def test_prune_dry_run_writes_nothing(hygiene_store):
    invoke, _ = hygiene_store
    out = invoke("prune", "--now", "2026-10-12", "--dry-run").output
    assert out.startswith("dry run, nothing written: 7 live; would keep 5 (1 pinned), archive 1 duplicates and 1 stale")
    assert json.loads(invoke("runs", "--json").output) == []


def test_prune_thresholds_are_honoured(hygiene_store):
    invoke, _ = hygiene_store
    nothing_stale = json.loads(invoke("prune", "--now", "2026-10-12", "--min-age-days", "2000", "--json").output)
    assert [a["reason"] for a in nothing_stale["archived"]] == ["duplicate"]
    # m5 (0.046, 11 days idle) and m6 (0.042, 10 days) now count; m3 (0.029, 7 days) is too fresh.
    more_stale = json.loads(invoke("prune", "--now", "2026-10-12", "--stale-threshold", "0.04", "--min-age-days", "10", "--json").output)
    assert [a["id"] for a in more_stale["archived"]] == ["m4", "m5", "m6"]


def test_failing_checks_roll_the_prune_back_and_name_the_check(hygiene_store):
    invoke, tmp = hygiene_store
    result = invoke("prune", "--now", "2026-10-12", "--checks", str(tmp / "stale-check.json"))
    assert result.exit_code == 1
    assert result.output.startswith("Error: 1 of 1 recall checks failed, so the prune was rolled back: 'vendor pricing seat' expects 'm4'")
    assert result.output.count("\n") == 1
    assert len(json.loads(invoke("list", "--json").output)) == 7
    assert json.loads(invoke("runs", "--json").output) == []


def test_passing_checks_let_the_prune_commit(hygiene_store):
    invoke, tmp = hygiene_store
    result = invoke("prune", "--now", "2026-10-12", "--checks", str(tmp / "checks.json"))
    assert result.exit_code == 0 and "check pass: 'alpha beta gamma' expects m1" in result.output
    assert len(json.loads(invoke("list", "--json").output)) == 5


def test_consolidate_with_checks_is_gated_too(store):
    store.add_many([{"id": "a", "text": "keep the launch codes safe", "importance": 1}, {"id": "b", "text": "other", "importance": 5}])
    with pytest.raises(RecallCheckError, match="'launch codes' expects 'a'"):
        store.consolidate(1, checks=[{"query": "launch codes", "expect_id": "a"}])
    assert store.count() == 2 and store.runs() == []
    report = store.consolidate(2, checks=[{"query": "launch codes", "expect_id": "a"}])
    assert [c.passed for c in report.checks] == [True]


def test_bad_checks_file_names_line_and_field(hygiene_store):
    invoke, tmp = hygiene_store
    bad = tmp / "bad.json"
    bad.write_text('[\n  {"query": "x", "expect_id": "m1"},\n  {"query": "y"}\n]\n')
    result = invoke("verify", str(bad))
    assert (result.exit_code, result.output) == (1, f"Error: {bad} line 3: field 'expect_id': is missing\n")


def test_backup_copies_everything_and_refuses_to_overwrite(hygiene_store, tmp_path):
    invoke, _ = hygiene_store
    invoke("prune", "--now", "2026-10-12")
    dest = tmp_path / "backup.db"
    result = json.loads(invoke("backup", str(dest), "--json").output)
    assert result == {"path": str(dest), "memories": 5, "memory_archive": 2, "consolidation_runs": 1}
    again = invoke("backup", str(dest))
    assert again.exit_code == 1 and "already exists; pass --force" in again.output
    assert invoke("backup", str(dest), "--force").exit_code == 0
    copy = CliRunner().invoke(cli, ["--db", str(dest), "list", "--json"])
    assert len(json.loads(copy.output)) == 5
    assert sqlite3.connect(dest).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def _keep_writing(path: str, stop_after: float) -> None:
    with MemoryStore(path) as store:
        deadline, i = time.monotonic() + stop_after, 0
        while time.monotonic() < deadline:
            store.add_many([{"id": f"w{i}-{j}", "text": f"written while backing up {i} {j}"} for j in range(20)])
            i += 1


def test_backup_is_a_consistent_snapshot_while_a_writer_keeps_writing(tmp_path):
    path = tmp_path / "busy.db"
    with MemoryStore(path) as store:
        store.add_many([{"id": f"seed{i}", "text": "x" * 200 + str(i)} for i in range(2000)])
        writer = multiprocessing.get_context("fork").Process(target=_keep_writing, args=(str(path), 1.5))
        writer.start()
        try:
            for n in range(5):
                result = store.backup(tmp_path / f"copy{n}.db")
                copy = sqlite3.connect(result["path"])
                assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
                live = copy.execute("SELECT count(*) FROM memories").fetchone()[0]
                # Writers add whole batches of 20 in one transaction: a snapshot never holds part of one.
                assert live == result["memories"] and (live - 2000) % 20 == 0
        finally:
            writer.join(30)
    assert writer.exitcode == 0
