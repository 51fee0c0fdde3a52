"""The probe's second round at `memstore web`'s doors (issue 40): what a page kept to one namespace
shows and runs, whether a GET or a read-only page ever holds the store's write lock, what the cookie
carries and where the token trade redirects, input past what the store holds, and bidi controls in
ids and namespaces. Real `memstore web` processes over HTTP (httpx2); no browser.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import quote, urljoin, urlsplit

from memstore.web.guard import csrf_value

from .common import Backend, Tally, cli, free_port, start, stop, tail, wait_for_port

TOKEN = "probe-web-token-7d1e0b"
SECRET = "b secret the vault code is 9931"
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


class Page:
    """`memstore web` with the probe's token and `args`, answering on a free port."""

    def __init__(self, work: Path, location: str, *args: str, label: str = "web") -> None:
        (work / "web-doors-token").write_text(TOKEN + "\n")
        self.port = free_port()
        self.log = work / f"{label}-{self.port}.log"
        self.server = start(work, location, "web", "--listen", f"127.0.0.1:{self.port}", "--token-file", str(work / "web-doors-token"), *args, log=self.log)
        self.base = f"http://127.0.0.1:{self.port}"
        wait_for_port("127.0.0.1", self.port, self.server)

    def __enter__(self) -> Page:
        return self

    def __exit__(self, *exc_info: object) -> None:
        stop(self.server)

    def get(self, path: str, **kwargs):
        import httpx2

        return httpx2.get(self.base + path, headers={"Authorization": f"Bearer {TOKEN}"}, follow_redirects=False, timeout=kwargs.pop("timeout", 300), **kwargs)

    def post(self, path: str, data: dict[str, str]):
        import httpx2

        return httpx2.post(self.base + path, headers={"Authorization": f"Bearer {TOKEN}"}, data={"csrf": csrf_value(TOKEN), **data},
                           follow_redirects=True, timeout=300)  # fmt: skip

    def clean_log(self, tally: Tally) -> None:
        text = self.log.read_text(errors="replace")
        tally.expect("Traceback" not in text, f"a traceback in the web log: {tail(text[text.find('Traceback'):])}")
        tally.expect(TOKEN not in text, "the token is in the web page's log")


