"""Organizer accounts and sign-in sessions.

A session is a row of ``organizer_session``: the browser's cookie holds a random token, the
row its SHA-256 (as invitation links are stored), so signing out, a new password or a disabled
account ends the session on every server process at once. Each session has its own CSRF token
(a synchronizer token), sent back by every form and every state-changing request. Services
only ``flush()``; the request or the command's ``session_scope`` commits.
"""

from __future__ import annotations

import logging
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge import audit
from mtcjudge.auth.principal import Principal, hash_session_token
from mtcjudge.config import Settings
from mtcjudge.db import session_scope
from mtcjudge.errors import Conflict, InvalidInput, NotFound
from mtcjudge.models import Organizer, OrganizerSession, as_utc, utcnow
from mtcjudge.organizers import passwords, repository

__all__ = [
    "USERNAME_PATTERN",
    "OrganizerAccount",
    "StoredCredentials",
    "authenticate",
    "check_credentials",
    "create_organizer",
    "end_session",
    "ensure_first_organizer",
    "list_organizers",
    "normalize_username",
    "set_disabled",
    "set_password",
    "sign_in",
    "start_session",
    "stored_credentials",
]

logger = logging.getLogger(__name__)

USERNAME_PATTERN = r"^[a-z0-9][a-z0-9._@-]{0,63}$"
_USERNAME = re.compile(USERNAME_PATTERN)


@dataclass(frozen=True)
class OrganizerAccount:
    """An organizer as ``mtcjudge organizer list`` shows it."""

    username: str
    created_at: datetime
    disabled: bool
    live_sessions: int


def normalize_username(text: str) -> str:
    """The stored form of a username (lowercase), or InvalidInput saying what is wrong."""
    username = text.strip().lower()
    if not _USERNAME.fullmatch(username):
        raise InvalidInput(
            "a username is 1 to 64 characters: lowercase letters, digits and . _ @ - "
            f"(starting with a letter or digit), found {text!r}"
        )
    return username


def _checked_password(password: str) -> str:
    try:
        passwords.check_password(password)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    return password


def _organizer(session: Session, username: str) -> Organizer:
    organizer = repository.organizer_by_username(session, normalize_username(username))
    if organizer is None:
        raise NotFound(f"no organizer {username.strip().lower()!r}")
    return organizer


def create_organizer(
    session: Session, username: str, password: str, actor: audit.Actor
) -> Organizer:
    """A new organizer account. InvalidInput for a bad username or a short password,
    Conflict when the username is taken."""
    name = normalize_username(username)
    password_hash = passwords.hash_password(_checked_password(password))
    if repository.organizer_by_username(session, name) is not None:
        raise Conflict(f"the username {name!r} is taken")
    organizer = Organizer(username=name, password_hash=password_hash)
    try:
        with session.begin_nested():
            repository.add(session, organizer)
    except IntegrityError:  # created meanwhile by another process
        raise Conflict(f"the username {name!r} is taken") from None
    audit.record(session, None, actor, audit.ORGANIZER_CREATED, name)
    return organizer


def list_organizers(session: Session) -> list[OrganizerAccount]:
    live = repository.live_session_counts(session, utcnow())
    return [
        OrganizerAccount(
            username=o.username,
            created_at=as_utc(o.created_at),
            disabled=o.disabled_at is not None,
            live_sessions=live.get(o.id, 0),
        )
        for o in repository.all_organizers(session)
    ]


def set_password(session: Session, username: str, password: str, actor: audit.Actor) -> int:
    """Give the organizer a new password and sign them out everywhere; returns the number of
    sessions ended."""
    organizer = _organizer(session, username)
    organizer.password_hash = passwords.hash_password(_checked_password(password))
    ended = repository.delete_sessions_of(session, organizer.id)
    session.flush()
    audit.record(session, None, actor, audit.ORGANIZER_PASSWORD_CHANGED, organizer.username)
    return ended


def set_disabled(session: Session, username: str, disabled: bool, actor: audit.Actor) -> bool:
    """Disable (and sign out everywhere) or enable an organizer; whether anything changed."""
    organizer = _organizer(session, username)
    if (organizer.disabled_at is not None) == disabled:
        return False
    organizer.disabled_at = utcnow() if disabled else None
    if disabled:
        repository.delete_sessions_of(session, organizer.id)
    session.flush()
    action = audit.ORGANIZER_DISABLED if disabled else audit.ORGANIZER_ENABLED
    audit.record(session, None, actor, action, organizer.username)
    return True


