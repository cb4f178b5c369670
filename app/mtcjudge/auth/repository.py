"""Queries of the principal: the live session a token hash names."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtcjudge.models import Organizer, OrganizerSession


def live_session(
    session: Session, token_hash: str, now: datetime
) -> tuple[OrganizerSession, Organizer] | None:
    """The unexpired session with this token hash, and its organizer if not disabled."""
    row = session.execute(
        select(OrganizerSession, Organizer)
        .join(Organizer, Organizer.id == OrganizerSession.organizer_id)
        .where(
            OrganizerSession.token_hash == token_hash,
            OrganizerSession.expires_at > now,
            Organizer.disabled_at.is_(None),
        )
    ).one_or_none()
    return None if row is None else (row[0], row[1])
