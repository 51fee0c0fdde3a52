"""The probe's attacks on `memstore mcp` (the probe runs them; see its docstring): the bearer
token, DNS rebinding against every loopback spelling, raw JSON-RPC garbage and a 50 MB body, and
what a server scoped to one namespace tells about the others.
"""

from __future__ import annotations

import base64
import json
import re
from contextlib import contextmanager
from pathlib import Path

from .common import CLI, Backend, Tally, check_clean, cli, env, free_port, mcp_exchange, start, stop, tail, wait_for_port

TOKEN = "probe-token-4f9a2c"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}  # fmt: skip


@contextmanager
def serving(work: Path, location: str, host: str = "127.0.0.1", token: str | None = None):
    """`memstore mcp --http HOST:PORT` (with the token from the environment, if any): yields (url, log)."""
    port, log = free_port("::1" if ":" in host else "127.0.0.1"), work / f"mcp-{host.replace(':', '_')}.log"
    bracketed = f"[{host}]" if ":" in host else host
    server = start(work, location, "mcp", "--http", f"{bracketed}:{port}", log=log,
                   env_extra={"MEMSTORE_MCP_TOKEN": token} if token else None)  # fmt: skip
    try:
        wait_for_port("127.0.0.1" if host == "localhost" else host, port, server)
        yield f"http://{bracketed}:{port}/mcp", log, server
    finally:
        stop(server)


def _post(url: str, body: bytes | dict, headers: dict[str, str], *, params: dict | None = None) -> int | str:
    """The status code of a POST, or what went wrong on the way."""
    import httpx2

    content = json.dumps(body).encode() if isinstance(body, dict) else body
    try:
        return httpx2.post(url, content=content, headers={**ACCEPT, **headers}, params=params, timeout=120).status_code
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def probe_tokens(tally: Tally, work: Path, location: str) -> None:
    """A server with a token: every request that does not carry it in `Authorization: Bearer` is 401
    (in the query string, a cookie, Basic, a prefix or an extension of it); RFC 7235's spellings of the
    one that does (any case of the scheme, more than one space) pass. The token never reaches the log."""
    basic = base64.b64encode(f"user:{TOKEN}".encode()).decode()
    variants = [
        ("missing", {}, None, 401), ("wrong", {"Authorization": "Bearer wrong-token"}, None, 401),
        ("a bare scheme", {"Authorization": "Bearer"}, None, 401), ("token alone", {"Authorization": TOKEN}, None, 401),
        ("a prefix of it", {"Authorization": f"Bearer {TOKEN[:-1]}"}, None, 401),
        ("it extended", {"Authorization": f"Bearer {TOKEN}x"}, None, 401),
        ("Basic with it", {"Authorization": f"Basic {basic}"}, None, 401),
        ("in the query string", {}, {"token": TOKEN}, 401), ("as access_token", {}, {"access_token": TOKEN}, 401),
        ("in a cookie", {"Cookie": f"token={TOKEN}"}, None, 401),
        ("lowercase scheme", {"Authorization": f"bearer {TOKEN}"}, None, 200),
        ("uppercase scheme", {"Authorization": f"BEARER {TOKEN}"}, None, 200),
        ("extra spaces", {"Authorization": f"Bearer   {TOKEN}"}, None, 200),
        ("right", {"Authorization": f"Bearer {TOKEN}"}, None, 200),
    ]  # fmt: skip
    with serving(work, location, token=TOKEN) as (url, log, _):
        for label, headers, params, expected in variants:
            status = _post(url, INITIALIZE, headers, params=params)
            tally.expect(status == expected, f"{label}: {status}, not {expected}")
    text = log.read_text(errors="replace")
    leaked = [line.strip() for line in text.splitlines() if TOKEN in line]
    tally.expect(not leaked, f"the token is in the server log: {leaked[:1]}")
    tally.expect("Traceback" not in text, f"a traceback in the server log: {tail(text[text.find('Traceback'):])}")
    # Off loopback without a token: refused before anything is opened.
    for address in ("0.0.0.0:8765", "[::]:8765", "example.com:8765"):
        done = cli(work, str(work / "never.db"), "mcp", "--http", address)
        tally.expect(done.returncode == 1 and "without a token" in done.stderr and not (work / "never.db").exists(),
                     f"{address} without a token: exit {done.returncode}: {tail(done.stderr)}")  # fmt: skip


