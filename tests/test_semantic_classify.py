"""The semantic layer: the pair classifier's rules, the fusion, the embedder, and the real model's figures.

The rule and fusion tests need no model (similarities are given). Every semantic claim runs the real
all-MiniLM-L6-v2 int8 model from a local directory: $MEMSTORE_TEST_MODEL_DIR, else
.model-cache/minilm in the repo, assembled by scripts/offline-model (from two PyPI packages; the
model itself is never fetched from a hub, and loading it is tested with the network switched off).
"""

from __future__ import annotations

import ast
import doctest
import importlib
import os
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from memstore import MemoryStore
from memstore.errors import MemstoreError
from memstore.recall.fusion import LEXICAL_WEIGHT, Candidate, Fused, coverage, familiarity, fuse, judged, word_weights
from memstore.semantic import Verdict, classify
from memstore.semantic.pairs import reversed_words, values
from scripts.eval_recall import reciprocal_rank_fusion  # the baseline the script measures fusion against

REPO = Path(__file__).resolve().parent.parent
MODEL_NAME = "onnx-sha256:8199be6f699a395f"  # the identity of the offline model's model.onnx


def kind(a: str, b: str, similarity: float = 0.95, **thresholds: float) -> str:
    return classify(a, b, similarity, **thresholds).kind


# -- numbers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The API rate limit is 100 requests per minute.", "The API rate limit is 500 requests per minute."),
        ("Deploy v2.1 to staging at 3pm.", "Deploy v2.1 to staging at 4pm."),
        ("The mobile app is at v2.1.", "The mobile app is at v2.2."),
        ("The service runs Python 3.11.", "The service runs Python 3.12."),
        ("The user has two kids.", "The user has three kids."),
        ("Standup is at 9:30am.", "Standup is at 10:30am."),
        ("The contract renews on 2025-03-01.", "The contract renews on 2025-06-01."),
        ("Free tier allows 1,000 calls a day.", "Free tier allows 10,000 calls a day."),
        ("The office is on the 4th floor.", "The office is on the 7th floor."),
    ],
)
def test_a_differing_number_is_a_contradiction_however_similar(a, b):
    verdict = classify(a, b, 0.99)
    assert verdict.kind == "contradiction"
    assert verdict.reason.startswith("a number differs")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Deploy v2.1 to staging at 3pm.", "The staging deploy of v2.1 is scheduled for 3 p.m."),
        ("The backup runs at 3pm.", "The backup runs at 15:00."),
        ("The backup runs at 3pm.", "The backup is scheduled for 3."),
        ("Standup is at 9:30am.", "Standup happens at 9:30 every morning."),
        ("Free tier allows 1,000 calls a day.", "The free tier allows 1000 calls per day."),
        ("Code reviews need two approvals.", "Every code review needs 2 approvals."),
    ],
)
def test_the_same_number_written_differently_is_no_contradiction(a, b):
    assert kind(a, b) == "duplicate"


def test_a_number_on_one_side_only_is_extra_detail_not_a_change():
    assert kind("Deploy v2.1 to staging at 3pm.", "Staging deploy is scheduled for 3pm.", 0.88) == "duplicate"


def test_digits_inside_a_name_are_not_numbers():
    assert kind("Webhooks are signed with HMAC-SHA256.", "Webhooks get an HMAC-SHA256 signature.") == "duplicate"


# -- negation ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "negated",
    [
        "User does not prefer dark mode.",
        "User doesn't prefer dark mode.",
        "User doesnt prefer dark mode.",
        "User never prefers dark mode.",
        "User no longer prefers dark mode.",
    ],
)
def test_a_negation_on_one_side_only_is_a_contradiction(negated):
    verdict = classify("User prefers dark mode.", negated, 0.95)
    assert verdict.kind == "contradiction"
    assert "negation" in verdict.reason


def test_a_negation_on_both_sides_is_no_contradiction():
    assert kind("The user doesn't eat meat.", "The user does not eat any meat.") == "duplicate"


