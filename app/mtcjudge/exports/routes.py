"""Organizer API of the exports: ``GET /api/campaigns/{slug}/export/{what}`` (docs/exports.md).

The export is written in one transaction on a worker thread to a spooled temporary file (in
memory up to 1 MiB, then on disk), then streamed to the client from it: the database is read
as fast as it answers and never waits for a slow client, and memory stays bounded.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import IO, Annotated, Literal, TypeAlias

import anyio
import anyio.to_thread
from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import StreamingResponse
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.campaigns.routes import CHECK_SLUG
from mtcjudge.db import session_scope
from mtcjudge.deps import CurrentOrganizer
from mtcjudge.exports import service
from mtcjudge.exports.formats import MEDIA_TYPES, WHATS
from mtcjudge.schemas import error_responses

__all__ = ["router"]

router = APIRouter(
    prefix="/api/campaigns",
    tags=["organizer"],
    responses=error_responses(400, 401, 404, 409, 422, 503),
    dependencies=[CHECK_SLUG],
)

#: one export at a time per process (estimates and results build engines: seconds of CPU)
_EXPORTS = anyio.CapacityLimiter(1)
SPOOL_BYTES = 1 << 20
CHUNK_BYTES = 1 << 16

# FastAPI reads the choices of these annotations at run time: the kinds of export and the file
# formats, each listed once (mtcjudge.exports.formats); to mypy they are plain values
What: TypeAlias = Literal[WHATS]  # type: ignore[valid-type]
FileFormat: TypeAlias = Literal[tuple(MEDIA_TYPES)]  # type: ignore[valid-type]


def _spooled(
    factory: sessionmaker[Session], slug: str, spec: service.ExportSpec
) -> tuple[IO[bytes], str]:
    """The export written to a spooled file in one transaction (one snapshot), rewound; and
    its file name."""
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
    try:
        with session_scope(factory) as session:
            service.begin_snapshot(session)
            written = service.write_export(session, slug, spec, spool)  # type: ignore[arg-type]
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool, written.name


def _chunks(spool: IO[bytes]) -> Iterator[bytes]:
    try:
        while chunk := spool.read(CHUNK_BYTES):
            yield chunk
    finally:
        spool.close()


@router.get(
    "/{slug}/export/{what}",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "the export, as an attachment",
            "content": {media: {} for media in sorted(set(MEDIA_TYPES.values()))},
        }
    },
)
async def export_campaign(
    slug: str,
    what: Annotated[
        What,
        Path(
            description="qrels (TREC), judgments (every one), estimates (unjudged pairs), "
            "entries (every system's scored results: what the engine expects of each, from "
            "which the results are rebuilt), offsets (the estimator's learnt offsets and "
            "variance factor, for the results' variances), results (every measure), runs "
            "(TREC), assessors (each one's judgments, set-aside "
            "and pause state and reliability), bundle (zip of all, with a manifest)"
        ),
    ],
    request: Request,
    _organizer: CurrentOrganizer,
    scale: Annotated[
        Literal["fine", "broad"] | None,
        Query(
            description="scale of qrels, estimates, entries, offsets and results (default: the "
            "campaign's)"
        ),
    ] = None,
    format: Annotated[
        FileFormat | None,
        Query(
            description="qrels: trec; runs: trec (default: every system in one file, told "
            "apart by the tag column, which trec_eval, ir_measures, pytrec_eval and ranx read "
            "as one run) or zip (runs/SYSTEM.txt, one TREC file per system, as those tools "
            "take them); judgments, estimates, entries: csv (default) or jsonl; assessors: csv "
            "(default) or json; offsets, results: json; bundle: zip"
        ),
    ] = None,
    aggregate: Annotated[
        Literal["mean", "median"],
        Query(
            description="several judgments of a pair in the qrels: mean or median, rounded half up"
        ),
    ] = "mean",
    allow_empty: Annotated[
        bool,
        Query(
            description="export a file without rows (qrels without a line, a CSV with its "
            "header alone) rather than answer 409 empty_export, which says why it is empty"
        ),
    ] = False,
) -> StreamingResponse:
    """A campaign's export for researchers: ``qrels`` (TREC ``qid 0 docno rel``, one line per
    judged pair), ``judgments`` (every judgment, long format), ``estimates`` (the unjudged
    pool pairs' expected relevance and variance), ``entries`` (every result a system is
    scored on, judged or not, with what the campaign's engine expects of it: the results'
    means are the measures' weighted sums of these), ``offsets`` (what the estimator learnt
    beyond the entries, for the results' variances), ``results`` (the results document for every
    measure: ``cg`` = CG@k; ``dcg`` = MIREX nDCG@k, normalised by an all-maximum list;
    ``ndcg`` = trec_eval/ir_measures nDCG@k, normalised by the ideal ordering; ``rbp``),
    ``runs`` (TREC run file; ``format=zip``: one file per system), ``assessors`` (each
    assessor by pseudonym: judgments counted, set aside and quality trials, set-aside and
    pause state, reliability) or ``bundle`` (a zip of all, with grades and a manifest).

    An export that would have no rows (qrels on a scale nothing was judged on, estimates of
    a fully judged campaign, no assessors yet...) is a 409 ``empty_export`` saying why,
    unless ``allow_empty=true``."""
    spec = service.ExportSpec(what, scale, format, aggregate, allow_empty)
    factory = request.app.state.session_factory
    spool, name = await anyio.to_thread.run_sync(_spooled, factory, slug, spec, limiter=_EXPORTS)
    return StreamingResponse(
        _chunks(spool),
        media_type=spec.media_type,
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
