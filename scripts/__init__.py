"""The project's own programs: benchmarks, the torture suite, the probe and the evaluations.

Run from the repository's root with the project's interpreter, as modules (no path is patched;
the root on ``sys.path``, where ``python -m`` and pytest put it, is what makes them importable):

    .venv/bin/python -m scripts.bench [--quick] [--only core|ops|vectors|copy|web|importers|langgraph]
    .venv/bin/python -m scripts.bench.report          # the hygiene report over 100,000 memories
    .venv/bin/python -m scripts.bench.import_vectors  # `import` of a file with vectors, SQLite and PostgreSQL
    .venv/bin/python -m scripts.bench.startup REV ... # start-up of `memstore add` across commits
    .venv/bin/python -m scripts.torture [--quick] [--only NAME ...]
    .venv/bin/python -m scripts.probe [--trials N] [--size N]
    .venv/bin/python -m scripts.eval_recall           # recall on the labelled sets, LongMemEval and RealMem (the real model)
    .venv/bin/python -m scripts.semantic_eval         # the duplicate/contradiction classifier and the contradiction flags
    .venv/bin/python -m scripts.flag_streams          # writes the labelled streams the flags are measured on
    .venv/bin/python -m scripts.bench.flags           # the nightly contradict phase: its cost, flags per 1,000 writes

The modules: ``data`` (the one generator of synthetic memories and stores), ``stores`` (store
files: copying them, and reading them from outside memstore), ``bench/``, ``torture/``, ``probe/``,
``eval_recall`` (with ``longmemeval`` and ``realmem``, the public benchmarks' sets), ``semantic_eval`` (with ``flag_eval``, the contradiction flags, on ``flag_streams``'s streams). The shell scripts beside them (``test``, ``quickstart``,
``offline-model``) and the scheduling examples (``cron.example``, ``systemd/``) are run as files.
Child processes of these programs run as modules too, from the root: ``module_command`` below.

Importing this package moves the root to the end of ``sys.path`` (``checkout_last``): ``scripts`` and
``tests`` are found there, and ``memstore`` in the installed package first, so a program run from a
checkout exercises the memstore that is installed (the wheel, in the test command's venvs).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def checkout_last() -> None:
    """Move the checkout's root behind the installed packages on ``sys.path``. ``python -m`` (the
    current directory) and pytest (the root above ``tests/``) put it first, where ``import memstore``
    would read the checkout's source instead of the installed package. With an editable install, or
    none, memstore is still found in the checkout: nothing else provides it."""
    if "memstore" in sys.modules:
        return
    at_root = [entry for entry in sys.path if Path(entry or os.curdir).resolve() == REPO]
    for entry in at_root:
        sys.path.remove(entry)
    if at_root:
        sys.path.append(str(REPO))


checkout_last()


def module_command(module: str, *args: str) -> list[str]:
    """`python -m MODULE ARGS` with this interpreter; run it with ``cwd=REPO``, where the module is found."""
    return [sys.executable, "-m", module, *args]
