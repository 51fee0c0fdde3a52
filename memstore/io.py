"""Reading and writing memories as JSON: a JSON array or JSON Lines, validated with line numbers.

Accepted record shapes (fields may be mixed):

* memstore's own export: ``id, namespace, text, timestamp, importance, pinned, created_at,
  updated_at, last_recalled_at, recall_count, fact_key, meta``;
* the consolidation spec's ``{"id", "text", "timestamp", "importance"}``;
* the hygiene spec's ``{"id", "text", "created_at", "updated_at", "last_recalled_at",
  "recall_count", "pinned", "key"}`` with ISO dates; ``key`` is stored as ``fact_key``;
* ``expires_at``, when the memory stops being visible (see docs/time.md).

Dates may be Unix milliseconds or ISO 8601 dates/datetimes (a naive one is UTC). A missing
``timestamp`` is taken from ``updated_at``, else ``created_at``. ``norm_key`` in the input is
ignored: the key is always recomputed.

>>> import io
>>> [p.row["norm_key"] for p in read_memories(io.StringIO('{"id": "a", "text": "Hi!"}'), "x.jsonl").prepared]
['hi']
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import IO, Any, NamedTuple

from .defaults import DEFAULT_NAMESPACE
from .errors import ValidationError
from .records import PreparedRow, now_ms, prepare_row, require_embedding_fits
from .validate import INT64_MAX, INT64_MIN, is_int, require_int, require_string

DATE_FIELDS = ("created_at", "updated_at", "last_recalled_at", "timestamp", "expires_at")
# Columns that are derived or bookkeeping (the key, the write order, when a row entered this store):
# export leaves them out and import ignores them rather than trusting them.
DERIVED_FIELDS = ("norm_key", "seq", "stored_at")


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def iso_to_ms(value: str) -> int:
    """An ISO-8601 moment as Unix ms (UTC when it names no offset), exact: no float on the way."""
    moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def parse_moment(text: str, location: str) -> int:
    """A moment typed by a person: Unix ms (digits) or ISO-8601 ('2026-12-01', '2026-12-01T09:30:00+01:00')."""
    stripped = text.strip()
    if re.fullmatch(r"-?[0-9]+", stripped):  # ASCII digits only: int() would take "١٢" and "1_000"
        return require_int(int(stripped), location, None, INT64_MIN, INT64_MAX)
    try:
        return iso_to_ms(stripped)
    except ValueError:
        raise ValidationError(location, None, f"is not a moment: {text[:40]!r} (ISO-8601 such as 2026-12-01T09:00:00Z, or Unix ms)") from None


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _object_without_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # JSON leaves an object with a key twice to each reader; Python's keeps the last. A record whose
    # "text" appears twice would lose one without a word: it is refused instead.
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        repeated = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise ValueError(f"the key {repeated!r} appears twice in one object")
    return obj


def _strict_json_decoder() -> json.JSONDecoder:
    """Python's decoder, minus its NaN/Infinity extension, which JSON does not have, and refusing an
    object that holds a key twice."""
    return json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_object_without_repeats)


_DECODER = _strict_json_decoder()


def strict_json(text: str) -> Any:
    """`text` decoded as the files memstore reads are: no NaN or Infinity, no key twice in an object
    (ValueError, or json.JSONDecodeError, says why)."""
    return _DECODER.decode(text)


def _array_items(text: str, name: str) -> Iterator[tuple[int, Any]]:
    """Each element of a top-level JSON array, with the line it starts on."""
    decoder = _DECODER

    def skip_space(pos: int) -> int:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        return pos

    def invalid(pos: int, problem: str) -> ValidationError:
        return ValidationError(f"{name} line {_line_of(text, pos)}", None, f"invalid JSON: {problem}")

    pos = skip_space(text.index("[") + 1)
    while not text.startswith("]", pos):
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise invalid(exc.pos, exc.msg) from None
        except RecursionError:
            raise invalid(pos, "nested too deeply") from None
        except ValueError as exc:  # NaN, or an integer too long to convert
            raise invalid(pos, str(exc)) from None
        yield _line_of(text, pos), value
        pos = skip_space(end)
        if text.startswith(",", pos):
            pos = skip_space(pos + 1)
            if text.startswith("]", pos):
                raise invalid(pos, "trailing comma")
        elif not text.startswith("]", pos):
            raise invalid(pos, "expected ',' or ']'")
    trailing = text[pos + 1 :]
    if trailing.strip():
        raise invalid(pos + 1 + len(trailing) - len(trailing.lstrip()), "text after the array")


def jsonl_items(data: bytes | str, name: str) -> Iterator[tuple[int, Any]]:
    """Each non-blank line decoded; a line that is not valid UTF-8 or JSON yields its ValidationError.

    Lines end at "\n" only (JSON allows U+2028 inside strings); a trailing "\r" is JSON whitespace.
    """
    lines = data.split(b"\n" if isinstance(data, bytes) else "\n")
    for number, line in enumerate(lines, start=1):
        location = f"{name} line {number}"
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, ValidationError(location, None, f"not valid UTF-8 (byte {exc.start + 1} of the line)")
                continue
        if not line.strip():
            continue
        try:
            yield number, _DECODER.decode(line)
        except json.JSONDecodeError as exc:
            yield number, ValidationError(location, None, f"invalid JSON: {exc.msg}")
        except RecursionError:
            yield number, ValidationError(location, None, "invalid JSON: nested too deeply")
        except ValueError as exc:  # NaN, or an integer too long to convert
            yield number, ValidationError(location, None, f"invalid JSON: {exc}")


def decode_text(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ValidationError(f"{name} line {line}", None, f"not valid UTF-8 (byte {column} of the line)") from None


def _to_input_record(value: Any, location: str) -> dict[str, Any]:
    """Map one decoded JSON object onto the fields `prepare_row` takes."""
    if not isinstance(value, dict):
        raise ValidationError(location, None, "must be a JSON object")
    record = {k: v for k, v in value.items() if k not in DERIVED_FIELDS}
    if "key" in record:
        if record.get("fact_key") is not None:
            raise ValidationError(location, "key", "give either 'key' or 'fact_key', not both")
        record["fact_key"] = record.pop("key")
    for field in DATE_FIELDS:
        value = record.get(field)
        if isinstance(value, str):
            try:
                record[field] = iso_to_ms(value)
            except ValueError:
                raise ValidationError(location, field, f"is not an ISO date: {value[:40]!r}") from None
        elif value is not None and not is_int(value):
            raise ValidationError(location, field, f"must be an integer (Unix ms) or an ISO date, got {value!r:.40}")
    return record


class ReadResult(NamedTuple):  # a NamedTuple for the reason given in memstore.records
    prepared: list[PreparedRow]
    rejected: list[ValidationError]  # only filled with skip_invalid


def read_memories(
    source: IO[bytes] | IO[str],
    name: str,
    namespace: str | None = None,
    *,
    skip_invalid: bool = False,
    progress: Callable[[int, int], None] | None = None,
    store_model: Callable[[], tuple[str, int] | None] | None = None,
) -> ReadResult:
    """Read and validate every record of a JSON array or JSONL stream.

    By default the first bad record raises; with `skip_invalid` bad records are collected in
    `rejected` and the rest are returned. A JSON array that does not parse is fatal either way.
    `progress(line, total_lines)` is called as records are validated. `store_model()` gives the
    store's embedding model (name, width; None: it has none), asked once, when a record first
    carries a vector, which must then be of that model and width; without it that is left to the
    write.
    """
    now = now_ms()
    result = ReadResult([], [])
    models: list[tuple[str, int] | None] = []  # store_model's answer, once asked
    items, total_lines = _items(source, name)
    for line, value in items:
        if progress is not None:
            progress(line, total_lines)
        try:
            if isinstance(value, ValidationError):
                raise value
            location = f"{name} line {line}"
            record = _to_input_record(value, location)
            if namespace is not None and record.get("namespace") is None:  # null is "not given", as for every field
                record["namespace"] = namespace
            prepared = prepare_row(record, location, now)
            if prepared.embedding is not None and store_model is not None:
                # With the record's other fields, so a vector the write would refuse is skipped
                # (skip_invalid) or stops the import before anything is written.
                if not models:
                    models.append(store_model())
                require_embedding_fits(prepared.embedding, models[0], location)
            result.prepared.append(prepared)
        except ValidationError as error:
            if not skip_invalid:
                raise
            result.rejected.append(error)
    return result


def _items(source: IO[bytes] | IO[str], name: str) -> tuple[Iterator[tuple[int, Any]], int]:
    """The stream's (line, value) items and its number of lines."""
    data = source.read()
    data = data.removeprefix(b"\xef\xbb\xbf") if isinstance(data, bytes) else data.removeprefix("\ufeff")
    total_lines = data.count(b"\n" if isinstance(data, bytes) else "\n") + 1
    if data.lstrip().startswith(b"[" if isinstance(data, bytes) else "["):
        text = decode_text(data, name) if isinstance(data, bytes) else data
        return _array_items(text, name), total_lines
    return jsonl_items(data, name), total_lines


