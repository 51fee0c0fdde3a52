"""Hypothesis strategies for stores that exercise every tie and collision the rules have."""

from __future__ import annotations

import os

from hypothesis import strategies as st

# The Hypothesis profile (tests/conftest.py registers both): "full", the CI default, runs every
# property test with the examples its @settings asks for; "quick" (HYPOTHESIS_PROFILE=quick) caps
# them at QUICK_EXAMPLES for a fast loop while editing.
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "full")
QUICK_EXAMPLES = 20


def examples(count: int) -> int:
    """How many examples a property test asks for: `count` in the full profile."""
    return min(count, QUICK_EXAMPLES) if PROFILE == "quick" else count

# Small alphabets make collisions and ties common: case, Unicode whitespace, removed punctuation.
TEXT_ALPHABET = list("aAbBéÉß İ") + list(".,!?;:'\"") + ["\t", "\n", "\u00a0", "\u2003", "-", "…"]
ID_ALPHABET = list("aBbé_1Zß") + ["\u0301", "\U0001f600"]
NAMESPACES = ["default", "work", "Ω"]

memory_texts = st.text(alphabet=TEXT_ALPHABET, max_size=6)
timestamps = st.one_of(st.integers(-3, 3), st.sampled_from([-(2**63), 2**63 - 1]))
# Lifetimes: mostly none; some long over (1970), some ending far in the future.
EXPIRED_AT = 1
LASTING_UNTIL = 2**62
lifetimes = st.sampled_from([None, None, None, EXPIRED_AT, LASTING_UNTIL])


@st.composite
def stores(draw, max_size: int = 14) -> list[dict]:
    ids = draw(st.lists(st.text(alphabet=ID_ALPHABET, min_size=1, max_size=3), unique=True, max_size=max_size))
    return [
        {
            "id": memory_id,
            "text": draw(memory_texts),
            "timestamp": draw(timestamps),
            "importance": draw(st.sampled_from([1, 2, 2, 5])),
            "pinned": draw(st.integers(0, 5)) == 0,
            "namespace": draw(st.sampled_from(NAMESPACES)),
            "recall_count": draw(st.sampled_from([0, 0, 1, 3])),
            "last_recalled_at": draw(st.one_of(st.none(), st.integers(0, 5))),
            "expires_at": draw(lifetimes),
        }
        for memory_id in ids
    ]
