#!/usr/bin/env python3
"""Measure memstore's semantic layer with the real model, on the labelled sets in tests/data/.

    .venv/bin/python scripts/semantic_eval.py [--model DIR] [--json] [--tune] [--misses]

1. Pairs (tests/data/semantic_pairs.jsonl): memstore's classifier next to the plain rule (merge at
   cosine >= 0.90, flag a possible contradiction at 0.65 <= cosine < 0.90, as the specification's
   maintenance cycle does): contradictions merged, related-but-distinct pairs merged, duplicates
   merged, contradictions flagged; and the cosine quartiles per label and kind.
2. Recall (tests/data/recall_memories.jsonl, tests/data/recall_questions.jsonl): recall@5 of full
   text alone (a real MemoryStore), vectors alone (NumPy cosine), plain reciprocal rank fusion
   (k=60) and memstore's fusion.

--tune also prints how the defaults were chosen: `DUPLICATE_AT` on the pairs of even lines (checked
on the odd ones) and `LEXICAL_WEIGHT` on the questions of even lines (checked on the odd ones).

The model: --model DIR, else $MEMSTORE_TEST_MODEL_DIR, else .model-cache/minilm in the repo, built
by scripts/offline-model when missing. Nothing is downloaded from a model hub. The tests import this
file (tests/test_semantic_classify.py), so the figures they assert are the figures printed here.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# importlib, not `from memstore.semantic import classify`: the package exports the function of that name.
classifier = importlib.import_module("memstore.semantic.pairs")
from memstore.semantic.fusion import LEXICAL_WEIGHT, fuse, reciprocal_rank_fusion  # noqa: E402

DATA = REPO / "tests" / "data"
PAIRS_FILE = DATA / "semantic_pairs.jsonl"
MEMORIES_FILE = DATA / "recall_memories.jsonl"
QUESTIONS_FILE = DATA / "recall_questions.jsonl"
DEFAULT_MODEL_DIR = REPO / ".model-cache" / "minilm"

# The plain rule the classifier is compared with.
PLAIN_MERGE_AT = 0.90
PLAIN_FLAG_AT = 0.65
# Targets (issue 14).
TARGETS = {
    "contradictions_merged": ("<=", 0.05),
    "related_merged": ("<=", 0.02),
    "duplicates_merged": (">=", 0.50),
    "contradictions_flagged": (">=", 0.70),
}
TARGET_TEXT = {name: f"{op} {round(100 * bound)} %" for name, (op, bound) in TARGETS.items()}
RECALL_K = 5
CANDIDATE_DEPTH = 50  # how many hits each ranking hands to the fusion
# Tuning rule for DUPLICATE_AT (see --tune): the lowest threshold on this grid that merges no
# contradiction and no related pair of the tuning half and stays MARGIN above every related pair's
# cosine there (related pairs are what no text rule protects: only the cosine keeps them apart).
THRESHOLD_GRID = [round(0.70 + i / 100, 2) for i in range(26)]
RELATED_MARGIN = 0.05


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def resolve_model_dir(model: str | None = None) -> Path:
    """--model, else $MEMSTORE_TEST_MODEL_DIR, else .model-cache/minilm (assembled when missing)."""
    chosen = model or os.environ.get("MEMSTORE_TEST_MODEL_DIR")
    if chosen:
        return Path(chosen)
    subprocess.run([str(REPO / "scripts" / "offline-model"), str(DEFAULT_MODEL_DIR)], check=True)
    return DEFAULT_MODEL_DIR


# -- pairs ---------------------------------------------------------------------------------------


def pair_cosines(embedder, pairs: list[dict[str, Any]]) -> list[float]:
    texts = sorted({p["a"] for p in pairs} | {p["b"] for p in pairs})
    vectors = embedder.embed(texts)
    row = {text: i for i, text in enumerate(texts)}
    return [float(vectors[row[p["a"]]] @ vectors[row[p["b"]]]) for p in pairs]


def plain_rule(similarity: float) -> str:
    if similarity >= PLAIN_MERGE_AT:
        return "duplicate"
    return "contradiction" if similarity >= PLAIN_FLAG_AT else "unrelated"


def rates(pairs: list[dict[str, Any]], verdicts: list[str]) -> dict[str, Any]:
    """The four target figures (and the false alarms) for one rule's verdicts."""

    def share(label: str, kind: str) -> dict[str, Any]:
        chosen = [v for p, v in zip(pairs, verdicts) if p["label"] == label]
        hits = sum(v == kind for v in chosen)
        return {"count": hits, "of": len(chosen), "rate": hits / len(chosen) if chosen else 0.0}

    return {
        "contradictions_merged": share("contradiction", "duplicate"),
        "related_merged": share("related", "duplicate"),
        "duplicates_merged": share("duplicate", "duplicate"),
        "contradictions_flagged": share("contradiction", "contradiction"),
        "duplicates_flagged": share("duplicate", "contradiction"),
        "related_flagged": share("related", "contradiction"),
    }


