"""The SQLite library memstore opens store files with in this process (`memstore.db.sqlite_driver`:
the standard `sqlite3`, or `sqlean` where the standard one cannot load sqlite-vec). Tests that open
a store file themselves use it too: two copies of SQLite in one process must never open the same
file, since closing one's file descriptor drops the POSIX locks the other holds on it."""

from memstore.db import sqlite_driver

sqlite3 = sqlite_driver()


def dump(path) -> str:
    """The file's schema and every row of every table, in a stable order (what `iterdump` gives,
    which sqlean lacks)."""
    with sqlite3.connect(path) as conn:
        objects = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name").fetchall()
        lines = [sql for _, _, sql in objects]
        for kind, name, sql in objects:
            if kind == "table" and not sql.upper().startswith("CREATE VIRTUAL"):
                lines += sorted(repr(row) for row in conn.execute(f'SELECT * FROM "{name}"'))
    return "\n".join(lines)
