"""Request dependencies: the session (one request, one transaction), settings, the organizer."""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from app.config import Settings
from app.db import session_scope
from app.errors import OrganizerOnly

__all__ = ["CurrentOrganizer", "SessionDep", "SettingsDep"]

LOCAL_HOSTS = {"127.0.0.1", "::1", "localhost", "testclient"}


def get_session(request: Request) -> Iterator[Session]:
    """The request's unit of work (see :func:`app.db.session_scope`)."""
    with session_scope(request.app.state.session_factory) as session:
        yield session


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


# scope="function": commit before the response is sent, so a client that acts on a 201 (asks
# for the next pair at once) always finds the write; by default FastAPI runs the exit code
# of a yield dependency after the response has gone out.
SessionDep = Annotated[Session, Depends(get_session, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings)]


def require_organizer(request: Request, settings: SettingsDep) -> None:
    """Organizer API: a bearer token when one is configured, else only from this machine."""
    if settings.organizer_token:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(token, settings.organizer_token):
            return
        raise OrganizerOnly("organizer token required: send 'Authorization: Bearer <token>'")
    host = request.client.host if request.client else ""
    if host not in LOCAL_HOSTS:
        raise OrganizerOnly(
            "the organizer API is open only to the local machine unless "
            "MTCJUDGE_ORGANIZER_TOKEN is set"
        )


CurrentOrganizer = Annotated[None, Depends(require_organizer)]
