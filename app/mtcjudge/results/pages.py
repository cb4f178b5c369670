"""Organizer pages of a campaign: ``GET /campaigns/{slug}``, the live dashboard.

The page is a frame: its script (static/js/dashboard.js) reads the results document from
``/api/campaigns/{slug}/results`` and keeps it current from the event stream, so the page
shows what the API shows and nothing is computed twice.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from mtcjudge.campaigns import service as campaigns
from mtcjudge.deps import CurrentOrganizer, SessionDep
from mtcjudge.errors import CampaignNotFound
from mtcjudge.web import NO_STORE, templates

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/campaigns/{slug}", name="dashboard")
def dashboard(
    slug: str, request: Request, session: SessionDep, organizer: CurrentOrganizer
) -> Response:
    """The campaign's live dashboard (signed-out visitors get the sign-in form, a 401)."""
    try:
        campaign = campaigns.get_campaign(session, slug)
    except CampaignNotFound as error:
        return templates.TemplateResponse(
            request,
            "error.html",
            {"status": 404, "message": str(error), "organizer": organizer},
            status_code=404,
            headers=NO_STORE,
        )
    return templates.TemplateResponse(
        request,
        "dashboard.html",
        {"campaign": campaign, "organizer": organizer},
        headers=NO_STORE,
    )
