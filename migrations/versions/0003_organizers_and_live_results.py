"""organizers and live results: accounts, sessions, the audit log, the planner's results

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23

Organizers sign in with a password (``organizer``); a signed-in browser is an
``organizer_session`` row (the cookie holds a token, the row its hash). Every change an
organizer makes to a campaign is an ``audit_event``. The planner stores the campaign's
results document (``campaign_results``) and the confidence curve (``trajectory_point``) so
that dashboards read them instead of running the engine.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "organizer",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_organizer")),
        sa.UniqueConstraint("username", name=op.f("uq_organizer_username")),
    )
    op.create_table(
        "organizer_session",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("organizer_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organizer_id"],
            ["organizer.id"],
            name=op.f("fk_organizer_session_organizer_id_organizer"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_organizer_session")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_organizer_session_token_hash")),
    )
    op.create_index(
        op.f("ix_organizer_session_organizer_id"), "organizer_session", ["organizer_id"]
    )
    op.create_table(
        "audit_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=True),
        sa.Column("organizer_id", sa.Integer(), nullable=True),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaign.id"],
            name=op.f("fk_audit_event_campaign_id_campaign"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organizer_id"],
            ["organizer.id"],
            name=op.f("fk_audit_event_organizer_id_organizer"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_event")),
    )
    op.create_index("ix_audit_event_campaign_at", "audit_event", ["campaign_id", "created_at"])
    op.create_table(
        "campaign_results",
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("judged_pairs", sa.Integer(), nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("document", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaign.id"],
            name=op.f("fk_campaign_results_campaign_id_campaign"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("campaign_id", name=op.f("pk_campaign_results")),
    )
    op.create_table(
        "trajectory_point",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("judged_pairs", sa.Integer(), nullable=False),
        sa.Column("ranking_confidence", sa.Float(), nullable=False),
        sa.Column("system_pairs_settled", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaign.id"],
            name=op.f("fk_trajectory_point_campaign_id_campaign"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trajectory_point")),
    )
    op.create_index(
        "ix_trajectory_point_campaign_judged", "trajectory_point", ["campaign_id", "judged_pairs"]
    )


def downgrade() -> None:
    op.drop_index("ix_trajectory_point_campaign_judged", table_name="trajectory_point")
    op.drop_table("trajectory_point")
    op.drop_table("campaign_results")
    op.drop_index("ix_audit_event_campaign_at", table_name="audit_event")
    op.drop_table("audit_event")
    op.drop_index(op.f("ix_organizer_session_organizer_id"), table_name="organizer_session")
    op.drop_table("organizer_session")
    op.drop_table("organizer")
