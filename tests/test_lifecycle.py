"""Forget, update, supersede and history: each one run, each undone by restore, on both backends."""

from __future__ import annotations

import json
from .sqlitelib import sqlite3

import pytest
from click.testing import CliRunner

from memstore import IdConflictError, MemoryStore, MemstoreError, NotFoundError, ValidationError
from memstore.cli import cli

FACTS = [
    {"id": "rate", "text": "The API rate limit is 100 requests per minute.", "timestamp": 10, "importance": 4},
    {"id": "mode", "text": "User prefers dark mode.", "timestamp": 20, "importance": 3, "recall_count": 2, "last_recalled_at": 25},
    {"id": "city", "text": "User lives in Lisbon.", "timestamp": 30, "importance": 2, "pinned": True},
    {"id": "other", "text": "Deploys happen on Fridays.", "timestamp": 40, "namespace": "work"},
]


@pytest.fixture
def facts(store):
    store.add_many(FACTS)
    return store


def live_ids(store, namespace="default"):
    return sorted(m["id"] for m in store.list(namespace))


def archived(store):
    return sorted((m["id"], m["reason"], m["superseded_by"], m["run_id"]) for m in store.list(None, archived=True))


# -- forget -------------------------------------------------------------------------------------


def test_forget_archives_as_forgotten_and_recall_never_returns_it(facts):
    assert [m["id"] for m in facts.recall("dark mode", touch=False)] == ["mode"]
    report = facts.forget(["mode", "city"], reason="user asked")
    assert report.kind == "forget" and [e.id for e in report.archived] == ["city", "mode"]
    assert facts.recall("dark mode", touch=False) == []
    assert live_ids(facts) == ["rate"]
    assert archived(facts) == [("city", "forgotten", None, report.run_id), ("mode", "forgotten", None, report.run_id)]
    run = facts.runs()[0]
    assert (run["kind"], run["params"], run["live_before"], run["kept"]) == ("forget", {"reason": "user asked"}, 2, 0)


def test_restore_brings_forgotten_memories_back_whole(facts):
    before = {m["id"]: m for m in facts.list()}
    report = facts.forget(["mode"])
    assert facts.restore(report.run_id).restored_ids == ["mode"]
    back = facts.get("mode")
    assert {k: v for k, v in back.items() if k != "seq"} == {k: v for k, v in before["mode"].items() if k != "seq"}
    assert [m["id"] for m in facts.recall("dark mode", touch=False)] == ["mode"]


def test_forget_writes_nothing_unless_every_id_is_live(facts):
    with pytest.raises(NotFoundError, match="no memory with id 'nope'"):
        facts.forget(["mode", "nope"])
    facts.forget(["rate"])
    with pytest.raises(MemstoreError, match=r"memory 'rate' is archived \(forgotten in run 1\)"):
        facts.forget(["mode", "rate"])
    assert live_ids(facts) == ["city", "mode"] and len(facts.runs()) == 1


def test_a_namespace_scoped_forget_cannot_see_another_namespace(facts):
    with pytest.raises(NotFoundError) as caught:
        facts.forget(["other"], namespace="default")
    with pytest.raises(NotFoundError) as unknown:
        facts.forget(["missing"], namespace="default")
    assert str(caught.value) == "no memory with id 'other' in namespace 'default'"
    assert str(unknown.value) == "no memory with id 'missing' in namespace 'default'"
    assert live_ids(facts, "work") == ["other"]


# -- update -------------------------------------------------------------------------------------


def test_update_writes_a_new_version_and_archives_the_old_as_superseded(facts):
    old = facts.get("mode")
    new = facts.update("mode", text="User prefers light mode.", timestamp=50)
    assert new["supersedes"] == "mode" and new["id"] != "mode"
    assert (new["text"], new["timestamp"], new["norm_key"]) == ("User prefers light mode.", 50, "user prefers light mode")
    # Carried: unchanged fields, created_at and the recall history.
    for name in ("namespace", "importance", "pinned", "fact_key", "meta", "created_at", "recall_count", "last_recalled_at"):
        assert new[name] == old[name], name
    assert new["updated_at"] >= old["updated_at"]
    assert facts.get(new["id"])["text"] == "User prefers light mode."
    assert archived(facts) == [("mode", "superseded", new["id"], new["run_id"])]
    run = facts.runs()[0]
    assert (run["kind"], run["params"]) == ("update", {"by": new["id"], "changes": {"text": "User prefers light mode.", "timestamp": 50}})


