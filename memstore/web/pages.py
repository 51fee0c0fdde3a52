"""The pages of `memstore web`: server-rendered HTML over one MemoryStore.

Every read and action is one call of the page's view of the store, `MemoryStore.scoped(namespace)`
(memstore.store_scoped): an action calls the method the CLI calls for it (so it is the same run
`memstore restore` undoes) and answers with what it did and, where it archived something, the
button that undoes it. The view holds the scope rule: a page kept to one namespace (`--namespace`)
answers an id or a run of another namespace exactly as one that does not exist, and is refused
(403) what reads every namespace. No SQL and no transaction here.
"""

from __future__ import annotations

import hmac
from urllib.parse import quote, urlencode
import re
from dataclasses import InitVar, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from sqlalchemy.exc import SQLAlchemyError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..db import database_error
from ..defaults import DEFAULT_NAMESPACE
from ..errors import MemstoreError, NotFoundError, OutOfScopeError, ValidationError
from ..io import parse_moment
from ..records import memory_state, now_ms
from ..store import MemoryStore
from ..validate import INT64_MAX, INT64_MIN, parse_ttl
from . import charts, review, search, shown
from .health import health_charts, staleness_chart
from .guard import CSRF_FIELD, csrf_value

HERE = Path(__file__).parent
PAGE_SIZE = 50
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


def when(ms: int | None) -> str:
    """Unix ms as a list shows it: a UTC date and minute that never wraps ("2026-12-04 15:23 UTC")."""
    text = utc(ms)
    return f"{text[:10]}\u00a0{text[11:16]}\u00a0UTC" if text.endswith(" UTC") else text


