"""RealMem in memstore: recall with a user's message over the memories an extraction step wrote (the
fourth set of scripts/eval_recall.py).

RealMem (Bian et al. 2026, Apache-2.0) holds 10 personas' months of assistant dialogues, the memories
the benchmark's pipeline extracted from each session, and each user query labelled with the memories
used to answer it. The query is the user's message as an agent would recall with it ("Hello. I tried
those wines this weekend... What should I do next for my studies?"), not a clean question. The
project holds 5 personas in ../shared/data/realmem/ (one namespace each); the other 5 are held out.
tests/data/realmem/split.json splits the 5 again, by persona, into 3 tuning personas and 2 test
personas, written down before anything was tuned (its rule is in the file).
tests/data/realmem/ also keeps a slice of the test personas (`slice_rule` in split.json: one test
persona's memories and about half of its queries) so the tests run on a fresh clone.

Each memory is stored as written (id, namespace, text, timestamp: its session's date plus the
session's index in minutes, so one session's memories share a moment); the session is kept in
`meta` for the record, and recall never reads it. Figures, for the top k recall returns (one call at
k = 10, sliced):

* any@k: a labelled memory among them;
* share@k: the share of the query's labelled memories among them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memstore import MemoryStore
from memstore.db import read_transaction
from memstore.records import now_ms
from scripts import REPO

DATA = REPO.parent / "shared" / "data" / "realmem"
HERE = REPO / "tests" / "data" / "realmem"
KS = (5, 10)
METHODS = ("lexical", "semantic", "hybrid", "plain_bm25")
FIGURES = ("any", "share")
CATEGORIES = ("Dynamic Incremental", "Dynamic Updating", "Implicit Preference", "Temporal-reasoning")


def split() -> dict[str, Any]:
    return json.loads((HERE / "split.json").read_text(encoding="utf-8"))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def in_slice(query_id: str) -> bool:
    """The slice's rule for a query of the slice's persona: its id's sha256 hex digest starts with 0-7."""
    return hashlib.sha256(query_id.encode("utf-8")).hexdigest()[0] in "01234567"


def slice_persona() -> str:
    """The test persona whose name has the lowest sha256 hex digest (split.json's slice_rule)."""
    return min(split()["test"], key=lambda name: hashlib.sha256(name.encode("utf-8")).hexdigest())


def load(part: str, data: Path = DATA) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The memories and queries of `part`: "tune" or "test" (split.json's personas, from `data`), or
    "slice" (the test slice kept in tests/data/realmem). Memories as `MemoryStore.add_many` takes
    them (the session in meta); queries in their file's order, labels limited to the memories."""
    if part == "slice":
        memories, queries = _lines(HERE / "slice_memories.jsonl"), _lines(HERE / "slice_queries.jsonl")
    else:
        personas = set(split()[part])
        memories = [m for m in _lines(data / "memories.jsonl") if m["namespace"] in personas]
        queries = [q for q in _lines(data / "queries.jsonl") if q["namespace"] in personas]
    ids = {m["id"] for m in memories}
    for query in queries:
        query["expect_ids"] = [e for e in query["expect_ids"] if e in ids]
    return [as_record(m) for m in memories], [q for q in queries if q["expect_ids"]]


def as_record(memory: dict[str, Any]) -> dict[str, Any]:
    record = {key: memory[key] for key in ("id", "namespace", "text", "timestamp")}
    if "session" in memory:
        record["meta"] = {"session": memory["session"]}
    return record


def make_slice(data: Path = DATA) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The slice as split.json's slice_rule chooses it from `data` (what tests/data/realmem holds)."""
    persona = slice_persona()
    memories = [m for m in _lines(data / "memories.jsonl") if m["namespace"] == persona]
    queries = [q for q in _lines(data / "queries.jsonl") if q["namespace"] == persona and in_slice(q["id"])]
    return memories, queries


def scores(ranked: list[str], query: dict[str, Any]) -> dict[str, float]:
    expected = set(query["expect_ids"])
    out = {}
    for k in KS:
        top = set(ranked[:k])
        out[f"any@{k}"] = float(bool(expected & top))
        out[f"share@{k}"] = len(expected & top) / len(expected)
    return out


def rankings(store: MemoryStore, bm25: Any, queries: list[dict[str, Any]], now: int | None = None) -> list[dict[str, Any]]:
    """Each query's top 10 by every method, recall ranking at `now` (default: the clock)."""
    now = now_ms() if now is None else now
    rows = []
    for query in queries:
        text, namespace = query["query"], query["namespace"]
        query_vector = store.embeddings.query_vector(text)
        with read_transaction(store.engine) as conn:
            ranked = {
                mode: [row["id"] for row in store.recaller.ranked_rows(conn, text, max(KS), namespace, mode, query_vector, now)]
                for mode in ("lexical", "semantic", "hybrid")
            }  # fmt: skip
        ranked["plain_bm25"] = [memory_id for memory_id, _ in bm25.rank(text, namespace, max(KS))]
        rows.append({"query": query, "ranked": ranked})
    return rows


def figures(rows: list[dict[str, Any]], methods: Iterable[str] = METHODS) -> dict[str, Any]:
    """Per method: the figures over all queries, and by category ("n": how many)."""
    out: dict[str, Any] = {}
    for method in methods:
        groups = {"all": rows, **{kind: [r for r in rows if r["query"]["category"] == kind] for kind in CATEGORIES}}
        out[method] = {}
        for name, part in groups.items():
            if part:
                each = [scores(r["ranked"][method], r["query"]) for r in part]
                out[method][name] = {"n": len(part), **{key: round(sum(s[key] for s in each) / len(each), 3) for key in each[0]}}
    return out


def evaluate(store: MemoryStore, bm25: Any, queries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"queries": len(queries), "figures": figures(rankings(store, bm25, queries))}


def print_table(entry: dict[str, Any]) -> None:
    columns = [f"{figure}@{k}" for k in KS for figure in FIGURES]
    print(f"| {'method':<10} | {'category':<20} | {'n':>3} | " + " | ".join(f"{c:>8}" for c in columns) + " |")
    print(f"|{'-' * 12}|{'-' * 22}|{'-' * 5}|" + "|".join("-" * 10 for _ in columns) + "|")
    for method, groups in entry["figures"].items():
        for name, values in groups.items():
            print(f"| {method:<10} | {name:<20} | {values['n']:3} | " + " | ".join(f"{values[c]:8.3f}" for c in columns) + " |")
