"""The audio clips of the judging page (:mod:`mtcjudge.judging.clip_urls` names them).

Every clip is served as its MP3 rendition (:mod:`mtcjudge.clips.rendition`), made when this
machine has not made it yet, after the database transaction. A rendition never changes, so
its name is a strong ``ETag``: a browser that has the clip asks with ``If-None-Match`` and is
answered 304 without the bytes. Range requests are answered (206).

The routes count the bytes they send, the server's own evidence of listening
(:mod:`mtcjudge.judging.listening`): a candidate's onto its lease; a query's onto the
assessor's delivery of it, which lasts over all the pairs of the query, and onto their live
lease when it is on this query (:mod:`mtcjudge.judging.repository.deliveries`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response
from sqlalchemy.orm import Session
from starlette.types import Message, Receive, Scope, Send

from mtcjudge.clips.cut import Window
from mtcjudge.clips.decode import UnreadableAudio
from mtcjudge.clips.rendition import (
    SERVED_MIME,
    ClipSource,
    clip_source,
    rendition_file,
    safe_rendition,
)
from mtcjudge.clips.sources import BlobLoader, factory_loader, local_path, present
from mtcjudge.db import read_only
from mtcjudge.deps import transaction
from mtcjudge.errors import NotFound
from mtcjudge.judging.pages import UNKNOWN_LINK
from mtcjudge.judging.params import CHECK_CLIP_KEY, CHECK_LEASE_ID, CHECK_TOKEN
from mtcjudge.judging.repository import context as context_queries
from mtcjudge.judging.repository import deliveries as delivery_queries
from mtcjudge.judging.repository import leases as lease_queries

__all__ = ["CountedFileResponse", "clips_router"]

logger = logging.getLogger(__name__)

clips_router = APIRouter(include_in_schema=False, dependencies=[CHECK_TOKEN])

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


async def _record(request: Request, work: Callable[[Session], None], n: int) -> None:
    """One transaction adds what was sent; a failure loses only this evidence (the response
    is gone already), so it is logged, not raised."""
    try:
        await transaction(request, work)
    except Exception:
        logger.warning("could not record %d bytes of a clip sent", n, exc_info=True)


async def _record_candidate(request: Request, lease_id: int, n: int) -> None:
    work = partial(lease_queries.add_served_bytes, lease_id=lease_id, which="candidate", n=n)
    await _record(request, work, n)


async def _record_query(request: Request, clip: delivery_queries.QueryClip, n: int) -> None:
    await _record(request, partial(delivery_queries.add_delivered, clip=clip, n=n), n)


@dataclass(frozen=True)
class _ClipWanted:
    """A clip as the database knows it: where its file is and what to serve of it."""

    audio_path: str | None
    content_sha256: str | None
    excerpt_start: float | None
    duration_seconds: float | None
    source_seconds: float | None
    variant: str = "clip"  # "other": a reference trial's candidate (mtcjudge.clips.rendition)

    @classmethod
    def of(
        cls, found: context_queries.LeaseClip | delivery_queries.QueryClip, variant: str = "clip"
    ) -> _ClipWanted:
        return cls(
            found.audio_path,
            found.content_sha256,
            found.excerpt_start,
            found.duration_seconds,
            found.source_seconds,
            variant,
        )


def _made(wanted: _ClipWanted) -> Path | None:
    """The clip's rendition when this machine has made it already (a look at the cache, so
    a clip made before is served without another trip to a worker thread)."""
    if not wanted.audio_path or wanted.content_sha256 is None or wanted.duration_seconds is None:
        return None  # imported before the analysis: :func:`_rendition_of` names it
    window = Window(wanted.excerpt_start or 0.0, wanted.duration_seconds)
    source = wanted.source_seconds or wanted.duration_seconds
    clip = ClipSource(wanted.audio_path, wanted.content_sha256, source, window)
    path = rendition_file(clip, wanted.variant)
    return path if path.is_file() else None


def _candidate(session: Session, token: str, lease_id: int) -> tuple[_ClipWanted, Path | None]:
    # a read: on SQLite it takes no write lock (the bytes sent are written afterwards)
    found = context_queries.lease_clip(read_only(session), token, lease_id, "candidate")
    if found is None:
        raise NotFound(UNKNOWN_LINK)
    if found.lease_id is None:
        raise NotFound("This clip is not part of your pairs.")
    wanted = _ClipWanted.of(found, "other" if found.kind == "reference" else "clip")
    return wanted, _made(wanted)


def _query(
    session: Session, token: str, key: str
) -> tuple[delivery_queries.QueryClip, _ClipWanted, Path | None]:
    session = read_only(session)
    found = delivery_queries.query_clip(session, token, key)
    if found is None:
        if context_queries.assessor_by_token(session, token) is None:
            raise NotFound(UNKNOWN_LINK)
        raise NotFound("This clip is not part of your pairs.")
    wanted = _ClipWanted.of(found)
    return found, wanted, _made(wanted)


def _rendition_of(wanted: _ClipWanted, load: BlobLoader) -> Path:
    """The clip's rendition: its excerpt as MP3, or for a reference trial's candidate another
    excerpt of the query's recording, made now if this machine has not made it yet (from
    audio uploaded into the database: its copy on this machine, written by ``load``)."""
    if not wanted.audio_path:
        raise NotFound("This clip has no audio; please tell the organizer.")
    missing = NotFound(
        "This clip's audio file is missing or damaged on the server; please tell the organizer."
    )
    if not present(wanted.audio_path):
        raise missing
    try:
        clip = clip_source(
            str(local_path(wanted.audio_path, load)),
            wanted.content_sha256,
            wanted.excerpt_start,
            wanted.duration_seconds,
            wanted.source_seconds,
        )
    except UnreadableAudio as exc:
        raise missing from exc
    path = safe_rendition(clip, wanted.variant)
    if path is None:
        raise missing
    return path


async def _serve(
    request: Request,
    wanted: _ClipWanted,
    made: Path | None,
    record: Callable[[int], Awaitable[None]],
) -> Response:
    if made is not None:
        path = made
    else:
        load = factory_loader(request.app.state.session_factory)
        path = await anyio.to_thread.run_sync(_rendition_of, wanted, load)
    etag = f'"{path.stem}"'
    headers = {"Cache-Control": "private, max-age=3600", "ETag": etag}
    if etag in _etags(request.headers.get("if-none-match")):
        return Response(status_code=304, headers=headers)
    return CountedFileResponse(path, record=record, media_type=SERVED_MIME, headers=headers)


def _etags(header: str | None) -> set[str]:
    """The entity tags of an If-None-Match header (weak ones compared as strong)."""
    if not header:
        return set()
    return {tag.strip().removeprefix("W/") for tag in header.split(",")}


@clips_router.get(
    "/a/{token}/query/{key}", name="assessor_query_clip", dependencies=[CHECK_CLIP_KEY]
)
async def query_clip(request: Request, token: str, key: str) -> Response:
    """A query clip of the assessor's pairs: one URL for every pair of the query."""
    found, wanted, made = await transaction(request, partial(_query, token=token, key=key))
    return await _serve(request, wanted, made, partial(_record_query, request, found))


@clips_router.get(
    "/a/{token}/lease/{lease_id}/candidate",
    name="assessor_candidate_clip",
    dependencies=[CHECK_LEASE_ID],
)
async def candidate_clip(request: Request, token: str, lease_id: int) -> Response:
    """The candidate clip of one of the assessor's leases."""
    work = partial(_candidate, token=token, lease_id=lease_id)
    wanted, made = await transaction(request, work)
    return await _serve(request, wanted, made, partial(_record_candidate, request, lease_id))
