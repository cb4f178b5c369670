"""Queries of the pool: its pairs, their clips and whether they play, the judgments counted
per pair, and the pair's row lock and lease count every change of a pair goes through."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import (
    Integer,
    bindparam,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from mtcjudge.db import execute_plain
from mtcjudge.models import (
    Document,
    Judgment,
    Lease,
    Pair,
    PlanEntry,
    Query,
    counted_judgment,
)

#: ids per statement when many pairs change at once (SQLite allows 32,766 parameters)
_CHUNK = 500


class LeaseRow(Protocol):
    """What :func:`release_lease` reads of a lease: an ORM row or the judging path's plain one."""

    @property
    def id(self) -> int: ...
    @property
    def pair_id(self) -> int | None: ...


def audio_paths(session: Session, campaign_id: int) -> dict[int, str]:
    """document id -> its clip's path, for the documents that have one."""
    rows = session.execute(
        select(Document.id, Document.audio_path).where(
            Document.campaign_id == campaign_id, Document.audio_path.is_not(None)
        )
    ).all()
    return {int(d): str(path) for d, path in rows}


def pair_clips(session: Session, campaign_id: int) -> list[tuple[int, int, int, bool]]:
    """(pair id, query clip's document id, candidate's document id, playable) of the pool."""
    rows = session.execute(
        select(Pair.id, Query.document_id, Pair.document_id, Pair.playable)
        .join(Query, Query.id == Pair.query_id)
        .where(Pair.campaign_id == campaign_id)
    ).all()
    return [(int(p), int(q), int(d), bool(ok)) for p, q, d, ok in rows]


def set_playable(session: Session, turned_off: Sequence[int], turned_on: Sequence[int]) -> int:
    """Mark pairs (row ids) unplayable and playable again. An unplayable pair leaves the plan
    and its live leases end ("released"), so that nobody holds it; returns how many leases
    ended. The pair rows are updated first: their locks order this against the judging
    path, which takes a pair's row before its leases."""
    ended = 0
    for start in range(0, len(turned_off), _CHUNK):
        chunk = list(turned_off[start : start + _CHUNK])
        session.execute(
            update(Pair)
            .where(Pair.id.in_(chunk))
            .values(playable=False)
            .execution_options(synchronize_session=False)
        )
        session.execute(delete(PlanEntry).where(PlanEntry.pair_id.in_(chunk)))
        released = session.scalars(
            update(Lease)
            .where(Lease.pair_id.in_(chunk), Lease.state == "live")
            .values(state="released")
            .returning(Lease.pair_id)
            .execution_options(synchronize_session=False)
        ).all()
        per_pair: dict[int, int] = {}
        for pair_id in released:
            if pair_id is not None:
                per_pair[pair_id] = per_pair.get(pair_id, 0) + 1
        for pair_id, n in per_pair.items():
            session.execute(
                update(Pair)
                .where(Pair.id == pair_id)
                .values(leased=Pair.leased - n)
                .execution_options(synchronize_session=False)
            )
        ended += len(released)
    for start in range(0, len(turned_on), _CHUNK):
        session.execute(
            update(Pair)
            .where(Pair.id.in_(list(turned_on[start : start + _CHUNK])))
            .values(playable=True)
            .execution_options(synchronize_session=False)
        )
    return ended


def pair_count(session: Session, campaign_id: int) -> int:
    return int(session.scalar(select(func.count()).where(Pair.campaign_id == campaign_id)) or 0)


def insert_pairs(session: Session, rows: list[dict[str, Any]]) -> bool:
    """Insert the pool of a campaign; False when another process did it first."""
    try:
        with session.begin_nested():
            session.execute(insert(Pair), rows)
    except IntegrityError:
        return False
    return True


def pair_ids(session: Session, campaign_id: int) -> dict[tuple[int, int], int]:
    """Pair ids by (query_id, document_id): the pool never changes once stored."""
    rows = session.execute(
        select(Pair.id, Pair.query_id, Pair.document_id).where(Pair.campaign_id == campaign_id)
    ).all()
    return {(q, d): pid for pid, q, d in rows}


def judgment_counts(session: Session, campaign_id: int) -> dict[tuple[int, int], int]:
    rows = session.execute(
        select(Judgment.query_id, Judgment.document_id, func.count())
        .where(Judgment.campaign_id == campaign_id, counted_judgment())
        .group_by(Judgment.query_id, Judgment.document_id)
    ).all()
    return {(q, d): int(n) for q, d, n in rows}