@dataclass(frozen=True)
class StoredCredentials:
    """What a sign-in checks a password against, read in a transaction of its own so that
    the slow verification holds no connection (and on SQLite no write lock)."""

    organizer_id: int
    password_hash: str
    disabled: bool


def stored_credentials(session: Session, username: str) -> StoredCredentials | None:
    try:
        name = normalize_username(username)
    except InvalidInput:
        return None
    organizer = repository.organizer_by_username(session, name)
    if organizer is None:
        return None
    return StoredCredentials(
        organizer.id, organizer.password_hash, organizer.disabled_at is not None
    )


def check_credentials(stored: StoredCredentials | None, password: str) -> tuple[bool, str | None]:
    """Whether ``password`` signs in (and a rehash to store, see
    :func:`mtcjudge.organizers.passwords.verify_password`), touching no database.

    Costs one password verification whatever happens (an unknown username is verified
    against a dummy hash), so the answer's timing does not tell whether a username exists.
    """
    if stored is None:
        passwords.waste_a_verification()
        return False, None
    matches, new_hash = passwords.verify_password(stored.password_hash, password)
    if not matches or stored.disabled:
        return False, None
    return True, new_hash


def sign_in(
    session: Session, stored: StoredCredentials, new_hash: str | None, lifetime: timedelta
) -> tuple[str, Principal] | None:
    """Start a session for the organizer whose password :func:`check_credentials` accepted:
    returns the cookie's token and who is signed in, or None when the account changed
    meanwhile (a new password, disabled)."""
    organizer = repository.organizer_for_update(session, stored.organizer_id)
    if (
        organizer is None
        or organizer.disabled_at is not None
        or organizer.password_hash != stored.password_hash
    ):
        return None
    if new_hash is not None:
        organizer.password_hash = new_hash
    token, row = start_session(session, organizer, lifetime)
    principal = Principal(
        actor=audit.Actor(organizer.username, organizer.id),
        username=organizer.username,
        csrf_token=row.csrf_token,
    )
    return token, principal


def authenticate(session: Session, username: str, password: str) -> Organizer | None:
    """The organizer with this username and password, or None (one transaction: for the
    command line and tests; the sign-in page splits it around the verification)."""
    stored = stored_credentials(session, username)
    matches, new_hash = check_credentials(stored, password)
    if not matches or stored is None:
        return None
    organizer = repository.organizer_for_update(session, stored.organizer_id)
    if organizer is not None and new_hash is not None:
        organizer.password_hash = new_hash
        session.flush()
    return organizer


def start_session(
    session: Session, organizer: Organizer, lifetime: timedelta
) -> tuple[str, OrganizerSession]:
    """A new signed-in session: returns the cookie's token (only its hash is stored) and the
    row. Expired sessions of everyone are deleted on the way."""
    now = utcnow()
    repository.delete_expired_sessions(session, now)
    token = secrets.token_urlsafe(32)
    row = OrganizerSession(
        organizer_id=organizer.id,
        token_hash=hash_session_token(token),
        csrf_token=secrets.token_urlsafe(32),
        created_at=now,
        expires_at=now + lifetime,
    )
    repository.add(session, row)
    return token, row


def end_session(session: Session, token: str) -> bool:
    """Sign out: delete the session; whether there was one."""
    return repository.delete_session(session, hash_session_token(token))


def ensure_first_organizer(factory: sessionmaker[Session], settings: Settings) -> str | None:
    """Create the account of ``MTCJUDGE_ADMIN_USERNAME``/``_PASSWORD`` when no organizer
    exists yet; returns its username when it was created now.

    Several server processes may start at once: one creates it, the others find it there.
    """
    if settings.admin_username is None or settings.admin_password is None:
        return None
    actor = audit.Actor("MTCJUDGE_ADMIN_USERNAME at startup")
    try:
        with session_scope(factory) as session:
            if repository.any_organizer(session):
                return None
            organizer = create_organizer(
                session, settings.admin_username, settings.admin_password, actor
            )
            username = organizer.username
    except Conflict:
        return None
    logger.info("created the first organizer account %r", username)
    return username
