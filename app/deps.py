"""Request dependencies: the session (one request, one transaction), settings, the organizer."""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Callable
from typing import Annotated, TypeVar

import anyio
import anyio.to_thread
from fastapi import Depends, Request
from sqlalchemy.orm import Session

from app.config import Settings
from app.db import session_scope
from app.errors import OrganizerOnly

T = TypeVar("T")

__all__ = ["CurrentOrganizer", "SessionDep", "SettingsDep", "transaction"]

LOCAL_HOSTS = {"127.0.0.1", "::1", "localhost", "testclient"}


#: threads that end transactions. A sync yield dependency would end its transaction on a
#: thread of the request pool: under load the commit then waits behind new requests while
#: its connection sits idle in transaction, holding row locks, until the pool runs dry.
_ENDING = anyio.CapacityLimiter(64)


async def get_session(request: Request) -> AsyncIterator[Session]:
    """The request's unit of work: commit on success, roll back on error (as
    :func:`app.db.session_scope`); services only flush."""
    session: Session = request.app.state.session_factory()
    try:
        yield session
        await anyio.to_thread.run_sync(session.commit, limiter=_ENDING)
    except BaseException:
        await anyio.to_thread.run_sync(session.rollback, limiter=_ENDING)
        raise
    finally:
        await anyio.to_thread.run_sync(session.close, limiter=_ENDING)


async def transaction(request: Request, work: Callable[[Session], T]) -> T:
    """Run ``work(session)`` and commit, in one call on a worker thread (rolled back if it
    raises). For the busy routes: the thread is held for the transaction and nothing else,
    and the response is built inside it."""
    factory = request.app.state.session_factory

    def run() -> T:
        with session_scope(factory) as session:
            return work(session)

    return await anyio.to_thread.run_sync(run)


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
