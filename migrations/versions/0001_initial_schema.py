"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-29

The three tables of DESIGN.md §3 and the two indexes the consolidation job walks.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# Ids, namespaces and keys sort by code point on both backends (PostgreSQL: COLLATE "C").
CODE_POINT_TEXT = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('consolidation_runs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.Text(), server_default='consolidate', nullable=False),
    sa.Column('namespace', CODE_POINT_TEXT, nullable=True),
    sa.Column('capacity', sa.Integer(), nullable=True),
    sa.Column('params', sa.JSON(), nullable=True),
    sa.Column('status', sa.Text(), server_default='applied', nullable=False),
    sa.Column('started_at', sa.BigInteger(), nullable=False),
    sa.Column('finished_at', sa.BigInteger(), nullable=False),
    sa.Column('live_before', sa.Integer(), nullable=False),
    sa.Column('kept', sa.Integer(), nullable=False),
    sa.Column('duplicates', sa.Integer(), nullable=False),
    sa.Column('evicted', sa.Integer(), nullable=False),
    sa.Column('restored_at', sa.BigInteger(), nullable=True),
    sa.CheckConstraint("status IN ('applied', 'restored')", name=op.f('ck_consolidation_runs_status_known')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_consolidation_runs'))
    )
    op.create_table('memories',
    sa.Column('id', CODE_POINT_TEXT, nullable=False),
    sa.Column('namespace', CODE_POINT_TEXT, server_default='default', nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('norm_key', CODE_POINT_TEXT, nullable=False),
    sa.Column('timestamp', sa.BigInteger(), nullable=False),
    sa.Column('importance', sa.Integer(), nullable=False),
    sa.Column('pinned', sa.Boolean(), server_default=sa.false(), nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.Column('last_recalled_at', sa.BigInteger(), nullable=True),
    sa.Column('recall_count', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('fact_key', CODE_POINT_TEXT, nullable=True),
    sa.Column('meta', sa.JSON(), nullable=True),
    sa.CheckConstraint('importance BETWEEN 1 AND 5', name=op.f('ck_memories_importance_range')),
    sa.CheckConstraint('recall_count >= 0', name=op.f('ck_memories_recall_count_nonnegative')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_memories'))
    )
    with op.batch_alter_table('memories', schema=None) as batch_op:
        batch_op.create_index('ix_memories_rank', ['namespace', 'pinned', sa.literal_column('importance DESC'), sa.literal_column('timestamp DESC'), 'id'], unique=False)
        batch_op.create_index('ix_memories_stage1', ['namespace', 'norm_key', sa.literal_column('pinned DESC'), sa.literal_column('timestamp DESC'), sa.literal_column('importance DESC'), 'id'], unique=False)

    op.create_table('memory_archive',
    sa.Column('id', CODE_POINT_TEXT, nullable=False),
    sa.Column('namespace', CODE_POINT_TEXT, server_default='default', nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('norm_key', CODE_POINT_TEXT, nullable=False),
    sa.Column('timestamp', sa.BigInteger(), nullable=False),
    sa.Column('importance', sa.Integer(), nullable=False),
    sa.Column('pinned', sa.Boolean(), server_default=sa.false(), nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.Column('last_recalled_at', sa.BigInteger(), nullable=True),
    sa.Column('recall_count', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('fact_key', CODE_POINT_TEXT, nullable=True),
    sa.Column('meta', sa.JSON(), nullable=True),
    sa.Column('archived_at', sa.BigInteger(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('superseded_by', CODE_POINT_TEXT, nullable=True),
    sa.Column('run_id', sa.Integer(), nullable=True),
    sa.CheckConstraint("reason IN ('duplicate', 'evicted', 'stale', 'manual')", name=op.f('ck_memory_archive_reason_known')),
    sa.CheckConstraint('importance BETWEEN 1 AND 5', name=op.f('ck_memory_archive_importance_range')),
    sa.CheckConstraint('recall_count >= 0', name=op.f('ck_memory_archive_recall_count_nonnegative')),
    sa.ForeignKeyConstraint(['run_id'], ['consolidation_runs.id'], name=op.f('fk_memory_archive_run_id_consolidation_runs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_memory_archive'))
    )
    with op.batch_alter_table('memory_archive', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_memory_archive_run_id'), ['run_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('memory_archive', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_memory_archive_run_id'))

    op.drop_table('memory_archive')
    with op.batch_alter_table('memories', schema=None) as batch_op:
        batch_op.drop_index('ix_memories_stage1')
        batch_op.drop_index('ix_memories_rank')

    op.drop_table('memories')
    op.drop_table('consolidation_runs')