def test_an_update_without_a_timestamp_is_written_now(facts):
    new = facts.update("rate", importance=5)
    assert new["timestamp"] == new["updated_at"] > 10 and new["importance"] == 5


def test_restore_of_an_update_puts_the_old_version_back_with_recalls_made_since(facts):
    new = facts.update("mode", text="User prefers light mode.", new_id="mode2")
    facts.recall("light mode")  # recall_count 2 -> 3 on the new version
    facts.restore(new["run_id"])
    back = facts.get("mode")
    assert "archived_at" not in back and back["text"] == "User prefers dark mode."
    assert back["recall_count"] == 3
    # The version the update wrote was live for a while: it is kept, archived as superseded by the
    # version its restore brought back (what was live then stays answerable, see `list --as-of`).
    gone = facts.get("mode2")
    assert (gone["reason"], gone["superseded_by"], gone["run_id"]) == ("superseded", "mode", new["run_id"])
    assert archived(facts) == [("mode2", "superseded", "mode", new["run_id"])]


def test_restore_of_an_update_waits_for_the_runs_that_moved_its_new_version(facts):
    new = facts.update("mode", text="User prefers light mode.", new_id="mode2")
    forgot = facts.forget(["mode2"])
    with pytest.raises(MemstoreError, match=rf"run {new['run_id']} wrote 'mode2', which is no longer live \(forgotten in run {forgot.run_id}\); restore run {forgot.run_id} first"):
        facts.restore(new["run_id"])
    facts.restore(forgot.run_id)
    facts.restore(new["run_id"])
    assert live_ids(facts) == ["city", "mode", "rate"]



def test_runs_say_what_each_did_and_one_run_shows_whole(facts):
    facts.add("user prefers dark mode", id="mode-copy", timestamp=50)
    forgot = facts.forget(["rate", "other"])
    updated = facts.update("city", text="User lives in Porto.", new_id="city2")
    job = facts.consolidate(0)
    did = {run["id"]: (run["kind"], run["did"]) for run in facts.runs()}
    assert did == {
        forgot.run_id: ("forget", {"forgotten": 2}), updated["run_id"]: ("update", {"updated": 1}),
        job.run_id: ("consolidate", {"duplicates": 1, "evicted": 1}),  # city2 is pinned
    }  # fmt: skip
    whole = facts.run(job.run_id)
    assert (whole["id"], whole["kind"], whole["status"], whole["did"]) == (job.run_id, "consolidate", "applied", {"duplicates": 1, "evicted": 1})
    assert [(a["id"], a["reason"], a["superseded_by"]) for a in whole["archived"]] == [("mode", "duplicate", "mode-copy"), ("mode-copy", "evicted", None)]
    assert (whole["restored"], whole["flags_raised"], whole["flags_settled"]) == ([], [], [])
    with pytest.raises(NotFoundError, match="no run 99"):
        facts.run(99)
    facts.restore(forgot.run_id)
    undone = facts.run(forgot.run_id)
    assert (undone["status"], undone["archived"], undone["restored"], undone["did"]) == ("restored", [], ["other", "rate"], {"forgotten": 2})


