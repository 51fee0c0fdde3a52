"""`memstore mcp`: the real command in a subprocess, driven by the MCP SDK's own clients.

Every wait is bounded (anyio.fail_after, subprocess timeouts), so a hang fails a test instead of
blocking the run. Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2  # the HTTP client the SDK itself is built on
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from memstore import MemoryStore, MemstoreError
from memstore.listeners import checked_token, parse_address
from memstore.records import scoped_id

MEMSTORE = str(Path(sys.executable).with_name("memstore"))
TOOLS = {"remember", "recall", "forget", "update", "show", "consolidate", "report"}
SCENARIO_TIMEOUT = 60


@asynccontextmanager
async def mcp_session(db: Path, *args: str, log: Path) -> AsyncIterator[ClientSession]:
    """A `memstore --db DB mcp ARGS` subprocess on stdio and an initialised SDK session with it."""
    params = StdioServerParameters(command=MEMSTORE, args=["--db", str(db), "mcp", *args])
    with log.open("a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def run_async(scenario, timeout: float = SCENARIO_TIMEOUT) -> Any:
    async def bounded():
        with anyio.fail_after(timeout):
            return await scenario()

    return anyio.run(bounded)


async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    """A tool's structured result; fails the test on a tool error, or when the JSON text the host
    shows the model says something else than the structured result."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    texts = [json.loads(content.text) for content in result.content]
    structured = result.structured_content
    if set(structured) == {"result"}:  # a list result: one text per item
        assert texts == structured["result"]
        return structured["result"]
    assert texts == [structured]
    return structured


