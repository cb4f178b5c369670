"""Organizer API of the report: ``GET /api/campaigns/{slug}/report?format=html|json&scale=``
(docs/reports.md).

The report is built in one transaction on a worker thread (it builds engines for the
measures: seconds of CPU on a large campaign), one at a time per process, and sent as an
attachment: the HTML is a file to keep and open offline, not a page of the app.
"""

from __future__ import annotations

import io
from typing import Annotated, Literal

import anyio
import anyio.to_thread
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from mtcjudge.campaigns.routes import CHECK_SLUG
from mtcjudge.db import session_scope
from mtcjudge.deps import CurrentOrganizer
from mtcjudge.reports import service
from mtcjudge.schemas import error_responses

__all__ = ["router"]

router = APIRouter(
    prefix="/api/campaigns",
    tags=["organizer"],
    responses=error_responses(400, 401, 404, 422, 503),
    dependencies=[CHECK_SLUG],
)

_REPORTS = anyio.CapacityLimiter(1)


@router.get(
    "/{slug}/report",
    response_class=Response,
    responses={
        200: {
            "description": "the report, as an attachment",
            "content": {media: {} for media in sorted(service.MEDIA_TYPES.values())},
        }
    },
)
async def campaign_report(
    slug: str,
    request: Request,
    _organizer: CurrentOrganizer,
    format: Annotated[
        Literal["html", "json"],
        Query(
            description="html: one self-contained file (CSS inline, charts as inline SVG, no "
            "network); json: the same document"
        ),
    ] = "html",
    scale: Annotated[
        Literal["fine", "broad"] | None,
        Query(description="scale of the rankings and the MIREX analysis (default: the campaign's)"),
    ] = None,
) -> Response:
    """The campaign's report: the ranking with intervals on every measure (``cg`` = CG@k;
    ``dcg`` = MIREX nDCG@k, normalised by an all-maximum list; ``ndcg`` = trec_eval nDCG@k,
    normalised by the ideal ordering; ``rbp``), the pairs' confidence matrix, the confidence
    against judgments, judgments against the pool, the assessors by pseudonym, Krippendorff's
    alpha, and the MIREX analysis once every pool pair is judged."""
    spec = service.ReportSpec(scale, format)
    factory = request.app.state.session_factory

    def produce() -> tuple[bytes, str]:
        buffer = io.BytesIO()
        with session_scope(factory) as session:
            name = service.write_report(session, slug, spec, buffer)
        return buffer.getvalue(), name

    body, name = await anyio.to_thread.run_sync(produce, limiter=_REPORTS)
    return Response(
        body,
        media_type=spec.media_type,
        headers={
            "Content-Disposition": f'attachment; filename="{name}"',
            "Cache-Control": "no-store",
        },
    )
