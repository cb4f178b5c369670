"""Organizer sign-in and the landing page: ``GET/POST /login``, ``POST /logout``, ``GET /``.

The session cookie (``mtcjudge_session``) holds a random token; the ``organizer_session`` row
holds its SHA-256 and the session's CSRF token. The cookie is ``HttpOnly``, ``SameSite=Lax``,
lives ``MTCJUDGE_SESSION_HOURS`` (12 h from the sign-in, not extended by use), and is
``Secure`` when the request came over HTTPS (uvicorn takes ``X-Forwarded-Proto`` from the
proxies of ``FORWARDED_ALLOW_IPS``) or the public address (``MTCJUDGE_BASE_URL``) is https.

The sign-in form itself is protected by a double-submit token: a random value in a short-lived
``SameSite=Strict`` cookie and in the form, which must agree.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Mapping
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs

import anyio
import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy.orm import Session

from mtcjudge.audit import recent_events
from mtcjudge.auth.principal import Principal, principal_for_session
from mtcjudge.campaigns import repository as campaigns_repository
from mtcjudge.campaigns import service as campaigns
from mtcjudge.config import Settings
from mtcjudge.deps import (
    CSRF_FIELD,
    SESSION_COOKIE,
    MaybeOrganizer,
    SessionDep,
    SettingsDep,
    check_csrf,
    transaction,
)
from mtcjudge.organizers import service as organizers
from mtcjudge.organizers.throttle import LoginThrottle
from mtcjudge.validation import printable
from mtcjudge.web import NO_STORE, templates

__all__ = ["LOGIN_COOKIE", "login_page", "router", "safe_next"]

logger = logging.getLogger(__name__)

router = APIRouter(include_in_schema=False)

LOGIN_COOKIE = "mtcjudge_login"
_LOGIN_COOKIE_SECONDS = 3600
_MAX_FORM_FIELD = 4096


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a path of this site, never another site ("//host",
    "/\\host") and never the sign-in pages themselves; "/" otherwise."""
    if (
        not target
        or len(target) > 2000
        or not target.startswith("/")
        or target.startswith(("//", "/\\"))
        or "\\" in target
        or any(ord(c) < 0x20 or ord(c) == 0x7F for c in target)
        or target.split("?", 1)[0] in ("/login", "/logout")
    ):
        return "/"
    return target


def _secure(request: Request, settings: Settings) -> bool:
    return request.url.scheme == "https" or settings.base_url.startswith("https://")