async def tool_error(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result
    (content,) = result.content
    return content.text


def server_log_is_clean(log: Path) -> None:
    text = log.read_text() if log.exists() else ""
    assert "database is locked" not in text and "Traceback" not in text, text


# -- stdio --------------------------------------------------------------------------------------


def test_tools_are_listed_with_typed_arguments_and_results(tmp_path):
    async def scenario():
        async with mcp_session(tmp_path / "agent.db", log=tmp_path / "server.log") as session:
            return {tool.name: tool for tool in (await session.list_tools()).tools}

    tools = run_async(scenario)
    assert set(tools) == TOOLS
    remember = tools["remember"].input_schema
    assert remember["required"] == ["text"]
    assert remember["properties"]["text"]["type"] == "string"
    assert remember["properties"]["importance"] == {**remember["properties"]["importance"], "type": "integer", "default": 3}
    assert remember["properties"]["pinned"]["type"] == "boolean"
    assert {"type": "object", "additionalProperties": True} in remember["properties"]["meta"]["anyOf"]
    assert "namespace" not in remember["properties"]  # one namespace per server
    assert tools["recall"].input_schema["properties"]["k"]["type"] == "integer"
    assert tools["consolidate"].input_schema["properties"]["dry_run"] == {**tools["consolidate"].input_schema["properties"]["dry_run"], "type": "boolean", "default": True}
    for tool in tools.values():
        assert "namespace" not in tool.input_schema["properties"], tool.name
        assert len(tool.description) > 100, tool.name  # written for a model: what, when, what comes back
        assert tool.output_schema is not None, tool.name
    assert set(tools["remember"].output_schema["required"]) == {"id", "norm_key", "status", "same_key_ids"}
    assert tools["show"].annotations.read_only_hint and tools["report"].annotations.read_only_hint


def test_every_tool_is_one_store_call_and_the_store_holds_what_the_tools_said(tmp_path):
    db, log = tmp_path / "agent.db", tmp_path / "server.log"

    async def scenario():
        async with mcp_session(db, "--namespace", "assistant", log=log) as session:
            first = await call(session, "remember", text="User prefers dark mode.", importance=4, id="r1", meta={"source": "chat"})
            retried = await call(session, "remember", text="User prefers dark mode.", importance=4, id="r1", meta={"source": "chat"})
            copy = await call(session, "remember", text="  user prefers DARK mode!")
            other = await call(session, "remember", text="Deploys happen on Fridays.", pinned=True, fact_key="deploy.day")
            hits = await call(session, "recall", query="dark mode", k=5)
            updated = await call(session, "update", id=other["id"], text="Deploys happen on Thursdays.")
            shown = await call(session, "show", id=updated["id"])
            forgotten = await call(session, "forget", id=copy["id"], reason="said twice")
            shown_forgotten = await call(session, "show", id=copy["id"])
            planned = await call(session, "consolidate", capacity=0)
            inventory = await call(session, "report")
            applied = await call(session, "consolidate", capacity=0, dry_run=False)
            return first, retried, copy, other, hits, updated, shown, forgotten, shown_forgotten, planned, inventory, applied

    first, retried, copy, other, hits, updated, shown, forgotten, shown_forgotten, planned, inventory, applied = run_async(scenario)

    r1 = scoped_id("assistant", "r1")  # a caller's id is its namespace's (test_a_server_sees_only_its_own_namespace)
    assert first == {"id": r1, "norm_key": "user prefers dark mode", "status": "created", "same_key_ids": []}
    assert retried == {**first, "status": "unchanged"}
    assert copy["status"] == "created" and copy["same_key_ids"] == [r1] and copy["norm_key"] == first["norm_key"]
    assert {hit["id"] for hit in hits} == {r1, copy["id"]}
    assert set(hits[0]) == {"id", "text", "importance", "timestamp", "score", "found_by", "open_flag"} and hits[0]["found_by"] == ["lexical"]
    assert hits[0]["open_flag"] is None
    assert updated["supersedes"] == other["id"] and updated["id"] != other["id"] and updated["run_id"] >= 1
    assert shown["memory"]["text"] == "Deploys happen on Thursdays." and shown["memory"]["pinned"]
    assert [version["id"] for version in shown["history"]] == [other["id"], updated["id"]]
    assert forgotten == {"run_id": forgotten["run_id"], "archived": [copy["id"]]}
    assert shown_forgotten["memory"]["reason"] == "forgotten"
    # Capacity 0 evicts every unpinned memory: r1 only (the updated fact is pinned); a dry run writes nothing.
    assert planned["dry_run"] and planned["run_id"] is None
    assert (planned["live_before"], planned["kept"], planned["pinned_kept"], planned["evicted"]) == (2, 1, 1, 1)
    assert planned["archived"] == [{"id": r1, "reason": "evicted", "superseded_by": None}]
    assert inventory["namespace"] == "assistant" and inventory["total_records"] == 2 and inventory["pinned"] == 1
    assert inventory["exact_duplicate_groups"] == {"count": 0, "top": []}
    assert not applied["dry_run"] and applied["archived"] == planned["archived"]

    with MemoryStore(db) as store:
        assert [row["id"] for row in store.list("assistant")] == [updated["id"]]
        assert store.get(r1)["meta"] == {"source": "chat"} and store.get(r1)["run_id"] == applied["run_id"]
        assert store.get(copy["id"])["reason"] == "forgotten" and store.get(copy["id"])["run_id"] == forgotten["run_id"]
        assert store.get(other["id"])["superseded_by"] == updated["id"]
        assert store.get(updated["id"])["fact_key"] == "deploy.day"
        assert store.count() == 1 and store.count(archived=True) == 3
    server_log_is_clean(log)


def test_a_bad_call_is_a_tool_error_with_memstores_message_and_the_server_keeps_serving(tmp_path):
    async def scenario():
        async with mcp_session(tmp_path / "agent.db", log=tmp_path / "server.log") as session:
            messages = [
                await tool_error(session, "show", id="nope"),
                await tool_error(session, "forget", id="nope"),
                await tool_error(session, "update", id="nope", text="x"),
                await tool_error(session, "remember", text="Too important.", importance=9),
                await tool_error(session, "consolidate", capacity=-1),
                await tool_error(session, "update", id="nope"),
                await tool_error(session, "recall", query="anything", k=0),
            ]
            after = await call(session, "remember", text="Still serving.")
            return messages, after

    messages, after = run_async(scenario)
    for message in messages[:3]:
        assert message.endswith("no memory with id 'nope' in namespace 'default'"), message
    assert messages[3].endswith("memory: field 'importance': must be an integer in 1..5, got 9")
    assert messages[4].endswith("capacity: must be a non-negative integer, got -1")
    assert messages[5].endswith("give text, importance or both")
    assert "k" in messages[6]  # the SDK checks the argument against the tool's schema (1..50)
    assert after["status"] == "created"



def test_arguments_of_the_wrong_type_are_refused_not_coerced(tmp_path):
    # The SDK's pydantic would otherwise read "false" as False and "5" as 5: a consolidation asked
    # with dry_run="false" and capacity=True must not run for real with capacity 1.
    async def scenario():
        async with mcp_session(tmp_path / "agent.db", log=tmp_path / "server.log") as session:
            for n in range(3):
                await call(session, "remember", text=f"Fact number {n}.")
            messages = [
                await tool_error(session, "consolidate", capacity=True, dry_run="false"),
                await tool_error(session, "consolidate", capacity="1", dry_run=False),
                await tool_error(session, "remember", text="x", importance="5"),
                await tool_error(session, "remember", text="x", importance=True),
                await tool_error(session, "remember", text="x", pinned="yes"),
                await tool_error(session, "recall", query="fact", k="5"),
                await tool_error(session, "update", id="nope", importance=4.0),
            ]
            return messages, await call(session, "recall", query="fact number")

    messages, hits = run_async(scenario)
    assert all(message.startswith("Error executing tool") or "validation error" in message for message in messages), messages
    assert len(hits) == 3  # nothing was consolidated away, nothing was stored

def test_remember_takes_a_lifetime_after_which_recall_leaves_the_fact_out_and_show_says_expired(tmp_path):
    async def scenario():
        async with mcp_session(tmp_path / "agent.db", log=tmp_path / "server.log") as session:
            lasting = await call(session, "remember", text="The office wifi is called Harbor.")
            brief = await call(session, "remember", text="Today the office wifi password is tide42.", expires_in="3s")
            before = await call(session, "recall", query="office wifi")
            bad = await tool_error(session, "remember", text="x", expires_in="forever")
            await asyncio.sleep(3.2)  # a lifetime of seconds: `before` is taken well inside it on a slow machine
            after = await call(session, "recall", query="office wifi")
            shown = await call(session, "show", id=brief["id"])
            return lasting, brief, before, bad, after, shown

    lasting, brief, before, bad, after, shown = run_async(scenario)
    assert {hit["id"] for hit in before} == {lasting["id"], brief["id"]}
    assert [hit["id"] for hit in after] == [lasting["id"]]
    assert shown["memory"]["state"] == "expired" and shown["memory"]["expires_at"] is not None
    assert "expires_in" in bad and "is not a lifetime" in bad


def test_a_server_sees_only_its_own_namespace(tmp_path):
    db = tmp_path / "agent.db"
    with MemoryStore(db) as store:
        store.add("The other agent's secret plan.", id="o1", namespace="other")
        store.add("The other agent's old plan.", id="o3", namespace="other")
        store.forget(["o3"])

    async def scenario():
        async with mcp_session(db, "--namespace", "mine", log=tmp_path / "server.log") as session:
            # An id chosen by the caller: one held in another namespace (live, archived) or by no one.
            probes = [await call(session, "remember", text="probe", id=id) for id in ("o1", "o3", "o4")]
            retries = [await call(session, "remember", text="probe", id=id) for id in ("o1", "o3", "o4")]
            mine = await call(session, "remember", text="My own secret plan.")
            found = await call(session, "recall", query="secret plan")
            errors = {
                "show": await tool_error(session, "show", id="o1"),
                "forget": await tool_error(session, "forget", id="o1"),
                "update": await tool_error(session, "update", id="o1", importance=5),
                "unknown": await tool_error(session, "show", id="o2"),
            }
            inventory = await call(session, "report")
            trimmed = await call(session, "consolidate", capacity=0, dry_run=False)
            return probes, retries, mine, found, errors, inventory, trimmed

    probes, retries, mine, found, errors, inventory, trimmed = run_async(scenario)
    # Each probe is created under an id of this namespace's, whatever another namespace holds.
    assert [probe["id"] for probe in probes] == [scoped_id("mine", id) for id in ("o1", "o3", "o4")]
    assert [probe["status"] for probe in probes] == ["created"] * 3
    assert [probe["same_key_ids"] for probe in probes] == [[], [probes[0]["id"]], sorted([probes[0]["id"], probes[1]["id"]])]
    assert [retry["status"] for retry in retries] == ["unchanged"] * 3
    assert [hit["id"] for hit in found] == [mine["id"]]
    # Another namespace's id reads exactly like an id that does not exist.
    assert {tool: message.replace("'o2'", "'o1'").split(": ", 1)[1] for tool, message in errors.items()} == dict.fromkeys(
        errors, "no memory with id 'o1' in namespace 'mine'"
    )
    assert inventory["total_records"] == 4
    assert {entry["id"] for entry in trimmed["archived"]} == {mine["id"], *(probe["id"] for probe in probes)}
    with MemoryStore(db) as store:
        assert store.get("o1")["namespace"] == "other" and "archived_at" not in store.get("o1")


def test_the_report_counts_every_finding_and_lists_at_most_ten(tmp_path):
    db = tmp_path / "agent.db"
    day = 86_400_000
    with MemoryStore(db) as store:
        store.add_many(
            {"id": f"d{n:02}-{copy}", "text": f"Duplicate fact number {n}.", "timestamp": 1_000 + copy, "created_at": day}
            for n in range(15) for copy in range(2)
        )  # fmt: skip

    async def scenario():
        async with mcp_session(db, log=tmp_path / "server.log") as session:
            return await call(session, "report")

    inventory = run_async(scenario)
    assert inventory["total_records"] == 30
    assert inventory["exact_duplicate_groups"]["count"] == 15
    assert inventory["exact_duplicate_groups"]["top"] == [[f"d{n:02}-0", f"d{n:02}-1"] for n in range(10)]
    assert inventory["stalest"]["count"] == 30 and len(inventory["stalest"]["top"]) == 10
    assert inventory["near_duplicate_pairs"] == {"count": 0, "top": []}


def test_nothing_but_the_protocol_reaches_stdout(tmp_path):
    # A new store (so the schema is created on start), stdin closed at once: the server starts,
    # reads end-of-file and exits, having logged only to stderr.
    done = subprocess.run(
        [MEMSTORE, "--db", str(tmp_path / "new.db"), "mcp", "--namespace", "quiet"],
        input="", capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")
    assert "namespace 'quiet'" in done.stderr and "on stdio" in done.stderr
    assert (tmp_path / "new.db").exists()


def test_without_the_mcp_extra_the_command_says_what_to_install(tmp_path):
    # `mcp` made unimportable in the child, as in an install without the extra.
    program = "import sys; sys.modules['mcp'] = None; from memstore.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", program, "--db", str(tmp_path / "agent.db"), "mcp"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "Error: the MCP server needs the mcp extra: pip install 'memstore-agents[mcp]'\n"
    assert not (tmp_path / "agent.db").exists()


def test_the_core_and_the_cli_do_not_import_mcp():
    program = "import sys, memstore, memstore.cli; print(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp'))"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=30, check=True)
    assert done.stdout == "[]\n"


# -- HTTP ---------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, server: subprocess.Popen, timeout: float = 30, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, "the server exited before listening"
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listening on {host}:{port} after {timeout}s")


# A raw client's first request, and what it accepts back (streamable HTTP answers JSON or SSE).
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}  # fmt: skip


