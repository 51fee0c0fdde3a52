"""A count or a measure of one thing that changed: the flag rule's reading of numbers in chat. Pure
Python, rules over the words; `statements.conflict` asks it when its reading of subject / relation /
value finds nothing.

People tell an update in a clause of their own ("my highest score so far is 124 points" / "I just
got my highest score in Ticket to Ride - 132 points!", "I've been waking up around 8:30 am on
Saturdays" / "I like to wake up at 7:30 am on Saturdays"): the subject is the speaker, the
attribute is what the number counts or measures, and the verb is often another one. `change(a, b)`
reads each text's **counts** (a number and the word it counts: "124 points", "3 weeks", "two free
night's stays", a time "of 27:12" or "at 7:30 am") and says the pair gives one attribute two values
when

* both sides count the same thing (the same word after the number, or before "of N", or a time of
  day on both) with numbers that differ;
* the subject is one: both texts speak in the first person ("I ...", "my ..."), or both statements
  have the same subject, or every content word of one text is in the other ("1 tablespoon of coffee
  for every 6 ounces of water is the perfect ratio for me." / "... every 5 ounces of water.");
* the two say most of the same thing: at least half of the content words of the shorter one, and
  two of them besides the counted word, are in the other;
* no identifier differs ("Contact number 55" / "Contact number 46", "PR #512", "level 100": a
  number after a noun names its subject, it does not count it; after a past form, a verb after a
  pronoun or a preposition it is a value: "lost 5", "I walk 10,000 steps", "around 8:30"), and no
  word one side has alone sits in a scope that narrows where a value holds ("... for enterprise
  customers"; "for me" and "for every" are no scope).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..words import FUNCTION_WORDS
from .pairs import FILLER_WORDS, WORD_NUMBERS, _stem, numbers

# Written numbers: the classifier's, and "single" ("a single free night's stay").
COUNT_WORDS = {**WORD_NUMBERS, "single": 1}
# A phrase that narrows where a value holds (statements reads its scopes by these too); a
# first-person object after it is no narrowing ("for me"), nor is a rate ("for every 6 ounces").
SCOPE_WORDS = frozenset("for during when whenever if unless except only".split())
SELF = frozenset("me us myself ourselves".split())
FIRST_PERSON = frozenset("i my we our i've i'm i'd i'll we've we're".split())
PRONOUNS = FIRST_PERSON | frozenset("you they he she you've they've".split())
# Past forms without -ed: a number after one is a value ("lost 5 pounds"), not a name.
PAST = frozenset("lost got won hit made ran spent took paid gave saw did bought sold set put kept read".split())
# Words that name what follows them: "Contact number 55", "ID 7" (so does any noun: "dependency 343").
NAMING = frozenset("number no id".split())
# A scope ends at a verb of being ("for every 6 ounces of water is the perfect ratio").
_SCOPE_ENDS = frozenset("is are was were be been am has have had".split())
# Dating words that say nothing of the attribute ("so far", "recently").
_SKIP = FUNCTION_WORDS | FILLER_WORDS | FIRST_PERSON | frozenset("far recently finally lately around about".split())

_TOKEN = re.compile(
    r"(?P<ident>[^\W\d_]+-\d+\w*|#\d+)"
    r"|(?P<number>\d+(?:[.,:]\d+)*(?:\s?[ap]\.?m\.?(?![a-z]))?)(?![^\W_])"
    r"|(?P<name>\d\w*)"
    r"|(?P<word>[^\W\d_]+(?:['’][^\W\d_]+)*)"
    r"|(?P<mark>[^\w\s'’])",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Reading:
    counts: frozenset[tuple[str, str]]  # (what is counted, the number), "what" stemmed
    shown: dict[tuple[str, str], str]  # (what, number) -> the words as written ("124 points")
    identifiers: frozenset[str]
    content: frozenset[str]  # stemmed content words, numbers and fillers left out
    scoped: frozenset[str]  # content words inside a narrowing scope phrase
    first_person: bool


def _key(word: str) -> str:
    """A light stem on which "wake" and "waking", "stay" and "stays" meet."""
    stem = _stem(word)
    return stem[:-1] if len(stem) > 3 and stem.endswith("e") else stem


def _acted(word: str) -> bool:
    """A verb's past or -ing form before a number ("lost 5 pounds", "reached 100"): the number is a
    value, not a name."""
    return word.endswith(("ed", "ing")) or word in PAST


def _value(token: str) -> str:
    found = numbers(token)
    return "/".join(str(n) for n in found) if found else token


@lru_cache(maxsize=16_384)
def read(text: str) -> Reading:
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(text.replace("’", "'"))]
    lowered = [t.lower() for _, t in tokens]
    counts, shown, identifiers, content, scoped = set(), {}, set(), set(), set()
    first_person = any(k == "word" for k, _ in tokens) and next(w for (k, _), w in zip(tokens, lowered) if k == "word") in FIRST_PERSON
    scope = False
    for i, (kind, token) in enumerate(tokens):
        low = lowered[i]
        if kind == "mark" or low in _SCOPE_ENDS:
            scope = False
        if kind in ("mark", "name"):
            continue
        if kind == "ident":
            identifiers.add(low)
            continue
        if kind == "word" and low not in COUNT_WORDS:
            if low in SCOPE_WORDS:
                scope = not (i + 1 < len(tokens) and lowered[i + 1] in SELF | {"every", "each"})
            elif low not in _SKIP:
                content.add(_key(low))
                if scope:
                    scoped.add(_key(low))
            continue
        # A number: digits or a written one. After a name it names its subject ("Contact 55").
        before = lowered[i - 1] if i > 0 and tokens[i - 1][0] == "word" else ""
        after_pronoun = i > 1 and lowered[i - 2] in PRONOUNS  # "I walk 10,000 steps": a verb
        if kind == "number" and before and (before in NAMING or (before not in _SKIP and before not in COUNT_WORDS and not _acted(before) and not after_pronoun)):
            identifiers.add(f"{before} {_value(token)}")
            continue
        if kind == "word" and low in ("one", "single") and before not in ("a", "an", "the", "") and before not in FUNCTION_WORDS:
            continue  # "the right one", "a single one" after a noun: no count
        value = str(COUNT_WORDS[low]) if kind == "word" else _value(token)
        what = _counted(tokens, lowered, i)
        if what:
            counts.add((what, value))
            shown[(what, value)] = _shown(tokens, i)
    return Reading(frozenset(counts), shown, frozenset(identifiers), frozenset(content), frozenset(scoped), first_person)


def _counted(tokens: list[tuple[str, str]], lowered: list[str], i: int) -> str:
    """What the number at i counts: a time of day; else the content word after it; else the content
    word before it ("time of 27:12")."""
    if tokens[i][0] == "number" and any(n.hour is not None for n in numbers(tokens[i][1])):
        return "(time of day)"
    if i + 1 < len(tokens) and tokens[i + 1][0] == "word" and lowered[i + 1] not in _SKIP and lowered[i + 1] not in COUNT_WORDS:
        return _key(lowered[i + 1])
    for j in range(i - 1, -1, -1):
        if tokens[j][0] != "word":
            return ""
        if lowered[j] not in _SKIP and lowered[j] not in COUNT_WORDS:
            return _key(lowered[j])
    return ""


def _shown(tokens: list[tuple[str, str]], i: int) -> str:
    after = tokens[i + 1][1] if i + 1 < len(tokens) and tokens[i + 1][0] == "word" and tokens[i + 1][1].lower() not in _SKIP else ""
    return f"{tokens[i][1]} {after}".strip()


@dataclass(frozen=True)
class Change:
    attribute: str  # the shared words near the count, as written in the newer text
    old: str
    new: str


def change(text_a: str, text_b: str, same_subject: bool) -> Change | None:
    """Do the two texts give one count or measure of one subject two values? See the module's
    docstring. `same_subject`: the statements' own reading found one subject."""
    a, b = read(text_a), read(text_b)
    if not (a.counts and b.counts) or (a.identifiers - b.identifiers and b.identifiers - a.identifiers):
        return None
    shared = a.content & b.content
    smaller = min(a.content, b.content, key=len)
    if not (same_subject or (a.first_person and b.first_person) or (smaller and smaller <= shared)):
        return None
    if (a.scoped - shared) or (b.scoped - shared):
        return None
    for what in sorted({w for w, _ in a.counts} & {w for w, _ in b.counts}):
        old = {v for w, v in a.counts if w == what}
        new = {v for w, v in b.counts if w == what}
        if not (old - new and new - old):
            continue
        attribute = shared - {what}
        if len(attribute) < 2 or 2 * len(smaller & shared) < len(smaller):
            return None
        old_value, new_value = min(old - new), min(new - old)
        return Change(_attribute(text_b, attribute), a.shown[(what, old_value)], b.shown[(what, new_value)])
    return None


def _attribute(text: str, words: frozenset[str]) -> str:
    """The shared words as the newer text writes them, in its order (at most five)."""
    out = []
    for m in _TOKEN.finditer(text):
        if m.lastgroup == "word" and _key(m.group().lower()) in words and m.group() not in out:
            out.append(m.group())
    return " ".join(out[:5])