def _clips_of_unplayable_pairs(campaign_id: int) -> Any:
    """The documents (queries or candidates) of the campaign's pairs that cannot be played."""
    in_pairs = (
        select(Pair.document_id.label("doc"))
        .where(Pair.campaign_id == campaign_id, Pair.playable.is_(False))
        .union(
            select(Query.document_id)
            .join(Pair, Pair.query_id == Query.id)
            .where(Pair.campaign_id == campaign_id, Pair.playable.is_(False))
        )
        .subquery()
    )
    return select(in_pairs.c.doc)


def unplayable_clips(session: Session, campaign_id: int) -> list[str]:
    """External ids of the clips (queries or candidates) that keep pairs from being played."""
    unplayable = _clips_of_unplayable_pairs(campaign_id)
    return list(
        session.scalars(
            select(Document.external_id)
            .where(Document.id.in_(unplayable), Document.audio_path.is_(None))
            .order_by(Document.external_id)
        )
    )


def unplayable_clip_paths(session: Session, campaign_id: int) -> list[tuple[str, str]]:
    """(external id, path) of the clips with a stored path in pairs that cannot be played:
    those whose file may have gone since the import (or the other clip of their pair)."""
    unplayable = _clips_of_unplayable_pairs(campaign_id)
    rows = session.execute(
        select(Document.external_id, Document.audio_path).where(
            Document.id.in_(unplayable), Document.audio_path.is_not(None)
        )
    ).all()
    return [(str(ext), str(path)) for ext, path in rows]


def unplayable_count(session: Session, campaign_id: int) -> int:
    return int(
        session.scalar(
            select(func.count()).where(Pair.campaign_id == campaign_id, Pair.playable.is_(False))
        )
        or 0
    )


# NO KEY UPDATE: does not conflict with the key-share locks that inserting a lease or a plan
# entry (foreign keys to the row) takes; SQLite renders no FOR UPDATE
_LOCK_PAIR = (
    select(Pair.id, Pair.judged, Pair.playable)
    .where(Pair.id == bindparam("pair_id"))
    .with_for_update(key_share=True)
)


@dataclass(frozen=True)
class LockedPair:
    id: int
    judged: int  # judgments counted, read under the row's lock
    playable: bool  # both clips can be played (cannot change while the row is held)


def lock_pair(session: Session, pair_id: int | None) -> LockedPair | None:
    """Lock the pair's row until the transaction ends (Postgres; SQLite holds the
    database's write lock already) and read its judgment count and whether it can be
    played. None for the lease of a
    quality trial, which holds no pair."""
    if pair_id is None:
        return None
    row = execute_plain(session, _LOCK_PAIR, {"pair_id": pair_id}).one()
    return LockedPair(int(row.id), int(row.judged), bool(row.playable))


_LOCK_PAIR_OF = (
    select(Pair.id, Pair.judged, Pair.playable)
    .where(
        Pair.campaign_id == bindparam("campaign_id", type_=Integer),
        Pair.query_id == bindparam("query_id", type_=Integer),
        Pair.document_id == bindparam("document_id", type_=Integer),
    )
    .with_for_update(key_share=True)
)


def lock_pair_of(
    session: Session, campaign_id: int, query_id: int, document_id: int
) -> LockedPair | None:
    """:func:`lock_pair` by the pair's query and candidate: the pool pair whose clips a
    quality trial plays (a repeat's, a second opinion's), or None when they are no pool
    pair (a reference or an anchor trial, as a rule)."""
    params = {"campaign_id": campaign_id, "query_id": query_id, "document_id": document_id}
    row = execute_plain(session, _LOCK_PAIR_OF, params).one_or_none()
    return None if row is None else LockedPair(int(row.id), int(row.judged), bool(row.playable))


def release_lease(session: Session, lease: LeaseRow, new_state: str) -> bool:
    """End a live lease (``released`` or ``expired``) and stop counting it on its pair (a
    quality trial's lease holds none: it just ends). The caller holds the pair's row.
    False when it was no longer live."""
    ended = execute_plain(
        session,
        update(Lease).where(Lease.id == lease.id, Lease.state == "live").values(state=new_state),
    ).rowcount
    if ended and lease.pair_id is not None:
        execute_plain(
            session, update(Pair).where(Pair.id == lease.pair_id).values(leased=Pair.leased - 1)
        )
    return bool(ended)
