"""Field rules shared by the reference and the store, so both accept exactly the same records.

Each `require_X(value, ...)` returns `value` when it is a valid X and raises `ValidationError`
(saying where and why) otherwise. Pure Python: nothing here touches the database.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .defaults import DAY_MS
from .errors import ValidationError

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
IMPORTANCE_MIN = 1
IMPORTANCE_MAX = 5
# A memory is a fact, not a document; this also keeps one bad record from filling the disk.
MAX_TEXT_CHARS = 1_000_000


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def is_int(value: Any) -> bool:
    """True for an int that is not a bool (JSON `true` must not pass as importance 1)."""
    return isinstance(value, int) and not isinstance(value, bool)


def require_string(
    value: Any, location: str, field: str, *, allow_empty: bool = True, max_chars: int = MAX_TEXT_CHARS
) -> str:
    """A str that SQLite and PostgreSQL can both store: no NUL, no lone surrogate, not huge."""
    if not isinstance(value, str):
        raise ValidationError(location, field, f"must be a string, got {_describe(value)}")
    if len(value) > max_chars:
        raise ValidationError(location, field, f"is longer than {max_chars:,} characters ({len(value):,})")
    if not allow_empty and not value:
        raise ValidationError(location, field, "must not be empty")
    if "\x00" in value:
        raise ValidationError(location, field, "must not contain a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(location, field, "is not valid Unicode (lone surrogate)") from None
    return value


def require_int(value: Any, location: str, field: str, low: int, high: int) -> int:
    if not is_int(value) or not low <= value <= high:
        bounds = "a signed 64-bit range" if (low, high) == (INT64_MIN, INT64_MAX) else f"{low}..{high}"
        raise ValidationError(location, field, f"must be an integer in {bounds}, got {_describe(value)}")
    return value


def require_bool(value: Any, location: str, field: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(location, field, f"must be true or false, got {_describe(value)}")
    return value


# A lifetime's units, in seconds.
TTL_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def require_ttl(value: Any, location: str, field: str = "ttl") -> float:
    """A lifetime in seconds: a positive, finite number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < 2**53) or value != value:
        raise ValidationError(location, field, f"must be a positive number of seconds, got {_describe(value)}")
    return float(value)


def parse_ttl(text: str, location: str = "--ttl") -> float:
    """'30d', '12h', '90m', '45s', '1.5h' -> seconds: a positive number and one of the units s, m, h, d."""
    import re

    # ASCII digits only, as a moment takes them (io.parse_moment): `\d` and float() would also take
    # "١٢" (Arabic-Indic) or "１２" (fullwidth), which no other field of memstore reads as a number.
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smhd])\s*", text) if isinstance(text, str) else None
    if match is None:
        raise ValidationError(location, None, f"is not a lifetime: {_describe(text)} (a positive number and a unit, s, m, h or d: 30d, 12h, 90s)")
    return require_ttl(float(match[1]) * TTL_UNITS[match[2]], location, None)


def require_moment(value: Any, location: str, field: str = "as_of") -> int:
    """A moment: Unix ms."""
    return require_int(value, location, field, INT64_MIN, INT64_MAX)


# A run records its capacity in a 32-bit column on PostgreSQL (consolidation_runs.capacity): a
# larger one failed the run there ("integer out of range") while SQLite took it. Two billion
# memories per namespace is beyond any store, so both backends take the same range.
CAPACITY_MAX = 2**31 - 1


def require_limit(limit: Any, location: str) -> int | None:
    """At most how many rows a read returns (None: all). A negative one meant "all" on SQLite and
    failed on PostgreSQL, so it is refused on both."""
    return None if limit is None else require_int(limit, location, "limit", 0, INT64_MAX)


def require_capacity(capacity: Any) -> int:
    if not is_int(capacity) or capacity < 0:
        raise ValidationError("capacity", None, f"must be a non-negative integer, got {_describe(capacity)}")
    if capacity > CAPACITY_MAX:
        raise ValidationError("capacity", None, f"must be at most {CAPACITY_MAX:,}, got {_describe(capacity)}")
    return capacity


def require_fraction(value: Any, location: str) -> float:
    """A number from 0 to 1 (a threshold), not a bool, not NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValidationError(location, None, f"must be a number from 0 to 1, got {_describe(value)}")
    return value


def require_days(value: Any, location: str) -> int:
    return require_int(value, location, None, 0, INT64_MAX // DAY_MS)


def require_rule_fields(record: Any, location: str) -> None:
    """The fields the consolidation rules read: id, text, timestamp, importance (and pinned)."""
    if not isinstance(record, Mapping):
        raise ValidationError(location, None, f"must be an object, got {_describe(record)}")
    for field in ("id", "text", "timestamp", "importance"):
        if field not in record:
            raise ValidationError(location, field, "is missing")
    require_string(record["id"], location, "id", allow_empty=False)
    require_string(record["text"], location, "text")
    require_int(record["timestamp"], location, "timestamp", INT64_MIN, INT64_MAX)
    require_int(record["importance"], location, "importance", IMPORTANCE_MIN, IMPORTANCE_MAX)
    if "pinned" in record:
        require_bool(record["pinned"], location, "pinned")
