"""Queries of the campaigns feature. Repositories only ``flush()``; the caller commits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, or_, select, update
from sqlalchemy.orm import Session

from mtcjudge.models import (
    Assessor,
    AudioUpload,
    AudioUploadFile,
    Base,
    Campaign,
    Document,
    Judgment,
    Query,
    Result,
    System,
)

__all__ = [
    "CampaignCounts",
    "add",
    "add_upload_bytes",
    "all_campaigns",
    "bulk_insert",
    "campaign_by_slug",
    "campaign_counts",
    "complete_upload",
    "document_ids",
    "documents_without_audio",
    "query_ids",
    "set_audio",
    "slugs_starting_with",
    "system_ids",
    "upload_by_token",
    "upload_file_rows",
    "usable_upload_file",
]


@dataclass(frozen=True)
class CampaignCounts:
    systems: int
    queries: int
    documents: int
    results: int
    assessors: int
    judgments: int
    imported_judgments: int


def add(session: Session, row: Base) -> None:
    session.add(row)
    session.flush()


def bulk_insert(session: Session, model: type[Base], rows: Sequence[dict[str, Any]]) -> None:
    # one executemany (batched "insertmanyvalues" on Postgres) instead of a unit-of-work
    # flush per object: a MIREX-sized import is ~20,000 rows
    if rows:
        session.execute(insert(model), list(rows))


def campaign_by_slug(session: Session, slug: str) -> Campaign | None:
    return session.scalars(select(Campaign).where(Campaign.slug == slug)).one_or_none()


def all_campaigns(session: Session) -> list[Campaign]:
    return list(session.scalars(select(Campaign).order_by(Campaign.created_at, Campaign.id)))


def slugs_starting_with(session: Session, base: str) -> set[str]:
    """``base`` and the ``base-N`` slugs already taken (slugs hold no LIKE wildcards)."""
    taken = select(Campaign.slug).where(or_(Campaign.slug == base, Campaign.slug.like(f"{base}-%")))
    return set(session.scalars(taken))


def system_ids(session: Session, campaign_id: int) -> dict[str, int]:
    rows = session.execute(select(System.name, System.id).where(System.campaign_id == campaign_id))
    return dict(rows.all())


def document_ids(session: Session, campaign_id: int) -> dict[str, int]:
    rows = session.execute(
        select(Document.external_id, Document.id).where(Document.campaign_id == campaign_id)
    )
    return dict(rows.all())


def documents_without_audio(session: Session, campaign_id: int) -> set[str]:
    """External ids of the campaign's documents that have no clip."""
    return set(
        session.scalars(
            select(Document.external_id).where(
                Document.campaign_id == campaign_id, Document.audio_path.is_(None)
            )
        )
    )


def set_audio(session: Session, campaign_id: int, clips: dict[str, dict[str, Any]]) -> None:
    """Give stored documents (by external id) their clip: ``audio_path``, ``audio_type``,
    ``duration_seconds``."""
    for external_id, values in clips.items():
        session.execute(
            update(Document)
            .where(Document.campaign_id == campaign_id, Document.external_id == external_id)
            .values(**values)
            .execution_options(synchronize_session=False)
        )


def query_ids(session: Session, campaign_id: int) -> dict[int, int]:
    """Document id -> query id."""
    rows = session.execute(
        select(Query.document_id, Query.id).where(Query.campaign_id == campaign_id)
    )
    return dict(rows.all())


def campaign_counts(session: Session, campaign_id: int) -> CampaignCounts:
    def count(model: type[System | Query | Document | Result | Assessor | Judgment]) -> Any:
        return (
            select(func.count())
            .select_from(model)
            .where(model.campaign_id == campaign_id)
            .scalar_subquery()
        )

    imported = (
        select(func.count())
        .select_from(Judgment)
        .where(Judgment.campaign_id == campaign_id, Judgment.source == "import")
        .scalar_subquery()
    )
    row = session.execute(
        select(
            count(System),
            count(Query),
            count(Document),
            count(Result),
            count(Assessor),
            count(Judgment),
            imported,
        )
    ).one()
    systems, queries, documents, results, assessors, judgments, n_imported = row
    return CampaignCounts(
        systems=systems,
        queries=queries,
        documents=documents,
        results=results,
        assessors=assessors,
        judgments=judgments - n_imported,
        imported_judgments=n_imported,
    )


# ------------------------------------------------------------------ assessors set aside, paused


# ------------------------------------------------------------------ audio from the browser


def upload_by_token(session: Session, token: str) -> AudioUpload | None:
    return session.scalar(select(AudioUpload).where(AudioUpload.token == token))


def upload_file_rows(session: Session, upload_id: int) -> Sequence[AudioUploadFile]:
    """The upload's files in the order they arrived."""
    return session.scalars(
        select(AudioUploadFile)
        .where(AudioUploadFile.upload_id == upload_id)
        .order_by(AudioUploadFile.id)
    ).all()


def usable_upload_file(
    session: Session, upload_id: int, name: str, extension: str
) -> AudioUploadFile | None:
    """The usable file of this name and extension the upload holds already, if any."""
    return session.scalar(
        select(AudioUploadFile).where(
            AudioUploadFile.upload_id == upload_id,
            AudioUploadFile.name == name,
            AudioUploadFile.extension == extension,
            AudioUploadFile.sha256.is_not(None),
        )
    )


def add_upload_bytes(session: Session, upload_id: int, n: int, limit: int) -> bool:
    """Count ``n`` more bytes stored for a receiving upload, unless that passes ``limit``:
    one conditional UPDATE, so two requests at once cannot both pass it."""
    done = session.execute(
        update(AudioUpload)
        .where(
            AudioUpload.id == upload_id,
            AudioUpload.state == "receiving",
            AudioUpload.total_bytes + n <= limit,
        )
        .values(total_bytes=AudioUpload.total_bytes + n)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(done, "rowcount", 0))


def complete_upload(session: Session, upload_id: int) -> None:
    session.execute(
        update(AudioUpload)
        .where(AudioUpload.id == upload_id)
        .values(state="complete")
        .execution_options(synchronize_session=False)
    )
