"""Organizer pages that change a campaign: ``GET /new-campaign`` (upload, preview, create)
and ``/campaigns/{slug}/manage`` (invite, revoke and relink assessors, open, pause, close,
reopen, and the audit log).

The new-campaign page is a form whose script (static/js/manage.js) reads the chosen files
and sends them to the organizer API (``POST /api/campaigns/preview``, then
``/api/campaigns/import``), as the dashboard reads its figures from the API. The management
page is plain forms (each with the session's CSRF token) answered here: it works without
JavaScript, which only adds the copy buttons. New links are shown once, on the answer to the
form that made them (only their hash is stored).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Annotated, Any
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Depends, Request
from fastapi import Path as PathParameter
from fastapi.responses import RedirectResponse, Response
from sqlalchemy.orm import Session

from mtcjudge import audit
from mtcjudge.assessors import actions as assessor_actions
from mtcjudge.assessors import overview as overview
from mtcjudge.auth.principal import Principal
from mtcjudge.campaigns import creation, repository
from mtcjudge.campaigns import service as campaigns
from mtcjudge.campaigns.limits import FLOAT_SETTINGS, INT_SETTINGS
from mtcjudge.campaigns.routes import CHECK_SLUG
from mtcjudge.campaigns.spec import CampaignSpec
from mtcjudge.clips.cut import MAX_EXCERPT_SECONDS, MIN_EXCERPT_SECONDS
from mtcjudge.deps import CurrentOrganizer, SessionDep, SettingsDep
from mtcjudge.errors import CampaignNotFound, InvalidInput, UnplayableNotConfirmed
from mtcjudge.models import Assessor, Campaign, as_utc
from mtcjudge.mtc.factory import CAMPAIGN_ESTIMATORS, DEFAULT_ESTIMATOR, REFERENCE_ESTIMATOR
from mtcjudge.mtc.measures import MEASURE_TITLES, MEASURES
from mtcjudge.mtc.selection import POLICIES
from mtcjudge.security import sign, signed
from mtcjudge.validation import INT32_MAX
from mtcjudge.web import NO_STORE, templates

__all__ = ["MAX_INVITES", "SETTINGS_FIELDS", "STATUS_ACTIONS", "router"]

router = APIRouter(include_in_schema=False)

#: names one invitation form may hold
MAX_INVITES = 200
#: status -> the changes offered from it: (new status, button, what it does)
STATUS_ACTIONS: dict[str, list[tuple[str, str, str]]] = {
    "draft": [
        ("open", "Open", "assessors' links start handing out pairs"),
        ("closed", "Close the campaign", "no more judging; the results stay"),
    ],
    "open": [
        ("draft", "Pause the campaign", "back to draft: assessors are told to come back later"),
        ("closed", "Close the campaign", "no more judging; the results stay"),
    ],
    "closed": [("open", "Reopen", "assessors' links hand out pairs again")],
}
#: what a finished change says at the top of the page (``?done=``)
_DONE = {
    "created": "The campaign is created. Invite assessors, then open it when you are ready.",
    "open": "The campaign is open: assessors' links hand out pairs.",
    "draft": "The campaign is paused (draft): assessors are asked to come back later.",
    "closed": "The campaign is closed.",
    "revoked": "The assessor's link no longer works; their judgments stay.",
    "settings": "The settings are saved.",
    "runs": "The systems are added: every judgment is kept, and assessors are now asked for "
    "the pairs that tell the new systems apart (see the dashboard).",
    "restored": "The campaign is restored from its bundle. Its assessors are A1, A2, …: give "
    "each a new link before they judge again.",
}
#: settings the management page changes (the others define what the judgments mean)
SETTINGS_FIELDS = (
    "name",
    "description",
    "target",
    "lease_minutes",
    "judgments_per_pair",
    "listen_seconds",
    "quality_rate",
)


async def _form(request: Request) -> dict[str, str]:
    """The fields of an urlencoded form (the body is already limited; see mtcjudge.middleware)."""
    content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        return {}
    try:
        text = (await request.body()).decode("utf-8")
    except UnicodeDecodeError:
        return {}
    return {name: values[0] for name, values in parse_qs(text, keep_blank_values=True).items()}


FormDep = Annotated[dict[str, str], Depends(_form)]
AssessorId = Annotated[int, PathParameter(ge=1, le=INT32_MAX)]


@dataclass(frozen=True)
class NewLink:
    """A link made by the form just sent: shown this once."""

    name: str
    link: str


@dataclass(frozen=True)
class Choice:
    value: str
    label: str


# --------------------------------------------------------------------------- new campaign

_SCALES = [
    Choice("fine", "FINE (0–100 slider)"),
    Choice("broad", "BROAD (not similar / somewhat / very similar)"),
]
_ESTIMATORS = {
    DEFAULT_ESTIMATOR: f"{DEFAULT_ESTIMATOR} (recommended)",
    REFERENCE_ESTIMATOR: f"{REFERENCE_ESTIMATOR} (the reference)",
}
_POLICIES = {"confidence": "confidence (recommended)"}


def _choices(values: tuple[str, ...], labels: dict[str, str]) -> list[Choice]:
    return [Choice(v, labels.get(v, v)) for v in values]


@router.get("/new-campaign", name="new_campaign")
def new_campaign(request: Request, settings: SettingsDep, organizer: CurrentOrganizer) -> Response:
    """The upload form: files, the audio (a folder on the server or uploaded), the settings;
    then the preview."""
    defaults = {f.name: f.default for f in fields(CampaignSpec)}
    return templates.TemplateResponse(
        request,
        "campaign_new.html",
        {
            "organizer": organizer,
            "defaults": defaults,
            "ranges": INT_SETTINGS,
            "decimal_ranges": {
                **FLOAT_SETTINGS,
                "excerpt_seconds": (MIN_EXCERPT_SECONDS, MAX_EXCERPT_SECONDS),
                "excerpt_start_fraction": (0.0, 0.99),
            },
            "scales": _SCALES,
            "measures": _choices(MEASURES, MEASURE_TITLES),
            "estimators": _choices(CAMPAIGN_ESTIMATORS, _ESTIMATORS),
            "policies": _choices(POLICIES, _POLICIES),
            "max_import_bytes": settings.max_import_bytes,
            "max_audio_file_bytes": settings.max_audio_file_bytes,
        },
        headers=NO_STORE,
    )


# --------------------------------------------------------------------------- management


def _page(
    request: Request,
    session: SessionDep,
    campaign: Campaign,
    organizer: Principal,
    *,
    notice: str = "",
    error: str = "",
    new_links: list[NewLink] | None = None,
    names: str = "",
    names_error: str = "",
    settings_values: dict[str, Any] | None = None,
    settings_errors: dict[str, str] | None = None,
    confirm_open: bool = False,
    status_code: int = 200,
) -> Response:
    assessors = campaigns.list_assessors(session, campaign)
    # what cannot be played, shown beside Open (which then asks for a confirmation)
    open_warning = None if campaign.status == "open" else creation.open_warning(session, campaign)
    events = [
        audit.ShownEvent(as_utc(e.created_at), e.actor, e.action, e.detail, None, None)
        for e in audit.events(session, campaign.id, limit=100)
    ]
    return templates.TemplateResponse(
        request,
        "campaign_manage.html",
        {
            "organizer": organizer,
            "campaign": campaign,
            "counts": repository.campaign_counts(session, campaign.id),
            "assessors": [(a, _assessor_state(a)) for a in assessors],
            "overview": {o.id: o for o in overview.assessor_overview(session, campaign)},
            "events": events,
            "actions": STATUS_ACTIONS.get(campaign.status, []),
            "notice": notice,
            "error": error,
            "new_links": new_links or [],
            "names": names,
            "names_error": names_error,
            "max_invites": MAX_INVITES,
            "settings": settings_values
            or {
                name: getattr(campaign, name)
                for name in (*SETTINGS_FIELDS, "keep_collecting", "auto_pause")
            },
            "settings_errors": settings_errors or {},
            "ranges": INT_SETTINGS,
            "decimal_ranges": FLOAT_SETTINGS,
            "open_warning": open_warning,
            "confirm_open": confirm_open and open_warning is not None,
        },
        status_code=status_code,
        headers=NO_STORE,
    )


def _assessor_state(assessor: Assessor) -> str:
    if assessor.revoked_at is not None:
        return "revoked"
    return "consented" if assessor.consented_at is not None else "invited"


def _not_found(request: Request, organizer: Principal, message: str) -> Response:
    return templates.TemplateResponse(
        request,
        "error.html",
        {"status": 404, "message": message, "organizer": organizer},
        status_code=404,
        headers=NO_STORE,
    )


def _campaign(session: SessionDep, slug: str) -> Campaign | None:
    try:
        return campaigns.get_campaign(session, slug)
    except CampaignNotFound:
        return None


def _manage_url(campaign: Campaign, done: str) -> str:
    return f"/campaigns/{campaign.slug}/manage?done={done}"


#: the actions on one assessor whose report the page shows after their redirect: the
#: report's figures ride in the address, signed with the organizer's session secret so that
#: no link can make the page say what the server did not (``?done=&assessor=&n=&sig=``)
_ON_ASSESSOR = ("set-aside", "brought-back", "paused", "resumed")


#: a number the report's address may carry: ASCII digits only
_NUMBER = re.compile(r"[0-9]{1,10}")


def _signed_text(campaign: Campaign, done: str, assessor: str, figures: str) -> str:
    # the purpose first: the key (the session's CSRF secret) signs nothing else like it
    return f"manage-report|{campaign.slug}|{done}|{assessor}|{figures}"


def _reported_url(
    organizer: Principal, campaign: Campaign, done: str, assessor: Assessor, *figures: int
) -> str:
    """Where an action on ``assessor`` redirects: the page, saying what it did."""
    numbers = ".".join(str(f) for f in figures)
    query = {"done": done, "assessor": str(assessor.id), "n": numbers}
    if organizer.csrf_token is not None:
        text = _signed_text(campaign, done, str(assessor.id), numbers)
        query["sig"] = sign(organizer.csrf_token, text)
    return f"/campaigns/{campaign.slug}/manage?{urlencode(query)}"


def _assessor_notice(
    on: _ManageRequest, campaign: Campaign, done: str, assessor_id: str | None, n: str, sig: str
) -> str | None:
    """What an action on one assessor did, from its signed report, while their state still
    makes it true (None when it has changed since, or the address was not the server's)."""
    key = on.organizer.csrf_token
    numbers = n.split(".") if n else []
    if key is None or assessor_id is None:
        return None
    if not all(_NUMBER.fullmatch(x) for x in (assessor_id, *numbers)):
        return None
    if not signed(key, _signed_text(campaign, done, assessor_id, n), sig):
        return None
    figures = [int(x) for x in numbers]
    if not all(f <= INT32_MAX for f in figures):
        return None
    assessor = _assessor(on.session, campaign, int(assessor_id))
    if assessor is None:
        return None
    name = assessor.name
    if done == "set-aside" and len(figures) == 2 and assessor.set_aside_at is not None:
        aside, already = figures
        report = assessor_actions.SetAsideReport(assessor.id, name, aside, already, False)
        return (
            f"{report.summary()}. {name} is handed no more pairs; bring the judgments back at "
            "any time."
        )
    if done == "brought-back" and len(figures) == 3:
        brought, stayed, per_pair = figures
        back = assessor_actions.BringBackReport(assessor.id, name, brought, stayed, per_pair)
        return f"{back.summary()}."
    if done == "paused" and assessor.paused_at is not None:
        told = assessor.pause_reason or assessor_actions.DEFAULT_PAUSE_MESSAGE
        return f"{name} is paused and is told: “{told}”"
    if done == "resumed" and assessor.paused_at is None:
        notice = f"{name} may judge again."
        if assessor.set_aside_at is not None:
            notice += " Their judgments are still set aside: bring them back to hand them pairs."
        return notice
    return None


@dataclass(frozen=True)
class _ManageRequest:
    """An organizer's request of a management page."""

    request: Request
    session: Session
    organizer: Principal

    def page(self, campaign: Campaign, **shown: Any) -> Response:
        """The management page, with what the request did (``notice``, ``error``...)."""
        return _page(self.request, self.session, campaign, self.organizer, **shown)


@dataclass(frozen=True)
class _OnCampaign(_ManageRequest):
    """A request about the campaign its path names (``campaign`` None: there is none)."""

    slug: str
    campaign: Campaign | None

    def not_found(self) -> Response:
        return _not_found(self.request, self.organizer, f"no campaign {self.slug!r}")


def _on_campaign(
    slug: str, request: Request, session: SessionDep, organizer: CurrentOrganizer
) -> _OnCampaign:
    return _OnCampaign(request, session, organizer, slug, _campaign(session, slug))


OnCampaign = Annotated[_OnCampaign, Depends(_on_campaign)]


@router.get("/campaigns/{slug}/manage", name="manage_campaign", dependencies=[CHECK_SLUG])
def manage(
    on: OnCampaign,
    done: str | None = None,
    assessor: str | None = None,
    n: str = "",
    sig: str = "",
) -> Response:
    """Assessors, status and the audit log of a campaign; at the top, what the change that
    led here did (``done``; for an action on one assessor, its report, signed)."""
    if on.campaign is None:
        return on.not_found()
    notice = _DONE.get(done or "", "")
    if done in _ON_ASSESSOR:
        notice = _assessor_notice(on, on.campaign, done, assessor, n, sig) or ""
    return on.page(on.campaign, notice=notice)


@router.post("/campaigns/{slug}/manage/invite", dependencies=[CHECK_SLUG])
def invite(form: FormDep, settings: SettingsDep, on: OnCampaign) -> Response:
    """Invite one assessor per line of ``names``; the answer shows their links, once."""
    if on.campaign is None:
        return on.not_found()
    campaign, session, organizer = on.campaign, on.session, on.organizer
    text = form.get("names", "")
    names = [line.strip() for line in text.splitlines() if line.strip()]
    problem = ""
    if not names:
        problem = "Give at least one name (one per line)."
    elif len(names) > MAX_INVITES:
        problem = f"At most {MAX_INVITES} names at a time; found {len(names)}."
    elif len(set(names)) < len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        problem = f"Each name once, please: {', '.join(twice)} appear(s) twice."
    elif taken := sorted(
        set(names) & {a.name for a in campaigns.list_assessors(session, campaign)}
    ):
        problem = (
            f"Already invited: {', '.join(taken)}. Give another name, or give them a new "
            "link from the list of assessors."
        )
    if not problem:
        made: list[NewLink] = []
        try:
            # all of the list or none of it
            with session.begin_nested():
                made = _invite_all(session, settings, campaign, organizer, names)
        except InvalidInput as exc:
            problem = exc.message
        else:
            invited = "1 assessor" if len(made) == 1 else f"{len(made)} assessors"
            notice = f"Invited {invited}. Copy the links now: they are shown only once."
            return on.page(campaign, notice=notice, new_links=made)
    return on.page(campaign, names=text, names_error=problem, status_code=400)


def _invite_all(
    session: SessionDep,
    settings: SettingsDep,
    campaign: Campaign,
    organizer: Principal,
    names: list[str],
) -> list[NewLink]:
    made: list[NewLink] = []
    for number, name in enumerate(names, start=1):
        try:
            assessor, token = campaigns.invite_assessor(session, campaign, name)
        except InvalidInput as exc:
            raise InvalidInput(f"Line {number}: {exc.message}") from exc
        audit.record(session, campaign.id, organizer.actor, audit.ASSESSOR_INVITED, assessor.name)
        made.append(NewLink(assessor.name, campaigns.assessor_link(settings, token)))
    return made


def _assessor(session: SessionDep, campaign: Campaign, assessor_id: int) -> Assessor | None:
    for assessor in campaigns.list_assessors(session, campaign):
        if assessor.id == assessor_id:
            return assessor
    return None


@dataclass(frozen=True)
class _OnAssessor(_ManageRequest):
    """An action on the assessor its path names, with their campaign (``found`` None: the
    campaign has no such assessor)."""

    found: tuple[Campaign, Assessor] | None

    def not_found(self) -> Response:
        return _not_found(self.request, self.organizer, "no such assessor in this campaign")


def _on_assessor(
    slug: str,
    assessor_id: AssessorId,
    request: Request,
    session: SessionDep,
    organizer: CurrentOrganizer,
) -> _OnAssessor:
    campaign = _campaign(session, slug)
    assessor = None if campaign is None else _assessor(session, campaign, assessor_id)
    found = None if campaign is None or assessor is None else (campaign, assessor)
    return _OnAssessor(request, session, organizer, found)


OnAssessor = Annotated[_OnAssessor, Depends(_on_assessor)]


@router.post("/campaigns/{slug}/manage/assessors/{assessor_id}/revoke", dependencies=[CHECK_SLUG])
def revoke(action: OnAssessor) -> Response:
    """The assessor's link stops working (their judgments stay)."""
    if action.found is None:
        return action.not_found()
    campaign, assessor = action.found
    if assessor.revoked_at is None:
        campaigns.revoke_link(action.session, assessor)
        actor = action.organizer.actor
        audit.record(action.session, campaign.id, actor, audit.ASSESSOR_REVOKED, assessor.name)
    return RedirectResponse(_manage_url(campaign, "revoked"), status_code=303)


@router.post("/campaigns/{slug}/manage/assessors/{assessor_id}/relink", dependencies=[CHECK_SLUG])
def relink(settings: SettingsDep, action: OnAssessor) -> Response:
    """A new link for the assessor (the old one stops working), shown once."""
    if action.found is None:
        return action.not_found()
    campaign, assessor = action.found
    token = campaigns.reissue_link(action.session, assessor)
    actor = action.organizer.actor
    audit.record(action.session, campaign.id, actor, audit.ASSESSOR_RELINKED, assessor.name)
    link = NewLink(assessor.name, campaigns.assessor_link(settings, token))
    notice = (
        f"{assessor.name} has a new link; the old one no longer works. "
        "Copy it now: it is shown only once."
    )
    return action.page(campaign, notice=notice, new_links=[link])


@router.post("/campaigns/{slug}/manage/status", dependencies=[CHECK_SLUG])
def change_status(form: FormDep, on: OnCampaign) -> Response:
    """Open, pause (back to draft), close or reopen. Opening a campaign some of whose pairs
    cannot be played answers with a confirmation (409) that says which, and its "Open
    anyway" button sends ``confirm_unplayable``."""
    if on.campaign is None:
        return on.not_found()
    campaign = on.campaign
    new_status = form.get("status", "")
    allowed = [status for status, _label, _what in STATUS_ACTIONS.get(campaign.status, [])]
    if new_status not in allowed:
        message = (
            f"A {campaign.status} campaign can change to {' or '.join(allowed)}, "
            f"not {new_status!r}."
        )
        return on.page(campaign, error=message, status_code=400)
    changes: dict[str, Any] = {"status": new_status}
    confirm = form.get("confirm_unplayable") == "yes"
    try:
        campaigns.update_campaign(
            on.session, campaign, on.organizer.actor, confirm_unplayable=confirm, **changes
        )
    except UnplayableNotConfirmed:
        return on.page(campaign, confirm_open=True, status_code=409)
    return RedirectResponse(_manage_url(campaign, new_status), status_code=303)


def _settings_changes(form: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings form read: (changes, errors by field)."""
    changes: dict[str, Any] = {
        "name": form.get("name", "").strip(),
        "description": form.get("description", "").strip(),
        "keep_collecting": "keep_collecting" in form,
        "auto_pause": "auto_pause" in form,
    }
    errors: dict[str, str] = {}
    try:
        changes["target"] = float(form.get("target", ""))
    except ValueError:
        errors["target"] = "Give a number between 0.5 and 1, such as 0.95."
    for name, (low, high) in FLOAT_SETTINGS.items():
        try:
            changes[name] = float(form.get(name, ""))
        except ValueError:
            errors[name] = f"Give a number from {low:g} to {high:g} (0 turns it off)."
    for name in ("lease_minutes", "judgments_per_pair"):
        minimum, maximum = INT_SETTINGS[name]
        try:
            changes[name] = int(form.get(name, ""))
        except ValueError:
            errors[name] = f"Give a whole number from {minimum} to {maximum}."
    return changes, errors


@router.post("/campaigns/{slug}/manage/settings", dependencies=[CHECK_SLUG])
def change_settings(form: FormDep, on: OnCampaign) -> Response:
    """Name, description, target, lease time, judgments per pair, keep collecting, the
    listening rule, the share of quality trials and automatic pausing."""
    if on.campaign is None:
        return on.not_found()
    campaign = on.campaign
    changes, errors = _settings_changes(form)
    if not errors:
        try:
            # checked as a new campaign's settings are; nothing changes when one is wrong
            campaigns.update_campaign(on.session, campaign, on.organizer.actor, **changes)
        except InvalidInput as exc:
            field = exc.message.split(" ", 1)[0]
            errors[field if field in SETTINGS_FIELDS else "name"] = exc.message
        else:
            return RedirectResponse(_manage_url(campaign, "settings"), status_code=303)
    values = {**changes, **{k: form.get(k, "") for k in errors}}
    return on.page(
        campaign,
        error="The settings were not saved: see the messages under the fields.",
        settings_values=values,
        settings_errors=errors,
        status_code=400,
    )


@router.post(
    "/campaigns/{slug}/manage/assessors/{assessor_id}/set-aside", dependencies=[CHECK_SLUG]
)
def set_aside(form: FormDep, action: OnAssessor) -> Response:
    """Set the assessor's judgments aside, once the form's confirmation box is ticked."""
    if action.found is None:
        return action.not_found()
    campaign, assessor = action.found
    if form.get("confirm") != "yes":
        error = (
            f"Nothing was set aside: tick the box confirming that {assessor.name}'s "
            "judgments should be set aside."
        )
        return action.page(campaign, error=error, status_code=400)
    actor = action.organizer.actor
    report = assessor_actions.set_aside(action.session, campaign, assessor.id, actor)
    url = _reported_url(
        action.organizer, campaign, "set-aside", assessor, report.set_aside, report.already
    )
    return RedirectResponse(url, status_code=303)


@router.post(
    "/campaigns/{slug}/manage/assessors/{assessor_id}/bring-back", dependencies=[CHECK_SLUG]
)
def bring_back(action: OnAssessor) -> Response:
    """Bring the assessor's set-aside judgments back where their pair has room."""
    if action.found is None:
        return action.not_found()
    campaign, assessor = action.found
    actor = action.organizer.actor
    report = assessor_actions.bring_back(action.session, campaign, assessor.id, actor)
    figures = (report.brought_back, report.stayed_aside, report.judgments_per_pair)
    url = _reported_url(action.organizer, campaign, "brought-back", assessor, *figures)
    return RedirectResponse(url, status_code=303)


@router.post("/campaigns/{slug}/manage/assessors/{assessor_id}/pause", dependencies=[CHECK_SLUG])
def pause(form: FormDep, action: OnAssessor) -> Response:
    """Hand the assessor no more pairs for now, with an optional message to them."""
    if action.found is None:
        return action.not_found()
    campaign, assessor = action.found
    message = form.get("message") or None
    try:
        assessor_actions.pause(
            action.session, campaign, assessor.id, action.organizer.actor, message
        )
    except InvalidInput as exc:
        error = f"{assessor.name} was not paused: {exc.message}"
        return action.page(campaign, error=error, status_code=400)
    url = _reported_url(action.organizer, campaign, "paused", assessor)
    return RedirectResponse(url, status_code=303)


@router.post("/campaigns/{slug}/manage/assessors/{assessor_id}/resume", dependencies=[CHECK_SLUG])
def resume(action: OnAssessor) -> Response:
    """The assessor may be handed pairs again."""
    if action.found is None:
        return action.not_found()
    campaign, assessor = action.found
    assessor_actions.resume(action.session, campaign, assessor.id, action.organizer.actor)
    url = _reported_url(action.organizer, campaign, "resumed", assessor)
    return RedirectResponse(url, status_code=303)
