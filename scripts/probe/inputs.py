"""The probe's bad inputs given to the CLI and the LangGraph store (the probe runs them; see
its docstring): odd vectors in an import, meta nested 100,000 deep, 64-bit time extremes, times a
query or --as-of names past the calendar, odd namespaces, a URL with a password, a lifetime in
other scripts' digits, a --token-file without a token, and `export -o` or `backup --force` into a
FIFO, a device node and a symlink.

What must hold for a bad input: it is refused (`memstore` exits 1 with one line naming the file,
line and field, or a click usage error naming the option) and nothing is written, or it is taken
and reads back exactly; never a traceback; `memstore check` clean afterwards.
"""

from __future__ import annotations

import copy
import json
import os
import stat
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .common import Backend, Tally, check_clean, cli, free_port, mcp_exchange, one_line_error, tail, write_jsonl

PASSWORD = "Pr0beS3cretPw"
INT64 = 2**63


def refused(done, *names: str) -> str | None:
    """None when a bad command-line value was refused as memstore's CLI does: exit 1 with one line,
    or a click usage error (exit 2, its last line 'Error: Invalid value for ...'), naming `names`."""
    if done.returncode == 2 and "Traceback" not in done.stderr:
        last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
        missing = [n for n in names if n not in last]
        return None if last.startswith("Error: ") and not missing else f"usage error not naming {missing}: {tail(done.stderr)}"
    return one_line_error(done, *names)


def _raw(record: dict, raw: str) -> str:
    """A record's JSON with the placeholder "__RAW__" replaced by raw JSON text (NaN, 1e400, ...)."""
    return json.dumps(record).replace('"__RAW__"', raw)


def probe_odd_vectors(tally: Tally, work: Path, backend: Backend, location: str, vectors_file: Path) -> None:
    """A file of three records with vectors, the second's `embedding` spoiled, one file per way of
    spoiling it: one line naming file, line 2 and field 'embedding', nothing written. Then all the
    spoiled records in one file between two good ones, with --skip-invalid: the good two written
    with their vectors, every spoiled line named and skipped."""
    good = [json.loads(line) for line in vectors_file.read_text(encoding="utf-8").splitlines()[:3]]
    width = len(good[1]["embedding"]["vector"])

    def spoil(change, raw: str | None) -> str:
        record = copy.deepcopy(good[1])
        if change == "not an object":
            record["embedding"] = record["embedding"]["vector"]
        elif raw is not None:
            record["embedding"]["vector"][3] = "__RAW__"
        else:
            change(record["embedding"])
        return _raw(record, raw) if raw else json.dumps(record)

    # label: (change to the embedding, or raw JSON text for its 4th value); NaN and Infinity are not
    # JSON at all, so only the file and line can be named for them.
    variants = {
        "a value short": (lambda e: e.update(vector=e["vector"][:-1]), None), "a value too many": (lambda e: e["vector"].append(0.1), None),
        "another model": (lambda e: e.update(model="onnx-sha256:0123456789abcdef"), None), "NaN": (None, "NaN"),
        "-Infinity": (None, "-Infinity"), "1e400": (None, "1e400"), "a 400-digit integer": (None, "9" * 400),
        "empty list": (lambda e: e.update(vector=[]), None), "a string": (lambda e: e.update(vector="0.1 0.2"), None),
        "strings in the list": (lambda e: e.update(vector=[str(v) for v in e["vector"]]), None),
        "nested lists": (lambda e: e.update(vector=[[v] for v in e["vector"]]), None), "null": (lambda e: e.update(vector=None), None),
        "no vector": (lambda e: e.pop("vector"), None), "booleans": (lambda e: e.update(vector=[True] * width), None),
        "no model": (lambda e: e.pop("model"), None), "a list, not an object": ("not an object", None),
    }  # fmt: skip
    spoiled = {}
    for label, (change, raw) in variants.items():
        path = work / f"vectors-{label.replace(' ', '-').replace(',', '')}.jsonl"
        spoiled[label] = bad = spoil(change, raw)
        names = (path.name, "line 2") if label in ("NaN", "-Infinity") else (path.name, "line 2", "embedding")
        path.write_text("\n".join([json.dumps(good[0]), bad, json.dumps(good[2])]) + "\n", encoding="utf-8")
        before = backend.fingerprint(location)
        problem = one_line_error(cli(work, location, "import", str(path)), *names)
        tally.trial([problem and f"{label}: {problem}", None if backend.fingerprint(location) == before else f"{label}: written although refused"])
    # With --skip-invalid, one file of them all: the good records written with their vectors, each bad line named.
    lines = [json.dumps(good[0])] + [bad.replace(good[1]["id"], f"{good[1]['id']}-{n}") for n, bad in enumerate(spoiled.values())] + [json.dumps(good[2])]
    path = work / "vectors-all.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = cli(work, location, "import", "--skip-invalid", str(path))
    live, _ = backend.ids(location)
    tally.expect(done.returncode == 0 and "Traceback" not in done.stderr, f"--skip-invalid: exit {done.returncode}: {tail(done.stderr)}")
    for n, label in enumerate(spoiled, start=2):
        tally.expect(f"line {n}:" in done.stderr and f"{good[1]['id']}-{n - 2}" not in live, f"--skip-invalid, {label}: line {n} not named, or written")
    tally.expect({good[0]["id"], good[2]["id"]} <= live and backend.pending(location) == 0, "--skip-invalid: the good records not written with their vectors")
    tally.expect(check_clean(work, location) is None, f"check after: {check_clean(work, location)}")


