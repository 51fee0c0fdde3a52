"""Recall as of a moment: `list --as-of T` and `recall --as-of T` answer with what was live at T,
exactly as a replay of the store's history says.

The property test (both backends) drives random sequences of add (some with a lifetime), update, supersede,
forget, consolidate, expire and restore on a real store, and after every step records, at a moment
T between that step and the next, what the live set was then: `list` and (lexical) `recall` as
they answered at T. Afterwards `list(as_of=T)` and `recall(as_of=T)` must give exactly those
answers, at every recorded moment.
"""

from __future__ import annotations

import json
import math
import time

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore import MemoryStore, MemstoreError, ValidationError
from memstore.recall.lexical import bm25
from memstore.cli import cli
from memstore.records import now_ms

from .conftest import empty_store
from .strategies import examples

WORDS = ["door", "code", "dark", "mode", "rate", "limit", "lunch", "today"]
QUERIES = ["door code", "dark mode", "rate", "today lunch limit"]
HOUR_S = 3600.0

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
# A lifetime: none, one over before the next step looks (a millisecond), or one that outlasts the test.
lifetimes = st.sampled_from([None, None, 0.001, HOUR_S])
step = st.one_of(
    st.tuples(st.just("add"), texts, st.sampled_from([1, 3, 5]), lifetimes),
    st.tuples(st.just("update"), st.integers(0, 30), texts, st.sampled_from(["keep", "lasting", "short"])),
    st.tuples(st.just("supersede"), st.integers(0, 30), st.integers(0, 30)),
    st.tuples(st.just("forget"), st.integers(0, 30)),
    st.tuples(st.just("consolidate"), st.integers(0, 4)),
    st.tuples(st.just("expire")),
    st.tuples(st.just("restore"), st.integers(0, 30)),
)


def _apply(store: MemoryStore, action: str, args: tuple, added: int) -> None:
    live = [row["id"] for row in store.list()]
    pick = lambda n: live[n % len(live)]  # noqa: E731
    try:
        if action == "add":
            text, importance, ttl = args
            store.add(text, id=f"m{added}", importance=importance, ttl=ttl)
        elif action == "update" and live:
            changes = {"keep": {}, "lasting": {"no_expiry": True}, "short": {"ttl": 0.001}}[args[2]]
            store.update(pick(args[0]), text=args[1], **changes)
        elif action == "supersede" and live:
            store.supersede(pick(args[0]), by=pick(args[1]))
        elif action == "forget" and live:
            store.forget([pick(args[0])])
        elif action == "consolidate":
            store.consolidate(args[0])
        elif action == "expire":
            store.expire()
        elif action == "restore":
            applied = [run["id"] for run in store.runs() if run["status"] == "applied"]
            if applied:
                store.restore(applied[args[0] % len(applied)])
    except (MemstoreError, ValidationError):
        pass  # refused as a whole (a change to nothing, a restore another run relies on): nothing written


def _moment() -> int:
    """A moment strictly between the step just done and the next one (the clock is in ms)."""
    time.sleep(0.003)
    moment = now_ms()
    time.sleep(0.003)
    return moment


def _recalled(rows) -> list[tuple[str, float]]:
    return [(row["id"], row["score"]) for row in rows]


def _same_ranking(got, expected) -> bool:
    return [i for i, _ in got] == [i for i, _ in expected] and all(math.isclose(a, b, rel_tol=1e-9) for (_, a), (_, b) in zip(got, expected))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=14))
def test_list_and_recall_as_of_every_moment_match_the_replay(shared_store, steps):
    store = shared_store
    empty_store(store)
    recorded = []
    for added, (action, *args) in enumerate(steps):
        _apply(store, action, tuple(args), added)
        time.sleep(0.003)
        at = now_ms()
        listed = store.list()
        recalls = {query: _recalled(store.recall(query, 5, touch=False, mode="lexical")) for query in QUERIES}
        recorded.append((at, listed, recalls))
        time.sleep(0.003)  # the next step writes after `at`
    counts = {row["id"]: row["recall_count"] for row in store.list(None) + store.list(None, archived=True)}
    for at, listed, recalls in recorded:
        then = store.list(as_of=at)
        assert [row["id"] for row in then] == [row["id"] for row in listed]
        # As they were: the text, rank fields and lifetime of the version live then.
        fields = ("id", "text", "importance", "timestamp", "pinned", "expires_at")
        assert [tuple(r[f] for f in fields) for r in then] == [tuple(r[f] for f in fields) for r in listed]
        for query, expected in recalls.items():
            assert _same_ranking(_recalled(store.recall(query, 5, as_of=at, mode="lexical")), expected), (query, at)
    # As-of reads never count as recalls.
    assert {row["id"]: row["recall_count"] for row in store.list(None) + store.list(None, archived=True)} == counts


