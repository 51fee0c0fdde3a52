"""The pair classifier: are two similar memories the same fact, a changed fact, or only related?

Embeddings say "same topic", not "same fact": "the rate limit is 100 rpm" and "... 500 rpm" score a
higher cosine than most paraphrases. So the cosine only says which pairs are worth a look, and the
texts decide. In order:

1. cosine below `related_at` (0.65, the specification's contradiction floor): ``unrelated``.
2. A *contradiction* (flagged for a person, never merged) when the texts show a changed fact:

   * **a differing number**: each side has a number the other lacks. Numbers are digits (``100``,
     ``1,000``, ``3.11``, ``v2.1``, ``4th``), times (``3pm`` = ``3 p.m.`` = ``15:00`` = ``3``;
     ``9:30`` matches ``9:30am``) and written numbers (``two`` = ``2``). A number on one side only
     is extra detail, not a change ("deploy v2.1 at 3pm" / "the deploy is at 3pm").
   * **a negation on one side only** (the words of `memstore.words`): not, no, never, false, none,
     nothing, nobody, neither, nor, cannot, and every ``n't`` (doesn't, isn't, can't, ...).
   * **a differing value written with punctuation inside it**: each side has an identifier the
     other lacks, a word holding ``/``, ``_``, ``.``, ``@`` or ``:`` between letters or digits
     (``Europe/Lisbon``, ``user_id``, ``config.yaml``, ``maria@northwind.com``,
     ``db-primary.internal:5432``, a URL, a path), compared whole, whatever else the sentences say.
   * **a swapped word or name**: the same sentence (articles and dating adverbs like "now" left
     out, words lightly stemmed) but for one span of one or two words on each side, holding a
     content word ("lives in Lisbon" / "now lives in Porto", "dark mode" / "light mode"). A sentence
     said another way ("The user's name is Maria" / "User is called Maria") is not the same
     sentence, and goes on to the cosine.
   * **a reversed relation**: the same words in another order, where two content words trade
     places across a word that relates them ("Anna reports to Ben" / "Ben reports to Anna",
     "prefers tea over coffee" / "prefers coffee over tea"). Words that trade places across
     ``and``, ``or`` or a bare ``is`` only ("tea and coffee" / "coffee and tea", "X is the host" /
     "the host is X"), and phrases moved whole ("at 9:30 every weekday" / "every weekday at 9:30"),
     say the same thing.

3. ``related`` when one sentence is the other with words added ("manager" / "skip-level
   manager"): it says more, or something else, and a merge could keep the vaguer one.
4. Otherwise ``duplicate`` when the cosine is at least `duplicate_at`, else ``related``.

A duplicate is merged, so the defaults are conservative: see ``docs/semantic.md`` for how
`DUPLICATE_AT` was chosen on ``tests/data/semantic_pairs.jsonl`` and what the rules cost (a
paraphrase that swaps a single word for a synonym, or says "not" where the other does not, is
flagged instead of merged: a person dismisses it; nothing is lost).

Pure Python: no model, no NumPy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from ..words import FUNCTION_WORDS, is_negation, negation_count, written_words

# A pair at or above this cosine with no contradiction signal is the same fact said twice. Chosen
# by `scripts/semantic_eval.py --tune`: the lowest value merging no contradicting or related pair of
# half the labelled set and staying 0.05 above every related pair's cosine there (docs/semantic.md).
DUPLICATE_AT = 0.82
# Below this a pair is not compared at all (the specification's contradiction floor).
RELATED_AT = 0.65
# A swap is at most this many content words replaced on each side.
MAX_SWAPPED = 2

KINDS = ("duplicate", "contradiction", "related", "unrelated")


@dataclass(frozen=True)
class Verdict:
    """What a pair is (one of `KINDS`) and why, in a line a person can read."""

    kind: str
    reason: str


# -- numbers -------------------------------------------------------------------------------------

WORD_NUMBERS = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
} | {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
     "hundred": 100, "thousand": 1000, "million": 1_000_000, "noon": 12, "midnight": 0,
     "once": 1, "twice": 2, "thrice": 3}  # fmt: skip

# Digits not glued to a word before them (so "sha256", "api2" are names, not numbers), with an
# optional "v" (a version) and an optional am/pm (a time). "1,000" is one number, "2025-03-01" three.
_NUMBER = re.compile(
    r"(?<![^\W\d_])(?<![\d.,:])(?P<version>v)?(?P<digits>\d+(?:[.,:]\d+)*)"
    r"(?:\s?(?P<meridiem>a\.?m\.?|p\.?m\.?)(?![a-z]))?",
    re.IGNORECASE,
)
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+")


@dataclass(frozen=True)
class Number:
    """One number in a text: `value` as written (canonical), or a time of day as (hour, minute).

    `clock` is True when am/pm fixed the hour; a bare "9:30" or "3" may be either half of the day.
    """

    value: str
    hour: int | None = None
    minute: int | None = None
    clock: bool = False

    def __str__(self) -> str:
        return self.value

    def matches(self, other: Number) -> bool:
        if self.hour is not None and other.hour is not None:
            if self.minute != other.minute:
                return False
            if self.clock and other.clock:
                return self.hour == other.hour
            return self.hour % 12 == other.hour % 12
        time, plain = (self, other) if self.hour is not None else (other, self)
        if time.hour is not None and plain.value.isdigit():  # "3" and "3pm" / "15:00"
            return time.minute == 0 and int(plain.value) % 12 == time.hour % 12
        return self.value == other.value


def _canonical(digits: str) -> str:
    if _THOUSANDS.fullmatch(digits):
        digits = digits.replace(",", "")
    # Leading zeros say nothing ("03" in a date is 3); each dotted part of a version alike.
    return ".".join(part.lstrip("0") or "0" for part in digits.split("."))


def numbers(text: str) -> list[Number]:
    """The numbers in `text`, written ones included (see the module's docstring)."""
    found = []
    for match in _NUMBER.finditer(text):
        digits, meridiem = match["digits"], (match["meridiem"] or "").lower()
        hour_minute = re.fullmatch(r"(\d{1,2}):(\d{2})", digits)
        if meridiem:
            hour, minute = (int(hour_minute[1]), int(hour_minute[2])) if hour_minute else (int(digits.split(".")[0]), 0)
            hour = hour % 12 + (12 if meridiem.startswith("p") else 0)
            found.append(Number(f"{hour:02d}:{minute:02d}", hour, minute, clock=True))
        elif hour_minute and int(hour_minute[1]) <= 24 and int(hour_minute[2]) < 60:
            hour, minute = int(hour_minute[1]), int(hour_minute[2])
            found.append(Number(f"{hour:02d}:{minute:02d}", hour, minute, clock=hour > 12))
        else:
            for part in re.split(r":", digits):  # "1:1" is two ones, not a time
                found.append(Number(_canonical(part)))
    for word in written_words(text):
        if word in WORD_NUMBERS:
            value = WORD_NUMBERS[word]
            found.append(Number(str(value), *((value, 0) if word in ("noon", "midnight") else (None, None))))
    return found


def differing_numbers(text_a: str, text_b: str) -> tuple[list[Number], list[Number]]:
    """The numbers of each side that match none of the other's."""
    a, b = numbers(text_a), numbers(text_b)
    return [n for n in a if not any(n.matches(m) for m in b)], [m for m in b if not any(m.matches(n) for n in a)]


# -- words ---------------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")  # for names, written as they were


def negated(text: str) -> bool:
    """Does `text` say no? An odd number of negations does ("not never" is rare enough to ignore)."""
    return negation_count(text) % 2 == 1


def _stem(word: str) -> str:
    """A light stemmer: enough that prefers/prefer and scheduled/schedule meet."""
    if word.endswith("'s"):
        word = word[:-2]
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    return word[:-1] if len(word) > 4 and word.endswith("e") else word


# Left out before two sentences are aligned: articles, and adverbs that date or hedge a statement
# without changing it ("User now lives in Porto" is the same sentence as "User lives in Lisbon").
FILLER_WORDS = frozenset(
    "a an the now currently still also actually really just already anymore again".split()
)


def _aligned_words(text: str) -> tuple[list[str], list[str]]:
    """The words two sentences are aligned on (stemmed), and the same words as written."""
    written = [word for word in written_words(text) if word not in FILLER_WORDS]
    return [_stem(word) for word in written], written


def _is_content(word: str) -> bool:
    return not (
        word in FUNCTION_WORDS or is_negation(word) or word in WORD_NUMBERS or any(ch.isdigit() for ch in word)
    )


def _is_term(word: str) -> bool:
    """A content word or a number: what a relation relates."""
    return _is_content(word) or any(ch.isdigit() for ch in word) or word in WORD_NUMBERS


def _one_change(text_a: str, text_b: str) -> tuple[str, list[str], list[str]] | None:
    """How two sentences differ when they differ in one place only: (operation, words of a, words of
    b), the words as written; None when they are equal or differ in more places."""
    (a, written_a), (b, written_b) = _aligned_words(text_a), _aligned_words(text_b)
    changes = [op for op in SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(changes) != 1:
        return None
    operation, a_start, a_end, b_start, b_end = changes[0]
    if operation == "replace" and len(a) - (a_end - a_start) < max(a_end - a_start, b_end - b_start):
        return None  # more of the sentence changed than stayed: not "the same sentence"
    return operation, written_a[a_start:a_end], written_b[b_start:b_end]


def swapped_words(text_a: str, text_b: str) -> tuple[list[str], list[str]] | None:
    """The words swapped between two otherwise-identical sentences, or None when they are not that.

    The two word sequences (articles and filler adverbs left out, words lightly stemmed) must align
    except for one replaced span of at most `MAX_SWAPPED` words on each side, holding a content word
    on each side, with at least as many words around it as in it. A reworded sentence ("User is
    called Maria" / "The user's name is Maria") does not align that way; a changed value does.
    """
    change = _one_change(text_a, text_b)
    if change is None or change[0] != "replace":
        return None
    _, only_a, only_b = change
    if len(only_a) > MAX_SWAPPED or len(only_b) > MAX_SWAPPED:
        return None
    if not (any(map(_is_content, only_a)) and any(map(_is_content, only_b))):
        return None
    return only_a, only_b


def added_words(text_a: str, text_b: str) -> list[str] | None:
    """The words one sentence adds to an otherwise-identical other ("User's manager is Tom" /
    "User's skip-level manager is Tom"), or None. Such a pair says more on one side, or something
    else: a merge could keep the vaguer one, so it is related, never a duplicate."""
    change = _one_change(text_a, text_b)
    if change is None or change[0] not in ("insert", "delete"):
        return None
    added = change[1] or change[2]
    return added if any(map(_is_content, added)) else None


# Words that relate two things symmetrically: a pair that trades places across these alone says
# the same thing ("tea and coffee" / "coffee and tea"; "X is the host" / "the host is X").
SYMMETRIC_WORDS = frozenset("and or nor plus is are was were be been being am".split())


def reversed_words(text_a: str, text_b: str) -> tuple[str, str] | None:
    """Two terms (content words or numbers) that trade places across a word relating them, in two
    sentences made of the same words (articles and filler adverbs left out, words lightly
    stemmed); None otherwise.

    A word repeated in a sentence is matched occurrence by occurrence ("the billing service depends
    on the auth service"). The pair must have a word between it on both sides, other than the
    SYMMETRIC_WORDS: "Ben reports to Anna" has "reports to" between Anna and Ben as "Anna reports to
    Ben" has, and the two say opposite things; "every weekday the standup is at 9:30" moves a phrase
    of "the standup is at 9:30 every weekday", and no pair has a word between it in both.
    """
    (a, written_a), (b, _) = _aligned_words(text_a), _aligned_words(text_b)
    if a == b or sorted(a) != sorted(b):
        return None

    def keyed(words: list[str]) -> list[tuple[str, int]]:
        seen: dict[str, int] = {}
        out = []
        for word in words:
            seen[word] = seen.get(word, 0) + 1
            out.append((word, seen[word]))
        return out

    key_a, key_b = keyed(a), keyed(b)
    position_b = {key: i for i, key in enumerate(key_b)}
    for i, j in ((i, j) for i in range(len(a)) for j in range(i + 1, len(a))):
        if not (_is_term(written_a[i]) and _is_term(written_a[j])):
            continue
        first, second = position_b[key_a[i]], position_b[key_a[j]]
        if first < second:
            continue  # their order is kept
        between = {word for word, _ in key_a[i + 1 : j]} & {word for word, _ in key_b[second + 1 : first]}
        if between - SYMMETRIC_WORDS:
            return written_a[i], written_a[j]
    return None


# -- values written with punctuation inside them -------------------------------------------------

# A word with /, _, ., @ or : between two letters or digits: identifiers, paths, e-mails, URLs.
_VALUE_INSIDE = re.compile(r"[^\W_][/_.@:]+[^\W_]|[^\W_]_|_[^\W_]")
# What a sentence puts around a word: quotes, brackets, and the punctuation that ends a clause.
_AROUND = "\"'“”‘’()[]{}<>,;!?"
# A number (with its separators) or a time is the number rule's to compare.
_NUMERIC = re.compile(r"v?\d+(?:[.,:]\d+)*(?:\s?[ap]\.?m\.?)?|[ap]\.m\.?", re.IGNORECASE)


def values(text: str) -> set[str]:
    """The identifiers in `text`, lowercased: words holding /, _, ., @ or : between letters or
    digits (a sentence's closing punctuation and surrounding quotes taken off), numbers left out.

    >>> sorted(values("Logs go to /var/log/app, the timezone is Europe/Lisbon."))
    ['/var/log/app', 'europe/lisbon']
    """
    found = set()
    for word in text.split():
        word = word.strip(_AROUND).rstrip(".:")
        if _VALUE_INSIDE.search(word) and not _NUMERIC.fullmatch(word):
            found.add(word.lower())
    return found


def _names(text: str) -> set[str]:
    """Capitalised words that do not start a sentence, lowercased: likely names."""
    found = set()
    for sentence in re.split(r"[.!?]\s+", text):
        found.update(word.lower().replace("’", "'") for word in _WORD.findall(sentence)[1:] if word[0].isupper())
    return found


def _show(numbers_: list[Number]) -> str:
    return "/".join(sorted(str(number) for number in numbers_))


# -- the verdict ---------------------------------------------------------------------------------


def contradiction_reason(text_a: str, text_b: str) -> str | None:
    """Why the two texts state different facts, or None when the texts show no change."""
    only_a, only_b = differing_numbers(text_a, text_b)
    if only_a and only_b:
        return f"a number differs: {_show(only_a)} vs {_show(only_b)}"
    values_a, values_b = values(text_a), values(text_b)
    if values_a - values_b and values_b - values_a:
        return f"a value differs: {'/'.join(sorted(values_a - values_b))} vs {'/'.join(sorted(values_b - values_a))}"
    if negated(text_a) != negated(text_b):
        return f"a negation on one side only ({'first' if negated(text_a) else 'second'} says no)"
    swap = swapped_words(text_a, text_b)
    if swap is not None:
        what = "name" if (set(swap[0]) & _names(text_a)) or (set(swap[1]) & _names(text_b)) else "word"
        return f"the same sentence with one {what} swapped: {' '.join(swap[0])} vs {' '.join(swap[1])}"
    reversal = reversed_words(text_a, text_b)
    if reversal is not None:
        return f"the same words in another order: {reversal[0]} and {reversal[1]} trade places"
    return None


def classify(
    text_a: str,
    text_b: str,
    similarity: float,
    *,
    duplicate_at: float = DUPLICATE_AT,
    related_at: float = RELATED_AT,
) -> Verdict:
    """Classify a pair of memories from their cosine `similarity` and their texts.

    >>> classify("The API rate limit is 100 rpm.", "The API rate limit is 500 rpm.", 0.95).kind
    'contradiction'
    >>> classify("Deploy v2.1 to staging at 3pm.", "Staging deploy is scheduled for 3pm.", 0.88).kind
    'duplicate'
    >>> classify("User prefers dark mode.", "The team uses Jira.", 0.12).kind
    'unrelated'
    """
    if not related_at <= duplicate_at:
        raise ValueError("related_at must not be above duplicate_at")
    if similarity < related_at:
        return Verdict("unrelated", f"cosine {similarity:.3f} < {related_at}")
    reason = contradiction_reason(text_a, text_b)
    if reason is not None:
        return Verdict("contradiction", reason)
    added = added_words(text_a, text_b)
    if added is not None:
        return Verdict("related", f"the same sentence with words added on one side: {' '.join(added)}")
    if similarity >= duplicate_at:
        return Verdict("duplicate", f"cosine {similarity:.3f} >= {duplicate_at}; no number, negation or word differs")
    return Verdict("related", f"cosine {similarity:.3f} < {duplicate_at}")