# -- swapped words and names ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "what"),
    [
        ("User lives in Lisbon.", "User lives in Porto.", "name"),
        ("The user's manager is Tom Becker.", "The user's manager is Anna Schmidt.", "name"),
        ("User prefers dark mode.", "User prefers light mode.", "word"),
        ("Feature flag new-checkout is enabled in production.", "Feature flag new-checkout is disabled in production.", "word"),
        ("Logs are written in JSON format.", "Logs are written in plain text format.", "name"),
        # Articles and dating adverbs do not hide a swap.
        ("User lives in Lisbon.", "The user now lives in Porto.", "name"),
    ],
)
def test_the_same_sentence_with_one_word_or_name_swapped_is_a_contradiction(a, b, what):
    verdict = classify(a, b, 0.97)
    assert verdict.kind == "contradiction"
    assert f"one {what} swapped" in verdict.reason


def test_a_swap_of_three_words_is_a_different_sentence_not_a_swap():
    assert kind("The frontend is built with React and TypeScript.", "The backend is built with Django and Python.", 0.7) == "related"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Anna reports to Ben.", "Ben reports to Anna."),
        ("User prefers tea over coffee.", "User prefers coffee over tea."),
        ("The billing service depends on the auth service.", "The auth service depends on the billing service."),
        ("The meeting moved from Monday to Tuesday.", "The meeting moved from Tuesday to Monday."),
        ("Shifts run from 9 to 5.", "Shifts run from 5 to 9."),  # the same numbers, another order
    ],
)
def test_the_same_words_in_another_order_with_another_meaning_is_a_contradiction(a, b):
    verdict = classify(a, b, 0.98)
    assert verdict.kind == "contradiction"
    assert "the same words in another order" in verdict.reason


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("User likes tea and coffee.", "User likes coffee and tea."),
        ("The standup is at 9:30 every weekday.", "Every weekday the standup is at 9:30."),
        ("Dr. Chen is the user's dentist.", "The user's dentist is Dr. Chen."),
        ("Maria speaks Spanish, English and French.", "Maria speaks English, Spanish and French."),
        ("The review is at 3pm on Friday.", "The review is on Friday at 3pm."),
    ],
)
def test_words_trading_places_across_and_or_is_or_a_moved_phrase_say_the_same(a, b):
    assert reversed_words(a, b) is None
    assert classify(a, b, 0.95).kind == "duplicate"


@pytest.mark.parametrize(
    ("a", "b", "differs"),
    [
        ("The server timezone is Europe/Lisbon.", "Server timezone: Europe/Madrid.", "europe/lisbon vs europe/madrid"),
        ("Logs go to /var/log/app.", "The app logs to /var/log/api.", "/var/log/app vs /var/log/api"),
        ("Contact: maria@northwind.com", "Write to maria@contoso.com for anything.", "maria@northwind.com vs maria@contoso.com"),
        ("Join on user_id.", "The orders table is joined on account_id.", "user_id vs account_id"),
        ("Settings live in config.yaml", "The service reads config.toml at start.", "config.yaml vs config.toml"),
        ("The host is db-primary.internal:5432.", "Connect to db-replica.internal:5432.", "db-primary.internal:5432 vs db-replica.internal:5432"),
    ],
)
def test_a_differing_value_with_punctuation_inside_is_a_contradiction_whatever_else_differs(a, b, differs):
    verdict = classify(a, b, 0.9)
    assert verdict.kind == "contradiction"
    assert verdict.reason == f"a value differs: {differs}"


def test_values_are_words_with_punctuation_inside_and_numbers_are_not_values():
    assert values("Docs: https://docs.example.com/v1, or (see) notes.txt!") == {"https://docs.example.com/v1", "notes.txt"}
    assert values("Version 3.11 at 9:30 a.m., 1,000 users, e.g. U.S. offices.") == {"e.g", "u.s"}
    # The same value on both sides, or one side only, is no change.
    assert classify("Logs go to /var/log/app.", "The app writes its logs to /var/log/app.", 0.9).kind == "duplicate"
    assert classify("Logs go to /var/log/app.", "Logs are kept for 30 days.", 0.7).kind == "related"


# -- paraphrases and thresholds ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The user's name is Maria Lopez.", "User is called Maria Lopez."),
        ("Maria works at Northwind as a data engineer.", "Maria is a data engineer at Northwind."),
        ("Dr. Chen is the user's dentist.", "The user's dentist is Dr. Chen."),
        ("Emma, the user's daughter, starts school in September.", "User's daughter Emma begins school this September."),
    ],
)
def test_a_reworded_sentence_with_a_high_cosine_is_a_duplicate(a, b):
    verdict = classify(a, b, 0.93)
    assert verdict == Verdict("duplicate", verdict.reason)
    assert "0.930" in verdict.reason


