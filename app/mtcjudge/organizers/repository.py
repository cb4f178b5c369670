"""Queries of organizer accounts and their sessions. Repositories only ``flush()``."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, exists, func, select
from sqlalchemy.orm import Session

from mtcjudge.models import Organizer, OrganizerSession

__all__ = [
    "add",
    "all_organizers",
    "any_organizer",
    "delete_expired_sessions",
    "delete_session",
    "delete_sessions_of",
    "live_session_counts",
    "organizer_by_username",
    "organizer_for_update",
]


def add(session: Session, row: Organizer | OrganizerSession) -> None:
    session.add(row)
    session.flush()


def organizer_by_username(session: Session, username: str) -> Organizer | None:
    return session.scalars(select(Organizer).where(Organizer.username == username)).one_or_none()


def organizer_for_update(session: Session, organizer_id: int) -> Organizer | None:
    """The organizer's row, locked until the transaction ends (a concurrent password change
    or disabling waits, or is waited for)."""
    query = select(Organizer).where(Organizer.id == organizer_id).with_for_update()
    return session.scalars(query).one_or_none()


def all_organizers(session: Session) -> list[Organizer]:
    return list(session.scalars(select(Organizer).order_by(Organizer.username)))


def any_organizer(session: Session) -> bool:
    return bool(session.scalar(select(exists().select_from(Organizer))))


def live_session_counts(session: Session, now: datetime) -> dict[int, int]:
    """Organizer id -> number of unexpired sessions."""
    rows = session.execute(
        select(OrganizerSession.organizer_id, func.count())
        .where(OrganizerSession.expires_at > now)
        .group_by(OrganizerSession.organizer_id)
    )
    return {int(organizer_id): int(count) for organizer_id, count in rows.all()}


def delete_session(session: Session, token_hash: str) -> bool:
    """Delete the session with this token hash; whether there was one."""
    deleted = session.execute(
        delete(OrganizerSession)
        .where(OrganizerSession.token_hash == token_hash)
        .returning(OrganizerSession.id)
    ).all()
    return bool(deleted)


def delete_sessions_of(session: Session, organizer_id: int) -> int:
    """Sign the organizer out everywhere; how many sessions ended."""
    ended = session.execute(
        delete(OrganizerSession)
        .where(OrganizerSession.organizer_id == organizer_id)
        .returning(OrganizerSession.id)
    ).all()
    return len(ended)


def delete_expired_sessions(session: Session, now: datetime) -> None:
    session.execute(delete(OrganizerSession).where(OrganizerSession.expires_at <= now))