def probe_deep_meta(tally: Tally, work: Path, backend: Backend, location: str) -> None:
    """meta nested 100,000 deep in an import (objects, arrays), 60,000 deep in `add --meta` (about as
    deep as one argument may be), 100,000 deep in a LangGraph value: refused, nothing written; 500 deep
    is taken and reads back."""
    deep_objects = '{"a":' * 100_000 + "1" + "}" * 100_000
    deep_arrays = "[" * 100_000 + "]" * 100_000
    for label, raw in (("objects", deep_objects), ("arrays", deep_arrays)):
        path = work / f"deep-{label}.jsonl"
        path.write_text(_raw({"id": f"deep-{label}", "text": "deep meta", "meta": {"x": "__RAW__"}}, raw) + "\n", encoding="utf-8")
        before = backend.fingerprint(location)
        problem = one_line_error(cli(work, location, "import", str(path)), path.name, "line 1")
        tally.trial([problem and f"import, {label} 100,000 deep: {problem}", None if backend.fingerprint(location) == before else "written"])
    before = backend.fingerprint(location)
    problem = refused(cli(work, location, "add", "deep meta", "--meta", '{"a":' + "[" * 60_000 + "]" * 60_000 + "}"), "--meta")
    tally.trial([problem and f"add --meta 60,000 deep: {problem}", None if backend.fingerprint(location) == before else "written"])
    # Moderately deep: taken whole, and it reads back as it went in.
    path = write_jsonl(work / "deep-500.jsonl", [{"id": "deep-500", "text": "meta 500 deep", "meta": json.loads('{"a":' * 500 + "1" + "}" * 500)}])
    done = cli(work, location, "import", str(path))
    if done.returncode == 0:
        shown = cli(work, location, "show", "deep-500", "--json")
        same = shown.returncode == 0 and json.loads(shown.stdout).get("meta") == json.loads(path.read_text())["meta"]
        tally.expect(same, f"meta 500 deep imported but read back otherwise: {tail(shown.stderr)}")
    else:
        problem = one_line_error(done, path.name, "line 1")
        tally.expect(problem is None, f"meta 500 deep: {problem}")
    from memstore.integrations.langgraph import MemstoreStore

    value: dict = {"a": 1}
    for _ in range(100_000):
        value = {"a": value}
    store = MemstoreStore(location)
    try:
        before = backend.fingerprint(location)
        try:
            store.put(("deep",), "k", value)
            raised = None
        except Exception as exc:  # refused (a RecursionError from json, here): what counts is that nothing was written
            raised = type(exc).__name__
        unchanged = backend.fingerprint(location) == before
        store.put(("deep",), "after", {"content": "the next put works"})
        tally.trial([None if raised else "a LangGraph value 100,000 deep was stored", None if unchanged else "written although refused",
                     None if store.get(("deep",), "after") is not None else "the next put failed"])  # fmt: skip
    finally:
        store.close()
    tally.expect(check_clean(work, location) is None, f"check after: {check_clean(work, location)}")


