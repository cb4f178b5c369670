"""Queries of the judging feature: pairs, leases and judgments.

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
    BigInteger,
    DateTime,
    Integer,
    String,
    and_,
    bindparam,
    case,
    cast,
    exists,
    func,
    literal,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, aliased

from mtcjudge.db import execute_plain
from mtcjudge.models import (
    Assessor,
    Campaign,
    Document,
    Judgment,
    Lease,
    Pair,
    PlanEntry,
    PlannerState,
    Query,
    Result,
    as_utc,
    utcnow,
)
from mtcjudge.security import hash_token
from mtcjudge.validation import INT32_MAX

__all__ = [
    "ClaimCandidate",
    "LeaseClip",
    "TrialQuery",
    "add_served_bytes",
    "anchor_document",
    "answered_otherwise",
    "assessor_and_campaign",
    "assessor_by_token",
    "assessor_hold",
    "candidate",
    "give_back_slot",
    "insert_judgment",
    "insert_lease",
    "insert_trial_lease",
    "judgment_by_client_id",
    "last_judged_query",
    "lease_clip",
    "live_lease_of",
    "live_leases_of_others",
    "mark_consented",
    "mark_lease",
    "pair_of",
    "pair_view",
    "pairs_left",
    "planner_state",
    "progress_counts",
    "recent_judgments",
    "record_judgment",
    "record_revision",
    "release_expired",
    "repeat_judgment",
    "second_opinion",
    "take_slot",
    "trial_pairs_back",
    "trial_query",
]


@dataclass(frozen=True)
class ClaimCandidate:
    pair_id: int
    query_id: int
    document_id: int
    weight: float  # the planner's selection weight (0 outside the plan)
    lapsed_leases: bool  # it holds live leases that have all run out
    rank: int | None = None  # its place in the planner's list (None outside the plan)
    audit: bool = False  # drawn into ``joint``'s audit sample (a random unjudged pair)


_ASSESSOR_AND_CAMPAIGN = (
    select(Assessor, Campaign)
    .join(Campaign, Campaign.id == Assessor.campaign_id)
    .where(Assessor.token_hash == bindparam("token_hash"), Assessor.revoked_at.is_(None))
)


def _same_pair() -> Any:
    """A judgment and a pool pair of the same (campaign, query, document): the judgments'
    unique key without the assessor and kind."""
    return and_(
        Judgment.campaign_id == Pair.campaign_id,
        Judgment.query_id == Pair.query_id,
        Judgment.document_id == Pair.document_id,
    )


def assessor_and_campaign(session: Session, token: str) -> tuple[Assessor, Campaign] | None:
    """The assessor of an (unrevoked) link and their campaign, in one query."""
    row = session.execute(_ASSESSOR_AND_CAMPAIGN, {"token_hash": hash_token(token)}).one_or_none()
    return None if row is None else (row[0], row[1])


_run = execute_plain


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


@dataclass(frozen=True)
class ClipFile:
    """A clip of a lease as the listening rule needs it."""

    audio_path: str | None
    duration_seconds: float | None


@dataclass(frozen=True)
class ProgressCounts:
    assessor_judged: int
    campaign_judged: int
    playable_pairs: int
    system_pairs: int
    system_pairs_settled: int
    stop_reason: str | None


@dataclass(frozen=True)
class Context:
    """Everything a judging request starts from, read in one statement: the assessor, the
    settings of their campaign, and (for ``next``) their live lease, the query they judged
    last and their progress; (for a submit) the lease it names and a judgment already
    stored under its client id."""

    assessor_id: int
    consented: bool
    campaign_id: int
    status: str
    judgments_per_pair: int
    lease_minutes: int
    keep_collecting: bool
    lease: LeaseInfo | None
    listen_seconds: float = 0.0  # the campaign's listening rule (0: off)
    quality_rate: float = 0.0  # the campaign's share of hidden quality trials
    seed: int = 0  # the campaign's seed (quality trials are drawn from it)
    set_aside: bool = False  # an organizer set the assessor's judgments aside
    paused: bool = False  # the assessor is handed nothing for now
    pause_reason: str | None = None  # what they are told, if an organizer wrote it
    last_query: int | None = None
    progress: ProgressCounts | None = None
    handouts: int = 0  # leases the assessor was ever handed (``next``)
    last_kind: str | None = None  # the kind of the latest of them (``next``)
    # the live lease is a trial on a pool pair that cannot be played now (``next``)
    trial_unplayable: bool = False
    stored_judgment: int | None = None  # id of the judgment already stored for the client id
    query_clip: ClipFile | None = None  # the named lease's clips (a submit)
    candidate_clip: ClipFile | None = None


_ASSESSOR_ID = bindparam("assessor_id", type_=Integer)
_CAMPAIGN_ID = bindparam("campaign_id", type_=Integer)


def _progress_columns(assessor_id: Any, campaign_id: Any) -> list[Any]:
    """Scalar subqueries of :class:`ProgressCounts`' first two counts, then the planner's
    figures (the statement must outer-join ``planner_state``)."""
    return [
        select(func.count())
        .where(Judgment.assessor_id == assessor_id)
        .scalar_subquery()
        .label("assessor_judged"),
        select(func.count())
        .where(Pair.campaign_id == campaign_id, Pair.judged > 0)
        .scalar_subquery()
        .label("campaign_judged"),
        PlannerState.playable_pairs,
        PlannerState.system_pairs,
        PlannerState.system_pairs_settled,
        PlannerState.stop_reason,
    ]


def _progress_from(row: Any) -> ProgressCounts:
    return ProgressCounts(
        assessor_judged=int(row.assessor_judged or 0),
        campaign_judged=int(row.campaign_judged or 0),
        playable_pairs=int(row.playable_pairs or 0),
        system_pairs=int(row.system_pairs or 0),
        system_pairs_settled=int(row.system_pairs_settled or 0),
        stop_reason=row.stop_reason,
    )


_CONTEXT_COLUMNS = (
    Assessor.id.label("assessor_id"),
    Assessor.consented_at,
    Assessor.set_aside_at,
    Assessor.paused_at,
    Assessor.pause_reason,
    Campaign.id.label("campaign_id"),
    Campaign.status,
    Campaign.judgments_per_pair,
    Campaign.lease_minutes,
    Campaign.keep_collecting,
    Campaign.listen_seconds,
    Campaign.quality_rate,
    Campaign.seed,
    Lease.id.label("lease_id"),
    Lease.pair_id,
    Lease.query_id,
    Lease.document_id,
    Lease.expires_at,
    Lease.kind,
    Lease.repeat_of,
    Lease.served_query_bytes,
    Lease.served_candidate_bytes,
)
_CONTEXT_WHERE = (Assessor.token_hash == bindparam("token_hash"), Assessor.revoked_at.is_(None))
_LAST_QUERY_OF_ASSESSOR = (
    select(Judgment.query_id)
    .where(Judgment.assessor_id == Assessor.id)
    .order_by(Judgment.created_at.desc(), Judgment.id.desc())
    .limit(1)
    .scalar_subquery()
    .label("last_query")
)
_EVERY_LEASE = aliased(Lease)
_HANDOUTS = (
    select(func.count())
    .where(_EVERY_LEASE.assessor_id == Assessor.id)
    .scalar_subquery()
    .label("handouts")
)
_LAST_KIND = (
    select(_EVERY_LEASE.kind)
    .where(_EVERY_LEASE.assessor_id == Assessor.id)
    .order_by(_EVERY_LEASE.id.desc())
    .limit(1)
    .scalar_subquery()
    .label("last_kind")
)
# the pool pair whose clips a live trial lease plays (a repeat's, a second opinion's)
_TRIAL_PAIR = aliased(Pair)
_NEXT_CONTEXT = (
    select(
        *_CONTEXT_COLUMNS,
        _LAST_QUERY_OF_ASSESSOR,
        _HANDOUTS,
        _LAST_KIND,
        *_progress_columns(Assessor.id, Campaign.id),
        _TRIAL_PAIR.playable.label("trial_pair_playable"),
    )
    .select_from(Assessor)
    .join(Campaign, Campaign.id == Assessor.campaign_id)
    .outerjoin(Lease, and_(Lease.assessor_id == Assessor.id, Lease.state == "live"))
    .outerjoin(
        _TRIAL_PAIR,
        and_(
            Lease.pair_id.is_(None),
            _TRIAL_PAIR.campaign_id == Lease.campaign_id,
            _TRIAL_PAIR.query_id == Lease.query_id,
            _TRIAL_PAIR.document_id == Lease.document_id,
        ),
    )
    .outerjoin(PlannerState, PlannerState.campaign_id == Campaign.id)
    .where(*_CONTEXT_WHERE)
)
_QUERY_DOC, _CANDIDATE_DOC = aliased(Document), aliased(Document)
_SUBMIT_CONTEXT = (
    select(
        *_CONTEXT_COLUMNS,
        select(Judgment.id)
        .where(
            Judgment.assessor_id == Assessor.id,
            Judgment.client_id == bindparam("client_id"),
        )
        .scalar_subquery()
        .label("stored_judgment"),
        _QUERY_DOC.audio_path.label("query_audio_path"),
        _QUERY_DOC.duration_seconds.label("query_duration"),
        _CANDIDATE_DOC.audio_path.label("candidate_audio_path"),
        _CANDIDATE_DOC.duration_seconds.label("candidate_duration"),
    )
    .select_from(Assessor)
    .join(Campaign, Campaign.id == Assessor.campaign_id)
    .outerjoin(
        Lease,
        and_(Lease.id == bindparam("lease_id", type_=Integer), Lease.assessor_id == Assessor.id),
    )
    .outerjoin(Query, Query.id == Lease.query_id)
    .outerjoin(_QUERY_DOC, _QUERY_DOC.id == Query.document_id)
    .outerjoin(_CANDIDATE_DOC, _CANDIDATE_DOC.id == Lease.document_id)
    .where(*_CONTEXT_WHERE)
)


def _lease_info(row: Any, lease_id: Any) -> LeaseInfo:
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


def _context(row: Any, **extra: Any) -> Context:
    lease = None if row.lease_id is None else _lease_info(row, row.lease_id)
    return Context(
        assessor_id=int(row.assessor_id),
        consented=row.consented_at is not None,
        campaign_id=int(row.campaign_id),
        status=row.status,
        judgments_per_pair=int(row.judgments_per_pair),
        lease_minutes=int(row.lease_minutes),
        keep_collecting=bool(row.keep_collecting),
        lease=lease,
        listen_seconds=float(row.listen_seconds or 0.0),
        quality_rate=float(row.quality_rate or 0.0),
        seed=int(row.seed or 0),
        set_aside=row.set_aside_at is not None,
        paused=row.paused_at is not None,
        pause_reason=row.pause_reason,
        **extra,
    )


def next_context(session: Session, token: str) -> Context | None:
    """The context of a ``next``: None when the link is unknown or revoked."""
    row = _run(session, _NEXT_CONTEXT, {"token_hash": hash_token(token)}).one_or_none()
    if row is None:
        return None
    last = None if row.last_query is None else int(row.last_query)
    return _context(
        row,
        last_query=last,
        progress=_progress_from(row),
        handouts=int(row.handouts or 0),
        last_kind=row.last_kind,
        trial_unplayable=row.trial_pair_playable is not None and not row.trial_pair_playable,
    )


def submit_context(session: Session, token: str, lease_id: int, client_id: str) -> Context | None:
    """The context of a submit (``lease`` is the named lease if it is the assessor's, as
    read before locking its pair): None when the link is unknown or revoked."""
    params = {"token_hash": hash_token(token), "lease_id": lease_id, "client_id": client_id}
    row = _run(session, _SUBMIT_CONTEXT, params).one_or_none()
    if row is None:
        return None
    stored = None if row.stored_judgment is None else int(row.stored_judgment)
    return _context(
        row,
        stored_judgment=stored,
        query_clip=ClipFile(row.query_audio_path, row.query_duration),
        candidate_clip=ClipFile(row.candidate_audio_path, row.candidate_duration),
    )


def assessor_by_token(session: Session, token: str) -> Assessor | None:
    """The assessor whose (unrevoked) invitation link carries ``token``."""
    return session.scalars(
        select(Assessor).where(
            Assessor.token_hash == hash_token(token), Assessor.revoked_at.is_(None)
        )
    ).one_or_none()


@dataclass(frozen=True)
class AssessorHold:
    """Why an assessor is handed no pairs: their judgments are set aside, or they are paused
    (with what they are told)."""

    set_aside: bool
    paused: bool
    pause_reason: str | None

    @property
    def held(self) -> bool:
        return self.set_aside or self.paused


_HOLD = select(Assessor.set_aside_at, Assessor.paused_at, Assessor.pause_reason).where(
    Assessor.id == bindparam("assessor_id")
)
_HOLD_SHARED = _HOLD.with_for_update(read=True)


def assessor_hold(session: Session, assessor_id: int, *, shared_lock: bool = False) -> AssessorHold:
    """Whether the assessor is set aside or paused. ``shared_lock`` (Postgres: FOR SHARE)
    waits for an organizer's change of the assessor in flight, and makes it wait: a submit
    takes it after its pair's row, so that a judgment is either seen by a set-aside or
    refused after it."""
    statement = _HOLD_SHARED if shared_lock else _HOLD
    row = _run(session, statement, {"assessor_id": assessor_id}).one()
    return AssessorHold(row.set_aside_at is not None, row.paused_at is not None, row.pause_reason)


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


def pair_of(session: Session, campaign_id: int, query_id: int, document_id: int) -> Pair | None:
    return session.scalars(
        select(Pair).where(
            Pair.campaign_id == campaign_id,
            Pair.query_id == query_id,
            Pair.document_id == document_id,
        )
    ).one_or_none()


# The statements of the judging path are built once: building a SELECT costs about as much
# as running it on a local database, and these run on every request.
_PER_PAIR = bindparam("per_pair", type_=Integer)
_NOW = bindparam("now", type_=DateTime(timezone=True))
_SKIP = bindparam("skip", expanding=True, type_=Integer)


def _candidate_statement(*, planned: bool, own_query: bool, several: bool) -> Any:
    # with one judgment per pair a pair judged as a pool pair is never free, so only a
    # campaign that asks for several needs to leave out the pairs this assessor judged here
    # (an anti-join on the judgment table, by the columns of its unique key, whatever their
    # kind); with one, the rare pair they answered as a hidden trial and that came back to
    # the pool is refused by :func:`take_slot`, at no cost per free pair
    judged_by_me = exists().where(_same_pair(), Judgment.assessor_id == bindparam("assessor_id"))
    # free: room for one more assessor now; when every live lease has lapsed
    # (``leased_until`` passed) the pair is free whatever ``leased`` still says
    conditions = [
        Pair.campaign_id == bindparam("campaign_id"),
        Pair.playable.is_(True),
        Pair.judged < _PER_PAIR,
        or_(Pair.judged + Pair.leased < _PER_PAIR, Pair.leased_until <= _NOW),
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
    if planned:
        stmt = (
            select(*columns, PlanEntry.weight, PlanEntry.rank)
            .join(PlanEntry, PlanEntry.pair_id == Pair.id)
            .where(PlanEntry.campaign_id == bindparam("campaign_id"), *conditions)
            .order_by(PlanEntry.rank)
        )
        if own_query:
            stmt = stmt.where(PlanEntry.query_id == bindparam("query_id"))
    else:
        stmt = (
            select(*columns, literal(0.0), literal(None, type_=Integer))
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
    pair_id, query_id, document_id, leased, leased_until, audit, weight, rank = row
    lapsed = bool(leased) and leased_until is not None and as_utc(leased_until) <= now
    return ClaimCandidate(
        int(pair_id),
        int(query_id),
        int(document_id),
        float(weight),
        lapsed,
        None if rank is None else int(rank),
        bool(audit),
    )


def _trial_pairs_back(assessor_id: Any, per_pair: Any) -> Any:
    """The pool pairs with room for a judgment that the assessor answered as a hidden trial
    (a second opinion whose original was set aside since, a reference trial whose clips are
    a pool pair): never to be handed to them as pool pairs."""
    return (
        select(Pair.id)
        .join(
            Judgment,
            _same_pair(),
        )
        .where(
            Judgment.assessor_id == assessor_id,
            Judgment.kind != "pool",
            Pair.judged < per_pair,
        )
    )


_TRIAL_PAIRS_BACK = _trial_pairs_back(_ASSESSOR_ID, _PER_PAIR)


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
        Pair.judged < _PER_PAIR,
        Pair.judged + Pair.leased < _PER_PAIR,
        # nor one the assessor judged, in any kind (one probe of the judgments' unique key)
        ~exists().where(_same_pair(), Judgment.assessor_id == _ASSESSOR_ID),
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
#: what a response shows of a judgment (``_judgment_out`` in the routes)
JUDGMENT_COLUMNS = (
    Judgment.id,
    Judgment.campaign_id,
    Judgment.query_id,
    Judgment.document_id,
    Judgment.assessor_id,
    Judgment.broad,
    Judgment.fine,
    Judgment.revision,
    Judgment.created_at,
    Judgment.lease_id,
    Judgment.kind,
)
_INSERT_JUDGMENT = {
    name: dialect.insert(Judgment).on_conflict_do_nothing().returning(*JUDGMENT_COLUMNS)
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


_LIVE_LEASE = select(
    Lease.id,
    Lease.pair_id,
    Lease.campaign_id,
    Lease.query_id,
    Lease.document_id,
    Lease.expires_at,
    Lease.kind,
    Lease.repeat_of,
    Lease.served_query_bytes,
    Lease.served_candidate_bytes,
).where(Lease.assessor_id == bindparam("assessor_id"), Lease.state == "live")


def live_lease_of(session: Session, assessor_id: int) -> LeaseInfo | None:
    row = _run(session, _LIVE_LEASE, {"assessor_id": assessor_id}).one_or_none()
    return None if row is None else _lease_info(row, row.id)


def live_leases_of_others(session: Session, lease: LeaseInfo, now: datetime) -> int:
    statement = select(func.count()).where(
        Lease.pair_id == lease.pair_id,
        Lease.state == "live",
        Lease.expires_at > now,
        Lease.id != lease.id,
    )
    return int(_run(session, statement).scalar() or 0)


_RECORD_JUDGMENT = (
    update(Pair)
    .where(Pair.id == bindparam("pair_id"), Pair.judged < _PER_PAIR)
    .values(
        judged=Pair.judged + 1,
        changes=Pair.changes + 1,
        leased=Pair.leased - bindparam("ended", type_=Integer),
    )
    .execution_options(synchronize_session=False)
)
_MARK_LEASE = (
    update(Lease)
    .where(Lease.id == bindparam("lease_id"))
    .values(state=bindparam("state"))
    .execution_options(synchronize_session=False)
)


def record_judgment(session: Session, pair_id: int, per_pair: int, *, ends_lease: bool) -> bool:
    """Count one more judgment of the pair unless it has all it may have: the statement
    that keeps a pair from being judged more often than the campaign asks. With
    ``ends_lease`` the judgment's live lease stops being counted too."""
    params = {"pair_id": pair_id, "per_pair": per_pair, "ended": 1 if ends_lease else 0}
    counted = _run(session, _RECORD_JUDGMENT, params).rowcount
    return bool(counted)


