"""The assessor's HTML pages: welcome and consent, the judging page, and the audio clips.

The judging page is a shell; its script talks to the JSON API under ``/api/a/{token}/``.
A clip's URL names the lease it belongs to, never its document (``/a/{token}/lease/{id}/query``
and ``.../candidate``), so nothing in the page tells a hidden quality trial from a pool pair;
the clip route counts the bytes it sends onto the lease, the server's own evidence of
listening (:mod:`mtcjudge.judging.listening`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Annotated
from urllib.parse import parse_qs

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, RedirectResponse, Response
from sqlalchemy.orm import Session
from starlette.types import Message, Receive, Scope, Send

from mtcjudge.clips.decode import UnreadableAudio
from mtcjudge.clips.rendition import SERVED_MIME, clip_source, safe_rendition
from mtcjudge.db import read_only
from mtcjudge.deps import SessionDep, transaction
from mtcjudge.errors import InvalidInput, NotFound
from mtcjudge.judging.params import CHECK_LEASE_ID, CHECK_TOKEN
from mtcjudge.judging.repository import context as context_queries
from mtcjudge.judging.repository import leases as lease_queries
from mtcjudge.models import Assessor, Campaign
from mtcjudge.web import templates

__all__ = ["CountedFileResponse", "pages_router"]

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


#: while a clip is still being sent, what went out is recorded at least this often (a
#: submission made before a slow transfer ends then sees the bytes sent so far)
RECORD_EVERY_SECONDS = 1.0


class CountedFileResponse(FileResponse):
    """A file response (Range requests answered by Starlette) that reports the bytes of
    body it hands to the server through ``record(n)``: for a long transfer every
    :data:`RECORD_EVERY_SECONDS`, and for the last chunk just before it goes out, so that a
    client acting on a complete response (a submission right after) finds them recorded.
    A transfer cut short is recorded as far as it went (the chunk that failed is not
    counted). A server that sends files itself (the ASGI ``pathsend`` extension) is counted
    as sending the whole file."""

    def __init__(
        self, path: Path, *, record: Callable[[int], Awaitable[None]], **kwargs: object
    ) -> None:
        super().__init__(path, **kwargs)  # type: ignore[arg-type]
        self._record = record

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        pending = 0
        last = time.monotonic()

        async def flush() -> None:
            nonlocal pending, last
            if pending:
                sent, pending, last = pending, 0, time.monotonic()
                await self._record(sent)

        async def counting_send(message: Message) -> None:
            nonlocal pending
            kind = message["type"]
            final = (kind == "http.response.body" and not message.get("more_body", False)) or (
                kind == "http.response.pathsend"
            )
            if final:
                if kind == "http.response.pathsend":
                    pending += os.stat(message["path"]).st_size
                else:
                    pending += len(message.get("body", b""))
                await flush()
                await send(message)
                return
            await send(message)  # counted once the server took it
            if kind == "http.response.body":
                pending += len(message.get("body", b""))
                if time.monotonic() - last >= RECORD_EVERY_SECONDS:
                    await flush()

        try:
            await super().__call__(scope, receive, counting_send)
        finally:
            if pending:
                # also when the transfer was cancelled because the client went away
                with anyio.CancelScope(shield=True):
                    await flush()


async def _record_served(request: Request, lease_id: int, which: str, n: int) -> None:
    """One UPDATE adds what was sent to the lease; a failure loses only this evidence (the
    response is gone already), so it is logged, not raised."""
    try:
        await transaction(
            request, partial(lease_queries.add_served_bytes, lease_id=lease_id, which=which, n=n)
        )
    except Exception:
        logger.warning("could not record %d bytes sent for lease %d", n, lease_id, exc_info=True)


def _lease_clip(session: Session, token: str, lease_id: int, which: str) -> Path:
    """The rendition of the lease's clip: its excerpt as MP3, or for a reference trial's
    candidate another excerpt of the query's recording (mtcjudge.clips.rendition)."""
    found = context_queries.lease_clip(session, token, lease_id, which)
    if found is None:
        raise NotFound(UNKNOWN_LINK)
    if found.lease_id is None or not found.audio_path:
        raise NotFound("This clip is not part of your pairs.")
    missing = NotFound(
        "This clip's audio file is missing or damaged on the server; please tell the organizer."
    )
    if not Path(found.audio_path).is_file():
        raise missing
    variant = "other" if which == "candidate" and found.kind == "reference" else "clip"
    try:
        clip = clip_source(
            found.audio_path,
            found.content_sha256,
            found.excerpt_start,
            found.duration_seconds,
            found.source_seconds,
        )
    except UnreadableAudio as exc:
        raise missing from exc
    path = safe_rendition(clip, variant)
    if path is None:
        raise missing
    return path


def _lease_clip_read(session: Session, token: str, lease_id: int, which: str) -> Path:
    # a read: on SQLite it takes no write lock (the bytes sent are written afterwards)
    return _lease_clip(read_only(session), token, lease_id, which)


async def _clip(request: Request, token: str, lease_id: int, which: str) -> Response:
    work = partial(_lease_clip_read, token=token, lease_id=lease_id, which=which)
    path = await transaction(request, work)
    # A rendition never changes (its name is the hash of what it is made from): its name is
    # a strong validator, and a browser that has it asks with If-None-Match and is answered
    # 304 without the bytes. Range requests are answered (206): the browser seeks without
    # downloading the whole clip.
    etag = f'"{path.stem}"'
    headers = {"Cache-Control": "private, max-age=3600", "ETag": etag}
    if etag in _etags(request.headers.get("if-none-match")):
        return Response(status_code=304, headers=headers)
    return CountedFileResponse(
        path,
        record=partial(_record_served, request, lease_id, which),
        media_type=SERVED_MIME,
        headers=headers,
    )


def _etags(header: str | None) -> set[str]:
    """The entity tags of an If-None-Match header (weak ones compared as strong)."""
    if not header:
        return set()
    return {tag.strip().removeprefix("W/") for tag in header.split(",")}


@pages_router.get(
    "/a/{token}/lease/{lease_id}/query", name="assessor_query_clip", dependencies=[CHECK_LEASE_ID]
)
async def query_clip(request: Request, token: str, lease_id: int) -> Response:
    """The query clip of one of the assessor's leases."""
    return await _clip(request, token, lease_id, "query")


@pages_router.get(
    "/a/{token}/lease/{lease_id}/candidate",
    name="assessor_candidate_clip",
    dependencies=[CHECK_LEASE_ID],
)
async def candidate_clip(request: Request, token: str, lease_id: int) -> Response:
    """The candidate clip of one of the assessor's leases."""
    return await _clip(request, token, lease_id, "candidate")
