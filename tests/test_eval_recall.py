"""The recall evaluation of scripts/eval_recall.py, with the real model: the two labelled sets,
LongMemEval's test slice (scripts/longmemeval.py; the script runs the whole test part) and RealMem's
(scripts/realmem.py; the script runs both test personas), and the targets that hold on their test
halves are asserted here. The figures are the script's own (it is
imported), computed once per test run."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from .conftest import REPO

DATA = REPO / "tests" / "data"


@pytest.fixture(scope="session")
def longmemeval_store(tmp_path_factory):
    """Where the evaluation builds LongMemEval's slice store (kept for the session)."""
    return tmp_path_factory.mktemp("longmemeval") / "slice.db"


@pytest.fixture(scope="session")
def realmem_store(tmp_path_factory):
    """Where the evaluation builds RealMem's slice store (kept for the session)."""
    return tmp_path_factory.mktemp("realmem") / "slice.db"


@pytest.fixture(scope="session")
def evaluation(model_dir, longmemeval_store, realmem_store):
    from scripts import eval_recall

    return eval_recall.evaluate(
        model_dir, longmemeval_part="slice", longmemeval_store=longmemeval_store, realmem_part="slice", realmem_store=realmem_store
    )


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def test_the_conversational_set_is_big_hard_and_split_by_conversation():
    turns = {path.name.split("_")[0]: load(path) for path in sorted((DATA / "conversations").glob("c*_turns.jsonl"))}
    assert len(turns) >= 4 and all(len(conversation) >= 150 for conversation in turns.values())
    assert all(len({t["session"] for t in conversation}) >= 5 for conversation in turns.values())
    assert all(t["text"].startswith(t["speaker"] + ": ") for conversation in turns.values() for t in conversation)
    questions = {name: load(DATA / "conversations" / f"{name}_questions.jsonl") for name in turns}
    assert sum(map(len, questions.values())) >= 200
    assert set(Counter(q["kind"] for qs in questions.values() for q in qs)) == {"single", "multi", "when", "who"}
    ids = {name: {t["id"] for t in conversation} for name, conversation in turns.items()}
    assert all(set(q["evidence"]) <= ids[name] for name, qs in questions.items() for q in qs)
    # A whole conversation is in one half: the test half holds conversations never tuned on.
    assert all(len({q["split"] for q in qs}) == 1 for qs in questions.values())
    assert {qs[0]["split"] for qs in questions.values()} == {"tune", "test"}
    # Names are shared across conversations: a speaker of one is a speaker of another.
    speakers = [{t["speaker"] for t in conversation} for conversation in turns.values()]
    assert any(a & b for n, a in enumerate(speakers) for b in speakers[n + 1 :])


