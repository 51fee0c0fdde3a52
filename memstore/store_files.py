"""The facade's methods for the store's files and its model (mixed into `MemoryStore`,
memstore.store): a backup, the integrity check, a copy into another store, and the embedding model
enabled, counted and synced. Each calls the one function of the module that owns the work, imported
when it is called.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import MemstoreError

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from .integrity import IntegrityReport
    from .transfer import CopyReport
    from .vectors.embeddings import Embeddings


class FileMethods:
    """What `MemoryStore` answers about its files and its embedding model."""

    # The store's own (memstore.store.MemoryStore).
    engine: Engine
    embeddings: Embeddings
    is_sqlite: bool

    # -- the file ------------------------------------------------------------------------------

    def backup(self, destination: str | os.PathLike[str], *, force: bool = False) -> dict[str, Any]:
        """Copy the store to `destination` with SQLite's online backup API (consistent while others write)."""
        if not self.is_sqlite:
            raise MemstoreError("backup works on SQLite stores only; for PostgreSQL use pg_dump")
        from .backup import backup_sqlite

        return backup_sqlite(self.engine, destination, force=force)

    def check(self, *, fix: bool = False) -> IntegrityReport:
        """The integrity check (`memstore check`): integrity, keys, ids, schema and index checks;
        `fix` repairs keys and the recall index."""
        from .integrity import check_integrity

        return check_integrity(self.engine, fix=fix)

    def copy_to(self, target: str | os.PathLike[str], *, progress: Callable[[str, int], None] | None = None) -> CopyReport:
        """Copy this whole store into the new or empty store at `target` (a path or URL, created and
        migrated if needed), in one transaction there (memstore.transfer; `memstore copy`)."""
        from .transfer import copy_into

        return copy_into(self.engine, target, progress=progress)

    # -- embeddings (the semantic extra) ---------------------------------------------------------

    def enable_embeddings(self, model: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Record the store's embedding model (a fastembed name, default all-MiniLM-L6-v2, or a local
        directory); nothing is embedded yet (`sync_embeddings`), and a new model makes all pending."""
        return self.embeddings.enable(model)

    def embedding_status(self) -> dict[str, Any] | None:
        """The store's model and how many live memories still need a vector; None if not enabled."""
        return self.embeddings.status()

    def sync_embeddings(self, *, batch_size: int | None = None, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """Embed every live memory without a vector of the store's model, a batch per transaction (an
        interrupted sync keeps what it finished); `progress(done, total)` after each batch."""
        options = {} if batch_size is None else {"batch_size": batch_size}
        return self.embeddings.sync(progress=progress, **options)


__all__ = ["FileMethods"]
