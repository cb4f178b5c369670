"""lease selection: why MTC handed out each pair

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23

A lease records the pair's place in the planner's list when it was claimed, its selection
weight and the rule that chose it, so that exported judgments tell researchers in what order
and by which rule MTC asked for them. Leases made before this revision have none (NULL).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("lease") as batch:
        batch.add_column(sa.Column("selection_rank", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("selection_weight", sa.Float(), nullable=True))
        batch.add_column(sa.Column("selection_rule", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("lease") as batch:
        batch.drop_column("selection_rule")
        batch.drop_column("selection_weight")
        batch.drop_column("selection_rank")
