"""Embeddings in the store, the semantic and contradict phases, flags and `memstore maintain`, with
the real model (all-MiniLM-L6-v2 int8 from the offline directory) on both backends."""

from __future__ import annotations

import json
import math
from .sqlitelib import sqlite3
import struct

import pytest
from click.testing import CliRunner

from memstore import MemoryStore, MemstoreError
from memstore.cli import cli
from memstore.db import read_transaction, write_transaction
from memstore.records import now_ms
from memstore.semantic.pairs import DUPLICATE_AT

from .conftest import REPO
from .handmade import store_handmade_vectors

REPO_DATA = REPO / "tests" / "data"

FACTS = [
    {"id": "d1", "text": "Deploy v2.1 to staging at 3pm.", "timestamp": 1},
    {"id": "d2", "text": "The staging deploy of v2.1 is scheduled for 3pm.", "timestamp": 2, "recall_count": 0},
    {"id": "r1", "text": "The API rate limit is 100 requests per minute.", "timestamp": 3},
    {"id": "r2", "text": "The API rate limit is 500 requests per minute.", "timestamp": 4},
    {"id": "c1", "text": "User lives in Lisbon.", "timestamp": 5},
    {"id": "c2", "text": "User lives in Porto.", "timestamp": 6},
    {"id": "t1", "text": "The team standup is every weekday at 9:30.", "timestamp": 7, "recall_count": 4},
    {"id": "p1", "text": "User prefers dark mode in every editor.", "timestamp": 8, "pinned": True},
    {"id": "u1", "text": "The office coffee machine is on the third floor.", "timestamp": 9},
]


@pytest.fixture
def semantic(store, model_dir):
    store.add_many(FACTS)
    store.enable_embeddings(model_dir)
    store.sync_embeddings()
    return store


def archived(store):
    return sorted((m["id"], m["reason"], m["superseded_by"]) for m in store.list(None, archived=True))


def test_vectors_are_unit_float32_blobs_a_person_can_read(sqlite_store, model_dir):
    sqlite_store.add_many(FACTS[:3])
    status = sqlite_store.enable_embeddings(model_dir)
    assert status["dim"] == 384 and status["model"].startswith("onnx-sha256:8199be6f699a395f")
    assert sqlite_store.embedding_status()["pending"] == 3
    assert sqlite_store.sync_embeddings() == {"model": status["model"], "embedded": 3}
    with sqlite3.connect(sqlite_store.engine.url.database) as shell:
        rows = shell.execute("SELECT memory_id, model, dim, length(vector), vector FROM memory_vectors ORDER BY memory_id").fetchall()
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [(i, status["model"], 384, 1536) for i in ("d1", "d2", "r1")]
    values = struct.unpack("<384f", rows[0][4])
    assert math.isclose(math.fsum(v * v for v in values), 1.0, rel_tol=1e-5)


def test_add_never_waits_for_the_model_and_sync_is_incremental(semantic):
    semantic.add("A new fact arrives.", id="n1")
    assert semantic.embedding_status()["pending"] == 1
    assert semantic.sync_embeddings()["embedded"] == 1
    assert semantic.sync_embeddings()["embedded"] == 0


def test_archive_and_restore_keep_vectors(semantic):
    run = semantic.forget(["u1"])
    assert semantic.embedding_status()["pending"] == 0
    semantic.restore(run.run_id)
    assert semantic.embedding_status()["pending"] == 0  # the vector stayed with the id


def test_a_new_model_makes_every_memory_pending(semantic):
    from memstore.db import write_transaction
    from memstore.vectors.storage import EmbeddingModel, model_of, set_model

    with write_transaction(semantic.engine) as conn:
        current = model_of(conn)
        set_model(conn, EmbeddingModel("another-model", current.source, current.dim))
    assert semantic.embedding_status()["pending"] == len(FACTS)


def test_semantic_search_finds_a_fact_asked_in_other_words(semantic):
    found = semantic.semantic_search("what time is the daily team meeting", k=3)
    assert found[0][0] == "t1" and 0 < found[0][1] <= 1
    assert [memory_id for memory_id, _ in found] == [memory_id for memory_id, _ in sorted(found, key=lambda f: (-f[1], f[0]))]


def test_vector_index_answers_what_a_full_scan_answers(semantic):
    import numpy as np

    from memstore.db import read_transaction
    from memstore.vectors.embedder import from_blob
    from memstore.vectors.held import MemoryCopy
    from memstore.vectors.search import search
    from memstore.vectors.storage import model_of

    semantic.forget(["t1", "c1"])
    with read_transaction(semantic.engine) as conn:
        model = model_of(conn)
        rows = conn.exec_driver_sql(
            "SELECT v.memory_id, v.vector FROM memory_vectors v JOIN memories m ON m.id = v.memory_id WHERE m.namespace = 'default'"
        ).all()
        query = from_blob(rows[0][1], model.dim) * 0.5 + from_blob(rows[1][1], model.dim) * 0.5
        expected = sorted(((memory_id, float(from_blob(blob, model.dim) @ query)) for memory_id, blob in rows), key=lambda r: (-r[1], r[0]))
        in_memory = MemoryCopy(model, "default")
        for k in (1, 3, 7, 20):
            for got in (in_memory.search(conn, query.astype(np.float32), k, now=now_ms()), search(conn, model, query.astype(np.float32), "default", k, now=now_ms())):
                assert [i for i, _ in got] == [i for i, _ in expected[:k]]
                assert all(math.isclose(a, b, rel_tol=1e-5) for (_, a), (_, b) in zip(got, expected))


