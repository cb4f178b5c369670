"""hours, not judgments: what a pair costs the volunteer who will judge it

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-29

- ``plan_entry.query_seconds``, ``candidate_seconds``: the durations of the planned pair's
  clips as served (NULL: unknown), so that the judging path weighs what the pair costs the
  volunteer asking (docs/method.md §12).
- ``planner_state.pace_query_new``, ``pace_query_same``, ``pace_candidate``,
  ``pace_decision``: the campaign's pooled listening-time model as the planner last fitted
  it (NULL: the stated defaults).
- ``assessor_pace``: each assessor's own fitted pace (shares of the query when it changes
  and when it does not, of the candidate, decision seconds), written by the planner.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_PACE = ("pace_query_new", "pace_query_same", "pace_candidate", "pace_decision")


def upgrade() -> None:
    with op.batch_alter_table("plan_entry") as batch:
        batch.add_column(sa.Column("query_seconds", sa.Float(), nullable=True))
        batch.add_column(sa.Column("candidate_seconds", sa.Float(), nullable=True))
    with op.batch_alter_table("planner_state") as batch:
        for name in _PACE:
            batch.add_column(sa.Column(name, sa.Float(), nullable=True))
    op.create_table(
        "assessor_pace",
        sa.Column("assessor_id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("query_new", sa.Float(), nullable=False),
        sa.Column("query_same", sa.Float(), nullable=False),
        sa.Column("candidate", sa.Float(), nullable=False),
        sa.Column("decision", sa.Float(), nullable=False),
        sa.Column("judgments", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["assessor_id"],
            ["assessor.id"],
            ondelete="CASCADE",
            name="fk_assessor_pace_assessor_id_assessor",
        ),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaign.id"],
            ondelete="CASCADE",
            name="fk_assessor_pace_campaign_id_campaign",
        ),
        sa.PrimaryKeyConstraint("assessor_id", name="pk_assessor_pace"),
    )
    op.create_index("ix_assessor_pace_campaign_id", "assessor_pace", ["campaign_id"])


def downgrade() -> None:
    op.drop_index("ix_assessor_pace_campaign_id", table_name="assessor_pace")
    op.drop_table("assessor_pace")
    with op.batch_alter_table("planner_state") as batch:
        for name in reversed(_PACE):
            batch.drop_column(name)
    with op.batch_alter_table("plan_entry") as batch:
        batch.drop_column("candidate_seconds")
        batch.drop_column("query_seconds")