def test_the_time_an_archived_memory_spent_out_is_not_live_and_before_it_entered_nothing_is(store):
    before = _moment()
    store.add("Door code is 4512.", id="code")
    written = _moment()
    run = store.forget(["code"])
    out = _moment()
    store.restore(run.run_id)
    back = _moment()
    assert [r["id"] for r in store.list(as_of=before)] == []
    assert [r["id"] for r in store.list(as_of=written)] == ["code"]
    assert [r["id"] for r in store.list(as_of=out)] == []
    assert [r["id"] for r in store.list(as_of=back)] == ["code"]
    assert [r["id"] for r in store.recall("door code", as_of=out)] == []
    assert [r["id"] for r in store.recall("door code", as_of=back)] == ["code"]


def test_a_version_since_replaced_comes_back_and_expiry_counts_at_that_moment(store):
    store.add("The rate limit is 100 rpm.", id="v1")
    first = _moment()
    second_version = store.update("v1", text="The rate limit is 500 rpm.", ttl=0.2)["id"]
    # The moments are read off the stored lifetime, not the clock, so a slow machine cannot pass
    # the expiry before the "still live" moment is taken.
    expires_at = store.get(second_version)["expires_at"]
    while now_ms() <= expires_at:
        time.sleep(0.02)
    assert [r["text"] for r in store.list(as_of=first)] == ["The rate limit is 100 rpm."]
    assert [r["id"] for r in store.list(as_of=expires_at - 1)] == [second_version]
    assert store.list(as_of=expires_at) == [] and store.list() == []


def test_bm25_is_sqlite_fts5s_formula():
    documents = [["door", "code", "door"], ["code"], ["dark", "mode"], []]
    n, average = 4, 6 / 4
    idf = {word: max(math.log((n - held + 0.5) / (held + 0.5)), 1e-6) for word, held in (("door", 1), ("code", 2))}

    def term(word, f, length):
        return idf[word] * ((f * (1.2 + 1.0)) / (f + 1.2 * (1 - 0.75 + 0.75 * length / average)))

    assert bm25(["door", "code"], documents) == [term("door", 2, 3) + term("code", 1, 3), term("door", 0, 1) + term("code", 1, 1), 0.0, 0.0]


def test_a_query_without_words_finds_nothing_as_of_any_moment(store):
    store.add("Door code 4512.", id="code")
    at = _moment()
    for query in ("", "?!", "   "):
        assert store.recall(query, as_of=at) == [] == store.recall(query, touch=False)



def test_recall_as_of_now_matches_words_as_recall_does_accents_and_all(store):
    # SQLite's index folds accents (cafe finds café and café finds cafe); PostgreSQL's 'simple'
    # configuration does not. Either way, recall as of now answers what recall answers.
    store.add("We meet at the café on Monday.", id="cafe")
    store.add("The naïve plan failed.", id="naive")
    store.add("Résumé sent to Zoë.", id="resume")
    at = _moment()
    for query in ("cafe", "café", "naive", "naïve", "resume", "zoe", "zoë"):
        expected = [row["id"] for row in store.recall(query, touch=False)]
        assert [row["id"] for row in store.recall(query, as_of=at)] == expected, query
    if store.is_sqlite:
        assert [row["id"] for row in store.recall("cafe", as_of=at)] == ["cafe"]

def test_as_of_is_checked_and_cannot_be_combined_with_the_archive(store):
    with pytest.raises(ValidationError, match="as_of"):
        store.list(as_of="yesterday")
    with pytest.raises(ValidationError, match="cannot be combined with archived"):
        store.list(archived=True, as_of=now_ms())


def test_semantic_and_hybrid_recall_as_of_match_what_recall_answered_then(store, model_dir):
    store.add_many([
        {"id": "dog", "text": "Maya's dog Biscuit is a beagle."},
        {"id": "tea", "text": "The user drinks green tea every morning."},
        {"id": "code", "text": "The office door code is 4512."},
    ])  # fmt: skip
    store.enable_embeddings(model_dir)
    store.sync_embeddings()
    queries = ["What breed is the dog?", "morning drink", "door code"]
    moments = []

    def record():
        at = _moment()
        moments.append((at, {(q, mode): _recalled(store.recall(q, 2, touch=False, mode=mode)) for q in queries for mode in ("semantic", "hybrid")}))

    record()
    store.update("tea", text="The user drinks black coffee every morning.", new_id="coffee")
    store.sync_embeddings()
    record()
    store.forget(["dog"])
    store.add("The door code changed to 7781.", id="code2", ttl=HOUR_S)
    store.sync_embeddings()
    record()
    for at, answers in moments:
        for (query, mode), expected in answers.items():
            got = _recalled(store.recall(query, 2, as_of=at, mode=mode))
            assert [i for i, _ in got] == [i for i, _ in expected] and all(
                math.isclose(a, b, abs_tol=1e-6) for (_, a), (_, b) in zip(got, expected)
            ), (query, mode)
    assert {r["id"] for r in store.recall("morning", 3, as_of=moments[0][0], mode="hybrid")} >= {"tea"}