def test_a_long_lived_store_answers_hybrid_recall_from_memory_as_a_fresh_one_does_from_the_database(semantic, store_url):
    # From its second search of a namespace a store object ranks from the vectors it holds, the
    # cosines of what only the words found included; a fresh object reads them from the database.
    queries = ["when is the staging deploy", "what time is the daily team meeting", "rate limit", "where does the user live"]
    semantic.forget(["u1"])
    for round_ in range(2):
        for query in queries:
            with MemoryStore(store_url) as fresh:
                expected = fresh.recall(query, k=4, touch=False, mode="hybrid")
            got = semantic.recall(query, k=4, touch=False, mode="hybrid")
            # The database's index reports cosines in float32; the same ranking, scores to a hair.
            assert [dict(row, score=None) for row in got] == [dict(row, score=None) for row in expected], (round_, query)
            assert all(math.isclose(a["score"], b["score"], abs_tol=1e-6) for a, b in zip(got, expected))
    held = semantic.recaller.vectors.copies
    assert list(held) and "u1" in held[next(iter(held))].position



def _searches_agree(store, store_url, query: str, k: int = 5) -> list[str]:
    """The long-lived store's semantic answer, asserted equal to a fresh store's."""
    with MemoryStore(store_url) as fresh:
        expected = [memory_id for memory_id, _ in fresh.semantic_search(query, k=k)]
    got = [memory_id for memory_id, _ in store.semantic_search(query, k=k)]
    assert got == expected, query
    return got


def test_a_dry_run_that_embeds_leaves_a_long_lived_stores_vectors_as_they_were(semantic, store_url):
    # The dry run embeds the new memory in its transaction, checks recall there, and rolls back: the
    # store object must not keep the vector nobody committed, nor miss the one the real sync writes.
    query = "where does the user live"
    for _ in range(2):
        _searches_agree(semantic, store_url, query)  # the second one from memory
    semantic.add("The user's new flat is in Porto, near the river.", id="porto")
    semantic.maintain(["semantic", "verify"], dry_run=True, checks=[{"query": query, "expect_id": "porto"}], k=10)
    assert semantic.embedding_status()["pending"] == 1
    assert "porto" not in _searches_agree(semantic, store_url, query, k=10)
    semantic.sync_embeddings()
    assert "porto" in _searches_agree(semantic, store_url, query, k=10)


def test_a_long_lived_store_forgets_the_vectors_of_a_model_set_again(store):
    # A -> B -> A: the sync with B replaced every vector of A, so back on A every memory waits for
    # its vector; the store object must not answer from the vectors of A it held before.
    import numpy as np

    from memstore.records import now_ms
    from memstore.vectors.embedder import to_blob
    from memstore.vectors.search import search
    from memstore.vectors.storage import EmbeddingModel, model_of, set_model, store_vectors

    store.add_many([{"id": f"m{i}", "text": f"fact {i}", "timestamp": i} for i in range(3)])
    first, second = EmbeddingModel("model-a", "/nonexistent/a", 4), EmbeddingModel("model-b", "/nonexistent/b", 4)
    vectors = {"m0": [1.0, 0.0, 0.0, 0.0], "m1": [0.0, 1.0, 0.0, 0.0], "m2": [0.0, 0.0, 1.0, 0.0]}
    query = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)

    def set_and_embed(model, ids) -> None:
        with write_transaction(store.engine) as conn:
            set_model(conn, model)
            if ids:
                store_vectors(conn, model, list(ids), [to_blob(vectors[i]) for i in ids], 1000)

    def hits() -> list[str]:
        with read_transaction(store.engine) as conn:
            return [memory_id for memory_id, _ in search(conn, model_of(conn), query, "default", 3, now=now_ms(), held=store.recaller.vectors)]

    set_and_embed(first, vectors)
    assert hits() == hits() == ["m0", "m1", "m2"]  # the second from memory
    set_and_embed(second, vectors)
    set_and_embed(first, ())
    assert hits() == []
    set_and_embed(first, ["m1"])
    assert hits() == ["m1"]

def test_maintain_dry_run_shows_exactly_what_the_real_run_applies(semantic):
    dry = semantic.maintain(capacity=100, dry_run=True)
    assert semantic.runs() == [] and archived(semantic) == []
    real = semantic.maintain(capacity=100)
    # The stale phase archives nothing unless asked (stale=True).
    assert [p.status for p in real.phases] == ["ok"] * 5 + ["skipped"] + ["ok"] * 2

    def seen(report):
        return [(p.name, p.status, [(a["id"], a["reason"], a["superseded_by"]) for a in p.archived],
                 [(f["a"], f["b"], f["reason"]) for f in p.flags]) for p in report.phases]  # fmt: skip

    assert seen(dry) == seen(real)
    by_name = {p.name: p for p in real.phases}
    # The paraphrase is merged (newest wins), the changed value and the swapped name are flagged.
    assert [(a["id"], a["reason"], a["superseded_by"]) for a in by_name["semantic"].archived] == [("d1", "semantic_duplicate", "d2")]
    assert by_name["semantic"].archived[0]["similarity"] >= DUPLICATE_AT
    assert {(f["a"], f["b"]) for f in by_name["contradict"].flags} >= {("r1", "r2"), ("c1", "c2")}
    assert "r1" in [m["id"] for m in semantic.list()]  # a contradiction is never merged


