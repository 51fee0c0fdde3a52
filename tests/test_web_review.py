"""`memstore web` at the size an agent's store reaches, worked through in Chromium as a person would.

The store is grown like an agent's over a few days, with the library (no model): four namespaces,
thousands of conversation turns evicted by nightly `maintain` runs (each one run grouping its
phases), and 300 open contradiction flags written as the contradict phase writes them (straight
into `contradiction_flags`, with the reasons it gives). A reviewer then settles 20 flags with one
bulk dismissal and 2 by hand, brings back one evicted memory alone, finds an archived memory by
search, undoes one `maintain` with one click, and no page is taller than a few screens.

Screenshots go to a temporary folder, or to $MEMSTORE_WEB_SCREENSHOTS (docs/images for docs/web.md);
on SQLite the header shows the store as `~/agent.db` (the server runs with HOME set to the test's
folder). Each test runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import expect

from memstore import MemoryStore
from memstore.db import write_transaction
from memstore.records import now_ms
from memstore.schema import contradiction_flags

from .conftest import BACKENDS
from .test_web import MEMSTORE, Server, browser, free_port  # noqa: F401 (browser: the module's Chromium)
from .test_web import start as start_web

DAY = 86_400_000
VIEWPORT = {"width": 1280, "height": 900}
SCREENS = 5  # no page is taller than this many viewports
PHONE = {"width": 390, "height": 844}
CITIES = ("Lisbon", "Porto", "Vienna", "Berlin", "Madrid", "Seville", "Oslo", "Bergen")


def grow_agent_store(store: MemoryStore, now: int) -> dict:
    """Four days of an agent's writes and three nightly maintains; returns what the test needs."""
    start = now - 12 * DAY
    people = ["Dana", "Ravi", "Mia", "Tom", "Lena", "Omar"]
    facts = [{"id": f"fact-{i:03}", "namespace": "assistant", "importance": 4, "timestamp": start + i * 60_000,
              "text": f"{people[i % 6]} said the next review of the {['budget', 'roadmap', 'hiring plan', 'launch'][i % 4]} is in week {10 + i}."}
             for i in range(60)]  # fmt: skip
    # Said once, long ago, and not important: the first night's capacity evicts it.
    facts.append({"id": "dana-japanese", "namespace": "assistant", "importance": 1, "timestamp": start - DAY, "text": "Dana is learning Japanese."})
    projects, contacts = [], []
    for i in range(150):
        minutes = 30 + i % 7 * 5
        projects.append({"id": f"proj-{i:03}-a", "namespace": "projects", "importance": 3, "timestamp": start + i * 1000,
                         "text": f"The build timeout of project P{i} is {minutes} minutes."})  # fmt: skip
        projects.append({"id": f"proj-{i:03}-b", "namespace": "projects", "importance": 3, "timestamp": start + 5 * DAY + i * 1000,
                         "text": f"The build timeout of project P{i} is {minutes + 15} minutes."})  # fmt: skip
        city, moved = CITIES[i % 8], CITIES[(i + 3) % 8]
        contacts.append({"id": f"contact-{i:03}-a", "namespace": "contacts", "importance": 3, "timestamp": start + i * 1000,
                         "text": f"Contact {i} lives in {city}."})  # fmt: skip
        contacts.append({"id": f"contact-{i:03}-b", "namespace": "contacts", "importance": 3, "timestamp": start + 6 * DAY + i * 1000,
                         "text": f"Contact {i} lives in {moved}."})  # fmt: skip
    store.add_many([*facts, *projects, *contacts, {"id": "hello", "text": "The agent's first note.", "timestamp": start}])
    everywhere = store.consolidate(10_000, namespace=None)  # a store-wide run: the whole store's line

    def turns(night: int, count: int) -> list[dict]:
        return [{"id": f"turn-{night}-{n:04}", "namespace": "assistant", "importance": 1 + n % 2, "timestamp": start + night * DAY + n * 1000,
                 "text": f"Turn {n} of night {night}: the user asked about {['weather', 'trains', 'lunch', 'music', 'the gym'][n % 5]} ({n})."}
                for n in range(count)]  # fmt: skip

    maintains = []
    for night, count in ((1, 1_200), (2, 1_500), (3, 1_400)):
        store.add_many(turns(night, count))
        maintains.append(store.maintain(namespace="assistant", capacity=400).run_id)
    # The flags the contradict phase would raise, with its reasons: 150 in projects (20 of them ten
    # days old), 150 in contacts.
    flags = []
    for i in range(150):
        minutes = 30 + i % 7 * 5
        flags.append({"namespace": "projects", "older_id": f"proj-{i:03}-a", "newer_id": f"proj-{i:03}-b", "similarity": 0.93,
                      "reason": f"a number differs: {minutes} vs {minutes + 15}", "status": "open", "run_id": everywhere.run_id,
                      "flagged_at": now - (10 * DAY if i < 20 else DAY + i * 1000)})  # fmt: skip
        flags.append({"namespace": "contacts", "older_id": f"contact-{i:03}-a", "newer_id": f"contact-{i:03}-b", "similarity": 0.88,
                      "reason": f"a value differs: {CITIES[i % 8].lower()} vs {CITIES[(i + 3) % 8].lower()}", "status": "open",
                      "run_id": everywhere.run_id, "flagged_at": now - 2 * DAY - i * 1000})  # fmt: skip
    with write_transaction(store.engine) as conn:
        conn.execute(contradiction_flags.insert(), flags)
    return {"maintains": maintains}


