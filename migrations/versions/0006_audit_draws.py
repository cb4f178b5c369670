"""pair audit flag: the pairs the ``joint`` estimator's audit drew

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25

``pair.audit`` marks the pairs drawn into the random audit sample from which ``joint``
learns its variance factor (docs/method.md §8.2). The audit draws among the pairs still
unjudged at the time, so which pairs it drew depends on the order of the judgments: the
planner stores its draws and every engine built later reads them back. Campaigns from
before this revision have none stored; their audit starts with the next plan.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pair") as batch:
        batch.add_column(sa.Column("audit", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("pair") as batch:
        batch.drop_column("audit")