def mark_lease(session: Session, lease_id: int, state: str) -> None:
    _run(session, _MARK_LEASE, {"lease_id": lease_id, "state": state})


def record_revision(session: Session, campaign_id: int, query_id: int, document_id: int) -> None:
    """A judgment changed: the planner re-reads the pair."""
    session.execute(
        update(Pair)
        .where(
            Pair.campaign_id == campaign_id,
            Pair.query_id == query_id,
            Pair.document_id == document_id,
        )
        .values(changes=Pair.changes + 1)
        .execution_options(synchronize_session=False)
    )


def insert_judgment(session: Session, values: dict[str, Any]) -> Any | None:
    """Insert a judgment; its row (:data:`JUDGMENT_COLUMNS`), or None when a unique key
    refused it (the same client_id, or the assessor's judgment of the pair, written before
    or by a concurrent request)."""
    stmt = _INSERT_JUDGMENT[session.get_bind().dialect.name]
    return _run(session, stmt, values).one_or_none()


def pairs_left(
    session: Session, campaign_id: int, assessor_id: int, per_pair: int
) -> tuple[int, int, int, int]:
    """(pairs still needing a judgment, of which this assessor has not judged, of which
    playable, pairs in the pool)."""
    judged_by_me = exists().where(
        Judgment.assessor_id == assessor_id,
        Judgment.query_id == Pair.query_id,
        Judgment.document_id == Pair.document_id,
    )
    row = session.execute(
        select(
            func.count().filter(Pair.judged < per_pair),
            func.count().filter(and_(Pair.judged < per_pair, ~judged_by_me)),
            func.count().filter(and_(Pair.judged < per_pair, ~judged_by_me, Pair.playable)),
            func.count(),
        ).where(Pair.campaign_id == campaign_id)
    ).one()
    return int(row[0]), int(row[1]), int(row[2]), int(row[3])