def start(db: Path | str, home: Path, tmp_path: Path, *args: str) -> Server:
    """`memstore web` on `db` (with `args`), HOME at `home` (the header then shows ~/agent.db)."""
    return start_web(db, tmp_path, *args, home=home)


@pytest.fixture(params=BACKENDS)
def agent(request, tmp_path):
    """The grown store and `memstore web` on it: a SQLite file at ~/agent.db, or a PostgreSQL database."""
    home = tmp_path / "home"
    home.mkdir()
    db = home / "agent.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    with MemoryStore(db) as store:
        grown = grow_agent_store(store, now_ms())
    server = start(db, home, tmp_path)
    store = MemoryStore(db)
    yield store, server, grown
    server.process.terminate()
    server.process.wait(timeout=15)
    store.close()


@pytest.fixture
def shots(tmp_path) -> Path:
    folder = Path(os.environ.get("MEMSTORE_WEB_SCREENSHOTS") or tmp_path / "shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def fits(page, path: str, screens: int = SCREENS) -> None:
    """The page at `path` is no taller than `screens` viewports."""
    page.goto(path)
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height <= screens * page.viewport_size["height"], (path, height)


def query_of(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def test_a_reviewer_works_through_an_agents_store(browser, agent, shots):
    store, server, grown = agent
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.goto(server.url)
    assert "~/agent.db" in page.locator("header").inner_text() or not store.is_sqlite
    # The overview details the largest namespace and gives the store's totals.
    expect(page.get_by_role("heading", name="Namespace assistant")).to_be_visible()
    assert "300 open flags" in page.locator("p.totals").inner_text()

    # 300 open flags over two namespaces, 20 to a page.
    page.get_by_role("navigation").get_by_role("link", name="Flags", exact=True).click()
    assert page.locator("p.count").inner_text().startswith("300 flags match")
    expect(page.locator("section.flag")).to_have_count(20)

    # 1. Twenty old ones in projects, dismissed together: one run, one undo.
    page.get_by_label("Namespace").fill("projects")
    page.get_by_label("Age").select_option("older-week")
    page.get_by_role("button", name="Show").click()
    assert page.locator("p.count").inner_text().startswith("20 flags match")
    assert "a number differs" in page.locator("section.flag").first.inner_text()
    page.get_by_role("button", name="Dismiss these 20").click()
    landed = query_of(page.url)
    assert landed["namespace"] == ["projects"] and landed["age"] == ["older-week"]
    bulk_run = int(landed["done"][0])
    dismissed = store.flag_page("projects", status="dismissed", limit=100)["flags"]
    assert len(dismissed) == 20 and {flag["closed_by_run"] for flag in dismissed} == {bulk_run}
    expect(page.get_by_role("button", name=f"Undo run {bulk_run}")).to_be_visible()

    # 2. Two by hand, in contacts: keep the newer side of one, say both are fine of the next; the
    # reviewer stays on the same filter, at the next flag.
    page.goto(f"{server.base}/flags?namespace=contacts&sort=oldest")
    first, second = page.locator("section.flag").nth(0), page.locator("section.flag").nth(1)
    first_id, second_id = (int(section.get_attribute("id").removeprefix("flag-")) for section in (first, second))
    assert "Contact" in first.inner_text() and first.locator("mark").count() >= 2  # the differing words, both sides
    page.screenshot(path=shots / "web-flags.png", full_page=False)
    first.locator(".side").nth(1).get_by_role("button", name="Keep this one").click()
    assert page.url.endswith(f"#flag-{second_id}") and query_of(page.url)["namespace"] == ["contacts"]
    kept = next(flag for flag in store.flag_page("contacts", status="resolved")["flags"] if flag["id"] == first_id)
    assert store.get(kept["older_id"])["reason"] == "superseded" and store.get(kept["older_id"])["superseded_by"] == kept["newer_id"]
    page.locator(f"#flag-{second_id}").get_by_role("button", name=f"Both are fine: dismiss flag {second_id}").click()
    assert query_of(page.url)["sort"] == ["oldest"]
    assert store.flag_page(None, status="open")["total"] == 300 - 20 - 2

    # 3. Search across every namespace: texts first, a rank and a bar, the namespace of each.
    page.goto(f"{server.base}/memories?q=when+is+the+budget+review&namespace=")
    rows = page.locator("table.search tbody tr")
    expect(rows).to_have_count(20)
    assert rows.first.locator("td.rank").inner_text().startswith("#1")
    assert "budget" in rows.first.inner_text() and "assistant" in rows.first.inner_text()
    page.screenshot(path=shots / "web-search.png", full_page=False)

    # 4. An archived memory found by search, and brought back alone.
    page.get_by_role("navigation").get_by_role("link", name="Memories", exact=True).click()
    page.get_by_label("Search").fill("Dana Japanese")
    page.get_by_label("Namespace").fill("assistant")
    page.get_by_label("in the archive").check()
    page.get_by_role("button", name="Show").click()
    row = page.locator("table.search tbody tr").first
    assert "Dana is learning Japanese." in row.inner_text() and "evicted" in row.inner_text()
    page.screenshot(path=shots / "web-archive-search.png", full_page=True)
    evicted_by = store.get("dana-japanese")["run_id"]
    row.locator("a.id").click()
    page.get_by_role("button", name="Restore this memory").click()
    assert "archived_at" not in store.get("dana-japanese")
    assert store.run(evicted_by)["status"] == "applied" and store.run(evicted_by)["archived_total"] > 500  # the rest stays out
    restore_run = int(query_of(page.url)["done"][0])
    assert store.run(restore_run)["kind"] == "restore"
    page.screenshot(path=shots / "web-memory.png", full_page=True)

    # 5. Last night's maintain undone with one click: every phase, newest first.
    last_night = grown["maintains"][-1]
    phases = [phase["id"] for phase in store.run(last_night)["phases"]]
    live_before = store.count("assistant")
    page.get_by_role("navigation").get_by_role("link", name="Runs", exact=True).click()
    page.get_by_role("link", name=str(last_night), exact=True).first.click()
    page.get_by_role("button", name=f"Undo run {last_night}").click()
    assert store.run(last_night)["status"] == "restored" and all(store.run(phase)["status"] == "restored" for phase in phases)
    assert store.count("assistant") > live_before + 1_000
    assert page.locator(".notice").first.inner_text().startswith("Undone.")
    page.reload()  # the answer was a redirect: reloading shows it again and undoes nothing twice
    expect(page.locator(".notice").first).to_be_visible()
    page.goto(f"{server.base}/runs")
    assert "undone" in page.locator("tr.undone").first.get_attribute("class")
    page.screenshot(path=shots / "web-runs.png", full_page=True)
    page.goto(f"{server.base}/")
    page.screenshot(path=shots / "web-overview.png", full_page=True)

    # 6. Every page stays within a few screens, whatever the store holds.
    evicting = store.run(grown["maintains"][1])["phases"][-1]["id"]
    for path in ("/", "/flags", "/flags?status=all", "/runs", f"/runs/{evicting}", f"/runs/{last_night}", "/memories?namespace=assistant",
                 f"/memories?namespace=assistant&as_of={now_ms()}", "/memories?q=trains", "/report?namespace=assistant",
                 "/maintain?namespace=assistant", "/memories/dana-japanese"):  # fmt: skip
        fits(page, server.base + path)
    page.goto(f"{server.base}/runs/{evicting}")
    expect(page.get_by_role("link", name="Next 50")).to_be_visible()
    page.screenshot(path=shots / "web-run.png", full_page=True)
    context.close()


def test_at_phone_width_nothing_is_wider_than_the_screen(browser, agent):
    store, server, _ = agent
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    page.goto(server.url)
    for path in ("/memories?q=trains&namespace=assistant", "/memories?q=trains", "/flags", "/memories?namespace=projects", "/runs"):
        page.goto(server.base + path)
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], path
    context.close()


def test_a_search_in_a_namespace_that_does_not_exist_says_so_and_points_to_matches(browser, agent):
    _, server, _ = agent
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.goto(server.url)
    page.goto(f"{server.base}/memories?q=build+timeout&namespace=projcts")
    notices = page.locator(".notice").all_inner_texts()
    # The nearest names by the rule every face uses (MemoryStore.namespace_known), best first.
    assert any(text.startswith("There is no namespace projcts: did you mean projects") for text in notices)
    assert any(re.search(r"Nothing in projcts, but \d+ in projects", text) for text in notices)
    context.close()


def test_every_post_answers_with_a_redirect_and_a_reload_changes_nothing(agent):
    store, server, _ = agent
    cookies = server.session()
    from memstore.web.guard import csrf_value

    token = server.url.split("token=")[1]
    flag = store.flag_page("contacts")["flags"][0]
    answer = httpx.post(f"{server.base}/flags/{flag['id']}/dismiss", cookies=cookies,
                        data={"csrf": csrf_value(token), "back": "/flags?namespace=contacts#flag-9"})  # fmt: skip
    assert answer.status_code == 303 and re.fullmatch(r"/flags\?namespace=contacts&done=\d+#flag-9", answer.headers["location"])
    runs = len(store.runs())
    assert httpx.get(server.base + answer.headers["location"], cookies=cookies).status_code == 200 and len(store.runs()) == runs
    elsewhere = httpx.post(f"{server.base}/flags/{store.flag_page('contacts')['flags'][0]['id']}/dismiss", cookies=cookies,
                           data={"csrf": csrf_value(token), "back": "//evil.example/"})  # fmt: skip
    assert elsewhere.status_code == 303 and elsewhere.headers["location"].startswith("/flags?done=")


def test_web_on_a_mistyped_store_is_the_usual_one_line_error(tmp_path):
    done = subprocess.run([MEMSTORE, "--db", str(tmp_path / "MISTYPED.db"), "web"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"Error: no memstore database at {tmp_path / 'MISTYPED.db'}; create it with `memstore init`\n"
    assert not (tmp_path / "MISTYPED.db").exists()


def test_a_template_naming_a_missing_field_fails(tmp_path):
    """StrictUndefined: a misspelt field is an error a test sees, not an empty string."""
    from jinja2 import UndefinedError

    from memstore.web.pages import Site

    with MemoryStore(tmp_path / "s.db") as store:
        site = Site(store, "t" * 24, None, False)
        with pytest.raises(UndefinedError):
            site.templates.from_string("{{ flag.older_id }}").render(flag={"older": "a"})


def test_the_live_chart_keeps_a_forget_off_the_store_wide_line_and_marks_undone_runs(tmp_path):
    """A forget counts what it touched (live before 1): on the line it would drop the whole store's
    count to 1. Only job runs are points; a run over every namespace is on the store's line; an
    undone run's marker is hollow and its title says so."""
    from memstore.web.health import live_chart

    with MemoryStore(tmp_path / "s.db") as store:
        store.add_many({"id": f"m{n}", "text": f"Fact {n}.", "namespace": "a" if n % 2 else "b", "importance": 1 + n % 5} for n in range(40))
        first = store.consolidate(30, namespace=None).run_id
        forget = store.forget(["m1"]).run_id
        second = store.consolidate(10, namespace=None).run_id
        store.restore(second)
        svg = str(live_chart(list(reversed(store.runs())), "a", "a"))
    points = re.findall(r"<title>([^<]*) at run #(\d+)( \(undone\))?: ([\d,]+)</title>", svg)
    assert {int(run) for _, run, _, _ in points} == {first, second} and str(forget) not in {run for _, run, _, _ in points}
    assert all(name.startswith("whole store") for name, _, _, _ in points)
    assert {(int(run), bool(undone)) for _, run, undone, _ in points} == {(first, False), (second, True)}
    assert 'fill="#fff"' in svg  # the undone run's hollow marker
    assert ">live memories</text>" in svg and "job run, oldest to newest" in svg  # both axes say what they hold


def test_a_page_kept_to_one_namespace_reviews_its_own_flags_only(browser, agent, tmp_path):
    store, _, _ = agent
    kept = start(store.location, tmp_path, tmp_path, "--namespace", "contacts")
    try:
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        page.goto(kept.url)
        page.goto(f"{kept.base}/flags?namespace=projects")
        assert page.locator("p.count").inner_text() == "150 flags match; 1 to 20 below."  # contacts' own, nothing of projects
        assert "projects" not in page.locator("main").inner_text()
        page.get_by_role("button", name="Dismiss these 150").click()
        assert store.flag_page("contacts")["total"] == 0 and store.flag_page("projects")["total"] == 150
        context.close()
    finally:
        kept.process.terminate()
        kept.process.wait(timeout=15)
