"""Queries of the leases: the free pair to hand out, its slot on the pair's row, the lease
itself and its end, whether a trial's assessor answered its pair otherwise, and the bytes of
its clips sent.

Every statement that changes who holds a pair runs while the transaction holds that pair's
row: ``SELECT ... FOR UPDATE`` on Postgres; on SQLite every transaction begins IMMEDIATE
and so holds the database's write lock. The conditional UPDATEs below are what enforce the
invariants; the reads before them only find candidates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    DateTime,
    Float,
    Integer,
    String,
    bindparam,
    case,
    cast,
    exists,
    func,
    literal,
    null,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, aliased

from mtcjudge.db import execute_plain
from mtcjudge.judging.repository.judgments import ASSESSOR_ID, PER_PAIR, same_pair
from mtcjudge.models import Judgment, Lease, Pair, PlanEntry, as_utc
from mtcjudge.validation import INT32_MAX

_run = execute_plain


@dataclass(frozen=True)
class ClaimCandidate:
    pair_id: int
    query_id: int
    document_id: int
    weight: float  # the planner's selection weight (0 outside the plan)
    lapsed_leases: bool  # it holds live leases that have all run out
    rank: int | None = None  # its place in the planner's list (None outside the plan)
    audit: bool = False  # drawn into ``joint``'s audit sample (a random unjudged pair)
    query_seconds: float | None = None  # the clips' durations as the plan stores them
    candidate_seconds: float | None = None


@dataclass(frozen=True)
class LeaseInfo:
    """A lease as the judging path needs it. A hidden quality trial (``kind`` other than
    "pool") has no pair: it takes no pool pair's slot."""

    id: int
    pair_id: int | None
    campaign_id: int
    query_id: int
    document_id: int
    expires_at: datetime
    kind: str = "pool"
    repeat_of: int | None = None  # a repeat trial: the judgment it repeats
    # the server's evidence of listening: bytes of each clip sent for this lease so far
    served_query_bytes: int = 0
    served_candidate_bytes: int = 0


#: what :func:`lease_info` reads of a lease's row beside its id and campaign
LEASE_INFO_COLUMNS = (
    Lease.pair_id,
    Lease.query_id,
    Lease.document_id,
    Lease.expires_at,
    Lease.kind,
    Lease.repeat_of,
    Lease.served_query_bytes,
    Lease.served_candidate_bytes,
)


def lease_info(row: Any, lease_id: Any) -> LeaseInfo:
    return LeaseInfo(
        int(lease_id),
        None if row.pair_id is None else int(row.pair_id),
        int(row.campaign_id),
        int(row.query_id),
        int(row.document_id),
        as_utc(row.expires_at),
        str(row.kind),
        None if row.repeat_of is None else int(row.repeat_of),
        int(row.served_query_bytes or 0),
        int(row.served_candidate_bytes or 0),
    )


_ANSWERED_OTHERWISE = select(
    or_(
        exists().where(
            Judgment.campaign_id == bindparam("campaign_id", type_=Integer),
            Judgment.query_id == bindparam("query_id", type_=Integer),
            Judgment.document_id == bindparam("document_id", type_=Integer),
            Judgment.assessor_id == bindparam("assessor_id", type_=Integer),
            Judgment.kind != bindparam("kind", type_=String),
        ),
        exists().where(
            Lease.pair_id == bindparam("pair_id", type_=Integer),
            Lease.assessor_id == bindparam("assessor_id", type_=Integer),
            Lease.state == "live",
        ),
    )
)


def answered_otherwise(
    session: Session,
    pair_id: int,
    lease: LeaseInfo,
    assessor_id: int,
) -> bool:
    """Whether the assessor judged the pool pair whose clips a trial's ``lease`` plays as
    another kind, or holds it now as a pool pair (read under the pair's lock)."""
    params = {
        "campaign_id": lease.campaign_id,
        "query_id": lease.query_id,
        "document_id": lease.document_id,
        "assessor_id": assessor_id,
        "kind": lease.kind,
        "pair_id": pair_id,
    }
    return bool(_run(session, _ANSWERED_OTHERWISE, params).scalar())


_NOW = bindparam("now", type_=DateTime(timezone=True))
_SKIP = bindparam("skip", expanding=True, type_=Integer)


