"""The pages of `memstore web`: server-rendered HTML over one MemoryStore.

Every action is a POST form that calls the MemoryStore method the CLI calls for it (so it is the
same run `memstore restore` undoes) and answers with what it did and, where it archived something,
the button that undoes it. Reads use the same methods, plus the page's own reads (`queries`).
A page kept to one namespace (`--namespace`) answers an id or a run of another namespace exactly as
one that does not exist.
"""

from __future__ import annotations

import hmac
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from sqlalchemy.exc import SQLAlchemyError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..db import database_error, read_transaction
from ..defaults import DEFAULT_NAMESPACE
from ..errors import MemstoreError, NotFoundError, ValidationError
from ..io import parse_moment
from ..maintain import PHASES
from ..records import memory_state, now_ms
from ..store import MemoryStore
from ..validate import INT64_MAX, INT64_MIN, parse_ttl
from . import charts, queries
from .health import health_charts
from .guard import CSRF_FIELD, csrf_value

HERE = Path(__file__).parent
PAGE_SIZE = 50
SEARCH_K = 20
# maintain's phases that read every namespace's rows.
STORE_WIDE_PHASES = ("check", "verify")
# Reasons a memory leaves the live set, in the order the overview shows them.
REASONS = ("duplicate", "semantic_duplicate", "evicted", "expired", "stale", "superseded", "forgotten")


# Characters that reorder the text around them (bidi embeddings, overrides, isolates and marks): in
# an id or a namespace they could make a button's label say another id, so the page shows them as
# \u escapes. Memory text keeps them, inside an element of its own direction (dir="auto").
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_SHOWN_AS_ESCAPES = {ord(char): f"\\u{ord(char):04x}" for char in BIDI_CONTROLS}


def visible(value: Any) -> str:
    """An id, a namespace or a label as the page shows it: bidi controls as visible \\uXXXX."""
    return str(value).translate(_SHOWN_AS_ESCAPES)


def utc(ms: int | None) -> str:
    """Unix ms as the page shows it: a UTC date-time to the second."""
    if ms is None:
        return ""
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (ValueError, OverflowError, OSError):  # past year 9999 (or before year 1): the number itself
        return f"{ms} ms"



