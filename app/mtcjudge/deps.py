"""Request dependencies: the session (one request, one transaction), settings, the organizer.

Organizer routes take :data:`CurrentOrganizer`: the bearer token or a signed-in session (see
:func:`require_organizer`); there is no exemption for requests from the local machine (the
command line works on the database directly).
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Callable
from typing import Annotated, TypeVar
from urllib.parse import parse_qs

import anyio
import anyio.to_thread
from fastapi import Depends, Request
from sqlalchemy.orm import Session

from mtcjudge import audit
from mtcjudge.auth.principal import Principal, principal_for_session
from mtcjudge.config import Settings
from mtcjudge.db import session_scope
from mtcjudge.errors import CsrfRejected, OrganizerOnly

T = TypeVar("T")

__all__ = [
    "CSRF_FIELD",
    "CSRF_HEADER",
    "SESSION_COOKIE",
    "CurrentOrganizer",
    "MaybeOrganizer",
    "SessionDep",
    "SettingsDep",
    "check_csrf",
    "form_field",
    "optional_organizer",
    "require_organizer",
    "transaction",
]


#: threads that end transactions. A sync yield dependency would end its transaction on a
#: thread of the request pool: under load the commit then waits behind new requests while
#: its connection sits idle in transaction, holding row locks, until the pool runs dry.
_ENDING = anyio.CapacityLimiter(64)


async def get_session(request: Request) -> AsyncIterator[Session]:
    """The request's unit of work: commit on success, roll back on error (as
    :func:`mtcjudge.db.session_scope`); services only flush."""
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


SESSION_COOKIE = "mtcjudge_session"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_FORM_TYPES = ("application/x-www-form-urlencoded",)


def _bearer(request: Request, settings: Settings) -> Principal:
    """The principal of a request with an ``Authorization`` header: the organizer token, or
    401 (a wrong token is refused even when a session cookie comes along)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    expected = settings.organizer_token
    if expected is None:
        raise OrganizerOnly(
            "this server has no organizer token (MTCJUDGE_ORGANIZER_TOKEN): sign in at /login"
        )
    if scheme.lower() == "bearer" and hmac.compare_digest(
        token.strip().encode("utf-8", "surrogatepass"), expected.encode()
    ):
        return Principal(actor=audit.API_TOKEN)
    raise OrganizerOnly("organizer token required: send 'Authorization: Bearer <token>'")


async def _identify(request: Request, settings: Settings) -> Principal | None:
    """Who the request comes from: the bearer token, a signed-in session, or nobody (None).

    The session is looked up in a transaction of its own, committed before the route runs:
    on SQLite every transaction holds the database's write lock, and a route that does its
    work in another transaction (``transaction()``, the results and event stream) would
    otherwise wait for the request's own session until it gave up."""
    if "authorization" in request.headers:
        return _bearer(request, settings)
    token = request.cookies.get(SESSION_COOKIE)
    if not token or len(token) > 128:
        return None
    factory = request.app.state.session_factory

    def lookup() -> Principal | None:
        with session_scope(factory) as session:
            return principal_for_session(session, token)

    return await anyio.to_thread.run_sync(lookup)


async def still_signed_in(request: Request, settings: Settings) -> bool:
    """Whether the request's credentials still hold (a long-lived request, such as an event
    stream, checks again: signing out or disabling the account must end it)."""
    try:
        return await _identify(request, settings) is not None
    except OrganizerOnly:
        return False


async def form_field(request: Request, name: str) -> str | None:
    """A field of an ``application/x-www-form-urlencoded`` body (the organizer pages' forms;
    bodies are at most 64 KiB, see ``mtcjudge.middleware``), or None."""
    content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type not in _FORM_TYPES:
        return None
    try:
        text = (await request.body()).decode("utf-8")
    except UnicodeDecodeError:
        return None
    values = parse_qs(text, keep_blank_values=True).get(name)
    return values[0] if values else None


async def check_csrf(request: Request, principal: Principal) -> None:
    """A state-changing request made with the session cookie must send the session's CSRF
    token back: the ``X-CSRF-Token`` header (fetch) or the ``csrf_token`` field (forms)."""
    if principal.csrf_token is None or request.method in _SAFE_METHODS:
        return
    sent = request.headers.get(CSRF_HEADER) or await form_field(request, CSRF_FIELD)
    if not sent or not hmac.compare_digest(
        sent.encode("utf-8", "surrogatepass"), principal.csrf_token.encode()
    ):
        raise CsrfRejected(
            "this request needs the session's CSRF token (the X-CSRF-Token header or the "
            "csrf_token form field); reload the page and try again"
        )


async def require_organizer(request: Request, settings: SettingsDep) -> Principal:
    """Organizer routes: the bearer token (``MTCJUDGE_ORGANIZER_TOKEN``), or a signed-in
    organizer's session cookie plus, on a state-changing request, its CSRF token. Nothing
    else: no session, an assessor's token or a wrong bearer token is a 401, a missing or
    wrong CSRF token a 403."""
    principal = await _identify(request, settings)
    if principal is None:
        raise OrganizerOnly("organizers only: sign in at /login, or send the organizer token")
    await check_csrf(request, principal)
    return principal


async def optional_organizer(request: Request, settings: SettingsDep) -> Principal | None:
    """The organizer, if the request comes from one (pages open to everyone, such as /)."""
    try:
        return await _identify(request, settings)
    except OrganizerOnly:
        return None


CurrentOrganizer = Annotated[Principal, Depends(require_organizer)]
MaybeOrganizer = Annotated[Principal | None, Depends(optional_organizer)]
