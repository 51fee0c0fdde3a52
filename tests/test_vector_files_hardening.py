"""Vector files others can touch, or that a crash or a hand edit left odd (issue 40, findings 1 and 5).

1. A store in a world-writable directory: another local user makes `STORE-vectors/` (0777) first and
   plants `<namespace hash>.f32` as a link to one of the owner's files. The vectors folder must be
   the owner's 0700 folder or be rebuilt: never written through a link, never trusted when another
   user can write it, reported by `check`, repaired by `check --fix`.
2. A missing file (a deleted folder, an import with vectors) is rebuilt by the next search that
   needs it, a recall that counts itself too; a killed rewrite's partial files are cleaned and never
   in the way of a later process of the same id; an odd header, lock or folder never fails a
   search; NaN rows and forged headers are found and the file rebuilt.

The vector files are the path of a Python whose sqlite3 cannot load sqlite-vec (the test command's
main Python); sqlite-vec is taken away from memstore's connections here all the same. Another user
is played by chown to uid 65534 (root only: skipped otherwise).
"""

from __future__ import annotations

import io
import json
import os
import random
import stat
from pathlib import Path

import numpy as np
import pytest

import memstore.db
from memstore import MemoryStore
from memstore.db import read_transaction, write_transaction
from memstore.records import now_ms
from memstore.vectors import storage, vector_file
from memstore.vectors.embedder import to_blob
from memstore.vectors.search import search

from .handmade import store_handmade_vectors
from .test_vector_file import NAMESPACES, assert_same_answers, embed_more, records, unit

OTHER_UID = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="playing another user (chown) needs root")


@pytest.fixture(autouse=True)
def no_sqlite_vec(monkeypatch):
    monkeypatch.setattr(memstore.db, "sqlite_vec_path", lambda: None)


@pytest.fixture
def store(db_path):
    with MemoryStore(db_path) as opened:
        opened.add_many(records(0, 90))
        yield opened


def embed_all(store: MemoryStore, seed: int = 5) -> dict[str, list[float]]:
    rng = random.Random(seed)
    given = {r["id"]: unit(rng) for r in records(0, 90)}
    store_handmade_vectors(store, given)
    return given


def folder_of(db_path) -> Path:
    return vector_file.directory_of(str(db_path))


def file_of(db_path, namespace: str, suffix: str) -> Path:
    return folder_of(db_path) / f"{vector_file.file_stem(namespace)}{suffix}"


def header(db_path, namespace: str) -> dict:
    return json.loads(file_of(db_path, namespace, ".json").read_text(encoding="utf-8"))


def store_counters(store: MemoryStore) -> tuple[int, int, int]:
    with read_transaction(store.engine) as conn:
        found = vector_file.counters_of(conn, storage.model_of(conn))
    return found.version, found.epoch, found.newest


def assert_the_owners_own(folder: Path) -> None:
    found = os.lstat(folder)
    assert stat.S_ISDIR(found.st_mode) and found.st_uid == os.geteuid() and stat.S_IMODE(found.st_mode) == 0o700
    for entry in folder.iterdir():
        held = os.lstat(entry)
        assert stat.S_ISREG(held.st_mode) and held.st_uid == os.geteuid() and stat.S_IMODE(held.st_mode) == 0o600, entry


def searched_in_a_write_transaction(store: MemoryStore, seed: int) -> None:
    """What a recall that counts itself does: the search inside a write transaction."""
    rng = random.Random(seed)
    query = np.array(unit(rng), dtype=np.float32)
    with read_transaction(store.engine) as conn:
        expected = search(conn, storage.model_of(conn), query, "ns0", 5, now=now_ms(), path="numpy")
    with write_transaction(store.engine) as conn:
        assert search(conn, storage.model_of(conn), query, "ns0", 5, now=now_ms(), path="vector-file") == expected


# ---------------------------------------------------------------------------------------------
# 1. A vectors folder someone else made
# ---------------------------------------------------------------------------------------------