@dataclass(frozen=True)
class Clip:
    document_id: int
    has_audio: bool
    duration_seconds: float | None
    audio_type: str | None


@dataclass(frozen=True)
class PairView:
    """What the assessor is shown of a pair: its name and its two clips."""

    query_number: int  # the query's place among the campaign's queries, from 1
    candidate_number: int  # the candidate's place among the query's pairs, from 1
    query: Clip
    candidate: Clip


def _pair_view_statement(*, trial: bool) -> Any:
    campaign_id = bindparam("campaign_id", type_=Integer)
    query_id = bindparam("query_id", type_=Integer)
    document_id = bindparam("document_id", type_=Integer)
    query_doc, candidate_doc = aliased(Document), aliased(Document)
    query_number = (
        select(func.count())
        .where(Query.campaign_id == campaign_id, Query.id <= query_id)
        .scalar_subquery()
    )
    if trial:
        # a hidden quality trial shows a number no pool pair of the query has: one past the
        # query's pairs, counting the assessor's trials of the query up to this one. It
        # stays the same in the history, and a repeat never shows its original's number.
        pairs_of_query = (
            select(func.count())
            .where(Pair.campaign_id == campaign_id, Pair.query_id == query_id)
            .scalar_subquery()
        )
        trials_so_far = (
            select(func.count())
            .where(
                Lease.assessor_id == bindparam("assessor_id", type_=Integer),
                Lease.query_id == query_id,
                Lease.kind != "pool",
                Lease.id <= bindparam("lease_id", type_=Integer),
            )
            .scalar_subquery()
        )
        candidate_number = pairs_of_query + trials_so_far
    else:
        this_pair = (
            select(Pair.id)
            .where(
                Pair.campaign_id == campaign_id,
                Pair.query_id == query_id,
                Pair.document_id == document_id,
            )
            .scalar_subquery()
        )
        candidate_number = (
            select(func.count())
            .where(Pair.campaign_id == campaign_id, Pair.query_id == query_id, Pair.id <= this_pair)
            .scalar_subquery()
        )
    return (
        select(
            query_number,
            candidate_number,
            query_doc.id,
            query_doc.audio_path.is_not(None),
            query_doc.duration_seconds,
            query_doc.audio_type,
            candidate_doc.id,
            candidate_doc.audio_path.is_not(None),
            candidate_doc.duration_seconds,
            candidate_doc.audio_type,
        )
        .select_from(Query)
        .join(query_doc, query_doc.id == Query.document_id)
        .join(candidate_doc, candidate_doc.id == document_id)
        .where(Query.id == query_id)
    )


