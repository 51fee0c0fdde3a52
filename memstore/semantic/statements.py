"""What a memory states, and when two memories state values that cannot both hold: the rule behind
a contradiction flag. Pure Python: rules over the words (`memstore.words`), no model.

`read(text)` reads a memory's first clause as a `Statement`: a **subject** (the words before the
relation: "Dana's manager", "Contact number 55", "The billing API rate limit"), a **relation** (the
verb and its auxiliaries, negation and preposition: "is", "lives in", "reports to", "does not
prefer"), a **value** (the rest: "Priya Raman", "Vienna", "100 requests per minute"), and
what the words say about the statement: an **event** (the agent's own log, verb first and past
tense: "Looked up flights to Paris", "Reviewed PR #512"; or a subject that asked, said, searched...),
a **change** ("now", "since the reorg", "moved to", "no longer", "switched to"), a **scope**
("for enterprise customers", "on weekends", "only when ..."). Verb-first change logs ("Raised the rate
limit to 500 requests per minute") are read as the statement they make ("the rate limit" / "to" /
"500 ...").

`conflict(text_a, text_b)` says whether two statements give one single-valued attribute of one
subject two values, with a reason a person checks at a glance ("Dana's manager: Priya Raman → Tom
Becker") and a confidence. Never, whatever the words:

* when either is an event: two events are both true ("Looked up flights to Paris" / "... Seville");
* when the subjects differ: an identifier is part of its subject ("Contact number 55" / "Contact
  number 46", "INC-2211", "PR #512"), and two attributes of one subject are two subjects ("Dana's
  birthday" / "Dana's phone number"); a subject said more fully on one side ("The session timeout" /
  "Sessions") is the same one, unless both name other verbs;
* when the relation holds many values (likes, enjoys, speaks, uses, has, ...): a list grows ("likes
  hiking" / "likes chess"), unless a number or a negation changes;
* when one value only adds words to the other, or one side has a scope the other lacks
  ("100 requests per minute" / "1,000 requests per minute for enterprise customers");

and otherwise when the pair classifier's text rules see a change (`pairs.contradiction_reason`: a
number, a punctuated value, a negation, a swapped word, a reversed relation) or the values differ
outright with subject and relation the same ("Priya Raman" / "Tom Becker since the reorg"). A passive
side is read the active way ("is owned by the data team" / "The frontend team owns ..."), and a
changed count of one thing is a change ("my highest score so far is 124 points" / "I just got my
highest score in Ticket to Ride - 132 points!": `quantities`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache

from ..words import FUNCTION_WORDS, is_negation
from . import quantities
from .quantities import SCOPE_WORDS  # a phrase that narrows where a value holds: another scope is another attribute
from .pairs import _aligned_words, _names, _stem, classify, contradiction_reason, reversed_words

# A flag is raised at this confidence or above; a weaker pair is not raised at all. Chosen on the
# tuning half of tests/data/flag_streams.jsonl (scripts/semantic_eval.py --tune; docs/semantic.md).
FLAG_AT = 0.7
# The contradict phase looks at pairs at this cosine or above (the semantic phase's floor, RELATED_AT,
# is higher): a changed value said in other words scores lower than a paraphrase ("Hana is based in
# Krakow." / "Hana moved to Riga." 0.64). Chosen on the tuning half (docs/semantic.md).
CANDIDATE_AT = 0.5
# `maintain --resolve-updates` supersedes the older side of a flag at this confidence or above:
# the level at which the tuning half's flags were all real changes (docs/semantic.md).
RESOLVE_AT = 0.9
# A flag read from a count alone (`quantities.change`: the words around a number, not the whole
# statement) starts here, under RESOLVE_AT: never settled unasked. Chosen on the tuning halves.
COUNT_CONFIDENCE = 0.75

COPULAS = frozenset("is are was were be been being am 's 'm 're".split())
AUXILIARIES = COPULAS | frozenset("has have had 've does do did will would can could should must may might shall 'll 'd".split())
# Verbs a statement's relation is often made of (any form the light stemmer brings to these).
VERBS = frozenset(
    """live work use run prefer like love enjoy take want need own report manage lead allow require
    base locate reside listen go leave retry expire renew sleep commute bank mirror depend review approve owe forward lag
    wait support trigger mentor host speak play fire end start belong cost weigh drink eat deploy
    store keep send sit point read write call live pay earn learn study hit reach aim plan spend
    attend visit follow know collect meet team stay ship build cover handle own sync reply tend""".split()
)  # fmt: skip
# A relation that holds many values at once: a new value adds to a list.
MULTI_VALUED = frozenset("like love enjoy speak learn play visit collect know follow attend use have own watch read into study meet".split())
# Relations whose doer is one, read the passive way ("is owned by"), though they hold many objects.
SINGLE_DOER = frozenset({"own"})
# Relations that say the same thing in other words.
# Where something is: lives in, is based in, moved to, runs on, is hosted on.
SYNONYMS = {"base": "live", "reside": "live", "locate": "live", "move": "live", "run": "live", "host": "live"}
# Words that say the value changed: they date the newer statement, and a change verb matches any relation.
CHANGE_VERBS = frozenset("switch change raise lower increase decrease become upgrade downgrade replace rename bump set update".split())
# Verbs that date a statement as a change without being a wildcard for every relation.
MOVE_VERBS = frozenset("move leave".split())
CHANGE_WORDS = frozenset("now since anymore longer new newly currently".split())
# Verbs that make a statement an event when its subject did them: the subject's own acts of asking and saying.
EVENT_VERBS = frozenset("ask mention say told tell search look request wonder share send email call text check book order".split())
IRREGULAR_PAST = frozenset(
    """born known done given taken written seen left sent wrote ran made met took found got gave put built told said bought paid began spent saw did went came
    brought kept held drew caught won sold flew drove ate drank chose spoke rang hung forgot""".split()
)  # fmt: skip
PREPOSITIONS = frozenset("in on at to for from by with after before of into onto over via as about up out off".split())
PRONOUNS = frozenset("i you we they he she it who that".split())
DETERMINERS = frozenset("the a an my our their his her its your this that these those".split())
# Words left out of a subject's or a value's key: determiners, function words, change words.
_SKIP = FUNCTION_WORDS | DETERMINERS | CHANGE_WORDS | frozenset("no not never actually recently finally really back".split())

KNOWN_VERBS = VERBS | MULTI_VALUED | CHANGE_VERBS | MOVE_VERBS | EVENT_VERBS
IRREGULAR = {"left": "leave", "went": "go", "took": "take", "ran": "run", "got": "get", "told": "tell", "said": "say",
             "sent": "send", "met": "meet", "kept": "keep", "paid": "pay", "spent": "spend", "became": "become", "rose": "rise"}  # fmt: skip


def _lemma(word: str) -> str:
    """A verb's base form when it is one of the known verbs ("raised" -> "raise", "fires" -> "fire",
    "studies" -> "study"); else the light stem the pair classifier uses."""
    word = word.lower()
    if word in IRREGULAR:
        return IRREGULAR[word]
    if word in KNOWN_VERBS:
        return word
    for suffix, ending in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"), ("d", ""), ("es", ""), ("s", ""), ("ged", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            base = word[: -len(suffix)] + ending
            if base in KNOWN_VERBS:
                return base
            if suffix in ("ing", "ed") and len(base) > 2 and base[-1] == base[-2] and base[:-1] in KNOWN_VERBS:
                return base[:-1]  # "stopped" -> "stop"
    return _stem(word)


_TOKEN = re.compile(r"\S+")
# A word that names what comes before it: a number, "#512", "worker-2", "ATL-301", a parenthesis.
_NAMED = re.compile(r"#?\d|[^\W\d_]+-\d|\(")
_EDGE = "\"'“”‘’()[]{}<>,;!?."
_CONTRACTION = re.compile(r"^(?P<head>[^\W\d_]+)(?P<tail>'ve|'m|'re|'ll|'d|n't)$", re.IGNORECASE)
_PRONOUN_IS = frozenset("it's that's he's she's there's what's who's".split())


@dataclass(frozen=True)
class Statement:
    text: str
    subject: str  # as written ("Dana's manager"); "" when the clause starts with its verb
    relation: str  # as written ("is", "lives in", "does not prefer")
    value: str  # as written, change words and a trailing scope left out
    scope: str  # the trailing scope as written ("for enterprise customers")
    subject_key: frozenset[str]
    relation_key: frozenset[str]  # the relation's verbs, stemmed, auxiliaries left out
    value_key: frozenset[str]
    scope_key: frozenset[str]
    negated: bool
    event: bool
    changed: bool
    parsed: bool  # a relation was found
    multi_valued: bool  # the relation holds many values at once (likes, is into, uses, ...)
    # The text's words (stemmed, articles and filler adverbs left out) with their counts, in no order.
    words: frozenset[tuple[str, int]] = field(default=frozenset(), compare=False)

    @property
    def copula_only(self) -> bool:
        return not self.relation_key

    @property
    def change_verb(self) -> bool:
        return bool(self.relation_key & CHANGE_VERBS)

    @property
    def passive(self) -> bool:  # "is owned by": a copula, a verb, "by"
        words = [_plain(w) for w in self.relation.split()]
        return len(words) >= 3 and words[-1] == "by" and bool(set(words) & COPULAS) and bool(self.relation_key)


@dataclass(frozen=True)
class Conflict:
    """Two statements of one attribute with values that cannot both hold."""

    subject: str  # "Dana's manager", or "Contact number 55 lives in"
    old: str
    new: str
    confidence: float
    signal: str  # what showed the change (the classifier's reason, or "the value differs")

    @property
    def reason(self) -> str:
        return f"{self.subject}: {self.old} → {self.new}"


def _words(text: str) -> list[str]:
    """The first clause's words as written, edge punctuation off, contractions split ("I've" ->
    "I", "'ve"; "doesn't" -> "does", "n't"); a short "X:" lead-in ("Failed over: ...") left out."""
    clause = re.split(r"(?<=[.!?;])\s+|\s+-\s+|\s+—\s+", text.strip(), maxsplit=1)[0]
    head, colon, rest = clause.partition(": ")
    if colon and len(head.split()) <= 4 and rest:
        clause = rest
    out = []
    for raw in _TOKEN.findall(clause.replace("’", "'")):
        word = raw.strip(_EDGE)
        if raw.endswith(",") and word:
            word += ","  # a comma ends a phrase: kept as a mark on the word
        if not word or word == ",":
            continue
        bare = word.rstrip(",")
        match = _CONTRACTION.match(bare)
        if match and bare.lower() not in _PRONOUN_IS:
            head_word = match["head"]
            if match["tail"].lower() == "n't":
                head_word = {"ca": "can", "wo": "will", "sha": "shall"}.get(head_word.lower(), head_word)
            out.extend([head_word, match["tail"].lower()])
        elif bare.lower() in _PRONOUN_IS:
            out.extend([bare[:-2], "'s"])
        else:
            out.append(word)
    return out


def _plain(word: str) -> str:
    return word.lower().rstrip(",")


def _key(words: list[str]) -> frozenset[str]:
    out = set()
    for word in words:
        plain = _plain(word).removesuffix("'s").removesuffix("'")
        if plain and plain not in _SKIP and not is_negation(plain):
            out.add(_lemma(plain))
    return frozenset(out)


def _is_past(word: str) -> bool:
    word = _plain(word)
    return word in IRREGULAR_PAST or (len(word) > 4 and word.endswith("ed") and not word.endswith("eed"))


def _is_verb(words: list[str], i: int) -> bool:
    """Is the word at i the relation's verb? Known verbs, a past tense after the subject, or a
    third-person -s form that is not a plural noun before a verb."""
    word = _plain(words[i])
    if word in AUXILIARIES or is_negation(word) or word == "n't":
        return True
    if not word.isalpha() or (words[i][0].isupper() and i > 0):
        return False
    stem = _lemma(word)
    following = _plain(words[i + 1]) if i + 1 < len(words) else ""
    if word.endswith("ing") and (i == 0 or _plain(words[i - 1]) not in AUXILIARIES):
        return False  # "The reporting service": a participle before its noun
    if following in AUXILIARIES or following in CHANGE_WORDS or _lemma(following) in VERBS or (following.endswith("s") and _lemma(following) in VERBS):
        if not (stem in VERBS and i > 0 and _plain(words[i - 1]) in ("i", "you", "we", "they")):
            return False  # "Docker images are pushed", "Nightly backups run": a plural noun before its verb
    if stem in KNOWN_VERBS and word == stem and i > 0:
        # A base form inside a sentence is a noun ("The request timeout", "a phone call") unless
        # a pronoun, a plural or an auxiliary comes before it ("I use", "Tests run", "will run").
        before = next((_plain(w) for w in reversed(words[:i]) if _plain(w) not in CHANGE_WORDS), "")
        return before in PRONOUNS or before in AUXILIARIES or before == "to" or (before.endswith("s") and not before.endswith("'s") and before not in DETERMINERS)
    if stem in KNOWN_VERBS:
        # A base form first is an instruction's verb ("Use tabs", "Deploy v2.1 ..."), unless a
        # number names it ("Lead 143 (Yuki Novak) ...", "Report 12 is ...").
        return i > 0 or word != stem or not _NAMED.match(following)
    if i > 0 and _is_past(word) and _plain(words[i - 1]) not in DETERMINERS:
        return True
    return i > 0 and len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")) and _plain(words[i - 1]) not in DETERMINERS | PREPOSITIONS


@lru_cache(maxsize=16_384)
def read(text: str) -> Statement:
    """The statement a memory makes (see the module's docstring); a memory is read once however many
    pairs it is a side of (the last readings are kept)."""
    words = _words(text)
    lowered = [_plain(word) for word in words]
    change_log = bool(words) and _lemma(lowered[0]) in CHANGE_VERBS and lowered[0] != "left" and "to" in lowered[1:]
    event = bool(words) and _is_past(words[0]) and not change_log and lowered[0] not in ("based", "used")
    if change_log:  # "Raised the rate limit to 500 ...": the subject is what was changed
        to = lowered.index("to", 1)
        return _statement(text, words[1:to], [words[0], "to"], words[to + 1 :], event=False, parsed=True)
    anchor = next((i for i in range(len(words)) if _is_verb(words, i)), None)
    if anchor is None:
        return _statement(text, [], [], words, event=event, parsed=False)
    # "Hana left Soylent and now works at Umbrella": the clause after "and now" says what holds.
    later = next((k for k in range(anchor + 1, len(words) - 2) if lowered[k] == "and" and lowered[k + 1] == "now"), None)
    if later is not None and _lemma(lowered[anchor]) in CHANGE_VERBS | MOVE_VERBS:
        words, lowered = words[:anchor] + words[later + 1 :], lowered[:anchor] + lowered[later + 1 :]
    subject = words[:anchor]
    end = anchor
    # The relation runs on over auxiliaries, negations, change words and verbs, and one preposition.
    while end < len(words) and (
        end == anchor or lowered[end] in AUXILIARIES or is_negation(lowered[end]) or lowered[end] in ("n't", "no", "longer", "been", "being")
        or lowered[end] in CHANGE_WORDS or (_is_past(words[end]) and not words[end][0].isupper()) or (lowered[end].endswith("ing") and words[end].isalpha() and words[end].islower() and lowered[end - 1] in AUXILIARIES)
        or (_lemma(lowered[end]) in KNOWN_VERBS and not words[end][0].isupper())
    ):  # fmt: skip
        end += 1
    if end < len(words) and lowered[end] in PREPOSITIONS and lowered[end] not in SCOPE_WORDS:
        end += 1
    relation, rest = words[anchor:end], words[end:]
    verbs = {_lemma(w) for w in lowered[anchor:end]}
    event = event or (bool(subject) and bool(verbs & EVENT_VERBS) and _is_past(words[anchor]))
    plain_relation = [w for w in lowered[anchor:end] if w not in CHANGE_WORDS]
    if plain_relation in (["reports", "to"], ["report", "to"]):  # "Dana reports to Priya": Dana's manager is Priya
        return _statement(text, [*subject, "manager"], ["is"], rest, event=event, parsed=True, shown_subject=f"{' '.join(w for w in subject if _plain(w) not in CHANGE_WORDS)}'s manager")
    owner = next((n for n, w in enumerate(rest) if w.lower().endswith("'s") and n < 3), None)
    if plain_relation in (["is"], ["are"]) and owner is not None and subject and all(w[0].isupper() for w in subject):
        # "Sofia Weber is Maya's manager": the subject is Maya's manager, the value Sofia Weber.
        return _statement(text, rest[owner:], relation, subject, event=event, parsed=True)
    return _statement(text, subject, relation, rest, event=event, parsed=True)


def _statement(
    text: str, subject: list[str], relation: list[str], rest: list[str], *, event: bool, parsed: bool, shown_subject: str | None = None
) -> Statement:
    lowered_all = [_plain(w) for w in subject + relation + rest]
    negated = sum(is_negation(w) or w == "n't" for w in lowered_all) % 2 == 1
    changed = any(w in CHANGE_WORDS for w in lowered_all) or any(_lemma(w) in CHANGE_VERBS | MOVE_VERBS for w in lowered_all)
    # The value ends where a scope begins, or a dating phrase ("since the reorg"), or a new clause.
    value, scope = [], []
    for n, word in enumerate(rest):
        plain = _plain(word)
        if plain in ("since", "anymore") or (plain == "as" and n + 1 < len(rest) and _plain(rest[n + 1]) == "of"):
            break
        if plain in ("and", "but") and value:
            break
        if plain in SCOPE_WORDS and value:
            scope = rest[n:]
            break
        value.append(word)
    shown = [w for w in value if _plain(w) not in CHANGE_WORDS | {"no", "longer"} or _plain(w) == "no" and value[-1] is not w]
    return Statement(
        text=text,
        subject=shown_subject or " ".join(w.rstrip(",") for w in subject if _plain(w) not in CHANGE_WORDS),
        relation=" ".join(w.rstrip(",") for w in relation if _plain(w) not in CHANGE_WORDS),
        value=" ".join(w for w in shown).rstrip(",") or " ".join(value).rstrip(","),
        scope=" ".join(w for w in scope if _plain(w) not in CHANGE_WORDS).rstrip(","),
        subject_key=_key(subject),
        relation_key=frozenset(
            SYNONYMS.get(_lemma(w), _lemma(w)) for w in map(_plain, relation)
            if w not in AUXILIARIES and w not in CHANGE_WORDS and not is_negation(w) and w not in PREPOSITIONS and w not in ("n't", "no", "longer")
        ),
        # A source is one ("reads its settings from config.yaml"), whatever the verb.
        multi_valued=any(_lemma(w) in MULTI_VALUED for w in map(_plain, relation)) and not (relation and _plain(relation[-1]) == "from"),
        value_key=_key(value),
        scope_key=frozenset(w for w in _key(scope) if not any(ch.isdigit() for ch in w)),
        negated=negated,
        event=event,
        changed=changed,
        parsed=parsed,
        words=frozenset(Counter(_aligned_words(text)[0]).items()),
    )  # fmt: skip


def conflict(text_a: str, text_b: str, *, for_merge: bool = False) -> Conflict | None:
    """Do `text_a` (the older) and `text_b` (the newer) give one attribute two values? See the
    module's docstring; None when they do not, or when nothing says so; when the reading finds
    nothing, a changed count of one thing still does (`quantities.change`), at `COUNT_CONFIDENCE`.

    `for_merge` asks whether the two could state different values at all, before a merge: events,
    lists and scopes are then no excuse (two events with other values are two events, not one)."""
    found = _conflict(text_a, text_b, for_merge)
    if found is not None:
        return found
    a, b = read(text_a), read(text_b)
    if (a.event or b.event) and not for_merge:
        return None
    counted = quantities.change(text_a, text_b, same_subject=bool(a.subject_key) and a.subject_key == b.subject_key)
    if counted is None:
        return None
    confidence = COUNT_CONFIDENCE + (0.1 if b.changed and not a.changed else 0.0)
    subject = f"I ({counted.attribute})" if quantities.read(text_b).first_person else counted.attribute
    return Conflict(subject, counted.old, counted.new, confidence, f"a count differs: {counted.old} vs {counted.new}")


def _conflict(text_a: str, text_b: str, for_merge: bool) -> Conflict | None:
    a, b = _voiced(read(text_a), read(text_b))
    if (a.event or b.event) and not for_merge:
        return None
    if a.words == b.words and text_a != text_b:  # the same words in another order
        swapped = reversed_words(text_a, text_b)
        if swapped is None:
            return None
        signal = f"the same words in another order: {swapped[0]} and {swapped[1]} trade places"
        return Conflict(f"{a.relation or 'the relation'} (reversed)", _clause(text_a), _clause(text_b), 0.75, signal)
    if not (a.parsed and b.parsed):
        return None
    # The subject is read first: the texts' comparison runs only for the pairs it leaves.
    if not (a.subject_key == b.subject_key or (a.subject_key and b.subject_key and (a.subject_key <= b.subject_key or b.subject_key <= a.subject_key))):
        return None
    signal = contradiction_reason(text_a, text_b)
    confidence = 0.5
    # The subject: the same, or said more fully on one side.
    if a.subject_key == b.subject_key:
        confidence += 0.25
    elif a.subject_key and b.subject_key and (a.subject_key <= b.subject_key or b.subject_key <= a.subject_key):
        bigger, smaller = (a, b) if len(a.subject_key) > len(b.subject_key) else (b, a)
        if not (a.relation_key == b.relation_key or a.change_verb or b.change_verb or (bigger.copula_only and not smaller.copula_only)):
            # "The session timeout is 30 minutes" / "Sessions time out after 45 minutes" name one
            # attribute; "Dana is 34" / "Dana's phone number ends in 4471" name two.
            return None
        if _identifiers(a.subject_key) != _identifiers(b.subject_key):
            return None
        confidence += 0.1
    else:
        return None
    # The relation: the same verbs, one a change ("was raised to"), or a copula against a verb.
    state = False
    if a.relation_key == b.relation_key:
        confidence += 0.15
    elif (a.change_verb or b.change_verb) and (a.copula_only or b.copula_only or signal is not None):
        confidence += 0.1  # "was raised to 500" / "is 100"; "fires at 75%" / "was changed to 85%"
    elif a.copula_only or b.copula_only:
        confidence += 0.05
    elif signal is not None and a.value_key == b.value_key and _copular(a) and _copular(b):
        state = True  # "is enabled in production" / "is disabled in production": the state is the value
        confidence += 0.1
    else:
        return None
    numbers_change = signal is not None and signal.startswith("a number differs")
    negation_change = a.negated != b.negated
    purpose = a.scope_key and a.scope_key == b.scope_key and a.relation_key == b.relation_key == {"use"}  # "uses Jira for tickets"
    if (a.multi_valued or b.multi_valued) and not (numbers_change or negation_change or purpose) and not for_merge:
        return None  # a list that grows
    if a.scope_key != b.scope_key:
        if for_merge:
            return Conflict(_subject_shown(a, b), _value_shown(a), _value_shown(b), 0.0, "a scope differs")
        return None  # a value qualified on one side only holds somewhere else
    if not negation_change:
        if a.value_key == b.value_key and signal is None:
            return None
        if (a.value_key < b.value_key or b.value_key < a.value_key) and not numbers_change:
            return None  # one value says more: extra detail, not a change
        if signal is None:
            if not (a.value_key and b.value_key) or (a.subject_key != b.subject_key and (a.copula_only or a.relation_key != b.relation_key)):
                return None
            if a.relation_key != b.relation_key and not (a.change_verb or b.change_verb):
                return None  # "is a SEV1" / "was caused by a bad deploy": two attributes
            signal = "the value differs"
    if signal is None:
        signal = "a negation on one side only"
    if b.changed and not a.changed:
        confidence += 0.1
    if signal != "the value differs":
        confidence += 0.05
    if state:
        return Conflict(a.subject or b.subject, _state_shown(a), _state_shown(b), round(min(confidence, 0.99), 2), signal)
    return Conflict(_subject_shown(a, b), _value_shown(a, b), _value_shown(b, a), round(min(confidence, 0.99), 2), signal)


def _voiced(a: Statement, b: Statement) -> tuple[Statement, Statement]:
    """One side passive, the other active with the same verb ("... is owned by the data team." / "The
    frontend team owns ..."): the active side read the passive way (its object the subject)."""
    if a.passive == b.passive or a.relation_key != b.relation_key or a.event or b.event:
        return a, b
    passive, active = (a, b) if a.passive else (b, a)
    if not (active.subject_key and active.value_key):
        return a, b
    # One owns many things, but a thing has one owner: read the passive way, the doer is single.
    single = passive.multi_valued and passive.relation_key <= SINGLE_DOER
    passive = replace(passive, multi_valued=passive.multi_valued and not single)
    value = active.subject if _plain(active.subject.split()[0]) not in DETERMINERS else active.subject[:1].lower() + active.subject[1:]
    turned = replace(active, subject=active.value[:1].upper() + active.value[1:], value=value, subject_key=active.value_key, value_key=active.subject_key,
                     relation=passive.relation, multi_valued=passive.multi_valued)  # fmt: skip
    return (passive, turned) if a.passive else (turned, passive)


def _copular(statement: Statement) -> bool:
    return bool(statement.relation) and _plain(statement.relation.split()[0]) in COPULAS


def _state_shown(statement: Statement) -> str:
    words = [w for w in statement.relation.split() if _plain(w) not in COPULAS]
    return " ".join([*words, statement.value]).strip()


def _identifiers(key: frozenset[str]) -> frozenset[str]:
    return frozenset(w for w in key if any(ch.isdigit() for ch in w))


def _clause(text: str) -> str:
    return text.strip().rstrip(".!?")


def _subject_shown(a: Statement, b: Statement) -> str:
    """The subject, and its relation unless a copula: of the side that names the attribute best
    (not a change's verb: "lives in", not "moved to"; then the fuller subject)."""
    statement = min((b, a), key=lambda s: (s.change_verb or bool(s.relation_key & MOVE_VERBS) or _moved(s), -len(s.subject)))
    subject = statement.subject or "(unnamed)"
    if statement.copula_only or statement.change_verb:
        return subject
    relation = " ".join(w for w in statement.relation.split() if _plain(w) not in ("not", "n't", "no", "never", "longer"))
    return f"{subject} {relation}".strip()


def _moved(statement: Statement) -> bool:
    return any(_lemma(_plain(w)) in MOVE_VERBS for w in statement.relation.split())


def _value_shown(statement: Statement, other: Statement | None = None) -> str:
    value = statement.value or "(nothing)"
    if other is not None and statement.value_key == other.value_key and statement.scope:
        value = f"{value} {statement.scope}"  # "my Fitbit for 6 months" / "... for 9 months"
    said_no = any(is_negation(_plain(w)) or _plain(w) == "n't" for w in statement.relation.split())
    return f"not {value}" if said_no else value


def merges(text_a: str, text_b: str, similarity: float, duplicate_at: float, related_at: float) -> bool:
    """Does the semantic phase merge this pair? Only a duplicate by the pair classifier that states
    no other value of the same attribute, however weakly (`conflict` at any confidence), and where
    neither side names something the other does not ("... at the TechConnect conference" / "...
    currently at TechCorp")."""
    if classify(text_a, text_b, similarity, duplicate_at=duplicate_at, related_at=related_at).kind != "duplicate":
        return False
    names_a, names_b = _names(text_a), _names(text_b)
    if names_a - names_b and names_b - names_a:
        return False
    return conflict(text_a, text_b, for_merge=True) is None and conflict(text_b, text_a, for_merge=True) is None
