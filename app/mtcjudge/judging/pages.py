"""The assessor's HTML pages: welcome and consent, the judging page, and the audio clips.

The judging page is a shell; its script talks to the JSON API under ``/api/a/{token}/``.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from mtcjudge.deps import SessionDep
from mtcjudge.errors import InvalidInput, NotFound
from mtcjudge.judging import repository
from mtcjudge.judging.params import CHECK_DOCUMENT_ID, CHECK_TOKEN
from mtcjudge.models import Assessor, Campaign
from mtcjudge.web import templates

__all__ = ["pages_router"]

pages_router = APIRouter(include_in_schema=False, dependencies=[CHECK_TOKEN])

UNKNOWN_LINK = (
    "This invitation link is not valid. It may be incomplete, or the organizer may have "
    "replaced it with a new one."
)
SECONDS_PER_JUDGMENT = 30


def _assessor(session: Session, token: str) -> Assessor:
    assessor = repository.assessor_by_token(session, token)
    if assessor is None:
        raise NotFound(UNKNOWN_LINK)
    return assessor


async def _consent_given(request: Request) -> bool:
    # An urlencoded form read by hand: one checkbox does not justify python-multipart.
    fields = parse_qs((await request.body()).decode("utf-8", errors="replace"))
    return fields.get("consent", [""])[0] in ("yes", "on", "1", "true")


def _media_type(audio_type: str | None, path: Path) -> str:
    # audio_type may be a MIME type ("audio/wav") or a bare format name ("wav", "mp3")
    if audio_type and "/" in audio_type:
        return audio_type
    guess_from = f"clip.{audio_type}" if audio_type else path.name
    return mimetypes.guess_type(guess_from)[0] or "application/octet-stream"


def _welcome_page(
    request: Request, session: Session, assessor: Assessor, token: str, *, consent_missing: bool
) -> Response:
    """Instructions and consent; shown again (400) when the box was not ticked."""
    return templates.TemplateResponse(
        request,
        "assessor_welcome.html",
        {
            "assessor": assessor,
            "campaign": session.get_one(Campaign, assessor.campaign_id),
            "token": token,
            "seconds_per_judgment": SECONDS_PER_JUDGMENT,
            "consent_missing": consent_missing,
        },
        status_code=InvalidInput.status if consent_missing else 200,
    )


@pages_router.get("/a/{token}", name="assessor_welcome")
def welcome(request: Request, session: SessionDep, token: str) -> Response:
    return _welcome_page(request, session, _assessor(session, token), token, consent_missing=False)


@pages_router.post("/a/{token}/consent", name="assessor_consent")
def consent(
    request: Request,
    session: SessionDep,
    token: str,
    given: Annotated[bool, Depends(_consent_given)],
) -> Response:
    assessor = _assessor(session, token)
    if not given:
        return _welcome_page(request, session, assessor, token, consent_missing=True)
    repository.mark_consented(session, assessor)
    return RedirectResponse(request.url_for("judging_page", token=token).path, status_code=303)


@pages_router.get("/a/{token}/judge", name="judging_page")
def judging_page(request: Request, session: SessionDep, token: str) -> Response:
    assessor = _assessor(session, token)
    if assessor.consented_at is None:
        return RedirectResponse(
            request.url_for("assessor_welcome", token=token).path, status_code=303
        )
    campaign = session.get_one(Campaign, assessor.campaign_id)
    return templates.TemplateResponse(
        request,
        "judge.html",
        {
            "assessor": assessor,
            "campaign": campaign,
            "token": token,
            "api_base": f"/api/a/{token}",
            "closed": campaign.status == "closed",
        },
    )


@pages_router.get(
    "/a/{token}/audio/{document_id}", name="assessor_audio", dependencies=[CHECK_DOCUMENT_ID]
)
def audio(session: SessionDep, token: str, document_id: int) -> Response:
    assessor = _assessor(session, token)
    document = repository.playable_document(session, assessor.id, document_id)
    if document is None or not document.audio_path:
        raise NotFound("This clip is not part of your pairs.")
    path = Path(document.audio_path)
    if not path.is_file():
        raise NotFound(
            "This clip's audio file is missing on the server; please tell the organizer."
        )
    media_type = _media_type(document.audio_type, path)
    # FileResponse answers Range requests (206), which lets the browser seek without
    # downloading the whole clip.
    return FileResponse(
        path, media_type=media_type, headers={"Cache-Control": "private, max-age=3600"}
    )