def plant(folder: Path, target: Path) -> None:
    """Each namespace's files as links to the owner's `target`."""
    for namespace in NAMESPACES:
        for suffix in (".f32", ".json", ".lock"):
            os.symlink(target, folder / f"{vector_file.file_stem(namespace)}{suffix}")


@pytest.mark.parametrize("whose", [pytest.param("another user's", marks=as_root), "the owner's, world-writable"])
def test_a_vectors_folder_others_could_write_is_rebuilt_and_never_written_through(store, db_path, tmp_path, whose):
    precious = tmp_path / "precious.txt"
    precious.write_text("the owner's own file", encoding="utf-8")
    folder = folder_of(db_path)
    folder.mkdir()
    os.chmod(folder, 0o777)
    if whose == "another user's":
        os.chown(folder, OTHER_UID, OTHER_UID)
    plant(folder, precious)
    embed_all(store)
    vector_file.bring_up_to_date(store.engine, NAMESPACES)  # what `embeddings sync` does after its commit
    assert_same_answers(store, seed=1)
    assert precious.read_text(encoding="utf-8") == "the owner's own file"
    assert_the_owners_own(folder)
    assert len(list(folder.glob("*.json"))) == 3


@pytest.mark.parametrize("kind", [pytest.param("another user's", marks=as_root), "world-writable", "readable by others",
                                  "a link to a folder", "holding a link"])  # fmt: skip
