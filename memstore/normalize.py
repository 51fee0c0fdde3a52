"""The normalised key: the one definition of when two memories are "the same fact"."""

from __future__ import annotations

import re

# The eight characters the rule removes; nothing else (`-`, `(`, `…` stay).
REMOVED_CHARACTERS = ".,!?;:'\""
_REMOVE_TABLE = str.maketrans("", "", REMOVED_CHARACTERS)
# `\s` on a str pattern is Unicode whitespace, the same set `str.strip` uses.
_WHITESPACE_RUN = re.compile(r"\s+")


def normalize_key(text: str) -> str:
    """Return the key under which `text` collides with its duplicates.

    The steps run in this literal order: lowercase, strip the ends, remove
    ``. , ! ? ; : ' "``, collapse each whitespace run to one space. Removal
    comes after the strip, so ``"Hello !"`` keys to ``"hello "``.

    >>> normalize_key("  user prefers   DARK mode ")
    'user prefers dark mode'
    >>> normalize_key("Hello !")
    'hello '
    """
    removed = text.lower().strip().translate(_REMOVE_TABLE)
    return _WHITESPACE_RUN.sub(" ", removed)