def _execute(backend: Backend, location: str, sql: str) -> None:
    """One statement written outside memstore (a person's hand edit)."""
    if not backend.is_pg:
        import sqlite3

        conn = sqlite3.connect(location)
        try:
            conn.execute(sql)
            conn.commit()
        finally:
            conn.close()
        return
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    engine = create_engine(location, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(text(sql))
    finally:
        engine.dispose()


def _words(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def probe_web_scope(tally: Tally, work: Path, backend: Backend, location: str) -> None:
    """`memstore web --namespace a`, b's memory broken by a hand edit (the store-wide check names its
    text): the maintain preview and the run, the overview and a run over every namespace show
    nothing of b (its text, its store-wide counts) and run no store-wide phase."""
    for args in (["init"], ["add", "The garden gate code is 4417.", "--id", "a1", "-n", "a"], ["add", "the garden gate code is 4417", "--id", "a2", "-n", "a"],
                 ["add", SECRET, "--id", "b1", "-n", "b"], ["add", "Another fact of b.", "--id", "b2", "-n", "b"]):  # fmt: skip
        if cli(work, location, *args).returncode:
            raise RuntimeError(f"setting up the web scope probe: {' '.join(args)} failed")
    _execute(backend, location, "UPDATE memories SET norm_key = 'broken' WHERE id = 'b1'")
    with Page(work, location, "--namespace", "a", label="web-scope") as page:
        for label, answer in (("GET /maintain", page.get("/maintain")), ("GET /maintain?stale=yes", page.get("/maintain?stale=yes")),
                              ("POST /maintain", page.post("/maintain", {})), ("GET /", page.get("/"))):  # fmt: skip
            tally.expect(answer.status_code == 200, f"web --namespace a: {label} answered {answer.status_code}")
            tally.expect("vault" not in answer.text and "norm_key" not in answer.text, f"web --namespace a: {label} shows namespace b's text")
        tally.expect(len({"a1", "a2"} & backend.ids(location)[1]) == 1, "web --namespace a: POST /maintain did not archive a's duplicate")
        live_total = backend.rows(location, "SELECT count(*) FROM memories")[0][0]
        done = cli(work, location, "consolidate", "--capacity", "100000", "--all-namespaces")
        run_id = backend.rows(location, "SELECT max(id) FROM consolidation_runs WHERE namespace IS NULL")[0][0]
        if done.returncode == 0 and run_id is not None:
            shown = _words(page.get(f"/runs/{run_id}").text)
            tally.expect("live before" not in shown.lower() and "b1" not in shown and "b2" not in shown,
                         f"web --namespace a: the page of a run over every namespace shows its store-wide counts (live before {live_total}) or b's ids")  # fmt: skip
        page.clean_log(tally)


def _hold_write_lock(backend: Backend, location: str) -> subprocess.Popen:
    """A child that holds the store as a writer would (SQLite's write lock; on PostgreSQL the job lock
    of namespace `default`) until its stdin closes; it prints "held" once it holds it."""
    if not backend.is_pg:
        code = ("import sqlite3,sys; c=sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('BEGIN IMMEDIATE'); "
                "print('held', flush=True); sys.stdin.read(); c.execute('ROLLBACK')")  # fmt: skip
    else:
        code = ("import sys; from sqlalchemy import create_engine, text; c=create_engine(sys.argv[1]).connect(); "
                "c.execute(text(\"SELECT pg_advisory_lock(hashtextextended('default', 0))\")); c.commit(); "
                "print('held', flush=True); sys.stdin.read()")  # fmt: skip
    holder = subprocess.Popen([sys.executable, "-c", code, location], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if holder.stdout.readline().strip() != "held":
        raise RuntimeError("the lock holder did not start")
    return holder


def probe_web_read_only(tally: Tally, work: Path, backend: Backend, location: str) -> None:
    """`memstore web --read-only` over a store whose memories all wait for embeddings: GET /maintain
    answers while another writer holds the store (it needs no write lock), a `memstore add` made
    while a preview is served succeeds, and the preview embeds and writes nothing."""
    before, pending = backend.fingerprint(location), backend.pending(location)
    with Page(work, location, "--read-only", label="web-read-only") as page:
        holder = _hold_write_lock(backend, location)
        try:
            answer = page.get("/maintain", timeout=120)
            shown = _words(answer.text)
            # Answered, and by phases that ran (a lock wait that timed out would be a failed phase).
            tally.expect(answer.status_code == 200 and "expire ok" in shown and "dedup ok" in shown and " failed " not in shown,
                         f"web --read-only: GET /maintain beside a writer holding the store: {answer.status_code} {tail(shown)}")  # fmt: skip
        except Exception as exc:
            tally.trial(f"web --read-only: GET /maintain beside a writer holding the store: {type(exc).__name__}")
        finally:
            holder.stdin.close()
            holder.wait(timeout=60)
        tally.expect(backend.fingerprint(location) == before and backend.pending(location) == pending,
                     "web --read-only: GET /maintain wrote or embedded something")  # fmt: skip
        served: list[int] = []
        reader = threading.Thread(target=lambda: served.append(page.get("/maintain", timeout=300).status_code))
        reader.start()
        added = cli(work, location, "add", "Written while the page previews.", "--id", "beside-preview")
        reader.join()
        tally.expect(added.returncode == 0, f"web --read-only: `memstore add` beside GET /maintain: exit {added.returncode}: {tail(added.stderr)}")
        tally.expect(served == [200], f"web --read-only: GET /maintain beside an add: {served}")
        page.clean_log(tally)


def probe_web_cookie(tally: Tally, work: Path, backend: Backend, location: str) -> None:
    """The token trade: the cookie holds a session value (not the token) named for the port, HttpOnly,
    SameSite=Strict, Path=/; the value opens nothing as a bearer token nor after a restart; every
    redirect stays on the page's origin (//host, /\\host, ///host, a tab, CR/LF in the path)."""
    import httpx2

    with Page(work, location, label="web-cookie") as page:
        answer = httpx2.get(f"{page.base}/?token={TOKEN}", follow_redirects=False, timeout=60)
        cookie = answer.headers.get("set-cookie", "")
        name, _, rest = cookie.partition("=")
        value = rest.split(";")[0]
        attributes = {part.strip().lower() for part in rest.split(";")[1:]}
        tally.expect(name == f"memstore_session_{page.port}", f"web cookie name {name!r}")
        tally.expect(bool(value) and TOKEN not in cookie, "web cookie carries the token")
        tally.expect({"httponly", "samesite=strict", "path=/"} <= attributes, f"web cookie attributes {sorted(attributes)}")
        tally.expect(httpx2.get(f"{page.base}/", cookies={name: value}, timeout=60).status_code == 200, "web: the session cookie does not open the page")
        tally.expect(httpx2.get(f"{page.base}/", headers={"Authorization": f"Bearer {value}"}, timeout=60).status_code == 401,
                     "web: the session value works as the bearer token")  # fmt: skip
        for path in ("//evil.example/", "/%5Cevil.example", "/%5C%5Cevil.example/", "///evil.example", "/%09/evil.example",
                     "/%2F%2Fevil.example", "/%0d%0aSet-Cookie:%20x=1", "/%0aLocation:%20http://evil.example/"):  # fmt: skip
            answer = httpx2.get(f"{page.base}{path}?token={TOKEN}", follow_redirects=False, timeout=60)
            location_header = answer.headers.get("location", "")
            same = urlsplit(urljoin(f"{page.base}/", location_header)).netloc == f"127.0.0.1:{page.port}"
            tally.expect(answer.status_code == 303 and same and not location_header.startswith(("//", "/\\")) and len(answer.headers.get_list("set-cookie")) == 1,
                         f"web token trade at {path}: {answer.status_code} Location {location_header!r}")  # fmt: skip
        page.clean_log(tally)
    with Page(work, location, label="web-cookie-restart") as page:
        tally.expect(httpx2.get(f"{page.base}/", cookies={f"memstore_session_{page.port}": value}, timeout=60).status_code == 401,
                     "web: a session cookie of an earlier start opens the page")  # fmt: skip


def probe_web_numbers(tally: Tally, work: Path, backend: Backend, location: str) -> None:
    """Numbers past what the store holds in addresses and forms: each a 400/404 page with a one-line
    message, never a 500 or a traceback; the largest moment the store holds is answered."""
    if cli(work, location, "init").returncode or cli(work, location, "add", "The standup is at 9:30.", "--id", "t1").returncode:
        raise RuntimeError("setting up the web numbers probe failed")
    gets = {"/runs/99999999999999999999999": 404, "/runs/9223372036854775808": 404, "/memories?after=--1:1:x": 400,
            "/memories?after=1:99999999999999999999:x": 400, "/memories?after=99999999999999999999:1:x": 400,
            "/memories?as_of=99999999999999999999": 400, "/memories?as_of=-99999999999999999999": 400,
            "/memories?as_of=9223372036854775807": 200, "/memories?as_of=-9223372036854775808": 200,
            "/memories?q=x&as_of=9223372036854775807": 200}  # fmt: skip
    posts = [("/memories/t1/update", {"importance": "--3"}, 400), ("/memories/t1/update", {"importance": "99999999999999999999"}, 400),
             ("/runs/99999999999999999999999/undo", {}, 404), ("/flags/99999999999999999999/dismiss", {}, 404),
             ("/flags/99999999999999999999/keep", {"keep": "t1"}, 404)]  # fmt: skip
    with Page(work, location, label="web-numbers") as page:
        for path, expected in gets.items():
            answer = page.get(path)
            messages = re.findall(r'<p class="error">(.*?)</p>', answer.text, re.S)
            tally.expect(answer.status_code == expected and all("\n" not in m for m in messages), f"web GET {path}: {answer.status_code}, not {expected}")
        for path, fields, expected in posts:
            answer = page.post(path, fields)
            tally.expect(answer.status_code == expected, f"web POST {path} {fields}: {answer.status_code}, not {expected}")
        tally.expect("t1" in backend.ids(location)[0], "web: a refused update changed t1")
        page.clean_log(tally)


def probe_web_bidi(tally: Tally, work: Path, backend: Backend, location: str) -> None:
    """Ids and namespaces holding each bidi control: no page shows one raw outside a memory's text
    (which sits in an element of its own direction, dir="auto")."""
    if cli(work, location, "init").returncode:
        raise RuntimeError("setting up the web bidi probe: init failed")
    for n, char in enumerate(BIDI):
        if cli(work, location, "add", f"Memory {n} of the bidi probe.", "--id", f"id{char}{n}exe.txt", "-n", f"ns{char}{n}").returncode:
            raise RuntimeError("setting up the web bidi probe failed")
    with Page(work, location, label="web-bidi") as page:
        paths = ["/", "/?all=yes", "/runs"] + [f"/memories/{quote(f'id{char}{n}exe.txt')}" for n, char in enumerate(BIDI)]
        paths += [f"/memories?namespace={quote(f'ns{char}{n}')}" for n, char in enumerate(BIDI)]
        paths += [f"/report?namespace={quote(f'ns{char}{n}')}" for n, char in enumerate(BIDI)]
        for path in paths:
            answer = page.get(path)
            outside_text = re.sub(r'<(\w+)[^>]*\bdir="auto"[^>]*>.*?</\1>', "", answer.text, flags=re.S)
            # Values of form fields go back to the server as they are; they are not what a label says.
            outside_text = re.sub(r'\bvalue="[^"]*"|\bhref="[^"]*"|\baction="[^"]*"', "", outside_text)
            raw = sorted({f"U+{ord(c):04X}" for c in outside_text if c in BIDI})
            tally.expect(answer.status_code == 200 and not raw, f"web {path}: {answer.status_code}, bidi controls shown raw: {raw}")
        page.clean_log(tally)


__all__ = ["probe_web_bidi", "probe_web_cookie", "probe_web_numbers", "probe_web_read_only", "probe_web_scope"]
