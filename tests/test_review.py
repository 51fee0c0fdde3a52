"""Review at real size (issue 42), the library's side: flags a person pages, filters, sorts and
dismisses in bulk as one run; one archived memory back alone; the archive searched; one undo per
`maintain`; runs and undos that name texts, not only ids. Each test runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

import pytest

from memstore import MemoryStore, MemstoreError, NotFoundError, ValidationError
from memstore.db import write_transaction
from memstore.runs import insert_run
from memstore.schema import contradiction_flags

HOUR = 3_600_000
FLAGGED_AT = 1_764_800_000_000


def limits(store: MemoryStore) -> None:
    """Nine memories of 'assistant' (a1..a9) and three of 'work' (w1..w3), each saying a different
    rate limit, and a contradict run that flagged each neighbouring pair: eight in assistant, two in
    work, raised an hour apart, odd ones for a number, even ones for a negation."""
    for n in range(1, 10):
        store.add(f"The API limit is {n}00 rpm.", id=f"a{n}", namespace="assistant", timestamp=1_000 + n)
    for n in range(1, 4):
        store.add(f"The build takes {n} minutes.", id=f"w{n}", namespace="work", timestamp=1_000 + n)
    pairs = [("assistant", f"a{n}", f"a{n + 1}") for n in range(1, 9)] + [("work", "w1", "w2"), ("work", "w2", "w3")]
    with write_transaction(store.engine) as conn:
        run_id = insert_run(conn, "contradict", None, FLAGGED_AT, 0)
        for number, (namespace, older, newer) in enumerate(pairs):
            reason = "a number differs" if number % 2 == 0 else "a negation on one side only"
            conn.execute(contradiction_flags.insert().values(
                namespace=namespace, older_id=older, newer_id=newer, similarity=0.80 + number / 100, reason=reason,
                status="open", run_id=run_id, flagged_at=FLAGGED_AT + number * HOUR,
            ))  # fmt: skip


@pytest.fixture
def flagged(store):
    limits(store)
    return store


def pair(flag: dict) -> tuple[str, str]:
    return flag["older_id"], flag["newer_id"]


# -- flags a person works through ---------------------------------------------------------------


def test_a_flag_page_is_filtered_sorted_and_paged_in_a_total_order(flagged):
    newest = flagged.flag_page("assistant", limit=3)
    assert [pair(f) for f in newest["flags"]] == [("a8", "a9"), ("a7", "a8"), ("a6", "a7")]
    assert (newest["total"], newest["next_offset"], newest["elsewhere"]) == (8, 3, {"work": 2})
    paged = [pair(f) for offset in (0, 3, 6) for f in flagged.flag_page("assistant", limit=3, offset=offset)["flags"]]
    assert paged == [(f"a{n}", f"a{n + 1}") for n in range(8, 0, -1)]  # every flag once, no gap, no repeat
    assert flagged.flag_page("assistant", limit=3, offset=6)["next_offset"] is None
    oldest = flagged.flag_page(None, sort="oldest", limit=2)["flags"]
    assert [pair(f) for f in oldest] == [("a1", "a2"), ("a2", "a3")]
    strongest = flagged.flag_page(None, sort="strongest", limit=1)["flags"]
    assert pair(strongest[0]) == ("w2", "w3")  # the highest cosine, of every namespace
    by_reason = flagged.flag_page("assistant", reason="NUMBER")
    assert by_reason["total"] == 4 and all("number" in f["reason"] for f in by_reason["flags"])
    recent = flagged.flag_page("assistant", flagged_after=FLAGGED_AT + 6 * HOUR)
    assert [pair(f) for f in recent["flags"]] == [("a8", "a9"), ("a7", "a8")]
    old = flagged.flag_page("assistant", flagged_before=FLAGGED_AT + 2 * HOUR)
    assert [pair(f) for f in old["flags"]] == [("a2", "a3"), ("a1", "a2")]


def test_each_flag_carries_both_texts_their_dates_and_what_differs(flagged):
    flag = flagged.flag_page("work", sort="oldest", limit=1)["flags"][0]
    assert (flag["older_text"], flag["newer_text"]) == ("The build takes 1 minutes.", "The build takes 2 minutes.")
    assert (flag["older_timestamp"], flag["newer_timestamp"], flag["older_state"]) == (1_001, 1_002, "live")
    assert flag["differs"] == {"older": ["1"], "newer": ["2"]}
    assert flag["flagged_at"] == FLAGGED_AT + 8 * HOUR and flag["reason"] == "a number differs"


def test_a_flag_page_refuses_what_it_cannot_order_or_count(flagged):
    for bad in ({"sort": "loudest"}, {"limit": 0}, {"offset": -1}, {"status": "closed"}):
        with pytest.raises(ValidationError):
            flagged.flag_page(None, **bad)


def test_dismissing_a_filters_flags_is_one_run_that_one_restore_undoes(flagged):
    picked = flagged.flag_page("assistant", reason="negation")
    done = flagged.dismiss_flags(namespace="assistant", reason="negation", expect=picked["total"])
    assert sorted(done["dismissed"]) == sorted(f["id"] for f in picked["flags"]) and done["namespace"] == "assistant"
    assert flagged.runs()[0]["did"] == {"dismissed": 4} and flagged.runs()[0]["kind"] == "dismiss"
    assert flagged.flag_page("assistant")["total"] == 4 and flagged.flag_page("assistant", status="dismissed")["total"] == 4
    undone = flagged.restore(done["run_id"])
    assert sorted(undone.reopened_flags) == sorted(done["dismissed"]) and {f["change"] for f in undone.flags} == {"reopened"}
    assert flagged.flag_page("assistant")["total"] == 8


def test_a_bulk_dismissal_writes_nothing_when_the_count_seen_is_not_the_count_now(flagged):
    with pytest.raises(MemstoreError, match="4 open flags match now, not 3"):
        flagged.dismiss_flags(namespace="assistant", reason="negation", expect=3)
    with pytest.raises(ValidationError, match="expect"):
        flagged.dismiss_flags(namespace="assistant", reason="negation")
    assert flagged.flag_page(None)["total"] == 10 and [run["kind"] for run in flagged.runs()] == ["contradict"]


def test_dismissing_flags_by_id_across_namespaces_is_one_run(flagged):
    first_work, first_assistant = flagged.flag_page("work", limit=1)["flags"][0], flagged.flag_page("assistant", limit=1)["flags"][0]
    done = flagged.dismiss_flags([first_work["id"], first_assistant["id"]])
    assert done["namespace"] is None and len(done["flags"]) == 2 and all(f["older_text"] for f in done["flags"])
    with pytest.raises(MemstoreError, match="already dismissed"):
        flagged.dismiss_flags([first_work["id"]])
    with pytest.raises(NotFoundError):
        flagged.dismiss_flags([999])
    flagged.restore(done["run_id"])
    assert flagged.flag_page(None)["total"] == 10


# -- one memory back, and the archive searched ---------------------------------------------------


def test_one_memory_comes_back_alone_as_a_run_of_its_own_that_restore_sends_back(flagged):
    evicted = flagged.consolidate(2, "assistant")
    assert "a1" in [entry.id for entry in evicted.archived] and flagged.flag_page("assistant")["total"] == 1  # a8 vs a9, kept
    back = flagged.restore_memory("a1")
    assert back.kind == "restore" and back.restored_ids == ["a1"] and back.memories[0]["text"] == "The API limit is 100 rpm."
    assert flagged.get("a1").get("archived_at") is None and flagged.count("assistant") == 3
    # Its flag with a2 stays settled: a2 is still out, evicted by the same run.
    assert [(f["id"], f["change"], f["verdict"]) for f in back.flags] == [(1, "settled", "evicted")]
    assert flagged.runs()[0]["did"] == {"restored": 1} and flagged.run(evicted.run_id)["restored"] == ["a1"]
    undone = flagged.restore(back.run_id)
    assert undone.archived_again[0]["id"] == "a1" and flagged.get("a1")["reason"] == "evicted"
    assert flagged.get("a1")["run_id"] == evicted.run_id  # restoring the run brings it back with the rest
    whole = flagged.restore(evicted.run_id)
    assert "a1" in whole.restored_ids and flagged.count("assistant") == 9 and flagged.flag_page("assistant")["total"] == 8


def test_a_memory_restored_alone_reopens_the_flag_its_leaving_closed(flagged):
    forgot = flagged.forget(["a5"])
    assert flagged.flag_page("assistant")["total"] == 6
    back = flagged.restore_memory("a5")
    assert sorted(f["change"] for f in back.flags) == ["reopened", "reopened"]
    assert flagged.flag_page("assistant")["total"] == 8
    flagged.restore(back.run_id)
    assert flagged.flag_page("assistant")["total"] == 6 and flagged.get("a5")["run_id"] == forgot.run_id


def test_restoring_one_memory_refuses_a_live_one_an_unknown_one_and_an_updated_one(flagged):
    with pytest.raises(MemstoreError, match="is live"):
        flagged.restore_memory("a1")
    with pytest.raises(NotFoundError, match="no archived memory"):
        flagged.restore_memory("nope")
    updated = flagged.update("w1", text="The build takes 10 minutes.", new_id="w1b")
    with pytest.raises(MemstoreError, match=f"restore --run {updated['run_id']}"):
        flagged.restore_memory("w1")
    flagged.forget(["w2"])
    with pytest.raises(NotFoundError):
        flagged.restore_memory("w2", namespace="assistant")
    preview = flagged.restore_memory("w2", dry_run=True)
    assert preview.dry_run and preview.restored_ids == ["w2"] and flagged.get("w2")["reason"] == "forgotten"


def test_the_archive_is_searched_by_its_words_best_first_ties_by_id(flagged):
    flagged.add("Dana is learning Japanese.", id="dana", namespace="assistant", importance=1)
    flagged.add("Dana likes tea.", id="tea", namespace="assistant", importance=1)
    flagged.consolidate(2, "assistant")
    found = flagged.search_archive("japanese", namespace="assistant")
    assert [row["id"] for row in found] == ["dana"] and found[0]["reason"] == "evicted" and found[0]["score"] > 0
    both = flagged.search_archive("dana", namespace="assistant")
    assert [row["id"] for row in both] == ["tea", "dana"]  # the shorter text ranks first, as BM25 ranks it
    assert [row["id"] for row in flagged.search_archive("limit", k=3, namespace=None)] == ["a1", "a2", "a3"]  # equal scores: by id
    assert flagged.search_archive("japanese", namespace="work") == [] and flagged.search_archive("", namespace=None) == []


# -- one undo per maintain -------------------------------------------------------------------------


def test_one_restore_undoes_a_whole_maintain_newest_phase_first(store):
    for n in range(1, 7):
        store.add(f"Note {n} about the garden.", id=f"g{n}", timestamp=1_000 + n)
    store.add("Note 1 about the garden.", id="copy", timestamp=2_000)
    report = store.maintain(["expire", "dedup", "evict"], capacity=3)
    phases = {phase.name: phase.run_id for phase in report.phases}
    assert phases["expire"] is None and report.run_id is not None
    grouped = store.run(report.run_id)
    assert grouped["kind"] == "maintain" and [p["id"] for p in grouped["phases"]] == [phases["dedup"], phases["evict"]]
    assert grouped["did"] == {"duplicates": 1, "evicted": 3, "phases": 2}
    undone = store.restore(report.run_id)
    assert [p["run_id"] for p in undone.phases] == [phases["evict"], phases["dedup"]]
    assert sorted(undone.restored_ids) == ["g1", "g2", "g3", "g4"] and store.count() == 7
    assert {run["status"] for run in store.runs()} == {"restored"}


def test_a_phase_undone_alone_is_left_out_of_its_maintains_undo(store):
    for n in range(1, 6):
        store.add(f"Note {n} about the garden.", id=f"g{n}", timestamp=1_000 + n)
    store.add("Note 1 about the garden.", id="copy", timestamp=2_000)
    report = store.maintain(["dedup", "evict"], capacity=2)
    evict = next(phase.run_id for phase in report.phases if phase.name == "evict")
    store.restore(evict)
    undone = store.restore(report.run_id)
    assert [p["kind"] for p in undone.phases] == ["dedup"] and undone.restored_ids == ["g1"]
    with pytest.raises(MemstoreError, match="already restored"):
        store.restore(report.run_id)


def test_a_maintain_that_changes_nothing_leaves_no_run(store):
    store.add("One note.", id="n1")
    assert store.maintain(["expire", "dedup"]).run_id is None and store.runs() == []
    assert store.maintain(["dedup"], dry_run=True).run_id is None


# -- texts where ids were ------------------------------------------------------------------------------


def test_a_run_names_each_memory_it_archived_with_its_text_a_page_at_a_time(flagged):
    evicted = flagged.consolidate(1, "assistant")
    first = flagged.run(evicted.run_id, limit=3)
    assert first["archived_total"] == 8 and [a["id"] for a in first["archived"]] == ["a1", "a2", "a3"]
    assert first["archived"][0]["text"] == "The API limit is 100 rpm."
    rest = flagged.run(evicted.run_id, limit=10, offset=3)
    assert [a["id"] for a in rest["archived"]] == ["a4", "a5", "a6", "a7", "a8"]
    settled = first["flags_settled"]
    assert len(settled) == 8 and settled[0]["older_text"] == "The API limit is 100 rpm."
    undone = flagged.restore(evicted.run_id)
    assert [m["text"] for m in undone.memories][:1] == ["The API limit is 100 rpm."]
    assert len(undone.flags) == 8 and {f["change"] for f in undone.flags} == {"reopened"} and undone.flags[0]["newer_text"]


def test_a_namespace_that_holds_nothing_is_answered_with_the_nearest_ones(flagged):
    assert flagged.namespace_known("assistant")["exists"]
    known = flagged.namespace_known("asistant")
    assert (known["exists"], known["nearest"], known["namespaces"]) == (False, ["assistant"], ["assistant", "work"])
    assert flagged.namespace_known("zzz")["nearest"] == []
