"""Organizer JSON API: audio from the browser (:mod:`mtcjudge.campaigns.audio_upload`).

``POST /api/audio-uploads`` starts an upload; its files are sent one by one
(``PUT .../files/{name}``, the raw bytes) or as one zip (``PUT .../zip``); ``GET`` reports
every file, usable or not and why; ``POST .../complete`` ends it, and a campaign is then
created with ``"audio_upload": <token>``. Bodies are raw (no multipart): each is streamed to
a temporary file, counted against its limit and hashed as it arrives, then checked with no
database connection held, then stored in one short transaction.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Annotated

import anyio.to_thread
from fastapi import APIRouter, Request, status
from fastapi import Path as PathParameter
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from sqlalchemy.orm import Session

from mtcjudge.campaigns import audio_upload as uploads
from mtcjudge.config import Settings
from mtcjudge.deps import CurrentOrganizer, SettingsDep, transaction
from mtcjudge.schemas import error_responses

__all__ = ["FileReportOut", "UploadOut", "UploadReportOut", "router"]

router = APIRouter(
    prefix="/api/audio-uploads",
    tags=["organizer"],
    responses=error_responses(401, 403, 404, 422, 503),
)

UploadToken = Annotated[str, PathParameter(pattern=r"^[A-Za-z0-9_-]{43}$")]
FileName = Annotated[str, PathParameter(min_length=1, max_length=1024)]


class UploadOut(BaseModel):
    """A new upload: its token and the limits its files must keep."""

    token: str
    max_file_bytes: int
    max_upload_bytes: int


class FileReportOut(BaseModel):
    """One file: the name as sent, the document it is for, whether it can be used (else
    ``problem``)."""

    file_name: str
    name: str
    extension: str
    size: int
    usable: bool
    problem: str | None


class UploadReportOut(BaseModel):
    """The upload's files, in the order they arrived."""

    token: str
    state: str
    total_bytes: int
    max_file_bytes: int
    max_upload_bytes: int
    n_files: int
    n_usable: int
    files: list[FileReportOut]

    @classmethod
    def of(cls, report: uploads.UploadReport) -> UploadReportOut:
        return cls(
            token=report.token,
            state=report.state,
            total_bytes=report.total_bytes,
            max_file_bytes=report.max_file_bytes,
            max_upload_bytes=report.max_upload_bytes,
            n_files=len(report.files),
            n_usable=report.n_usable,
            files=[FileReportOut(**asdict(f)) for f in report.files],
        )


def limits_of(settings: Settings) -> uploads.UploadLimits:
    return uploads.UploadLimits(settings.max_audio_file_bytes, settings.max_audio_upload_bytes)


@router.post("", status_code=status.HTTP_201_CREATED)
async def start_upload(
    request: Request, settings: SettingsDep, organizer: CurrentOrganizer
) -> UploadOut:
    """Start an upload of audio: send its files, then complete it."""
    upload = await transaction(request, partial(uploads.new_upload, actor=organizer.actor))
    return UploadOut(
        token=upload.token,
        max_file_bytes=settings.max_audio_file_bytes,
        max_upload_bytes=settings.max_audio_upload_bytes,
    )


@router.get("/{upload_token}")
async def upload_report(
    request: Request, upload_token: UploadToken, settings: SettingsDep, _: CurrentOrganizer
) -> UploadReportOut:
    """Every file of the upload, usable or not and why."""

    def work(session: Session) -> uploads.UploadReport:
        upload = uploads.find_upload(session, upload_token)
        return uploads.upload_report(session, upload, limits_of(settings))

    return UploadReportOut.of(await transaction(request, work))


@router.post("/{upload_token}/complete", responses=error_responses(409))
async def complete_upload(
    request: Request, upload_token: UploadToken, settings: SettingsDep, _: CurrentOrganizer
) -> UploadReportOut:
    """No more files: a campaign may be created from the upload (``audio_upload``)."""

    def work(session: Session) -> uploads.UploadReport:
        upload = uploads.find_upload(session, upload_token)
        return uploads.complete_upload(session, upload, limits_of(settings))

    return UploadReportOut.of(await transaction(request, work))