def test_each_phase_is_a_run_that_restore_undoes(semantic):
    report = semantic.maintain(capacity=100)
    by_name = {p.name: p for p in report.phases}
    assert semantic.flags() != []
    semantic.restore(by_name["contradict"].run_id)
    assert semantic.flags() == []
    semantic.restore(by_name["semantic"].run_id)
    assert "d1" in [m["id"] for m in semantic.list()] and archived(semantic) == []


def test_supersede_resolves_a_flag_and_restoring_it_opens_the_flag_again(semantic):
    semantic.maintain(["contradict"])
    flag = next(f for f in semantic.flags() if {f["older_id"], f["newer_id"]} == {"r1", "r2"})
    assert (flag["older_id"], flag["newer_id"]) == ("r1", "r2")  # the newer side is probably current
    run = semantic.supersede("r1", by="r2")
    assert all(f["id"] != flag["id"] for f in semantic.flags())
    assert semantic.flags(status="resolved")[0]["id"] == flag["id"]
    semantic.restore(run.run_id)
    assert any(f["id"] == flag["id"] for f in semantic.flags())


def test_a_dismissed_pair_is_not_flagged_again(semantic):
    semantic.maintain(["contradict"])
    flag = semantic.flags()[0]
    semantic.dismiss_flag(flag["id"])
    with pytest.raises(MemstoreError, match="already dismissed"):
        semantic.dismiss_flag(flag["id"])
    semantic.add("Something unrelated entirely: the printer needs toner.", id="z1")
    semantic.maintain(["contradict"])
    assert flag["id"] not in [f["id"] for f in semantic.flags()]
    assert semantic.flags(status="dismissed")[0]["id"] == flag["id"]


# -- the flag lifecycle: a flag follows its memories ----------------------------------------------


def flag_of(store, a: str, b: str, status: str = "all") -> dict:
    """The one flag between `a` and `b` (either order)."""
    found = [f for f in store.flags(status=status) if {f["older_id"], f["newer_id"]} == {a, b}]
    assert len(found) == 1, found
    return found[0]


def test_a_flag_closes_when_a_side_is_forgotten_and_restoring_the_forget_opens_it(semantic):
    semantic.maintain(["contradict"])
    flag = flag_of(semantic, "r1", "r2", "open")
    assert flag["verdict"] is None and flag["run_id"] == semantic.runs()[0]["id"] and flag["flagged_at"] > 0
    forgot = semantic.forget(["r1"])
    assert all(f["id"] != flag["id"] for f in semantic.flags())
    closed = flag_of(semantic, "r1", "r2", "resolved")
    assert (closed["verdict"], closed["closed_by_run"]) == ("forgotten", forgot.run_id) and closed["closed_at"] > 0
    assert (closed["older_state"], closed["newer_state"]) == ("archived", "live")
    semantic.restore(forgot.run_id)
    reopened = flag_of(semantic, "r1", "r2", "open")
    assert (reopened["id"], reopened["verdict"], reopened["closed_at"], reopened["closed_by_run"]) == (flag["id"], None, None, None)


def test_a_flag_closes_with_the_verdict_of_whatever_took_its_side_away(semantic):
    from memstore.records import now_ms

    semantic.maintain(["contradict"])
    # A person's supersede of an unrelated memory takes r1 away: the flag closes as superseded.
    superseded = semantic.supersede("r1", by="t1")
    assert (flag_of(semantic, "r1", "r2")["verdict"], flag_of(semantic, "r1", "r2")["closed_by_run"]) == ("superseded", superseded.run_id)
    # A newer exact copy of c2: the dedup phase merges c2 into it, and the flag closes as a duplicate.
    semantic.add("user lives in porto", id="c2-again", timestamp=50)
    dedup = semantic.maintain(["dedup"]).phases[0]
    assert [(a["id"], a["reason"]) for a in dedup.archived] == [("c2", "duplicate")]
    assert (flag_of(semantic, "c1", "c2")["verdict"], flag_of(semantic, "c1", "c2")["closed_by_run"]) == ("duplicate", dedup.run_id)
    # c1's lifetime ends; the expire job closes its new flag with c2-again as expired.
    semantic.maintain(["contradict"])
    assert flag_of(semantic, "c1", "c2-again", "open")
    assert semantic.extend_lifetimes({"c1": now_ms() + 30}) == 1
    import time

    time.sleep(0.1)
    expired = semantic.expire()
    assert [entry.id for entry in expired.archived] == ["c1"]
    assert (flag_of(semantic, "c1", "c2-again")["verdict"], flag_of(semantic, "c1", "c2-again")["closed_by_run"]) == ("expired", expired.run_id)
    assert semantic.flags() == []
    semantic.restore(expired.run_id)
    assert flag_of(semantic, "c1", "c2-again")["status"] == "open"


