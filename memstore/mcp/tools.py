"""The MCP tools: one server for one open store and one namespace, on the official SDK (mcp 2.x).

No tool takes a namespace, so an agent cannot read or write another one. Each tool is one
`MemoryStore` call; no SQL here. A memstore error becomes the SDK's `ToolError`, so the model reads
memstore's one-line message and the server keeps serving.

>>> server = create_server(MemoryStore(tmp_path / "agent.db"), "assistant")    # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field
from sqlalchemy.exc import SQLAlchemyError

# pydantic (which turns these into the tools' output schemas) wants this TypedDict before Python 3.12.
from typing_extensions import TypedDict

from ..db import database_error
from ..defaults import DEFAULT_IMPORTANCE, DEFAULT_NAMESPACE, RECALL_K
from ..errors import MemstoreError
from ..records import memory_state, now_ms, scoped_id
from ..store import MemoryStore
from ..validate import parse_ttl

# The report tool lists at most this many entries of each finding; its counts cover them all.
REPORT_TOP = 10
# recall's k, bounded so one answer stays small enough for a model's context.
RECALL_MAX_K = 50

INSTRUCTIONS = (
    "Long-term memory that persists across conversations (memstore, namespace {namespace!r}). "
    "Call `recall` before answering anything that may depend on what you were told earlier: the user's "
    "preferences, facts about their projects, decisions. Call `remember` when you learn something worth "
    "keeping: one self-contained fact per call, written so it makes sense without this conversation. "
    "Correct a fact with `update`; drop one that is wrong or unwanted with `forget` (it is archived, and a "
    "person can restore it). `show` gives one memory and its history; `report` and `consolidate` are housekeeping."
)


# -- the tools' results ---------------------------------------------------------------------------
# Each is a tool's output schema. A tool returns exactly these fields (see `fields`): the host shows
# the model a JSON text of the value returned, besides the structured result, and both must agree.


class Remembered(TypedDict):
    id: str
    norm_key: str
    status: Literal["created", "unchanged"]
    same_key_ids: list[str]


class FlagMark(TypedDict):
    id: int
    other_id: str


class RecallHit(TypedDict):
    id: str
    text: str
    importance: int
    timestamp: int
    score: float
    found_by: list[str]
    open_flag: FlagMark | None


class Forgotten(TypedDict):
    run_id: int
    archived: list[str]


class Updated(TypedDict):
    id: str
    supersedes: str
    run_id: int


class Shown(TypedDict):
    memory: dict[str, Any]
    history: list[dict[str, Any]]


class ArchivedByRun(TypedDict):
    id: str
    reason: str
    superseded_by: str | None


class Consolidated(TypedDict):
    dry_run: bool
    run_id: int | None
    capacity: int
    live_before: int
    kept: int
    pinned_kept: int
    duplicates: int
    evicted: int
    archived: list[ArchivedByRun]


class Finding(TypedDict):
    count: int
    top: list[Any]


def _surest_first(flag: dict[str, Any]) -> tuple[float, int]:
    """Open flags by confidence (highest first; a flag without one last), then newest first."""
    return (-(flag.get("confidence") or 0.0), -flag["id"])


class OpenFlag(TypedDict):
    id: int
    older_id: str
    newer_id: str
    similarity: float
    reason: str  # "subject: old → new"
    confidence: float | None  # how sure the contradict phase is (None: raised before revision 0014)
    signal: str | None  # what in the texts showed the change
    older_text: str | None
    newer_text: str | None


class Inventory(TypedDict):
    namespace: str
    total_records: int
    total_text_chars: int
    pinned: int
    never_recalled: int
    oldest_days_idle: int
    median_days_idle: int
    exact_duplicate_groups: Finding
    near_duplicate_pairs: Finding
    contradiction_flags: Finding
    open_flags: Finding
    stalest: Finding


def fields(row: Mapping[str, Any], shape: type) -> dict[str, Any]:
    """The fields of the result type `shape` out of a row the store returned."""
    return {name: row[name] for name in shape.__annotations__}


@contextmanager
def tool_errors(location: str) -> Iterator[None]:
    """A memstore error reaches the model as its one-line message (the SDK's ToolError), not as the
    SDK's bare "Error executing tool"; a database error is named the way the CLI names it."""
    try:
        yield
    except MemstoreError as exc:
        raise ToolError(str(exc)) from None
    except SQLAlchemyError as exc:
        raise ToolError(database_error(exc, location)) from None


def _memstore_version() -> str:
    try:
        return version("memstore-agents")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return ""


def _tool(annotations: ToolAnnotations) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a method of `Tools` as an MCP tool with these annotations (`create_server` registers it)."""

    def mark(method: Callable[..., Any]) -> Callable[..., Any]:
        method.tool_annotations = annotations  # type: ignore[attr-defined]
        return method

    return mark


def _finding(entries: list[Any]) -> Finding:
    """A report's finding: the full count and at most REPORT_TOP entries."""
    return {"count": len(entries), "top": entries[:REPORT_TOP]}


class Tools:
    """The tools over one open store and one namespace. Each method marked `_tool` is one tool: its
    name the tool's name, its parameters (after `self`) the tool's input schema, its docstring what
    the model reads, its return type the output schema."""

    def __init__(self, store: MemoryStore, namespace: str) -> None:
        self.store = store
        self.namespace = namespace
        self.location = store.url

    @_tool(ToolAnnotations(title="Remember a fact", destructive_hint=False))
    def remember(
        self,
        text: Annotated[str, Field(description="The fact, one self-contained sentence or two.")],
        importance: Annotated[int, Field(strict=True, description="1 (trivia) .. 5 (critical); decides what survives when the store is trimmed.")] = DEFAULT_IMPORTANCE,
        pinned: Annotated[bool, Field(strict=True, description="Never archive this memory when the store is trimmed.")] = False,
        fact_key: Annotated[str | None, Field(description="A stable name for the fact (e.g. 'user.timezone'); memories sharing it claim the same fact.")] = None,
        meta: Annotated[dict[str, Any] | None, Field(description="Any JSON object to keep with the memory (source, tags, ...).")] = None,
        id: Annotated[str | None, Field(description="Leave empty. Only to make a retried call safe: the same id with the same text stores nothing new. The memory's own id is derived from it (see the result).")] = None,
        expires_in: Annotated[str | None, Field(description="Only for a fact true for a while (today's door code, this week's travel): how long it stays true, a number and s, m, h or d ('8h', '7d'). Leave empty for a lasting fact.")] = None,
    ) -> Remembered:
        """Store a fact in long-term memory so a later conversation can recall it.

        Use it when you learn something worth keeping: a preference, a decision, a fact about the
        user or their work. One fact per call, written to make sense on its own. A fact with a
        shelf life takes `expires_in`: from then on recall no longer returns it.

        Returns {id, norm_key, status, same_key_ids}: the memory's id; its normalised key (case,
        punctuation and spacing removed); status "created", or "unchanged" when this exact call was
        already stored (a retry with the same id); same_key_ids, the other live memories with the
        same normalised key (copies that the next consolidation will fold into the newest).
        """
        with tool_errors(self.location):
            ttl = None if expires_in is None else parse_ttl(expires_in, "expires_in")
            result = self.store.remember(
                text, importance=importance, pinned=pinned, fact_key=fact_key, meta=meta,
                id=None if id is None else scoped_id(self.namespace, id), namespace=self.namespace, ttl=ttl,
            )  # fmt: skip
        return fields(result, Remembered)

    @_tool(ToolAnnotations(title="Recall memories", destructive_hint=False))
    def recall(
        self,
        query: Annotated[str, Field(description="Words to search for, e.g. 'preferred editor theme'.")],
        k: Annotated[int, Field(strict=True, ge=1, le=RECALL_MAX_K, description="How many memories to return at most.")] = RECALL_K,
    ) -> list[RecallHit]:
        """Search long-term memory for the memories that best match a query.

        Use it before answering anything that may depend on earlier conversations. Full-text
        search, and when the store has embeddings also search by meaning, the two fused: a
        question in other words than the memory still finds it. Each memory returned counts as
        recalled (memories never recalled go stale first).

        Returns up to k memories, best match first: {id, text, importance, timestamp (Unix ms),
        score (higher is better), found_by (["lexical"], ["semantic"] or both), open_flag}; an
        empty list when nothing matches. open_flag is null, or {id, other_id} when the memory may
        contradict the memory other_id and a person has not settled which is current yet: do not
        rely on either as certain, and say so if it matters.
        """
        with tool_errors(self.location):
            rows = self.store.recall(query, k, self.namespace)
        return [fields(row, RecallHit) for row in rows]

    @_tool(ToolAnnotations(title="Forget a memory", destructive_hint=True, idempotent_hint=False))
    def forget(
        self,
        id: Annotated[str, Field(description="The id of the memory to forget (from recall or remember).")],
        reason: Annotated[str | None, Field(description="Why, in a few words; kept with the archived memory.")] = None,
    ) -> Forgotten:
        """Take a memory out of long-term memory because it is wrong, outdated or unwanted.

        The memory is archived, not destroyed: a person can undo it with `memstore restore --run
        RUN_ID`. To correct a fact rather than drop it, use `update`.

        Returns {run_id, archived}: the run that archived it, and the archived ids.
        """
        with tool_errors(self.location):
            run = self.store.forget([id], reason=reason, namespace=self.namespace)
        return {"run_id": run.run_id, "archived": [entry.id for entry in run.archived]}

    @_tool(ToolAnnotations(title="Update a memory", destructive_hint=False, idempotent_hint=False))
    def update(
        self,
        id: Annotated[str, Field(description="The id of the memory to correct.")],
        text: Annotated[str | None, Field(description="The corrected text; leave empty to keep the text.")] = None,
        importance: Annotated[int | None, Field(strict=True, description="New importance 1..5; leave empty to keep it.")] = None,
    ) -> Updated:
        """Correct a memory: its text, its importance, or both.

        The old version is archived as superseded and a new memory replaces it, so the history
        stays (see `show`). Give at least one of text and importance.

        Returns {id, supersedes, run_id}: the new memory's id, the id it replaced, and the run
        that archived the old version.
        """
        if text is None and importance is None:
            raise ToolError("give text, importance or both")
        with tool_errors(self.location):
            result = self.store.update(id, text=text, importance=importance, namespace=self.namespace)
        return fields(result, Updated)

    @_tool(ToolAnnotations(title="Show a memory", read_only_hint=True))
    def show(self, id: Annotated[str, Field(description="The memory's id.")]) -> Shown:
        """Show one memory, live, expired or archived, with its history.

        Use it to see every field of a memory, or why and when it left the live set.

        Returns {memory, history}: memory is the stored row (id, text, importance, timestamp,
        pinned, fact_key, meta, expires_at, ...) with its state: "live", "expired" (its lifetime
        ended, so recall no longer returns it) or "archived" (with archived_at, reason and
        superseded_by); history is every version linked to it by updates, oldest first, this one
        included, each with its state.
        """
        with tool_errors(self.location):
            memory = self.store.get(id, namespace=self.namespace)
            history = self.store.history(id, namespace=self.namespace)
        return {"memory": dict(memory, state=memory_state(memory, now_ms())), "history": history}

    @_tool(ToolAnnotations(title="Consolidate memory", destructive_hint=True, idempotent_hint=True))
    def consolidate(
        self,
        capacity: Annotated[int, Field(strict=True, description="How many unpinned memories to keep.")],
        dry_run: Annotated[bool, Field(strict=True, description="True (the default): only say what would happen.")] = True,
    ) -> Consolidated:
        """Trim long-term memory: fold duplicates into their newest copy, then keep the `capacity`
        most important unpinned memories.

        Housekeeping; call it when asked to tidy memory. By default a dry run, which changes
        nothing; call again with dry_run=false to apply. Archived memories are kept and a person
        can undo a run with `memstore restore --run RUN_ID`.

        Returns the run's counts (live_before, kept, pinned_kept, duplicates, evicted), its run_id
        (null for a dry run) and the archived memories: {id, reason, superseded_by}.
        """
        with tool_errors(self.location):
            run = self.store.consolidate(capacity, self.namespace, dry_run=dry_run).to_dict()
        return {**fields(run, Consolidated), "archived": [fields(entry, ArchivedByRun) for entry in run["archived"]]}

    @_tool(ToolAnnotations(title="Memory hygiene report", read_only_hint=True))
    def report(self) -> Inventory:
        """Inventory of long-term memory: size, duplicates, near-duplicates, possible
        contradictions and the stalest memories. Changes nothing.

        Use it to judge whether memory needs tidying or a person's review. Each finding comes as
        {count, top}: the full count and at most 10 entries. Duplicate groups are lists of ids;
        near-duplicate pairs and contradiction flags are {ids, jaccard, ...}; open_flags are the
        contradictions the maintenance job flagged for a person, surest first ({id, older_id, newer_id
        (probably current), similarity, reason "subject: old → new", confidence, signal, older_text,
        newer_text}); stalest entries are {id, staleness
        0..1, days_idle, recall_count, pinned}.
        """
        with tool_errors(self.location):
            found = self.store.report(self.namespace)
        stale = [entry for entry in found["staleness"] if entry["staleness"] > 0]
        return {
            **{key: found[key] for key in ("namespace", "total_records", "total_text_chars", "pinned", "never_recalled", "oldest_days_idle", "median_days_idle")},
            "exact_duplicate_groups": _finding(found["exact_duplicate_groups"]),
            "near_duplicate_pairs": _finding(found["near_duplicate_pairs"]),
            "contradiction_flags": _finding(found["contradiction_flags"]),
            "open_flags": _finding([fields(flag, OpenFlag) for flag in sorted(found["open_flags"], key=_surest_first)]),
            "stalest": _finding(stale),
        }


# The tools in the order the server lists them.
TOOLS = ("remember", "recall", "forget", "update", "show", "consolidate", "report")


def create_server(store: MemoryStore, namespace: str = DEFAULT_NAMESPACE) -> MCPServer:
    """The MCP server for one open store and one namespace; the caller owns (and closes) the store."""
    server = MCPServer(
        "memstore", instructions=INSTRUCTIONS.format(namespace=namespace), version=_memstore_version()
    )
    tools = Tools(store, namespace)
    for name in TOOLS:
        method = getattr(tools, name)
        server.tool(annotations=method.tool_annotations)(method)
    return server


__all__ = ["TOOLS", "Tools", "create_server", "tool_errors"]
