"""A program that shares one store file with other users of Python's `sqlite3` in its own process, as
users' programs do, prints each write memstore acknowledged, then ends as it is told. Run by
tests/test_sharing.py, under each Python build it tests.

    python tests/sharing_child.py SCENARIO DB_PATH END [--no-semantic] [--vectors]

SCENARIO  checkpointer: a LangGraph graph with SqliteSaver and MemstoreStore on DB_PATH, 5 turns,
                        each putting one memory (and searching it, with --vectors)
          reader:       40 MemoryStore.add calls, a `sqlite3` count of memories between each two
          overwrite:    LangGraph puts over one key, a `sqlite3` read between each two
          mixed:        an MCP server and a LangGraph store in one process, a `sqlite3` reader,
                        a backup and `check --fix` between the writes
END       kill (SIGKILL), exit (os._exit(0): no cleanup) or close (everything closed, a normal exit)
--no-semantic  run as if the semantic extra were not installed (its modules cannot be imported)
--vectors      the store has embeddings enabled: each write is embedded and recalled by meaning
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys

SEMANTIC_MODULES = ("sqlite_vec", "sqlean", "fastembed", "onnxruntime", "tokenizers")
SEMANTIC = "--no-semantic" not in sys.argv


def acknowledged(what: str) -> None:
    print(what, flush=True)


def exercise_vectors(memory, query: str, namespace: str) -> None:
    """Embed what is pending and recall by meaning; without the semantic extra, recall as the
    default does (full text: the model cannot load), over a store that has vectors."""
    if SEMANTIC:
        memory.sync_embeddings()
        memory.recall(query, namespace=namespace, mode="semantic", touch=False)
    else:
        memory.recall(query, namespace=namespace, touch=False)


def sqlite3_count(path: str, table: str) -> int:
    """What a user's own code does: open the file with Python's sqlite3, read, close."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        conn.close()


def checkpointer(path: str, vectors: bool) -> list[object]:
    from typing import TypedDict

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.store.base import BaseStore

    from memstore.integrations.langgraph import MemstoreStore

    class State(TypedDict):
        turn: int
        found: int

    def remember(state: State, *, store: BaseStore) -> dict:
        turn = state["turn"] + 1
        store.put(("user", "1"), f"fact-{turn}", {"text": f"the user said fact number {turn} on turn {turn}"})
        if vectors:
            exercise_vectors(store.store, f"fact number {turn}", "user.1")  # type: ignore[attr-defined]
        return {"turn": turn, "found": len(store.search(("user", "1"), limit=100))}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    saver_conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(saver_conn)
    store = MemstoreStore(path)
    graph = builder.compile(checkpointer=saver, store=store)
    config = {"configurable": {"thread_id": "t1"}}
    state: dict = {"turn": 0, "found": 0}
    for _ in range(5):
        state = graph.invoke(state, config)
        acknowledged(f"fact-{state['turn']}")
    return [store, saver_conn]


def reader(path: str, vectors: bool) -> list[object]:
    from memstore import MemoryStore

    store = MemoryStore(path)
    for number in range(40):
        memory_id = store.add(f"note {number}: the reader scenario wrote this", id=f"r{number}")["id"]
        if vectors:
            exercise_vectors(store, f"note {number}", "default")
        sqlite3_count(path, "memories")
        acknowledged(memory_id)
    return [store]


def overwrite(path: str, vectors: bool) -> list[object]:
    from memstore.integrations.langgraph import MemstoreStore

    store = MemstoreStore(path)
    for version in range(2):
        store.put(("user",), "colour", {"text": f"favourite colour, version {version}"})
        if vectors:
            exercise_vectors(store.store, "favourite colour", "user")
        sqlite3_count(path, "memories")
        acknowledged(f"colour-{version}")
    return [store]


def mixed(path: str, vectors: bool) -> list[object]:
    """One application holding every kind of memstore user on one file: an MCP server (in-process,
    the SDK's own client), a LangGraph store, a `sqlite3` reader, a backup and `check --fix`."""
    import asyncio

    from mcp import Client

    from memstore import MemoryStore
    from memstore.integrations.langgraph import MemstoreStore
    from memstore.mcp.tools import create_server

    served = MemoryStore(path)
    graph = MemstoreStore(path)

    async def turns() -> None:
        async with Client(create_server(served, "agent")) as client:
            for number in range(10):
                result = await client.call_tool("remember", {"text": f"the MCP agent noted fact {number}"})
                assert not result.is_error, result.content
                acknowledged(result.structured_content["id"])
                graph.put(("agent",), f"key-{number}", {"text": f"the graph noted fact {number}"})
                acknowledged(f"key-{number}")
                if vectors:
                    exercise_vectors(served, f"fact {number}", "agent")
                sqlite3_count(path, "memories")
                if number == 4:
                    served.backup(path + ".backup")
                    assert served.check(fix=True).ok
                    acknowledged("backup")

    asyncio.run(turns())
    return [graph, served]


def main(argv: list[str]) -> None:
    scenario, path, end = argv[:3]
    if "--no-semantic" in argv:
        for name in SEMANTIC_MODULES:
            sys.modules[name] = None  # type: ignore[assignment]
    vectors = "--vectors" in argv
    held = {"checkpointer": checkpointer, "reader": reader, "overwrite": overwrite, "mixed": mixed}[scenario](path, vectors)
    if end == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if end == "exit":
        os._exit(0)
    for each in reversed(held):
        each.close()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main(sys.argv[1:])
