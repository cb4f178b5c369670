"""Organizer API for reusing judgments (docs/reuse.md): a campaign from an export bundle,
and new systems over an existing campaign.

``POST /api/campaigns/import-bundle`` takes the zip itself as the request body
(``application/zip``); ``POST /api/campaigns/{slug}/runs`` takes run files by name, as the
browser's import does. Both check everything before they store anything, and run in the
request's one transaction: a refused request leaves nothing behind.
"""

from __future__ import annotations

import io
from dataclasses import asdict
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request, status
from pydantic import BaseModel, ConfigDict, Field

from mtcjudge import audit
from mtcjudge.campaigns import creation, repository, service
from mtcjudge.campaigns import preview as previews
from mtcjudge.campaigns.changes import AddRunsReport
from mtcjudge.campaigns.routes import CHECK_SLUG, UploadedFileIn
from mtcjudge.campaigns.schemas import ORDER_BY_HELP, InputWarningOut, warnings_field
from mtcjudge.campaigns.spec import SLUG_MAX, SLUG_PATTERN
from mtcjudge.deps import CurrentOrganizer, SessionDep
from mtcjudge.errors import InvalidInput
from mtcjudge.exports.bundle_read import open_bundle
from mtcjudge.exports.restore import restore_campaign
from mtcjudge.ingest.formats import InputError
from mtcjudge.schemas import CleanText, error_responses

__all__ = ["AddRunsIn", "AddRunsOut", "BundleImported", "router"]

router = APIRouter(
    prefix="/api/campaigns", tags=["organizer"], responses=error_responses(401, 403, 422, 503)
)


class BundleImported(BaseModel):
    """The campaign made from a bundle; its assessors (``A1``, ``A2``, ...) need new links
    (``POST /api/campaigns/{slug}/assessors/{id}/relink``)."""

    slug: str
    status: str
    source_slug: str = Field(description="the slug of the exported campaign")
    exported_at: str | None
    systems: int
    queries: int
    documents: int
    pool_pairs: int
    judgments: int
    leases: int
    assessors: int
    audio_found: int
    audio_missing: int


async def _raw_body(request: Request) -> bytes:
    """The request body as it came (the body limit applies: mtcjudge.middleware)."""
    return await request.body()


@router.post(
    "/import-bundle",
    status_code=status.HTTP_201_CREATED,
    responses=error_responses(400, 413),
    openapi_extra={
        "requestBody": {
            "required": True,
            # the zip's bytes as they are (sent as application/zip or octet-stream)
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
            },
        }
    },
)
def import_bundle(
    data: Annotated[bytes, Depends(_raw_body)],
    session: SessionDep,
    organizer: CurrentOrganizer,
    slug: Annotated[
        str | None,
        Query(
            pattern=SLUG_PATTERN,
            max_length=SLUG_MAX,
            description="the new campaign's slug (default: the exported campaign's)",
        ),
    ] = None,
    audio_dir: Annotated[
        str | None,
        Query(max_length=4096, description="folder of <doc_id>.<ext> clips on the server"),
    ] = None,
    name: Annotated[
        str, Query(max_length=255, description="the file's name, shown in problems")
    ] = "bundle.zip",
) -> BundleImported:
    """Create a campaign from an export bundle (the body: the zip ``GET
    /api/campaigns/{slug}/export/bundle`` sent). Every member's SHA-256 is checked first; a
    changed, incomplete or foreign zip, a bad row (named by member, line and field) or a
    taken slug is a 400 and nothing is stored."""
    if slug is not None and repository.campaign_by_slug(session, slug) is not None:
        raise InvalidInput(f"slug {slug!r} is already taken by another campaign")
    directory, problem = previews.check_audio_dir(audio_dir)
    if problem is not None:
        raise InvalidInput(str(problem))
    try:
        bundle = open_bundle(io.BytesIO(data), name)
        try:
            campaign, report = restore_campaign(
                session, bundle, slug=slug, audio_dir=directory, actor=organizer.actor
            )
        finally:
            bundle.archive.close()
    except InputError as exc:
        raise InvalidInput(str(exc)) from exc
    return BundleImported(
        slug=campaign.slug,
        status=campaign.status,
        source_slug=report.source_slug,
        exported_at=report.exported_at,
        systems=report.n_systems,
        queries=report.n_queries,
        documents=report.n_documents,
        pool_pairs=report.n_pool_pairs,
        judgments=report.n_judgments,
        leases=report.n_leases,
        assessors=report.n_assessors,
        audio_found=report.audio_found,
        audio_missing=report.audio_missing,
    )