def quartiles(values: list[float]) -> dict[str, float]:
    import numpy as np

    q = np.percentile(values, [0, 25, 50, 75, 100])
    return dict(zip(("min", "q1", "median", "q3", "max"), (round(float(x), 3) for x in q)))


def pair_report(
    pairs: list[dict[str, Any]],
    cosines: list[float],
    *,
    duplicate_at: float = classifier.DUPLICATE_AT,
    related_at: float = classifier.RELATED_AT,
) -> dict[str, Any]:
    ours = [
        classifier.classify(p["a"], p["b"], c, duplicate_at=duplicate_at, related_at=related_at).kind
        for p, c in zip(pairs, cosines)
    ]
    plain = [plain_rule(c) for c in cosines]
    expected = {"duplicate": "duplicate", "contradiction": "contradiction", "related": "related"}
    misses = [
        {"a": p["a"], "b": p["b"], "label": p["label"], "kind": p["kind"], "cosine": round(c, 3), "verdict": v,
         "reason": classifier.classify(p["a"], p["b"], c, duplicate_at=duplicate_at, related_at=related_at).reason}
        for p, c, v in zip(pairs, cosines, ours)
        # A related pair called unrelated is no miss: neither merges nor flags it.
        if v != expected[p["label"]] and not (p["label"] == "related" and v == "unrelated")
    ]  # fmt: skip
    by = {}
    for field in ("label", "kind"):
        for value in sorted({p[field] for p in pairs}):
            by[f"{field}={value}"] = {
                "n": sum(p[field] == value for p in pairs),
                **quartiles([c for p, c in zip(pairs, cosines) if p[field] == value]),
            }
    return {
        "pairs": len(pairs),
        "duplicate_at": duplicate_at,
        "related_at": related_at,
        "memstore": rates(pairs, ours),
        "plain": rates(pairs, plain),
        "cosine_quartiles": by,
        "misses": misses,
    }


def meets(figures: dict[str, Any]) -> dict[str, bool]:
    return {
        name: (figures[name]["rate"] <= bound if op == "<=" else figures[name]["rate"] >= bound)
        for name, (op, bound) in TARGETS.items()
    }


def tune_duplicate_at(pairs: list[dict[str, Any]], cosines: list[float]) -> dict[str, Any]:
    """Choose DUPLICATE_AT on the pairs of even lines by the rule above; check it on the odd lines."""
    tuning = [(p, c) for i, (p, c) in enumerate(zip(pairs, cosines)) if i % 2 == 0]
    held_out = [(p, c) for i, (p, c) in enumerate(zip(pairs, cosines)) if i % 2 == 1]
    highest_related = max(c for p, c in tuning if p["label"] == "related")
    sweep = []
    chosen = None
    for threshold in THRESHOLD_GRID:
        figures = rates([p for p, _ in tuning], [classifier.classify(p["a"], p["b"], c, duplicate_at=threshold).kind for p, c in tuning])
        sweep.append({"duplicate_at": threshold, **{k: figures[k]["rate"] for k in TARGETS}})
        safe = figures["contradictions_merged"]["count"] == 0 and figures["related_merged"]["count"] == 0
        if chosen is None and safe and threshold >= highest_related + RELATED_MARGIN:
            chosen = threshold
    held = rates([p for p, _ in held_out], [classifier.classify(p["a"], p["b"], c, duplicate_at=chosen).kind for p, c in held_out])
    return {
        "rule": f"lowest grid value merging no contradiction or related pair of the tuning half, "
        f">= highest related cosine there + {RELATED_MARGIN}",
        "tuning_pairs": len(tuning),
        "highest_related_cosine": round(highest_related, 3),
        "chosen": chosen,
        "held_out_pairs": len(held_out),
        "held_out": {k: held[k] for k in TARGETS},
        "sweep": sweep,
    }