def test_check_reports_a_vectors_folder_that_is_not_the_owners_and_fix_rebuilds_it(store, db_path, tmp_path, kind):
    embed_all(store)
    folder = folder_of(db_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if kind == "a link to a folder":
        os.symlink(elsewhere, folder)
    else:
        folder.mkdir(mode=0o700)
        os.chmod(folder, 0o755 if kind == "readable by others" else 0o777 if kind != "holding a link" else 0o700)
        if kind == "another user's":
            os.chown(folder, OTHER_UID, OTHER_UID)
        if kind in ("another user's", "holding a link"):
            plant(folder, elsewhere / "target")
    report = store.check()
    found = [f for f in report.findings if f.check == "permissions"]
    assert len(found) == 1 and str(folder) in found[0].detail and not report.ok, report.findings
    fixed = store.check(fix=True)
    assert fixed.ok and [f.fixed for f in fixed.findings if f.check == "permissions"] == [True]
    assert store.check().findings == []
    assert_same_answers(store, seed=1)
    assert_the_owners_own(folder)
    assert list(elsewhere.iterdir()) == []  # nothing written where a link pointed


def test_a_vectors_folder_that_is_a_file_is_reported_and_searches_answer_from_the_store(store, db_path):
    embed_all(store)
    folder_of(db_path).write_text("someone's notes", encoding="utf-8")
    assert_same_answers(store, seed=1)
    searched_in_a_write_transaction(store, seed=2)
    report = store.check(fix=True)
    assert [f.fixed for f in report.findings if f.check == "permissions"] == [False] and not report.ok
    assert folder_of(db_path).read_text(encoding="utf-8") == "someone's notes"


# ---------------------------------------------------------------------------------------------
# 5. Vector files that never heal, or break recall
# ---------------------------------------------------------------------------------------------


def test_a_missing_file_is_rebuilt_by_a_search_inside_a_write_transaction(store, db_path):
    embed_all(store)
    assert_same_answers(store, seed=1)
    for path in folder_of(db_path).iterdir():
        path.unlink()
    searched_in_a_write_transaction(store, seed=2)
    assert header(db_path, "ns0")["version"] == store_counters(store)[0]


def test_a_write_transaction_that_wrote_vectors_searches_the_store_and_leaves_the_files(store, db_path):
    embed_all(store)
    assert_same_answers(store, seed=1)
    before = {path.name: path.read_bytes() for path in folder_of(db_path).iterdir()}
    rng = random.Random(3)
    query = unit(rng)
    with pytest.raises(RuntimeError), write_transaction(store.engine) as conn:
        model = storage.model_of(conn)
        storage.store_vectors(conn, model, ["m0000"], [to_blob(query)], 9000)
        hits = search(conn, model, np.array(query, dtype=np.float32), "ns0", 1, now=now_ms(), path="vector-file")
        assert hits[0][0] == "m0000"  # its own, uncommitted vector
        raise RuntimeError("rolled back")
    assert {path.name: path.read_bytes() for path in folder_of(db_path).iterdir()} == before


def test_a_recall_that_counts_itself_rebuilds_the_file_after_an_import_with_vectors(tmp_path, model_dir):
    with MemoryStore(tmp_path / "source.db") as source:
        source.enable_embeddings(model_dir)
        source.add_many([{"id": f"f{i}", "text": text, "namespace": "alice"} for i, text in enumerate(
            ["The user lives in Porto.", "The user's dog is called Rex.", "The user works as a nurse."])])  # fmt: skip
        source.sync_embeddings()
        exported = io.StringIO()
        source.export(exported, "alice", with_vectors=True)
    db_path = tmp_path / "copy.db"
    with MemoryStore(db_path) as copy:
        copy.enable_embeddings(model_dir)
        copy.import_from("memstore", io.StringIO(exported.getvalue()), name="export.jsonl")
        assert copy.embedding_status()["pending"] == 0
        assert not file_of(db_path, "alice", ".json").exists()
        rows = copy.recall("where does the user live", k=1, namespace="alice", mode="semantic")  # touches
        assert [row["id"] for row in rows] == ["f0"] and rows[0]["recall_count"] == 1
        assert header(db_path, "alice")["version"] == store_counters(copy)[0]


def test_a_killed_rewrites_partial_files_are_cleaned_and_never_in_the_way(store, db_path):
    embed_all(store)
    assert_same_answers(store, seed=1)
    rows = file_of(db_path, "ns0", ".f32")
    name = rows.name.removesuffix(".f32")
    leftovers = [folder_of(db_path) / f".{name}.f32.partial-{os.getpid()}", folder_of(db_path) / f".{name}.json.partial-{os.getpid()}",
                 folder_of(db_path) / f".{name}.f32.partial-{os.getpid() + 1}-0a1b2c3d"]  # fmt: skip
    for leftover in leftovers:  # a full-size copy, as a process of this id killed mid-rewrite left it
        leftover.write_bytes(rows.read_bytes())
    file_of(db_path, "ns0", ".json").unlink()  # a rewrite removes the header first
    embed_more(store, {"m0000": unit(random.Random(4))}, now=5000)
    assert vector_file.bring_up_to_date(store.engine, ["ns0"]) == 1  # what `embeddings sync` runs after its commit
    assert not any(leftover.exists() for leftover in leftovers)
    assert header(db_path, "ns0")["version"] == store_counters(store)[0]
    assert_same_answers(store, seed=2)


def deep_json(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")


def retyped(**changes):
    def damage(path: Path) -> None:
        meta = json.loads(path.read_text(encoding="utf-8"))
        meta.update({key: change(meta[key]) for key, change in changes.items()})
        path.write_text(json.dumps(meta), encoding="utf-8")

    return damage


def lock_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def dangling(path: Path) -> None:
    path.unlink()
    os.symlink(path.with_name("nowhere"), path)


HEADERS = {
    "counters as text": (".json", retyped(epoch=str, version=str)),
    "counters as floats": (".json", retyped(dim=float, format=float)),
    "ids as numbers": (".json", retyped(ids=lambda ids: list(range(len(ids))))),
    "ids repeated": (".json", retyped(ids=lambda ids: [ids[0]] * len(ids))),
    "JSON 100,000 deep": (".json", deep_json),
    "a header that is a list": (".json", lambda path: path.write_text("[1, 2]", encoding="utf-8")),
    "a lock that is a folder": (".lock", lock_folder),
    "a lock that is a dangling link": (".lock", dangling),
    "rows that are a folder": (".f32", lock_folder),
    "rows that are a dangling link": (".f32", dangling),
}


@pytest.mark.parametrize("kind", sorted(HEADERS))
def test_an_odd_header_lock_or_rows_never_fails_a_search_and_is_rebuilt(store, db_path, kind):
    embed_all(store)
    assert_same_answers(store, seed=1)
    suffix, damage = HEADERS[kind]
    for namespace in NAMESPACES:
        damage(file_of(db_path, namespace, suffix))
    searched_in_a_write_transaction(store, seed=2)
    assert_same_answers(store, seed=3)
    assert_the_owners_own(folder_of(db_path))
    assert all(header(db_path, namespace)["version"] == store_counters(store)[0] for namespace in NAMESPACES)


def test_a_vectors_folder_that_is_a_dangling_link_is_made_again(store, db_path):
    embed_all(store)
    os.symlink(db_path.parent / "nowhere", folder_of(db_path))
    searched_in_a_write_transaction(store, seed=2)
    assert_same_answers(store, seed=1)
    assert_the_owners_own(folder_of(db_path))
    assert not (db_path.parent / "nowhere").exists()


def query_for(given: dict[str, list[float]], memory_id: str) -> tuple[str, list[float]]:
    return ("ns" + str(int(memory_id[1:]) % 3), given[memory_id])


def top_ids(store: MemoryStore, queries, k: int = 3) -> tuple[list, list]:
    with read_transaction(store.engine) as conn:
        model = storage.model_of(conn)
        from_files = [[i for i, _ in search(conn, model, np.array(q, dtype=np.float32), ns, k, now=now_ms(), path="vector-file")] for ns, q in queries]
        in_store = [[i for i, _ in search(conn, model, np.array(q, dtype=np.float32), ns, k, now=now_ms(), path="numpy")] for ns, q in queries]
    return from_files, in_store


def test_a_nan_row_is_found_and_the_file_rebuilt(store, db_path):
    given = embed_all(store)
    assert_same_answers(store, seed=1)
    ids = header(db_path, "ns0")["ids"]
    rows = file_of(db_path, "ns0", ".f32")
    with open(rows, "r+b") as out:
        out.write(np.full(vector_file_dim(store), np.nan, dtype="<f4").tobytes())  # the first row
    from_files, in_store = top_ids(store, [query_for(given, ids[0])])
    assert from_files == in_store and in_store[0][0] == ids[0]
    assert np.isfinite(np.fromfile(rows, dtype="<f4")).all()


def vector_file_dim(store: MemoryStore) -> int:
    with read_transaction(store.engine) as conn:
        return storage.model_of(conn).dim


def test_a_header_ahead_of_the_store_is_rebuilt_and_new_vectors_are_found(store, db_path):
    embed_all(store)
    assert_same_answers(store, seed=1)
    path = file_of(db_path, "ns0", ".json")
    retyped(version=lambda v: v + 10**12, newest=lambda v: v + 10**12)(path)  # forged: never behind again
    store.add_many(records(90, 30))
    fresh = {r["id"]: unit(random.Random(int(r["id"][1:]))) for r in records(90, 30)}
    embed_more(store, fresh, now=5000)
    queries = [query_for(fresh, memory_id) for memory_id in sorted(fresh) if int(memory_id[1:]) % 3 == 0]
    from_files, in_store = top_ids(store, queries)
    assert from_files == in_store and [found[0] for found in in_store] == [memory_id for memory_id in sorted(fresh) if int(memory_id[1:]) % 3 == 0]
    assert header(db_path, "ns0")["version"] == store_counters(store)[0]


def test_ids_shuffled_in_a_header_are_found_and_the_file_rebuilt(store, db_path):
    given = embed_all(store)
    assert_same_answers(store, seed=1)
    path = file_of(db_path, "ns0", ".json")
    ids = header(db_path, "ns0")["ids"]
    retyped(ids=lambda ids: ids[::-1])(path)  # every row named by another id, the counters current
    queries = [query_for(given, memory_id) for memory_id in ids[:10]]
    from_files, in_store = top_ids(store, queries)
    assert from_files == in_store and [found[0] for found in in_store] == ids[:10]
    assert header(db_path, "ns0")["ids"] == ids
