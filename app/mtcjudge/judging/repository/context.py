"""The judging path's reads keyed by an invitation link: the context a ``next`` or a submit
starts from (one statement each), the link's assessor and whether they are held, their consent,
and the clips of their leases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, and_, bindparam, func, select
from sqlalchemy.orm import Session, aliased

from mtcjudge.db import execute_plain
from mtcjudge.judging.repository.leases import LEASE_INFO_COLUMNS, LeaseInfo, lease_info
from mtcjudge.judging.repository.progress import ProgressCounts, progress_columns, progress_from
from mtcjudge.models import (
    Assessor,
    AssessorPace,
    Campaign,
    Document,
    Judgment,
    Lease,
    Pair,
    PlannerState,
    Query,
    utcnow,
)
from mtcjudge.security import hash_token

_run = execute_plain


_ASSESSOR_AND_CAMPAIGN = (
    select(Assessor, Campaign)
    .join(Campaign, Campaign.id == Assessor.campaign_id)
    .where(Assessor.token_hash == bindparam("token_hash"), Assessor.revoked_at.is_(None))
)


def assessor_and_campaign(session: Session, token: str) -> tuple[Assessor, Campaign] | None:
    """The assessor of an (unrevoked) link and their campaign, in one query."""
    row = session.execute(_ASSESSOR_AND_CAMPAIGN, {"token_hash": hash_token(token)}).one_or_none()
    return None if row is None else (row[0], row[1])


@dataclass(frozen=True)
class ClipFile:
    """A clip of a lease as the listening rule needs it."""

    audio_path: str | None
    duration_seconds: float | None
    document_id: int | None = None


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
    # the assessor's fitted pace (query share new, same, candidate share, decision seconds),
    # else the campaign's pooled one, else None: the stated defaults (``next``)
    pace: tuple[float, float, float, float] | None = None
    # the judgments the campaign still needs, as the planner last wrote it (None: no limit)
    horizon: int | None = None


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
    *LEASE_INFO_COLUMNS,
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
        *progress_columns(Assessor.id, Campaign.id),
        _TRIAL_PAIR.playable.label("trial_pair_playable"),
        AssessorPace.query_new,
        AssessorPace.query_same,
        AssessorPace.candidate,
        AssessorPace.decision,
        PlannerState.pace_query_new,
        PlannerState.pace_query_same,
        PlannerState.pace_candidate,
        PlannerState.pace_decision,
        PlannerState.horizon,
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
    .outerjoin(AssessorPace, AssessorPace.assessor_id == Assessor.id)
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
        _QUERY_DOC.id.label("query_document"),
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


def _context(row: Any, **extra: Any) -> Context:
    lease = None if row.lease_id is None else lease_info(row, row.lease_id)
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
        progress=progress_from(row),
        handouts=int(row.handouts or 0),
        last_kind=row.last_kind,
        trial_unplayable=row.trial_pair_playable is not None and not row.trial_pair_playable,
        pace=_pace(row),
        horizon=None if row.horizon is None else int(row.horizon),
    )


def _pace(row: Any) -> tuple[float, float, float, float] | None:
    """The assessor's own pace when the planner fitted one, else the campaign's pooled one."""
    own = (row.query_new, row.query_same, row.candidate, row.decision)
    if None not in own:
        return (float(own[0]), float(own[1]), float(own[2]), float(own[3]))
    pooled = (row.pace_query_new, row.pace_query_same, row.pace_candidate, row.pace_decision)
    if None not in pooled:
        return (float(pooled[0]), float(pooled[1]), float(pooled[2]), float(pooled[3]))
    return None


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
        query_clip=ClipFile(row.query_audio_path, row.query_duration, row.query_document),
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
    # the import's analysis (mtcjudge.clips.rendition.clip_source)
    content_sha256: str | None = None
    excerpt_start: float | None = None
    duration_seconds: float | None = None
    source_seconds: float | None = None


def _lease_clip_statement(which: str) -> Any:
    clip = aliased(Document)
    document = Query.document_id if which == "query" else Lease.document_id
    return (
        select(
            Assessor.id,
            Lease.id,
            clip.audio_path,
            clip.audio_type,
            Lease.kind,
            clip.content_sha256,
            clip.excerpt_start,
            clip.duration_seconds,
            clip.source_seconds,
        )
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
    return LeaseClip(int(row[0]), None if row[1] is None else int(row[1]), *row[2:])