def login_page(
    request: Request,
    next_path: str = "/",
    *,
    status: int = 200,
    error: str | None = None,
    notice: str | None = None,
    username: str = "",
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The sign-in form, with a fresh double-submit token in the form and in a cookie."""
    settings: Settings = request.app.state.settings
    form_token = secrets.token_urlsafe(32)
    response = templates.TemplateResponse(
        request,
        "login.html",
        {
            "csrf_token": form_token,
            "next_path": next_path,
            "error": error,
            "notice": notice,
            "username": username,
        },
        status_code=status,
        headers={**NO_STORE, **(headers or {})},
    )
    response.set_cookie(
        LOGIN_COOKIE,
        form_token,
        max_age=_LOGIN_COOKIE_SECONDS,
        path="/login",
        httponly=True,
        samesite="strict",
        secure=_secure(request, settings),
    )
    return response


async def _form(request: Request) -> dict[str, str]:
    """The fields of a urlencoded form (the first value of each; long values cut)."""
    try:
        text = (await request.body()).decode("utf-8")
    except UnicodeDecodeError:
        return {}
    fields = parse_qs(text, keep_blank_values=True)
    return {name: values[0][:_MAX_FORM_FIELD] for name, values in fields.items() if values}


def _tokens_agree(sent: str | None, expected: str | None) -> bool:
    if not sent or not expected:
        return False
    return hmac.compare_digest(
        sent.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


@router.get("/login")
async def login_form(
    request: Request, organizer: MaybeOrganizer, next: str | None = None
) -> Response:
    target = safe_next(next)
    if organizer is not None and organizer.signed_in:
        return RedirectResponse(target, status_code=303, headers=NO_STORE)
    notice = "You are signed out." if "signed_out" in request.query_params else None
    return login_page(request, target, notice=notice)


@router.post("/login")
async def login(request: Request, settings: SettingsDep) -> Response:
    form = await _form(request)
    target = safe_next(form.get("next"))
    username = form.get("username", "")
    if not _tokens_agree(form.get(CSRF_FIELD), request.cookies.get(LOGIN_COOKIE)):
        return login_page(
            request,
            target,
            status=403,
            error="This sign-in form had expired or was not sent from this site. "
            "Please sign in again.",
            username=username,
        )
    throttle: LoginThrottle = request.app.state.login_throttle
    client = request.client.host if request.client else "unknown"
    wait = throttle.retry_after(client)
    if wait:
        minutes = max(1, round(wait / 60))
        return login_page(
            request,
            target,
            status=429,
            error=f"Too many failed sign-ins from your address. Try again in about "
            f"{minutes} minute{'s' if minutes != 1 else ''}.",
            username=username,
            headers={"Retry-After": str(wait)},
        )
    password = form.get("password", "")
    stored = await transaction(
        request, lambda session: organizers.stored_credentials(session, username)
    )
    # the slow part (Argon2) runs outside any transaction
    matches, new_hash = await anyio.to_thread.run_sync(
        organizers.check_credentials, stored, password
    )
    signed_in = None
    if matches and stored is not None:
        lifetime = timedelta(hours=settings.session_hours)
        old_token = request.cookies.get(SESSION_COOKIE)

        def start(session: Session) -> tuple[str, Principal] | None:
            if old_token:  # a new session, never the one the browser came with
                organizers.end_session(session, old_token)
            return organizers.sign_in(session, stored, new_hash, lifetime)

        signed_in = await transaction(request, start)
    if signed_in is None:
        throttle.failed(client)
        logger.warning("failed organizer sign-in for %r from %s", printable(username), client)
        await anyio.sleep(settings.login_failure_delay)
        return login_page(
            request,
            target,
            status=401,
            error="The username or the password is not right.",
            username=username,
        )
    throttle.succeeded(client)
    token, principal = signed_in
    logger.info("organizer %r signed in from %s", principal.username, client)
    response = RedirectResponse(target, status_code=303, headers=NO_STORE)
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=settings.session_hours * 3600,
        path="/",
        httponly=True,
        samesite="lax",
        secure=_secure(request, settings),
    )
    response.delete_cookie(LOGIN_COOKIE, path="/login")
    return response


@router.post("/logout")
async def logout(request: Request, session: SessionDep, settings: SettingsDep) -> Response:
    token = request.cookies.get(SESSION_COOKIE)
    if token and len(token) <= 128:
        principal = await anyio.to_thread.run_sync(principal_for_session, session, token)
        if principal is not None:
            await check_csrf(request, principal)  # a forged sign-out is refused too (403)
            await anyio.to_thread.run_sync(organizers.end_session, session, token)
    response = RedirectResponse("/login?signed_out=1", status_code=303, headers=NO_STORE)
    response.delete_cookie(
        SESSION_COOKIE,
        path="/",
        httponly=True,
        samesite="lax",
        secure=_secure(request, settings),
    )
    return response


@router.get("/")
def landing(request: Request, session: SessionDep, organizer: MaybeOrganizer) -> Response:
    """Organizers see their campaigns; everyone else is told to use their personal link."""
    context: dict[str, Any] = {"organizer": organizer}
    if organizer is not None:
        rows = [
            (campaign, campaigns_repository.campaign_counts(session, campaign.id))
            for campaign in campaigns.list_campaigns(session)
        ]
        context["campaigns"] = rows
        context["events"] = recent_events(session, limit=10)
    return templates.TemplateResponse(request, "home.html", context, headers=NO_STORE)