def probe_time_extremes(tally: Tally, work: Path, backend: Backend, location: str) -> None:
    """Moments at the ends of 64 bits: taken and shown back exactly inside them, refused one past
    them (a line naming the field, nothing written); then every reading and job command on a store
    that holds them exits 0."""
    for field, option in (("timestamp", "--timestamp"), ("expires_at", "--expires-at")):
        for value in (INT64 - 1, -INT64, 0, -1):
            id = f"{field}-{value}".replace("-", "m")
            done = cli(work, location, "add", f"moment {field} {value}", "--id", id, f"{option}={value}")
            back = backend.rows(location, f"SELECT {field} FROM memories WHERE id = '{id}'")
            tally.expect(done.returncode == 0 and back == [(value,)], f"{option}={value}: exit {done.returncode}, stored {back}: {tail(done.stderr)}")
        for value in (INT64, -INT64 - 1, 2**64, 10**400):
            before = backend.fingerprint(location)
            problem = refused(cli(work, location, "add", "too far", f"{option}={value}"), field if field == "timestamp" else "expires")
            tally.trial([problem and f"{option}={str(value)[:24]}: {problem}", None if backend.fingerprint(location) == before else "written"])
    fields = ("timestamp", "created_at", "last_recalled_at", "expires_at")
    rows = [{"id": f"imp-{f}-{n}", "text": f"imported {f} {n}", f: v, **({"recall_count": 1} if f == "last_recalled_at" else {})}
            for f in fields for n, v in (("max", INT64 - 1), ("min", -INT64))]  # fmt: skip
    done = cli(work, location, "import", str(write_jsonl(work / "extremes.jsonl", rows)))
    tally.expect(done.returncode == 0 or not one_line_error(done, "extremes.jsonl", "line"), f"import of extremes: {tail(done.stderr)}")
    for f in fields:
        path = write_jsonl(work / f"past-{f}.jsonl", [{"id": f"past-{f}", "text": "one past", f: INT64, "recall_count": 1}])
        before = backend.fingerprint(location)
        problem = one_line_error(cli(work, location, "import", str(path)), path.name, "line 1", f)
        tally.trial([problem and f"import {f}=2**63: {problem}", None if backend.fingerprint(location) == before else "written"])
    for args in (["list", "--all-namespaces"], ["list", f"--as-of={INT64 - 1}"], ["list", f"--as-of={-INT64}"], ["recall", "moment"],
                 ["report"], ["consolidate", "--capacity", "2", "--all-namespaces"], ["maintain", "--all-namespaces", "--capacity", "1"],
                 ["prune", "--all-namespaces", "--min-age-days", "0"], ["export", "--all-namespaces"], ["export", "--archived", "--all-namespaces"],
                 ["runs"], ["check"]):  # fmt: skip
        done = cli(work, location, *args)
        tally.expect(done.returncode == 0 and "Traceback" not in done.stderr, f"{' '.join(args)} on extremes: exit {done.returncode}: {tail(done.stderr)}")
    problem = refused(cli(work, location, "list", f"--as-of={INT64}"), "as")
    tally.expect(problem is None, f"list --as-of=2**63: {problem}")


