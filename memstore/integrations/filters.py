"""LangGraph's search filter language, evaluated in Python on a stored value (pure Python; the
LangGraph store, memstore.integrations.langgraph, applies it to what recall or a listing found).

Equality is JSON equality (numbers as numbers, true is not 1); `$eq`, `$ne`, `$gt`, `$gte`, `$lt`,
`$lte` compare numbers with numbers and strings with strings; a dotted name reaches into nested
objects.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

_MISSING = object()  # a filtered field the value does not have
_ORDER = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same(actual: Any, wanted: Any) -> bool:
    """JSON equality: numbers as numbers (1 == 1.0), true is not 1, lists and objects element-wise."""
    if _is_number(actual) and _is_number(wanted):
        return actual == wanted
    if isinstance(actual, Mapping) and isinstance(wanted, Mapping):
        return actual.keys() == wanted.keys() and all(_same(actual[name], wanted[name]) for name in actual)
    if isinstance(actual, (list, tuple)) and isinstance(wanted, (list, tuple)):
        return len(actual) == len(wanted) and all(map(_same, actual, wanted))
    return type(actual) is type(wanted) and actual == wanted


def _field(value: Mapping[str, Any], name: str) -> Any:
    """value[name], or a dotted path into nested objects ("user.role"), or _MISSING."""
    if name in value:
        return value[name]
    node: Any = value
    for part in name.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _apply_operator(actual: Any, name: str, operand: Any) -> bool:
    if name in ("$eq", "$ne"):
        equal = _same(None if actual is _MISSING else actual, operand)
        return equal if name == "$eq" else not equal
    if name in _ORDER:
        # Numbers compare as numbers and strings as strings; anything else (a missing field, a
        # number against a string) does not match.
        comparable = (_is_number(actual) and _is_number(operand)) or (isinstance(actual, str) and isinstance(operand, str))
        return comparable and _ORDER[name](actual, operand)
    raise ValueError(f"Unsupported operator: {name}")


def _condition_holds(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping) and any(str(name).startswith("$") for name in wanted):
        return all(_apply_operator(actual, name, operand) for name, operand in wanted.items())
    if isinstance(wanted, Mapping):  # a filter on the fields of a nested object
        return isinstance(actual, Mapping) and all(_condition_holds(_field(actual, n), w) for n, w in wanted.items())
    return _same(None if actual is _MISSING else actual, wanted)


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """LangGraph's search filter, evaluated in Python on the stored value.

    >>> matches_filter({"n": 10, "tag": "a"}, {"tag": "a", "n": {"$gt": 9}})
    True
    >>> matches_filter({"n": 10}, {"n": {"$lt": 9.5}})
    False
    """
    return not filter or all(_condition_holds(_field(value, name), wanted) for name, wanted in filter.items())


__all__ = ["matches_filter"]
