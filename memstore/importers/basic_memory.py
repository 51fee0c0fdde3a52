"""basic-memory's Markdown notes: a folder of them (or one note), read as basic-memory reads them.

A note is YAML frontmatter (title, type, permalink, tags, created, modified, ...) and a Markdown
body. basic-memory (its markdown/plugins.py, 0.24) makes an observation of every text block outside
code and quotes that reads `[category] content #tag (context)`, or that carries a #tag anywhere,
and an explicit relation of every list item `relation_type [[Target]] (context)`. Each observation
becomes one memory, its text naming the note ("Coffee Preferences: Prefers dark roast #coffee"),
and each explicit relation one ("Coffee Preferences part_of Morning Routine"); the note's title,
permalink, type and tags, the observation's category, tags and context are in meta. A note's
`created` (else its file's modification time) is the memories' time.

Frontmatter is read as basic-memory writes it: `key: value` lines and lists (`- item` lines or
`[a, b]`); a value this reader does not take apart is kept as its text.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, NamedTuple

from ..defaults import DEFAULT_NAMESPACE
from ..errors import ValidationError
from ..io import decode_text
from .common import Read, SourceRecord, imported_id, moment_ms

# basic-memory's own rules (markdown/plugins.py): a category is what the brackets hold unless it is a
# transcript's clock ("[00:01:02]") or a task box ("[x]", "[/]"); a tag is a word starting with "#".
_CATEGORY = re.compile(r"^\[([^\[\]()]+)\]\s+(.+)", re.DOTALL)
_CLOCK = r"\d{1,3}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?"
_CLOCK_CATEGORY = re.compile(rf"^{_CLOCK}(?:\s+-\s+{_CLOCK})?$")
_EXPLICIT_RELATION = re.compile(r'^(?:"([^"]+)"|([^\s\[\]"]+))\s+\[\[([^\[\]]+)\]\](?:\s+\(([^()]*)\))?\s*$')
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s+(.*?))?(?:\s+#+)?\s*$")
_LIST_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])(?:\s+(.*))?$")
_THEMATIC_BREAK = re.compile(r"^ {0,3}([-*_])(?:\s*\1){2,}\s*$")


NOTE_FIELDS = frozenset({"title", "type", "permalink", "tags", "created", "modified"})


class Block(NamedTuple):
    line: int  # where it starts in the file
    text: str
    in_list: bool


def frontmatter(text: str) -> tuple[dict[str, Any], str, int]:
    """(fields, body, the line the body starts on) of a note."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text, 1
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() in ("---", "..."))
    except StopIteration:
        return {}, text, 1
    fields: dict[str, Any] = {}
    key = None
    for line in lines[1:end]:
        item = re.match(r"^\s*-\s+(.*)$", line)
        if item and key is not None and isinstance(fields.get(key), list):
            fields[key].append(_scalar(item[1]))
            continue
        pair = re.match(r"^([^\s:#][^:]*):(?:\s+(.*))?$", line)
        if pair is None:
            continue
        key, value = pair[1].strip(), (pair[2] or "").strip()
        if not value:
            fields[key] = []  # a list follows (or the field is empty)
        elif value.startswith("[") and value.endswith("]"):
            fields[key] = [_scalar(part) for part in value[1:-1].split(",") if part.strip()]
        else:
            fields[key] = _scalar(value)
    return fields, "\n".join(lines[end + 1 :]), end + 2


