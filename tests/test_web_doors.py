"""The page's doors after the second hardening round (issue 40): a real `memstore web` process over a
real store, SQLite and PostgreSQL, asked over real HTTP (and in Chromium where a browser decides).

- a page kept to one namespace runs nothing store-wide and shows no other namespace's text or figure;
- a GET (and every read-only page) never takes the write lock or embeds: the maintain preview reads;
- the cookie carries a session value, not the token, and the token trade redirects only to a path of
  the page's own origin;
- input past what the store can hold is a 400/404 page with a one-line message, never a traceback;
- bidi controls in ids and namespaces are shown, not obeyed.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import quote, urljoin, urlsplit

import httpx
import pytest
from playwright.sync_api import expect
from sqlalchemy import text

from memstore import MemoryStore
from memstore.web.guard import csrf_value

from .test_semantic_store import FACTS
from .test_web import MEMSTORE, Server, browser, free_port, start, wait_listening  # noqa: F401 (browser is a fixture)

VAULT = "b secret the vault code is 9931"


def stop(server: Server) -> None:
    server.process.terminate()
    server.process.wait(timeout=15)


def log_of(server: Server, tmp_path) -> str:
    return (tmp_path / f"web-{server.port}.log").read_text()


def words(html: str) -> str:
    """A page's text without its tags, spaces collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def token_of(server: Server) -> str:
    return server.url.split("token=")[1]


@pytest.fixture
def tenants(store):
    """Namespace a: a fact and its copy (dedup archives a2). Namespace b: 30 memories, one of them a
    secret whose stored key a hand edit broke (the store-wide check names it, text and all)."""
    store.add("The garden gate code is 4417.", id="a1", namespace="a", timestamp=2)
    store.add("the garden gate code is 4417", id="a2", namespace="a", timestamp=1)
    store.add(VAULT, id="b1", namespace="b")
    store.add_many({"id": f"b{n}", "text": f"B fact number {n}.", "namespace": "b"} for n in range(2, 31))
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE memories SET norm_key = 'broken' WHERE id = 'b1'"))
    return store


# -- finding 2: a page kept to one namespace -----------------------------------------------------------


def test_a_scoped_page_previews_and_runs_maintain_on_its_namespace_only(tenants, store_url, tmp_path):
    server = start(store_url, tmp_path, "--namespace", "a")
    try:
        cookies = server.session()
        preview = httpx.get(f"{server.base}/maintain", cookies=cookies, timeout=120)
        assert preview.status_code == 200
        assert "vault" not in preview.text and "norm_key" not in preview.text
        assert "a2 (duplicate)" in words(preview.text)
        done = httpx.post(f"{server.base}/maintain", cookies=cookies, data={"csrf": csrf_value(token_of(server))}, timeout=120, follow_redirects=True)
        assert done.status_code == 200 and "vault" not in done.text and "norm_key" not in done.text
        assert tenants.get("a2")["reason"] == "duplicate" and "archived_at" not in tenants.get("b1")
        assert "Traceback" not in log_of(server, tmp_path)
    finally:
        stop(server)


def test_a_scoped_page_shows_no_store_wide_figure(tenants, store_url, tmp_path, model_dir):
    tenants.enable_embeddings(model_dir)  # nothing embedded: 2 of a and 30 of b wait
    everywhere = tenants.consolidate(100, namespace=None)  # archives a2 (and nothing of b)
    server = start(store_url, tmp_path, "--namespace", "a")
    try:
        cookies = server.session()
        overview = words(httpx.get(f"{server.base}/", cookies=cookies).text)
        assert "pending" not in overview.lower() and "31" not in overview.split()  # the store's 31 waiting (a1 and b's 30)
        assert httpx.get(f"{server.base}/embeddings", cookies=cookies).status_code in (403, 404)
        run = httpx.get(f"{server.base}/runs/{everywhere.run_id}", cookies=cookies).text
        assert "Live before" not in run and f" {everywhere.live_before} " not in words(run)
        assert "a2" in run and "b1" not in run
    finally:
        stop(server)


# -- finding 3: a GET never takes the write lock or embeds ----------------------------------------------


class HeldWriteLock:
    """Another writer holding the store: SQLite's write lock (BEGIN IMMEDIATE), or on PostgreSQL the
    job lock of namespace `default` that a job (and the dry run) takes."""

    def __init__(self, store: MemoryStore) -> None:
        self.store, self.sqlite = store, store.is_sqlite

    def __enter__(self) -> HeldWriteLock:
        if self.sqlite:
            # Through the store's own driver: a second SQLite library must not open the file in this process.
            self.held = self.store.engine.raw_connection()
            self.held.driver_connection.execute("BEGIN IMMEDIATE")
        else:
            self.held = self.store.engine.connect()
            self.held.execute(text("SELECT pg_advisory_lock(hashtextextended('default', 0))"))
            self.held.commit()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.sqlite:
            self.held.driver_connection.execute("ROLLBACK")
        else:
            self.held.execute(text("SELECT pg_advisory_unlock(hashtextextended('default', 0))"))
        self.held.close()


