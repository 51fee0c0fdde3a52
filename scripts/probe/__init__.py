"""memstore probed as an attacker and a loaded system would probe it (issue 29), at a small size.

    .venv/bin/python -m scripts.probe                        # SQLite and a throwaway PostgreSQL, 3 trials
    .venv/bin/python -m scripts.probe --trials 20 --size 500 # larger
    .venv/bin/python -m scripts.probe --pg-url postgresql+psycopg://postgres@127.0.0.1:5432/postgres --json probe.json
    .venv/bin/python -m scripts.probe --only tokens rebinding --no-pg

Everything goes through the real `memstore` command in subprocesses, the MCP SDK's client and raw
HTTP (httpx2), and the real LangGraph store: no mocks. Each probe is tried several times (killed and
concurrent runs: --trials; a bad input: once per variant) and checks what must hold:

- nothing lost: every write a client was told succeeded is live, or archived by a run;
- nothing corrupted: `memstore check` (PRAGMA integrity_check among its checks) finds nothing, and
  the command that was killed runs again to its end;
- a bad input is refused with one line naming file, line and field, exit 1 (or click's usage error
  for an option), nothing written, no traceback; or it is taken and reads back exactly;
- a request without the token, or from a DNS-rebinding page, is refused (401, 421, 403);
- a server scoped to one namespace tells nothing about the others; no password in any output;
- `export -o` and `backup --force` leave a FIFO or a device node the node it was.

It prints a table (kind of probe | what was tried | times | held | not held), then what did not
hold, and exits 1 if anything did not hold. PostgreSQL: the server of --pg-url (an admin URL:
databases are created and dropped there), else a throwaway one started as tests/pgserver.py does,
else skipped with the reason printed. The modules: cli.py (the probes, the run, the table),
runs.py (killed and concurrent runs), listeners.py (the MCP server and the web page over HTTP),
inputs.py (bad inputs), sources.py (other programs' files as import sources and copy targets),
vector_files.py (a SQLite store's vector files: someone else's folder, links, damage), web_doors.py
(the web page's doors: a scoped or read-only page, the cookie and redirects, numbers, bidi), common.py
(the tally, the backends, the real CLI).
"""