def probe_odd_time(tally: Tally, work: Path, backend: Backend, location: str) -> None:
    """Hybrid recall of "the last 999…9 days" (400 nines) through the CLI, MCP and LangGraph's
    search; "in March" as of the last 64-bit ms, the first ms after year 9999, 0001-01-15 and the
    first 64-bit ms: answered (exit 0, no tool error); --as-of one past 64 bits or in year 10000
    refused in one line naming --as-of."""
    from memstore.integrations.langgraph import MemstoreStore

    nines = f"what happened in the last {'9' * 400} days"
    done = cli(work, location, "recall", nines, "--mode", "hybrid")
    tally.expect(done.returncode == 0 and "Traceback" not in done.stderr, f"recall {nines[:30]}…: exit {done.returncode}: {tail(done.stderr)}")
    for moment in (str(INT64 - 1), "253402300800000", "0001-01-15", str(-INT64)):
        done = cli(work, location, "recall", "what did I do in March", "--mode", "hybrid", f"--as-of={moment}")
        tally.expect(done.returncode == 0 and "Traceback" not in done.stderr, f"recall in March --as-of={moment}: exit {done.returncode}: {tail(done.stderr)}")
    for moment in (str(INT64), "10000-01-01"):
        tally.trial(refused(cli(work, location, "recall", "in March", f"--as-of={moment}"), "--as-of"))
    init = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {},
             "clientInfo": {"name": "probe", "version": "0"}}}, {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": nines}}}]  # fmt: skip
    code, answers, stderr = mcp_exchange(work, location, [json.dumps(line).encode() for line in init], 2)
    answer = next((a for a in answers if a.get("id") == 2), {})
    tally.expect("result" in answer and not answer["result"].get("isError") and "Traceback" not in stderr,
                 f"MCP recall {nines[:30]}…: {tail(json.dumps(answer))} {tail(stderr)}")  # fmt: skip
    store = MemstoreStore(location)
    try:
        store.search(("default",), query=nines)
        tally.trial()
    except Exception as exc:  # what the finding saw: OverflowError
        tally.trial(f"MemstoreStore.search {nines[:30]}…: {type(exc).__name__}: {exc}")
    finally:
        store.close()


def probe_token_file(tally: Tally, work: Path, location: str) -> None:
    """`memstore web --token-file FILE` whose file is empty, starts with a blank line or is not
    UTF-8: one line naming --token-file, and no page is served (a page would keep running)."""
    for label, content in (("empty", b""), ("a blank first line", b"\n"), ("blanks, then the token", b"   \ns3cret\n"), ("not UTF-8", b"\xff\xfe\n")):
        path = work / f"token-{label.replace(' ', '-')}"
        path.write_bytes(content)
        try:
            done = cli(work, location, "web", "--token-file", str(path), "--listen", f"127.0.0.1:{free_port()}", timeout=30)
        except subprocess.TimeoutExpired:
            tally.trial(f"--token-file {label}: a page was served (behind a token of its own)")
            continue
        tally.trial(one_line_error(done, "--token-file", str(path)) and f"--token-file {label}: {one_line_error(done, '--token-file')}")


ODD_NAMESPACES = {"empty": "", "NUL": "a\x00b", "100,000 characters": "n" * 100_000, "right-to-left override": "\u202egnp.exe",
                  "RLM and LRM marks": "\u200fname\u200e", "a blank": " ", "a newline": "a\nb", "a terminal escape": "\x1b[31mred",
                  "a lone surrogate": "a\ud800b", "a dot (LangGraph's separator)": "a.b"}  # fmt: skip


def probe_odd_namespaces(tally: Tally, work: Path, backend: Backend, location: str) -> None:
    """Each odd namespace through `import`, `add -n`, `mcp --namespace` and a LangGraph put: either
    taken (and the memory lives under exactly that namespace) or refused with nothing written."""
    from memstore.integrations.langgraph import MemstoreStore

    def stored_under(text: str) -> set[str]:
        return {ns for ns, t in backend.rows(location, "SELECT namespace, text FROM memories") if t == text}

    mcp_lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                  "clientInfo": {"name": "probe", "version": "0"}}}, {"jsonrpc": "2.0", "method": "notifications/initialized"}]  # fmt: skip
    store = MemstoreStore(location)
    try:
        for n, (label, ns) in enumerate(ODD_NAMESPACES.items()):
            argv_ok = "\x00" not in ns and "\ud800" not in ns  # an argument cannot carry these
            path = work / f"ns-{n}.jsonl"
            path.write_text(json.dumps({"text": f"odd ns import {n}", "namespace": ns}) + "\n", encoding="utf-8")
            faces = [("import", lambda: cli(work, location, "import", str(path)), f"odd ns import {n}", (path.name, "namespace"))]
            if argv_ok:
                faces.append(("add -n", lambda: cli(work, location, "add", f"odd ns add {n}", "-n", ns), f"odd ns add {n}", ("namespace",)))
                call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "remember", "arguments": {"text": f"odd ns mcp {n}"}}}
                lines = [json.dumps(line).encode() for line in [*mcp_lines, call]]
                faces.append(("mcp --namespace", lambda: mcp_exchange(work, location, lines, 2, "--namespace", ns), f"odd ns mcp {n}", ("namespace",)))
            for face, run, text, names in faces:
                before = backend.fingerprint(location)
                done = run()
                taken = stored_under(text)
                if taken:
                    tally.expect(taken == {ns} and "Traceback" not in str(done), f"{face} {label}: stored under {[t[:20] for t in taken]}")
                else:
                    problem = refused(done, *names) if face != "mcp --namespace" else _mcp_refused(done)
                    tally.trial([problem and f"{face} {label}: {problem}", None if backend.fingerprint(location) == before else f"{face} {label}: written"])
            before = backend.fingerprint(location)
            try:
                store.put((ns,), "k", {"content": f"odd ns put {n}"})
                got = store.get((ns,), "k")
                other = store.get(tuple(ns.split(".")), "k") if "." in ns else None
                tally.expect(got is not None and got.namespace == (ns,) and other is None, f"LangGraph put {label}: read back {got} / {other}")
            except Exception as exc:  # refused: nothing may be written
                tally.expect(backend.fingerprint(location) == before, f"LangGraph put {label}: {type(exc).__name__} after writing")
    finally:
        store.close()
    tally.expect(check_clean(work, location) is None, f"check after: {check_clean(work, location)}")