_PAIR_VIEW = {trial: _pair_view_statement(trial=trial) for trial in (False, True)}


def pair_view(
    session: Session,
    campaign_id: int,
    query_id: int,
    document_id: int,
    *,
    kind: str = "pool",
    lease_id: int | None = None,
    assessor_id: int | None = None,
) -> PairView:
    """One query for the pair's numbers and clips. The numbers name a pair to its assessor
    and tell nothing about systems or ranks; a quality trial (``kind`` other than "pool",
    with its ``lease_id`` and ``assessor_id``) is numbered as a further candidate of its
    query, so nothing tells it apart."""
    params: dict[str, Any] = {
        "campaign_id": campaign_id,
        "query_id": query_id,
        "document_id": document_id,
    }
    trial = kind != "pool"
    if trial:
        params.update(lease_id=lease_id or 0, assessor_id=assessor_id or 0)
    row = _run(session, _PAIR_VIEW[trial], params).one()
    return PairView(
        query_number=int(row[0] or 0),
        candidate_number=int(row[1] or 0),
        query=Clip(int(row[2]), bool(row[3]), row[4], row[5]),
        candidate=Clip(int(row[6]), bool(row[7]), row[8], row[9]),
    )


_PROGRESS = (
    select(*_progress_columns(_ASSESSOR_ID, _CAMPAIGN_ID))
    .select_from(Assessor)
    .outerjoin(PlannerState, PlannerState.campaign_id == Assessor.campaign_id)
    .where(Assessor.id == _ASSESSOR_ID)
)


