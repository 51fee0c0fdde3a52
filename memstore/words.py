"""Words, defined once: the tokenizer, the negation words and the function words. Pure Python.

* `tokens`: runs of letters and digits of the lowercased text (for ASCII text exactly
  ``[a-z0-9]+``). Full-text recall, the hygiene report's Jaccard similarity and the query's words
  all split text this way.
* the words that say no, for both contradiction detectors: the hygiene report uses the
  specification's four (`REPORT_NEGATIONS`, exactly as the specification lists them); the pair
  classifier, which must never merge "X" with "not X", takes those and every other English
  negation (`is_negation`).
* `FUNCTION_WORDS`: words that carry grammar rather than content ("the", "did", "what").
"""

from __future__ import annotations

import re
import unicodedata

_TOKEN = re.compile(r"[^\W_]+")
# A word as people write it, apostrophes kept ("doesn't", "user's"), for the negation test.
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")

# The specification's negation words: the report flags a similar pair when exactly one side holds one.
REPORT_NEGATIONS = frozenset({"not", "no", "never", "false"})
# Those, and the other plain English ones.
NEGATIONS = REPORT_NEGATIONS | {"none", "nothing", "nobody", "neither", "nor", "cannot"}
# Apostrophe-less spellings people type.
NEGATED_CONTRACTIONS = frozenset(
    "dont doesnt didnt isnt arent wasnt werent wont cant couldnt shouldnt wouldnt hasnt havent hadnt mustnt".split()
)

FUNCTION_WORDS = frozenset(
    """a an the and or but if then than so as of at by for from in into on onto to with within about
    over under up down out off via per is are was were be been being am do does did done has have had
    having will would shall should can could may might must it its it's this that these those there
    here which who whom whose what when where how why i me my we us our you your he him his she her
    they them their theirs also just only very really too any all each every some such many much other own same
    now still already again always usually often later soon yet ever""".split()
)  # fmt: skip


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def without_diacritics(text: str) -> str:
    """`text` with its accents removed ("Café" -> "Cafe"): how SQLite's full-text index (unicode61,
    remove_diacritics 2) matches words, so "cafe" finds "café" and "café" finds "cafe"."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c)))


def token_set(text: str) -> frozenset[str]:
    return frozenset(tokens(text))


def written_words(text: str) -> list[str]:
    """The lowercased words of `text` with their apostrophes (’ read as ')."""
    return [word.replace("’", "'") for word in _WORD.findall(text.lower())]


def is_negation(word: str) -> bool:
    """Does this lowercased word say no (a negation word, or any n't)?"""
    return word in NEGATIONS or word.endswith("n't") or word in NEGATED_CONTRACTIONS


def negation_count(text: str) -> int:
    """How many words of `text` say no (`is_negation`)."""
    return sum(is_negation(word) for word in written_words(text))