class AddRunsIn(BaseModel):
    """New systems' run files by name (one file or one per system), and optionally the
    metadata and the audio folder of the documents new to the campaign."""

    model_config = ConfigDict(extra="forbid")

    runs: list[UploadedFileIn] = Field(min_length=1, max_length=1000)
    metadata: UploadedFileIn | None = None
    audio_dir: CleanText | None = Field(
        default=None, max_length=4096, description="folder of <doc_id>.<ext> clips on the server"
    )
    order_by: Literal["rank", "score"] = Field(default="rank", description=ORDER_BY_HELP)


class AddRunsOut(BaseModel):
    """What was added, and where judging stands now (``stop_reason`` null: it goes on)."""

    slug: str
    systems: list[str]
    results: int
    new_documents: int
    pool_pairs_before: int
    pool_pairs: int
    new_pairs_judged: int = Field(description="new pool pairs that were judged already")
    judgments_kept: int
    ranking_confidence: float
    system_pairs: int
    system_pairs_settled: int
    stop_reason_before: str | None
    stop_reason: str | None
    unplayable_new_pairs: int
    order_by: str = Field(description=ORDER_BY_HELP)
    warnings: list[InputWarningOut] = warnings_field()


def add_runs_from_upload(
    session: SessionDep, slug: str, body: AddRunsIn, actor: audit.Actor
) -> tuple[AddRunsReport, list[previews.Problem]]:
    """Read the uploaded files (a problem names the file and line) and add the systems;
    with the warnings about the lists whose scores contradict their ranks."""
    campaign = service.get_campaign(session, slug)
    parsed = previews.read_upload(
        previews.Upload(
            runs=[previews.UploadedFile(f.name, f.text) for f in body.runs],
            metadata=None
            if body.metadata is None
            else previews.UploadedFile(body.metadata.name, body.metadata.text),
            order_by=body.order_by,
        )
    )
    directory, audio_problem = previews.check_audio_dir(body.audio_dir)
    problems = parsed.problems + ([audio_problem] if audio_problem else [])
    if problems or parsed.runs is None:
        raise InvalidInput("; ".join(str(p) for p in problems) or "runs: no run file")
    report = creation.add_runs(
        session, campaign, parsed.runs, parsed.metadata, directory, actor=actor
    )
    return report, previews.score_order_problems(parsed.runs)


@router.post(
    "/{slug}/runs",
    status_code=status.HTTP_201_CREATED,
    dependencies=[CHECK_SLUG],
    responses=error_responses(400, 404, 413),
)
def add_runs(
    slug: str, body: AddRunsIn, session: SessionDep, organizer: CurrentOrganizer
) -> AddRunsOut:
    """Add systems to a campaign: every judgment is kept, the pool grows by the new
    systems' pairs it does not hold yet, and the campaign is planned again at once. A system
    name the campaign has, a query it does not have, or a file problem is a 400. ``warnings``
    name the new lists whose scores contradict their ranks (``order_by`` decides which order
    counts)."""
    report, warnings = add_runs_from_upload(session, slug, body, organizer.actor)
    return AddRunsOut(
        slug=report.slug,
        systems=report.systems,
        results=report.n_results,
        new_documents=report.n_new_documents,
        pool_pairs_before=report.pool_pairs_before,
        pool_pairs=report.pool_pairs,
        new_pairs_judged=report.new_pairs_judged,
        judgments_kept=report.judgments_kept,
        ranking_confidence=report.ranking_confidence,
        system_pairs=report.system_pairs,
        system_pairs_settled=report.system_pairs_settled,
        stop_reason_before=report.stop_reason_before,
        stop_reason=report.stop_reason,
        unplayable_new_pairs=report.n_unplayable_new_pairs,
        order_by=report.order_by,
        warnings=[InputWarningOut(**asdict(w)) for w in warnings],
    )