def probe_rebinding(tally: Tally, work: Path, location: str) -> None:
    """Tokenless servers on loopback addresses in every spelling: a page whose own name now resolves
    there (Host and Origin its own) gets 421 or 403 and no session; a local client gets 200."""
    for host in ("127.0.0.1", "127.0.0.2", "127.9.8.7", "localhost", "::1", "0:0:0:0:0:0:0:1", "0::1"):
        with serving(work, location, host) as (url, log, _):
            port = url.rsplit(":", 1)[1].split("/")[0]
            cases = [
                ("rebinding page", {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}, (421, 403)),
                ("rebinding, no Origin", {"Host": f"evil.example:{port}"}, (421,)),
                ("a Host that starts like it", {"Host": f"{host}.evil.example:{port}"}, (421,)),
                ("foreign Origin", {"Origin": "http://evil.example"}, (403,)),
                ("local client", {}, (200,)),
            ]  # fmt: skip
            for label, headers, expected in cases:
                status = _post(url, INITIALIZE, headers)
                tally.expect(status in expected, f"{host}: {label}: {status}, not {expected}")


GARBAGE = [b"not json", b"{", b"", b"[]", b"null", b"42", b'"text"', b"{}", b"\xff\xfe\x00", b"[" * 100_000 + b"]" * 100_000,
           b'{"jsonrpc":"1.0","id":1,"method":"initialize"}', b'{"jsonrpc":"2.0","id":1,"method":5}',
           b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"remember","arguments":{"text":"x"}}}']  # fmt: skip
IN_SESSION = [b'{"jsonrpc":"2.0","id":2,"method":"no/such/method"}', b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}',
              b'{"jsonrpc":"2.0","id":' + b"9" * 400 + b',"method":"tools/list"}', b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[1]}',
              b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}',
              b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"remember","arguments":{"text":5}}}',
              b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"remember","arguments":[1,2]}}',
              b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"remember","arguments":{"text":"\\ud800"}}}',
              b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"recall","arguments":{"query":"x","k":1e309}}}',
              json.dumps([{"jsonrpc": "2.0", "id": n, "method": "tools/list"} for n in range(1000)]).encode(),
              b'{"jsonrpc":"2.0","method":"notifications/garbage","params":{"x":' + b"[" * 50_000 + b"]" * 50_000 + b"}}"]  # fmt: skip


def _session(url: str) -> dict[str, str]:
    import httpx2

    headers = {**ACCEPT, "Authorization": f"Bearer {TOKEN}"}
    answer = httpx2.post(url, json=INITIALIZE, headers=headers, timeout=60)
    session = {**headers, "mcp-session-id": answer.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    httpx2.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session, timeout=60)
    return session