def read_checks(source: IO[bytes] | IO[str], name: str) -> list[dict[str, str]]:
    """Recall checks: a JSON list (or JSONL) of {"query", "expect_id"[, "namespace"]} objects."""
    checks = []
    for line, value in _items(source, name)[0]:
        location = f"{name} line {line}"
        if isinstance(value, ValidationError):
            raise value
        if not isinstance(value, dict):
            raise ValidationError(location, None, "must be a JSON object")
        unknown = sorted(set(value) - {"query", "expect_id", "namespace"})
        if unknown:
            raise ValidationError(location, unknown[0], "is not a check field (query, expect_id, namespace)")
        for field in ("query", "expect_id"):
            if field not in value:
                raise ValidationError(location, field, "is missing")
            require_string(value[field], location, field, allow_empty=False)
        require_string(value.setdefault("namespace", DEFAULT_NAMESPACE), location, "namespace", allow_empty=False)
        checks.append(value)
    return checks


def write_jsonl(rows, stream: IO[str]) -> int:
    """Write rows as JSON Lines (derived columns left out); return how many were written."""
    count = 0
    for row in rows:
        stream.write(json.dumps({k: v for k, v in row.items() if k not in DERIVED_FIELDS}, ensure_ascii=False, allow_nan=False))
        stream.write("\n")
        count += 1
    return count