def _candidate_statement(*, planned: bool, own_query: bool, several: bool) -> Any:
    # with one judgment per pair a pair judged as a pool pair is never free, so only a
    # campaign that asks for several needs to leave out the pairs this assessor judged here
    # (an anti-join on the judgment table, by the columns of its unique key, whatever their
    # kind); with one, the rare pair they answered as a hidden trial and that came back to
    # the pool is refused by :func:`take_slot`, at no cost per free pair
    judged_by_me = exists().where(same_pair(), Judgment.assessor_id == bindparam("assessor_id"))
    # free: room for one more assessor now; when every live lease has lapsed
    # (``leased_until`` passed) the pair is free whatever ``leased`` still says
    conditions = [
        Pair.campaign_id == bindparam("campaign_id"),
        Pair.playable.is_(True),
        Pair.judged < PER_PAIR,
        or_(Pair.judged + Pair.leased < PER_PAIR, Pair.leased_until <= _NOW),
        Pair.id.not_in(_SKIP),
    ]
    if several:
        conditions.append(~judged_by_me)
    columns = (
        Pair.id,
        Pair.query_id,
        Pair.document_id,
        Pair.leased,
        Pair.leased_until,
        Pair.audit,
    )
    stmt: Any
    if planned:
        stmt = (
            select(
                *columns,
                PlanEntry.weight,
                PlanEntry.rank,
                PlanEntry.query_seconds,
                PlanEntry.candidate_seconds,
            )
            .join(PlanEntry, PlanEntry.pair_id == Pair.id)
            .where(PlanEntry.campaign_id == bindparam("campaign_id"), *conditions)
            .order_by(PlanEntry.rank)
        )
        if own_query:
            stmt = stmt.where(PlanEntry.query_id == bindparam("query_id"))
    else:
        stmt = (
            select(
                *columns,
                literal(0.0),
                literal(None, type_=Integer),
                # typed NULLs: Postgres would read a bare NULL as text
                cast(null(), Float),
                cast(null(), Float),
            )
            .where(*conditions)
            .order_by(Pair.id)
        )
        if own_query:
            stmt = stmt.where(Pair.query_id == bindparam("query_id"))
    # Postgres locks the row, and skips rows other requests hold instead of waiting for
    # them; SQLite renders no FOR UPDATE (its transactions are serialised)
    return stmt.limit(1).with_for_update(of=Pair, skip_locked=True, key_share=True)


_CANDIDATE = {
    (planned, own, several): _candidate_statement(planned=planned, own_query=own, several=several)
    for planned in (True, False)
    for own in (True, False)
    for several in (True, False)
}


def candidate(
    session: Session,
    campaign_id: int,
    assessor_id: int,
    per_pair: int,
    now: datetime,
    *,
    planned: bool,
    query_id: int | None = None,
    skip: frozenset[int] = frozenset(),
) -> ClaimCandidate | None:
    """The best free pair for this assessor: from the planner's list (``planned``), else
    any free playable pair; with ``query_id``, of that query only. With one judgment per
    pair it may be one they answered as a hidden trial, which :func:`take_slot` refuses."""
    params: dict[str, Any] = {
        "campaign_id": campaign_id,
        "assessor_id": assessor_id,
        "per_pair": per_pair,
        "now": now,
        "skip": sorted(skip) or [-1],
    }
    if query_id is not None:
        params["query_id"] = query_id
    statement = _CANDIDATE[(planned, query_id is not None, per_pair > 1)]
    row = _run(session, statement, params).first()
    if row is None:
        return None
    pair_id, query_id, document_id, leased, leased_until, audit, weight, rank, qs, cs = row
    lapsed = bool(leased) and leased_until is not None and as_utc(leased_until) <= now
    return ClaimCandidate(
        int(pair_id),
        int(query_id),
        int(document_id),
        float(weight),
        lapsed,
        None if rank is None else int(rank),
        bool(audit),
        None if qs is None else float(qs),
        None if cs is None else float(cs),
    )


def _trial_pairs_back(assessor_id: Any, per_pair: Any) -> Any:
    """The pool pairs with room for a judgment that the assessor answered as a hidden trial
    (a second opinion whose original was set aside since, a reference trial whose clips are
    a pool pair): never to be handed to them as pool pairs."""
    return (
        select(Pair.id)
        .join(
            Judgment,
            same_pair(),
        )
        .where(
            Judgment.assessor_id == assessor_id,
            Judgment.kind != "pool",
            Pair.judged < per_pair,
        )
    )


_TRIAL_PAIRS_BACK = _trial_pairs_back(ASSESSOR_ID, PER_PAIR)


def trial_pairs_back(session: Session, assessor_id: int, per_pair: int) -> frozenset[int]:
    """The ids of the pool pairs with room for a judgment that the assessor answered as a
    hidden trial (what :func:`candidate` must skip for them)."""
    params = {"assessor_id": assessor_id, "per_pair": per_pair}
    return frozenset(int(p) for p in _run(session, _TRIAL_PAIRS_BACK, params).scalars())


def release_expired(session: Session, pair_id: int, now: datetime) -> None:
    """Mark the pair's lapsed live leases expired and stop counting them (pair row held)."""
    released = _run(
        session,
        update(Lease)
        .where(Lease.pair_id == pair_id, Lease.state == "live", Lease.expires_at <= now)
        .values(state="expired"),
    ).rowcount
    if released:
        _run(session, update(Pair).where(Pair.id == pair_id).values(leased=Pair.leased - released))


