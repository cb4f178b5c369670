"""audio from the browser: uploads, and the audio stored in the database by content

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-29

- ``audio_blob``: a usable audio file's bytes, named by their SHA-256 (stored once however
  many uploads or campaigns hold it, never changed). A document's ``audio_path`` of the form
  ``blob:<sha256>.<ext>`` names one; every process writes it into its own cache when it needs
  the file (mtcjudge.clips.sources).
- ``audio_upload``: one organizer's upload of a folder or zip of audio, named by a random
  token, ``receiving`` until the page says it is ``complete``; ``total_bytes`` counts what it
  received against the per-upload limit.
- ``audio_upload_file``: each file of an upload: its name as sent, the document it is for
  (``name``: the stem, NFC), its extension, size, blob (usable) or problem (not usable).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audio_blob",
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("sha256", name="pk_audio_blob"),
    )
    op.create_table(
        "audio_upload",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(43), nullable=False),
        sa.Column("organizer_id", sa.Integer(), nullable=True),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("total_bytes", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organizer_id"],
            ["organizer.id"],
            ondelete="SET NULL",
            name="fk_audio_upload_organizer_id_organizer",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_audio_upload"),
        sa.UniqueConstraint("token", name="uq_audio_upload_token"),
    )
    op.create_table(
        "audio_upload_file",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("upload_id", sa.Integer(), nullable=False),
        sa.Column("file_name", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("extension", sa.String(16), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=True),
        sa.Column("problem", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["upload_id"],
            ["audio_upload.id"],
            ondelete="CASCADE",
            name="fk_audio_upload_file_upload_id_audio_upload",
        ),
        sa.ForeignKeyConstraint(
            ["sha256"], ["audio_blob.sha256"], name="fk_audio_upload_file_sha256_audio_blob"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_audio_upload_file"),
    )
    # one usable file of each name and extension an upload: a second is a duplicate
    op.create_index(
        "ix_audio_upload_file_usable",
        "audio_upload_file",
        ["upload_id", "name", "extension"],
        unique=True,
        sqlite_where=sa.text("sha256 IS NOT NULL"),
        postgresql_where=sa.text("sha256 IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_audio_upload_file_usable", table_name="audio_upload_file")
    op.drop_table("audio_upload_file")
    op.drop_table("audio_upload")
    op.drop_table("audio_blob")