def test_a_sentence_with_words_added_is_related_never_merged():
    verdict = classify("User's manager is Tom Becker.", "User's skip-level manager is Tom Becker.", 0.97)
    assert verdict.kind == "related"
    assert "skip level" in verdict.reason


def test_thresholds_decide_between_unrelated_related_and_duplicate():
    a, b = "The user's name is Maria Lopez.", "User is called Maria Lopez."
    assert kind(a, b, 0.60) == "unrelated"
    assert kind(a, b, 0.70) == "related"
    assert kind(a, b, 0.85) == "duplicate"
    assert kind(a, b, 0.85, duplicate_at=0.9) == "related"
    assert kind(a, b, 0.70, related_at=0.75) == "unrelated"
    # A contradiction is only looked for among candidates (cosine >= related_at).
    assert kind("User lives in Lisbon.", "User lives in Porto.", 0.55) == "unrelated"


def test_related_at_above_duplicate_at_is_refused():
    with pytest.raises(ValueError):
        classify("a", "b", 0.9, duplicate_at=0.7, related_at=0.8)


# -- fusion --------------------------------------------------------------------------------------


def _candidates(*rows):
    return [Candidate(memory_id, cosine, coverage_, found_by) for memory_id, cosine, coverage_, found_by in rows]


def test_a_weak_word_match_does_not_bury_what_the_vectors_found():
    # "use" matched a generic word of the question, a small share of its weight.
    candidates = _candidates(
        ("prefers-dark", 0.62, 0.0, ("semantic",)), ("prefers-fonts", 0.45, 0.0, ("semantic",)),
        ("uses-jira", 0.20, 0.15, ("lexical",)), ("uses-slack", 0.18, 0.15, ("lexical",)),
    )  # fmt: skip
    fused = fuse(candidates, 2)
    assert [r.id for r in fused] == ["prefers-dark", "prefers-fonts"]
    assert [r.found_by for r in fused] == [("semantic",), ("semantic",)]
    # Plain RRF gives the generic word match a place in the top 2.
    lexical, semantic = [("uses-jira", 9.0), ("uses-slack", 8.0)], [("prefers-dark", 0.62), ("prefers-fonts", 0.45), ("other", 0.30)]
    assert "uses-jira" in [r.id for r in reciprocal_rank_fusion(lexical, semantic, 2)]


def test_a_memory_holding_the_rare_words_of_the_question_rises_above_its_topic():
    # "What breed is Maya's dog Biscuit?": the turn naming Biscuit covers most of the weight.
    candidates = _candidates(
        ("biscuit-is-a-beagle", 0.41, 0.80, ("lexical", "semantic")),
        ("dog-walks", 0.55, 0.10, ("semantic",)), ("dog-park", 0.52, 0.10, ("semantic",)),
    )  # fmt: skip
    assert [r.id for r in fuse(candidates, 3)] == ["biscuit-is-a-beagle", "dog-walks", "dog-park"]


def test_coverage_weighs_each_word_by_how_rare_it_is():
    weights = word_weights(["biscuit", "dog"], {"biscuit": 2, "dog": 40}, 200)
    assert weights["biscuit"] > weights["dog"] > 0
    assert coverage(weights, "Biscuit chewed my sock") > coverage(weights, "The dog park was busy") > 0
    assert coverage(weights, "Biscuit the dog") == 1.0 and coverage(weights, "nothing here") == 0.0
    # A word most memories hold weighs next to nothing, as in BM25.
    assert word_weights(["the"], {"the": 190}, 200)["the"] == 1e-6


def test_a_question_in_words_the_namespace_never_uses_leaves_the_vectors_in_charge():
    """"When was her last lockjaw jab?" against "The user had a tetanus booster in 2023": the
    namespace holds only "last", so whatever holds it is an incidental match, worth a quarter of
    what the same coverage is worth for a question in the namespace's own words."""
    words = ["last", "lockjaw", "jab"]
    holding = {"last": 3, "lockjaw": 0, "jab": 0}
    weights = word_weights(words, holding, 300)
    assert familiarity(weights, holding) < 0.35
    assert familiarity(weights, {"last": 3, "lockjaw": 1, "jab": 2}) == 1.0
    rows = {"tetanus": {"text": "The user had a tetanus booster in 2023."}, "backup": {"text": "Restoring a backup was last tested on May 8."}}
    candidates = judged(rows, {"backup"}, {"tetanus", "backup"}, {"tetanus": 0.30, "backup": 0.20}, weights, holding)
    assert [r.id for r in fuse(candidates, 2)] == ["tetanus", "backup"]
    # Had the namespace used the question's words, the same match would have won.
    familiar = judged(rows, {"backup"}, {"tetanus", "backup"}, {"tetanus": 0.30, "backup": 0.20}, weights, {"last": 3, "lockjaw": 1, "jab": 1})
    assert [r.id for r in fuse(familiar, 2)][0] == "backup"
    assert familiarity({}, {}) == 0.0