def progress_counts(session: Session, campaign_id: int, assessor_id: int) -> ProgressCounts:
    """The assessor's and the campaign's counts and the planner's figures, in one query."""
    params = {"campaign_id": campaign_id, "assessor_id": assessor_id}
    return _progress_from(_run(session, _PROGRESS, params).one())


_LAST_QUERY = (
    select(Judgment.query_id)
    .where(Judgment.assessor_id == bindparam("assessor_id"))
    .order_by(Judgment.created_at.desc(), Judgment.id.desc())
    .limit(1)
)


def last_judged_query(session: Session, assessor_id: int) -> int | None:
    """The query of the assessor's latest judgment (the one they have in mind)."""
    return session.scalar(_LAST_QUERY, {"assessor_id": assessor_id})


def planner_state(session: Session, campaign_id: int) -> PlannerState | None:
    return session.get(PlannerState, campaign_id)


_BY_CLIENT_ID = select(*JUDGMENT_COLUMNS).where(
    Judgment.assessor_id == bindparam("assessor_id"),
    Judgment.client_id == bindparam("client_id"),
)


def judgment_by_client_id(session: Session, assessor_id: int, client_id: str) -> Any | None:
    """The assessor's judgment stored under ``client_id`` (a row of
    :data:`JUDGMENT_COLUMNS`), or None."""
    params = {"assessor_id": assessor_id, "client_id": client_id}
    return _run(session, _BY_CLIENT_ID, params).one_or_none()


