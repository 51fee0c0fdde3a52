"""Options and arguments several commands share, so `--json`, `--namespace` or `--checks` mean the
same everywhere; the parsing of option values; and `open_store`, the store the group opens."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any

import click

from ..defaults import RECALL_CHECK_K, DEFAULT_NAMESPACE, RECALL_MODES
from ..io import iso_to_ms, parse_moment, read_checks, strict_json
from ..store import MemoryStore
from ..validate import CAPACITY_MAX, INT64_MAX, INT64_MIN, parse_ttl


def mode_option(help: str) -> Callable[[Callable], Callable]:
    return click.option("--mode", type=click.Choice(RECALL_MODES), default=None, help=help)


CHECKS_MODE_HELP = "How recall checks rank (default: as recall does, hybrid when the store has vectors, else lexical)."


GATING_CHECKS_HELP = "Recall checks (JSON list of {query, expect_id}); apply only if all pass."


def checks_options(checks_help: str = GATING_CHECKS_HELP) -> Callable:
    """--checks FILE, -k and --mode; `checks_help` says what the command does with the checks."""

    def decorate(fn: Callable) -> Callable:
        fn = mode_option(CHECKS_MODE_HELP)(fn)
        fn = click.option("-k", "k", type=int64(1), default=RECALL_CHECK_K, show_default=True, help="Recall depth for --checks.")(fn)
        return click.option("--checks", type=click.File("rb"), default=None, help=checks_help)(fn)

    return decorate


def read_checks_file(file) -> list[dict[str, str]] | None:
    return None if file is None else read_checks(file, getattr(file, "name", "<stdin>"))


def parse_now(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return iso_to_ms(value)
    except ValueError:
        raise click.BadParameter(f"not an ISO date: {value!r}", param_hint="--now") from None


# Lifetimes and moments are parsed as the command starts; a bad one is a memstore error, so it reaches
# the user as one line naming the option (exit 1), before the store is opened.
def _lifetime(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    return None if value is None else parse_ttl(value, "--ttl")


def _moment(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    return None if value is None else parse_moment(value, "--" + param.name.replace("_", "-"))


def lifetime_options(fn: Callable) -> Callable:
    fn = click.option(
        "--expires-at", default=None, callback=_moment, metavar="ISO|MS",
        help="When the memory stops being visible: ISO-8601 or Unix ms.",
    )(fn)  # fmt: skip
    return click.option(
        "--ttl", default=None, callback=_lifetime, metavar="DURATION",
        help="How long the memory stays visible from now: a number and s, m, h or d (30d, 12h, 90s).",
    )(fn)  # fmt: skip


def as_of_option(fn: Callable) -> Callable:
    return click.option(
        "--as-of", default=None, callback=_moment, metavar="ISO|MS",
        help="Answer with the memories that were live at this moment (ISO-8601 or Unix ms).",
    )(fn)  # fmt: skip


def list_kept_option(fn: Callable) -> Callable:
    return click.option(
        "--list-kept", is_flag=True,
        help='Also list every kept id (JSON: "kept_ids"); this reads the whole live set.',
    )(fn)  # fmt: skip


def all_archived_option(fn: Callable) -> Callable:
    return click.option("--all", "show_all", is_flag=True, help="List every archived memory, not only the first ones.")(fn)


def parse_meta(meta: str | None) -> Any:
    try:
        return None if meta is None else strict_json(meta)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON: {exc.msg}", param_hint="--meta") from None
    except (ValueError, RecursionError) as exc:  # a number of over 4,300 digits, nesting too deep
        raise click.BadParameter(f"not JSON memstore can read: {str(exc)[:80] or type(exc).__name__}", param_hint="--meta") from None


class _AsciiDigits:
    """A number typed on the command line is written in ASCII digits, as --ttl and --expires-at
    take it: click's int and float types convert with int() and float(), which also take "١٢"
    (Arabic-Indic), "１２" (fullwidth) and "1_000". What click refuses keeps click's own words."""

    ascii_form: re.Pattern[str]

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)  # type: ignore[misc]
        if isinstance(value, str) and not self.ascii_form.fullmatch(value):
            self.fail(f"{value!r} is not a number in ASCII digits", param, ctx)  # type: ignore[attr-defined]
        return number