def test_a_dry_run_restore_reports_exactly_what_the_restore_does_and_writes_nothing(facts):
    updated = facts.update("rate", text="The API rate limit is 500 requests per minute.", new_id="rate2")
    before = (facts.list(None), facts.list(None, archived=True), facts.runs())
    preview = facts.restore(updated["run_id"], dry_run=True)
    assert (facts.list(None), facts.list(None, archived=True), facts.runs()) == before
    back = [{"id": "rate", "namespace": "default", "text": facts.get("rate")["text"], "timestamp": facts.get("rate")["timestamp"], "state": "live"}]
    assert preview.to_dict() == {"run_id": updated["run_id"], "kind": "update", "restored_ids": ["rate"], "reopened_flags": [],
                                 "removed_flags": [], "retired": "rate2", "dry_run": True, "memories": back, "flags": [],
                                 "archived_again": [], "phases": []}  # fmt: skip
    facts.forget(["rate2"])  # a later run now leans on the version the update wrote
    with pytest.raises(MemstoreError, match="no longer live"):
        facts.restore(updated["run_id"], dry_run=True)  # the error the restore would stop with
    done = facts.restore(facts.runs()[0]["id"])
    assert not done.dry_run and done.restored_ids == ["rate2"]
    assert facts.restore(updated["run_id"]).to_dict() == {**preview.to_dict(), "dry_run": False}


def test_runs_restored_newest_first_all_come_undone(store):
    # Two updates of one memory, and an update followed by a consolidation that folds a copy into
    # the new version: restored newest first, each run comes undone (what the newer run left
    # behind once restored leans on nothing).
    store.add("Fact one.", id="a", timestamp=1)
    first = store.update("a", text="Fact two.", new_id="b")["run_id"]
    second = store.update("b", text="Fact three.", new_id="c")["run_id"]
    store.restore(second)
    store.restore(first)
    assert live_ids(store) == ["a"]
    store.add("Fact four.", id="d", timestamp=1)
    update = store.update("d", text="Fact five.", new_id="e")["run_id"]
    store.add("fact five", id="copy", timestamp=2)
    merged = store.consolidate(100, "default").run_id
    assert ("copy", "duplicate", "e", merged) in archived(store)
    store.restore(merged)
    store.restore(update)
    assert live_ids(store) == ["a", "copy", "d"]


def test_undoing_a_merge_takes_its_recalls_from_the_version_that_carries_them(store):
    # a's two recalls were merged onto b; an update then gave b's counts to c. Undoing the merge
    # takes them from c, and undoing the update then gives b its own two back.
    store.add_many([{"id": "a", "text": "Same fact.", "timestamp": 1}, {"id": "b", "text": "same fact", "timestamp": 2}])
    for _ in range(2):
        store.recall("same fact", k=5)
    merged = store.consolidate(100, "default").run_id
    assert store.get("b")["recall_count"] == 4
    update = store.update("b", text="The same fact, updated.", new_id="c")["run_id"]
    store.restore(merged)
    assert (store.get("a")["recall_count"], store.get("c")["recall_count"]) == (2, 2)
    store.restore(update)
    assert (store.get("a")["recall_count"], store.get("b")["recall_count"]) == (2, 2)

def test_updating_an_archived_memory_names_its_live_successor(facts):
    facts.update("mode", text="User prefers light mode.", new_id="mode2")
    facts.update("mode2", text="User prefers high-contrast mode.", new_id="mode3")
    with pytest.raises(MemstoreError, match="its live successor is 'mode3': update that one instead"):
        facts.update("mode", importance=5)


def test_update_refuses_no_change_an_unknown_field_and_a_taken_id(facts):
    with pytest.raises(ValidationError, match="nothing to change"):
        facts.update("mode")
    with pytest.raises(ValidationError, match="changes nothing"):
        facts.update("mode", importance=3)
    with pytest.raises(ValidationError, match="importance"):
        facts.update("mode", importance=9)
    with pytest.raises(IdConflictError, match="'rate' already names a memory"):
        facts.update("mode", text="x", new_id="rate")
    assert facts.runs() == [] and archived(facts) == []


# -- supersede ----------------------------------------------------------------------------------


def test_supersede_archives_old_as_superseded_by_new_and_restore_undoes_it(facts):
    facts.add("The API rate limit is 500 requests per minute.", id="rate2", timestamp=60)
    report = facts.supersede("rate", by="rate2")
    assert [(e.id, e.reason, e.superseded_by) for e in report.archived] == [("rate", "superseded", "rate2")]
    assert "rate" not in live_ids(facts)
    facts.restore(report.run_id)
    assert {"rate", "rate2"} <= set(live_ids(facts))