def _mcp_refused(done: tuple[int, list[dict], str]) -> str | None:
    """A server given a namespace it cannot use refuses at start (exit 1, one line), or answers the
    remember with a tool error naming the namespace; no traceback either way."""
    code, answers, stderr = done
    if code == 1:
        lines = [line for line in stderr.splitlines() if line.strip()]
        return None if len(lines) == 1 and lines[0].startswith("Error: ") and "namespace" in lines[0] else f"exit 1: {tail(stderr)}"
    error = next((a["result"] for a in answers if a.get("id") == 2 and a.get("result", {}).get("isError")), None)
    named = error is not None and "namespace" in json.dumps(error)
    return None if named and "Traceback" not in stderr else f"exit {code}, remember answered {tail(json.dumps(answers[-1:]))}: {tail(stderr)}"


def probe_password(tally: Tally, work: Path, url: str | None) -> None:
    """A PostgreSQL URL with a password through every command, to a server that is up (`url`, where
    one is given; trust auth lets the password be anything) and to one that is down: the password
    never reaches stdout or stderr, whatever the command says."""
    from sqlalchemy.engine import make_url

    down = f"postgresql+psycopg://probe:{PASSWORD}@127.0.0.1:{free_port()}/nowhere"
    targets = [("down", down)] + ([("up", make_url(url).set(password=PASSWORD).render_as_string(hide_password=False))] if url else [])
    bad = write_jsonl(work / "bad-for-password.jsonl", [{"text": "x", "importance": 9}])
    commands = [["path"], ["init"], ["add", "x"], ["list"], ["show", "nope"], ["recall", "x"], ["check"], ["check", "--fix"], ["report"],
                ["maintain"], ["consolidate", "--capacity", "1"], ["export"], ["import", str(bad)], ["runs"], ["embeddings", "status"],
                ["backup", str(work / "pw-backup.db")], ["restore", "--run", "999"], ["history", "nope"], ["forget", "nope"], ["flags"],
                ["verify", "--checks", str(bad)], ["mcp"]]  # fmt: skip
    def run(where: str, location: str, args: list[str], how: str) -> str | None:
        if how == "--db":
            done = cli(work, location, *args, input="", timeout=120)
        else:
            done = cli(work, None, *args, input="", timeout=120, env_extra={"MEMSTORE_DB": location})
        output = done.stdout + done.stderr
        return None if PASSWORD not in output and "Traceback" not in output else f"{where}, {how}, {' '.join(args)}: {tail(output)}"

    # Every command by --db, a few by MEMSTORE_DB; four at a time (each is a process of its own).
    runs = [(where, location, args, how) for where, location in targets for args in commands
            for how in (("--db", "MEMSTORE_DB") if args[0] in ("path", "add", "check", "mcp") else ("--db",))]  # fmt: skip
    first = [r for r in runs if r[2] == ["init"]]  # the schema made before the others open the store at once
    with ThreadPoolExecutor(4) as pool:
        for problem in [run(*r) for r in first] + list(pool.map(lambda r: run(*r), [r for r in runs if r not in first])):
            tally.trial(problem)
    for where, location in targets:
        done = cli(work, None, "copy", location, str(work / f"pw-copy-{where}.db"))
        tally.expect(PASSWORD not in done.stdout + done.stderr, f"{where}, copy: {tail(done.stdout + done.stderr)}")


