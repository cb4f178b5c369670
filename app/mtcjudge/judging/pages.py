"""The assessor's HTML pages: welcome and consent, and the judging page.

The judging page is a shell; its script talks to the JSON API under ``/api/a/{token}/``, and
plays the clips :mod:`mtcjudge.judging.clip_pages` serves.
"""

from __future__ import annotations

import logging
from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy.orm import Session

from mtcjudge.deps import SessionDep
from mtcjudge.errors import InvalidInput, NotFound
from mtcjudge.judging.params import CHECK_TOKEN
from mtcjudge.judging.repository import context as context_queries
from mtcjudge.models import Assessor, Campaign
from mtcjudge.web import templates

__all__ = ["UNKNOWN_LINK", "pages_router"]

logger = logging.getLogger(__name__)

pages_router = APIRouter(include_in_schema=False, dependencies=[CHECK_TOKEN])

UNKNOWN_LINK = (
    "This invitation link is not valid. It may be incomplete, or the organizer may have "
    "replaced it with a new one."
)
SECONDS_PER_JUDGMENT = 30


def _assessor(session: Session, token: str) -> Assessor:
    assessor = context_queries.assessor_by_token(session, token)
    if assessor is None:
        raise NotFound(UNKNOWN_LINK)
    return assessor


async def _consent_given(request: Request) -> bool:
    # An urlencoded form read by hand: one checkbox does not justify python-multipart.
    fields = parse_qs((await request.body()).decode("utf-8", errors="replace"))
    return fields.get("consent", [""])[0] in ("yes", "on", "1", "true")


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
    context_queries.mark_consented(session, assessor)
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