def recent_judgments(session: Session, assessor_id: int, limit: int) -> list[Judgment]:
    return list(
        session.scalars(
            select(Judgment)
            .where(Judgment.assessor_id == assessor_id)
            .order_by(Judgment.created_at.desc(), Judgment.id.desc())
            .limit(limit)
        )
    )


def mark_consented(session: Session, assessor: Assessor) -> None:
    """Record consent once; giving it again keeps the first time."""
    if assessor.consented_at is None:
        assessor.consented_at = utcnow()
        session.flush()


@dataclass(frozen=True)
class LeaseClip:
    """What the clip route needs: whose link it is, and the clip of the lease it names."""

    assessor_id: int
    lease_id: int | None  # None: no such lease of this assessor
    audio_path: str | None
    audio_type: str | None
    kind: str | None = None  # the lease's kind: "pool", or a quality trial's


def _lease_clip_statement(which: str) -> Any:
    clip = aliased(Document)
    document = Query.document_id if which == "query" else Lease.document_id
    return (
        select(Assessor.id, Lease.id, clip.audio_path, clip.audio_type, Lease.kind)
        .select_from(Assessor)
        .outerjoin(
            Lease,
            and_(
                Lease.id == bindparam("lease_id", type_=Integer),
                Lease.assessor_id == Assessor.id,
            ),
        )
        .outerjoin(Query, Query.id == Lease.query_id)
        .outerjoin(clip, clip.id == document)
        .where(*_CONTEXT_WHERE)
    )


_LEASE_CLIP = {which: _lease_clip_statement(which) for which in ("query", "candidate")}


def lease_clip(session: Session, token: str, lease_id: int, which: str) -> LeaseClip | None:
    """The query or candidate clip of one of the assessor's leases (current or past): an
    invitation token opens the clips of its own leases and no others. None when the link is
    unknown or revoked."""
    params = {"token_hash": hash_token(token), "lease_id": lease_id}
    row = _run(session, _LEASE_CLIP[which], params).one_or_none()
    if row is None:
        return None
    return LeaseClip(int(row[0]), None if row[1] is None else int(row[1]), row[2], row[3], row[4])


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


# ---------------------------------------------------------------- hidden quality trials
@dataclass(frozen=True)
class TrialQuery:
    """The query a quality trial is made on (the assessor's current one)."""

    query_id: int
    document_id: int  # the query's clip
    has_audio: bool
    genre: str | None
    artist: str | None
    has_reference: bool  # the assessor was handed its reference trial already


_TRIAL_QUERY = (
    select(
        Query.id,
        Query.document_id,
        Document.audio_path.is_not(None),
        Document.genre,
        Document.artist,
        exists()
        .where(
            Lease.assessor_id == bindparam("assessor_id", type_=Integer),
            Lease.query_id == Query.id,
            Lease.kind == "reference",
        )
        .label("has_reference"),
    )
    .join(Document, Document.id == Query.document_id)
    .where(Query.id == bindparam("query_id", type_=Integer))
)