_EXPIRES = bindparam("expires_at", type_=DateTime(timezone=True))
_TAKE_SLOT = (
    update(Pair)
    .where(
        Pair.id == bindparam("pair_id"),
        # a pair the planner marked unplayable meanwhile is not taken (the row's lock orders
        # the two UPDATEs; Postgres re-checks this condition on the committed row)
        Pair.playable.is_(True),
        Pair.judged < PER_PAIR,
        Pair.judged + Pair.leased < PER_PAIR,
        # nor one the assessor judged, in any kind (one probe of the judgments' unique key)
        ~exists().where(same_pair(), Judgment.assessor_id == ASSESSOR_ID),
    )
    .values(
        leased=Pair.leased + 1,
        leased_until=case(
            (or_(Pair.leased_until.is_(None), Pair.leased_until < _EXPIRES), _EXPIRES),
            else_=Pair.leased_until,
        ),
    )
    .execution_options(synchronize_session=False)
)


def take_slot(
    session: Session, pair_id: int, per_pair: int, expires_at: datetime, assessor_id: int
) -> bool:
    """Count one more live lease on the pair if it is still free and the assessor never
    judged it in any kind: one conditional UPDATE."""
    params = {
        "pair_id": pair_id,
        "per_pair": per_pair,
        "expires_at": expires_at,
        "assessor_id": assessor_id,
    }
    taken = _run(session, _TAKE_SLOT, params).rowcount
    return bool(taken)


_INSERT_LEASE = {
    name: dialect.insert(Lease).on_conflict_do_nothing().returning(Lease.id)
    for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))
}


def insert_lease(session: Session, values: dict[str, Any]) -> int | None:
    """Insert a live lease; None when the assessor already holds one (the partial unique
    index on live leases decided between two concurrent requests)."""
    stmt = _INSERT_LEASE[session.get_bind().dialect.name]
    lease_id = _run(session, stmt, values).scalar_one_or_none()
    return None if lease_id is None else int(lease_id)


def give_back_slot(session: Session, pair_id: int) -> None:
    """Undo :func:`take_slot` (the lease it was for was not inserted)."""
    _run(session, update(Pair).where(Pair.id == pair_id).values(leased=Pair.leased - 1))


_OTHER_JUDGMENT = aliased(Judgment)
_LEASE_STATE = select(
    Lease.state,
    Lease.expires_at,
    # the lease's assessor answered its pair as another kind (a hidden trial)
    exists()
    .where(
        _OTHER_JUDGMENT.campaign_id == Lease.campaign_id,
        _OTHER_JUDGMENT.query_id == Lease.query_id,
        _OTHER_JUDGMENT.document_id == Lease.document_id,
        _OTHER_JUDGMENT.assessor_id == Lease.assessor_id,
        _OTHER_JUDGMENT.kind != Lease.kind,
    )
    .label("judged_otherwise"),
).where(Lease.id == bindparam("lease_id"))


@dataclass(frozen=True)
class LeaseState:
    state: str
    expires_at: datetime
    judged_otherwise: bool  # its assessor answered its pair as another kind of judgment


def lease_state(session: Session, lease_id: int) -> LeaseState:
    """The lease's state and expiry as committed now, and whether its assessor answered its
    pair as another kind (read under its pair's lock, which a trial's answer of the pair
    takes too)."""
    row = _run(session, _LEASE_STATE, {"lease_id": lease_id}).one()
    return LeaseState(str(row.state), as_utc(row.expires_at), bool(row.judged_otherwise))


_LIVE_LEASE = select(Lease.id, Lease.campaign_id, *LEASE_INFO_COLUMNS).where(
    Lease.assessor_id == bindparam("assessor_id"), Lease.state == "live"
)


def live_lease_of(session: Session, assessor_id: int) -> LeaseInfo | None:
    row = _run(session, _LIVE_LEASE, {"assessor_id": assessor_id}).one_or_none()
    return None if row is None else lease_info(row, row.id)


def live_leases_of_others(session: Session, lease: LeaseInfo, now: datetime) -> int:
    statement = select(func.count()).where(
        Lease.pair_id == lease.pair_id,
        Lease.state == "live",
        Lease.expires_at > now,
        Lease.id != lease.id,
    )
    return int(_run(session, statement).scalar() or 0)


_MARK_LEASE = (
    update(Lease)
    .where(Lease.id == bindparam("lease_id"))
    .values(state=bindparam("state"))
    .execution_options(synchronize_session=False)
)


def mark_lease(session: Session, lease_id: int, state: str) -> None:
    _run(session, _MARK_LEASE, {"lease_id": lease_id, "state": state})


def _add_served_statement(column: Any) -> Any:
    n = bindparam("n", type_=Integer)
    # capped at what the column holds (a client fetching a clip over and over again)
    return (
        update(Lease)
        .where(Lease.id == bindparam("lease_id", type_=Integer))
        .values(
            {column: case((column > INT32_MAX - n, INT32_MAX), else_=column + n)},
        )
        .execution_options(synchronize_session=False)
    )


_ADD_SERVED = {
    "query": _add_served_statement(Lease.served_query_bytes),
    "candidate": _add_served_statement(Lease.served_candidate_bytes),
}


def add_served_bytes(session: Session, lease_id: int, which: str, n: int) -> None:
    """Add ``n`` bytes of the lease's query or candidate clip to what the server sent."""
    _run(session, _ADD_SERVED[which], {"lease_id": lease_id, "n": min(n, INT32_MAX)})
