"""The probe's vector files (issue 40, findings 1 and 5; the probe runs them, see its docstring).

Where this Python's sqlite3 cannot load sqlite-vec, search reads vector files kept in
`STORE-vectors/` beside a SQLite store (memstore.vectors.vector_file). Here that folder is made by
"another user" (chown to uid 65534, as root) or by the owner open to all, with a namespace's
files planted as links to one of the owner's files; or that namespace's files are deleted, left
half-written by a killed rewrite, or edited into odd shapes. Then the real `memstore recall` (which counts
itself: a write transaction), `embeddings sync` and `check`. What must hold:

- the file a link named is unchanged, and the folder is the owner's 0700 folder of 0600 files
  afterwards (a folder that is a regular file is left alone, and `check` names it);
- `check` names a folder that is not the owner's before anything runs, and `check --fix` repairs it;
- every recall exits 0, without a traceback, with the ids an intact store answers;
- a missing or damaged file is rebuilt by that recall (its header current, its rows finite), and
  a killed rewrite's partial files are gone;
- `check` is clean afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

from .common import Tally, cli, ok_run, tail

QUERY = "what does the user like"
OTHER_UID = 65534
# Of the prepared stores' two namespaces (common.records), the one whose files are damaged and
# recalled (one recall per try keeps the probe quick; the other namespace's files stay intact).
NAMESPACES = ("default",)


def _folder(location: str) -> Path:
    return Path(location + "-vectors")


def _recalled(work: Path, location: str, namespace: str) -> tuple[list[str] | None, str | None]:
    done = cli(work, location, "recall", QUERY, "-k", "5", "-n", namespace, "--mode", "semantic", "--json")
    problem = ok_run(done, f"recall -n {namespace}")
    if problem:
        return None, problem
    try:
        return [row["id"] for row in json.loads(done.stdout)], None
    except (ValueError, KeyError, TypeError):
        return None, f"recall -n {namespace}: not the JSON rows: {tail(done.stdout)}"


def _owners_own(folder: Path) -> str | None:
    found = os.lstat(folder)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid() or stat.S_IMODE(found.st_mode) != 0o700:
        return f"{folder.name}: not the owner's 0700 folder (mode {stat.S_IMODE(found.st_mode):04o}, uid {found.st_uid})"
    for entry in folder.iterdir():
        held = os.lstat(entry)
        if not stat.S_ISREG(held.st_mode) or held.st_uid != os.geteuid() or stat.S_IMODE(held.st_mode) != 0o600:
            return f"{entry.name}: not the owner's 0600 file"
    return None


def _check(work: Path, location: str, *args: str) -> tuple[int, str]:
    done = cli(work, location, "check", *args)
    return done.returncode, done.stdout + done.stderr


class Copies:
    """Copies of the synced store with its vector files written (by a first recall of each
    namespace, whose answers every copy must give)."""

    def __init__(self, work: Path, clone) -> None:
        from memstore.vectors.vector_file import file_stem

        self.work, self.clone = work, clone
        self.names = {namespace: file_stem(namespace) for namespace in NAMESPACES}
        self.primed = clone("vectors-primed")
        found = {namespace: _recalled(work, self.primed, namespace) for namespace in NAMESPACES}
        problems = [problem for _, problem in found.values() if problem]
        if problems:
            raise RuntimeError("; ".join(problems))
        self.expected = {namespace: ids for namespace, (ids, _) in found.items()}
        done = cli(work, self.primed, "embeddings", "status", "--json")
        self.searches_files = json.loads(done.stdout).get("search") == "vector-file" if done.returncode == 0 else False

    def new(self, label: str) -> tuple[str, Path]:
        location = self.clone(label, self.primed)
        shutil.copytree(_folder(self.primed), _folder(location))
        return location, _folder(location)

    def recalls(self, location: str, kind: str) -> list[str | None]:
        problems: list[str | None] = []
        for namespace in NAMESPACES:
            got, problem = _recalled(self.work, location, namespace)
            problems.append(problem and f"{kind}: {problem}" or (None if got == self.expected[namespace]
                            else f"{kind}: recall -n {namespace}: {got} != {self.expected[namespace]}"))  # fmt: skip
        return problems


def probe_vectors_folder(tally: Tally, work: Path, clone) -> None:
    """Finding 1: a folder someone else made (or the owner left open), files planted as links."""
    copies = Copies(work, clone)
    if not copies.searches_files:
        tally.skipped = "this Python's sqlite3 keeps the vector index in the store: no vector files"
        return
    kinds = (["another user's"] if os.geteuid() == 0 else []) + ["the owner's, 0777", "a link to a folder"]
    for kind in kinds:
        for then in ("recall", "check --fix"):
            location, folder = copies.new("folder")
            shutil.rmtree(folder)
            precious = work / f"precious-{Path(location).stem}.txt"
            precious.write_text("the owner's own file\n")
            elsewhere = work / f"elsewhere-{Path(location).stem}"
            elsewhere.mkdir()
            if kind == "a link to a folder":
                os.symlink(elsewhere, folder)
            else:
                folder.mkdir()
                os.chmod(folder, 0o777)
                for name in copies.names.values():
                    for suffix in (".f32", ".json", ".lock"):
                        os.symlink(precious, folder / f"{name}{suffix}")
                if kind == "another user's":
                    os.chown(folder, OTHER_UID, OTHER_UID)
            problems: list[str | None] = []
            code, output = _check(work, location)
            if code != 1 or str(folder) not in output:
                problems.append(f"{kind}: check did not name the folder (exit {code}): {tail(output)}")
            if then == "check --fix":
                code, output = _check(work, location, "--fix")
                problems.append(None if code == 0 else f"{kind}: check --fix exit {code}: {tail(output)}")
            problems += copies.recalls(location, kind)
            if precious.read_text() != "the owner's own file\n" or list(elsewhere.iterdir()):
                problems.append(f"{kind}: written through a link")
            problems.append(_owners_own(folder) and f"{kind}, then {then}: {_owners_own(folder)}")
            code, output = _check(work, location)
            problems.append(None if code == 0 else f"{kind}, then {then}: check afterwards exit {code}: {tail(output)}")
            tally.trial(problems)


def _rewrite_header(path: Path, **changes) -> None:
    meta = json.loads(path.read_text())
    meta.update({key: change(meta[key]) for key, change in changes.items()})
    path.write_text(json.dumps(meta))


def _replace_with_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _dangling(path: Path) -> None:
    path.unlink()
    os.symlink(path.with_name("nowhere"), path)


NAN_ROW = b"\x00\x00\xc0\x7f" * 384  # float32 NaN in each of a row's 384 values


def _nan_row(path: Path) -> None:
    with open(path, "r+b") as rows:
        rows.write(NAN_ROW)


def _killed_rewrite(path: Path) -> None:
    """What a rewrite killed after its rows left: a full-size partial file, no header."""
    for pid in (os.getpid(), 1, 4_194_303):
        shutil.copyfile(path.with_suffix(".f32"), path.with_name(f".{path.stem}.f32.partial-{pid}"))
    path.unlink()


# name: (which file of each namespace, the damage)
DAMAGE = {
    "folder deleted": (None, lambda folder: shutil.rmtree(folder)),
    "a killed rewrite (.partial-PID left, no header)": (".json", _killed_rewrite),
    "header with counters as text": (".json", lambda p: _rewrite_header(p, epoch=str, version=str)),
    "header 100,000 deep": (".json", lambda p: p.write_text("[" * 100_000 + "]" * 100_000)),
    "header with ids as numbers": (".json", lambda p: _rewrite_header(p, ids=lambda ids: list(range(len(ids))))),
    "header ahead of the store": (".json", lambda p: _rewrite_header(p, version=lambda v: v + 10**12, newest=lambda v: v + 10**12)),
    "header with the ids reversed": (".json", lambda p: _rewrite_header(p, ids=lambda ids: ids[::-1])),
    "a NaN row": (".f32", _nan_row),
    ".lock a folder": (".lock", _replace_with_folder),
    ".lock a dangling link": (".lock", _dangling),
    "STORE-vectors a file": (None, lambda folder: (shutil.rmtree(folder), folder.write_text("notes\n"))),
}


def probe_vector_files(tally: Tally, work: Path, clone) -> None:
    """Finding 5: files missing, half-written or odd; each recall must answer as an intact store
    does, and rebuild what it needs."""
    copies = Copies(work, clone)
    if not copies.searches_files:
        tally.skipped = "this Python's sqlite3 keeps the vector index in the store: no vector files"
        return
    for kind, (suffix, damage) in DAMAGE.items():
        location, folder = copies.new("files")
        for name in copies.names.values() if suffix else [None]:
            damage(folder / f"{name}{suffix}" if suffix else folder)
        problems = copies.recalls(location, kind)
        code, output = _check(work, location)
        if kind == "STORE-vectors a file":
            problems.append(None if code == 1 and str(folder) in output and folder.read_text() == "notes\n"
                            else f"{kind}: check exit {code}, the file kept {folder.is_file()}: {tail(output)}")  # fmt: skip
            tally.trial(problems)
            continue
        problems.append(None if code == 0 else f"{kind}: check afterwards exit {code}: {tail(output)}")
        problems.append(_owners_own(folder) and f"{kind}: {_owners_own(folder)}")
        if any(".partial-" in entry.name for entry in folder.iterdir()):
            problems.append(f"{kind}: partial files left")
        for name in copies.names.values():
            try:
                meta = json.loads((folder / f"{name}.json").read_text())
                first_row = (folder / f"{name}.f32").read_bytes()[: 4 * 384]
                fine = type(meta.get("version")) is int and meta["version"] < 10**12 and first_row != NAN_ROW
            except (OSError, ValueError):
                fine = False
            problems.append(None if fine else f"{kind}: {name} not rebuilt")
        tally.trial(problems)