def test_the_cli_lists_and_recalls_as_of_a_moment(tmp_path):
    db = str(tmp_path / "cli.db")
    run = lambda *args: CliRunner().invoke(cli, ["--db", db, *args])  # noqa: E731
    assert run("add", "User prefers dark mode.", "--id", "m1").exit_code == 0
    at = _moment()
    assert run("update", "m1", "--text", "User prefers light mode.").exit_code == 0
    then = run("list", "--as-of", str(at), "--json")
    assert [r["text"] for r in json.loads(then.output)] == ["User prefers dark mode."]
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at // 1000)) + f".{at % 1000:03d}Z"
    assert json.loads(run("list", "--as-of", iso, "--json").output) == json.loads(then.output)
    recalled = json.loads(run("recall", "mode", "--as-of", iso, "--json").output)
    assert [r["id"] for r in recalled] == ["m1"] and recalled[0]["recall_count"] == 0
    bad = run("list", "--as-of", "last tuesday")
    assert bad.exit_code == 1 and bad.output.count("\n") == 1 and "--as-of" in bad.output


def test_the_shell_query_in_the_schema_doc_answers_as_list_as_of_does(sqlite_store, db_path):
    import re
    import shutil
    import subprocess
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "schema.md").read_text(encoding="utf-8")
    query = re.search(r"^-- what was live at a moment.*?;\n", doc, flags=re.S | re.M)[0]
    moment = "SELECT strftime('%s', '2026-11-24 18:00:00') * 1000"
    assert moment in query
    store = sqlite_store
    store.add("The API rate limit is 100 rpm.", id="rate")
    store.add("Door code 4512.", id="code", ttl=1)  # live at `at`, however slow the machine; expired by the end
    code_expires_at = store.get("code")["expires_at"]
    at = _moment()
    store.update("rate", text="The API rate limit is 500 rpm.", new_id="rate2")
    store.forget(["rate2"])
    while now_ms() <= code_expires_at:
        time.sleep(0.02)
    for when in (at, now_ms()):
        shell = subprocess.run([shutil.which("sqlite3"), str(db_path)], input=query.replace(moment, f"SELECT {when}"), capture_output=True, text=True, check=True)
        assert [line.split("|")[0] for line in shell.stdout.splitlines()] == [row["id"] for row in store.list(as_of=when)]
    assert [row["id"] for row in store.list(as_of=at)] == ["code", "rate"]


def test_recall_as_of_any_moment_a_timestamp_holds_answers_and_beyond_is_one_line(tmp_path, model_dir):
    """A moment after the calendar's year 9999 (up to the last 64-bit ms) or in its year 1 is a
    moment like any other: hybrid recall answers, whatever time the query names; beyond 64 bits or
    beyond the calendar in ISO-8601 it is one line naming the option."""
    db = str(tmp_path / "cli.db")
    run = lambda *args: CliRunner().invoke(cli, ["--db", db, *args])  # noqa: E731
    assert run("add", "We went hiking in March.", "--id", "hike", "--timestamp", "1678406400000").exit_code == 0
    assert run("embeddings", "enable", "--model", str(model_dir)).exit_code == 0
    assert run("embeddings", "sync").exit_code == 0
    for moment, found in [("9223372036854775807", ["hike"]), ("253402300800000", ["hike"]), ("0001-01-15", []), ("-9223372036854775808", [])]:
        answer = run("recall", "what did we do in March", "--mode", "hybrid", "--as-of", moment, "--json")
        assert (answer.exit_code, [row["id"] for row in json.loads(answer.output)]) == (0, found), moment
    for moment in ("9223372036854775808", "10000-01-01", "-9223372036854775809"):
        refused = run("recall", "hiking", "--as-of", moment)
        assert refused.exit_code == 1 and refused.output.startswith("Error: --as-of: ") and refused.output.count("\n") == 1, moment
