import re

from hypothesis import given, settings
from hypothesis import strategies as st

import memstore
from memstore.normalize import REMOVED_CHARACTERS, normalize_key

from .strategies import examples


def test_seed_variants_share_one_key():
    assert normalize_key("User prefers dark mode.") == "user prefers dark mode"
    assert normalize_key("  user prefers   DARK mode ") == "user prefers dark mode"
    assert normalize_key("User prefers dark mode!") == "user prefers dark mode"


def test_removal_happens_after_the_strip_so_a_trailing_space_survives():
    assert normalize_key("Hello !") == "hello "
    assert normalize_key("Hello !") != normalize_key("Hello")
    assert normalize_key("! hi") == " hi"


def test_only_the_eight_listed_characters_are_removed():
    assert normalize_key(".,!?;:'\"") == ""
    assert normalize_key("a-b (c) d…") == "a-b (c) d…"


def test_unicode_whitespace_runs_collapse_to_one_space():
    assert normalize_key("a\u00a0\u2003\t\n b") == "a b"
    assert normalize_key("\u3000Ä\u3000") == "ä"


def test_lowercasing_is_str_lower():
    assert normalize_key("İSTANBUL") == "İSTANBUL".lower().strip()
    assert normalize_key("STRASSE ß") == "strasse ß"


def test_normalize_key_is_exported_from_the_package():
    assert memstore.normalize_key is normalize_key


def spelled_out(text: str) -> str:
    """The rule written as four literal steps, to check the fast implementation against."""
    lowered = text.lower().strip()
    removed = "".join(ch for ch in lowered if ch not in REMOVED_CHARACTERS)
    out, in_space = [], False
    for ch in removed:
        if re.fullmatch(r"\s", ch):
            if not in_space:
                out.append(" ")
            in_space = True
        else:
            out.append(ch)
            in_space = False
    return "".join(out)


@settings(max_examples=examples(500))
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)) | st.sampled_from(list(REMOVED_CHARACTERS + " \t\u00a0\u2028"))))
def test_matches_the_rule_spelled_out_step_by_step(text):
    key = normalize_key(text)
    assert key == spelled_out(text)
    assert not any(ch in key for ch in REMOVED_CHARACTERS)
    assert not re.search(r"\s\s", key)
