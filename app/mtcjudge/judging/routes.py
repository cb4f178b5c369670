"""Assessor JSON API (``/api/a/{token}/...``); see docs/web-architecture.md."""

from __future__ import annotations

from dataclasses import asdict
from functools import partial
from typing import Any

from fastapi import APIRouter, Request, Response
from sqlalchemy.orm import Session

from mtcjudge.clips.rendition import SERVED_MIME
from mtcjudge.deps import transaction
from mtcjudge.judging import service
from mtcjudge.judging.clip_urls import candidate_clip_url, query_clip_url
from mtcjudge.judging.params import CHECK_JUDGMENT_ID, CHECK_TOKEN
from mtcjudge.judging.repository import progress as progress_queries
from mtcjudge.judging.schemas import (
    ClipOut,
    JudgmentIn,
    JudgmentOut,
    JudgmentResponse,
    NextOut,
    PairOut,
    ProgressOut,
    RevisionIn,
)
from mtcjudge.models import Judgment, as_utc
from mtcjudge.schemas import error_responses

router = APIRouter(
    prefix="/api/a/{token}",
    tags=["assessor"],
    dependencies=[CHECK_TOKEN],
    # path errors are 404 (see mtcjudge.main): 422 is only a malformed body's
    responses=error_responses(403, 404, 422, 503),
)
_BODY_ERRORS = error_responses(400, 409, 413)


def _clip(token: str, lease_id: int | None, which: str, clip: progress_queries.Clip) -> ClipOut:
    """A clip as the assessor sees it: a query's URL is the same for every pair of the query,
    a candidate's names the lease, never the document, so nothing tells a quality trial from a
    pool pair (:mod:`mtcjudge.judging.clip_urls`)."""
    if not clip.has_audio or lease_id is None:
        return ClipOut(audio_url=None, duration_seconds=None, audio_type=None)
    if which == "query":
        url = query_clip_url(token, clip.document_id)
    else:
        url = candidate_clip_url(token, lease_id)
    return ClipOut(
        audio_url=url,
        duration_seconds=clip.duration_seconds,
        audio_type=SERVED_MIME,  # every clip is served as MP3 (mtcjudge.clips.rendition)
        loudness_lufs=clip.loudness_lufs,
        peaks=list(clip.peaks) if clip.peaks else None,
    )


def _judgment_out(session: Session, token: str, judgment: Judgment | Any) -> JudgmentOut:
    """A stored judgment (an object, or a row of ``judgment_queries.JUDGMENT_COLUMNS``); its clips
    are those of the lease it answered."""
    view = progress_queries.pair_view(
        session,
        judgment.campaign_id,
        judgment.query_id,
        judgment.document_id,
        kind=judgment.kind,
        lease_id=judgment.lease_id,
        assessor_id=judgment.assessor_id,
    )
    return JudgmentOut(
        query_number=view.query_number,
        candidate_number=view.candidate_number,
        id=judgment.id,
        broad=judgment.broad,
        fine=judgment.fine,
        created_at=as_utc(judgment.created_at),
        revision=judgment.revision,
        query=_clip(token, judgment.lease_id, "query", view.query),
        candidate=_clip(token, judgment.lease_id, "candidate", view.candidate),
    )


# Each route does its database work, response included, in one call on a worker thread that
# also commits (mtcjudge.deps.transaction): a request never holds a connection while it waits
# for a thread, and never waits for a thread while it holds a connection.


def _next(session: Session, token: str) -> NextOut:
    result = service.next_pair(session, token)
    pair = None
    if result.lease is not None:
        lease = result.lease
        view = progress_queries.pair_view(
            session,
            lease.campaign_id,
            lease.query_id,
            lease.document_id,
            kind=lease.kind,
            lease_id=lease.id,
            assessor_id=result.assessor_id,
        )
        pair = PairOut(
            query_number=view.query_number,
            candidate_number=view.candidate_number,
            lease_id=lease.id,
            expires_at=as_utc(lease.expires_at),
            query=_clip(token, lease.id, "query", view.query),
            candidate=_clip(token, lease.id, "candidate", view.candidate),
            same_query_as_previous=result.same_query_as_previous,
            listen_seconds=result.listen_seconds,
        )
    return NextOut(
        status=result.status,
        pair=pair,
        progress=ProgressOut(**asdict(result.progress)),
        message=result.message,
    )


@router.get("/next")
async def next_pair(token: str, request: Request) -> NextOut:
    return await transaction(request, partial(_next, token=token))


def _submit(session: Session, token: str, body: JudgmentIn) -> tuple[JudgmentResponse, bool]:
    judgment, created = service.submit_judgment(
        session,
        token,
        lease_id=body.lease_id,
        broad=body.broad,
        fine=body.fine,
        client_id=body.client_id,
        query_listen_ms=body.query_listen_ms,
        candidate_listen_ms=body.candidate_listen_ms,
    )
    assert judgment.assessor_id is not None  # an assessor's own judgment
    progress = service.progress_of(session, judgment.campaign_id, judgment.assessor_id)
    answer = JudgmentResponse(
        judgment=_judgment_out(session, token, judgment), progress=ProgressOut(**asdict(progress))
    )
    return answer, created


@router.post("/judgments", status_code=201, responses={**_BODY_ERRORS, **error_responses(410)})
async def submit(
    token: str, body: JudgmentIn, request: Request, response: Response
) -> JudgmentResponse:
    answer, created = await transaction(request, partial(_submit, token=token, body=body))
    if not created:
        response.status_code = 200
    return answer


def _revise(session: Session, token: str, judgment_id: int, body: RevisionIn) -> JudgmentResponse:
    judgment = service.revise_judgment(
        session, token, judgment_id, broad=body.broad, fine=body.fine
    )
    assert judgment.assessor_id is not None  # an assessor's own judgment
    progress = service.progress_of(session, judgment.campaign_id, judgment.assessor_id)
    return JudgmentResponse(
        judgment=_judgment_out(session, token, judgment), progress=ProgressOut(**asdict(progress))
    )


@router.put("/judgments/{judgment_id}", dependencies=[CHECK_JUDGMENT_ID], responses=_BODY_ERRORS)
async def revise(
    token: str, judgment_id: int, body: RevisionIn, request: Request
) -> JudgmentResponse:
    work = partial(_revise, token=token, judgment_id=judgment_id, body=body)
    return await transaction(request, work)


def _history(session: Session, token: str) -> list[JudgmentOut]:
    return [_judgment_out(session, token, j) for j in service.recent(session, token)]


@router.get("/history")
async def history(token: str, request: Request) -> list[JudgmentOut]:
    return await transaction(request, partial(_history, token=token))


def _progress(session: Session, token: str) -> ProgressOut:
    return ProgressOut(**asdict(service.progress(session, token)))


@router.get("/progress")
async def progress(token: str, request: Request) -> ProgressOut:
    return await transaction(request, partial(_progress, token=token))


@router.post("/pause", status_code=204)
async def pause(token: str, request: Request) -> Response:
    await transaction(request, partial(service.pause, token=token))
    return Response(status_code=204)
