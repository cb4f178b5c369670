"""The principal: who an organizer request comes from, and the session token that names it.

The request dependencies (``mtcjudge.deps``) resolve it for every organizer request; the
organizers' sign-in (``mtcjudge.organizers.service``) creates the sessions it is read from."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sqlalchemy.orm import Session

from mtcjudge import audit
from mtcjudge.auth import repository
from mtcjudge.models import utcnow

__all__ = ["Principal", "hash_session_token", "principal_for_session"]


@dataclass(frozen=True)
class Principal:
    """Who an organizer request comes from.

    Attributes
    ----------
    actor : audit.Actor
        As the audit log shows it: the organizer's username, or "API token".
    username : str or None
        The signed-in organizer (None for the bearer token).
    csrf_token : str or None
        The session's CSRF token, which state-changing requests must send back (None for
        the bearer token: a browser never sends an Authorization header by itself).
    """

    actor: audit.Actor
    username: str | None = None
    csrf_token: str | None = None

    @property
    def signed_in(self) -> bool:
        return self.username is not None


def hash_session_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def principal_for_session(session: Session, token: str) -> Principal | None:
    """Who holds this session token: None when it is unknown, expired or its organizer is
    disabled."""
    found = repository.live_session(session, hash_session_token(token), utcnow())
    if found is None:
        return None
    row, organizer = found
    return Principal(
        actor=audit.Actor(organizer.username, organizer.id),
        username=organizer.username,
        csrf_token=row.csrf_token,
    )