def test_a_read_only_maintain_preview_answers_while_another_writer_holds_the_store(store, store_url, tmp_path, model_dir):
    store.add_many({"id": f"w{n}", "text": f"Waiting fact {n}.", "timestamp": n} for n in range(40))
    store.add("waiting fact 0", id="w0-copy", timestamp=0)
    store.enable_embeddings(model_dir)  # 41 memories wait for a vector
    pending = store.embedding_status()["pending"]
    server = start(store_url, tmp_path, "--read-only")
    try:
        cookies = server.session()
        with HeldWriteLock(store):
            preview = httpx.get(f"{server.base}/maintain", cookies=cookies, timeout=180)
            # No other page takes the write lock either.
            for path in ("/", "/memories", "/memories?q=waiting+fact", "/memories/w1", "/runs", "/flags", "/report", "/embeddings"):
                assert httpx.get(f"{server.base}{path}", cookies=cookies, timeout=180).status_code == 200, path
        assert preview.status_code == 200, preview.text
        assert "w0-copy (duplicate)" in words(preview.text)
        assert f"{pending} memories wait for embeddings" in preview.text
        assert store.embedding_status()["pending"] == pending and store.runs(5) == []  # nothing written, nothing embedded
        assert "Traceback" not in log_of(server, tmp_path)
    finally:
        stop(server)


def test_the_preview_is_the_dry_run_when_every_memory_has_its_vector(store, model_dir):
    """What the page previews is what `maintain --dry-run` (and then the run) does: the same code on
    a copy of the namespace."""
    store.add_many(FACTS)
    store.add("user lives in porto!", id="c3", timestamp=10)
    store.add("Another tenant's copy: user lives in porto!", id="o1", namespace="other")
    store.enable_embeddings(model_dir)
    store.sync_embeddings()

    def seen(report) -> list[tuple]:
        return [(phase.name, phase.status, sorted(entry["id"] for entry in phase.archived), sorted((flag["a"], flag["b"]) for flag in phase.flags))
                for phase in report.phases if phase.name != "check"]  # fmt: skip

    preview, dry_run = store.maintain_preview(), store.maintain(dry_run=True)
    assert dry_run.phases[0].name == "check" and dry_run.phases[0].status == "ok", dry_run.phases[0].error  # else the run stops there
    assert seen(preview) == seen(dry_run)
    assert preview.phases[0].name == "check" and preview.phases[0].status == "skipped"
    assert any(phase.flags for phase in preview.phases) and any(phase.archived for phase in preview.phases)


# -- finding 4: the cookie and the redirects --------------------------------------------------------------


class CookieCatcher(BaseHTTPRequestHandler):
    """Another service on this machine: it records the Cookie header each visit sends it."""

    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        CookieCatcher.seen.append(self.headers.get("Cookie", ""))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"another service")

    def log_message(self, *args: object) -> None:
        pass


def test_the_cookie_carries_a_session_value_that_another_local_service_cannot_use(browser, store, store_url, tmp_path):  # noqa: F811
    store.add("A private fact.", id="p1")
    server = start(store_url, tmp_path)
    other = HTTPServer(("127.0.0.1", 0), CookieCatcher)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        context = browser.new_context()
        page = context.new_page()
        page.goto(server.url)
        assert page.url == f"{server.base}/"
        [cookie] = context.cookies()
        assert cookie["name"] == f"memstore_session_{server.port}" and cookie["path"] == "/"
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert cookie["value"] != token_of(server) and token_of(server) not in cookie["value"]
        # Browsers keep cookies per host, not per port: the other service receives it ...
        CookieCatcher.seen.clear()
        page.goto(f"http://127.0.0.1:{other.server_port}/")
        assert any(cookie["value"] in header for header in CookieCatcher.seen)
        # ... but not the token: what it got opens nothing that takes the token.
        assert not any(token_of(server) in header for header in CookieCatcher.seen)
        assert httpx.get(f"{server.base}/memories", headers={"Authorization": f"Bearer {cookie['value']}"}).status_code == 401
        context.close()
    finally:
        other.shutdown()
        stop(server)