def test_a_flag_closes_when_its_side_is_merged_by_meaning(semantic):
    semantic.maintain(["contradict"])
    flag = flag_of(semantic, "r1", "r2", "open")
    # d1 and d2 say the same; flag them against each other by hand, as if the classifier had: the
    # semantic phase's merge of d1 into d2 settles that flag.
    with write_transaction(semantic.engine) as conn:
        from memstore.schema import contradiction_flags

        conn.execute(contradiction_flags.insert().values(namespace="default", older_id="d1", newer_id="d2", similarity=0.9,
                                                         reason="by hand", status="open", run_id=flag["run_id"], flagged_at=1))  # fmt: skip
    merged = semantic.maintain(["semantic"]).phases[0]
    assert [(a["id"], a["reason"]) for a in merged.archived] == [("d1", "semantic_duplicate")]
    settled = flag_of(semantic, "d1", "d2")
    assert (settled["status"], settled["verdict"], settled["closed_by_run"]) == ("resolved", "semantic_duplicate", merged.run_id)
    assert flag_of(semantic, "r1", "r2")["status"] == "open"


def test_an_update_moves_the_flag_to_the_new_version_and_restoring_it_moves_the_flag_back(semantic):
    semantic.maintain(["contradict"])
    flag = flag_of(semantic, "r1", "r2", "open")
    updated = semantic.update("r1", text="The API rate limit is 200 requests per minute.", new_id="r1b")
    moved = flag_of(semantic, "r2", "r1b", "open")
    # The same flag, on the new version; the update is the newer side now.
    assert (moved["id"], moved["older_id"], moved["newer_id"], moved["run_id"]) == (flag["id"], "r2", "r1b", flag["run_id"])
    again = {p.name: p for p in semantic.maintain(["contradict"]).phases}["contradict"]
    assert again.counts["compared"] == 1 and again.flags == []  # r1b was compared; its pair is flagged already
    assert len([f for f in semantic.flags(status="all") if "r2" in (f["older_id"], f["newer_id"])]) == 1
    semantic.restore(updated["run_id"])
    back = flag_of(semantic, "r1", "r2", "open")
    assert (back["id"], back["older_id"], back["newer_id"]) == (flag["id"], "r1", "r2")


def test_a_dismissal_follows_an_update_that_keeps_the_text_only(semantic):
    semantic.maintain(["contradict"])
    flag = flag_of(semantic, "r1", "r2", "open")
    semantic.dismiss_flag(flag["id"])
    semantic.update("r2", importance=5, new_id="r2b")  # the same claim: the dismissal holds
    assert flag_of(semantic, "r1", "r2b", "dismissed")["id"] == flag["id"]
    assert semantic.maintain(["contradict"]).phases[0].flags == []
    semantic.update("r2b", text="The API rate limit is 900 requests per minute.", new_id="r2c")  # a new claim
    assert flag_of(semantic, "r1", "r2b", "dismissed")["id"] == flag["id"]
    assert [(f["a"], f["b"]) for f in semantic.maintain(["contradict"]).phases[0].flags] == [("r1", "r2c")]


def test_dismissing_is_a_run_that_restore_undoes(semantic):
    semantic.maintain(["contradict"])
    flag = flag_of(semantic, "r1", "r2", "open")
    done = semantic.dismiss_flag(flag["id"])
    assert done == {"flag_id": flag["id"], "run_id": done["run_id"], "namespace": "default"}
    run = semantic.runs()[0]
    assert (run["id"], run["kind"], run["namespace"], run["did"]) == (done["run_id"], "dismiss", "default", {"dismissed": 1})
    dismissed = flag_of(semantic, "r1", "r2", "dismissed")
    assert (dismissed["verdict"], dismissed["closed_by_run"]) == ("dismissed", done["run_id"])
    semantic.restore(done["run_id"])
    assert flag_of(semantic, "r1", "r2", "open")["id"] == flag["id"]
    semantic.dismiss_flag(flag["id"])  # open again, so it can be dismissed again


def test_a_pair_whose_flagging_run_was_restored_is_flagged_again(semantic):
    first = semantic.maintain(["contradict"]).phases[0]
    raised = {(f["a"], f["b"]) for f in first.flags}
    assert ("r1", "r2") in raised
    semantic.restore(first.run_id)
    assert semantic.flags(status="all") == []
    again = semantic.maintain(["contradict"]).phases[0]
    assert {(f["a"], f["b"]) for f in again.flags} == raised


def test_flags_lists_each_status_and_all(semantic):
    semantic.maintain(["contradict"])
    lisbon, rate = flag_of(semantic, "c1", "c2"), flag_of(semantic, "r1", "r2")
    semantic.dismiss_flag(lisbon["id"])
    semantic.supersede("r1", by="r2")
    assert [f["id"] for f in semantic.flags(status="dismissed")] == [lisbon["id"]]
    assert [(f["id"], f["verdict"]) for f in semantic.flags(status="resolved")] == [(rate["id"], "superseded")]
    every = semantic.flags(status="all")
    assert [f["id"] for f in every] == sorted((f["id"] for f in every), reverse=True)  # newest first
    assert {lisbon["id"], rate["id"]} <= {f["id"] for f in every}
    with pytest.raises(MemstoreError, match="status"):
        semantic.flags(status="closed")


