"""Assessor JSON API (``/api/a/{token}/...``); see docs/web-architecture.md."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from sqlalchemy.orm import Session

from app.deps import SessionDep
from app.judging import service
from app.judging.engine_cache import EngineCache
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
from app.models import Document, Judgment, Query
from app.schemas import error_responses

router = APIRouter(
    prefix="/api/a/{token}",
    tags=["assessor"],
    dependencies=[CHECK_TOKEN],
    # path errors are 404 (see app.main): 422 is only a malformed body's
    responses=error_responses(403, 404, 422, 503),
)
_BODY_ERRORS = error_responses(400, 409, 413)


def get_cache(request: Request) -> EngineCache:
    cache: EngineCache = request.app.state.engine_cache
    return cache


CacheDep = Annotated[EngineCache, Depends(get_cache)]


def _clip(session: Session, token: str, document_id: int) -> ClipOut:
    document = session.get(Document, document_id)
    if document is None or document.audio_path is None:
        return ClipOut(audio_url=None, duration_seconds=None, audio_type=None)
    return ClipOut(
        audio_url=f"/a/{token}/audio/{document_id}",
        duration_seconds=document.duration_seconds,
        audio_type=document.audio_type,
    )


def _judgment_out(session: Session, token: str, judgment: Judgment) -> JudgmentOut:
    return JudgmentOut(
        id=judgment.id,
        broad=judgment.broad,
        fine=judgment.fine,
        created_at=judgment.created_at,
        revision=judgment.revision,
        query=_clip(session, token, _query_document(session, judgment.query_id)),
        candidate=_clip(session, token, judgment.document_id),
    )


def _query_document(session: Session, query_id: int) -> int:
    query = session.get(Query, query_id)
    return query.document_id if query is not None else -1


@router.get("/next")
def next_pair(token: str, session: SessionDep, cache: CacheDep) -> NextOut:
    result = service.next_pair(session, cache, token)
    pair = None
    if result.lease is not None:
        lease = result.lease
        pair = PairOut(
            lease_id=lease.id,
            expires_at=lease.expires_at,
            query=_clip(session, token, _query_document(session, lease.query_id)),
            candidate=_clip(session, token, lease.document_id),
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
    token: str, body: JudgmentIn, session: SessionDep, cache: CacheDep, response: Response
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
    progress = service.progress(session, cache, token)
    return JudgmentResponse(
        judgment=_judgment_out(session, token, judgment), progress=ProgressOut(**asdict(progress))
    )


@router.put("/judgments/{judgment_id}", dependencies=[CHECK_JUDGMENT_ID], responses=_BODY_ERRORS)
def revise(
    token: str, judgment_id: int, body: RevisionIn, session: SessionDep, cache: CacheDep
) -> JudgmentResponse:
    judgment = service.revise_judgment(
        session, token, judgment_id, broad=body.broad, fine=body.fine
    )
    progress = service.progress(session, cache, token)
    return JudgmentResponse(
        judgment=_judgment_out(session, token, judgment), progress=ProgressOut(**asdict(progress))
    )


@router.get("/history")
def history(token: str, session: SessionDep) -> list[JudgmentOut]:
    return [_judgment_out(session, token, j) for j in service.recent(session, token)]


@router.get("/progress")
def progress(token: str, session: SessionDep, cache: CacheDep) -> ProgressOut:
    return ProgressOut(**asdict(service.progress(session, cache, token)))


@router.post("/pause", status_code=204)
def pause(token: str, session: SessionDep) -> Response:
    service.pause(session, token)
    return Response(status_code=204)