def test_a_page_on_a_loopback_address_of_its_own_keeps_its_cookie_from_services_on_127_0_0_1(browser, store, store_url, tmp_path):  # noqa: F811
    """Cookies are kept per host: a page listening on 127.0.0.2 sends its cookie to no service on 127.0.0.1."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "MEMSTORE_WEB_TOKEN"}
    with (tmp_path / "web-own-address.log").open("w") as log:
        process = subprocess.Popen([MEMSTORE, "--db", store_url, "web", "--listen", f"127.0.0.2:{port}"], stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    other = HTTPServer(("127.0.0.1", 0), CookieCatcher)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        address = process.stdout.readline().strip()
        assert address.startswith(f"http://127.0.0.2:{port}/?token=")
        wait_listening(process, "127.0.0.2", port, tmp_path / "web-own-address.log")
        context = browser.new_context()
        page = context.new_page()
        page.goto(address)
        assert page.url == f"http://127.0.0.2:{port}/" and [cookie["domain"] for cookie in context.cookies()] == ["127.0.0.2"]
        CookieCatcher.seen.clear()
        page.goto(f"http://127.0.0.1:{other.server_port}/")
        assert CookieCatcher.seen and all("memstore_session" not in header for header in CookieCatcher.seen)
        context.close()
    finally:
        other.shutdown()
        process.terminate()
        process.wait(timeout=15)


def test_the_token_trade_redirects_only_to_a_path_of_this_origin(store, store_url, tmp_path):
    server = start(store_url, tmp_path)
    try:
        token = token_of(server)
        for path in ("//evil.example/", "/%5Cevil.example", "/%5C%5Cevil.example/x", "///evil.example", "/%0d%0aSet-Cookie:%20x=1"):
            answer = httpx.get(f"{server.base}{path}?token={token}")
            assert answer.status_code == 303, path
            location = answer.headers["location"]
            assert location.startswith("/") and not location.startswith(("//", "/\\")), (path, location)
            assert urlsplit(urljoin(f"{server.base}/", location)).netloc == f"127.0.0.1:{server.port}", (path, location)
            [cookie] = answer.headers.get_list("set-cookie")  # one cookie, the page's own: nothing injected
            assert cookie.startswith(f"memstore_session_{server.port}="), (path, cookie)
        assert "Traceback" not in log_of(server, tmp_path)
    finally:
        stop(server)


# -- finding 8: input past what the store holds ------------------------------------------------------------


def test_numbers_past_what_the_store_holds_are_a_one_line_message(store, store_url, tmp_path):
    store.add("The standup is at 9:30.", id="t1")
    server = start(store_url, tmp_path)
    try:
        cookies = server.session()
        expected = {
            "/runs/99999999999999999999999": 404,
            "/memories?after=--1:1:x": 400,
            "/memories?after=1:99999999999999999999:x": 400,
            "/memories?after=1:-99999999999999999999:x": 400,
            "/memories?as_of=99999999999999999999": 400,
        }
        for path, status in expected.items():
            answer = httpx.get(server.base + path, cookies=cookies)
            assert answer.status_code == status, (path, answer.text[-500:])
            [message] = re.findall(r'<p class="error">(.*?)</p>', answer.text, re.S)
            assert "\n" not in message and "Traceback" not in message, path
        # The largest moment the store holds is a moment: the page answers it (dates past 9999 as numbers).
        assert httpx.get(server.base + "/memories?as_of=9223372036854775807", cookies=cookies).status_code == 200
        csrf = {"csrf": csrf_value(token_of(server))}
        refused = httpx.post(f"{server.base}/memories/t1/update", cookies=cookies, data={**csrf, "importance": "--3"})
        assert refused.status_code == 400 and "is not a whole number" in refused.text and "archived_at" not in store.get("t1")
        undo = httpx.post(f"{server.base}/runs/99999999999999999999999/undo", cookies=cookies, data=csrf)
        assert undo.status_code == 404
        assert "Traceback" not in log_of(server, tmp_path)
    finally:
        stop(server)


# -- finding 9: bidi controls ----------------------------------------------------------------------------------


def test_bidi_controls_in_ids_and_namespaces_are_shown_not_obeyed(browser, store, store_url, tmp_path):  # noqa: F811
    sneaky = "note\u202etxt.exe"
    store.add("\u05e9\u05dc\u05d5\u05dd, a text that starts right to left.", id=sneaky, namespace="n\u2067s")
    server = start(store_url, tmp_path)
    try:
        context = browser.new_context()
        page = context.new_page()
        page.goto(server.url)
        page.goto(f"{server.base}/memories/{quote(sneaky)}")
        assert page.get_by_role("heading", level=1).inner_text() == "Memory note\\u202etxt.exe"
        expect(page.get_by_role("button", name="Forget note\\u202etxt.exe")).to_be_visible()
        shown = page.locator("main").inner_text()
        assert "n\\u2067s" in shown and "\u202e" not in shown and "\u2067" not in shown
        assert page.locator("p.text").get_attribute("dir") == "auto"
        page.goto(f"{server.base}/")
        assert "n\\u2067s" in page.locator("main").inner_text()
        context.close()
    finally:
        stop(server)