def test_recall_marks_the_memories_that_have_an_open_flag(semantic):
    from memstore.records import now_ms

    semantic.maintain(["contradict"])
    flag = flag_of(semantic, "r1", "r2", "open")
    rows = semantic.recall("API rate limit requests per minute", k=4, touch=False)
    marks = {row["id"]: row["open_flag"] for row in rows}
    assert marks["r1"] == {"id": flag["id"], "other_id": "r2"} and marks["r2"] == {"id": flag["id"], "other_id": "r1"}
    assert all(mark is None for memory_id, mark in marks.items() if memory_id not in ("r1", "r2"))
    as_of = semantic.recall("API rate limit", k=4, as_of=now_ms())
    assert {row["id"]: row["open_flag"] for row in as_of}["r2"] == {"id": flag["id"], "other_id": "r1"}
    semantic.supersede("r1", by="r2")
    assert [row["open_flag"] for row in semantic.recall("API rate limit", k=4, touch=False) if row["id"] == "r2"] == [None]


def test_nightly_runs_compare_only_what_is_new(semantic):
    first = {p.name: p for p in semantic.maintain(["semantic", "contradict"]).phases}
    assert first["semantic"].counts["compared"] == len(FACTS)
    second = {p.name: p for p in semantic.maintain(["semantic", "contradict"]).phases}
    assert second["semantic"].counts["compared"] == second["contradict"].counts["compared"] == 0
    semantic.add("The API rate limit is 900 requests per minute.", id="r3", timestamp=20)
    third = {p.name: p for p in semantic.maintain(["semantic", "contradict"]).phases}
    assert third["contradict"].counts["compared"] == 1
    assert {(f["a"], f["b"]) for f in third["contradict"].flags} == {("r1", "r3"), ("r2", "r3")}
    # A phase that finds nothing records no run, yet the next one does not compare its memories again.
    runs = semantic.runs()
    semantic.add("The printer on the second floor needs toner.", id="z1")
    fourth = {p.name: p for p in semantic.maintain(["semantic", "contradict"]).phases}
    assert fourth["semantic"].counts["compared"] == fourth["contradict"].counts["compared"] == 1
    assert fourth["semantic"].run_id is None and fourth["contradict"].run_id is None and semantic.runs() == runs
    fifth = {p.name: p for p in semantic.maintain(["semantic", "contradict"]).phases}
    assert fifth["semantic"].counts["compared"] == fifth["contradict"].counts["compared"] == 0


def test_pinned_memories_are_never_merged_away(store, model_dir):
    store.add_many([
        {"id": "old", "text": "Deploy v2.1 to staging at 3pm.", "timestamp": 1, "pinned": True},
        {"id": "new", "text": "The staging deploy of v2.1 is scheduled for 3pm.", "timestamp": 2},
    ])  # fmt: skip
    store.enable_embeddings(model_dir)
    semantic_phase = store.maintain(["semantic"]).phases[0]
    # The Stage 1 rule ranks a pinned memory first: the unpinned newer copy is the one archived.
    assert [(a["id"], a["superseded_by"]) for a in semantic_phase.archived] == [("new", "old")]


def test_a_failed_phase_is_reported_and_what_needs_it_is_skipped(semantic):
    report = semantic.maintain(["dedup", "semantic", "evict", "verify"], checks=[{"query": "rate limit", "expect_id": "nope"}])
    assert [(p.name, p.status) for p in report.phases] == [("dedup", "ok"), ("semantic", "ok"), ("evict", "skipped"), ("verify", "failed")]
    assert report.phases[2].error == "no --capacity given"
    assert "recall check 'rate limit' expects 'nope'" in report.phases[3].error and not report.ok


def test_without_embeddings_the_semantic_phases_are_skipped(store):
    store.add_many(FACTS)
    report = store.maintain(capacity=5)
    assert [(p.name, p.status) for p in report.phases] == [
        ("check", "ok"), ("expire", "ok"), ("dedup", "ok"), ("semantic", "skipped"), ("contradict", "skipped"),
        ("stale", "skipped"), ("evict", "ok"), ("verify", "ok"),
    ]  # fmt: skip
    assert len([m for m in store.list() if not m["pinned"]]) == 5


