"""The launcher of the bench's recall-process scenario (vectors.py): `memstore recall` run as a
process, hybrid (the default) and lexical interleaved, with its wall time and its peak resident
memory (wait4). A small process of its own: Linux keeps a process's peak resident memory across
fork and exec, so a command forked from the bench (which holds whole stores by then) would report
the bench's peak as its own. It imports nothing of memstore or of the bench.

    python -m scripts.bench.launcher JSON_COMMAND RUNS   (from the repository's root)

Prints one JSON line: the median seconds of each mode, the hybrid process's peak MB, and the first
hybrid run, timed apart.
"""

import json
import os
import statistics
import subprocess
import sys
import time


def run(command):
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(command)} failed: {process.stderr.read().decode()[-500:]}")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    base, runs = json.loads(sys.argv[1]), int(sys.argv[2])
    # The first hybrid recall after the vectors were written, timed apart: where the store's sqlite3
    # cannot hold sqlite-vec, it writes the namespace's vector file (memstore.vectors.vector_file).
    first = run(base)[0]
    hybrid, lexical, peak = [], [], []
    for _ in range(runs):
        seconds, megabytes = run(base)
        hybrid.append(seconds)
        peak.append(megabytes)
        lexical.append(run([*base, "--mode", "lexical"])[0])
    print(json.dumps({"hybrid": statistics.median(hybrid), "lexical": statistics.median(lexical), "hybrid_peak_mb": max(peak), "first_hybrid": first}))


if __name__ == "__main__":
    main()
