"""The audio stored in the database by content (``audio_blob``): SQL only."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from mtcjudge.models import AudioBlob, utcnow

__all__ = ["blob_data", "insert_blob"]

_INSERT_BLOB = {
    name: dialect.insert(AudioBlob).on_conflict_do_nothing()
    for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))
}


def insert_blob(session: Session, sha256: str, data: bytes) -> None:
    """Store a file's bytes under their hash, unless they are stored already (by another
    upload, or another process at the same moment: the same bytes under the same name)."""
    statement = _INSERT_BLOB[session.get_bind().dialect.name]
    values = {"sha256": sha256, "size": len(data), "data": data, "created_at": utcnow()}
    session.execute(statement, values)


def blob_data(session: Session, sha256: str) -> bytes | None:
    """The stored bytes of this hash, or None."""
    return session.scalar(select(AudioBlob.data).where(AudioBlob.sha256 == sha256))