def test_the_reworded_set_has_a_hundred_questions_in_two_halves():
    memories = {m["id"] for m in load(DATA / "recall_memories.jsonl")}
    questions = load(DATA / "recall_questions.jsonl")
    assert len(questions) >= 100 and all(q["expect_id"] in memories for q in questions)
    assert Counter(q["split"] for q in questions) == {"tune": len(questions) // 2 + len(questions) % 2, "test": len(questions) // 2}


def test_on_reworded_questions_hybrid_recall_stays_far_above_full_text(evaluation):
    test = evaluation["sets"]["reworded"]["figures"]["test"]
    assert test["hybrid"]["recall@5"] >= test["lexical"]["recall@5"] + 0.30
    assert evaluation["targets"]["reworded: hybrid >= lexical + 0.30"]


def test_on_reworded_questions_hybrid_recall_stays_with_the_vectors(evaluation):
    test = evaluation["sets"]["reworded"]["figures"]["test"]
    assert test["hybrid"]["recall@5"] >= test["semantic"]["recall@5"] - 0.03
    assert evaluation["targets"]["reworded: hybrid >= semantic - 0.03"]


def test_on_conversations_hybrid_recall_beats_both_of_its_rankings(evaluation):
    test = evaluation["sets"]["conversations"]["figures"]["test"]
    assert test["hybrid"]["recall@5"] >= max(test["lexical"]["recall@5"], test["semantic"]["recall@5"], test["plain_bm25"]["recall@5"]) + 0.03
    assert evaluation["targets"]["conversations: hybrid >= best of lexical, semantic and plain BM25 + 0.03"]
    # The test half is conversations never tuned on.
    assert set(evaluation["sets"]["conversations"]["by_namespace"]["test"]).isdisjoint(evaluation["sets"]["conversations"]["by_namespace"]["tune"])


def test_the_report_covers_every_method_on_both_halves(evaluation):
    for entry in evaluation["sets"].values():
        for half in ("tune", "test"):
            figures = entry["figures"][half]
            assert set(figures) == {"lexical", "semantic", "hybrid", "plain_bm25", "plain_rrf"}
            assert all(0 <= value <= 1 for method in figures.values() for value in method.values())
            assert all(method["recall@1"] <= method["recall@5"] <= method["recall@10"] for method in figures.values())


def test_on_longmemeval_hybrid_recall_beats_every_other_ranking(evaluation):
    """On LongMemEval's test slice (never tuned on), asked at each question's date: hybrid recall@5
    (the share of the evidence in the top 5, as the other sets count it) beats the best of full
    text, vectors and plain BM25 by 0.03, and no other ranking finds evidence for more questions."""
    entry = evaluation["longmemeval"]
    assert entry["part"] == "slice" and entry["questions"] == 8
    figures = {method: values["all"] for method, values in entry["figures"].items()}
    best = max(figures[method]["share@5"] for method in ("lexical", "semantic", "plain_bm25"))
    assert figures["hybrid"]["share@5"] >= best + 0.03 - 1e-9, figures
    assert figures["hybrid"]["turn_any@5"] >= max(figures[m]["turn_any@5"] for m in ("lexical", "semantic", "plain_bm25")), figures
    assert all(met for target, met in evaluation["targets"].items() if target.startswith("longmemeval"))


def test_the_longmemeval_split_is_by_question_and_stratified_and_the_slice_is_its_rule_s():
    from scripts import longmemeval

    split = longmemeval.split()
    assert (len(split["tuning"]), len(split["test"])) == (108, 104)
    assert not set(split["tuning"]) & set(split["test"])
    memories, questions = longmemeval.load("slice")
    ids = [q["question_id"] for q in questions]
    assert set(ids) <= set(split["test"]) and ids == sorted(ids, key=split["test"].index)
    # The slice is the rule's choice among the test part's questions of each type, in order.
    by_type = Counter(q["type"] for q in questions)
    assert by_type == longmemeval.SLICE_PER_TYPE
    assert len({m["id"] for m in memories}) == len(memories) and {m["namespace"] for m in memories} == set(ids)
    assert all(q["evidence_ids"] and set(q["evidence_ids"]) <= {m["id"] for m in memories} for q in questions)


def test_the_time_weight_sweep_gives_at_the_weight_in_the_code_what_recall_returns(evaluation, longmemeval_store):
    """`--longmemeval tuning --tune`'s sweep re-fuses the same candidates at each TIME_WEIGHT: at the
    weight in the code it gives hybrid recall's own figures (run here on the slice's store)."""
    from memstore import MemoryStore
    from memstore.recall.fusion import TIME_WEIGHT
    from scripts import longmemeval

    _, questions = longmemeval.load("slice")
    with MemoryStore(longmemeval_store, create=False) as store:
        sweep = longmemeval.time_sweep(store, questions)
    assert [point["time_weight"] for point in sweep] == longmemeval.TIME_GRID
    at_code = next(point for point in sweep if point["time_weight"] == TIME_WEIGHT)
    assert {key: value for key, value in at_code.items() if key != "time_weight"} == evaluation["longmemeval"]["figures"]["hybrid"]


def test_the_realmem_split_is_by_persona_and_the_slice_is_its_rule_s():
    from scripts import realmem

    split = realmem.split()
    assert (len(split["tune"]), len(split["test"])) == (3, 2) and not set(split["tune"]) & set(split["test"])
    memories, queries = realmem.load("slice")
    persona = realmem.slice_persona()
    assert persona in split["test"]
    # The slice is every memory of one test persona and the queries the rule picks, nothing else.
    assert {m["namespace"] for m in memories} == {q["namespace"] for q in queries} == {persona}
    assert len({m["id"] for m in memories}) == len(memories) >= 400
    assert len(queries) >= 60 and all(realmem.in_slice(q["id"]) for q in queries)
    assert all(q["expect_ids"] and set(q["expect_ids"]) <= {m["id"] for m in memories} for q in queries)
    assert {q["category"] for q in queries} <= set(realmem.CATEGORIES)
    if (realmem.DATA / "queries.jsonl").exists():  # the shared data beside the repository: the rule gives the slice
        shared_memories, shared_queries = realmem.make_slice()
        assert [m["id"] for m in shared_memories] == [m["id"] for m in memories]
        assert [q["id"] for q in shared_queries] == [q["id"] for q in queries]


def test_on_realmem_hybrid_recall_beats_every_other_ranking(evaluation):
    """On RealMem's test slice (a persona never tuned on; the query is the user's message): hybrid
    any@5 (a labelled memory among the top 5) leads the best of full text, vectors and plain BM25 by
    0.03, and no other ranking holds more of the labelled memories in its top 5 or top 10."""
    entry = evaluation["realmem"]
    assert entry["part"] == "slice" and entry["queries"] == 66 and entry["memories"] == 443
    figures = {method: values["all"] for method, values in entry["figures"].items()}
    others = ("lexical", "semantic", "plain_bm25")
    assert figures["hybrid"]["any@5"] >= max(figures[m]["any@5"] for m in others) + 0.03 - 1e-9, figures
    for figure in ("share@5", "any@10", "share@10"):
        assert figures["hybrid"][figure] >= max(figures[m][figure] for m in others), (figure, figures)
    assert evaluation["targets"]["realmem: hybrid any@5 >= best of lexical, semantic and plain BM25 + 0.03"]
    # Every category is reported, for every method.
    assert len({tuple(groups) for groups in entry["figures"].values()}) == 1
    assert {"Dynamic Incremental", "Dynamic Updating"} <= set(entry["figures"]["hybrid"])
