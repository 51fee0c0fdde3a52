"""The sources of the bench's importer scenario (importers.py): N memories in each shape memstore
imports, written to a folder. Each builder returns the source's path, how many memories it holds
(``expected``) and how many of them must arrive archived, and what else it made (``detail``).

For ``--importers-size`` N (default 100,000) a source of exactly N memories is generated in each
shape, in the work directory, untimed, from the bench's synthetic texts (scripts/data.py:
~100 characters, a Zipf vocabulary, near-duplicate variants; made unique here, since several
formats derive a memory's id from its text):

* ``langgraph``: a LangGraph ``SqliteStore`` file written by LangGraph itself (``store.batch`` of
  ``PutOp`` in chunks of 1,000), items under 200 users' ``memories`` and ``profile`` prefixes and an
  agent's ``notes``; values ``{"content": ...}`` with extra fields, 10 % structured (a LangMem
  ``{"kind", "content": {...}}``), 5 % with a ttl.
* ``mcp-memory``: the reference MCP memory server's ``memory.jsonl``: entities with 2-8
  observations each, 1 % with none, and relations (10 % of the memories) between them.
* ``mem0``: a ``Memory.get_all()`` dump, ``{"results": [...]}``, over 50 users, some with agent and
  run ids, categories, metadata, 2 % with an expiration date.
* ``mem0 (OpenMemory zip)``: OpenMemory's export zip (``memories.json`` and ``memories.jsonl.gz``),
  one user, three apps, eight categories; 10 % of the memories paused, archived or deleted (they
  arrive in the archive, as one forget run).
* ``mcp-memory-service``: its JSON export (``export_metadata`` and ``memories``, content_hash the
  SHA-256 of the content, times in Unix seconds) over three stores.
* ``uteke``: its JSONL export (RFC 3339 times with 0/3/6/9 fraction digits), 2 % legacy lines.
* ``basic-memory``: a folder of N/20 Markdown notes in 50 folders, each with frontmatter, a heading,
  a prose paragraph (not an observation), ~18 observations ``- [category] text #tag (context)``
  and 1-3 relations ``- relates_to [[Other note]]``: N memories in all.

The baseline's source: memstore's own JSONL export shape of N records over 10 namespaces.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import random
import uuid
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

from scripts.data import NOW_MS, generate_records

NOW = datetime.fromtimestamp(NOW_MS / 1000, tz=timezone.utc)
SPAN = timedelta(days=730)


class Texts:
    """N unique synthetic texts (scripts/data.py's generator) with creation moments over two years."""

    def __init__(self, size: int, seed: int) -> None:
        texts: list[str] = []
        seen: set[str] = set()
        round_ = 0
        while len(texts) < size:
            records, _ = generate_records(size + size // 10 + 10, seed + round_)
            for record in records:
                if record["text"] not in seen and len(texts) < size:
                    seen.add(record["text"])
                    texts.append(record["text"])
            round_ += 1
        self.texts = texts
        self.rng = random.Random(seed + 7)

    def __len__(self) -> int:
        return len(self.texts)

    def moment(self) -> datetime:
        return NOW - timedelta(microseconds=self.rng.randrange(int(SPAN / timedelta(microseconds=1))))

    def word(self) -> str:
        return self.rng.choice(("coffee", "atlas", "ops", "review", "travel", "health", "python", "deploy", "family", "music"))


def iso(moment: datetime) -> str:
    return moment.isoformat()


def new_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def build_langgraph(folder: Path, texts: Texts) -> dict:
    from langgraph.store.base import PutOp
    from langgraph.store.sqlite import SqliteStore

    rng = texts.rng
    path = folder / "langgraph.db"
    ops, with_ttl = [], 0
    for index, text in enumerate(texts.texts):
        user = f"u{rng.randrange(200)}"
        roll = rng.random()
        namespace = ("users", user, "memories") if roll < 0.8 else ("users", user, "profile") if roll < 0.95 else ("agents", "planner", "notes")
        if rng.random() < 0.10:
            value = {"kind": rng.choice(("Preference", "Fact", "Episode")), "content": {"what": text, "confidence": round(rng.random(), 2)}}
        else:
            value = {"content": text}
            if rng.random() < 0.5:
                value["confidence"] = round(rng.random(), 2)
            if rng.random() < 0.3:
                value["tags"] = [texts.word() for _ in range(rng.randint(1, 3))]
        ttl = None
        if rng.random() < 0.05:
            ttl = rng.choice((60 * 24, 60 * 24 * 7, 60 * 24 * 30))
            with_ttl += 1
        ops.append(PutOp(namespace, f"mem-{index:07d}", value, ttl=ttl))
    with SqliteStore.from_conn_string(str(path)) as store:
        store.setup()
        for start in range(0, len(ops), 1000):
            store.batch(ops[start : start + 1000])
    return {"source": path, "expected": len(texts), "archived": 0, "detail": {"with_ttl": with_ttl}}


def build_mcp_memory(folder: Path, texts: Texts) -> dict:
    rng = texts.rng
    size = len(texts)
    relations_wanted = size // 10
    lines, entities, pool = [], [], iter(texts.texts)
    observations = 0
    types = ("person", "project", "organization", "tool", "place", "event")
    budget = size - relations_wanted
    while budget > 0:
        name = f"{texts.word().capitalize()}_{len(entities):06d}"
        entity_type = rng.choice(types)
        if rng.random() < 0.01:
            observed: list[str] = []  # an entity with no observation: one memory of its own
        else:
            observed = [next(pool) for _ in range(min(rng.randint(2, 8), budget))]
        budget -= max(len(observed), 1)
        observations += len(observed)
        if not observed:
            next(pool)  # keep the text pool aligned with the memories count
        entities.append(name)
        lines.append({"type": "entity", "name": name, "entityType": entity_type, "observations": observed})
    relations: set[tuple[str, str, str]] = set()
    kinds = ("works_on", "knows", "depends_on", "part_of", "located_in", "uses")
    while len(relations) < relations_wanted:
        relations.add((rng.choice(entities), rng.choice(kinds), rng.choice(entities)))
    for source, kind, target in sorted(relations):
        lines.append({"type": "relation", "from": source, "to": target, "relationType": kind})
    path = folder / "memory.jsonl"
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n", encoding="utf-8")
    return {"source": path, "expected": size, "archived": 0,
            "detail": {"entities": len(entities), "observations": observations, "relations": len(relations)}}  # fmt: skip


def build_mem0(folder: Path, texts: Texts) -> dict:
    rng = texts.rng
    results = []
    expiring = 0
    for text in texts.texts:
        created = texts.moment()
        updated = created if rng.random() < 0.8 else created + (NOW - created) * rng.random()
        memory = {
            "id": new_uuid(rng), "memory": text, "hash": hashlib.md5(text.encode()).hexdigest(),  # noqa: S324 (mem0's own)
            "metadata": None if rng.random() < 0.6 else {"source": rng.choice(("chat", "email", "api")), "importance": rng.randint(1, 5)},
            "created_at": iso(created), "updated_at": iso(updated), "user_id": f"user-{rng.randrange(50):03d}",
        }  # fmt: skip
        if rng.random() < 0.3:
            memory["agent_id"] = rng.choice(("planner", "assistant", "coder"))
            memory["run_id"] = f"run-{rng.randrange(1000)}"
        memory["role"] = rng.choice(("user", "assistant"))
        if rng.random() < 0.2:
            memory["categories"] = [texts.word() for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.02:
            memory["expiration_date"] = (NOW + timedelta(days=rng.randint(30, 3000))).date().isoformat()
            expiring += 1
        results.append(memory)
    path = folder / "mem0_get_all.json"
    path.write_text(json.dumps({"results": results}, indent=2, ensure_ascii=False), encoding="utf-8")
    return {"source": path, "expected": len(texts), "archived": 0, "detail": {"expiring": expiring}}


def build_openmemory(folder: Path, texts: Texts) -> dict:
    rng = texts.rng
    user_uuid = new_uuid(rng)
    apps = [{"id": new_uuid(rng), "owner_id": user_uuid, "name": name, "description": None, "metadata": {}, "is_active": True,
             "created_at": iso(NOW - SPAN), "updated_at": iso(NOW - SPAN)} for name in ("claude", "cursor", "windsurf")]  # fmt: skip
    categories = [{"id": new_uuid(rng), "name": name, "description": f"Automatically created category for {name}",
                   "created_at": iso(NOW - SPAN), "updated_at": iso(NOW - SPAN)}
                  for name in ("preferences", "work", "travel", "health", "family", "finance", "hobbies", "tech")]  # fmt: skip
    memories, lines, memory_categories = [], [], []
    states = {"active": 0, "paused": 0, "archived": 0, "deleted": 0}
    for text in texts.texts:
        created = texts.moment()
        roll = rng.random()
        state = "active" if roll < 0.90 else "paused" if roll < 0.93 else "archived" if roll < 0.97 else "deleted"
        states[state] += 1
        app = rng.choice(apps)
        chosen = rng.sample(categories, rng.randint(0, 2))
        memory = {"id": new_uuid(rng), "user_id": user_uuid, "app_id": app["id"], "content": text,
                  "metadata": {"source_app": "openmemory", "mcp_client": app["name"]}, "state": state,
                  "created_at": iso(created), "updated_at": iso(created), "archived_at": None, "deleted_at": None,
                  "category_ids": [category["id"] for category in chosen]}  # fmt: skip
        if state == "archived":
            memory["archived_at"] = iso(created + (NOW - created) * rng.random())
        elif state == "deleted":
            memory["deleted_at"] = iso(created + (NOW - created) * rng.random())
        memories.append(memory)
        memory_categories += [{"memory_id": memory["id"], "category_id": category["id"]} for category in chosen]
        lines.append(json.dumps({"id": memory["id"], "content": text, "metadata": memory["metadata"], "created_at": memory["created_at"],
                                 "updated_at": memory["updated_at"], "state": state, "app": app["name"],
                                 "categories": [category["name"] for category in chosen]}) + "\n")  # fmt: skip
    payload = {
        "user": {"id": user_uuid, "user_id": "alice", "name": "alice", "email": None, "metadata": {},
                 "created_at": iso(NOW - SPAN), "updated_at": iso(NOW - SPAN)},
        "apps": apps, "categories": categories, "memories": memories, "memory_categories": memory_categories,
        "status_history": [], "access_controls": [],
        "export_meta": {"app_id_filter": None, "export_date": iso(NOW), "version": "1"},
    }  # fmt: skip
    path = folder / "memories_export_alice.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("memories.json", json.dumps(payload, indent=2))
        buffer = io.BytesIO()
        with gzip.GzipFile(fileobj=buffer, mode="wb") as stream:
            stream.write("".join(lines).encode("utf-8"))
        archive.writestr("memories.jsonl.gz", buffer.getvalue())
    return {"source": path, "expected": len(texts), "archived": len(texts) - states["active"], "detail": {"states": states}}


def build_mcp_memory_service(folder: Path, texts: Texts) -> dict:
    rng = texts.rng
    stores = ("default", "team", "personal")
    memories = []
    for text in texts.texts:
        created = texts.moment().timestamp()
        memories.append({
            "content": text, "content_hash": hashlib.sha256(text.encode()).hexdigest(),
            "tags": [texts.word() for _ in range(rng.randint(0, 3))], "created_at": created,
            "updated_at": created if rng.random() < 0.8 else created + rng.random() * 86_400 * 30,
            "memory_type": rng.choice(("note", "learning", "decision", "reference")),
            "metadata": {} if rng.random() < 0.5 else {"source": rng.choice(("standup", "chat", "docs")), "confidence": round(rng.random(), 2)},
            "store": rng.choice(stores), "export_source": "devbox",
        })  # fmt: skip
    document = {"export_metadata": {"source_machine": "devbox", "export_timestamp": NOW.replace(tzinfo=None).isoformat(),
                                    "total_memories": len(memories), "database_path": "/tmp/sqlite_vec.db", "platform": "Linux",
                                    "python_version": "3.11.2", "include_embeddings": False, "filter_tags": None,
                                    "stores": list(stores), "exporter_version": "5.0.1"},
                "memories": memories}  # fmt: skip
    path = folder / "mcp_memory_service_export.json"
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    return {"source": path, "expected": len(texts), "archived": 0, "detail": {"stores": len(stores)}}


def rfc3339(moment: datetime, rng: random.Random) -> str:
    digits = rng.choice((0, 3, 6, 9))
    base = moment.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{moment.microsecond:06d}{rng.randrange(1000):03d}"[:digits]
    return f"{base}.{fraction}Z" if digits else f"{base}Z"


def build_uteke(folder: Path, texts: Texts) -> dict:
    rng = texts.rng
    lines, legacy = [], 0
    for text in texts.texts:
        entry = {"content": text, "tags": [texts.word() for _ in range(rng.randint(0, 3))],
                 "metadata": {} if rng.random() < 0.6 else {"person": rng.choice(("kenji", "alice", "bob")), "confidence": round(rng.random(), 2)},
                 "created_at": rfc3339(texts.moment(), rng)}  # fmt: skip
        if rng.random() < 0.02:
            legacy += 1  # an older export: only the first four fields
        else:
            if rng.random() < 0.4:
                entry["source"] = rng.choice(("import:notes.md", "https://wiki.example.org/team", "cli"))
            entry["namespace"] = rng.choice(("default", "team", "work"))
        lines.append(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
    path = folder / "uteke_export.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")  # uteke writes no trailing newline
    return {"source": path, "expected": len(texts), "archived": 0, "detail": {"legacy_lines": legacy}}


def build_basic_memory(folder: Path, texts: Texts) -> dict:
    rng = texts.rng
    size = len(texts)
    root = folder / "basic-memory"
    notes = max(1, -(-size // 20))
    titles = [f"{texts.word().capitalize()} Note {number:05d}" for number in range(notes)]
    pool = iter(texts.texts)
    remaining = size
    observations = relations = 0
    for number, title in enumerate(titles):
        share = remaining if number == notes - 1 else min(20, remaining)
        linked = min(rng.randint(1, 3), share - 1, notes - 1) if share > 1 else 0
        observed = share - linked
        remaining -= share
        area = f"area{number % 50:02d}"
        slug = title.lower().replace(" ", "-")
        tags = sorted({texts.word() for _ in range(rng.randint(1, 3))})
        created = texts.moment().replace(microsecond=0)
        lines = ["---", f"title: {title}", "type: note", f"permalink: main/{area}/{slug}", "tags:", *[f"- {tag}" for tag in tags],
                 f"created: {created.isoformat()}", "---", "", f"# {title}", "",
                 f"Notes kept about {title.lower()}, in prose that basic-memory does not read as an observation.", "",
                 "## Observations"]  # fmt: skip
        for _ in range(observed):
            text = next(pool).rstrip()
            if rng.random() < 0.3:
                text += f" #{texts.word()}"
            if rng.random() < 0.2:
                text += f" (said in {rng.choice(('standup', 'review', 'onboarding'))})"
            lines.append(f"- [{rng.choice(('fact', 'preference', 'decision', 'idea', 'habit'))}] {text}")
        observations += observed
        if linked:
            lines += ["", "## Relations"]
            for target in rng.sample([t for t in titles if t != title] if notes < 64 else _others(titles, number, linked, rng), linked):
                lines.append(f"- {rng.choice(('relates_to', 'part_of', 'depends_on'))} [[{target}]]")
            relations += linked
            for _ in range(linked):
                next(pool)  # keep the text pool aligned with the memories count
        note = root / area / f"{title}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"source": root, "expected": size, "archived": 0, "detail": {"notes": notes, "observations": observations, "relations": relations}}


def _others(titles: list[str], number: int, count: int, rng: random.Random) -> list[str]:
    """`count` distinct titles other than titles[number] (cheap on thousands of notes)."""
    chosen: set[str] = set()
    while len(chosen) < count:
        pick = rng.randrange(len(titles))
        if pick != number:
            chosen.add(titles[pick])
    return sorted(chosen)


def build_memstore_jsonl(folder: Path, texts: Texts, seed: int) -> dict:
    """memstore's own export shape (the baseline): the bench's generated records, over 10 namespaces."""
    rng = random.Random(seed + 11)
    records, _ = generate_records(len(texts), seed)
    path = folder / "memstore.jsonl"
    with path.open("w", encoding="utf-8") as stream:
        for record, text in zip(records, texts.texts):
            row = {"id": record["id"], "namespace": "default" if rng.random() < 0.5 else f"ns{rng.randrange(1, 10)}", "text": text,
                   "timestamp": record["updated_at"], "importance": record["importance"], "pinned": record["pinned"],
                   "created_at": record["created_at"], "updated_at": record["updated_at"],
                   "last_recalled_at": record["last_recalled_at"], "recall_count": record["recall_count"],
                   "fact_key": record["fact_key"], "meta": {"source": rng.choice(("chat", "email", "api"))} if rng.random() < 0.5 else {}}  # fmt: skip
            stream.write(json.dumps(row, ensure_ascii=False) + "\n")
    return {"source": path, "expected": len(texts), "archived": 0, "detail": {}}


# (label, format, source builder); the label names the row, the format is what import_from takes.
SOURCES = (
    ("langgraph", "langgraph", build_langgraph),
    ("mcp-memory", "mcp-memory", build_mcp_memory),
    ("mem0", "mem0", build_mem0),
    ("mem0 (OpenMemory zip)", "mem0", build_openmemory),
    ("mcp-memory-service", "mcp-memory-service", build_mcp_memory_service),
    ("uteke", "uteke", build_uteke),
    ("basic-memory", "basic-memory", build_basic_memory),
)


def source_bytes(source: Path) -> int:
    return sum(path.stat().st_size for path in source.rglob("*") if path.is_file()) if source.is_dir() else source.stat().st_size
