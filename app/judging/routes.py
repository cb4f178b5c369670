"""Assessor JSON API (``/api/a/{token}/...``); see docs/web-architecture.md."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter, Response
from sqlalchemy.orm import Session

from app.deps import SessionDep
from app.judging import repository, service
from app.judging.params import CHECK_JUDGMENT_ID, CHECK_TOKEN
from app.judging.schemas import (
    ClipOut,
    JudgmentIn,
    JudgmentOut,
    JudgmentResponse,
    NextOut,
    PairOut,
    ProgressOut,
    RevisionIn,
)
from app.models import Judgment
from app.schemas import error_responses

router = APIRouter(
    prefix="/api/a/{token}",
    tags=["assessor"],
    dependencies=[CHECK_TOKEN],
    # path errors are 404 (see app.main): 422 is only a malformed body's
    responses=error_responses(403, 404, 422, 503),
)
_BODY_ERRORS = error_responses(400, 409, 413)


def _clip(token: str, clip: repository.Clip) -> ClipOut:
    if not clip.has_audio:
        return ClipOut(audio_url=None, duration_seconds=None, audio_type=None)
    return ClipOut(
        audio_url=f"/a/{token}/audio/{clip.document_id}",
        duration_seconds=clip.duration_seconds,
        audio_type=clip.audio_type,
    )


def _judgment_out(session: Session, token: str, judgment: Judgment) -> JudgmentOut:
    view = repository.pair_view(
        session, judgment.campaign_id, judgment.query_id, judgment.document_id
    )
    return JudgmentOut(
        query_number=view.query_number,
        candidate_number=view.candidate_number,
        id=judgment.id,
        broad=judgment.broad,
        fine=judgment.fine,
        created_at=service.aware(judgment.created_at),
        revision=judgment.revision,
        query=_clip(token, view.query),
        candidate=_clip(token, view.candidate),
    )


@router.get("/next")
def next_pair(token: str, session: SessionDep) -> NextOut:
    result = service.next_pair(session, token)
    pair = None
    if result.lease is not None:
        lease = result.lease
        view = repository.pair_view(session, lease.campaign_id, lease.query_id, lease.document_id)
        pair = PairOut(
            query_number=view.query_number,
            candidate_number=view.candidate_number,
            lease_id=lease.id,
            expires_at=service.aware(lease.expires_at),
            query=_clip(token, view.query),
            candidate=_clip(token, view.candidate),
            same_query_as_previous=result.same_query_as_previous,
        )
    return NextOut(
        status=result.status,
        pair=pair,
        progress=ProgressOut(**asdict(result.progress)),
        message=result.message,
    )


@router.post("/judgments", status_code=201, responses={**_BODY_ERRORS, **error_responses(410)})
def submit(
    token: str, body: JudgmentIn, session: SessionDep, response: Response
) -> JudgmentResponse:
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
    if not created:
        response.status_code = 200
    progress = service.progress(session, token)
    return JudgmentResponse(
        judgment=_judgment_out(session, token, judgment), progress=ProgressOut(**asdict(progress))
    )


@router.put("/judgments/{judgment_id}", dependencies=[CHECK_JUDGMENT_ID], responses=_BODY_ERRORS)
def revise(token: str, judgment_id: int, body: RevisionIn, session: SessionDep) -> JudgmentResponse:
    judgment = service.revise_judgment(
        session, token, judgment_id, broad=body.broad, fine=body.fine
    )
    progress = service.progress(session, token)
    return JudgmentResponse(
        judgment=_judgment_out(session, token, judgment), progress=ProgressOut(**asdict(progress))
    )


@router.get("/history")
def history(token: str, session: SessionDep) -> list[JudgmentOut]:
    return [_judgment_out(session, token, j) for j in service.recent(session, token)]


@router.get("/progress")
def progress(token: str, session: SessionDep) -> ProgressOut:
    return ProgressOut(**asdict(service.progress(session, token)))


@router.post("/pause", status_code=204)
def pause(token: str, session: SessionDep) -> Response:
    service.pause(session, token)
    return Response(status_code=204)