def probe_ttl_digits(tally: Tally, work: Path, backend: Backend, location: str) -> None:
    """A lifetime or a moment written in other scripts' digits (or otherwise not one) is refused,
    naming the option, and nothing is written: memstore reads ASCII digits only."""
    lifetimes = ["١٢s", "１２s", "۱۲h", "१२d", "²s", "1_2s", "12ｓ", "-5s", "0s", "nans", "infs", "1e3s", "12", "", "٫5h"]
    moments = ["١٧٩٠٠٠٠٠٠٠٠٠٠", "１７９０００００００００００", "2026-١٢-01", "2026-01-01T00:00:00+٠١:٠٠"]
    for option, values in (("--ttl", lifetimes), ("--expires-at", moments)):
        for value in values:
            before = backend.fingerprint(location)
            problem = refused(cli(work, location, "add", "odd lifetime", option, value), option)
            tally.trial([problem and f"{option} {value!r}: {problem}", None if backend.fingerprint(location) == before else f"{option} {value!r}: written"])


def probe_special_targets(tally_fifo: Tally, tally_device: Tally, work: Path, backend: Backend, location: str) -> None:
    """`export -o` and `backup --force` into a FIFO, a symlink and (as root) a character device made
    with os.mknod in a temp dir: the node stays what it was, and what was written reaches it."""
    live = len(backend.ids(location)[0])

    def into_fifo(args: list[str], check) -> str | None:
        fifo = work / f"fifo-{args[0]}"
        fifo.unlink(missing_ok=True)
        os.mkfifo(fifo, 0o600)
        got: list[bytes] = []
        reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
        reader.start()
        done = cli(work, location, *args, str(fifo), timeout=120)
        reader.join(timeout=60)
        if done.returncode or reader.is_alive():
            if reader.is_alive():  # unblock the reader
                with open(fifo, "wb"):
                    pass
            return f"{' '.join(args)} FIFO: exit {done.returncode}: {tail(done.stderr)}"
        kept = stat.S_ISFIFO(fifo.lstat().st_mode)
        return None if kept and check(got[0]) else f"{' '.join(args)} FIFO: still a FIFO {kept}, {len(got[0])} bytes read"

    export_ok = lambda data: len([line for line in data.decode().splitlines() if json.loads(line)]) == live  # noqa: E731
    backup_ok = lambda data: data.startswith(b"SQLite format 3\x00")  # noqa: E731
    tally_fifo.trial(into_fifo(["export", "--all-namespaces", "-o"], export_ok))
    tally_fifo.trial(into_fifo(["backup", "--force"], backup_ok))
    link, target = work / "link.jsonl", work / "target.jsonl"
    target.write_text("old\n")
    link.unlink(missing_ok=True)
    link.symlink_to(target)
    done = cli(work, location, "export", "--all-namespaces", "-o", str(link))
    tally_fifo.expect(done.returncode == 0 and link.is_symlink() and target.read_text() != "old\n",
                      f"export -o a symlink: exit {done.returncode}, still a link {link.is_symlink()}: {tail(done.stderr)}")  # fmt: skip
    if os.geteuid() != 0:
        tally_device.skipped = "skipped: not root"
        print("skipped: not root (export -o / backup --force into a device node made with os.mknod)")
        return
    for args in (["export", "--all-namespaces", "-o"], ["backup", "--force"]):
        node = work / f"null-{args[0]}"
        node.unlink(missing_ok=True)
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a /dev/null of our own
        done = cli(work, location, *args, str(node))
        mode = node.lstat()
        tally_device.expect(done.returncode == 0 and stat.S_ISCHR(mode.st_mode) and mode.st_rdev == os.makedev(1, 3),
                            f"{' '.join(args)} a device: exit {done.returncode}, now {stat.filemode(mode.st_mode)}: {tail(done.stderr)}")  # fmt: skip