def test_supersede_needs_two_live_memories_of_one_namespace(facts):
    with pytest.raises(ValidationError, match="cannot supersede itself"):
        facts.supersede("rate", by="rate")
    with pytest.raises(ValidationError, match="'other' is in namespace 'work'"):
        facts.supersede("rate", by="other")
    with pytest.raises(NotFoundError):
        facts.supersede("rate", by="nope")
    assert facts.runs() == []


def test_supersede_by_an_expired_memory_is_refused(facts):
    """Superseding by a memory past its lifetime would archive the old fact for one recall never
    returns: both would be gone."""
    facts.add("The API rate limit is 500 requests per minute.", id="rate2", expires_at=1)
    with pytest.raises(ValidationError, match="'rate2' has expired"):
        facts.supersede("rate", by="rate2")
    assert facts.runs() == [] and "rate" in live_ids(facts)


def test_verify_follows_updates_and_supersedes_but_not_forgets(facts):
    facts.update("mode", text="User prefers dark mode on every screen.", new_id="mode2")
    facts.add("User lives in Porto.", id="city2")
    facts.supersede("city", by="city2")
    facts.forget(["rate"])
    results = {r.expect_id: r for r in facts.verify([
        {"query": "dark mode screen", "expect_id": "mode"},
        {"query": "lives Porto", "expect_id": "city"},
        {"query": "rate limit", "expect_id": "rate"},
    ])}  # fmt: skip
    assert (results["mode"].resolved_id, results["mode"].passed) == ("mode2", True)
    assert (results["city"].resolved_id, results["city"].passed) == ("city2", True)
    assert (results["rate"].resolved_id, results["rate"].passed) == (None, False)


# -- history ------------------------------------------------------------------------------------


def test_history_lists_every_version_oldest_first_from_any_of_them(facts):
    facts.add("user prefers dark mode", id="mode-copy", timestamp=5)  # an older copy: a duplicate
    facts.consolidate(10)
    facts.update("mode", text="User prefers light mode.", new_id="mode2", timestamp=60)
    facts.update("mode2", text="User prefers light mode, large font.", new_id="mode3", timestamp=70)
    for start in ("mode-copy", "mode", "mode2", "mode3"):
        versions = facts.history(start)
        assert [(v["id"], v["state"], v["reason"], v["superseded_by"]) for v in versions] == [
            ("mode-copy", "archived", "duplicate", "mode"),
            ("mode", "archived", "superseded", "mode2"),
            ("mode2", "archived", "superseded", "mode3"),
            ("mode3", "live", None, None),
        ], start
    assert [v["run_id"] for v in facts.history("mode3")] == [1, 2, 3, None]
    assert [v["id"] for v in facts.history("rate")] == ["rate"]


def test_history_is_scoped_to_a_namespace_when_asked(facts):
    with pytest.raises(NotFoundError, match="in namespace 'default'"):
        facts.history("other", namespace="default")
    assert [v["id"] for v in facts.history("other", namespace="work")] == ["other"]


# -- remember (the agents' write) ----------------------------------------------------------------


def test_remember_says_created_unchanged_and_which_live_memories_share_the_key(facts):
    first = facts.remember("user prefers DARK mode!", id="again")
    assert first == {"id": "again", "norm_key": "user prefers dark mode", "status": "created", "same_key_ids": ["mode"]}
    assert facts.remember("user prefers DARK mode!", id="again")["status"] == "unchanged"
    with pytest.raises(IdConflictError):
        facts.remember("something else", id="again")
    assert facts.remember("Deploys happen on Fridays.", namespace="default")["same_key_ids"] == []  # "other" is in work


# -- the CLI ------------------------------------------------------------------------------------


@pytest.fixture
def cli_store(tmp_path):
    path = tmp_path / "cli.db"
    with MemoryStore(path) as store:
        store.add_many(FACTS)

    def run(*args):
        return CliRunner().invoke(cli, ["--db", str(path), *args], catch_exceptions=False)

    return run, path


