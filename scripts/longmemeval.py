"""LongMemEval-S in memstore: recall on a public benchmark (the third set of scripts/eval_recall.py).

LongMemEval (Wu et al., ICLR 2025; MIT) asks questions about a user's long chat history: each question
has its own haystack of about 50 sessions (~490 user turns, one memory each, timestamped with their
session's date, one namespace per question) and labelled evidence turns. The project holds the
benchmark's tuning half in ../shared/data/longmemeval/ (212 questions, 51,888 turns); the other half is
held out. tests/data/longmemeval/split.json splits that half again, by question and stratified by type,
into our own tuning part (108) and test part (104), written down before anything was tuned.
tests/data/longmemeval/slice.jsonl.gz holds the haystacks of a few test questions (`SLICE`), chosen
by rule, so the tests run with the real model in a few minutes on a fresh clone.

Each question is asked at its own date (`question_date`): recall ranks at that moment (`now`), as an
agent asking it then would, so "last month" means the month before the question. Figures, for the
top k recall returns (k = 5, 10; one call at k = 10, sliced, as for the other sets):

* turn recall_any@k: an evidence turn among them (LongMemEval's own figure);
* session recall_any@k: an evidence session among the sessions they come from;
* share@k: the share of the question's evidence turns among them (the other sets' recall@k).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memstore import MemoryStore
from memstore.db import read_transaction
from memstore.recall import fusion_depth
from memstore.recall.fusion import fuse
from scripts import REPO

DATA = REPO.parent / "shared" / "data" / "longmemeval"
HERE = REPO / "tests" / "data" / "longmemeval"
KS = (5, 10)
METHODS = ("lexical", "semantic", "hybrid", "plain_bm25")
FIGURES = ("turn_any", "session_any", "share")
TYPES = ("single-session-user", "single-session-preference", "multi-session", "temporal-reasoning", "knowledge-update")
# The slice the tests run: the first question of each type in the test part's order, and the second
# of the three biggest types (multi-session, temporal-reasoning, knowledge-update): 8 questions.
SLICE_PER_TYPE = {"single-session-user": 1, "single-session-preference": 1, "multi-session": 2, "temporal-reasoning": 2, "knowledge-update": 2}


def question_moment(question: dict[str, Any]) -> int:
    """`question_date` ("2023/03/27 (Mon) 23:35", UTC) in Unix ms."""
    day, _, clock = question["question_date"].partition(" (")
    moment = datetime.strptime(f"{day} {clock.split(') ')[1]}", "%Y/%m/%d %H:%M").replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def read_memories(lines: Iterable[str]) -> list[dict[str, Any]]:
    """The memories, each id once: 5 haystacks hold one session twice under two dates (30 ids), and
    memstore refuses a repeated id: the first is kept."""
    seen: set[str] = set()
    memories = []
    for line in lines:
        memory = json.loads(line)
        if memory["id"] not in seen:
            seen.add(memory["id"])
            memories.append(memory)
    return memories


def split() -> dict[str, list[str]]:
    document = json.loads((HERE / "split.json").read_text(encoding="utf-8"))
    return {"tuning": document["tuning"], "test": document["test"]}


def load(part: str, data: Path = DATA) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The memories of `part`'s questions ("tuning", "test", or "slice": the test slice kept in
    tests/data) and those questions, in the split's order; evidence limited to the memories (one
    label, 8e9d538c-answer_7bdcbd23-3, names an assistant turn)."""
    if part == "slice":
        with gzip.open(HERE / "slice.jsonl.gz", "rt", encoding="utf-8") as stream:
            memories = read_memories(stream)
        questions = [json.loads(line) for line in (HERE / "slice_questions.jsonl").read_text(encoding="utf-8").splitlines()]
    else:
        chosen = split()[part]
        by_id = {q["question_id"]: q for q in map(json.loads, (data / "questions.jsonl").read_text(encoding="utf-8").splitlines())}
        questions = [by_id[question_id] for question_id in chosen]
        wanted = {q["namespace"] for q in questions}
        with gzip.open(data / "memories.jsonl.gz", "rt", encoding="utf-8") as stream:
            memories = [m for m in read_memories(stream) if m["namespace"] in wanted]
    ids = {m["id"] for m in memories}
    for question in questions:
        question["evidence_ids"] = [e for e in question["evidence_ids"] if e in ids]
    return memories, questions