@dataclass
class Site:
    opened: InitVar[MemoryStore]
    token: str
    namespace: str | None  # the one namespace the page may see, or None for all
    read_only: bool

    def __post_init__(self, opened: MemoryStore) -> None:
        self.store = opened.scoped(self.namespace)  # every read and action of the page goes through it
        # StrictUndefined: a template naming a field its value lacks fails (a test sees it), instead of printing "".
        self.templates = Environment(
            loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True), undefined=StrictUndefined
        )
        self.templates.globals["page_size"] = PAGE_SIZE
        self.templates.filters.update(
            utc=utc, when=when, short=shown.short, short_id=shown.short_id, marked=shown.marked, plural=shown.plural, where=shown.where,
            did=shown.did_text,
        )
        self.templates.filters["visible"] = visible
        self.csrf = csrf_value(self.token)

    def render(self, request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self.templates.get_template(name).render(
            request=request, site=self, csrf_field=CSRF_FIELD, csrf=self.csrf, **context
        )
        return HTMLResponse(html, status_code=status)

    def chosen_namespace(self, request: Request) -> str:
        """The namespace a page shows: the page's own, else the one asked for, else the default."""
        return self.store.within(request.query_params.get("namespace") or None) or DEFAULT_NAMESPACE

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
    show_all = request.query_params.get("all") == "yes"
    # Detailed: the page's own namespace, else the one asked for, else the largest.
    figures = site.store.overview(request.query_params.get("namespace") or None, show_all=show_all)
    chosen = figures.detail.namespace
    health = health_charts(figures.runs, chosen, visible(chosen))
    runs = site.store.runs(10)
    return site.render(
        request, "overview.html", rows=figures.rows, totals=figures.totals, namespace_count=figures.namespace_count, show_all=show_all,
        detail=figures.detail, reasons=REASONS, runs=runs, health=health, chosen=chosen, check=request.app.state.last_integrity_check,
    )  # fmt: skip


async def embeddings_page(request: Request) -> Response:
    """The embedding model and how many live memories wait for a vector: a count over the store's
    rows, so a page of its own, one click from the overview (which scans nothing)."""
    site: Site = request.app.state.site
    return site.render(request, "embeddings.html", embeddings=site.store.embedding_status())


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
    """Search (one namespace, all, or the archive), the live memories in rank order after a keyset
    cursor, or what was live as of a moment, PAGE_SIZE at a time."""
    site: Site = request.app.state.site
    params = request.query_params
    query, as_of_text = params.get("q", "").strip(), params.get("as_of", "").strip()
    names = site.store.suggested_namespaces()
    # Searching, no namespace is every namespace; listing, it is the largest (else the default).
    asked = site.store.within(params.get("namespace", "").strip())
    namespace = asked or (names[0] if names else DEFAULT_NAMESPACE)
    as_of = parse_moment(as_of_text, "as of") if as_of_text else None
    archived = params.get("archived") == "yes"
    pinned = {"yes": True, "no": False}.get(params.get("pinned", ""))
    expiring = params.get("expiring") == "week"
    page = _offset(params.get("page")) if params.get("page") else 0
    rows, next_cursor, answer, more = [], None, None, False
    if query:
        answer = search.search(site.store, query, asked or None, names, as_of=as_of, archived=archived)
        rows = answer.rows
    elif as_of is not None:
        # What was live then, a page at a time: page N reads (N + 1) pages and shows the last.
        rows = site.store.list(namespace, as_of=as_of, limit=(page + 1) * PAGE_SIZE + 1)
        more, rows = len(rows) > (page + 1) * PAGE_SIZE, rows[page * PAGE_SIZE : (page + 1) * PAGE_SIZE]
    else:
        rows = site.store.rank_page(
            namespace, after=_cursor(params.get("after")), limit=PAGE_SIZE + 1, pinned=pinned, expiring_days=7 if expiring else None
        )
        if len(rows) > PAGE_SIZE:
            rows = rows[:PAGE_SIZE]
            last = rows[-1]
            next_cursor = f"{last['importance']}:{last['timestamp']}:{last['id']}"
    return site.render(
        request, "memories.html", rows=rows, namespace=asked if query else namespace, namespaces=names, query=query, as_of=as_of_text,
        as_of_ms=as_of, archived=archived, pinned=params.get("pinned", ""), expiring=expiring, next_cursor=next_cursor, answer=answer,
        page=page, more=more,
    )  # fmt: skip


async def memory_page(request: Request) -> Response:
    site: Site = request.app.state.site
    memory_id = request.path_params["memory_id"]
    memory = site.store.get(memory_id)
    history = site.store.history(memory_id)
    state = memory_state(memory, now_ms())
    return site.render(request, "memory.html", memory=memory, history=history, state=state, done_run=shown.run_number(request.query_params.get("done")))


async def runs_page(request: Request) -> Response:
    """Every run, newest first, PAGE_SIZE at a time (a page kept to one namespace: its own)."""
    site: Site = request.app.state.site
    offset = _offset(request.query_params.get("offset"))
    runs = site.store.runs(PAGE_SIZE + 1, offset=offset)
    following = offset + PAGE_SIZE if len(runs) > PAGE_SIZE else None
    runs = runs[:PAGE_SIZE]
    return site.render(request, "runs.html", runs=runs, offset=offset, following=following, previous=max(offset - PAGE_SIZE, 0) if offset else None)


async def run_page(request: Request) -> Response:
    site: Site = request.app.state.site
    params = request.query_params
    offset = _offset(params.get("offset"))
    run = site.store.run(_path_id(request, "run_id"), limit=PAGE_SIZE, offset=offset)
    following = offset + PAGE_SIZE if offset + PAGE_SIZE < max(run["archived_total"], run["restored_total"]) else None
    return site.render(
        request, "run.html", run=run, undone=shown.run_number(params.get("undone")), reopened=_listed(params.get("reopened")),
        removed=_listed(params.get("removed")), settled=_listed(params.get("settled")), done_run=shown.run_number(params.get("done")), shown_flags=PAGE_SIZE,
        failed=params.get("failed", "")[:200],
        previous=max(offset - PAGE_SIZE, 0) if offset else None, following=following,
    )  # fmt: skip


def _offset(text: str | None) -> int:
    """An offset in a list from the address: 0 if not given."""
    number = _number(text, "offset") if text else 0
    if number < 0:
        raise ValidationError("the page", "offset", "is below 0")
    return number


def _listed(text: str | None) -> list[int]:
    """Flag numbers an undo's answer carries ("3,4,9"); anything else is left out."""
    return [number for number in map(shown.run_number, (text or "").split(",")) if number is not None]


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
    stale = staleness_chart([entry["staleness"] for entry in report["staleness"]], visible(namespace))
    return site.render(request, "report.html", report=report, namespace=namespace, chart=chart, staleness=stale)


async def maintain_page(request: Request) -> Response:
    site: Site = request.app.state.site
    # The stale phase (archiving what nobody recalled for long) runs only when asked, as in the CLI.
    stale = request.query_params.get("stale") == "yes"
    # A GET reads only: the preview runs on a scratch copy of the namespace, embeds nothing and
    # leaves out the store-wide check (memstore.maintain_preview).
    preview = site.store.maintain_preview(site.chosen_namespace(request), stale=stale)
    return site.render(
        request, "maintain.html", report=preview, namespace=site.chosen_namespace(request), stale=stale,
        ran_nothing=request.query_params.get("ran") == "nothing", failed=request.query_params.get("failed", ""),
    )  # fmt: skip


# -- actions ----------------------------------------------------------------------------------------


def _answer(path: str, run_id: int | None = None, **more: str) -> Response:
    """The answer to a POST: 303 to the page that shows what it did (a reload shows it again and
    changes nothing), with `done=RUN` for the notice that names the run and offers its undo."""
    fields = {**({"done": str(run_id)} if run_id is not None else {}), **{name: value for name, value in more.items() if value}}
    return RedirectResponse(path + (f"?{urlencode(fields)}" if fields else ""), status_code=303)


def _numbers(ids: list[int]) -> str:
    return ",".join(str(number) for number in ids)


def _memory_path(memory_id: str) -> str:
    return f"/memories/{quote(memory_id, safe='')}"


async def update_memory(request: Request) -> Response:
    site: Site = request.app.state.site
    fields = await site.form(request)
    memory_id = request.path_params["memory_id"]
    current = site.store.get(memory_id)
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
    row = site.store.update(memory_id, **changes)
    return _answer(_memory_path(row["id"]), row["run_id"])


async def forget_memory(request: Request) -> Response:
    site: Site = request.app.state.site
    fields = await site.form(request)
    memory_id = request.path_params["memory_id"]
    report = site.store.forget([memory_id], reason=fields.get("reason") or None)
    return _answer(_memory_path(memory_id), report.run_id)


async def supersede_memory(request: Request) -> Response:
    site: Site = request.app.state.site
    fields = await site.form(request)
    memory_id, by = request.path_params["memory_id"], fields.get("by", "").strip()
    report = site.store.supersede(memory_id, by=by)
    return _answer(_memory_path(memory_id), report.run_id)


async def restore_memory(request: Request) -> Response:
    """"Restore this memory": one archived memory back alone, a run of its own (`memstore restore ID`)."""
    site: Site = request.app.state.site
    await site.form(request)
    memory_id = request.path_params["memory_id"]
    return _answer(_memory_path(memory_id), site.store.restore_memory(memory_id).run_id)


async def undo_run(request: Request) -> Response:
    site: Site = request.app.state.site
    await site.form(request)
    run_id = _path_id(request, "run_id")
    report = site.store.restore(run_id)  # a page kept to one namespace: none over every namespace
    # What came back is on the run's page (its `restored`); which flags opened again or went is not
    # kept by the store, so the answer carries their numbers.
    changed = {change: _numbers([flag["id"] for flag in report.flags if flag["change"] == change]) for change in ("reopened", "settled", "removed")}
    return _answer(f"/runs/{run_id}", None, undone=str(len(report.memories)), **changed)


async def run_maintain(request: Request) -> Response:
    site: Site = request.app.state.site
    fields = await site.form(request)
    namespace = site.store.within(fields.get("namespace") or None) or DEFAULT_NAMESPACE
    report = site.store.maintain(namespace, stale=fields.get("stale") == "yes")
    failed = ",".join(phase.name for phase in report.phases if phase.status == "failed")
    if report.run_id is None:  # it changed nothing: no run to show
        return _answer("/maintain", None, namespace=namespace, ran="nothing", failed=failed)
    return _answer(f"/runs/{report.run_id}", report.run_id, failed=failed)


async def run_integrity_check(request: Request) -> Response:
    site: Site = request.app.state.site
    await site.form(request)
    report = site.store.check()
    request.app.state.last_integrity_check = {"at": now_ms(), "findings": [finding.__dict__ for finding in report.findings]}
    return RedirectResponse("/", status_code=303)


# -- errors ---------------------------------------------------------------------------------------------


async def memstore_error(request: Request, exc: Exception) -> Response:
    site: Site = request.app.state.site
    status = 404 if isinstance(exc, NotFoundError) else 403 if isinstance(exc, OutOfScopeError) else 400
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
        Route("/memories/{memory_id:path}/restore", restore_memory, methods=["POST"]),
        Route("/memories/{memory_id:path}", memory_page), Route("/runs", runs_page), Route("/runs/{run_id:int}", run_page),
        Route("/runs/{run_id:int}/undo", undo_run, methods=["POST"]), Route("/flags", review.flags_page),
        Route("/flags/dismiss", review.dismiss_these, methods=["POST"]), Route("/flags/{flag_id:int}/keep", review.keep_side, methods=["POST"]),
        Route("/flags/{flag_id:int}/dismiss", review.dismiss_flag, methods=["POST"]),
        Route("/report", report_page), Route("/embeddings", embeddings_page), Route("/maintain", maintain_page),
        Route("/maintain", run_maintain, methods=["POST"]), Route("/check", run_integrity_check, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]  # fmt: skip
    app = Starlette(routes=routes, exception_handlers={MemstoreError: memstore_error, SQLAlchemyError: memstore_error, HTTPException: http_error})
    app.state.site = Site(store, token, namespace, read_only)
    app.state.last_integrity_check = None
    return app


__all__ = ["BIDI_CONTROLS", "Site", "create_app", "utc", "visible"]
