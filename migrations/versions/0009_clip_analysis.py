"""clips analysed once, cut by the campaign's choice, fetched once

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-29

- ``document``: the import's analysis of each clip (``excerpt_start``, ``source_seconds``,
  ``sample_rate``, ``channels``, ``loudness_lufs``, ``peaks``, ``content_sha256``); empty for
  clips imported before it, which are served whole.
- ``campaign.clip_cut``, ``excerpt_seconds``, ``excerpt_start_fraction``: how clips are cut;
  campaigns from before this revision keep whole files (server default "whole").
- ``clip_delivery``: the bytes of each clip sent to each assessor over all their leases.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_DOCUMENT_COLUMNS = (
    ("excerpt_start", sa.Float()),
    ("source_seconds", sa.Float()),
    ("sample_rate", sa.Integer()),
    ("channels", sa.Integer()),
    ("loudness_lufs", sa.Float()),
    ("peaks", sa.LargeBinary()),
    ("content_sha256", sa.String(64)),
    ("other_loudness_lufs", sa.Float()),
    ("other_peaks", sa.LargeBinary()),
)


def upgrade() -> None:
    with op.batch_alter_table("document") as batch:
        for name, kind in _DOCUMENT_COLUMNS:
            batch.add_column(sa.Column(name, kind, nullable=True))
    with op.batch_alter_table("campaign") as batch:
        batch.add_column(
            sa.Column("clip_cut", sa.String(16), server_default="whole", nullable=False)
        )
        batch.add_column(
            sa.Column("excerpt_seconds", sa.Float(), server_default="30", nullable=False)
        )
        batch.add_column(
            sa.Column("excerpt_start_fraction", sa.Float(), server_default="0.3", nullable=False)
        )
    op.create_table(
        "clip_delivery",
        sa.Column("assessor_id", sa.Integer(), nullable=False),
        sa.Column("clip_key", sa.String(64), nullable=False),
        sa.Column("bytes_sent", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["assessor_id"],
            ["assessor.id"],
            ondelete="CASCADE",
            name="fk_clip_delivery_assessor_id_assessor",
        ),
        sa.PrimaryKeyConstraint("assessor_id", "clip_key", name="pk_clip_delivery"),
    )


def downgrade() -> None:
    op.drop_table("clip_delivery")
    with op.batch_alter_table("campaign") as batch:
        for name in ("excerpt_start_fraction", "excerpt_seconds", "clip_cut"):
            batch.drop_column(name)
    with op.batch_alter_table("document") as batch:
        for name, _ in reversed(_DOCUMENT_COLUMNS):
            batch.drop_column(name)