_ASCII_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")
_ASCII_DECIMAL = re.compile(r"\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*")


class Integer(_AsciiDigits, click.types.IntParamType):
    """An integer option whose range a later check owns (importance, a timestamp: named by field)."""

    ascii_form = _ASCII_INTEGER


INTEGER = Integer()


class Int64(_AsciiDigits, click.IntRange):
    ascii_form = _ASCII_INTEGER

    def _describe_range(self) -> str:
        """The range as --help words it: "1 or more", "1 to 1000", not "1<=x<=9223372036854775807"
        (the 64-bit bounds, and a capacity's 32, are the databases', not a choice a person makes)."""
        if self.min == INT64_MIN:
            return "any integer"
        if self.max in (INT64_MAX, CAPACITY_MAX):
            return f"{self.min} or more"
        return f"{self.min} to {self.max}"


def int64(min: int = INT64_MIN, max: int = INT64_MAX) -> click.IntRange:
    """An integer option within the databases' 64-bit integers (beyond them a query cannot even
    bind the value), or within `max` (a capacity: CAPACITY_MAX; a page: its largest)."""
    return Int64(min=min, max=max)


class Fraction(_AsciiDigits, click.FloatRange):
    """A number from `min` to `max`, NaN refused (click's FloatRange lets it through: every
    comparison with NaN is false)."""

    ascii_form = _ASCII_DECIMAL

    def _describe_range(self) -> str:
        return f"{self.min:g} to {self.max:g}"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FloatRange.convert(self, value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number", param, ctx)
        return super().convert(value, param, ctx)


def json_option(fn: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document (one line).")(fn)


def namespace_options(fn: Callable) -> Callable:
    fn = click.option("--all-namespaces", is_flag=True, help="Every namespace.")(fn)
    return click.option("--namespace", "-n", default=None, help=f"Namespace (default: {DEFAULT_NAMESPACE!r}).")(fn)


def chosen_namespace(namespace: str | None, all_namespaces: bool) -> str | None:
    if namespace is not None and all_namespaces:
        raise click.UsageError("give --namespace or --all-namespaces, not both")
    return None if all_namespaces else (namespace or DEFAULT_NAMESPACE)


def explain_empty(store: MemoryStore, namespace: str | None, given: bool, *, refuse: bool = True) -> None:
    """After an answer with nothing in it for `namespace`: a namespace given (-n) that holds nothing
    is an error naming the nearest ones (`refuse=False`, for an agent's recall in a namespace it has
    not written to yet: the same words as a hint on stderr, exit 0); the default one holding nothing
    while others do gets a hint on stderr. A store with nothing anywhere needs neither."""
    if namespace is None:
        return
    known = store.namespace_known(namespace)
    if known["exists"] or not known["namespaces"]:
        return
    nearest = f"; nearest: {', '.join(known['nearest'])}" if known["nearest"] else ""
    if given and refuse:
        raise click.ClickException(f"no namespace {namespace!r} in this store{nearest} (--all-namespaces: every one)")
    if given:
        return click.echo(f"namespace {namespace!r} holds nothing{nearest}", err=True)
    shown = ", ".join(known["namespaces"][:NAMESPACES_SHOWN]) + (", ..." if len(known["namespaces"]) > NAMESPACES_SHOWN else "")
    click.echo(f"namespace {namespace!r} holds nothing; the store's namespaces: {shown} (-n NAME, or --all-namespaces)", err=True)


# Namespaces a hint names before "...".
NAMESPACES_SHOWN = 5


def open_store(ctx: click.Context, *, create: bool = False) -> MemoryStore:
    """`MemoryStore(--db)`, closed when the command ends; only the commands that write new memories
    may create it. A command calls it once, then the one method that does its work."""
    store = MemoryStore(ctx.find_root().obj["location"], create=create)

    def close() -> None:
        # What the command printed reaches its reader first: closing writes the recalls counted
        # (a write, which may wait for another writer's lock).
        sys.stdout.flush()
        store.close()

    ctx.call_on_close(close)
    return store
