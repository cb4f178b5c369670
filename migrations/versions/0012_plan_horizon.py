"""hours, not judgments: the judgments a campaign still needs, for the choice of a pair

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-29

- ``planner_state.horizon``: the judgments the campaign still needs to reach its target, by
  the high end of the planner's last projection less the judgments made since (NULL: no
  projection yet, or the target out of the pool's reach). The judging path keeps a volunteer
  on their query only for a pair ranked within it (docs/method.md §12).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("planner_state") as batch:
        batch.add_column(sa.Column("horizon", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("planner_state") as batch:
        batch.drop_column("horizon")