def test_http_needs_the_bearer_token(tmp_path):
    db, port, token = tmp_path / "agent.db", free_port(), "s3cret-token"
    url = f"http://127.0.0.1:{port}/mcp"
    headers = {"Accept": "application/json, text/event-stream"}
    with (tmp_path / "server.log").open("w") as log, (tmp_path / "stdout.txt").open("w") as out:
        # The token from the environment, as a service manager would pass it.
        server = subprocess.Popen(
            [MEMSTORE, "--db", str(db), "mcp", "--http", f"127.0.0.1:{port}"],
            env={**os.environ, "MEMSTORE_MCP_TOKEN": token}, stdout=out, stderr=log,
        )  # fmt: skip
    try:
        wait_for_port(port, server)
        refused = [
            httpx2.post(url, json=INITIALIZE, headers=headers, timeout=10),
            httpx2.post(url, json=INITIALIZE, headers={**headers, "Authorization": "Bearer wrong-token"}, timeout=10),
            httpx2.post(url, json=INITIALIZE, headers={**headers, "Authorization": token}, timeout=10),
            httpx2.get(f"http://127.0.0.1:{port}/anything-else", timeout=10),
            httpx2.post(f"{url}?token={token}", json=INITIALIZE, headers=headers, timeout=10),  # not how a token travels
        ]
        assert [response.status_code for response in refused] == [401] * 5
        assert refused[0].headers["www-authenticate"].startswith("Bearer")

        async def scenario():
            client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
            async with (
                client,
                streamable_http_client(url, http_client=client) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                tools = {tool.name for tool in (await session.list_tools()).tools}
                return tools, await call(session, "remember", text="Reached over HTTP.")

        tools, remembered = run_async(scenario, timeout=30)
        assert tools == TOOLS and remembered["status"] == "created"
    finally:
        server.terminate()
        server.wait(timeout=15)
    with MemoryStore(db) as store:
        assert store.get(remembered["id"])["text"] == "Reached over HTTP."
    log_text = (tmp_path / "server.log").read_text()
    assert "bearer token required" in log_text and token not in log_text
    assert '"POST /mcp HTTP/1.1" 401' in log_text  # uvicorn's access log, on stderr like every log
    assert '"POST /mcp?… HTTP/1.1" 401' in log_text  # a query string is never logged: it may hold a token
    assert (tmp_path / "stdout.txt").read_text() == ""


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "127.255.0.9", "localhost", "::1", "0:0:0:0:0:0:0:1"])
def test_a_tokenless_server_on_any_loopback_address_refuses_a_rebinding_page(tmp_path, host):
    """DNS rebinding: a page on evil.example whose name now resolves to the loopback address. The
    browser sends the page's Host and Origin; without a token, only their check stands between
    that page and the store."""
    port = free_port()
    bracketed = f"[{host}]" if ":" in host else host
    url = f"http://{bracketed}:{port}/mcp"
    accept = {"Accept": "application/json, text/event-stream"}
    env = {k: v for k, v in os.environ.items() if k != "MEMSTORE_MCP_TOKEN"}
    with (tmp_path / "server.log").open("w") as log:
        server = subprocess.Popen([MEMSTORE, "--db", str(tmp_path / "agent.db"), "mcp", "--http", f"{bracketed}:{port}"], env=env, stderr=log)
    try:
        wait_for_port(port, server, host="127.0.0.1" if host == "localhost" else host)
        answers = {
            "rebinding page": httpx2.post(url, json=INITIALIZE, timeout=10, headers={
                **accept, "Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}).status_code,
            "foreign origin": httpx2.post(url, json=INITIALIZE, timeout=10, headers={**accept, "Origin": "http://evil.example"}).status_code,
            "local client": httpx2.post(url, json=INITIALIZE, timeout=10, headers=accept).status_code,
            "localhost page": httpx2.post(url, json=INITIALIZE, timeout=10, headers={
                **accept, "Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"}).status_code,
        }  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=15)
    assert answers == {"rebinding page": 421, "foreign origin": 403, "local client": 200, "localhost page": 200}


@pytest.mark.parametrize("address", ["0.0.0.0:8765", "[::]:8765", "example.com:8765"])
def test_a_non_loopback_address_without_a_token_is_refused(tmp_path, address):
    # Refused before the store is opened or a socket bound.
    done = subprocess.run(
        [MEMSTORE, "--db", str(tmp_path / "agent.db"), "mcp", "--http", address],
        capture_output=True, text=True, timeout=30, check=False,
        env={k: v for k, v in os.environ.items() if k != "MEMSTORE_MCP_TOKEN"},
    )  # fmt: skip
    host = address.rpartition(":")[0].strip("[]")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"Error: refusing to serve {host} without a token: give --token or MEMSTORE_MCP_TOKEN, or bind 127.0.0.1\n"
    assert not (tmp_path / "agent.db").exists()



def test_a_token_is_what_clients_send_and_one_none_could_send_is_refused(tmp_path):
    assert checked_token("s3cret-token\n") == "s3cret-token"  # read from a file with its newline
    assert checked_token("") is None and checked_token(None) is None  # an empty variable is unset
    for unusable in ["   ", "two words", "tab\there", "tökén"]:
        done = subprocess.run(
            [MEMSTORE, "--db", str(tmp_path / "agent.db"), "mcp", "--http", "0.0.0.0:8765"],
            capture_output=True, text=True, timeout=30, check=False, env={**os.environ, "MEMSTORE_MCP_TOKEN": unusable},
        )  # fmt: skip
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == "Error: the token must be one word of printable ASCII characters, without spaces\n"
        assert not (tmp_path / "agent.db").exists()
    # On stdio a token is not used, so one inherited from the environment stops nothing.
    done = subprocess.run(
        [MEMSTORE, "--db", str(tmp_path / "agent.db"), "mcp"], stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=60, check=False, env={**os.environ, "MEMSTORE_MCP_TOKEN": "two words"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


# -- several servers on one store ----------------------------------------------------------------

WRITERS = 4
CALLS_PER_WRITER = 200


@pytest.mark.slow
def test_four_servers_writing_while_consolidation_runs_lose_nothing(tmp_path):
    db = tmp_path / "shared.db"
    MemoryStore(db).close()
    logs = [tmp_path / f"server{n}.log" for n in range(WRITERS)]

    async def writer(n: int, acknowledged: list[str]) -> None:
        async with mcp_session(db, log=logs[n]) as session:
            for i in range(CALLS_PER_WRITER):
                # Even facts are shared by every writer (duplicates for the job), odd ones are this writer's.
                text = f"shared fact number {i}" if i % 2 == 0 else f"fact {i} of writer {n}"
                result = await call(session, "remember", text=text, importance=1 + i % 5)
                acknowledged.append(result["id"])

    async def scenario():
        acknowledged: list[str] = []
        jobs: list[subprocess.CompletedProcess] = []
        writing = anyio.Event()

        async def consolidate_meanwhile() -> None:
            while not writing.is_set():
                jobs.append(await anyio.run_process([MEMSTORE, "--db", str(db), "consolidate", "--capacity", "300"], check=False))

        async with anyio.create_task_group() as group:
            group.start_soon(consolidate_meanwhile)
            async with anyio.create_task_group() as writers:
                for n in range(WRITERS):
                    writers.start_soon(writer, n, acknowledged)
            writing.set()
        return acknowledged, jobs

    acknowledged, jobs = run_async(scenario, timeout=90)  # about 10 s here

    assert len(acknowledged) == len(set(acknowledged)) == WRITERS * CALLS_PER_WRITER
    assert jobs and all(job.returncode == 0 for job in jobs), [job.stderr for job in jobs if job.returncode]
    assert not any(b"locked" in job.stderr for job in jobs)
    with MemoryStore(db) as store:
        live = {row["id"] for row in store.iter_rows()}
        archived = {row["id"]: row for row in store.iter_rows(archived=True)}
        job_runs = {run["id"] for run in store.runs() if run["kind"] == "consolidate"}
    assert set(acknowledged) == live | set(archived)  # every acknowledged id is somewhere, none lost
    assert not live & set(archived)
    assert all(row["reason"] in ("duplicate", "evicted") and row["run_id"] in job_runs for row in archived.values())
    assert archived, "the job never archived anything while the servers wrote"
    for log in logs:
        server_log_is_clean(log)



@pytest.mark.parametrize("address", ["127.0.0.1:٨٠٨٠", "127.0.0.1:8765x", "127.0.0.1:0", "127.0.0.1"])
def test_an_address_whose_port_is_not_ascii_digits_is_refused(address):
    with pytest.raises(MemstoreError, match="not a HOST:PORT address"):
        parse_address(address)
