"""How the page shows values to a person: texts shortened at a word, ids shortened (the whole id
stays in the link and its tooltip), relevance as a share of the best match, counts with the right
plural, and the address a reviewer came from (only a path on this page, never another origin).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from markupsafe import Markup, escape

# A text in a list is shortened to about this many characters (the whole text is one click away).
TEXT_CHARS = 90
# An id longer than ID_WHOLE characters (a generated one has 32) shows its first ID_CHARS and an ellipsis.
ID_WHOLE, ID_CHARS = 16, 8


def short(text: str | None, limit: int = TEXT_CHARS) -> str:
    """`text` on one line, cut at the last word that fits in `limit` characters, with an ellipsis."""
    if text is None:
        return ""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit]
    space = cut.rfind(" ")
    if space >= limit // 2:  # a word boundary not too far back; else cut the long word itself
        cut = cut[:space]
    return cut.rstrip(" ,;:.") + "…"


def short_id(memory_id: str) -> str:
    """An id as a list shows it: whole up to ID_WHOLE characters, else its first ID_CHARS and "…"."""
    return memory_id if len(memory_id) <= ID_WHOLE else memory_id[:ID_CHARS] + "…"


def plural(count: int, one: str, many: str | None = None) -> str:
    """'1 flag', '3 flags', '1,200 memories' (`many` when adding an s is not the plural)."""
    return f"{count:,} {one if count == 1 else many or one + 's'}"


# The one of each word `MemoryStore.runs` gives in a run's `did` (flags_settled: "flags settled").
_SINGULAR = {"duplicates": "duplicate", "phases": "phase", "flags settled": "flag settled"}


def did_text(did: dict[str, int]) -> str:
    """What a run did, in words: "1,400 evicted, 1 phase" ("nothing" for an empty `did`)."""
    parts = []
    for name, count in did.items():
        words = name.replace("_", " ")
        parts.append(f"{count:,} {_SINGULAR.get(words, words) if count == 1 else words}")
    return ", ".join(parts) or "nothing"


def relevance(scores: list[float]) -> list[float]:
    """Each score as a share of the best one (0 to 1), which a bar shows: raw scores mean nothing to
    a reader, and fused, lexical and cosine scores are on different scales."""
    best = max(scores, default=0.0)
    return [max(score, 0.0) / best if best > 0 else 0.0 for score in scores]


def marked(text: str | None, words: Iterable[str]) -> Markup:
    """`text`, escaped, with each of `words` (the words that differ from the other side) in <mark>."""
    differing = set(words)
    parts = re.split(r"(\s+)", text or "")
    return Markup("").join(Markup("<mark>%s</mark>") % part if part in differing else escape(part) for part in parts)


def run_number(text: str | None) -> int | None:
    """A run's number as an action's answer carries it in the address (`done=N`), or None."""
    text = text or ""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


def where(url: str) -> str:
    """The store's location as the page's header shows it: a SQLite file as a path, the home
    folder written `~` ("~/agent.db"); any other URL as memstore prints it (password masked)."""
    if not url.startswith("sqlite:///"):
        return url
    path, home = url.removeprefix("sqlite:///"), os.path.expanduser("~")
    return "~" + path[len(home) :] if home not in ("", "/") and path.startswith(home + "/") else path


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def local_path(given: str | None, fallback: str) -> str:
    """Where to send a reviewer after an action: the page they came from when `given` is a path on
    this page (a leading '/', no scheme, no host, no '//' or '/\\', no control character), else
    `fallback`."""
    if not given or _CONTROL.search(given) or not given.startswith("/") or given[1:2] in ("/", "\\"):
        return fallback
    parts = urlsplit(given)
    if parts.scheme or parts.netloc:
        return fallback
    return given


__all__ = ["ID_CHARS", "TEXT_CHARS", "did_text", "local_path", "marked", "plural", "relevance", "run_number", "short", "short_id", "where"]