def test_the_cli_maintain_json_flags_and_report(sqlite_store, model_dir, db_path):
    sqlite_store.add_many(FACTS)
    run = lambda *args: CliRunner().invoke(cli, ["--db", str(db_path), *args], catch_exceptions=False)  # noqa: E731
    assert run("embeddings", "enable", "--model", str(model_dir)).exit_code == 0
    synced = run("embeddings", "sync", "--json")
    assert json.loads(synced.output)["embedded"] == len(FACTS)
    done = run("maintain", "--capacity", "100", "--json")
    assert done.exit_code == 0 and done.output.count("\n") == 1
    phases = json.loads(done.output)["phases"]
    assert [p["name"] for p in phases] == ["check", "expire", "dedup", "semantic", "contradict", "stale", "evict", "verify"]
    assert all(set(p) >= {"name", "status", "run_id", "error", "archived", "flags"} for p in phases)
    assert phases[3]["archived"] == [{"id": "d1", "namespace": "default", "reason": "semantic_duplicate", "superseded_by": "d2",
                                      "similarity": phases[3]["archived"][0]["similarity"], "text": "Deploy v2.1 to staging at 3pm."}]  # fmt: skip
    listed = run("flags").output
    assert "): The API rate limit is 500 requests per minute." in listed and "  newer, probably current: r2 (" in listed
    flag_id = json.loads(run("flags", "--json").output)["flags"][0]["id"]
    dismissed = run("flags", "dismiss", str(flag_id)).output.splitlines()
    # A dismissal is a run of its own (the phases that changed nothing recorded none: 1 groups the
    # maintain's phases, 2 and 3 are the semantic and contradict phases), undone by restore.
    assert dismissed[0] == f"run 4: flag {flag_id} dismissed" and dismissed[1].startswith(f"  flag {flag_id}: ")
    assert dismissed[-1] == f"undo with: memstore --db {db_path} restore --run 4"
    assert "open contradiction flags (memstore flags):" in run("report").output
    bad = run("maintain", "--phases", "dedup,nonsense")
    assert bad.exit_code == 1 and bad.output.startswith("Error: --phases: no phase 'nonsense'")


def test_the_cli_maintain_ends_with_the_commands_that_settle_new_flags(sqlite_store, model_dir, db_path):
    sqlite_store.add_many(FACTS)
    sqlite_store.enable_embeddings(model_dir)
    run = lambda *args: CliRunner().invoke(cli, ["--db", str(db_path), *args], catch_exceptions=False)  # noqa: E731
    done = run("maintain", "--phases", "contradict", "--fail-on-new-flags")
    assert done.exit_code == 1  # for cron: a person has something to settle
    flag = next(f for f in sqlite_store.flags() if (f["older_id"], f["newer_id"]) == ("r1", "r2"))
    lines = done.output.splitlines()
    count = len(sqlite_store.flags())
    assert f"{count} new contradiction flags to settle (memstore --db {db_path} flags shows both texts):" in lines
    assert (f"  flag {flag['id']}: keep r2 (newer) with `memstore --db {db_path} supersede r1 --by r2`, "
            f"or keep both with `memstore --db {db_path} flags dismiss {flag['id']}`") in lines  # fmt: skip
    assert lines[-1].startswith("  flag ")
    again = run("maintain", "--phases", "contradict", "--fail-on-new-flags")
    assert again.exit_code == 0 and "to settle" not in again.output
    # Recall marks the flagged memories: --json with the flag and the other side, a column for people.
    hits = json.loads(run("recall", "API rate limit requests per minute", "-k", "2", "--no-touch", "--json").output)
    assert {hit["id"]: hit["open_flag"] for hit in hits} == {"r1": {"id": flag["id"], "other_id": "r2"}, "r2": {"id": flag["id"], "other_id": "r1"}}
    table = run("recall", "API rate limit requests per minute", "-k", "2", "--no-touch").output.splitlines()
    assert "open flag" in table[0] and any(f"#{flag['id']} vs r1" in line for line in table[2:])
    # Settled flags are listed with how, when and by which run.
    run("supersede", "r1", "--by", "r2")
    settled = run("flags", "--status", "resolved").output.splitlines()
    assert settled[0].startswith(f"flag {flag['id']}: ") and ", resolved: superseded " in settled[0] and settled[0].endswith(f"by run {sqlite_store.runs()[0]['id']})")
    assert settled[1].startswith("  older: r1 (") and ", archived): " in settled[1]
    every = json.loads(run("flags", "--status", "all", "--json").output)["flags"]
    assert {f["status"] for f in every} == {"open", "resolved"} and all("verdict" in f for f in every)
    assert run("flags", "--status", "closed").exit_code == 2


def test_hybrid_recall_modes_and_found_by(semantic):
    question = "what time is the daily team meeting"
    hybrid = semantic.recall(question, 3, touch=False)  # the default with vectors: hybrid
    assert hybrid[0]["id"] == "t1" and "semantic" in hybrid[0]["found_by"]
    lexical_only = semantic.recall("rate limit", 5, touch=False, mode="lexical")
    assert all(row["found_by"] == ["lexical"] for row in lexical_only)
    semantic_only = semantic.recall(question, 2, touch=False, mode="semantic")
    assert [row["found_by"] for row in semantic_only] == [["semantic"], ["semantic"]]
    with pytest.raises(MemstoreError, match="mode"):
        semantic.recall(question, mode="fuzzy")
    touched = semantic.recall(question, 1)
    assert touched[0]["recall_count"] == 5  # t1 had 4


def test_recall_without_vectors_stays_lexical(store):
    store.add_many(FACTS)
    assert all(row["found_by"] == ["lexical"] for row in store.recall("rate limit", touch=False))


