"""PostgreSQL's full-text index splits words where FTS5 does

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02

PostgreSQL's parser kept an e-mail address, a host, a URL, a path, a version, a date or a signed
number as one word ("alice@example.com", "2024-01-15"), where SQLite's FTS5 splits them at their
punctuation. No query word could match such a token, so recall on PostgreSQL never found a memory
by its address, its host or a part of its date. The GIN index is rebuilt on the text with ASCII
punctuation (all but "%") turned into spaces first, the expression `memstore.fulltext.pg_document`
queries with. Nothing changes on SQLite.
"""

from __future__ import annotations

import string

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

# Frozen here, as a migration's definitions are; tests/test_postgres.py checks that the index it
# builds is the expression memstore.fulltext queries with.
SEPARATORS = string.punctuation.replace("%", "")
DOCUMENT = f"""to_tsvector('simple', translate(text, '{SEPARATORS.replace("'", "''")}', '{" " * len(SEPARATORS)}'))"""
BEFORE = "to_tsvector('simple', text)"


def _index_on(document: str) -> None:
    op.execute("DROP INDEX memories_fts_gin")
    op.execute(f"CREATE INDEX memories_fts_gin ON memories USING gin ({document})")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _index_on(DOCUMENT)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _index_on(BEFORE)
