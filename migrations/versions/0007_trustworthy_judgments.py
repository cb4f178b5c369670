"""trustworthy judgments: listening rule, hidden quality trials, setting judgments aside

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27

- ``campaign.listen_seconds``, ``quality_rate``, ``auto_pause``: the listening rule, the
  share of hidden quality trials and automatic pausing. Campaigns from before this revision
  keep the rule and the trials off (server default 0); new campaigns get the defaults of
  ``mtcjudge.models``.
- ``assessor.set_aside_at``, ``paused_at``, ``pause_reason``.
- ``lease.kind``, ``repeat_of`` and the bytes of each clip served; ``lease.pair_id`` may be
  empty (a quality trial takes no pool pair's slot).
- ``judgment.kind``, ``repeat_of``, ``set_aside`` and the served bytes; the unique key on
  (campaign, query, document, assessor) gains ``kind``, so a repeat trial of a pair can be
  stored beside its judgment.
- ``assessor_reliability``: the planner's conclusions about each assessor.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_OLD_UNIQUE = "uq_judgment_campaign_id_query_id_document_id_assessor_id"
_NEW_UNIQUE = "uq_judgment_campaign_id_query_id_document_id_assessor_id_kind"


def upgrade() -> None:
    with op.batch_alter_table("campaign") as batch:
        batch.add_column(
            sa.Column("listen_seconds", sa.Float(), server_default="0", nullable=False)
        )
        batch.add_column(sa.Column("quality_rate", sa.Float(), server_default="0", nullable=False))
        batch.add_column(
            sa.Column("auto_pause", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    with op.batch_alter_table("assessor") as batch:
        batch.add_column(sa.Column("set_aside_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("paused_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("pause_reason", sa.Text(), nullable=True))
    with op.batch_alter_table("lease") as batch:
        batch.alter_column("pair_id", existing_type=sa.Integer(), nullable=True)
        batch.add_column(sa.Column("kind", sa.String(16), server_default="pool", nullable=False))
        batch.add_column(sa.Column("repeat_of", sa.Integer(), nullable=True))
        batch.add_column(
            sa.Column("served_query_bytes", sa.Integer(), server_default="0", nullable=False)
        )
        batch.add_column(
            sa.Column("served_candidate_bytes", sa.Integer(), server_default="0", nullable=False)
        )
    with op.batch_alter_table("judgment") as batch:
        batch.add_column(sa.Column("kind", sa.String(16), server_default="pool", nullable=False))
        batch.add_column(sa.Column("repeat_of", sa.Integer(), nullable=True))
        batch.add_column(
            sa.Column("set_aside", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch.add_column(sa.Column("served_query_bytes", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("served_candidate_bytes", sa.Integer(), nullable=True))
        batch.drop_constraint(_OLD_UNIQUE, type_="unique")
        batch.create_unique_constraint(
            _NEW_UNIQUE, ["campaign_id", "query_id", "document_id", "assessor_id", "kind"]
        )
    op.create_table(
        "assessor_reliability",
        sa.Column("assessor_id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("flagged", sa.Boolean(), nullable=False),
        sa.Column("reasons", sa.Text(), nullable=False),
        sa.Column("metrics", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["assessor_id"],
            ["assessor.id"],
            name="fk_assessor_reliability_assessor_id_assessor",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaign.id"],
            name="fk_assessor_reliability_campaign_id_campaign",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("assessor_id", name="pk_assessor_reliability"),
    )
    op.create_index("ix_assessor_reliability_campaign_id", "assessor_reliability", ["campaign_id"])


def downgrade() -> None:
    op.drop_index("ix_assessor_reliability_campaign_id", table_name="assessor_reliability")
    op.drop_table("assessor_reliability")
    # quality trials cannot live in the old schema: they go with the downgrade
    op.execute("DELETE FROM judgment WHERE kind <> 'pool'")
    op.execute("DELETE FROM lease WHERE pair_id IS NULL")
    with op.batch_alter_table("judgment") as batch:
        batch.drop_constraint(_NEW_UNIQUE, type_="unique")
        batch.create_unique_constraint(
            _OLD_UNIQUE, ["campaign_id", "query_id", "document_id", "assessor_id"]
        )
        for column in (
            "served_candidate_bytes",
            "served_query_bytes",
            "set_aside",
            "repeat_of",
            "kind",
        ):
            batch.drop_column(column)
    with op.batch_alter_table("lease") as batch:
        for column in ("served_candidate_bytes", "served_query_bytes", "repeat_of", "kind"):
            batch.drop_column(column)
        batch.alter_column("pair_id", existing_type=sa.Integer(), nullable=False)
    with op.batch_alter_table("assessor") as batch:
        for column in ("pause_reason", "paused_at", "set_aside_at"):
            batch.drop_column(column)
    with op.batch_alter_table("campaign") as batch:
        for column in ("auto_pause", "quality_rate", "listen_seconds"):
            batch.drop_column(column)