def trial_query(session: Session, assessor_id: int, query_id: int) -> TrialQuery | None:
    row = _run(session, _TRIAL_QUERY, {"assessor_id": assessor_id, "query_id": query_id}).first()
    if row is None:
        return None
    return TrialQuery(int(row[0]), int(row[1]), bool(row[2]), row[3], row[4], bool(row[5]))


def _scrambled(column: Any) -> Any:
    """A fixed pseudo-random order of ids that a salt (below 2**31) reshuffles: the trials'
    choices are deterministic (replayable) and differ between assessors and hand-outs."""
    salt = bindparam("salt", type_=BigInteger)
    shifted = cast(column, BigInteger) + salt
    # a multiplier near 2**31 / golden ratio spreads consecutive ids over the whole range
    return (shifted * literal(1_327_217_885, BigInteger)) % literal(2_147_483_647, BigInteger)


def _anchor_statement(*, artist_known: bool) -> Any:
    query_id = bindparam("query_id", type_=Integer)
    campaign_id = bindparam("campaign_id", type_=Integer)
    conditions = [
        Document.campaign_id == campaign_id,
        Document.audio_path.is_not(None),
        Document.genre.is_not(None),
        Document.genre != bindparam("genre", type_=String),
        # retrieved by no system for the query, at any rank
        ~exists().where(
            Result.campaign_id == campaign_id,
            Result.query_id == query_id,
            Result.document_id == Document.id,
        ),
        # not a query clip (an assessor may know those)
        ~exists().where(Query.campaign_id == campaign_id, Query.document_id == Document.id),
        # not handed to this assessor against this query before
        ~exists().where(
            Lease.assessor_id == bindparam("assessor_id", type_=Integer),
            Lease.query_id == query_id,
            Lease.document_id == Document.id,
        ),
    ]
    if artist_known:
        conditions += [
            Document.artist.is_not(None),
            Document.artist != bindparam("artist", type_=String),
        ]
    return (
        select(Document.id)
        .where(*conditions)
        .order_by(_scrambled(Document.id), Document.id)
        .limit(1)
    )


_ANCHOR = {known: _anchor_statement(artist_known=known) for known in (False, True)}


def anchor_document(
    session: Session, campaign_id: int, assessor_id: int, query: TrialQuery, salt: int
) -> int | None:
    """A clip clearly unlike the query by the campaign's metadata, for an anchor trial: it
    has audio, a genre other than the query's (so none without genres), another artist
    (when the query's is known), no system retrieved it for the query, it is no query's
    clip and the assessor was never handed it against this query."""
    if query.genre is None:
        return None
    params: dict[str, Any] = {
        "campaign_id": campaign_id,
        "assessor_id": assessor_id,
        "query_id": query.query_id,
        "genre": query.genre,
        "salt": salt,
    }
    if query.artist is not None:
        params["artist"] = query.artist
    found = _run(session, _ANCHOR[query.artist is not None], params).scalar()
    return None if found is None else int(found)


def _repeat_statement() -> Any:
    assessor_id = bindparam("assessor_id", type_=Integer)
    # the assessor's hand-out ``gap`` hand-outs before the coming one: judgments of leases
    # up to it were made at least that long ago
    horizon = (
        select(Lease.id)
        .where(Lease.assessor_id == assessor_id)
        .order_by(Lease.id.desc())
        .offset(bindparam("offset", type_=Integer))
        .limit(1)
        .scalar_subquery()
    )
    repeated = exists().where(
        Lease.assessor_id == assessor_id,
        Lease.query_id == Judgment.query_id,
        Lease.document_id == Judgment.document_id,
        Lease.kind == "repeat",
    )
    return (
        select(Judgment.id, Judgment.query_id, Judgment.document_id)
        .join(
            Pair,
            _same_pair(),
        )
        .where(
            Judgment.assessor_id == assessor_id,
            Judgment.kind == "pool",
            Judgment.set_aside.is_(False),
            Judgment.lease_id <= horizon,
            # both clips can be played now (not only: have audio)
            Pair.playable.is_(True),
            ~repeated,
        )
        .order_by(
            case((Judgment.query_id == bindparam("query_id", type_=Integer), 0), else_=1),
            _scrambled(Judgment.id),
            Judgment.id,
        )
        .limit(1)
    )


_REPEAT = _repeat_statement()


def repeat_judgment(
    session: Session, assessor_id: int, query_id: int, gap: int, salt: int
) -> tuple[int, int, int] | None:
    """(judgment id, query id, document id) of a pool judgment of the assessor made at least
    ``gap`` hand-outs before the coming one, of a pair that can be played and was not
    repeated yet, of ``query_id`` when it has one; None when there is none."""
    params = {"assessor_id": assessor_id, "query_id": query_id, "offset": gap - 1, "salt": salt}
    row = _run(session, _REPEAT, params).first()
    return None if row is None else (int(row[0]), int(row[1]), int(row[2]))


