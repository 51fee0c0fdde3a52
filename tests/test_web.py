"""`memstore web` in a real browser: Debian's chromium driven by Playwright, against a real server
process (`memstore web`) over a real store, SQLite and PostgreSQL, with real flags from the
contradict phase and the real embedding model.

A person finds a memory, sees it as of an earlier moment, settles flags, corrects and forgets, and
undoes a run, all by clicking; every change is a run `memstore runs` shows. The door holds: no
token, a wrong token, a rebinding Host, a POST without its CSRF field, a read-only page; stored
HTML shows as text and runs nothing.

The screenshots of docs/web.md are taken by tests/test_web_review.py, on a store grown like an agent's.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from playwright import sync_api as playwright_api
from playwright.sync_api import expect

from memstore.records import now_ms
from memstore.web.guard import csrf_value

from .conftest import REPO
from .test_semantic_store import FACTS

MEMSTORE = str(Path(sys.executable).with_name("memstore"))  # the installed memstore the tests run on
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HOSTILE = '<img src=x onerror="document.title=\'owned\'"><script>document.title="owned"</script>'



def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


class Server:
    def __init__(self, url: str, process: subprocess.Popen, port: int) -> None:
        self.url, self.process, self.port = url, process, port
        self.base = f"http://127.0.0.1:{port}"

    def session(self) -> dict[str, str]:
        """The cookie the page trades its token for, as a browser keeps it."""
        return dict(httpx.get(self.url).cookies)


def start(store_url: str, tmp_path: Path, *args: str, home: Path | None = None) -> Server:
    """`memstore web` on `store_url` (with `args`), answering once it listens; HOME at `home` if given
    (the header then shows a store under it as ~/...)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "MEMSTORE_WEB_TOKEN"}
    if home is not None:
        env["HOME"] = str(home)
    log = (tmp_path / f"web-{port}.log").open("w")
    process = subprocess.Popen([MEMSTORE, "--db", str(store_url), "web", "--listen", f"127.0.0.1:{port}", *args],
                               stdout=subprocess.PIPE, stderr=log, text=True, env=env)  # fmt: skip
    first_line = process.stdout.readline().strip()
    wait_listening(process, "127.0.0.1", port, tmp_path / f"web-{port}.log")
    return Server(first_line, process, port)


