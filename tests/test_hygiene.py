"""The hygiene report: the specification's worked example through the CLI, staleness, contradiction
flags, and the candidate path (prefix-filtered similarity join) against the exhaustive pairwise pass."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from memstore.cli import cli
from memstore.hygiene import (
    DAY_MS,
    SimilarPair,
    days_idle,
    jaccard,
    similar_pairs,
    staleness,
    token_set,
)
from memstore.io import iso_to_ms
from scripts.bench.yardstick import exhaustive_pairs

from .strategies import examples
from .test_cli import SEED_HYGIENE_FIXTURE

NOW = "2026-10-12"
NOW_MS = 1791763200000  # 2026-10-12T00:00:00Z


# -- 1. the worked example of the specification, through the real command line ------------------

SEED_STALENESS = {  # id: (staleness, days idle, recall_count, pinned), as the specification gives them
    "m1": (0.006, 2, 6, False),
    "m2": (0.056, 10, 0, False),
    "m3": (0.029, 7, 2, False),
    "m4": (1.0, 1015, 0, False),
    "m5": (0.046, 11, 3, False),
    "m6": (0.042, 10, 1, False),
    "m7": (1.0, 863, 0, True),
}


def invoke(db, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def import_fixture(tmp_path, db, lines: list[str]) -> None:
    path = tmp_path / f"{db.stem}.jsonl"
    path.write_text("".join(lines))
    assert invoke(db, "import", str(path)) == f"imported {len(lines)} memories (0 already stored)\n"


@pytest.fixture
def seed_db(tmp_path, db_path):
    import_fixture(tmp_path, db_path, SEED_HYGIENE_FIXTURE.splitlines(keepends=True))
    return db_path


def test_now_is_midnight_utc_of_the_reference_date():
    assert iso_to_ms(NOW) == NOW_MS


def test_worked_example_report_gives_the_specifications_figures(seed_db):
    report = json.loads(invoke(seed_db, "report", "--now", NOW, "--json"))
    assert report["namespace"] == "default"
    assert report["now"] == NOW_MS
    assert report["near_duplicate_threshold"] == 0.8
    assert report["total_records"] == 7
    assert report["total_text_chars"] == 319
    assert report["oldest_days_idle"] == 1015
    assert report["median_days_idle"] == 10
    assert report["never_recalled"] == 3
    assert report["pinned"] == 1
    assert report["exact_duplicate_groups"] == [["m1", "m2"]]
    assert report["near_duplicate_pairs"] == [
        {"ids": ["m1", "m3"], "jaccard": 0.818},
        {"ids": ["m2", "m3"], "jaccard": 0.818},
        {"ids": ["m5", "m6"], "jaccard": 0.875},
    ]
    assert report["contradiction_flags"] == [{"ids": ["m5", "m6"], "jaccard": 0.875, "reason": "negation differs"}]
    by_id = {s["id"]: (s["staleness"], s["days_idle"], s["recall_count"], s["pinned"]) for s in report["staleness"]}
    assert len(report["staleness"]) == 7
    assert by_id == SEED_STALENESS


def test_worked_example_staleness_is_listed_stalest_first_then_by_id(seed_db):
    report = json.loads(invoke(seed_db, "report", "--now", NOW, "--json"))
    assert [s["id"] for s in report["staleness"]] == ["m4", "m7", "m2", "m5", "m6", "m3", "m1"]


def line_with(output: str, *parts: str) -> bool:
    return any(all(part in line for part in parts) for line in output.splitlines())


def test_worked_example_human_report_mentions_every_figure(seed_db):
    output = invoke(seed_db, "report", "--now", NOW)
    assert line_with(output, "7 memories", "319 characters", "1 pinned", "3 never recalled")
    assert line_with(output, "oldest 1015", "median 10")
    assert line_with(output, "exact duplicate groups: 1")
    assert line_with(output, "m1, m2")
    assert line_with(output, "near-duplicate pairs", "0.8", ": 3")
    assert line_with(output, "m1", "m3", "0.818")
    assert line_with(output, "m2", "m3", "0.818")
    assert line_with(output, "m5", "m6", "0.875")
    assert line_with(output, "contradictions", ": 1")
    assert line_with(output, "m5", "m6", "negation differs", "0.875")
    for memory_id, (score, days, recalls, pinned) in SEED_STALENESS.items():
        assert line_with(output, f"{memory_id} ", f" {score} ", f"{days} days idle", f"{recalls} recalls"), memory_id
    assert line_with(output, "m7", "863 days idle", "pinned")
    assert not line_with(output, "m4", "pinned")


def test_worked_example_report_is_byte_identical_across_runs_and_import_orders(seed_db, tmp_path):
    first = invoke(seed_db, "report", "--now", NOW, "--json")
    second = invoke(seed_db, "report", "--now", NOW, "--json")
    assert first == second
    reversed_db = tmp_path / "reversed.db"
    import_fixture(tmp_path, reversed_db, SEED_HYGIENE_FIXTURE.splitlines(keepends=True)[::-1])
    assert invoke(reversed_db, "report", "--now", NOW, "--json") == first
    assert invoke(seed_db, "report", "--now", NOW) == invoke(reversed_db, "report", "--now", NOW)


def test_report_near_threshold_option_reaches_the_report(seed_db):
    report = json.loads(invoke(seed_db, "report", "--now", NOW, "--near-threshold", "0.85", "--json"))
    assert report["near_duplicate_threshold"] == 0.85
    assert report["near_duplicate_pairs"] == [{"ids": ["m5", "m6"], "jaccard": 0.875}]
    assert report["contradiction_flags"] == [{"ids": ["m5", "m6"], "jaccard": 0.875, "reason": "negation differs"}]


# -- 2. staleness -----------------------------------------------------------------------------


def touched(days_ago: float, recall_count: int | None = 0, **fields) -> dict:
    return {"id": "s", "created_at": NOW_MS - round(days_ago * DAY_MS), "recall_count": recall_count, **fields}


@pytest.mark.parametrize(
    ("days", "expected"),
    [(0, 0.0), (90, 0.5), (179, 0.994), (180, 1.0), (181, 1.0), (1015, 1.0), (100_000, 1.0)],
)
def test_staleness_grows_linearly_and_caps_at_180_days(days, expected):
    assert staleness(touched(days), NOW_MS) == expected


@pytest.mark.parametrize(
    ("recalls", "factor"),
    [(None, 1.0), (0, 1.0), (1, 0.75), (2, 0.75), (4, 0.75), (5, 0.5), (6, 0.5), (1000, 0.5)],
)
def test_staleness_is_scaled_by_how_often_a_memory_was_recalled(recalls, factor):
    assert staleness(touched(400, recalls), NOW_MS) == factor
    assert staleness(touched(90, recalls), NOW_MS) == 0.5 * factor


def test_last_recall_counts_as_the_last_touch_before_update_and_creation():
    memory = {
        "id": "s",
        "created_at": NOW_MS - 300 * DAY_MS,
        "updated_at": NOW_MS - 100 * DAY_MS,
        "last_recalled_at": NOW_MS - 10 * DAY_MS,
        "recall_count": 0,
    }
    assert days_idle(memory, NOW_MS) == 10
    assert days_idle({**memory, "last_recalled_at": None}, NOW_MS) == 100
    assert days_idle({**memory, "last_recalled_at": None, "updated_at": None}, NOW_MS) == 300
    assert staleness({**memory, "last_recalled_at": None}, NOW_MS) == round(100 / 180, 3)


def test_last_touch_is_by_precedence_not_the_most_recent_date():
    memory = {
        "id": "s",
        "created_at": NOW_MS - 300 * DAY_MS,
        "updated_at": NOW_MS - 5 * DAY_MS,
        "last_recalled_at": NOW_MS - 50 * DAY_MS,
    }
    assert days_idle(memory, NOW_MS) == 50


def test_a_memory_without_any_date_is_an_error():
    with pytest.raises(ValueError, match="'s'"):
        days_idle({"id": "s", "created_at": None}, NOW_MS)


@pytest.mark.parametrize("days_ahead", [1 / DAY_MS, 0.5, 1, 400])
def test_a_touch_in_the_future_counts_as_zero_days_idle(days_ahead):
    memory = touched(-days_ahead)
    assert days_idle(memory, NOW_MS) == 0
    assert staleness(memory, NOW_MS) == 0.0


def test_days_idle_counts_whole_days_only():
    assert days_idle(touched(1.999), NOW_MS) == 1
    assert days_idle(touched(2), NOW_MS) == 2
    assert days_idle(touched(0.999), NOW_MS) == 0


@pytest.mark.parametrize(
    ("days", "recalls", "expected"),
    [(1, 0, 0.006), (2, 6, 0.006), (7, 2, 0.029), (10, 0, 0.056), (10, 1, 0.042), (11, 3, 0.046), (100, 0, 0.556)],
)
def test_staleness_is_rounded_to_three_places(days, recalls, expected):
    assert staleness(touched(days, recalls), NOW_MS) == expected


def test_staleness_matches_the_formula_for_every_day_and_recall_band():
    for recalls, factor in ((0, Fraction(1)), (3, Fraction(3, 4)), (7, Fraction(1, 2))):
        for days in range(0, 400):
            exact = min(Fraction(days, 180), Fraction(1)) * factor
            score = staleness(touched(days, recalls), NOW_MS)
            assert abs(Fraction(score) - exact) <= Fraction(1, 2000) + Fraction(1, 10**12), (days, recalls, score)
            assert score == round(score, 3)


# -- 3. contradiction flags -------------------------------------------------------------------


def report_of(store, *records: dict, **options) -> dict:
    store.add_many([{"created_at": NOW_MS - DAY_MS, **record} for record in records])
    return store.report(now=NOW_MS, **options)


@pytest.mark.parametrize("negation", ["not", "no", "never", "false", "NOT", "Never,"])
def test_a_negation_word_on_exactly_one_side_of_a_similar_pair_is_flagged(store, negation):
    report = report_of(
        store,
        {"id": "a", "text": "the deploy window is on friday"},
        {"id": "b", "text": f"the deploy window is {negation} on friday"},
    )
    assert report["contradiction_flags"] == [{"ids": ["a", "b"], "jaccard": 0.857, "reason": "negation differs"}]


def test_negation_flag_includes_jaccard_exactly_one_half(store):
    report = report_of(
        store,
        {"id": "a", "text": "alpha beta gamma not"},
        {"id": "b", "text": "alpha beta gamma delta epsilon"},
    )
    assert report["contradiction_flags"] == [{"ids": ["a", "b"], "jaccard": 0.5, "reason": "negation differs"}]
    assert report["near_duplicate_pairs"] == []


def test_negation_below_jaccard_one_half_is_not_flagged(store):
    report = report_of(
        store,
        {"id": "a", "text": "alpha beta not"},
        {"id": "b", "text": "alpha beta gamma delta"},  # 2 shared of 5: 0.4
    )
    assert report["contradiction_flags"] == []


def test_negation_on_both_sides_is_not_flagged(store):
    report = report_of(
        store,
        {"id": "a", "text": "the office wifi is not open"},
        {"id": "b", "text": "the office wifi is never open"},
        {"id": "c", "text": "the office wifi is not open to guests"},
    )
    assert report["contradiction_flags"] == []
    assert report["near_duplicate_pairs"] == []  # a/c: 6/8 = 0.75 < 0.8


def test_words_merely_containing_a_negation_are_not_negations(store):
    report = report_of(
        store,
        {"id": "a", "text": "nothing is open today"},
        {"id": "b", "text": "everything is open today"},  # 3 of 5 shared: 0.6
        {"id": "c", "text": "knot notes are open today"},
    )
    assert report["contradiction_flags"] == []


def test_same_fact_key_with_different_text_is_flagged_even_when_the_wording_is_unrelated(store):
    report = report_of(
        store,
        {"id": "z", "text": "Vendor price is forty dollars per seat", "fact_key": "vendor-price"},
        {"id": "a", "text": "Seats now cost 55 USD", "fact_key": "vendor-price"},
        {"id": "q", "text": "Seats now cost 55 USD", "fact_key": "other"},
    )
    assert report["contradiction_flags"] == [
        {"ids": ["a", "z"], "jaccard": 0.0, "reason": "same fact_key, different text"}
    ]


def test_every_pair_of_a_fact_key_with_different_texts_is_flagged(store):
    report = report_of(
        store,
        {"id": "k1", "text": "standup is at nine", "fact_key": "standup"},
        {"id": "k2", "text": "standup is at ten", "fact_key": "standup"},
        {"id": "k3", "text": "standup moved to the afternoon", "fact_key": "standup"},
        {"id": "k4", "text": "Standup is at nine.", "fact_key": "standup"},  # same norm_key as k1
    )
    assert report["contradiction_flags"] == [
        {"ids": ["k1", "k2"], "jaccard": 0.6, "reason": "same fact_key, different text"},
        {"ids": ["k1", "k3"], "jaccard": 0.125, "reason": "same fact_key, different text"},
        {"ids": ["k2", "k3"], "jaccard": 0.125, "reason": "same fact_key, different text"},
        {"ids": ["k2", "k4"], "jaccard": 0.6, "reason": "same fact_key, different text"},
        {"ids": ["k3", "k4"], "jaccard": 0.125, "reason": "same fact_key, different text"},
    ]


def test_same_fact_key_with_the_same_normalised_text_is_a_duplicate_not_a_contradiction(store):
    report = report_of(
        store,
        {"id": "a", "text": "Vendor price is forty dollars.", "fact_key": "vendor-price"},
        {"id": "b", "text": "  vendor PRICE is forty dollars ", "fact_key": "vendor-price"},
    )
    assert report["contradiction_flags"] == []
    assert report["exact_duplicate_groups"] == [["a", "b"]]
    assert report["near_duplicate_pairs"] == []


def test_a_pair_flagged_by_negation_and_by_fact_key_is_listed_once(store):
    report = report_of(
        store,
        {"id": "m5", "text": "The office wifi is not open to guests", "fact_key": "wifi"},
        {"id": "m6", "text": "The office wifi is open to guests", "fact_key": "wifi"},
    )
    assert report["contradiction_flags"] == [{"ids": ["m5", "m6"], "jaccard": 0.875, "reason": "negation differs"}]


def test_memories_without_a_fact_key_are_not_flagged_for_sharing_none(store):
    report = report_of(
        store,
        {"id": "a", "text": "standup is at nine"},
        {"id": "b", "text": "lunch is at noon"},
    )
    assert report["contradiction_flags"] == []


# -- 4. the candidate path against the exhaustive pairwise pass --------------------------------

THRESHOLDS = [0.5, 0.55, 0.6, 2 / 3, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]


def generated_texts(count: int = 3000, seed: int = 20261012) -> list[str]:
    """Memories over a Zipf-ish vocabulary, ~30 % near-duplicate variants, some token-less and one-word texts."""
    rng = random.Random(seed)
    vocabulary = [f"w{rank}" for rank in range(300)]
    weights = [1 / (rank + 1) for rank in range(300)]

    def words(k: int) -> list[str]:
        return rng.choices(vocabulary, weights, k=k)

    texts: list[str] = []
    while len(texts) < count:
        roll = rng.random()
        if texts and roll < 0.30:
            variant = rng.choice(texts).split()
            for _ in range(rng.randint(1, 2)):
                edit = rng.choice(["drop", "add", "replace"])
                if edit == "drop" and variant:
                    del variant[rng.randrange(len(variant))]
                elif edit == "replace" and variant:
                    variant[rng.randrange(len(variant))] = words(1)[0]
                else:
                    variant.insert(rng.randint(0, len(variant)), words(1)[0])
            texts.append(" ".join(variant))
        elif roll < 0.33:
            texts.append(rng.choice(["", "   ", "...", "?!", " - ; : ", "___"]))
        elif roll < 0.37:
            texts.append(rng.choice(["", "Note: ", "- "]) + words(1)[0] + rng.choice(["", ".", "!"]))
        else:
            picked = words(rng.randint(2, 14))
            texts.append(" ".join(w.upper() if rng.random() < 0.05 else w + ("," if rng.random() < 0.1 else "") for w in picked))
    return texts


@pytest.fixture(scope="module")
def corpus() -> tuple[list[frozenset[str]], list[SimilarPair]]:
    """The generated token sets and every pair with Jaccard >= 0.5, found by comparing all pairs once."""
    sets = [token_set(text) for text in generated_texts()]
    return sets, exhaustive_pairs(sets, 0.5)


def test_generated_corpus_exercises_every_case(corpus):
    sets, base = corpus
    assert len(sets) == 3000
    assert sum(1 for s in sets if not s) >= 50
    assert sum(1 for s in sets if len(s) == 1) >= 50
    assert max(len(s) for s in sets) >= 12
    similarities = {pair.similarity for pair in base}
    for threshold in THRESHOLDS:
        assert any(pair.similarity >= threshold for pair in base), threshold
    for exact in (0.5, 2 / 3, 0.75, 0.8, 1.0):  # pairs sitting exactly on a threshold
        assert exact in similarities, exact
    nonempty_identical = [p for p in base if p.similarity == 1.0 and sets[p.first]]
    assert nonempty_identical
    assert len(base) > 1000


def test_exhaustive_yardstick_agrees_with_plain_set_arithmetic(corpus):
    sets, base = corpus

    def exact(a, b) -> Fraction:
        return Fraction(1) if not a and not b else Fraction(len(a & b), len(a | b))

    listed = {(p.first, p.second) for p in base}
    assert len(listed) == len(base)
    for pair in base:
        a, b = sets[pair.first], sets[pair.second]
        assert pair.first < pair.second
        assert pair.similarity == (len(a & b) / len(a | b) if a or b else 1.0)
        assert exact(a, b) >= Fraction(1, 2)
    rng = random.Random(7)
    for _ in range(20_000):
        i, j = sorted(rng.sample(range(len(sets)), 2))
        assert ((i, j) in listed) == (exact(sets[i], sets[j]) >= Fraction(1, 2)), (i, j)


@pytest.mark.parametrize("threshold", THRESHOLDS, ids=lambda t: f"{t:.3f}")
def test_candidate_path_finds_exactly_the_exhaustive_pairs_on_3000_memories(corpus, threshold):
    sets, base = corpus
    expected = [pair for pair in base if pair.similarity >= threshold]
    found = similar_pairs(sets, threshold)
    missing = set(expected) - set(found)
    extra = set(found) - set(expected)
    assert not missing, f"{len(missing)} pairs missed, e.g. {sorted(missing, key=lambda p: (p.first, p.second))[:5]}"
    assert not extra, f"{len(extra)} pairs invented, e.g. {sorted(extra, key=lambda p: (p.first, p.second))[:5]}"
    assert found == expected  # same order, same similarity values


@pytest.mark.parametrize("threshold", [0.5, 2 / 3, 0.8, 1.0], ids=lambda t: f"{t:.3f}")
def test_exhaustive_pass_at_a_higher_threshold_is_the_filtered_lower_one(corpus, threshold):
    sets, base = corpus
    subset = sets[:700]
    inside = [p for p in exhaustive_pairs(subset, 0.5) if p.similarity >= threshold]
    assert exhaustive_pairs(subset, threshold) == inside
    assert similar_pairs(subset, threshold) == inside


TOKENS = st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h"])
single_token_sets = st.one_of(
    st.just(frozenset()),
    st.frozensets(TOKENS, min_size=1, max_size=1),
    st.frozensets(TOKENS, max_size=7),
)


@st.composite
def token_set_lists(draw) -> list[frozenset[str]]:
    """Up to 25 small token sets, including empty and one-token sets, plus repeated copies of some."""
    sets = draw(st.lists(single_token_sets, max_size=25))
    if sets:
        for _ in range(draw(st.integers(0, 5))):
            sets.insert(draw(st.integers(0, len(sets))), draw(st.sampled_from(sets)))
    return sets


thresholds = st.one_of(
    st.floats(min_value=0.5, max_value=1.0),
    st.sampled_from([Fraction(n, d) for d in range(1, 9) for n in range(1, d + 1) if 2 * n >= d]).map(float),
)


@settings(max_examples=examples(400), deadline=None)
@given(sets=token_set_lists(), threshold=thresholds)
def test_candidate_path_equals_exhaustive_pass_on_random_small_inputs(sets, threshold):
    assert similar_pairs(sets, threshold) == exhaustive_pairs(sets, threshold)


FRACTIONS = sorted({(o, u) for u in range(1, 16) for o in range(1, u + 1) if 2 * o >= u})


@pytest.mark.parametrize(("overlap", "union"), FRACTIONS, ids=lambda v: str(v))
def test_a_pair_exactly_at_a_fractional_threshold_is_found(overlap, union):
    # x and y share `overlap` tokens that are common elsewhere (so they sort last in every prefix);
    # their own tokens are rare and fill the prefixes first.
    shared = [f"s{k}" for k in range(overlap)]
    only_x = [f"x{k}" for k in range((union - overlap) // 2)]
    only_y = [f"y{k}" for k in range(union - overlap - len(only_x))]
    x = frozenset(shared + only_x)
    y = frozenset(shared + only_y)
    fillers = [frozenset({token, f"{token}_{n}_1", f"{token}_{n}_2", f"{token}_{n}_3"}) for token in shared for n in range(3)]
    sets = [*fillers[: len(fillers) // 2], x, *fillers[len(fillers) // 2 :], y]
    ix, iy = len(fillers) // 2, len(sets) - 1
    threshold = overlap / union
    assert jaccard(x, y) == threshold
    found = similar_pairs(sets, threshold)
    assert SimilarPair(ix, iy, threshold) in found
    assert found == exhaustive_pairs(sets, threshold)
    above = math.nextafter(threshold, 2.0)
    if above <= 1.0:
        assert all((p.first, p.second) != (ix, iy) for p in similar_pairs(sets, above))
        assert similar_pairs(sets, above) == exhaustive_pairs(sets, above)


def test_four_of_five_tokens_is_a_near_duplicate_at_four_fifths():
    sets = [frozenset("abcd"), frozenset("wxyz"), frozenset("abcde"), frozenset("e")]
    assert similar_pairs(sets, 4 / 5) == [SimilarPair(0, 2, 0.8)]
    assert similar_pairs(sets, 0.8) == exhaustive_pairs(sets, 0.8)


def test_empty_token_sets_pair_only_with_each_other():
    sets = [frozenset(), frozenset("a"), frozenset(), frozenset("ab"), frozenset()]
    assert similar_pairs(sets, 1.0) == [SimilarPair(0, 2, 1.0), SimilarPair(0, 4, 1.0), SimilarPair(2, 4, 1.0)]
    assert similar_pairs(sets, 0.5) == exhaustive_pairs(sets, 0.5)


@pytest.mark.parametrize("threshold", [0, -0.1, 1.0000001, 2])
def test_similar_pairs_rejects_a_threshold_outside_zero_to_one(threshold):
    with pytest.raises(ValueError, match="threshold"):
        similar_pairs([frozenset("a")], threshold)


# -- 5. MemoryStore.report: threshold and namespace ---------------------------------------------

THRESHOLD_RECORDS = [
    {"id": "a", "text": "alpha beta gamma delta epsilon zeta eta theta iota kappa"},
    {"id": "b", "text": "alpha beta gamma delta epsilon zeta eta theta iota lambda"},  # vs a: 9/11
    {"id": "c", "text": "alpha beta gamma delta epsilon zeta eta theta mu nu"},  # vs a, b: 8/12
    {"id": "w1", "text": "The office wifi is not open to guests"},
    {"id": "w2", "text": "The office wifi is open to guests"},  # vs w1: 7/8
    {"id": "h1", "text": "hello-world"},
    {"id": "h2", "text": "hello world"},  # different norm_key, same tokens: 1.0
]


@pytest.mark.parametrize(
    ("near_threshold", "expected"),
    [
        (1.0, [(["h1", "h2"], 1.0)]),
        (0.9, [(["h1", "h2"], 1.0)]),
        (0.8, [(["a", "b"], 0.818), (["h1", "h2"], 1.0), (["w1", "w2"], 0.875)]),
        (0.6, [(["a", "b"], 0.818), (["a", "c"], 0.667), (["b", "c"], 0.667), (["h1", "h2"], 1.0), (["w1", "w2"], 0.875)]),
        (0.5, [(["a", "b"], 0.818), (["a", "c"], 0.667), (["b", "c"], 0.667), (["h1", "h2"], 1.0), (["w1", "w2"], 0.875)]),
    ],
)
def test_store_report_near_threshold_decides_the_near_duplicate_pairs(store, near_threshold, expected):
    report = report_of(store, *THRESHOLD_RECORDS, near_threshold=near_threshold)
    assert report["near_duplicate_threshold"] == near_threshold
    assert [(p["ids"], p["jaccard"]) for p in report["near_duplicate_pairs"]] == expected
    # The contradiction threshold stays 0.5 whatever the near-duplicate threshold is.
    assert report["contradiction_flags"] == [{"ids": ["w1", "w2"], "jaccard": 0.875, "reason": "negation differs"}]
    assert report["exact_duplicate_groups"] == []


def test_store_report_defaults_to_the_default_namespace_and_limits_to_the_one_asked(store):
    store.add_many(
        [
            {"id": "d1", "text": "User prefers dark mode", "created_at": NOW_MS - 3 * DAY_MS},
            {"id": "d2", "text": "user prefers dark mode!", "created_at": NOW_MS - 2 * DAY_MS},
            {"id": "w1", "namespace": "work", "text": "User prefers dark mode", "created_at": NOW_MS - 400 * DAY_MS},
            {"id": "w2", "namespace": "work", "text": "User never prefers dark mode", "created_at": NOW_MS - 9 * DAY_MS, "pinned": True},
            {"id": "w3", "namespace": "work", "text": "User prefers the dark mode", "created_at": NOW_MS - 5 * DAY_MS, "fact_key": "theme"},
            {"id": "w4", "namespace": "work", "text": "Theme is light", "created_at": NOW_MS - 5 * DAY_MS, "fact_key": "theme"},
        ]
    )
    default = store.report(now=NOW_MS)
    assert default["namespace"] == "default"
    assert default["total_records"] == 2
    assert [s["id"] for s in default["staleness"]] == ["d1", "d2"]
    assert default["exact_duplicate_groups"] == [["d1", "d2"]]
    assert default["near_duplicate_pairs"] == default["contradiction_flags"] == []
    assert default["oldest_days_idle"] == 3 and default["pinned"] == 0

    work = store.report("work", now=NOW_MS)
    assert work["namespace"] == "work"
    assert work["total_records"] == 4
    assert work["total_text_chars"] == sum(len(t) for t in ["User prefers dark mode", "User never prefers dark mode", "User prefers the dark mode", "Theme is light"])
    assert sorted(s["id"] for s in work["staleness"]) == ["w1", "w2", "w3", "w4"]
    assert work["exact_duplicate_groups"] == []
    assert work["near_duplicate_pairs"] == [{"ids": ["w1", "w2"], "jaccard": 0.8}, {"ids": ["w1", "w3"], "jaccard": 0.8}]
    assert work["contradiction_flags"] == [
        {"ids": ["w1", "w2"], "jaccard": 0.8, "reason": "negation differs"},
        {"ids": ["w2", "w3"], "jaccard": 0.667, "reason": "negation differs"},
        {"ids": ["w3", "w4"], "jaccard": 0.0, "reason": "same fact_key, different text"},
    ]
    assert work["oldest_days_idle"] == 400 and work["pinned"] == 1 and work["never_recalled"] == 4

    assert store.report("nobody", now=NOW_MS)["total_records"] == 0
    assert store.report(None, now=NOW_MS)["total_records"] == 6


def test_report_over_every_namespace_only_groups_duplicates_within_a_namespace(store):
    store.add_many(
        [
            {"id": "a", "text": "User prefers dark mode", "namespace": "default", "created_at": NOW_MS},
            {"id": "b", "text": "User prefers dark mode", "namespace": "work", "created_at": NOW_MS},
        ]
    )
    assert store.prune(None, now=NOW_MS, dry_run=True).archived == []
    everywhere = store.report(None, now=NOW_MS)
    assert everywhere["exact_duplicate_groups"] == []
    assert everywhere["near_duplicate_pairs"] == [] and everywhere["contradiction_flags"] == []


@settings(max_examples=examples(300), deadline=None)
@given(
    sets=st.lists(st.frozensets(st.sampled_from("abcdefghij"), max_size=6), max_size=25),
    sides=st.lists(st.booleans(), min_size=25, max_size=25),
    threshold=st.floats(0.5, 1.0),
)
def test_two_sided_join_finds_exactly_the_cross_side_pairs(sets, sides, threshold):
    sides = sides[: len(sets)]
    expected = [p for p in exhaustive_pairs(sets, threshold) if sides[p.first] != sides[p.second]]
    assert similar_pairs(sets, threshold, sides=sides) == expected


@settings(max_examples=examples(300), deadline=None)
@given(sets=token_set_lists(), threshold=st.floats(min_value=0.01, max_value=0.5))
def test_candidate_path_equals_exhaustive_pass_below_one_half(sets, threshold):
    # Low thresholds make the two-token prefixes cover whole sets and one shared token enough.
    assert similar_pairs(sets, threshold) == exhaustive_pairs(sets, threshold)
