"""The flags page (`/flags`): contradiction flags a person works through at real size.

A page of flags (`flag_page` of the page's view, memstore.store_scoped.ScopedStore) filtered by namespace (or all), status, reason and age,
sorted newest, strongest or oldest, FLAGS_PER_PAGE at a time; each flag shows both texts with the words that
differ marked, when each was written, when and why the flag was raised, and a "Keep this one"
button beside each text. "Dismiss these N" dismisses every open flag the filter picks as one run
(`dismiss_flags`, with the number the reviewer saw, so a flag raised since stays open).
Every action answers with a redirect back to the same filter, page and place (reload-safe), which
names the run it was and offers its undo.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ..defaults import DAY_MS
from ..errors import MemstoreError, ValidationError
from ..records import now_ms
from .shown import local_path, run_number

# The age filter: a name in the address -> (raised at or after, raised before) as days before now.
AGES = {
    "": ("any age", None, None),
    "day": ("raised in the last day", 1, None),
    "week": ("raised in the last 7 days", 7, None),
    "older-week": ("raised more than 7 days ago", None, 7),
    "older-month": ("raised more than 30 days ago", None, 30),
}
SORTS = {"newest": "newest first", "strongest": "strongest first", "oldest": "oldest first"}
STATUSES = ("open", "resolved", "dismissed", "all")
# Flags on a page: each shows two texts side by side, so fewer than a list's rows (a page stays
# within a few screens).
FLAGS_PER_PAGE = 20


def chosen_filter(site: Any, params: Any) -> dict[str, str]:
    """The filter and page in the address, as the form and the links write them back."""
    namespace = site.store.within(params.get("namespace", ""))
    status = params.get("status", "open")
    sort = params.get("sort", "newest")
    age = params.get("age", "")
    return {
        "namespace": namespace, "status": status if status in STATUSES else "open", "reason": params.get("reason", "").strip(),
        "age": age if age in AGES else "", "sort": sort if sort in SORTS else "newest",
    }  # fmt: skip


def filter_moments(age: str, now: int) -> dict[str, int | None]:
    _, after_days, before_days = AGES[age]
    return {
        "flagged_after": None if after_days is None else now - after_days * DAY_MS,
        "flagged_before": None if before_days is None else now - before_days * DAY_MS,
    }


def address(chosen: dict[str, str], **more: Any) -> str:
    """/flags with the filter (fields left at their default are left out) and `more`."""
    fields = {name: value for name, value in chosen.items() if value not in ("", None)}
    fields.update((name, value) for name, value in more.items() if value not in ("", None, 0))
    for name, default in (("status", "open"), ("sort", "newest")):
        if fields.get(name) == default:
            del fields[name]
    return "/flags" + (f"?{urlencode(fields)}" if fields else "")


async def flags_page(request: Request) -> Response:
    site = request.app.state.site  # pages.Site
    chosen = chosen_filter(site, request.query_params)
    offset = count_field(request.query_params.get("offset") or "0", "offset")
    page = site.store.flag_page(
        chosen["namespace"] or None, status=chosen["status"], reason=chosen["reason"] or None, sort=chosen["sort"],
        offset=offset, limit=FLAGS_PER_PAGE, **filter_moments(chosen["age"], now_ms()),
    )  # fmt: skip
    here = address(chosen, offset=page["offset"])
    return site.render(
        request, "flags.html", page=page, chosen=chosen, here=here, ages=AGES, sorts=SORTS, statuses=STATUSES,
done_run=run_number(request.query_params.get("done")),
        first=address(chosen), previous=address(chosen, offset=max(page["offset"] - page["limit"], 0)) if page["offset"] else None,
        following=address(chosen, offset=page["next_offset"]) if page["next_offset"] is not None else None,
        elsewhere_links={name: address({**chosen, "namespace": name}) for name in page["elsewhere"]},
    )  # fmt: skip


def back_to(fields: dict[str, str], run_id: int) -> RedirectResponse:
    """303 to where the reviewer was (`back`: a path on this page, its #anchor kept), saying which
    run the action was, so a reload shows the answer again and runs nothing."""
    return RedirectResponse(with_done(local_path(fields.get("back"), "/flags"), run_id), status_code=303)


def with_done(path: str, run_id: int) -> str:
    """`path` (maybe with a query and an #anchor) with its `done=` set to `run_id`."""
    rest, _, anchor = path.partition("#")
    base, _, query = rest.partition("?")
    kept = [part for part in query.split("&") if part and not part.startswith("done=")]
    return f"{base}?{'&'.join([*kept, f'done={run_id}'])}" + (f"#{anchor}" if anchor else "")


def count_field(text: str, field: str) -> int:
    """A count or an offset from the address or a form: ASCII digits only."""
    if not re.fullmatch(r"[0-9]{1,18}", text.strip()):
        raise ValidationError("the page", field, f"is not a whole number of 0 or more: {text[:24]!r}")
    return int(text)


async def keep_side(request: Request) -> Response:
    """"Keep this one": the other side is archived as superseded by the one kept (a supersede run)."""
    site = request.app.state.site  # pages.Site
    fields = await site.form(request)
    flag = site.store.open_flag(request.path_params["flag_id"])
    keep = fields.get("keep", "")
    if keep not in (flag["older_id"], flag["newer_id"]):
        raise MemstoreError(f"flag {flag['id']} is between {flag['older_id']} and {flag['newer_id']}, not {keep}")
    other = flag["newer_id"] if keep == flag["older_id"] else flag["older_id"]
    report = site.store.supersede(other, by=keep)
    return back_to(fields, report.run_id)


async def dismiss_flag(request: Request) -> Response:
    site = request.app.state.site  # pages.Site
    fields = await site.form(request)
    return back_to(fields, site.store.dismiss_flag(request.path_params["flag_id"])["run_id"])


async def dismiss_these(request: Request) -> Response:
    """"Dismiss these N": every open flag the filter picks, as one run, if N still holds."""
    site = request.app.state.site  # pages.Site
    fields = await site.form(request)
    chosen = chosen_filter(site, fields)
    expect = count_field(fields.get("expect", ""), "expect")
    done = site.store.dismiss_flags(
        namespace=chosen["namespace"] or None, reason=chosen["reason"] or None, expect=expect, **filter_moments(chosen["age"], now_ms())
    )
    return back_to(fields, done["run_id"])


__all__ = ["AGES", "SORTS", "address", "dismiss_flag", "dismiss_these", "flags_page", "keep_side"]