def test_mcp_recall_finds_a_memory_asked_in_other_words_and_report_lists_open_flags(sqlite_store, model_dir, db_path, tmp_path):
    from .test_mcp import call, mcp_session, run_async

    sqlite_store.add_many(FACTS)
    sqlite_store.enable_embeddings(model_dir)
    sqlite_store.maintain(["contradict"])

    async def scenario():
        async with mcp_session(db_path, log=tmp_path / "mcp.log") as session:
            hits = await call(session, "recall", query="what time is the daily team meeting", k=3)
            return hits, await call(session, "report")

    hits, report = run_async(scenario)
    assert hits[0]["id"] == "t1" and "semantic" in hits[0]["found_by"]
    # The report tool lists the contradictions the maintenance flagged, for a person to look at.
    assert report["open_flags"]["count"] == len(sqlite_store.flags()) >= 2
    assert {(f["older_id"], f["newer_id"]) for f in report["open_flags"]["top"]} >= {("r1", "r2"), ("c1", "c2")}


def test_langgraph_search_with_a_query_uses_hybrid_recall(tmp_path, model_dir):
    from memstore.integrations.langgraph import MemstoreStore

    path = tmp_path / "graph.db"
    with MemstoreStore(path) as graph_store:
        for n, fact in enumerate(FACTS):
            graph_store.put(("users", "u1"), f"k{n}", {"content": fact["text"]})
    with MemoryStore(path) as store:
        store.enable_embeddings(model_dir)
        store.sync_embeddings()
    with MemstoreStore(path) as graph_store:
        found = graph_store.search(("users",), query="what time is the daily team meeting", limit=2)
    assert found[0].value == {"content": "The team standup is every weekday at 9:30."}


# -- plumbing with hand-made vectors (the texts still decide; only the cosines are chosen) -------


def test_one_new_memory_absorbs_two_old_copies_in_one_run(store):
    # n is a copy of o1 and of o2 (cosine 0.9 each); o1 and o2 are only related (0.62).
    store.add_many([
        {"id": "o1", "text": "The standup is at 9:30 every weekday.", "timestamp": 1},
        {"id": "o2", "text": "Weekday standups start at 9:30.", "timestamp": 2},
        {"id": "n", "text": "Every weekday the standup is at 9:30.", "timestamp": 3},
    ])  # fmt: skip
    store_handmade_vectors(store, {"n": [1.0, 0.0, 0.0], "o1": [0.9, 0.43589, 0.0], "o2": [0.9, -0.43589, 0.0]})
    merged = store.maintain(["semantic"]).phases[0]
    assert sorted((a["id"], a["superseded_by"]) for a in merged.archived) == [("o1", "n"), ("o2", "n")]
    assert [m["id"] for m in store.list()] == ["n"]


def test_a_merge_that_would_chain_waits_for_the_next_run(store):
    # a ~ b is the closest pair: b (newer) survives it. b ~ c comes next, and c (newer still) would
    # win: archiving b, a survivor of this run, waits for the next run, which compares b again.
    store.add_many([
        {"id": "a", "text": "The standup is at 9:30 every weekday.", "timestamp": 1},
        {"id": "b", "text": "Every weekday the standup is at 9:30.", "timestamp": 2},
        {"id": "c", "text": "Weekday standups start at 9:30.", "timestamp": 3},
    ])  # fmt: skip
    store_handmade_vectors(store, {"a": [1.0, 0.0, 0.0], "b": [0.97, 0.24310, 0.0], "c": [0.8457, 0.53366, 0.0]})
    first = store.maintain(["semantic"]).phases[0]
    assert [(a["id"], a["superseded_by"]) for a in first.archived] == [("a", "b")]
    second = store.maintain(["semantic"]).phases[0]
    assert second.counts["compared"] == 2  # b and c, the deferred pair, are compared again
    assert [(a["id"], a["superseded_by"]) for a in second.archived] == [("b", "c")]
    assert [m["id"] for m in store.list()] == ["c"]
    assert [v["id"] for v in store.history("a")] == ["a", "b", "c"]


def test_vectors_written_with_an_older_clock_are_still_seen(store):
    import numpy as np

    from memstore.db import read_transaction, write_transaction
    from memstore.vectors.embedder import to_blob
    from memstore.vectors.held import MemoryCopy
    from memstore.vectors.storage import model_of, store_vectors

    store.add_many([{"id": f"m{i}", "text": f"fact {i}"} for i in range(4)])
    store_handmade_vectors(store, {"m0": [1.0, 0.0, 0.0], "m1": [0.0, 1.0, 0.0]}, now=2000)
    with read_transaction(store.engine) as conn:
        index = MemoryCopy(model_of(conn), "default")
        assert len(index.search(conn, np.array([1.0, 0.0, 0.0], dtype=np.float32), 10, now=now_ms())) == 2
    with write_transaction(store.engine) as conn:  # a clock stepped back, or a slower concurrent sync
        store_vectors(conn, model_of(conn), ["m2", "m3"], [to_blob([0.0, 0.0, 1.0]), to_blob([0.6, 0.8, 0.0])], 1500)
    with read_transaction(store.engine) as conn:
        found = index.search(conn, np.array([1.0, 0.0, 0.0], dtype=np.float32), 10, now=now_ms())
    assert sorted(memory_id for memory_id, _ in found) == ["m0", "m1", "m2", "m3"]


def test_default_recall_stays_full_text_when_the_model_cannot_be_loaded(store):
    store.add_many(FACTS)
    store_handmade_vectors(store, {"r1": [1.0, 0.0, 0.0]})  # its model lives in a directory that is gone
    assert [r["found_by"] for r in store.recall("rate limit", touch=False)] == [["lexical"], ["lexical"]]
    with pytest.raises(MemstoreError, match="no model directory"):
        store.recall("rate limit", touch=False, mode="hybrid")