@dataclass
class Site:
    store: MemoryStore
    token: str
    namespace: str | None  # the one namespace the page may see, or None for all
    read_only: bool

    def __post_init__(self) -> None:
        self.templates = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True))
        self.templates.filters["utc"] = utc
        self.templates.filters["visible"] = visible
        self.csrf = csrf_value(self.token)

    def render(self, request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self.templates.get_template(name).render(
            request=request, site=self, csrf_field=CSRF_FIELD, csrf=self.csrf, **context
        )
        return HTMLResponse(html, status_code=status)

    def chosen_namespace(self, request: Request) -> str:
        """The namespace a page shows: the page's own, else the one asked for, else the default."""
        if self.namespace is not None:
            return self.namespace
        return request.query_params.get("namespace") or DEFAULT_NAMESPACE

    def scope(self) -> str | None:
        return self.namespace

    async def form(self, request: Request) -> dict[str, str]:
        """The POSTed fields, once the page may write and the CSRF field matches."""
        if self.read_only:
            raise HTTPException(403, "this page is read-only (memstore web --read-only)")
        fields = {key: str(value) for key, value in (await request.form()).items()}
        if not hmac.compare_digest(fields.get(CSRF_FIELD, ""), self.csrf):
            raise HTTPException(403, "the form's CSRF field is missing or wrong: reload the page and try again")
        return fields


# -- reads ----------------------------------------------------------------------------------------


async def overview(request: Request) -> Response:
    site: Site = request.app.state.site
    store, now = site.store, now_ms()
    chosen = site.chosen_namespace(request)
    show_all = request.query_params.get("all") == "yes"
    with read_transaction(store.engine) as conn:
        figures = queries.overview(conn, site.scope(), chosen, now, show_all=show_all)
    health = health_charts(figures.runs, chosen, visible(chosen), queries.STALENESS_BINS, figures.staleness)
    runs = store.runs(10) if site.scope() is None else [run for run in store.runs(50) if run["namespace"] == site.scope()][:10]
    return site.render(
        request, "overview.html", rows=figures.rows, namespace_count=figures.namespace_count, show_all=show_all, detail=figures.detail,
        reasons=REASONS, runs=runs, embeddings=store.embedding_status(), health=health, chosen=chosen, check=request.app.state.last_check,
    )  # fmt: skip


def _cursor(text: str | None) -> tuple[int, int, str] | None:
    """The keyset cursor of a "Next" link: importance:timestamp:id of the last row shown."""
    if not text:
        return None
    importance, _, rest = text.partition(":")
    timestamp, _, last_id = rest.partition(":")
    return _number(importance, "after"), _number(timestamp, "after"), last_id


def _number(text: str, field: str) -> int:
    """A whole number from a form or an address: ASCII digits and one leading minus, as the CLI
    takes them, within a signed 64-bit range (what the store holds)."""
    stripped = text.strip()
    if not re.fullmatch(r"-?[0-9]{1,20}", stripped) or not INT64_MIN <= int(stripped) <= INT64_MAX:
        raise ValidationError("the page", field, f"is not a whole number in a signed 64-bit range: {text[:24]!r}")
    return int(stripped)


def _path_id(request: Request, name: str) -> int:
    """A run's or a flag's number from the address: one past what the store can hold is no such one."""
    number = request.path_params[name]
    if number > INT64_MAX:
        raise NotFoundError(f"no {name.removesuffix('_id')} {str(number)[:24]}")
    return number


async def memories_page(request: Request) -> Response:
    site: Site = request.app.state.site
    params = request.query_params
    namespace = site.chosen_namespace(request)
    query, as_of_text = params.get("q", "").strip(), params.get("as_of", "").strip()
    as_of = parse_moment(as_of_text, "as of") if as_of_text else None
    pinned = {"yes": True, "no": False}.get(params.get("pinned", ""))
    expiring = params.get("expiring") == "week"
    rows, next_cursor, mode = [], None, None
    if query:
        rows = site.store.recall(query, SEARCH_K, namespace, touch=False, as_of=as_of)
        mode = "as of " + utc(as_of) if as_of is not None else "recall's default mode"
    elif as_of is not None:
        rows = site.store.list(namespace, as_of=as_of, limit=PAGE_SIZE)
    else:
        with read_transaction(site.store.engine) as conn:
            rows = queries.memory_page(
                conn, namespace, now_ms(), after=_cursor(params.get("after")), limit=PAGE_SIZE + 1,
                pinned=pinned, expiring_days=7 if expiring else None,
            )  # fmt: skip
        if len(rows) > PAGE_SIZE:
            rows = rows[:PAGE_SIZE]
            last = rows[-1]
            next_cursor = f"{last['importance']}:{last['timestamp']}:{last['id']}"
    if site.namespace is not None:
        names = [site.namespace]
    else:
        with read_transaction(site.store.engine) as conn:
            names = queries.suggested_namespaces(conn)
    return site.render(
        request, "memories.html", rows=rows, namespace=namespace, namespaces=names, query=query, as_of=as_of_text,
        as_of_ms=as_of, pinned=params.get("pinned", ""), expiring=expiring, next_cursor=next_cursor, mode=mode,
    )  # fmt: skip


async def memory_page(request: Request) -> Response:
    site: Site = request.app.state.site
    memory_id = request.path_params["memory_id"]
    memory = site.store.get(memory_id, namespace=site.scope())
    history = site.store.history(memory_id, namespace=site.scope())
    state = memory_state(memory, now_ms())
    return site.render(request, "memory.html", memory=memory, history=history, state=state)


async def runs_page(request: Request) -> Response:
    site: Site = request.app.state.site
    runs = site.store.runs(200)
    if site.scope() is not None:
        runs = [run for run in runs if run["namespace"] == site.scope()]
    return site.render(request, "runs.html", runs=runs)


def _run_shown(site: Site, run_id: int) -> dict[str, Any]:
    """`MemoryStore.run` as the page may show it: on a page kept to one namespace, a run of another
    reads as one that does not exist, and of a run over every namespace only this one's part."""
    try:
        run = site.store.run(run_id)
    except NotFoundError:
        run = None
    scope = site.scope()
    if run is None or (scope is not None and run["namespace"] not in (None, scope)):
        raise NotFoundError(f"no run {run_id}")
    if scope is not None:
        for part in ("archived", "flags_raised", "flags_settled"):
            run[part] = [entry for entry in run[part] if entry["namespace"] == scope]
        run["restored"] = []  # ids of every namespace: not this page's to list
    return run


async def run_page(request: Request) -> Response:
    site: Site = request.app.state.site
    return site.render(request, "run.html", run=_run_shown(site, _path_id(request, "run_id")))


async def flags_page(request: Request) -> Response:
    site: Site = request.app.state.site
    namespace = site.scope() if site.scope() is not None else request.query_params.get("namespace") or None
    status = request.query_params.get("status", "open")
    if status not in ("open", "resolved", "dismissed", "all"):
        raise ValidationError("the page", "status", f"is not one of open, resolved, dismissed, all: {status[:20]!r}")
    flags = site.store.flags(namespace, status=status)
    ids = {flag["older_id"] for flag in flags} | {flag["newer_id"] for flag in flags}
    sides = {}
    for memory_id in sorted(ids):
        try:
            sides[memory_id] = site.store.get(memory_id, namespace=site.scope())
        except NotFoundError:
            continue
    return site.render(request, "flags.html", flags=flags, sides=sides, shown=status)


async def report_page(request: Request) -> Response:
    """The hygiene report of one namespace (`memstore report`): it reads the namespace's rows, so it
    is a page of its own, one click from the overview, not a figure on it."""
    site: Site = request.app.state.site
    namespace = site.chosen_namespace(request)
    report = site.store.report(namespace)
    found = {
        "exact duplicate groups": len(report["exact_duplicate_groups"]), "near-duplicate pairs": len(report["near_duplicate_pairs"]),
        "possible contradictions": len(report["contradiction_flags"]), "open flags": len(report["open_flags"]),
    }  # fmt: skip
    chart = charts.bars(f"What the report finds in {visible(namespace)}", list(found), list(found.values()), x_label="how many")
    return site.render(request, "report.html", report=report, namespace=namespace, chart=chart)


def _maintained_phases(site: Site) -> list[str] | None:
    """maintain's phases a page runs: all (None), or on a page kept to one namespace, none of the
    store-wide ones (they read, and name, every namespace's rows)."""
    return None if site.scope() is None else [name for name in PHASES if name not in STORE_WIDE_PHASES]


async def maintain_page(request: Request) -> Response:
    site: Site = request.app.state.site
    # The stale phase (archiving what nobody recalled for long) runs only when asked, as in the CLI.
    stale = request.query_params.get("stale") == "yes"
    # A GET reads only: the preview runs on a scratch copy of the namespace, embeds nothing and
    # leaves out the store-wide check (memstore.maintain_preview).
    preview = site.store.maintain_preview(_maintained_phases(site), namespace=site.chosen_namespace(request), stale=stale)
    return site.render(request, "maintain.html", report=preview, namespace=site.chosen_namespace(request), stale=stale)


# -- actions ----------------------------------------------------------------------------------------


def _done(request: Request, title: str, message: str, *, run_id: int | None = None, link: str | None = None) -> Response:
    site: Site = request.app.state.site
    return site.render(request, "done.html", title=title, message=message, run_id=run_id, link=link)


async def update_memory(request: Request) -> Response:
    site: Site = request.app.state.site
    fields = await site.form(request)
    memory_id = request.path_params["memory_id"]
    current = site.store.get(memory_id, namespace=site.scope())
    changes: dict[str, Any] = {}
    if fields.get("text", current["text"]) != current["text"]:
        changes["text"] = fields["text"]
    if fields.get("importance") and _number(fields["importance"], "importance") != current["importance"]:
        changes["importance"] = _number(fields["importance"], "importance")
    pinned = fields.get("pinned") == "yes"
    if pinned != bool(current["pinned"]):
        changes["pinned"] = pinned
    expiry = fields.get("expiry", "keep")
    if expiry == "never" and current.get("expires_at") is not None:
        changes["no_expiry"] = True
    elif expiry == "ttl" and fields.get("ttl", "").strip():
        changes["ttl"] = parse_ttl(fields["ttl"].strip(), "expires in")
    row = site.store.update(memory_id, namespace=site.scope(), **changes)
    return _done(request, f"Updated {memory_id}", f"{memory_id} is archived as superseded by {row['id']}.",
                 run_id=row["run_id"], link=f"/memories/{row['id']}")  # fmt: skip


async def forget_memory(request: Request) -> Response:
    site: Site = request.app.state.site
    fields = await site.form(request)
    memory_id = request.path_params["memory_id"]
    report = site.store.forget([memory_id], reason=fields.get("reason") or None, namespace=site.scope())
    return _done(request, f"Forgot {memory_id}", f"{memory_id} is archived as forgotten.", run_id=report.run_id, link=f"/memories/{memory_id}")


async def supersede_memory(request: Request) -> Response:
    site: Site = request.app.state.site
    fields = await site.form(request)
    memory_id, by = request.path_params["memory_id"], fields.get("by", "").strip()
    report = site.store.supersede(memory_id, by=by, namespace=site.scope())
    return _done(request, f"Superseded {memory_id}", f"{memory_id} is archived as superseded by {by}.", run_id=report.run_id, link=f"/memories/{by}")


async def undo_run(request: Request) -> Response:
    site: Site = request.app.state.site
    await site.form(request)
    run_id = _path_id(request, "run_id")
    # A page kept to one namespace may not undo a run over every namespace: it would change the others.
    run = _run_shown(site, run_id)
    if site.scope() is not None and run["namespace"] != site.scope():
        raise NotFoundError(f"no run {run_id}")
    report = site.store.restore(run_id)
    restored = ", ".join(report.restored_ids) or "nothing"
    return _done(request, f"Undid run {run_id}", f"Run {run_id} is undone; back in the live set: {restored}.", link=f"/runs/{run_id}")


async def keep_side(request: Request) -> Response:
    site: Site = request.app.state.site
    fields = await site.form(request)
    flag = _open_flag(site, _path_id(request, "flag_id"))
    keep = fields.get("keep", "")
    if keep not in (flag["older_id"], flag["newer_id"]):
        raise MemstoreError(f"flag {flag['id']} is between {flag['older_id']} and {flag['newer_id']}, not {keep}")
    other = flag["newer_id"] if keep == flag["older_id"] else flag["older_id"]
    report = site.store.supersede(other, by=keep, namespace=site.scope())
    return _done(request, f"Kept {keep}", f"{other} is archived as superseded by {keep}; flag {flag['id']} is resolved.",
                 run_id=report.run_id, link="/flags")  # fmt: skip


async def dismiss_flag(request: Request) -> Response:
    site: Site = request.app.state.site
    await site.form(request)
    flag = _open_flag(site, _path_id(request, "flag_id"))
    dismissed = site.store.dismiss_flag(flag["id"])
    return _done(request, f"Dismissed flag {flag['id']}", f"Flag {flag['id']} ({flag['older_id']} vs {flag['newer_id']}) is dismissed.",
                 run_id=dismissed["run_id"], link="/flags")  # fmt: skip


def _open_flag(site: Site, flag_id: int) -> dict[str, Any]:
    for flag in site.store.flags(site.scope()):
        if flag["id"] == flag_id:
            return flag
    raise NotFoundError(f"no open flag {flag_id}")


async def run_maintain(request: Request) -> Response:
    site: Site = request.app.state.site
    fields = await site.form(request)
    namespace = site.namespace if site.namespace is not None else fields.get("namespace") or DEFAULT_NAMESPACE
    report = site.store.maintain(_maintained_phases(site), namespace=namespace, stale=fields.get("stale") == "yes")
    return site.render(request, "maintain.html", report=report, namespace=namespace, stale=fields.get("stale") == "yes")


async def run_check(request: Request) -> Response:
    site: Site = request.app.state.site
    await site.form(request)
    if site.scope() is not None:  # the check reads, and names, every namespace's rows
        raise HTTPException(403, "a page kept to one namespace does not run the store's check")
    report = site.store.check()
    request.app.state.last_check = {"at": now_ms(), "findings": [finding.__dict__ for finding in report.findings]}
    return RedirectResponse("/", status_code=303)


# -- errors ---------------------------------------------------------------------------------------------


async def memstore_error(request: Request, exc: Exception) -> Response:
    site: Site = request.app.state.site
    status = 404 if isinstance(exc, NotFoundError) else 400
    message = database_error(exc, site.store.url) if isinstance(exc, SQLAlchemyError) else str(exc)
    return site.render(request, "error.html", status=500 if isinstance(exc, SQLAlchemyError) else status, message=message)


async def http_error(request: Request, exc: HTTPException) -> Response:
    site: Site = request.app.state.site
    return site.render(request, "error.html", status=exc.status_code, message=exc.detail)


def create_app(store: MemoryStore, *, token: str, namespace: str | None = None, read_only: bool = False) -> Starlette:
    """The pages as an ASGI app (behind `guard.Guard`, which `serve` puts in front)."""
    routes = [
        Route("/", overview), Route("/memories", memories_page), Route("/memories/{memory_id:path}/update", update_memory, methods=["POST"]),
        Route("/memories/{memory_id:path}/forget", forget_memory, methods=["POST"]),
        Route("/memories/{memory_id:path}/supersede", supersede_memory, methods=["POST"]),
        Route("/memories/{memory_id:path}", memory_page), Route("/runs", runs_page), Route("/runs/{run_id:int}", run_page),
        Route("/runs/{run_id:int}/undo", undo_run, methods=["POST"]), Route("/flags", flags_page),
        Route("/flags/{flag_id:int}/keep", keep_side, methods=["POST"]), Route("/flags/{flag_id:int}/dismiss", dismiss_flag, methods=["POST"]),
        Route("/report", report_page), Route("/maintain", maintain_page), Route("/maintain", run_maintain, methods=["POST"]), Route("/check", run_check, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]  # fmt: skip
    app = Starlette(routes=routes, exception_handlers={MemstoreError: memstore_error, SQLAlchemyError: memstore_error, HTTPException: http_error})
    app.state.site = Site(store, token, namespace, read_only)
    app.state.last_check = None
    return app


__all__ = ["BIDI_CONTROLS", "Site", "create_app", "utc", "visible"]