def _scalar(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def blocks(body: str, first_line: int) -> list[Block]:
    """The text blocks of a Markdown body that basic-memory looks at: paragraphs, headings and list
    items, not code (fenced) and not quotes."""
    found: list[Block] = []
    lines = body.split("\n")
    fence = None
    paragraph: list[str] = []
    paragraph_start = 0

    def end_paragraph() -> None:
        if paragraph:
            found.append(Block(first_line + paragraph_start, "\n".join(paragraph).strip(), False))
            paragraph.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        opening = _FENCE.match(line)
        if fence is not None:
            if opening and opening[1][0] == fence[0] and len(opening[1]) >= len(fence):
                fence = None
        elif opening:
            end_paragraph()
            fence = opening[1]
        elif not line.strip() or _THEMATIC_BREAK.match(line):
            end_paragraph()
        elif re.match(r"^ {0,3}>", line):
            end_paragraph()  # a quote (an Obsidian callout): basic-memory reads nothing in it
        elif (heading := _HEADING.match(line)) is not None:
            end_paragraph()
            found.append(Block(first_line + index, (heading[1] or "").strip(), False))
        elif (item := _LIST_ITEM.match(line)) is not None:
            end_paragraph()
            text, indent = [item[2] or ""], len(item[1])
            while index + 1 < len(lines) and lines[index + 1].strip() and not _LIST_ITEM.match(lines[index + 1]) \
                    and len(lines[index + 1]) - len(lines[index + 1].lstrip()) > indent:  # fmt: skip
                index += 1
                text.append(lines[index].strip())
            found.append(Block(first_line + index - len(text) + 1, "\n".join(text).strip(), True))
        else:
            if not paragraph:
                paragraph_start = index
            paragraph.append(line.strip())
        index += 1
    end_paragraph()
    return found


def observation(text: str) -> dict[str, Any] | None:
    """basic-memory's observation of a block ({category, content, tags, context}), or None."""
    if not text or text.startswith(("[ ]", "[x]", "[-]")) or re.match(r"^\[.*?\]\(.*?\)$", text) or re.match(r"^\[\[.*?\]\]$", text):
        return None
    match = _CATEGORY.match(text)
    if match and (_CLOCK_CATEGORY.match(match[1].strip()) or _is_task_mark(match[1].strip())):
        match = None
    if not match and not any(part.startswith("#") for part in text.split()):
        return None
    category, content = (match[1].strip(), match[2].strip()) if match else (None, re.sub(r"^\[\]\s+", "", text))
    context = None
    if content.endswith(")") and "(" in content:
        start = content.rfind("(")
        context, content = content[start + 1 : -1].strip(), content[:start].strip()
    tags = [tag for part in content.split() if part.startswith("#") for tag in part.split("#") if tag]
    return {"category": category, "content": content, "tags": tags or None, "context": context}


def _is_task_mark(category: str) -> bool:
    return len(category) == 1 and (category in "xX" or not category.isalnum())


def relation(text: str) -> dict[str, Any] | None:
    """An explicit relation of a list item ({type, target, context}), or None."""
    match = _EXPLICIT_RELATION.match(text)
    if match is None:
        return None
    return {"type": match[1] or match[2], "target": match[3].strip(), "context": match[4].strip() if match[4] else None}


def _note_records(path: Path, relative: str, namespace: str) -> list[SourceRecord]:
    name = os.fspath(path)
    fields, body, body_line = frontmatter(decode_text(path.read_bytes().removeprefix(b"\xef\xbb\xbf"), name))
    title = fields.get("title") if isinstance(fields.get("title"), str) and fields.get("title") else path.stem
    permalink = fields.get("permalink") if isinstance(fields.get("permalink"), str) else None
    mtime_ms = path.stat().st_mtime_ns // 1_000_000
    created = moment_ms(fields.get("created"), f"{name} line 1", "created") if isinstance(fields.get("created"), str) else None
    modified = moment_ms(fields.get("modified"), f"{name} line 1", "modified") if isinstance(fields.get("modified"), str) else None
    created = created if created is not None else mtime_ms
    note = {"note": title, "permalink": permalink, "file": relative, "note_type": fields.get("type"), "note_tags": fields.get("tags")}
    note["note_fields"] = {key: value for key, value in fields.items() if key not in NOTE_FIELDS}  # kept, not mapped
    note = {key: value for key, value in note.items() if value not in (None, [], "", {})}
    identity = permalink or relative
    records = []
    for block in blocks(body, body_line):
        location = f"{name} line {block.line}"
        found = observation(block.text)
        if found is not None:
            meta = {"imported_from": "basic-memory", **note, **{key: value for key, value in found.items() if value is not None and key != "content"}}
            records.append(SourceRecord("observation", location, {
                "id": imported_id("basic-memory", namespace, identity, "observation", found["category"] or "", found["content"], found["context"] or ""),
                "namespace": namespace, "text": f"{title}: {found['content']}", "timestamp": created, "created_at": created,
                "updated_at": modified if modified is not None else max(created, mtime_ms), "meta": meta,
            }))  # fmt: skip
        link = relation(block.text) if block.in_list else None
        if link is not None:
            meta = {"imported_from": "basic-memory", **note, "relation": {key: value for key, value in link.items() if value is not None}}
            records.append(SourceRecord("relation", location, {
                "id": imported_id("basic-memory", namespace, identity, "relation", link["type"], link["target"]),
                "namespace": namespace, "text": f"{title} {link['type']} {link['target']}", "timestamp": created,
                "created_at": created, "updated_at": modified if modified is not None else max(created, mtime_ms), "meta": meta,
            }))  # fmt: skip
    return records


def notes(root: Path) -> list[Path]:
    """The notes under `root` (or `root` itself, one note), in path order; hidden folders (.obsidian,
    .git) are not notes."""
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise FileNotFoundError(2, "No such file or directory", os.fspath(root))
    return sorted(
        path for path in root.rglob("*.md") if path.is_file() and not any(part.startswith(".") for part in path.relative_to(root).parts)
    )


def read(source: str | os.PathLike[str], namespace: str | None) -> list[Read]:
    """Every observation and explicit relation of the notes at `source`."""
    root = Path(source).expanduser()
    target = namespace if namespace is not None else DEFAULT_NAMESPACE
    records: list[Read] = []
    for path in notes(root):
        relative = path.name if root.is_file() else path.relative_to(root).as_posix()
        try:
            records += _note_records(path, relative, target)
        except ValidationError as error:
            records.append(error)
    return records


__all__ = ["read"]