def test_restoring_an_update_waits_for_runs_that_lean_on_its_new_version(store):
    store.add("Office is in Lisbon.", id="m1", timestamp=1)
    updated = store.update("m1", text="Office is in Porto.", new_id="m2", timestamp=10)
    store.add("office is in porto", id="m3", timestamp=5)  # an older copy of the new version
    folded = store.consolidate(10)
    assert [(a.id, a.superseded_by) for a in folded.archived] == [("m3", "m2")]
    with pytest.raises(MemstoreError, match=f"run {folded.run_id} relies on 'm2'.*restore run {folded.run_id} first"):
        store.restore(updated["run_id"])
    store.restore(folded.run_id)
    store.restore(updated["run_id"])
    assert sorted(m["id"] for m in store.list()) == ["m1", "m3"]


def test_maintain_reports_a_shared_store_file_but_still_runs(sqlite_store, db_path):
    import os

    sqlite_store.add_many(FACTS)
    os.chmod(db_path, 0o644)
    check = sqlite_store.maintain(["check", "dedup"]).phases
    assert [(p.name, p.status) for p in check] == [("check", "ok"), ("dedup", "ok")]
    assert "permissions" in check[0].counts["warnings"][0]


def test_maintain_needs_at_least_one_phase(store):
    with pytest.raises(MemstoreError, match="--phases: name at least one phase"):
        store.maintain([])


def test_pairs_are_only_ever_made_within_a_namespace(store):
    store.add_many([
        {"id": "w1", "text": "The standup is at 9:30 every weekday.", "timestamp": 1, "namespace": "work"},
        {"id": "h1", "text": "Every weekday the standup is at 9:30.", "timestamp": 2, "namespace": "home"},
        {"id": "h2", "text": "Weekday standups start at 9:30.", "timestamp": 3, "namespace": "home"},
    ])  # fmt: skip
    store_handmade_vectors(store, {"w1": [1.0, 0.0, 0.0], "h1": [1.0, 0.0, 0.0], "h2": [0.99, 0.14107, 0.0]})
    phase = store.maintain(["semantic"], namespace=None).phases[0]
    assert [(a["id"], a["namespace"], a["superseded_by"]) for a in phase.archived] == [("h1", "home", "h2")]
    assert [m["id"] for m in store.list("work")] == ["w1"]


# -- recall checks gate on the recall agents get ---------------------------------------------------


def _reworded(count: int):
    root = REPO_DATA
    memories = [json.loads(line) for line in (root / "recall_memories.jsonl").read_text().splitlines() if line.strip()]
    questions = [json.loads(line) for line in (root / "recall_questions.jsonl").read_text().splitlines() if line.strip()][:count]
    return memories, [{"query": q["question"], "expect_id": q["expect_id"]} for q in questions]


def test_verify_passes_exactly_the_checks_whose_memory_recall_returns(sqlite_store, model_dir):
    memories, checks = _reworded(40)
    sqlite_store.add_many({"id": m["id"], "text": m["text"]} for m in memories)
    sqlite_store.enable_embeddings(model_dir)
    sqlite_store.sync_embeddings()
    results = sqlite_store.verify(checks, 5)
    recalled = [c["expect_id"] in [row["id"] for row in sqlite_store.recall(c["query"], 5, touch=False)] for c in checks]
    assert [r.passed for r in results] == recalled
    assert {r.mode for r in results} == {"hybrid"}
    # Full text alone passes far fewer of these questions asked in other words.
    lexical = sqlite_store.verify(checks, 5, mode="lexical")
    assert {r.mode for r in lexical} == {"lexical"}
    assert sum(r.passed for r in lexical) + 15 <= sum(r.passed for r in results)


def test_a_job_gates_on_hybrid_recall_and_the_report_says_so(sqlite_store, model_dir, db_path, tmp_path):
    memories, checks = _reworded(5)
    sqlite_store.add_many({"id": m["id"], "text": m["text"]} for m in memories)
    sqlite_store.enable_embeddings(model_dir)
    sqlite_store.sync_embeddings()
    report = sqlite_store.consolidate(capacity=1000, checks=checks, k=5, dry_run=True)
    assert {c.mode for c in report.checks} == {"hybrid"}
    assert {c.mode for c in sqlite_store.prune(checks=checks, k=5, dry_run=True, check_mode="lexical").checks} == {"lexical"}
    maintained = sqlite_store.maintain(["verify"], checks=checks, k=5)
    assert maintained.phases[0].counts["checks_mode"] == "hybrid"
    path = tmp_path / "checks.json"
    path.write_text(json.dumps(checks))
    out = CliRunner().invoke(cli, ["--db", str(db_path), "verify", str(path), "-k", "5"])
    assert out.output.startswith("recall checks ranked by hybrid recall, top 5\n")
    out = CliRunner().invoke(cli, ["--db", str(db_path), "verify", str(path), "-k", "5", "--mode", "lexical", "--json"])
    assert json.loads(out.output)["mode"] == "lexical"
