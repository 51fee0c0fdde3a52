"""The integrity check (`memstore check`): is the store whole, and does it follow memstore's own rules?

Finds what hand edits, crashes or an old tool can leave behind: a failed integrity check, rows whose
stored `norm_key` is not `normalize_key(text)` (say, text edited in the sqlite3 shell), ids live and
archived at once, a schema not at head, index drift, a full-text index or live counts out of step,
WAL switched off, a store file that other local users can read, a vectors folder beside it that is
not its user's own 0700 folder of private files (`memstore.vectors.vector_file`), a vector that is
not the model's (the wrong length, a NaN or an infinity), a vector index out of step with the live
memories' vectors.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from sqlalchemy import JSON, Connection, Engine, Integer, bindparam, delete, select, update
from sqlalchemy.exc import OperationalError

from .db import chunked, read_transaction, rows_in, write_transaction
from .errors import StoreBusyError
from .files import PRIVATE_FILE_MODE, folder_problem, remove_folder, shared_with_others
from .live_counts import live_counts_by_namespace, recount_live
from .migrate import SCHEMA_HEAD, current_revision, index_drift
from .schema import FTS_TABLE, LIVE_COUNTS_TABLE, LIVE_COUNTS_TRIGGERS, SEQ_GUARD_TRIGGER, memories, memory_archive, memory_vectors
from .normalize import normalize_key
from .vectors import index as vector_index
from .vectors.storage import EmbeddingModel, model_of
from .vectors.vector_file import directory_of

FTS_TRIGGERS = tuple(f"{FTS_TABLE}_after_{event}" for event in ("insert", "delete", "update"))
# Rows read per round trip when recomputing keys.
BATCH = 5_000


@dataclass
class Finding:
    check: str
    detail: str
    fixed: bool = False


@dataclass
class IntegrityReport:
    findings: list[Finding] = field(default_factory=list)
    checks_run: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(finding.fixed for finding in self.findings)

    def to_dict(self) -> dict[str, object]:
        return {"ok": self.ok, "checks": self.checks_run, "findings": [finding.__dict__ for finding in self.findings]}


def _stale_keys(conn: Connection) -> list[tuple[str, str, str]]:
    """(table, id, correct key) for every row whose stored norm_key differs from normalize_key(text)."""
    wrong = []
    for table in (memories, memory_archive):
        rows = conn.execution_options(yield_per=BATCH).execute(
            select(table.c.id, table.c.text, table.c.norm_key).order_by(table.c.id)
        )
        for row_id, row_text, stored_key in rows:
            key = normalize_key(row_text)
            if key != stored_key:
                wrong.append((table.name, row_id, key))
    return wrong


def _value_types(conn: Connection) -> list[Finding]:
    """Rows whose values SQLite's loose typing let a hand edit in the shell break: an integer
    column holding text or a real (it would sort and rank wrongly: SQLite orders text above every
    number), or `meta` that is not JSON (every read of that row would fail). PostgreSQL's columns
    refuse both. `pinned` is not among them: the rules read any value but 0 as pinned."""
    findings = []
    for table in (memories, memory_archive):
        for column in table.columns:
            if isinstance(column.type, Integer):
                wanted = "('integer', 'null')" if column.nullable else "('integer')"
                condition = f"typeof({column.name}) NOT IN {wanted}"
            elif isinstance(column.type, JSON):
                condition = f"{column.name} IS NOT NULL AND NOT json_valid({column.name})"
            else:
                continue
            bad = conn.exec_driver_sql(f"SELECT id, typeof({column.name}) FROM {table.name} WHERE {condition} ORDER BY id").all()
            findings += [
                Finding("values", f"{table.name} {row_id!r}: {column.name} holds " + ("text that is not JSON" if kind == "text" and isinstance(column.type, JSON) else f"a {kind}") + "; correct it in the shell")
                for row_id, kind in bad
            ]  # fmt: skip
    return findings


def _sqlite_checks(conn: Connection, report: IntegrityReport) -> None:
    report.checks_run += ["integrity_check", "journal_mode", "fts", "live_counts", "values"]
    report.findings += _value_types(conn)
    problems = [row[0] for row in conn.exec_driver_sql("PRAGMA integrity_check").fetchall()]
    if problems != ["ok"]:
        report.findings += [Finding("integrity_check", problem) for problem in problems]
    mode = conn.exec_driver_sql("PRAGMA journal_mode").scalar()
    if mode != "wal":
        report.findings.append(Finding("journal_mode", f"journal_mode is {mode}, not wal"))
    triggers = set(conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'trigger'").scalars())
    for missing in sorted(set(FTS_TRIGGERS) - triggers):
        report.findings.append(Finding("fts", f"trigger {missing} is missing: the recall index no longer follows writes"))
    if SEQ_GUARD_TRIGGER not in triggers:
        report.findings.append(Finding("schema", f"trigger {SEQ_GUARD_TRIGGER} is missing: memories.seq can be changed"))
    for missing in sorted(set(LIVE_COUNTS_TRIGGERS) - triggers):
        report.findings.append(Finding("live_counts", f"trigger {missing} is missing: {LIVE_COUNTS_TABLE} no longer follows writes"))
    kept = {row[0]: tuple(row[1:]) for row in conn.exec_driver_sql(f"SELECT namespace, unpinned, pinned FROM {LIVE_COUNTS_TABLE}")}
    actual = live_counts_by_namespace(conn)
    for namespace in sorted(set(kept) | set(actual)):
        stored, real = kept.get(namespace, (0, 0)), actual.get(namespace, (0, 0))
        if stored != real:
            report.findings.append(
                Finding("live_counts", f"namespace {namespace!r}: {LIVE_COUNTS_TABLE} says {stored[0]} unpinned and "
                        f"{stored[1]} pinned, the rows say {real[0]} and {real[1]}")
            )  # fmt: skip


def _fts_integrity(engine: Engine, report: IntegrityReport) -> None:
    """FTS5's integrity check is an INSERT, so SQLite runs it as a write: in a transaction of its
    own that waits its turn behind other writers. Inside the checks' read snapshot, a commit made
    by another process since the snapshot began made it fail as if the index were damaged."""
    try:
        with write_transaction(engine) as conn:
            # rank = 1 also compares the index with the rows of `memories` it indexes.
            conn.exec_driver_sql(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('integrity-check', 1)")
    except StoreBusyError:
        raise
    except Exception as exc:  # FTS5 reports a damaged or out-of-step index as an error
        if isinstance(exc, OperationalError) and "readonly" in str(exc.orig):
            report.checks_run.remove("fts")  # a read-only file cannot be asked; the report says so
            return
        report.findings.append(Finding("fts", f"the recall index is out of step with memories ({exc.__class__.__name__})"))


def _unusable_vectors(conn: Connection, model: EmbeddingModel) -> list[tuple[str, int]]:
    """(memory id, bytes) of each vector of `model`, the memory live or archived (a restore brings it
    back), that is not `vector_index.usable`: a hand edit cut it short, lengthened it, or wrote a
    NaN or an infinity into it. Search skips such a vector; the index never takes it."""
    rows = conn.execution_options(yield_per=BATCH).execute(
        select(memory_vectors.c.memory_id, memory_vectors.c.model, memory_vectors.c.vector).order_by(memory_vectors.c.memory_id)
    )  # the model compared here: every vector is read anyway, in the table's own order
    return [(memory_id, len(blob)) for memory_id, name, blob in rows if name == model.name and not vector_index.usable(blob, model.dim)]


def _vector_checks(conn: Connection, report: IntegrityReport) -> tuple[EmbeddingModel | None, list[str], bool]:
    """Findings on the vectors and the vector index of a store with embeddings; returns the store's
    model (None: embeddings never enabled), the memories whose vectors are not usable, and whether
    this connection can rebuild the index (sqlite-vec or pgvector here)."""
    model = model_of(conn)
    if model is None:
        return None, [], False
    report.checks_run += ["vectors", "vector_index"]
    unusable = _unusable_vectors(conn, model)
    size = 4 * model.dim
    report.findings += [
        Finding("vectors", f"{memory_vectors.name} {memory_id!r}: "
                + (f"holds {found} bytes, not {model.dim} float32 values ({size} bytes)" if found != size
                   else "holds a value that is not a finite number (NaN or infinite)")
                + "; --fix sets it aside for `memstore embeddings sync`")
        for memory_id, found in unusable
    ]  # fmt: skip
    broken = [memory_id for memory_id, _ in unusable]
    if vector_index.backend(conn) is None:
        return model, broken, False  # search runs in NumPy here; `embeddings status` says why
    state = vector_index.state(conn)
    if state != model.name:
        what = "out of step (changed where the vector extension was missing)" if state == vector_index.STALE else "not built"
        report.findings.append(Finding("vector_index", f"{vector_index.INDEX_TABLE} is {what}; --fix builds it"))
        return model, broken, True
    extra, missing = vector_index.out_of_step(conn, model.name, broken)
    if extra or missing:
        report.findings.append(
            Finding("vector_index", f"{vector_index.INDEX_TABLE} holds {len(extra)} memories that are not live and lacks "
                    f"{len(missing)} live ones with a vector; --fix rebuilds it")
        )  # fmt: skip
    return model, broken, True


def _set_aside(conn: Connection, model: EmbeddingModel, ids: list[str]) -> None:
    """Delete the vectors of `ids` that are still not usable (a sync may have replaced one since the
    check read it): their memories, never touched, are pending for `embeddings sync` again."""
    query = select(memory_vectors.c.memory_id, memory_vectors.c.model, memory_vectors.c.vector)
    broken = [row.memory_id for row in rows_in(conn, query, memory_vectors.c.memory_id, ids)
              if row.model == model.name and not vector_index.usable(row.vector, model.dim)]  # fmt: skip
    for chunk in chunked(broken):
        conn.execute(delete(memory_vectors).where(memory_vectors.c.memory_id.in_(chunk)))
    vector_index.remove(conn, broken)  # the index may hold the vector a hand edit replaced


def _shared_files(engine: Engine) -> list[tuple[str, int]]:
    """(path, mode) of the store's files (the database, -wal, -shm) that group or others can access."""
    database = engine.url.database
    found = []
    for path in (database, f"{database}-wal", f"{database}-shm"):
        if os.path.exists(path) and (mode := shared_with_others(path)) is not None:
            found.append((path, mode))
    return found