def probe_garbage(tally: Tally, work: Path, backend: Backend, location: str) -> None:
    """Raw JSON-RPC garbage to the server over HTTP, outside and inside a session, and a 50 MB body
    (without the token, with it, as a remember's text): every answer a 4xx or a JSON-RPC error,
    never a 5xx; the server still serves; nothing is written but what a valid call asked for."""
    import httpx2

    live_before, archived_before = backend.ids(location)
    with serving(work, location, token=TOKEN) as (url, log, server):
        for body in GARBAGE:
            status = _post(url, body, {"Authorization": f"Bearer {TOKEN}"})
            tally.expect(isinstance(status, int) and status < 500 and server.poll() is None, f"{body[:40]!r}: {status}")
        session = _session(url)
        for body in IN_SESSION:
            status = _post(url, body, session)
            tally.expect(isinstance(status, int) and status < 500 and server.poll() is None, f"in a session, {body[:40]!r}: {status}")
        big = b"x" * 50_000_000
        huge_text = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                "params": {"name": "remember", "arguments": {"text": "y" * 50_000_000}}}).encode()  # fmt: skip
        for label, body, headers, allowed in (("50 MB, no token", big, {}, (401,)), ("50 MB of garbage", big, session, (400, 413)),
                                              ("a 50 MB text", huge_text, session, (200, 400, 413))):  # fmt: skip
            status = _post(url, body, headers)
            tally.expect(status in allowed and server.poll() is None, f"{label}: {status}, not one of {allowed}")
        still = httpx2.post(url, headers=session, timeout=60, json={"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                            "params": {"name": "remember", "arguments": {"text": "still serving", "fact_key": "probe.alive"}}})  # fmt: skip
        tally.expect(still.status_code == 200 and '"created"' in still.text, f"a valid call after the garbage: {still.status_code} {tail(still.text)}")
    live, archived = backend.ids(location)
    alive = {row[0] for row in backend.rows(location, "SELECT id FROM memories WHERE fact_key = 'probe.alive'")}
    tally.expect(live - live_before == alive and len(alive) == 1 and archived == archived_before, "the garbage wrote or archived something")
    text = log.read_text(errors="replace")
    tally.expect("Traceback" not in text, f"a traceback in the server log: {tail(text[text.find('Traceback'):], 300)}")
    # The same garbage on stdio, then a valid initialize: answered, the server carries on and exits 0.
    lines = [body for body in GARBAGE if b"\n" not in body and 0 < len(body) < 1000] + [json.dumps({**INITIALIZE, "id": 99}).encode()]
    code, answers, stderr = mcp_exchange(work, location, lines, 99)
    answered = any(a.get("id") == 99 and "result" in a for a in answers)
    tally.expect(code == 0 and answered and "Traceback" not in stderr, f"stdio garbage: exit {code}, initialize answered {answered}: {tail(stderr)}")


def probe_other_namespaces(tally: Tally, work: Path, backend: Backend, location: str) -> None:
    """A server for namespace `a`; namespace `b` holds `bsecret` live and `barch` archived, `nowhere`
    exists nowhere. Every tool answers the three alike (their ids swapped), recall and report see
    only `a`; LangGraph reads and writes the three as keys held nowhere."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from memstore.integrations.langgraph import MemstoreStore

    for done in (cli(work, location, "add", "The secret plan of b.", "--id", "bsecret", "-n", "b"),
                 cli(work, location, "add", "The old plan of b.", "--id", "barch", "-n", "b"), cli(work, location, "forget", "barch")):  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"setting up namespace b: {tail(done.stderr)}")
    ids = ("bsecret", "barch", "nowhere")
    calls = [("remember", {"text": "probe"}), ("remember", {"text": "probe"}), ("show", {}), ("update", {"importance": 5}),
             ("forget", {}), ("remember", {"text": "probe again"})]  # fmt: skip

    async def answers() -> dict[str, list[str]]:
        params = StdioServerParameters(command=CLI[0], args=[*CLI[1:], "--db", location, "mcp", "--namespace", "a"], env=env(work))
        seen: dict[str, list[str]] = {}
        with (work / "mcp-a.log").open("a") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                for id in ids:  # each id's own texts, so no answer depends on what the others left
                    for n, (tool, arguments) in enumerate(calls):
                        own = {k: f"{v} {id}" if k == "text" else v for k, v in arguments.items()}
                        result = await session.call_tool(tool, {**own, "id": id})
                        text = " ".join(c.text for c in result.content)
                        seen.setdefault(f"#{n + 1} {tool}", []).append(f"{result.is_error} " + _neutral(text, id))
                recall = await session.call_tool("recall", {"query": "secret plan", "k": 10})
                report = await session.call_tool("report", {})
                seen["recall"] = ["b" if "secret plan of b" in " ".join(c.text for c in recall.content) else "-"]
                seen["report"] = [str(report.structured_content.get("total_records"))]
        return seen

    seen = anyio.run(answers)
    for call, texts in seen.items():
        if call == "recall":
            tally.expect(texts == ["-"], "recall on a's server found b's memory")
        elif call == "report":
            tally.expect(texts[0] in ("0", "1", "2", "3"), f"report counts {texts[0]} records, more than a holds")
        else:
            tally.expect(len(set(texts)) == 1, f"{call} answers differ: {dict(zip(ids, texts))}")
    store = MemstoreStore(location)
    try:
        got = [store.get(("a",), id) for id in ids]
        for id in ids:
            store.put(("a",), id, {"content": f"item {id}"})
        back = [store.get(("a",), id).value for id in ids]
        tally.expect(got == [None] * 3 and back == [{"content": f"item {id}"} for id in ids], f"LangGraph get/put of b's ids: {got} {back}")
    finally:
        store.close()
    live, archived = backend.ids(location)
    tally.expect("bsecret" in live and "barch" in archived, "b's memories changed")
    tally.expect(check_clean(work, location) is None, f"check after: {check_clean(work, location)}")


def _neutral(text: str, id: str) -> str:
    """An answer with the id asked for, its namespace-scoped spelling and generated ids made alike."""
    text = re.sub(r"[0-9a-f]{32}", "<generated>", text)
    text = re.sub(r'"run_id": ?\d+', '"run_id": N', text)
    return re.sub(r"\brun \d+", "run N", text).replace(id, "<id>")


def probe_web(tally: Tally, work: Path, backend: Backend, location: str) -> None:
    """`memstore web --namespace a` with a token of its own: a request without the token (or with a
    wrong one, in the address, a header or a cookie) is 401, a rebinding Host 421, a POST without
    the form's field 403; an id or a run of namespace `b` reads as one that does not exist; no
    token of its own off loopback is refused."""
    import httpx2

    for args in (["add", "The secret plan of b.", "--id", "bsecret", "-n", "b"], ["add", "The old plan of b.", "--id", "barch", "-n", "b"],
                 ["forget", "barch"], ["add", "A memory of a.", "-n", "a"]):  # fmt: skip
        if cli(work, location, *args).returncode:
            raise RuntimeError(f"setting up the web probe: {' '.join(args)} failed")
    b_run = backend.rows(location, "SELECT max(run_id) FROM memory_archive WHERE id = 'barch'")[0][0]
    (work / "web-token").write_text(TOKEN + "\n")
    port, log = free_port(), work / "web.log"
    server = start(work, location, "web", "--listen", f"127.0.0.1:{port}", "--token-file", str(work / "web-token"), "--namespace", "a", log=log)
    base, bearer = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {TOKEN}"}

    def get(path: str, headers: dict[str, str]) -> httpx2.Response:
        return httpx2.get(base + path, headers=headers, follow_redirects=False, timeout=60)

    try:
        wait_for_port("127.0.0.1", port, server)
        cases = [("no token", "/", {}, (401,)), ("wrong token in the address", "/?token=wrong", {}, (401,)),
                 ("wrong bearer", "/", {"Authorization": "Bearer wrong"}, (401,)), ("a prefix of it", f"/?token={TOKEN[:-1]}", {}, (401,)),
                 ("a forged cookie", "/", {"Cookie": f"memstore_{port}=forged"}, (401,)), ("the token in the address", f"/?token={TOKEN}", {}, (303, 302, 307)),
                 ("the bearer token", "/", bearer, (200,)), ("a rebinding Host", "/", {**bearer, "Host": f"evil.example:{port}"}, (421,))]  # fmt: skip
        for label, path, headers, expected in cases:
            status = get(path, headers).status_code
            tally.expect(status in expected, f"web {label}: {status}, not {expected}")
        status = httpx2.post(base + "/maintain", headers=bearer, data={"phases": "dedup"}, timeout=60).status_code
        tally.expect(status == 403, f"web POST without the form's field: {status}, not 403")
        for what, paths in (("memory", ["/memories/bsecret", "/memories/barch", "/memories/nowhere"]), ("run", [f"/runs/{b_run}", "/runs/99999"])):
            answers = {(r.status_code, _main(r.text, p.rsplit("/", 1)[1])) for p in paths for r in [get(p, bearer)]}
            tally.expect(len(answers) == 1, f"web --namespace a: another namespace's {what} reads unlike one that does not exist")
    finally:
        stop(server)
    done = cli(work, location, "web", "--listen", "0.0.0.0:8767")
    tally.expect(done.returncode == 1 and "without a token" in done.stderr, f"web on 0.0.0.0 without a token: exit {done.returncode}: {tail(done.stderr)}")
    text = log.read_text(errors="replace")
    tally.expect(TOKEN not in text, "the token is in the web page's log")
    tally.expect("Traceback" not in text, f"a traceback in the web log: {tail(text[text.find('Traceback'):])}")


def _main(page: str, id: str) -> str:
    """The <main> of a page with the id (or run number) asked for made alike."""
    main = page[page.find("<main>") : page.find("</main>")]
    return re.sub(rf"\b{re.escape(id)}\b", "<id>", main)