def test_cli_forget_update_supersede_history_and_restore(cli_store):
    run, path = cli_store
    forgot = run("forget", "city", "--reason", "moved")
    assert forgot.exit_code == 0
    city = next(fact["text"] for fact in FACTS if fact["id"] == "city")
    assert forgot.output == f"run 1: forgot city\n  archived: city  {city}\nundo with: memstore --db {path} restore --run 1\n"
    updated = run("update", "rate", "--text", "The API rate limit is 500 requests per minute.", "--importance", "5")
    assert updated.exit_code == 0
    printed = dict((line.split(None, 1) + [""])[:2] for line in updated.output.splitlines() if not line.startswith("undo"))
    new_id = printed["id"]  # the new row is printed, field by field
    assert len(new_id) == 32 and printed["text"] == "The API rate limit is 500 requests per minute."
    assert (printed["importance"], printed["supersedes"], printed["run_id"]) == ("5", "rate", "2")
    assert updated.output.endswith(f"undo with: memstore --db {path} restore --run 2\n")
    shown = json.loads(run("show", new_id, "--json").output)
    assert (shown["text"], shown["importance"]) == ("The API rate limit is 500 requests per minute.", 5)
    assert run("update", "mode", "--unpinned").exit_code == 1  # already unpinned: changes nothing
    pinned = json.loads(run("update", "mode", "--pinned", "--meta", '{"source": "chat"}', "--json").output)
    assert pinned["pinned"] is True and pinned["meta"] == {"source": "chat"} and pinned["supersedes"] == "mode"
    superseded = run("supersede", pinned["id"], "--by", new_id)
    assert superseded.exit_code == 0 and superseded.output.startswith(f"run 4: {pinned['id']} superseded by {new_id}\n")
    history = run("history", "rate").output.splitlines()
    assert history[0].split() == ["id", "state", "reason", "superseded_by", "run", "written", "(UTC)", "archived", "(UTC)", "text"]
    # The supersede joined the two facts' versions: mode -> its update -> (superseded by) rate's update.
    assert [line.split()[:2] for line in history[2:]] == [
        ["mode", "archived"], ["rate", "archived"], [pinned["id"], "archived"], [new_id, "live"],
    ]
    runs = run("runs").output
    assert [line.split()[1] for line in runs.splitlines()[2:]] == ["supersede", "update", "update", "forget"]
    for run_id in ("4", "3", "2", "1"):
        assert run("restore", "--run", run_id).exit_code == 0
    assert json.loads(run("list", "--json").output) == json.loads(run("list", "--json").output)
    assert sorted(m["id"] for m in json.loads(run("list", "--json").output)) == ["city", "mode", "rate"]


def test_cli_errors_are_one_line_and_exit_1(cli_store):
    run, _ = cli_store
    for args, message in [
        (("forget", "nope"), "Error: no memory with id 'nope'\n"),
        (("update", "rate"), "Error: update rate: nothing to change: give one of text, importance, pinned, meta, fact_key, timestamp, expires_at\n"),
        (("supersede", "rate", "--by", "rate"), "Error: supersede rate: field 'by': a memory cannot supersede itself\n"),
        (("history", "nope"), "Error: no memory with id 'nope'\n"),
    ]:
        result = run(*args)
        assert (result.exit_code, result.output) == (1, message), args
    bad_meta = run("update", "rate", "--meta", "[1")  # a usage error, as for add
    assert bad_meta.exit_code == 2 and bad_meta.output.endswith("Error: Invalid value for --meta: not valid JSON: Expecting ',' delimiter\n")


def test_a_shell_user_sees_why_a_memory_left(cli_store):
    run, path = cli_store
    run("forget", "city", "--reason", "moved")
    with sqlite3.connect(path) as shell:
        rows = shell.execute(
            "SELECT a.id, a.reason, r.kind, json_extract(r.params, '$.reason') FROM memory_archive a "
            "JOIN consolidation_runs r ON r.id = a.run_id ORDER BY a.id"
        ).fetchall()
    assert rows == [("city", "forgotten", "forget", "moved")]