def slice_of(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The test slice (`SLICE_PER_TYPE`) of the test part's questions, in their order."""
    taken = dict.fromkeys(TYPES, 0)
    chosen = []
    for question in questions:
        if taken[question["type"]] < SLICE_PER_TYPE[question["type"]]:
            taken[question["type"]] += 1
            chosen.append(question)
    return chosen


def session_of(memory_id: str, question: dict[str, Any]) -> str:
    """A memory's session: ids are <question_id>-<session_id>-<turn>."""
    return memory_id[len(question["question_id"]) + 1 :].rsplit("-", 1)[0]


def scores(ranked: list[str], question: dict[str, Any]) -> dict[str, float]:
    evidence = set(question["evidence_ids"])
    out = {}
    for k in KS:
        top = ranked[:k]
        out[f"turn_any@{k}"] = float(bool(evidence & set(top)))
        out[f"session_any@{k}"] = float(bool({session_of(i, question) for i in top} & set(question["evidence_sessions"])))
        out[f"share@{k}"] = len(evidence & set(top)) / len(evidence)
    return out


def rankings(store: MemoryStore, bm25: Any, questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each question's top 10 by every method, recall ranking at the question's moment."""
    rows = []
    for question in questions:
        query, namespace, now = question["question"], question["namespace"], question_moment(question)
        query_vector = store.embeddings.query_vector(query)
        with read_transaction(store.engine) as conn:
            ranked = {
                mode: [row["id"] for row in store.recaller.ranked_rows(conn, query, max(KS), namespace, mode, query_vector, now)]
                for mode in ("lexical", "semantic", "hybrid")
            }  # fmt: skip
        ranked["plain_bm25"] = [memory_id for memory_id, _ in bm25.rank(query, namespace, max(KS))]
        rows.append({"question": question, "ranked": ranked})
    return rows


# The TIME_WEIGHT values `time_sweep` tries (on the tuning part only).
TIME_GRID = [round(0.05 * i, 2) for i in range(0, 11)]


def time_sweep(store: MemoryStore, questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Hybrid recall's figures at each TIME_GRID weight: the same candidates, fused again."""
    candidates = []
    for question in questions:
        query, namespace, now = question["question"], question["namespace"], question_moment(question)
        query_vector = store.embeddings.query_vector(query)
        with read_transaction(store.engine) as conn:
            candidates.append(store.recaller.hybrid_candidates(conn, query, namespace, query_vector, fusion_depth(max(KS)), now)[1])
    out = []
    for weight in TIME_GRID:
        rows = [
            {"question": question, "ranked": {"hybrid": [fused.id for fused in fuse(found, max(KS), time_weight=weight)]}}
            for question, found in zip(questions, candidates)
        ]  # fmt: skip
        out.append({"time_weight": weight, **figures(rows, ("hybrid",))["hybrid"]})
    return out


def figures(rows: list[dict[str, Any]], methods: Iterable[str] = METHODS) -> dict[str, Any]:
    """Per method: the figures over all questions, and by question type ("n": how many)."""
    out: dict[str, Any] = {}
    for method in methods:
        groups = {"all": rows, **{kind: [r for r in rows if r["question"]["type"] == kind] for kind in TYPES}}
        out[method] = {}
        for name, part in groups.items():
            if part:
                each = [scores(r["ranked"][method], r["question"]) for r in part]
                out[method][name] = {"n": len(part), **{key: round(sum(s[key] for s in each) / len(each), 3) for key in each[0]}}
    return out


def evaluate(store: MemoryStore, bm25: Any, questions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"questions": len(questions), "figures": figures(rankings(store, bm25, questions))}


def print_sweep(sweep: list[dict[str, Any]]) -> None:
    print("| time_weight | turn_any@5 | share@5 | " + " | ".join(f"share@5 {kind}" for kind in TYPES) + " |")
    for point in sweep:
        cells = [f"{point[kind]['share@5']:.3f}" if kind in point else "-" for kind in TYPES]
        print(f"| {point['time_weight']:11} | {point['all']['turn_any@5']:10.3f} | {point['all']['share@5']:7.3f} | " + " | ".join(cells) + " |")


def print_table(entry: dict[str, Any]) -> None:
    columns = [f"{figure}@{k}" for k in KS for figure in FIGURES]
    print(f"| {'method':<10} | {'type':<25} | {'n':>3} | " + " | ".join(f"{c:>13}" for c in columns) + " |")
    print(f"|{'-' * 12}|{'-' * 27}|{'-' * 5}|" + "|".join("-" * 15 for _ in columns) + "|")
    for method, groups in entry["figures"].items():
        for name, values in groups.items():
            print(f"| {method:<10} | {name:<25} | {values['n']:3} | " + " | ".join(f"{values[c]:13.3f}" for c in columns) + " |")
