"""What every importer shares: the record it hands over, the id it derives, and how it reads times.

An importer reads its whole source and turns each of the source's records into a `SourceRecord`:
memstore's input fields (those `prepare_row` takes) plus the record's kind ("observation",
"relation", "item", ...) and, when the source kept it but not as live (mem0's archived or deleted
memories), the source's state, so it arrives in the archive rather than being dropped. A record
that cannot be mapped is a `ValidationError` naming the source's file, the record and the field,
in its place in the list, so `--skip-invalid` can skip exactly it.

Ids are derived from the source's own identity for the record (a mem0 id, a LangGraph namespace and
key, an entity's name and an observation) and the namespace it lands in: importing a source twice
finds every record stored already and adds nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, NamedTuple

from ..errors import ValidationError
from ..io import decode_text, iso_to_ms, strict_json
from ..validate import INT64_MAX, INT64_MIN, is_int

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class SourceRecord(NamedTuple):
    kind: str  # what the record was in its source: "item", "observation", "relation", "memory", ...
    location: str  # the file and the record within it, as errors name it
    record: dict[str, Any]  # memstore's input fields (see memstore.records.INPUT_FIELDS)
    source_state: str | None = None  # the source's state for a record it kept but not as live


Read = SourceRecord | ValidationError  # what an importer yields for each record of its source


def imported_id(source_format: str, namespace: str, *identity: str) -> str:
    """The id of an imported record: the format, then a digest of the namespace it lands in and the
    source's own identity for it. The same record imported again gets the same id (the import is
    idempotent); imported into another namespace, it is another memory.

    >>> first = imported_id("mem0", "alice", "2f6e")
    >>> first[:5], len(first), first == imported_id("mem0", "alice", "2f6e"), first == imported_id("mem0", "bob", "2f6e")
    ('mem0-', 37, True, False)
    """
    joined = "\x1f".join((namespace, *identity)).encode("utf-8", "surrogatepass")
    return f"{source_format}-{hashlib.blake2b(joined, digest_size=16).hexdigest()}"


def moment_ms(value: Any, location: str, field: str) -> int | None:
    """A moment as a source gives it, as Unix ms (UTC): an ISO-8601 string (naive means UTC; SQLite's
    "2026-12-03 09:30:00" too), a `datetime` (a database driver's), or None. Sub-millisecond digits
    are dropped: memstore keeps times to the millisecond."""
    if value is None:
        return None
    if isinstance(value, datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
        return _in_range((moment - _EPOCH) // timedelta(milliseconds=1), location, field)
    if isinstance(value, str):
        try:
            return _in_range(iso_to_ms(value), location, field)
        except ValueError:
            raise ValidationError(location, field, f"is not an ISO-8601 date: {value[:40]!r}") from None
    raise ValidationError(location, field, f"must be an ISO-8601 date, got {value!r:.40}")


def epoch_seconds_ms(value: Any, location: str, field: str) -> int | None:
    """Unix seconds (an int or a float, as time.time() gives them) as Unix ms, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError(location, field, f"must be Unix seconds (a number), got {value!r:.40}")
    return _in_range(math.floor(value * 1000) if not is_int(value) else value * 1000, location, field)


def day_end_ms(value: Any, location: str, field: str) -> int | None:
    """A date ("2026-12-31") as the Unix ms its day ends at, UTC (the first moment of the next day):
    a memory that expires on a date is visible through that day. None stays None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(location, field, f"must be a date (YYYY-MM-DD), got {value!r:.40}")
    try:
        day = datetime.fromisoformat(value.strip()[:10]).replace(tzinfo=timezone.utc)
    except ValueError:
        raise ValidationError(location, field, f"is not a date (YYYY-MM-DD): {value[:40]!r}") from None
    return _in_range((day + timedelta(days=1) - _EPOCH) // timedelta(milliseconds=1), location, field)


def json_document(data: bytes, name: str) -> Any:
    """A whole JSON file, decoded as memstore reads JSON (no NaN, no key twice); a file that is not
    JSON is one error naming its line."""
    text = decode_text(data.removeprefix(b"\xef\xbb\xbf"), name)
    try:
        return strict_json(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{name} line {exc.lineno}", None, f"invalid JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:
        raise ValidationError(name, None, f"invalid JSON: {exc}") from None


# How deeply a record's JSON may nest: what a source wrote at 990 levels parses, then fails where
# the store encodes it again (Python's recursion limit, 1,000); no memory's fields nest so deep.
MAX_NESTING = 500


def require_shallow(value: Any, location: str, field: str) -> Any:
    """`value`, unless its lists and objects nest more than MAX_NESTING deep (counted without
    recursion: the value may be as deep as the parser allowed)."""
    level: list[Any] = [value]
    for _ in range(MAX_NESTING + 1):
        level = [inner for outer in level for inner in (outer.values() if isinstance(outer, dict) else outer if isinstance(outer, list) else ())]
        if not level:
            return value
    raise ValidationError(location, field, f"is nested more than {MAX_NESTING} levels deep")


def _in_range(ms: int, location: str, field: str) -> int:
    if not INT64_MIN <= ms <= INT64_MAX:
        raise ValidationError(location, field, "is out of range")
    return ms


def required(record: Mapping[str, Any], field: str, location: str, kind: type | tuple[type, ...] = str) -> Any:
    """`record[field]`, which must be present and of `kind` (a non-empty string by default)."""
    value = record.get(field)
    if value is None:
        raise ValidationError(location, field, "is missing")
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ValidationError(location, field, f"must be a {expected}, got {value!r:.40}")
    if isinstance(value, str) and not value.strip():
        raise ValidationError(location, field, "must not be empty")
    return value


def optional(record: Mapping[str, Any], field: str, location: str, kind: type | tuple[type, ...]) -> Any:
    """`record[field]` when present and not null, checked to be of `kind`; else None."""
    return None if record.get(field) is None else required(record, field, location, kind)


def extra_fields(record: Mapping[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """The fields of `record` an importer does not map: they are kept in meta ("extra"), never dropped."""
    return {name: value for name, value in record.items() if name not in known}


def with_extra(meta: dict[str, Any], record: Mapping[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """`meta`, with the record's unmapped fields under "extra" when it has any."""
    extra = extra_fields(record, known)
    if extra:
        meta["extra"] = extra
    return meta


__all__ = [
    "MAX_NESTING", "Read", "SourceRecord", "day_end_ms", "epoch_seconds_ms", "extra_fields", "imported_id", "json_document", "moment_ms",
    "optional", "require_shallow", "required", "with_extra",
]  # fmt: skip
