"""memory.jsonl files written by the real reference MCP memory server, for the importer's tests.

`@modelcontextprotocol/server-memory` (the npm package; its version is pinned in scripts/test,
which installs it into .tools/npm and exports MEMSTORE_TEST_MCP_MEMORY_SERVER, the path of its
JS entry file) is started with `node ENTRY` over stdio, its file put where we want it through the
MEMORY_FILE_PATH environment variable it reads, and driven by the official MCP Python SDK's client
calling its tools, as an agent would. The file on disk is whatever that server writes: nothing
here writes or edits it.

Without the server (or node) these functions raise: a test that uses them fails, never skips.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ENV_VAR = "MEMSTORE_TEST_MCP_MEMORY_SERVER"
# The variable the server reads for its file's location (a relative one is taken relative to the
# server's own dist/ folder, so we always pass an absolute path).
SERVER_FILE_ENV = "MEMORY_FILE_PATH"
TIMEOUT = 60.0


class McpMemoryServerError(RuntimeError):
    """The reference server could not be found or started, or one of its tools failed."""


def server_command() -> tuple[str, str]:
    """(node, entry): the node executable and the server's JS entry file, or a clear error."""
    entry = os.environ.get(ENV_VAR)
    if not entry:
        raise McpMemoryServerError(
            f"{ENV_VAR} is not set: it must name the JS entry file of @modelcontextprotocol/server-memory "
            "(scripts/test installs it into .tools/npm and sets it; run the tests through scripts/test)"
        )
    if not Path(entry).is_file():
        raise McpMemoryServerError(f"{ENV_VAR}={entry!r} is not a file: is @modelcontextprotocol/server-memory installed?")
    node = shutil.which("node")
    if node is None:
        raise McpMemoryServerError("node is not on PATH: the reference MCP memory server needs Node.js (scripts/test installs it)")
    return node, str(Path(entry).resolve())


def call_memory_server(path: Path, calls: list[tuple[str, dict[str, Any]]], *, timeout: float = TIMEOUT) -> list[Any]:
    """Start the reference server on the memory file PATH, make each (tool, arguments) call in
    order in one session, and return each call's structured result. A tool error raises."""
    node, entry = server_command()
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    params = StdioServerParameters(command=node, args=[entry], env={SERVER_FILE_ENV: str(path)})

    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:

        def failure(message: str) -> McpMemoryServerError:
            errlog.flush()
            errlog.seek(0)
            return McpMemoryServerError(f"{message}\nserver stderr:\n{errlog.read()}")

        results: list[Any] = []
        tool_error: list[str] = []

        async def session_calls() -> None:
            with anyio.fail_after(timeout):
                async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    for tool, arguments in calls:
                        result = await session.call_tool(tool, arguments)
                        if result.is_error:
                            texts = " ".join(getattr(content, "text", repr(content)) for content in result.content)
                            tool_error.append(f"{tool}({arguments!r}) failed: {texts}")
                            return
                        results.append(result.structured_content)

        try:
            anyio.run(session_calls)
        except Exception as error:
            raise failure(f"driving the reference MCP memory server ({node} {entry}) failed: {error!r}") from error
        if tool_error:
            raise failure(tool_error[0])
        return results


def write_memory_file(
    path: Path,
    entities: list[dict[str, Any]],
    relations: list[dict[str, Any]],
    observations: list[dict[str, Any]] | None = None,
    *,
    timeout: float = TIMEOUT,
) -> None:
    """Have the reference server write PATH (its memory.jsonl) from, in this order:
    create_entities(ENTITIES), add_observations(OBSERVATIONS) when given, create_relations(RELATIONS).

    The server's argument shapes: an entity is {"name", "entityType", "observations": [str]};
    an observation batch is {"entityName", "contents": [str]} (the entity must exist); a relation
    is {"from", "to", "relationType"} (its ends are not checked). The server silently drops an
    entity whose name exists, an observation its entity already has and a duplicate relation.
    """
    calls: list[tuple[str, dict[str, Any]]] = [("create_entities", {"entities": entities})]
    if observations:
        calls.append(("add_observations", {"observations": observations}))
    calls.append(("create_relations", {"relations": relations}))
    call_memory_server(path, calls, timeout=timeout)
