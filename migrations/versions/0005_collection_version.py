"""campaign collection version: systems added to a campaign that exists

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24

``campaign.collection_version`` grows when the campaign's collection changes after it was
created (``mtcjudge campaign add-runs``): the planners of running servers see the campaign's
settings key change and rebuild their engines on the new systems and pool.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("campaign") as batch:
        batch.add_column(
            sa.Column("collection_version", sa.Integer(), server_default="0", nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("campaign") as batch:
        batch.drop_column("collection_version")
