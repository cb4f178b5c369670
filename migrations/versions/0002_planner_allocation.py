"""planner allocation: the pool of pairs, the plan, leases with a state

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23

The judging path no longer runs the MTC engine: a planner per campaign writes the ranked
pairs to hand out (plan_entry) and its figures (planner_state); `next` claims the best free
pair with one conditional UPDATE of its `pair` row. The pool of a campaign is filled by the
application (it needs the engine's pooling rules), so existing campaigns get their `pair`
rows from the planner on first start; leases in flight at the upgrade are dropped (their
assessors are simply handed a pair again).
"""

from __future__ import annotations

import hashlib
import secrets

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pair",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("playable", sa.Boolean(), nullable=False),
        sa.Column("judged", sa.Integer(), nullable=False),
        sa.Column("leased", sa.Integer(), nullable=False),
        sa.Column("leased_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("changes", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"], ["campaign.id"],
            name=op.f("fk_pair_campaign_id_campaign"), ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["document_id"], ["document.id"],
            name=op.f("fk_pair_document_id_document"), ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["query_id"], ["query.id"], name=op.f("fk_pair_query_id_query"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pair")),
        sa.UniqueConstraint(
            "campaign_id", "query_id", "document_id",
            name=op.f("uq_pair_campaign_id_query_id_document_id"),
        ),
    )
    op.create_index(op.f("ix_pair_campaign_id"), "pair", ["campaign_id"], unique=False)
    op.create_index("ix_pair_campaign_judged", "pair", ["campaign_id", "judged"], unique=False)

    op.create_table(
        "plan_entry",
        sa.Column("pair_id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"], ["campaign.id"],
            name=op.f("fk_plan_entry_campaign_id_campaign"), ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["pair_id"], ["pair.id"], name=op.f("fk_plan_entry_pair_id_pair"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("pair_id", name=op.f("pk_plan_entry")),
    )
    op.create_index("ix_plan_entry_campaign_rank", "plan_entry", ["campaign_id", "rank"])

    op.create_table(
        "planner_state",
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(length=64), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("planned_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("judged_pairs", sa.Integer(), nullable=False),
        sa.Column("pool_pairs", sa.Integer(), nullable=False),
        sa.Column("playable_pairs", sa.Integer(), nullable=False),
        sa.Column("ranking_confidence", sa.Float(), nullable=True),
        sa.Column("stop_reason", sa.String(length=16), nullable=True),
        sa.Column("system_pairs", sa.Integer(), nullable=False),
        sa.Column("system_pairs_settled", sa.Integer(), nullable=False),
        sa.Column("settings_key", sa.String(length=200), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["campaign_id"], ["campaign.id"],
            name=op.f("fk_planner_state_campaign_id_campaign"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("campaign_id", name=op.f("pk_planner_state")),
    )

    op.execute("DELETE FROM lease")
    with op.batch_alter_table("lease", schema=None) as batch_op:
        batch_op.drop_constraint(
            "uq_lease_campaign_id_query_id_document_id_assessor_id", type_="unique"
        )
        batch_op.add_column(sa.Column("pair_id", sa.Integer(), nullable=False))
        batch_op.add_column(
            sa.Column("state", sa.String(length=8), nullable=False, server_default="live")
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_lease_pair_id_pair"), "pair", ["pair_id"], ["id"], ondelete="CASCADE"
        )
        batch_op.create_index("ix_lease_pair_state", ["pair_id", "state"], unique=False)
        batch_op.create_index(
            "uq_lease_live_assessor",
            ["assessor_id"],
            unique=True,
            sqlite_where=sa.text("state = 'live'"),
            postgresql_where=sa.text("state = 'live'"),
        )

    with op.batch_alter_table("judgment", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lease_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_judgment_lease_id_lease"), "lease", ["lease_id"], ["id"],
            ondelete="SET NULL",
        )
        batch_op.drop_column("version")

    with op.batch_alter_table("campaign", schema=None) as batch_op:
        batch_op.drop_column("judgment_version")

    # invitation tokens are stored hashed: existing links keep working
    with op.batch_alter_table("assessor", schema=None) as batch_op:
        batch_op.add_column(sa.Column("token_hash", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True))
    bind = op.get_bind()
    assessor = sa.table(
        "assessor", sa.column("id", sa.Integer()), sa.column("token", sa.String()),
        sa.column("token_hash", sa.String()),
    )
    for row in bind.execute(sa.select(assessor.c.id, assessor.c.token)).all():
        digest = hashlib.sha256(row.token.encode("utf-8")).hexdigest()
        bind.execute(
            assessor.update().where(assessor.c.id == row.id).values(token_hash=digest)
        )
    with op.batch_alter_table("assessor", schema=None) as batch_op:
        batch_op.alter_column("token_hash", existing_type=sa.String(length=64), nullable=False)
        batch_op.create_unique_constraint(batch_op.f("uq_assessor_token_hash"), ["token_hash"])
        batch_op.drop_constraint("uq_assessor_token", type_="unique")
        batch_op.drop_column("token")


def downgrade() -> None:
    # the tokens cannot be recovered from their hashes: every assessor gets a new link
    with op.batch_alter_table("assessor", schema=None) as batch_op:
        batch_op.add_column(sa.Column("token", sa.String(length=64), nullable=True))
    bind = op.get_bind()
    assessor = sa.table("assessor", sa.column("id", sa.Integer()), sa.column("token", sa.String()))
    for row in bind.execute(sa.select(assessor.c.id)).all():
        bind.execute(
            assessor.update()
            .where(assessor.c.id == row.id)
            .values(token=secrets.token_urlsafe(24))
        )
    with op.batch_alter_table("assessor", schema=None) as batch_op:
        batch_op.alter_column("token", existing_type=sa.String(length=64), nullable=False)
        batch_op.create_unique_constraint("uq_assessor_token", ["token"])
        batch_op.drop_constraint(batch_op.f("uq_assessor_token_hash"), type_="unique")
        batch_op.drop_column("token_hash")
        batch_op.drop_column("revoked_at")

    with op.batch_alter_table("campaign", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("judgment_version", sa.Integer(), nullable=False, server_default="0")
        )
    with op.batch_alter_table("judgment", schema=None) as batch_op:
        batch_op.add_column(sa.Column("version", sa.Integer(), nullable=False, server_default="0"))
        batch_op.drop_constraint(batch_op.f("fk_judgment_lease_id_lease"), type_="foreignkey")
        batch_op.drop_column("lease_id")
    op.execute("DELETE FROM lease")
    with op.batch_alter_table("lease", schema=None) as batch_op:
        batch_op.drop_index("uq_lease_live_assessor")
        batch_op.drop_index("ix_lease_pair_state")
        batch_op.drop_constraint(batch_op.f("fk_lease_pair_id_pair"), type_="foreignkey")
        batch_op.drop_column("state")
        batch_op.drop_column("pair_id")
        batch_op.create_unique_constraint(
            "uq_lease_campaign_id_query_id_document_id_assessor_id",
            ["campaign_id", "query_id", "document_id", "assessor_id"],
        )
    op.drop_table("planner_state")
    op.drop_index("ix_plan_entry_campaign_rank", table_name="plan_entry")
    op.drop_table("plan_entry")
    op.drop_index("ix_pair_campaign_judged", table_name="pair")
    op.drop_index(op.f("ix_pair_campaign_id"), table_name="pair")
    op.drop_table("pair")
