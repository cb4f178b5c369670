"""index of the results by (query, document)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27

Choosing an anchor trial asks, for each candidate clip, whether any system retrieved it for
the query. Without this index SQLite answered by scanning the results for every clip, inside
the write-locked transaction of a ``next``: under the stress load benchmark, SQLite judged
3 times slower with trials on.
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_result_query_document", "result", ["query_id", "document_id"])


def downgrade() -> None:
    op.drop_index("ix_result_query_document", table_name="result")