def test_found_by_names_every_ranking_that_holds_the_memory():
    fused = fuse(_candidates(("both", 0.6, 0.5, ("lexical", "semantic")), ("words", 0.3, 0.5, ("lexical",)),
                             ("vectors", 0.5, 0.0, ("semantic",))), 3)  # fmt: skip
    assert {r.id: r.found_by for r in fused} == {
        "both": ("lexical", "semantic"), "words": ("lexical",), "vectors": ("semantic",),
    }


def test_a_memory_without_a_vector_yet_competes_on_its_words():
    fused = fuse(_candidates(("fresh", None, 1.0, ("lexical",)), ("m1", 0.70, 0.0, ("semantic",)), ("m2", 0.30, 0.0, ("semantic",))), 3)
    assert [r.id for r in fused] == ["fresh", "m1", "m2"]
    assert fused[0].score == 0.30 + LEXICAL_WEIGHT  # the lowest cosine of the others, plus its words
    assert fuse([], 5) == [] and fuse(_candidates(("m1", 0.7, 0.0, ())), 0) == []


def test_fusion_is_deterministic_and_breaks_ties_by_id():
    candidates = _candidates(("z", 0.5, 0.0, ()), ("b", 0.5, 0.0, ()), ("m", 0.5, 0.0, ()))
    assert [r.id for r in fuse(candidates, 3)] == ["b", "m", "z"]
    assert fuse(candidates, 3) == fuse(list(reversed(candidates)), 3)
    assert all(isinstance(r, Fused) for r in fuse(candidates, 3))


def test_docstring_examples():
    for name in ("memstore.semantic.pairs", "memstore.recall.fusion"):
        failed, attempted = doctest.testmod(importlib.import_module(name))
        assert failed == 0 and attempted > 0


def test_importing_the_package_loads_neither_fastembed_nor_numpy():
    code = "import sys, memstore.semantic; print(sorted({'fastembed', 'numpy', 'onnxruntime'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