def wait_listening(process: subprocess.Popen, host: str, port: int, log: Path) -> None:
    """Until `process` takes connections on host:port (it prints its address before it listens)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)


@pytest.fixture
def seeded(store, model_dir):
    """FACTS with vectors, one maintain's flags (r1 vs r2, c1 vs c2) and a consolidation run that
    archived a duplicate; plus a memory whose text is hostile HTML."""
    store.add_many(FACTS)
    store.add("user lives in porto!", id="c3", timestamp=10)
    store.add(HOSTILE, id="h1", timestamp=11)
    store.enable_embeddings(model_dir)
    store.sync_embeddings()
    store.maintain(["contradict"])
    store.consolidate(100)
    return store


@pytest.fixture
def server(seeded, store_url, tmp_path):
    running = start(store_url, tmp_path)
    yield running
    running.process.terminate()
    running.process.wait(timeout=15)


def opened(browser, server: Server):
    context = browser.new_context()
    page = context.new_page()
    page.goto(server.url)
    return context, page


def test_the_first_line_is_the_address_to_open_and_it_trades_the_token_for_a_cookie(browser, server):
    assert re.fullmatch(rf"http://127\.0\.0\.1:{server.port}/\?token=[A-Za-z0-9_-]{{20,}}", server.url)
    context, page = opened(browser, server)
    assert page.url == f"{server.base}/"  # the token left the address bar
    [cookie] = context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["name"] == f"memstore_session_{server.port}"
    assert cookie["value"] != server.url.split("token=")[1]  # a session value, not the token
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    context.close()


def test_a_person_finds_a_memory_settles_flags_corrects_and_undoes_by_clicking(browser, server, seeded):
    context, page = opened(browser, server)

    # Search, answered by recall's default mode (hybrid: the store has vectors).
    page.get_by_role("link", name="Memories", exact=True).click()
    page.get_by_label("Search").fill("how many requests per minute may the API take")
    page.get_by_role("button", name="Show").click()
    first_row = page.locator("tbody tr").first
    assert first_row.locator("a.id").first.inner_text() in ("r1", "r2") and first_row.locator("td").first.inner_text().startswith("#1")
    assert "semantic" in first_row.inner_text()
    assert "may contradict" in first_row.inner_text()  # r1 and r2 are flagged against each other

    # Settle the rate-limit flag: keep r2, r1 is superseded by it.
    page.get_by_role("link", name="Flags", exact=True).click()
    page.locator(".side", has=page.locator("a.id", has_text="r2")).get_by_role("button", name="Keep this one").click()
    assert page.url.startswith(f"{server.base}/flags?done=")
    expect(page.locator(".notice")).to_be_visible()
    assert seeded.get("r1")["reason"] == "superseded" and seeded.get("r1")["superseded_by"] == "r2"
    keep_run = seeded.runs(1)[0]
    assert keep_run["kind"] == "supersede"

    # Dismiss the other flag.
    page.get_by_role("link", name="Flags", exact=True).click()
    flag = seeded.flags()[0]
    page.get_by_role("button", name=f"Both are fine: dismiss flag {flag['id']}").click()
    assert page.url.startswith(f"{server.base}/flags?done=")
    assert flag["id"] not in [f["id"] for f in seeded.flags()] and seeded.flags(status="dismissed")[0]["id"] == flag["id"]
    # A dismissal is a run: its undo button is on the answer, and it opens the flag again.
    dismiss_run = seeded.runs(1)[0]["id"]
    page.get_by_role("button", name=f"Undo run {dismiss_run}").click()
    assert flag["id"] in [f["id"] for f in seeded.flags()]
    # Settled flags stay listed, with how they were settled.
    page.goto(f"{server.base}/flags?status=resolved")
    assert "resolved: superseded" in page.locator("main").inner_text()

    # Correct a memory, then forget another.
    before_update = now_ms()
    time.sleep(0.01)
    page.goto(f"{server.base}/memories/t1")
    page.get_by_label("Text").fill("The team standup is every weekday at 10:00.")
    page.get_by_role("button", name="Update t1").click()
    expect(page.get_by_role("heading", name=f"Memory {seeded.get('t1')['superseded_by']}")).to_be_visible()
    assert seeded.get("t1")["reason"] == "superseded"
    page.goto(f"{server.base}/memories/u1")
    page.get_by_role("button", name="Forget u1").click()
    forget_run = seeded.get("u1")["run_id"]
    assert seeded.get("u1")["reason"] == "forgotten"

    # As of a moment before the update, the old text was the live one.
    page.get_by_role("link", name="Memories", exact=True).click()
    page.get_by_label("As of (UTC, ISO-8601 or Unix ms)").fill(str(before_update))
    page.get_by_role("button", name="Show").click()
    table = page.locator("table").inner_text()
    assert "every weekday at 9:30" in table and "at 10:00" not in table

    # Undo the forget from its run's page: u1 is live again.
    page.get_by_role("link", name="Runs", exact=True).click()
    page.get_by_role("link", name=str(forget_run), exact=True).first.click()
    page.get_by_role("button", name=f"Undo run {forget_run}").click()
    expect(page.get_by_role("heading", name=f"Run {forget_run}: forget")).to_be_visible()
    assert "Undone. 1 memory back in the live set" in page.locator(".notice").inner_text() and "office coffee" in page.locator("main").inner_text()
    assert "archived_at" not in seeded.get("u1")
    # Every change is a run the CLI sees.
    kinds = [run["kind"] for run in seeded.runs(10)]
    assert {"supersede", "update", "forget"} <= set(kinds)
    context.close()


def test_the_overview_links_a_namespaces_report_and_counts_what_waits_for_embeddings(browser, server, seeded):
    seeded.add("A fact written after the last sync.", id="late")
    context, page = opened(browser, server)
    page.get_by_role("link", name="how many wait for one").click()
    assert "Waiting for embeddings: 1 live memory" in page.locator("main").inner_text()
    page.goto(f"{server.base}/")
    page.get_by_role("link", name="its hygiene report").click()
    expect(page.get_by_role("heading", name="Hygiene report: default")).to_be_visible()
    report = seeded.report("default")
    text = page.locator("main").inner_text()
    assert f"{report['total_records']} live memories" in text
    for group in report["exact_duplicate_groups"]:
        assert f"{len(group)} copies: " + " · ".join(f"{report['texts'][memory_id]} {memory_id}" for memory_id in group) in text
    context.close()


def test_stored_html_shows_as_text_and_runs_nothing(browser, server):
    context, page = opened(browser, server)
    page.goto(f"{server.base}/memories/h1")
    assert page.locator("p.text").inner_text() == HOSTILE
    page.goto(f"{server.base}/memories")
    assert HOSTILE in page.locator("table").inner_text()
    assert page.title() != "owned" and "owned" not in page.evaluate("document.title")
    context.close()


def test_without_the_token_or_the_csrf_field_nothing_is_shown_or_changed(server, seeded):
    token = server.url.split("token=")[1]
    bare = httpx.get(f"{server.base}/memories")
    assert bare.status_code == 401 and "Deploy" not in bare.text
    assert httpx.get(f"{server.base}/?token=wrong").status_code == 401
    rebinding = httpx.get(f"{server.base}/", headers={"Host": f"evil.example:{server.port}"}, cookies=server.session())
    assert rebinding.status_code == 421
    cookies = server.session()
    assert httpx.get(f"{server.base}/memories", cookies=cookies).status_code == 200
    run_id = seeded.runs(1)[0]["id"]
    refused = httpx.post(f"{server.base}/runs/{run_id}/undo", cookies=cookies, data={})
    assert refused.status_code == 403 and seeded.runs(1)[0]["status"] == "applied"
    no_cookie = httpx.post(f"{server.base}/runs/{run_id}/undo", data={"csrf": "x"})
    assert no_cookie.status_code == 401 and seeded.runs(1)[0]["status"] == "applied"
    headers = httpx.get(f"{server.base}/", cookies=cookies).headers
    assert "script-src" not in headers["content-security-policy"] and "default-src 'none'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"


def test_a_read_only_page_shows_no_action_and_refuses_every_post(browser, seeded, store_url, tmp_path):
    server = start(store_url, tmp_path, "--read-only")
    try:
        context, page = opened(browser, server)
        for path in ("/", "/flags", f"/runs/{seeded.runs(1)[0]['id']}", "/memories/t1"):
            page.goto(server.base + path)
            assert page.locator("form[method=post]").count() == 0, path
        token = server.url.split("token=")[1]
        refused = httpx.post(f"{server.base}/memories/t1/forget", cookies=server.session(), data={"csrf": csrf_value(token)})
        assert refused.status_code == 403 and "archived_at" not in seeded.get("t1")
        context.close()
    finally:
        server.process.terminate()
        server.process.wait(timeout=15)


def test_a_page_kept_to_one_namespace_shows_nothing_of_the_others(browser, seeded, store_url, tmp_path):
    seeded.add("Another tenant's secret.", id="o1", namespace="other")
    server = start(store_url, tmp_path, "--namespace", "other")
    try:
        context, page = opened(browser, server)
        assert "default" not in page.locator("table").first.inner_text()
        page.goto(f"{server.base}/memories/t1")
        expect(page.get_by_role("heading", name="That did not work")).to_be_visible()
        page.goto(f"{server.base}/memories")
        assert "Another tenant's secret." in page.locator("table").inner_text()
        # A run over every namespace shows only this namespace's part, and cannot be undone from here.
        everywhere = seeded.consolidate(0, namespace=None)
        page.goto(f"{server.base}/runs/{everywhere.run_id}")
        assert page.locator("form[method=post]").count() == 0 and "t1" not in page.locator("main").inner_text()
        token = server.url.split("token=")[1]
        cookies = server.session()
        refused = httpx.post(f"{server.base}/runs/{everywhere.run_id}/undo", cookies=cookies, data={"csrf": csrf_value(token)})
        assert refused.status_code == 404 and seeded.runs(1)[0]["status"] == "applied"
        assert httpx.post(f"{server.base}/check", cookies=cookies, data={"csrf": csrf_value(token)}).status_code == 403
        context.close()
    finally:
        server.process.terminate()
        server.process.wait(timeout=15)


def test_a_non_loopback_listen_without_a_token_of_ones_own_is_refused(tmp_path):
    done = subprocess.run([MEMSTORE, "--db", str(tmp_path / "s.db"), "web", "--listen", "0.0.0.0:8767"],
                          capture_output=True, text=True, timeout=60, env={k: v for k, v in os.environ.items() if k != "MEMSTORE_WEB_TOKEN"})  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "Error: refusing to serve 0.0.0.0 without a token of your own: give --token-file or MEMSTORE_WEB_TOKEN, or listen on 127.0.0.1\n"
    assert not (tmp_path / "s.db").exists()


def test_bad_input_in_an_address_or_a_form_is_a_message_not_a_server_error(server, seeded):
    cookies = server.session()
    answers = {
        path: httpx.get(server.base + path, cookies=cookies)
        for path in ("/memories?after=zz", "/memories?after=3:x:y", "/memories?as_of=garbage", "/memories/nope", "/runs/999")
    }
    assert {path: answer.status_code for path, answer in answers.items()} == {
        "/memories?after=zz": 400, "/memories?after=3:x:y": 400, "/memories?as_of=garbage": 400, "/memories/nope": 404, "/runs/999": 404,
    }  # fmt: skip
    assert all("Nothing was changed." in answer.text for answer in answers.values())
    token = server.url.split("token=")[1]
    refused = httpx.post(f"{server.base}/memories/t1/update", cookies=cookies, data={"csrf": csrf_value(token), "importance": "٣"})
    assert refused.status_code == 400 and "is not a whole number" in refused.text and "archived_at" not in seeded.get("t1")


def test_keyset_pages_walk_the_whole_rank_order_and_filters_narrow_it(store, store_url, tmp_path):
    """120 memories in ties of importance and timestamp: "Next" pages, each read after the last row
    of the one before, give every live memory once, in rank order (importance, newest, id)."""
    store.add_many({"id": f"k{n:03}", "text": f"Fact number {n}.", "importance": 1 + n % 3, "timestamp": 1_000 + n // 7,
                    "pinned": n % 10 == 0} for n in range(120))  # fmt: skip
    store.add("Today's door code is 4512.", id="soon", ttl=3600)
    running = start(store_url, tmp_path)
    try:
        cookies = running.session()

        def ids(path: str) -> tuple[list[str], str | None]:
            html = httpx.get(running.base + path, cookies=cookies).text
            found = re.findall(r'<a class="id" href="/memories/([^"]+)"', html)
            following = re.search(r'<a href="(/memories\?[^"]*after=[^"]+)">Next', html)
            return found, following.group(1).replace("&amp;", "&") if following else None

        walked, path = [], "/memories?namespace=default"
        while path:
            page, path = ids(path)
            walked += page
        assert walked == [row["id"] for row in store.list("default")] and len(walked) == 121
        assert ids("/memories?namespace=default&pinned=yes")[0] == [row["id"] for row in store.list("default") if row["pinned"]]
        assert ids("/memories?namespace=default&expiring=week")[0] == ["soon"]
    finally:
        running.process.terminate()
        running.process.wait(timeout=15)


def test_a_page_kept_to_one_namespace_lists_its_own_runs_behind_many_newer_runs_of_others(store):
    """The runs of a page kept to one namespace are picked in SQL: its one run, older than 60 runs
    of another namespace, is on its overview and its runs page (in process, the ASGI app alone)."""
    from starlette.testclient import TestClient

    from memstore.web.pages import create_app

    store.add("Ours to forget.", id="ours", namespace="kept")
    own = store.forget(["ours"]).run_id
    store.add_many({"id": f"theirs{n}", "text": f"Theirs number {n}.", "namespace": "others"} for n in range(60))
    newer = [store.forget([f"theirs{n}"]).run_id for n in range(60)]
    with TestClient(create_app(store, token="t0ken", namespace="kept"), base_url="http://127.0.0.1") as client:
        runs_page, overview = client.get("/runs"), client.get("/")
        other = client.get(f"/runs/{newer[0]}")
    assert runs_page.status_code == overview.status_code == 200 and other.status_code == 404
    assert f'href="/runs/{own}"' in runs_page.text and f'href="/runs/{own}"' in overview.text
    assert not any(f'href="/runs/{run_id}"' in runs_page.text for run_id in newer)