def _vectors_folder(engine: Engine, fix: bool) -> list[Finding]:
    """A finding when the vector files' folder beside a SQLite store is not its user's own 0700
    folder of private files; with `fix` it is removed (derived data: the next search that reads
    vector files makes it again), unless it is not a folder (nothing of memstore's to remove)."""
    database = engine.url.database
    if database in (None, "", ":memory:"):
        return []
    folder = directory_of(database)
    problem = folder_problem(folder)
    if problem is None:
        return []
    if problem == "is not a folder":
        return [Finding("permissions", f"{folder} is not a folder: the vector files cannot be kept there and searches read "
                        "the store instead; move it away")]  # fmt: skip
    finding = Finding("permissions", f"{folder} {problem}: another local user could read or change the vectors searches "
                      "read; --fix removes it (the next search makes it again, the owner's 0700 folder)")  # fmt: skip
    if fix:
        try:
            remove_folder(folder)
            finding.fixed = True
        except OSError as exc:
            finding.detail += f" (--fix could not: {exc.strerror or exc})"
    return [finding]


def check_integrity(engine: Engine, *, fix: bool = False) -> IntegrityReport:
    """Run every check; with `fix`, recompute wrong keys and rebuild the recall index in one transaction."""
    report = IntegrityReport()
    with read_transaction(engine) as conn:
        report.checks_run += ["schema", "indexes", "ids", "norm_key"]
        revision, head = current_revision(conn), SCHEMA_HEAD
        if revision != head:
            report.findings.append(Finding("schema", f"schema revision is {revision}, head is {head}"))
        report.findings += [Finding("indexes", drift) for drift in index_drift(conn)]
        both = conn.execute(
            select(memories.c.id).where(memories.c.id.in_(select(memory_archive.c.id))).order_by(memories.c.id)
        ).scalars().all()
        report.findings += [Finding("ids", f"{row_id!r} is both live and archived") for row_id in both]
        wrong_keys = _stale_keys(conn)
        if conn.dialect.name == "sqlite":
            _sqlite_checks(conn, report)
        model, broken_vectors, rebuildable = _vector_checks(conn, report)
    if engine.dialect.name == "sqlite":
        _fts_integrity(engine, report)
    shared = _shared_files(engine) if engine.dialect.name == "sqlite" else []
    if engine.dialect.name == "sqlite":
        report.checks_run.append("permissions")
    permission_findings = [
        Finding("permissions", f"{path} is mode {mode:04o}: other local users can open it; --fix makes it 0600")
        for path, mode in shared
    ]
    report.findings += permission_findings
    if fix:
        for (path, _), finding in zip(shared, permission_findings):
            os.chmod(path, PRIVATE_FILE_MODE)
            finding.fixed = True
    if engine.dialect.name == "sqlite":
        report.findings += _vectors_folder(engine, fix)
    key_findings = [Finding("norm_key", f"{table} {row_id!r}: norm_key should be {key!r}") for table, row_id, key in wrong_keys]
    report.findings += key_findings
    fts_findings = [f for f in report.findings if f.check == "fts" and "trigger" not in f.detail]
    count_findings = [f for f in report.findings if f.check == "live_counts" and "trigger" not in f.detail]
    vector_findings = [f for f in report.findings if f.check == "vectors"]
    index_findings = [f for f in report.findings if f.check == "vector_index"] if rebuildable else []
    if fix and (key_findings or fts_findings or count_findings or vector_findings or index_findings):
        with write_transaction(engine) as conn:
            for table in (memories, memory_archive):
                rows = [{"b_id": row_id, "b_key": key} for name, row_id, key in wrong_keys if name == table.name]
                if rows:
                    conn.execute(update(table).where(table.c.id == bindparam("b_id")).values(norm_key=bindparam("b_key")), rows)
            if fts_findings:
                conn.exec_driver_sql(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")
            if count_findings:
                recount_live(conn)
            if vector_findings:
                _set_aside(conn, model, broken_vectors)
            if index_findings:
                vector_index.rebuild(conn, model.name, model.dim)
        for finding in key_findings + fts_findings + count_findings + vector_findings + index_findings:
            finding.fixed = True
    return report


# The name this class had before "check" named one thing each.
CheckReport = IntegrityReport