# -- the embedder, with the real model -----------------------------------------------------------


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The offline model directory: $MEMSTORE_TEST_MODEL_DIR, else assembled into .model-cache/."""
    chosen = os.environ.get("MEMSTORE_TEST_MODEL_DIR")
    if chosen:
        return Path(chosen)
    target = REPO / ".model-cache" / "minilm"
    subprocess.run([str(REPO / "scripts" / "offline-model"), str(target)], check=True)
    return target


@pytest.fixture(scope="session")
def embedder(model_dir):
    from memstore.vectors.embedder import Embedder

    return Embedder(model_dir)


def test_the_offline_model_embeds_to_unit_vectors_of_384(embedder):
    import numpy as np

    vectors = embedder.embed(text for text in ["User prefers dark mode.", "word " * 600, ""])
    assert embedder.dim == 384 and vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)
    assert embedder.model_name == MODEL_NAME
    assert embedder.source == str(Path(embedder.source).resolve())


@pytest.mark.parametrize("optimized", [True, False])
def test_the_lean_query_model_embeds_what_fastembed_embeds(embedder, model_dir, optimized):
    """Recall embeds its query without fastembed (memstore.vectors.query_model): the same vectors."""
    import numpy as np

    from memstore.vectors.query_model import QueryModel

    lean = QueryModel(model_dir, optimized=optimized)
    texts = ["What breed is Maya's dog Biscuit?", "dark mode", "word " * 600, "", "Ünïcödé, emoji 🙂, 1,000 rpm"]
    for text, expected in zip(texts, embedder.embed(texts)):
        got = lean.embed(text)
        assert got.dtype == np.float32 and got.shape == (384,)
        assert float(np.max(np.abs(got - expected))) < 1e-5


def test_a_recall_process_loads_neither_fastembed_nor_the_batch_embedder(tmp_path, model_dir):
    db = tmp_path / "s.db"
    with MemoryStore(db) as store:
        store.add("User prefers dark mode.", id="m1")
        store.enable_embeddings(model_dir)
        store.sync_embeddings()
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom memstore.cli import cli\n"
        f"result = CliRunner().invoke(cli, ['--db', {str(db)!r}, 'recall', 'colour scheme of the screen', '--no-touch'])\n"
        "assert 'm1' in result.output and 'semantic' in result.output, result.output\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastembed', 'onnxruntime', 'huggingface_hub')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    loaded = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert "onnxruntime" in loaded and not any(m.startswith(("fastembed", "huggingface_hub")) for m in loaded)


def test_a_paraphrase_is_closer_than_an_unrelated_memory(embedder):
    anchor, paraphrase, unrelated = embedder.embed(
        ["User prefers dark mode.", "The user likes the dark theme.", "Backups run nightly at 2am."]
    )
    assert anchor @ paraphrase > anchor @ unrelated + 0.3


def test_vectors_round_trip_through_little_endian_blobs(embedder):
    import numpy as np

    from memstore.vectors.embedder import from_blob, from_blobs, to_blob

    vectors = embedder.embed(["User lives in Lisbon.", "User lives in Porto."])
    blob = to_blob(vectors[0])
    assert len(blob) == 4 * 384
    assert struct.unpack("<384f", blob) == tuple(float(x) for x in vectors[0])
    assert np.array_equal(from_blob(blob, 384), vectors[0])
    assert np.array_equal(from_blobs([to_blob(v) for v in vectors], 384), vectors)
    assert to_blob([1.0, 2.5]) == struct.pack("<2f", 1.0, 2.5)
    with pytest.raises(MemstoreError):
        from_blob(blob[:-4], 384)


def test_a_model_directory_loads_with_the_network_switched_off(model_dir, monkeypatch):
    from memstore.vectors.embedder import Embedder

    def refuse(*args, **kwargs):
        raise AssertionError("the model tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    assert Embedder(model_dir).embed(["offline"]).shape == (1, 384)


def test_a_bad_model_directory_is_a_clear_error(tmp_path):
    from memstore.vectors.embedder import Embedder

    with pytest.raises(MemstoreError, match="no model directory"):
        Embedder(tmp_path / "missing")
    (tmp_path / "model.onnx").write_bytes(b"")
    with pytest.raises(MemstoreError, match="lacks tokenizer.json, tokenizer_config.json"):
        Embedder(tmp_path)


def test_a_missing_extra_says_what_to_install(model_dir, monkeypatch):
    from memstore.vectors.embedder import Embedder

    monkeypatch.setitem(sys.modules, "fastembed", None)  # import fastembed now raises ImportError
    with pytest.raises(MemstoreError, match=r"pip install 'memstore-agents\[semantic\]'"):
        Embedder(model_dir).embed(["x"])


# -- the labelled sets, with the real model ------------------------------------------------------


@pytest.fixture(scope="session")
def evaluation(model_dir):
    """scripts/semantic_eval.py's report, computed once: the tests assert what the script prints."""
    from scripts import semantic_eval

    return semantic_eval.evaluate(model_dir)


def test_the_labelled_set_is_big_and_varied_enough():
    import json

    with open(REPO / "tests" / "data" / "semantic_pairs.jsonl", encoding="utf-8") as f:
        pairs = [json.loads(line) for line in f]
    assert len(pairs) >= 150
    assert {p["kind"] for p in pairs} == {
        "paraphrase", "changed_value", "negation", "swapped_name", "swapped_word", "related", "reversed_relation", "punctuated_value",
    }  # fmt: skip
    assert all(p.get("split", "test") in ("tune", "test") for p in pairs)
    assert all(p["label"] in ("duplicate", "contradiction", "related") for p in pairs)


def test_the_classifier_meets_the_pair_targets(evaluation):
    figures = evaluation["pairs"]["memstore"]
    assert figures["contradictions_merged"]["rate"] <= 0.05
    assert figures["related_merged"]["rate"] <= 0.02
    assert figures["duplicates_merged"]["rate"] >= 0.50
    assert figures["contradictions_flagged"]["rate"] >= 0.70


def test_the_plain_cosine_rule_merges_contradictions(evaluation):
    """Why the texts must decide: cosine >= 0.90 alone merges many contradicting pairs."""
    assert evaluation["pairs"]["plain"]["contradictions_merged"]["rate"] > 0.05