@router.delete("/{upload_token}", status_code=status.HTTP_204_NO_CONTENT)
async def cancel_upload(
    request: Request, upload_token: UploadToken, _: CurrentOrganizer
) -> Response:
    """Forget the upload (a campaign made from it keeps its clips)."""

    def work(session: Session) -> None:
        uploads.cancel_upload(session, uploads.find_upload(session, upload_token))

    await transaction(request, work)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.put("/{upload_token}/files/{file_name}", responses=error_responses(400, 409, 413))
async def put_file(
    request: Request,
    upload_token: UploadToken,
    file_name: FileName,
    settings: SettingsDep,
    _: CurrentOrganizer,
) -> Response:
    """One file, its bytes the body (``<doc id>.<ext>``; any folder left out). Answered with
    its report: usable, or the reason; 413 past the size of one file (reported too)."""
    limits = limits_of(settings)
    await transaction(request, partial(uploads.find_upload, token=upload_token, receiving=True))
    problem = uploads.name_problem(file_name)
    # the body is read even for a name that cannot be a clip: a browser still sending it
    # would take an early answer for a failed connection
    ext = uploads.split_name(file_name)[1] if problem is None else "bin"
    received = await _receive(request, f".{ext}", limits.file_bytes)
    too_large = received is None
    try:
        if too_large:
            problem = uploads.too_large(limits)
        elif problem is None and received is not None:
            problem = await anyio.to_thread.run_sync(uploads.check_file, received[0])

        def work(session: Session) -> uploads.FileReport:
            upload = uploads.find_upload(session, upload_token, receiving=True)
            return uploads.store_file(session, upload, limits, file_name, received, problem)

        report = await transaction(request, work)
    finally:
        if received is not None:
            received[0].unlink(missing_ok=True)
    out = FileReportOut(**asdict(report)).model_dump(mode="json")
    if too_large:
        body = {"error": "payload_too_large", "detail": f"{file_name}: {problem}", "file": out}
        # the rest of the body is not read: the connection cannot carry another request
        return JSONResponse(body, status_code=413, headers={"Connection": "close"})
    return JSONResponse(out)


@router.put("/{upload_token}/zip", responses=error_responses(400, 409, 413))
async def put_zip(
    request: Request, upload_token: UploadToken, settings: SettingsDep, _: CurrentOrganizer
) -> UploadReportOut:
    """A zip of audio files, the body: each audio member is checked and stored (members in
    folders by their base name). Answered with the whole upload's report."""
    limits = limits_of(settings)
    await transaction(request, partial(uploads.find_upload, token=upload_token, receiving=True))
    received = await _receive(request, ".zip", limits.upload_bytes)
    if received is None:
        detail = (
            f"the zip is larger than the {uploads.format_bytes(limits.upload_bytes)} allowed "
            "for one upload"
        )
        return JSONResponse(  # type: ignore[return-value]
            {"error": "payload_too_large", "detail": detail},
            status_code=413,
            headers={"Connection": "close"},
        )
    try:
        factory = request.app.state.session_factory
        await anyio.to_thread.run_sync(
            uploads.receive_zip, factory, upload_token, received[0], limits
        )
    finally:
        received[0].unlink(missing_ok=True)

    def work(session: Session) -> uploads.UploadReport:
        return uploads.upload_report(session, uploads.find_upload(session, upload_token), limits)

    return UploadReportOut.of(await transaction(request, work))


async def _receive(request: Request, suffix: str, limit: int) -> tuple[Path, int, str] | None:
    """The body in a temporary file (named with ``suffix``), its size and SHA-256; None,
    and nothing kept, when it is larger than ``limit`` (a declared length is refused before
    anything is read)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    fd, name = tempfile.mkstemp(prefix="mtcjudge-upload-", suffix=suffix)
    path = Path(name)
    digest = hashlib.sha256()
    size = 0
    try:
        with os.fdopen(fd, "wb") as out:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    path.unlink(missing_ok=True)
                    return None
                digest.update(chunk)
                out.write(chunk)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path, size, digest.hexdigest()