def _second_opinion_statement(*, own_query: bool) -> Any:
    campaign_id = bindparam("campaign_id", type_=Integer)
    assessor_id = bindparam("assessor_id", type_=Integer)
    earlier, mine = aliased(Judgment), aliased(Judgment)

    def by_another(j: Any) -> list[Any]:
        # a judgment that counts (models.counted_judgment: a pool pair's, not set aside,
        # so never one of a set-aside assessor), of another assessor (not an imported one)
        return [
            j.kind == "pool",
            j.set_aside.is_(False),
            j.assessor_id.is_not(None),
            j.assessor_id != assessor_id,
        ]

    conditions = [
        Judgment.campaign_id == campaign_id,
        *by_another(Judgment),
        # both clips can be played, and the pair needs no more judgments: a second opinion
        # never takes the place of a judgment the pool still needs from this assessor
        Pair.playable.is_(True),
        Pair.judged >= bindparam("per_pair", type_=Integer),
        # the earliest such judgment of the pair: each pair once, its original fixed
        ~exists().where(
            earlier.campaign_id == Judgment.campaign_id,
            earlier.query_id == Judgment.query_id,
            earlier.document_id == Judgment.document_id,
            *by_another(earlier),
            earlier.id < Judgment.id,
        ),
        # never judged by this assessor, in any kind (a pool pair of theirs above all)
        ~exists().where(
            mine.campaign_id == Judgment.campaign_id,
            mine.query_id == Judgment.query_id,
            mine.document_id == Judgment.document_id,
            mine.assessor_id == assessor_id,
        ),
        # never handed to this assessor, in any kind (so not live with them either): the
        # assessor's leases are read once, not per candidate
        tuple_(Judgment.query_id, Judgment.document_id).not_in(
            select(Lease.query_id, Lease.document_id).where(Lease.assessor_id == assessor_id)
        ),
    ]
    if own_query:
        conditions.append(Judgment.query_id == bindparam("query_id", type_=Integer))
    return (
        select(Judgment.id, Judgment.query_id, Judgment.document_id)
        .join(
            Pair,
            _same_pair(),
        )
        .where(*conditions)
        .order_by(_scrambled(Judgment.id), Judgment.id)
        .limit(1)
    )


_SECOND_OPINION = {own: _second_opinion_statement(own_query=own) for own in (True, False)}


def second_opinion(
    session: Session, campaign_id: int, assessor_id: int, query_id: int, per_pair: int, salt: int
) -> tuple[int, int, int] | None:
    """(judgment id, query id, document id) of another assessor's judgment that counts, of
    a playable pool pair that needs no more judgments (``per_pair``) and that this assessor
    was never handed nor judged in any kind: a pair to hand them blind for a second opinion.
    The judgment is the earliest of the pair's that count; the pair is of ``query_id`` when
    it has one. None when there is none."""
    params = {
        "campaign_id": campaign_id,
        "assessor_id": assessor_id,
        "query_id": query_id,
        "per_pair": per_pair,
        "salt": salt,
    }
    for own in (True, False):  # the current query's first: one index range, not the campaign
        row = _run(session, _SECOND_OPINION[own], params).first()
        if row is not None:
            return int(row[0]), int(row[1]), int(row[2])
    return None


_TRIAL_LEASE_COLUMNS = (
    "campaign_id",
    "query_id",
    "document_id",
    "assessor_id",
    "kind",
    "repeat_of",
    "state",
    "leased_at",
    "expires_at",
    "selection_rule",
)


def _insert_trial_statement(dialect: Any) -> Any:
    integer = {"campaign_id", "query_id", "document_id", "assessor_id", "repeat_of"}
    moment = {"leased_at", "expires_at"}
    values: list[Any] = []
    for name in _TRIAL_LEASE_COLUMNS:
        if name in integer:
            # typed, so that Postgres does not read a NULL as text
            values.append(cast(bindparam(name, type_=Integer), Integer))
        elif name in moment:
            values.append(bindparam(name, type_=DateTime(timezone=True)))
        else:
            values.append(cast(bindparam(name, type_=String), String(16)))
    same_trial = exists().where(
        Lease.assessor_id == bindparam("assessor_id", type_=Integer),
        Lease.query_id == bindparam("query_id", type_=Integer),
        Lease.document_id == bindparam("document_id", type_=Integer),
        Lease.kind == bindparam("kind", type_=String),
    )
    # one statement: a trial is handed to an assessor at most once, even when two requests
    # of theirs chose it at the same moment (and the live-lease index keeps one of them)
    source = select(*values).where(~same_trial)
    return (
        dialect.insert(Lease)
        .from_select(list(_TRIAL_LEASE_COLUMNS), source)
        .on_conflict_do_nothing()
        .returning(Lease.id)
    )


_INSERT_TRIAL = {
    name: _insert_trial_statement(dialect)
    for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))
}


def insert_trial_lease(session: Session, values: dict[str, Any]) -> int | None:
    """Insert the live lease of a quality trial (no pair); None when the assessor already
    holds a live lease or was handed this trial before."""
    stmt = _INSERT_TRIAL[session.get_bind().dialect.name]
    lease_id = _run(session, stmt, values).scalar_one_or_none()
    return None if lease_id is None else int(lease_id)
