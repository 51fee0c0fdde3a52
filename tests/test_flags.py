"""Contradiction flags worth a person's time (issue 41): one subject, one attribute, two values that
cannot both hold. The reading's rules without a model; then the contradict phase with the real model
(all-MiniLM-L6-v2 int8 from the offline directory) on an agent's store: event logs, a contact list and
unrelated attributes raise no flag, a changed manager does and says so; `--resolve-updates` is one
run that one restore undoes; and the held-out figures of scripts/semantic_eval.py."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from memstore.cli import cli
from .conftest import REPO
from memstore.semantic.statements import FLAG_AT, RESOLVE_AT, conflict, merges, read


def flagged(older: str, newer: str) -> str | None:
    found = conflict(older, newer)
    return found.reason if found is not None and found.confidence >= FLAG_AT else None


# -- the rule, without a model ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Looked up flights to Paris.", "Looked up flights to Seville."),
        ("Reviewed PR #512.", "Reviewed PR #513."),
        ("Asked about the weather in Lyon.", "Asked about the weather in Porto."),
        ("Bumped dependency 128 to latest.", "Bumped dependency 431 to latest."),
        ("Drafted a reply to Sam about the invoice.", "Drafted a reply to Tom about the invoice."),
        ("The user asked about trains to Vienna.", "The user asked about trains to Berlin."),
    ],
)
def test_events_never_contradict(older, newer):
    # A verb-first change log ("Bumped dependency 128 to latest") is read as what it changed: its
    # subject is the dependency, and two dependencies are two subjects.
    assert read(older).event or read(older).change_verb
    assert conflict(older, newer) is None


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Contact number 55 lives in Vienna.", "Contact number 46 lives in Berlin."),
        ("Customer #12 is based in Oslo.", "Customer #14 is based in Riga."),
        ("INC-2211 is a SEV2.", "INC-2212 is a SEV3."),
        ("Ticket ATL-301 is assigned to Sam.", "Ticket ATL-302 is assigned to Priya."),
        ("Host web-5 has 32 GB of RAM.", "Host db-6 has 16 GB of RAM."),
        ("PR #512 adds retries to the webhook client.", "PR #513 removes the legacy export."),
    ],
)
def test_an_identifier_names_the_subject(older, newer):
    assert conflict(older, newer) is None


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Dana's birthday is on 14 June.", "Dana's phone number ends in 4471."),
        ("Dana was born on 14 June.", "Dana's phone number ends in 4471."),
        ("Dana lives in Vienna.", "Dana works at Globex."),
        ("INC-1336 is a SEV2.", "INC-1336 was caused by a bad deploy."),
        ("Ticket MOB-117 is assigned to Aisha.", "Ticket MOB-117 is in progress."),
        ("The reporting API rate limit is 50 requests per minute.", "The reporting request timeout is 10 seconds."),
    ],
)
def test_two_attributes_of_one_subject_do_not_contradict(older, newer):
    assert conflict(older, newer) is None


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Dana likes hiking.", "Dana likes chess."),
        ("Sam is into baking.", "Sam is into pottery."),
        ("Maya speaks Spanish.", "Maya speaks Japanese."),
        ("The billing service uses Redis.", "The billing service uses Kafka."),
        ("The API rate limit is 100 requests per minute.", "The API rate limit is 1,000 requests per minute for enterprise customers."),
        ("Dana's manager is Priya Raman.", "Dana's manager is Priya Raman, who also leads the data team."),
    ],
)
def test_growing_lists_and_qualified_values_do_not_contradict(older, newer):
    assert flagged(older, newer) is None


@pytest.mark.parametrize(
    ("older", "newer", "reason"),
    [
        ("Dana's manager is Priya Raman.", "Dana's manager is Tom Becker since the reorg.", "Dana's manager: Priya Raman → Tom Becker"),
        ("The API rate limit is 100/min.", "The API rate limit is 500/min.", "The API rate limit: 100/min → 500/min"),
        ("Sam takes their coffee black, no sugar.", "Sam now takes two sugars in their coffee.", "Sam takes: their coffee black, no sugar → two sugars in their coffee"),
        ("Priya Raman is Dana's manager.", "Dana now reports to Tom Becker.", "Dana's manager: Priya Raman → Tom Becker"),
        ("Contact number 55 lives in Vienna.", "Contact number 55 moved to Berlin.", "Contact number 55 lives in: Vienna → Berlin"),
        ("The rate limit is 100 requests per minute.", "Raised the rate limit to 500 requests per minute.", "The rate limit: 100 requests per minute → 500 requests per minute"),
        ("Hana works at Soylent.", "Hana left Soylent and now works at Umbrella.", "Hana works at: Soylent → Umbrella"),
        ("Feature flag new-checkout is enabled in production.", "Feature flag new-checkout is disabled in production.", "Feature flag new-checkout: enabled in production → disabled in production"),
    ],
)
def test_a_changed_value_of_one_attribute_is_flagged_and_says_so(older, newer, reason):
    assert flagged(older, newer) == reason


@pytest.mark.parametrize(
    ("older", "newer", "reason"),
    [
        # A user's chat: the update told in a clause of its own, another verb, the subject "I".
        ("my highest score so far is 124 points", "I just got my highest score in Ticket to Ride - 132 points!", "I (highest score): 124 points → 132 points"),
        ("I've been waking up around 8:30 am on Saturdays", "I like to wake up at 7:30 am on Saturdays", "I (wake Saturdays): 8:30 am → 7:30 am"),
        ("I've been feeling really proud of myself for sticking to my daily tidying routine - it's already been 3 weeks!",
         "I've been sticking to my daily tidying routine for 4 weeks now", "I (sticking daily tidying routine): 3 weeks → 4 weeks"),
        ("1 tablespoon of coffee for every 6 ounces of water is the perfect ratio for me.", "1 tablespoon of coffee for every 5 ounces of water.",
         "tablespoon coffee water: 6 ounces → 5 ounces"),
        ("I walk 10,000 steps a day.", "I walk 12,000 steps a day now.", "I (walk day): 10,000 steps → 12,000 steps"),  # a verb after "I", not a name
        ("The nightly backup keeps 7 daily snapshots of the orders database.", "The nightly backup now keeps 14 daily snapshots of the orders database.",
         "The nightly backup keeps: 7 daily snapshots of the orders database → 14 daily snapshots of the orders database"),
    ],
)  # fmt: skip
def test_a_changed_count_of_one_thing_is_flagged_under_the_resolution_level(older, newer, reason):
    found = conflict(older, newer)
    assert found is not None and found.reason == reason and FLAG_AT <= found.confidence
    if found.signal.startswith("a count differs"):
        assert found.confidence < RESOLVE_AT  # read from the words around a number: never settled unasked


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("I've read 12 books this year.", "I've watched 40 films this year."),  # another thing counted
        ("Bumped dependency 343 to latest.", "Bumped dependency 346 to latest."),  # two subjects
        ("My order #1182 has 3 items in it.", "My order #1190 has 5 items in it."),
        ("I have 2 tickets for the concert.", "I have 4 tickets for the concert on Friday for my parents."),  # a scope on one side
        ("I walked 5 km with Ana on Monday.", "Sam walked 8 km on Tuesday."),  # another subject
    ],
)
def test_counts_of_other_things_or_subjects_do_not_contradict(older, newer):
    assert flagged(older, newer) is None


@pytest.mark.parametrize(
    ("older", "newer", "reason"),
    [
        ("The billing service is owned by the data team.", "The frontend team owns the billing service now.",
         "The billing service is owned by: the data team → the frontend team"),
        ("The payments team owns the checkout service.", "The checkout service is owned by the growth team.",
         "The checkout service is owned by: the payments team → the growth team"),
    ],
)  # fmt: skip
def test_passive_and_active_voice_state_one_attribute(older, newer, reason):
    assert flagged(older, newer) == reason
    assert flagged("The billing service is owned by the data team.", "The data team owns the billing service.") is None


def test_a_pair_that_states_another_value_is_never_merged():
    # The classifier alone calls these duplicates (cosine above DUPLICATE_AT, no number or word swapped).
    assert not merges("Dana's manager is Priya Raman.", "Dana's new manager is Tom Becker.", 0.9, 0.82, 0.65)
    assert not merges("I've been doing yoga twice a week", "I attend yoga classes, which is three times a week", 0.9, 0.82, 0.65)
    assert merges("Deploy v2.1 to staging at 3pm.", "The staging deploy of v2.1 is scheduled for 3pm.", 0.9, 0.82, 0.65)


def test_resolve_at_is_above_flag_at():
    assert 0 < FLAG_AT < RESOLVE_AT < 1


# -- the contradict phase on an agent's store, with the real model ---------------------------------

DAY = 86_400_000
AGENT = [
    # an event log: every line true
    "Looked up flights to Paris.", "Looked up flights to Seville.", "Looked up flights to Lisbon.",
    "Reviewed PR #512.", "Reviewed PR #513.", "Bumped dependency 128 to latest.", "Bumped dependency 431 to latest.",
    "Drafted a reply to Sam about the invoice.", "Drafted a reply to Tom about the invoice.",
    "Asked about the weather in Lyon.", "Asked about the weather in Porto.",
    # a contact list, each contact once
    "Contact number 55 lives in Vienna.", "Contact number 46 lives in Berlin.", "Contact number 12 lives in Oslo.",
    "Contact number 31 lives in Madrid.", "Contact number 77 lives in Prague.",
    # attributes of one person
    "Dana's birthday is on 14 June.", "Dana's phone number ends in 4471.", "Dana likes hiking.", "Dana likes chess.",
    "Dana's manager is Priya Raman.",
    # a qualified value
    "The API rate limit is 100 requests per minute.", "The API rate limit is 1,000 requests per minute for enterprise customers.",
    # the change
    "Dana's manager is Tom Becker since the reorg.",
]  # fmt: skip


@pytest.fixture
def agent(store, model_dir):
    store.add_many([{"id": f"m{i:02d}", "text": text, "timestamp": (i + 1) * DAY} for i, text in enumerate(AGENT)])
    store.enable_embeddings(model_dir)
    store.sync_embeddings()
    return store


def test_an_agents_store_raises_the_one_flag_that_is_a_change(agent):
    report = agent.maintain(["contradict"])
    flags = report.phases[0].flags
    assert [(f["a"], f["b"], f["reason"]) for f in flags] == [("m20", "m23", "Dana's manager: Priya Raman → Tom Becker")]
    assert flags[0]["confidence"] >= FLAG_AT and flags[0]["resolved"] is False
    listed = agent.flags()
    assert [(f["older_id"], f["newer_id"], f["reason"]) for f in listed] == [("m20", "m23", "Dana's manager: Priya Raman → Tom Becker")]
    assert listed[0]["confidence"] == flags[0]["confidence"] and listed[0]["signal"] == "the value differs"
    assert [m["id"] for m in agent.list(None, archived=True)] == []  # nothing is resolved unasked


def test_a_nightly_run_flags_only_pairs_with_a_new_memory(agent):
    agent.maintain(["contradict"])
    agent.add("Dana's manager is Ines Moreau.", id="m99", timestamp=(len(AGENT) + 5) * DAY)
    agent.sync_embeddings()
    again = agent.maintain(["contradict"]).phases[0]
    assert {(f["a"], f["b"]) for f in again.flags} == {("m20", "m99"), ("m23", "m99")}
    assert again.counts["compared"] == 1


def test_resolve_updates_is_one_run_that_restore_undoes(agent):
    report = agent.maintain(["contradict"], resolve_updates=True)
    phase = report.phases[0]
    assert [(f["a"], f["b"], f["resolved"]) for f in phase.flags] == [("m20", "m23", True)]
    assert [(a["id"], a["reason"], a["superseded_by"]) for a in phase.archived] == [("m20", "superseded", "m23")]
    assert [(f["status"], f["verdict"]) for f in agent.flags(status="all")] == [("resolved", "superseded")]
    assert "m20" not in {m["id"] for m in agent.list(None)}
    agent.restore(phase.run_id)
    assert "m20" in {m["id"] for m in agent.list(None)}
    assert agent.flags(status="all") == []  # the run raised it; the next contradict run may raise it again


def test_the_cli_maintain_and_flags_say_why(sqlite_store, model_dir, db_path):
    sqlite_store.add_many([{"id": f"m{i:02d}", "text": text, "timestamp": (i + 1) * DAY} for i, text in enumerate(AGENT)])
    sqlite_store.enable_embeddings(model_dir)
    run = lambda *args: CliRunner().invoke(cli, ["--db", str(db_path), *args], catch_exceptions=False)  # noqa: E731
    done = run("maintain", "--phases", "contradict")
    assert done.exit_code == 0
    assert any("Dana's manager: Priya Raman → Tom Becker (confidence " in line for line in done.output.splitlines())
    listed = json.loads(run("flags", "--json").output)
    rows = listed["flags"] if isinstance(listed, dict) else listed
    assert [row["reason"] for row in rows] == ["Dana's manager: Priya Raman → Tom Becker"]
    resolved = run("maintain", "--phases", "contradict", "--resolve-updates", "--dry-run", "--json")
    assert resolved.exit_code == 0


# -- the held-out figures (scripts/semantic_eval.py prints the same) ------------------------------


@pytest.fixture(scope="module")
def evaluation(model_dir):
    from scripts import semantic_eval

    return semantic_eval.evaluate(model_dir)


def test_the_labelled_streams_are_split_by_stream_before_tuning():
    from scripts import flag_eval

    halves = flag_eval.split()
    streams = flag_eval.load_jsonl(flag_eval.STREAMS_FILE)
    assert not set(halves["tune"]) & set(halves["test"])
    assert sorted(halves["tune"] + halves["test"]) == sorted(s["stream"] for s in streams)
    assert {s["kind"] for s in streams} == {"people", "projects", "operations", "contacts"}
    updates = flag_eval.load_jsonl(flag_eval.LONGMEMEVAL_FILE)
    assert {u["split"] for u in updates} == {"tune", "test"} and len(updates) >= 25


def test_flags_meet_the_targets_on_the_held_out_half(evaluation):
    flags = evaluation["flags"]["streams_figures"]
    assert flags["precision"] >= 0.80 and flags["recall"] >= 0.70
    assert flags["gold_merged"] == 0 and evaluation["flags"]["longmemeval"]["merged"] == 0
    # LongMemEval's updates miss their 0.70 (docs/semantic.md): 7 of 14 on the held-out part, kept.
    assert evaluation["flags"]["longmemeval"]["flagged"] >= 7
    pairs = evaluation["pair_flags"]
    assert pairs["merged"] == 0 and pairs["flagged"] >= pairs["flagged_before"] - 1
    # Updates an agent can trust: every flag the resolution would settle on the held-out half is a real change.
    assert evaluation["flags"]["at_resolve"]["precision"] == 1.0


def test_the_docs_show_the_flag_figures_the_script_prints(evaluation, capsys):
    """docs/semantic.md's block under "Contradiction flags" is what scripts/semantic_eval.py prints."""
    from scripts import semantic_eval

    semantic_eval.print_flags(evaluation)
    printed = capsys.readouterr().out.splitlines()
    page = (REPO / "docs" / "semantic.md").read_text(encoding="utf-8")
    block = page.split("### Contradiction flags", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert [line for line in block.splitlines() if line not in printed] == []


def test_the_streams_are_what_the_script_writes():
    from scripts import flag_streams

    written = [json.loads(line) for line in flag_streams.OUT.read_text(encoding="utf-8").splitlines()]
    assert written == json.loads(json.dumps(flag_streams.streams()))


@pytest.mark.slow
def test_the_flag_bench_runs_at_a_small_size(model_dir, tmp_path):
    """The bench's speed target is its own to judge at its documented size (--no-targets here)."""
    done = subprocess.run(
        [sys.executable, "-m", "scripts.bench.flags", "--size", "300", "--writes", "40", "--runs", "1", "--model-dir", str(model_dir),
         "--workdir", str(tmp_path), "--no-targets"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "flags / 1,000 writes" in done.stdout and "| statements  |" in done.stdout


def test_the_web_maintain_preview_says_why_it_would_flag(agent):
    """The web page's maintain preview names each flag it would raise by its reason (in process,
    the ASGI app behind its door, with the bearer token)."""
    from starlette.testclient import TestClient

    from memstore.web.pages import create_app

    with TestClient(create_app(agent, token="t0ken"), base_url="http://127.0.0.1") as client:
        page = client.get("/maintain", headers={"Authorization": "Bearer t0ken"})
    assert page.status_code == 200
    assert "Dana&#39;s manager: Priya Raman → Tom Becker" in page.text


def test_revision_0014_keeps_an_older_flags_reason_as_its_signal(tmp_path):
    """A flag raised before revision 0014 had the signal as its reason: the upgrade copies it into
    `signal` and leaves the confidence unknown; the downgrade drops both columns again."""
    from alembic import command
    from sqlalchemy import text

    from memstore.db import make_engine, write_transaction
    from memstore.migrate import alembic_config, upgrade

    engine = make_engine(tmp_path / "store.db")
    try:
        upgrade(engine)
        with write_transaction(engine) as conn:
            command.downgrade(alembic_config(conn), "0013")
        with write_transaction(engine) as conn:
            conn.execute(text("INSERT INTO consolidation_runs (id, kind, started_at, finished_at, live_before, kept, duplicates, evicted)"
                              " VALUES (1, 'contradict', 1, 1, 0, 0, 0, 0)"))
            conn.execute(text("INSERT INTO contradiction_flags (namespace, older_id, newer_id, similarity, reason, status, run_id, flagged_at)"
                              " VALUES ('default', 'a', 'b', 0.9, 'a number differs: 100 vs 500', 'open', 1, 1)"))  # fmt: skip
            command.upgrade(alembic_config(conn), "0014")
        with engine.connect() as conn:
            row = conn.execute(text("SELECT reason, signal, confidence FROM contradiction_flags")).one()
        assert tuple(row) == ("a number differs: 100 vs 500", "a number differs: 100 vs 500", None)
        with write_transaction(engine) as conn:
            command.downgrade(alembic_config(conn), "0013")
        with engine.connect() as conn:
            columns = {r[1] for r in conn.execute(text("PRAGMA table_info(contradiction_flags)"))}
        assert "signal" not in columns and "confidence" not in columns
    finally:
        engine.dispose()
