"""The stretches of time a query names ("last week", "in March", "two months ago"), relative to the
moment recall reads at: hybrid recall gives a memory written inside one a bonus (`TIME_WEIGHT`,
`memstore.recall.fusion`).

English only, training-free, and deliberately plain; a query that names no time gets no window:

* a month's name ("in March", "on June 3rd"): that month, in the latest year in which it is not
  after the moment's month (March asked in May 2023: March 2023; October: October 2022). "May" counts
  only capitalised, so the verb does not;
* "last/past/previous/recent [N] day|week|month|year(s)": the N units up to the moment (N in digits or
  words; "a few" 3, "a couple of" 2, "several" 4);
* "N units ago": N units before the moment, give or take half a unit (at least a day);
* "yesterday", "last <weekday>", "last weekend", "this week", "this month".

A memory tells of an event when it is written, or some days after: every window's end is widened by
`WRITTEN_WITHIN_DAYS` (chosen on the tuning part of LongMemEval: docs/semantic.md).

Any moment and any count give windows, never an error: a window is clamped to the times a timestamp
can hold (64-bit Unix ms), so "the last 999...9 days" reaches back to the first of them. A month,
a weekday or a weekend is read on the calendar of the years 1 to 9999: asked at a moment outside
them, or "in March" asked in January of year 1, it names no window.

>>> from datetime import datetime, timezone
>>> asked = int(datetime(2023, 5, 20, tzinfo=timezone.utc).timestamp() * 1000)
>>> [(datetime.fromtimestamp(start / 1000, timezone.utc).date().isoformat(),
...   datetime.fromtimestamp(end / 1000, timezone.utc).date().isoformat())
...  for start, end in windows("What did I buy in March?", asked)]
[('2023-03-01', '2023-04-08')]
>>> windows("How many books have I read?", asked)
[]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

from ..defaults import DAY_MS
from ..validate import INT64_MAX, INT64_MIN

# How long after an event a memory of it may be written, in days: added to every window's end.
WRITTEN_WITHIN_DAYS = 7

_MONTHS = "january february march april may june july august september october november december".split()
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_COUNTS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3,
    "several": 4,
}  # fmt: skip
_UNIT_DAYS = {"day": 1.0, "week": 7.0, "month": 30.44, "year": 365.25}
_COUNT = r"(\d+|" + "|".join(sorted(_COUNTS, key=len, reverse=True)) + r")"
_UNIT = r"(day|week|month|year)s?"
_MONTH = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b", re.IGNORECASE)
_RECENT = re.compile(r"\b(?:past|last|previous|recent)\s+(?:" + _COUNT + r"\s+)?" + _UNIT + r"\b")
_AGO = re.compile(r"\b" + _COUNT + r"\s+" + _UNIT + r"\s+ago\b")
_LAST_WEEKDAY = re.compile(r"\blast\s+(" + "|".join(_WEEKDAYS) + r")\b")
_THIS = re.compile(r"\bthis\s+(week|month)\b")


def windows(query: str, now: int) -> list[tuple[int, int]]:
    """The windows (start, end) in Unix ms, ends widened, that `query` names relative to `now`,
    each within the range of a timestamp."""
    lowered = query.lower()
    moment = _calendar_moment(now)
    found: list[tuple[float, float]] = []
    for match in _MONTH.finditer(query) if moment is not None else ():
        if match.group(1).lower() == "may" and match.group(1) != "May":
            continue
        month = _MONTHS.index(match.group(1).lower()) + 1
        year = moment.year if month <= moment.month else moment.year - 1
        if year >= 1:  # March asked in January of year 1 names no month of the calendar
            found.append((_month_start(year, month), _month_start(year + (month == 12), month % 12 + 1)))
    for match in _RECENT.finditer(lowered):
        count = _count(match.group(1)) if match.group(1) else 1.0
        found.append((now - count * _UNIT_DAYS[match.group(2)] * DAY_MS, now))
    for match in _AGO.finditer(lowered):
        unit = _UNIT_DAYS[match.group(2)]
        centre, half = now - _count(match.group(1)) * unit * DAY_MS, max(unit / 2, 1.0) * DAY_MS
        found.append((centre - half, centre + half))
    if re.search(r"\byesterday\b", lowered):
        found.append((now - 2 * DAY_MS, now))
    if moment is not None:
        midnight = _ms(moment.replace(hour=0, minute=0, second=0, microsecond=0))
        for match in _LAST_WEEKDAY.finditer(lowered):
            day = midnight - ((moment.weekday() - _WEEKDAYS.index(match.group(1))) % 7 or 7) * DAY_MS
            found.append((day, day + DAY_MS))
        if re.search(r"\blast\s+weekend\b", lowered):
            saturday = midnight - ((moment.weekday() - 5) % 7 or 7) * DAY_MS
            found.append((saturday, saturday + 2 * DAY_MS))
    for match in _THIS.finditer(lowered):
        found.append((now - (7 if match.group(1) == "week" else 31) * DAY_MS, now))
    return [(_clamped(start), min(_clamped(end) + WRITTEN_WITHIN_DAYS * DAY_MS, INT64_MAX)) for start, end in found]


def inside(timestamp: int, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether `timestamp` falls in any of `spans` (`windows`' answer)."""
    return any(start <= timestamp <= end for start, end in spans)


def _count(word: str) -> float:
    return float(word) if word.isdigit() else float(_COUNTS[word])


def _ms(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def _calendar_moment(now: int) -> datetime | None:
    """`now` as a date and time of the calendar (UTC), or None beyond its years 1 to 9999."""
    try:
        return _EPOCH + timedelta(milliseconds=now)
    except OverflowError:
        return None


def _month_start(year: int, month: int) -> int:
    """The first moment of a month, Unix ms (UTC); the month after December 9999 is where 9999 ends."""
    if year > 9999:
        return _ms(datetime(9999, 12, 31, tzinfo=timezone.utc)) + DAY_MS
    return _ms(datetime(year, month, 1, tzinfo=timezone.utc))


def _clamped(ms: float) -> int:
    """A moment as a timestamp can hold it: a whole ms within 64 bits (a count of days can reach
    beyond them, even to infinity)."""
    return INT64_MIN if ms <= INT64_MIN else INT64_MAX if ms >= INT64_MAX else int(ms)
