"""The query clips an assessor fetches once for all the pairs of a query, and the bytes of them
the server sent (:mod:`mtcjudge.judging.clip_urls`; ``clip_delivery``).

A query's URL holds a key, not a lease: :func:`query_clip` finds, among the query clips of
the assessor's leases, the one with that key. What is sent of it is added to the assessor's
delivery of the clip, and to their live lease when that lease is on this query; the
listening rule reads the delivery (:func:`delivered`), since a browser that fetched the
query for an earlier pair plays it again from its cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, Integer, String, bindparam, case, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from mtcjudge.db import execute_plain
from mtcjudge.judging.clip_urls import query_clip_key
from mtcjudge.models import Assessor, ClipDelivery, Document, Lease, Query
from mtcjudge.security import hash_token
from mtcjudge.validation import INT32_MAX

__all__ = ["QueryClip", "add_delivered", "delivered", "query_clip"]

_run = execute_plain
#: what ``bytes_sent`` is capped at (a client fetching a clip over and over again)
_MAX_BYTES = 2**62


@dataclass(frozen=True)
class QueryClip:
    """A query clip of one of the assessor's leases, found by its key."""

    assessor_id: int
    key: str
    document_id: int
    audio_path: str | None
    content_sha256: str | None
    excerpt_start: float | None
    duration_seconds: float | None
    source_seconds: float | None
    live_lease_id: int | None  # the assessor's live lease when it is on this query


_QUERY_CLIPS = (
    select(
        Assessor.id,
        Document.id,
        Document.audio_path,
        Document.content_sha256,
        Document.excerpt_start,
        Document.duration_seconds,
        Document.source_seconds,
    )
    .select_from(Assessor)
    .join(Lease, Lease.assessor_id == Assessor.id)
    .join(Query, Query.id == Lease.query_id)
    .join(Document, Document.id == Query.document_id)
    .where(Assessor.token_hash == bindparam("token_hash"), Assessor.revoked_at.is_(None))
    .distinct()
)
_LIVE_LEASE_ON = (
    select(Lease.id)
    .join(Query, Query.id == Lease.query_id)
    .where(
        Lease.assessor_id == bindparam("assessor_id", type_=Integer),
        Lease.state == "live",
        Query.document_id == bindparam("document_id", type_=Integer),
    )
)


def query_clip(session: Session, token: str, key: str) -> QueryClip | None:
    """The query clip of the assessor's leases whose key is ``key`` (None: none is, or the
    link is unknown or revoked)."""
    token_hash = hash_token(token)
    for row in _run(session, _QUERY_CLIPS, {"token_hash": token_hash}):
        assessor_id, document_id = int(row[0]), int(row[1])
        if query_clip_key(token_hash, document_id) != key:
            continue
        params = {"assessor_id": assessor_id, "document_id": document_id}
        live = _run(session, _LIVE_LEASE_ON, params).scalar()
        path, sha256, start, duration, source = row[2:]
        return QueryClip(assessor_id, key, document_id, path, sha256, start, duration, source, live)
    return None


def _upsert(dialect: Any) -> Any:
    n = bindparam("n", type_=BigInteger)
    insert = dialect.insert(ClipDelivery).values(
        assessor_id=bindparam("assessor_id", type_=Integer),
        clip_key=bindparam("clip_key", type_=String),
        bytes_sent=n,
    )
    column = ClipDelivery.bytes_sent
    return insert.on_conflict_do_update(
        index_elements=[ClipDelivery.assessor_id, ClipDelivery.clip_key],
        set_={"bytes_sent": case((column > _MAX_BYTES - n, _MAX_BYTES), else_=column + n)},
    )


_ADD_DELIVERED = {"postgresql": _upsert(postgresql), "sqlite": _upsert(sqlite)}
_ADD_LEASE_QUERY_BYTES = (
    update(Lease)
    .where(Lease.id == bindparam("lease_id", type_=Integer))
    .values(
        served_query_bytes=case(
            (Lease.served_query_bytes > INT32_MAX - bindparam("n", type_=Integer), INT32_MAX),
            else_=Lease.served_query_bytes + bindparam("n", type_=Integer),
        )
    )
    .execution_options(synchronize_session=False)
)


def add_delivered(session: Session, clip: QueryClip, n: int) -> None:
    """Add ``n`` bytes sent of a query clip to the assessor's delivery of it, and to their
    live lease when it is on this query."""
    statement = _ADD_DELIVERED[session.get_bind().dialect.name]
    _run(session, statement, {"assessor_id": clip.assessor_id, "clip_key": clip.key, "n": n})
    if clip.live_lease_id is not None:
        params = {"lease_id": clip.live_lease_id, "n": min(n, INT32_MAX)}
        _run(session, _ADD_LEASE_QUERY_BYTES, params)


_DELIVERED = select(ClipDelivery.bytes_sent).where(
    ClipDelivery.assessor_id == bindparam("assessor_id", type_=Integer),
    ClipDelivery.clip_key == bindparam("clip_key"),
)


def delivered(session: Session, assessor_id: int, key: str) -> int:
    """The bytes of a clip sent to the assessor over all their leases (0: none)."""
    params = {"assessor_id": assessor_id, "clip_key": key}
    return int(_run(session, _DELIVERED, params).scalar() or 0)
