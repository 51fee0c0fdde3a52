"""`memstore ARGS` whose connections may not grow a store's file past LIMIT pages (PRAGMA
max_page_count on every connection): the full disk of the disk-full scenario where no tmpfs can be
mounted. The store's file is then "full" exactly as a full disk makes it, SQLITE_FULL.

    python -m scripts.torture.capped_cli LIMIT ARGS...   (from the repository's root)
"""

from __future__ import annotations

import sys

from sqlalchemy import event
from sqlalchemy.engine import Engine


def main() -> None:
    limit = int(sys.argv.pop(1))

    def cap(dbapi_connection, record):  # noqa: ARG001
        dbapi_connection.execute(f"PRAGMA max_page_count = {limit}")

    event.listen(Engine, "connect", cap)
    from memstore.cli import main as memstore

    memstore()


if __name__ == "__main__":
    main()
