"""Turning an input record into a row of `memories`: validation, defaults and the stored key.

Every write path goes through `prepare_row`, so `norm_key` is always computed here and never taken
from input. An update's change set (the fields given and its lifetime) is built here too, once
(`update_changes`: `MemoryStore.update` and a LangGraph put over a stored key).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import uuid
from collections.abc import Mapping
from typing import Any, NamedTuple

from .defaults import DEFAULT_IMPORTANCE, DEFAULT_NAMESPACE
from .errors import ValidationError
from .normalize import normalize_key
from .validate import (
    IMPORTANCE_MAX,
    IMPORTANCE_MIN,
    INT64_MAX,
    INT64_MIN,
    require_bool,
    require_int,
    require_rule_fields,
    require_string,
    require_ttl,
)

# Fields a caller may give; `norm_key` is deliberately not among them. `embedding` is the
# memory's vector as `export --with-vectors` writes it, {"model": NAME, "vector": [numbers]}.
INPUT_FIELDS = frozenset(
    {
        "id", "text", "namespace", "timestamp", "importance", "pinned", "fact_key", "meta",
        "created_at", "updated_at", "last_recalled_at", "recall_count", "expires_at", "embedding",
    }
)  # fmt: skip


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_id() -> str:
    return uuid.uuid4().hex


def scoped_id(namespace: str, given: str) -> str:
    """The id a memory gets when a caller confined to `namespace` (an MCP server) names it `given`.

    Ids are unique across the store, so storing `given` as it is would answer differently when
    another namespace holds it ("already holds a different memory") than when no one does: a
    caller could probe what other namespaces contain. Derived from the namespace and the caller's
    id, the same call always lands on the same id (a retry stays a retry), and no caller confined
    elsewhere can name it.
    """
    digest = hashlib.blake2b(f"{namespace}\x1f{given}".encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return f"n{digest}"


# The records below are NamedTuples, not frozen dataclasses: a dataclass compiles its methods when
# its module is imported, which a per-turn `memstore add` pays for (about three times a NamedTuple's
# cost, measured with python -m scripts.bench.startup --instructions).


class Embedding(NamedTuple):
    """A vector that came with a record: the model that made it, and the vector at unit length."""

    model: str
    vector: tuple[float, ...]


class PreparedRow(NamedTuple):
    """A checked row, not yet written. Its times that mean "when it was written" are provisional
    until `stamped`: the write path stamps them once it holds the store, so a write that queued for
    the lock (or behind an import's validation) is not dated before readers could see it."""

    row: dict[str, Any]
    given: frozenset[str]  # the fields the caller set; a retry is compared on these only
    location: str
    embedding: Embedding | None = None
    clock_fields: frozenset[str] = frozenset({"stored_at"})  # the fields that take the write's time
    ttl_ms: int | None = None  # a lifetime that starts at the write: expires_at = write time + ttl_ms

    def stamped(self, now: int) -> dict[str, Any]:
        """The row as written at `now` (Unix ms)."""
        row = dict(self.row)
        row.update(dict.fromkeys(self.clock_fields, now))
        if self.ttl_ms is not None:
            row["expires_at"] = now + self.ttl_ms
        return row


def prepare_row(record: Mapping[str, Any], location: str, now: int | None = None) -> PreparedRow:
    """Validate one input record and build its full `memories` row.

    Defaults: a generated id, namespace "default", importance 3, not pinned; `timestamp` is the
    record's `updated_at` or `created_at` if given, else now (Unix ms).
    """
    if not isinstance(record, Mapping):
        raise ValidationError(location, None, "must be a JSON object")
    unknown = sorted(set(record) - INPUT_FIELDS)
    if unknown:
        raise ValidationError(location, unknown[0], "is not a memstore field")
    given = frozenset(k for k, v in record.items() if v is not None)
    now = now_ms() if now is None else now

    def ms(field: str) -> int | None:
        value = record.get(field)
        return None if value is None else require_int(value, location, field, INT64_MIN, INT64_MAX)

    created_at = ms("created_at")
    updated_at = ms("updated_at")
    timestamp = ms("timestamp")
    clock_fields = {"stored_at"}
    if timestamp is None and updated_at is None and created_at is None:
        clock_fields.add("timestamp")
    if updated_at is None and created_at is None:
        clock_fields.add("updated_at")
    if created_at is None:
        clock_fields.add("created_at")
    if timestamp is None:
        timestamp = updated_at if updated_at is not None else created_at if created_at is not None else now
    created_at = created_at if created_at is not None else now
    row = {
        "id": record["id"] if record.get("id") is not None else new_id(),
        "namespace": record.get("namespace") if record.get("namespace") is not None else DEFAULT_NAMESPACE,
        "text": record.get("text"),
        "timestamp": timestamp,
        "importance": record.get("importance") if record.get("importance") is not None else DEFAULT_IMPORTANCE,
        "pinned": record.get("pinned") if record.get("pinned") is not None else False,
        "created_at": created_at,
        "updated_at": updated_at if updated_at is not None else created_at,
        "last_recalled_at": ms("last_recalled_at"),
        "recall_count": record.get("recall_count") if record.get("recall_count") is not None else 0,
        "fact_key": record.get("fact_key"),
        "meta": record.get("meta"),
        "expires_at": ms("expires_at"),
        "stored_at": now,  # when the row enters memstore: what "live at a past moment" starts from
    }
    if "text" not in given:
        raise ValidationError(location, "text", "is missing")
    # The rule fields are checked exactly as the reference checks them.
    require_rule_fields(row, location)
    require_string(row["namespace"], location, "namespace", allow_empty=False)
    require_bool(row["pinned"], location, "pinned")
    require_int(row["recall_count"], location, "recall_count", 0, INT64_MAX)
    if row["fact_key"] is not None:
        require_string(row["fact_key"], location, "fact_key")
    if row["meta"] is not None:
        require_meta(row["meta"], location)
    row["norm_key"] = normalize_key(row["text"])
    embedding = None if record.get("embedding") is None else require_embedding(record["embedding"], location)
    return PreparedRow(row, given - {"embedding"}, location, embedding, frozenset(clock_fields))


# How far from 1 the norm of a vector already at unit length may be: float32 rounding of a unit
# vector's values moves its norm by at most about 6e-8 (2**-24); well above that, far below any
# vector that needs scaling.
UNIT_SLACK = 1e-6


def require_embedding(value: Any, location: str) -> Embedding:
    """{"model": NAME, "vector": [numbers]}, the vector finite and not all zero, scaled to unit length."""
    if not isinstance(value, Mapping) or set(value) != {"model", "vector"}:
        raise ValidationError(location, "embedding", 'must be {"model": NAME, "vector": [numbers]}')
    model = require_string(value["model"], location, "embedding", allow_empty=False)
    vector = value["vector"]
    if not isinstance(vector, list) or not vector or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
        raise ValidationError(location, "embedding", "vector must be a list of numbers")
    try:
        values = tuple(float(x) for x in vector)
    except OverflowError:  # an integer of over 308 digits: JSON has no limit, a float has
        raise ValidationError(location, "embedding", "vector holds a number too large for a float") from None
    norm = math.sqrt(math.fsum(x * x for x in values))
    if not math.isfinite(norm) or norm == 0:
        raise ValidationError(location, "embedding", "vector must be finite and not all zero")
    if abs(norm - 1) <= UNIT_SLACK:
        # At unit length already (an export's: the float32 values of a stored vector): kept as given,
        # so vectors travel byte for byte. Divided by its norm, a few 1e-8 off 1, 42 % of 100,000
        # exported vectors came back with a last bit changed.
        return Embedding(model, values)
    return Embedding(model, tuple(x / norm for x in values))


def require_embedding_fits(embedding: Embedding, model: tuple[str, int] | None, location: str) -> None:
    """A vector a record carries is stored as a vector of the store's model (`model`: its name and
    width; None when the store has none), so it must be of that model and that width.

    The importer checks this with the record's other fields, before anything is written (so
    `--skip-invalid` skips such a record); the write path checks it again in its transaction, in
    case the store's model changed meanwhile."""
    if model is None:
        raise ValidationError(location, "embedding", "the store has no embedding model: run `memstore embeddings enable` first")
    name, dim = model
    if embedding.model != name:
        raise ValidationError(location, "embedding", f"is from the model {embedding.model!r}, the store's is {name!r}")
    if len(embedding.vector) != dim:
        raise ValidationError(location, "embedding", f"has {len(embedding.vector)} numbers, the store's model {dim}")


def require_meta(meta: Any, location: str) -> None:
    """A JSON object that strict JSON and UTF-8 can carry (no NaN, no lone surrogate), so export works."""
    if not isinstance(meta, Mapping):
        raise ValidationError(location, "meta", "must be a JSON object")
    try:
        json.dumps(meta, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise ValidationError(location, "meta", f"is not strict JSON ({exc.__class__.__name__})") from None


def lifetime_end(ttl: float | None, expires_at: int | None, now: int, location: str) -> int | None:
    """When a memory written at `now` stops being visible: `ttl` seconds later, or at `expires_at`
    (Unix ms, checked by `prepare_row`); None for never. Giving both is an error."""
    if ttl is None:
        return expires_at
    if expires_at is not None:
        raise ValidationError(location, "ttl", "give a lifetime (ttl) or an end (expires_at), not both")
    return now + math.ceil(require_ttl(ttl, location) * 1000)


def lifetime_change(ttl: float | None, expires_at: int | None, no_expiry: bool, now: int, location: str) -> dict[str, int | None]:
    """What an update changes of a lifetime: {"expires_at": end} (None: never), or {} for nothing."""
    end = lifetime_end(ttl, expires_at, now, location)
    if no_expiry and end is not None:
        raise ValidationError(location, "no_expiry", "cannot be combined with a lifetime (ttl or expires_at)")
    return {"expires_at": end} if end is not None or no_expiry else {}


def update_changes(
    now: int, location: str, *, text: str | None = None, importance: int | None = None, pinned: bool | None = None,
    meta: Mapping[str, Any] | None = None, fact_key: str | None = None, timestamp: int | None = None,
    ttl: float | None = None, expires_at: int | None = None, no_expiry: bool = False,
) -> dict[str, Any]:
    """The change set of an update (`MemoryStore.update`, a LangGraph put over a stored key): the
    fields given (None: unchanged) and what changes of the lifetime (lifetime_change), at `now`."""
    fields = {"text": text, "importance": importance, "pinned": pinned, "meta": meta, "fact_key": fact_key, "timestamp": timestamp}
    changes: dict[str, Any] = {name: value for name, value in fields.items() if value is not None}
    changes.update(lifetime_change(ttl, expires_at, no_expiry, now, location))
    return changes


def one_memory(text, id, namespace, timestamp, importance, pinned, fact_key, meta, ttl, expires_at) -> PreparedRow:
    """The row of one memory given field by field (MemoryStore.add and .remember). A `ttl` starts
    when the row is written (`PreparedRow.stamped`)."""
    now = now_ms()
    record = {
        "id": id, "text": text, "namespace": namespace, "timestamp": timestamp, "importance": importance,
        "pinned": pinned, "fact_key": fact_key, "meta": meta, "expires_at": lifetime_end(ttl, expires_at, now, "memory"),
    }  # fmt: skip
    prepared = prepare_row(record, "memory", now)
    if ttl is None:
        return prepared
    # A retried write says the same lifetime a moment later: its end does not tell a retry from a
    # different record.
    return prepared._replace(given=prepared.given - {"expires_at"}, ttl_ms=prepared.row["expires_at"] - now)


def memory_state(row: Mapping[str, Any], now: int) -> str:
    """"archived", "expired" (its lifetime ended; still in the live table until a job archives it)
    or "live"."""
    if row.get("archived_at") is not None:
        return "archived"
    return "expired" if row.get("expires_at") is not None and row["expires_at"] <= now else "live"


def same_json(stored: Any, given: Any) -> bool:
    """Equal as JSON: 1, 1.0 and true are equal to Python, not to a JSON reader."""
    return json.dumps(stored, sort_keys=True) == json.dumps(given, sort_keys=True)


def is_retry_of(prepared: PreparedRow, stored: Mapping[str, Any]) -> bool:
    """True when `stored` already holds what the caller asked for (an agent retrying a write)."""
    return all(
        same_json(stored[field], prepared.row[field]) if field == "meta" else prepared.row[field] == stored[field]
        for field in prepared.given
    )


__all__ = [
    "IMPORTANCE_MAX", "IMPORTANCE_MIN",
    "PreparedRow", "is_retry_of", "lifetime_change", "lifetime_end", "memory_state", "new_id", "now_ms", "one_memory", "prepare_row", "require_embedding_fits",
    "same_json",
]  # fmt: skip