# -- recall --------------------------------------------------------------------------------------


def recall_rankings(embedder, memories: list[dict[str, Any]], questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each question: the full-text ranking from a real MemoryStore, the vector ranking, and the
    cosine of every memory (so the fusion can be given the cosines of the full-text hits too)."""
    from memstore import MemoryStore

    memory_vectors = embedder.embed(m["text"] for m in memories)
    question_vectors = embedder.embed(q["question"] for q in questions)
    ids = [m["id"] for m in memories]
    rankings = []
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp) / "recall.db")
        try:
            store.add_many({"id": m["id"], "text": m["text"]} for m in memories)
            for question, vector in zip(questions, question_vectors):
                lexical = [(row["id"], row["score"]) for row in store.recall(question["question"], CANDIDATE_DEPTH, touch=False)]
                cosines = memory_vectors @ vector
                order = sorted(range(len(ids)), key=lambda i: (-cosines[i], ids[i]))
                semantic = [(ids[i], float(cosines[i])) for i in order[:CANDIDATE_DEPTH]]
                cosine_of = {ids[i]: float(cosines[i]) for i in range(len(ids))}
                rankings.append({"question": question, "lexical": lexical, "semantic": semantic, "cosine_of": cosine_of})
        finally:
            store.close()
    return rankings


def _with_lexical_cosines(ranking: dict[str, Any]) -> list[tuple[str, float]]:
    """The vector top hits plus the cosine of every full-text hit, as the store can give them."""
    listed = {memory_id for memory_id, _ in ranking["semantic"]}
    extra = [(memory_id, ranking["cosine_of"][memory_id]) for memory_id, _ in ranking["lexical"] if memory_id not in listed]
    return ranking["semantic"] + sorted(extra, key=lambda item: (-item[1], item[0]))


def ranked_ids(ranking: dict[str, Any], method: str, lexical_weight: float = LEXICAL_WEIGHT) -> list[str]:
    if method == "full_text":
        return [memory_id for memory_id, _ in ranking["lexical"]]
    if method == "vectors":
        return [memory_id for memory_id, _ in ranking["semantic"]]
    if method == "plain_rrf":
        return [r.id for r in reciprocal_rank_fusion(ranking["lexical"], ranking["semantic"], CANDIDATE_DEPTH)]
    if method == "fusion":
        return [r.id for r in fuse(ranking["lexical"], _with_lexical_cosines(ranking), CANDIDATE_DEPTH, lexical_weight=lexical_weight)]
    if method == "fusion_vector_list_only":
        return [r.id for r in fuse(ranking["lexical"], ranking["semantic"], CANDIDATE_DEPTH, lexical_weight=lexical_weight)]
    raise ValueError(method)


METHODS = ("full_text", "vectors", "plain_rrf", "fusion", "fusion_vector_list_only")


def recall_at(rankings: list[dict[str, Any]], method: str, k: int = RECALL_K, **options: Any) -> float:
    hits = sum(r["question"]["expect_id"] in ranked_ids(r, method, **options)[:k] for r in rankings)
    return hits / len(rankings)


def recall_report(rankings: list[dict[str, Any]], memories: int) -> dict[str, Any]:
    figures = {method: round(recall_at(rankings, method), 3) for method in METHODS}
    at1 = {method: round(recall_at(rankings, method, k=1), 3) for method in METHODS}
    return {
        "memories": memories,
        "questions": len(rankings),
        "lexical_weight": LEXICAL_WEIGHT,
        "recall_at_5": figures,
        "recall_at_1": at1,
        "targets": {
            "fusion >= full_text + 0.3": figures["fusion"] >= figures["full_text"] + 0.3,
            "fusion >= vectors - 0.05": figures["fusion"] >= figures["vectors"] - 0.05,
        },
    }


def tune_lexical_weight(rankings: list[dict[str, Any]]) -> dict[str, Any]:
    tuning, held_out = rankings[0::2], rankings[1::2]
    grid = [round(i / 100, 2) for i in range(0, 31)]
    sweep = [
        {"lexical_weight": w, "tuning": round(recall_at(tuning, "fusion", lexical_weight=w), 3),
         "held_out": round(recall_at(held_out, "fusion", lexical_weight=w), 3)}
        for w in grid
    ]  # fmt: skip
    return {"tuning_questions": len(tuning), "held_out_questions": len(held_out), "sweep": sweep}


# -- output --------------------------------------------------------------------------------------


def _pct(share: dict[str, Any]) -> str:
    return f"{100 * share['rate']:5.1f} % ({share['count']}/{share['of']})"


def print_text(report: dict[str, Any], *, show_misses: bool = False) -> None:
    pairs = report["pairs"]
    print(f"model: {report['model']} ({report['model_dir']})")
    print(f"embedded {report['texts_embedded']} texts in {report['embed_seconds']:.1f} s")
    print()
    print(
        f"Pairs: {pairs['pairs']} (tests/data/semantic_pairs.jsonl). memstore = classify(), duplicate_at "
        f"{pairs['duplicate_at']}, related_at {pairs['related_at']}; plain = merge at cosine >= {PLAIN_MERGE_AT}, "
        f"flag at {PLAIN_FLAG_AT} <= cosine < {PLAIN_MERGE_AT}"
    )
    print()
    print(f"| {'figure':<24} | {'target':<7} | {'memstore':<20} | {'plain cosine rule':<20} |")
    print(f"|{'-' * 26}|{'-' * 9}|{'-' * 22}|{'-' * 22}|")
    for name in list(TARGETS) + ["duplicates_flagged", "related_flagged"]:
        target = TARGET_TEXT.get(name, "")
        print(f"| {name.replace('_', ' '):<24} | {target:<7} | {_pct(pairs['memstore'][name]):<20} | {_pct(pairs['plain'][name]):<20} |")
    print()
    print("Cosine quartiles")
    print()
    print(f"| {'pairs':<20} | {'n':>3} | {'min':>5} | {'q1':>5} | {'median':>6} | {'q3':>5} | {'max':>5} |")
    print(f"|{'-' * 22}|{'-' * 5}|{'-' * 7}|{'-' * 7}|{'-' * 8}|{'-' * 7}|{'-' * 7}|")
    for name, q in pairs["cosine_quartiles"].items():
        print(f"| {name:<20} | {q['n']:>3} | {q['min']:>5.3f} | {q['q1']:>5.3f} | {q['median']:>6.3f} | {q['q3']:>5.3f} | {q['max']:>5.3f} |")
    recall = report["recall"]
    print()
    print(
        f"Recall: {recall['questions']} questions over {recall['memories']} memories (tests/data/recall_*.jsonl); "
        f"each ranking hands {CANDIDATE_DEPTH} candidates to the fusions"
    )
    print()
    print(f"| {'ranking':<52} | recall@5 | recall@1 |")
    print(f"|{'-' * 54}|{'-' * 10}|{'-' * 10}|")
    labels = {
        "full_text": "full text alone (MemoryStore.recall)",
        "vectors": "vectors alone (cosine)",
        "plain_rrf": "plain reciprocal rank fusion (k=60)",
        "fusion": f"memstore fuse() (lexical_weight {recall['lexical_weight']})",
        "fusion_vector_list_only": "memstore fuse(), without the full-text hits' cosines",
    }
    for method in METHODS:
        print(f"| {labels[method]:<52} | {recall['recall_at_5'][method]:>8.3f} | {recall['recall_at_1'][method]:>8.3f} |")
    print()
    for name, ok in list(report["pair_targets"].items()) + list(recall["targets"].items()):
        print(f"target {name}: {'met' if ok else 'NOT MET'}")
    if show_misses:
        print()
        print(f"Pairs memstore does not classify as labelled ({len(pairs['misses'])}; related pairs called unrelated left out):")
        for miss in pairs["misses"]:
            print(f"  {miss['label']}/{miss['kind']} {miss['cosine']:.3f} -> {miss['verdict']}: {miss['a']} | {miss['b']} ({miss['reason']})")
    if "tuning" in report:
        tuning = report["tuning"]["duplicate_at"]
        print()
        print(f"Tuning duplicate_at: {tuning['rule']}")
        print(f"  tuning half: {tuning['tuning_pairs']} pairs (even lines), highest related cosine {tuning['highest_related_cosine']}")
        print(f"  chosen: {tuning['chosen']}; on the held-out half ({tuning['held_out_pairs']} pairs, odd lines):")
        for name in TARGETS:
            print(f"    {name.replace('_', ' ')}: {_pct(tuning['held_out'][name])}")
        print("  sweep on the tuning half (contradictions merged / related merged / duplicates merged / contradictions flagged):")
        for row in tuning["sweep"]:
            print(
                f"    {row['duplicate_at']:.2f}: {row['contradictions_merged']:.3f} / {row['related_merged']:.3f} / "
                f"{row['duplicates_merged']:.3f} / {row['contradictions_flagged']:.3f}"
            )
        weight = report["tuning"]["lexical_weight"]
        print()
        print(
            f"Tuning lexical_weight: recall@5 of fuse() on the tuning half ({weight['tuning_questions']} questions, "
            f"even lines) and the held-out half ({weight['held_out_questions']}, odd lines)"
        )
        for row in weight["sweep"]:
            print(f"    {row['lexical_weight']:.2f}: {row['tuning']:.3f} / {row['held_out']:.3f}")


def evaluate(model_dir: Path, *, tune: bool = False) -> dict[str, Any]:
    from memstore.semantic.embed import Embedder

    embedder = Embedder(str(model_dir))
    pairs = load_jsonl(PAIRS_FILE)
    memories = load_jsonl(MEMORIES_FILE)
    questions = load_jsonl(QUESTIONS_FILE)
    started = time.perf_counter()
    cosines = pair_cosines(embedder, pairs)
    rankings = recall_rankings(embedder, memories, questions)
    seconds = time.perf_counter() - started
    texts = len({p["a"] for p in pairs} | {p["b"] for p in pairs}) + len(memories) + len(questions)
    pairs_figures = pair_report(pairs, cosines)
    report: dict[str, Any] = {
        "model": embedder.model_name,
        "model_dir": str(model_dir),
        "texts_embedded": texts,
        "embed_seconds": round(seconds, 2),
        "pairs": pairs_figures,
        "pair_targets": {f"{name} (memstore)": ok for name, ok in meets(pairs_figures["memstore"]).items()},
        "recall": recall_report(rankings, len(memories)),
    }
    if tune:
        report["tuning"] = {"duplicate_at": tune_duplicate_at(pairs, cosines), "lexical_weight": tune_lexical_weight(rankings)}
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a local model directory (default: $MEMSTORE_TEST_MODEL_DIR or .model-cache/minilm)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--tune", action="store_true", help="also print how the defaults were chosen")
    parser.add_argument("--misses", action="store_true", help="also list the pairs memstore does not classify as labelled")
    args = parser.parse_args(argv)
    report = evaluate(resolve_model_dir(args.model), tune=args.tune)
    if args.json:
        print(json.dumps(report))
    else:
        print_text(report, show_misses=args.misses)
    ok = all(report["pair_targets"].values()) and all(report["recall"]["targets"].values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
