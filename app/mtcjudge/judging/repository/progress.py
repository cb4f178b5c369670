"""What the assessor is shown beside the pair: its numbers and clips, their progress and
the campaign's, the pairs left."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, and_, bindparam, exists, func, select
from sqlalchemy.orm import Session, aliased

from mtcjudge.db import execute_plain
from mtcjudge.judging.repository.judgments import ASSESSOR_ID
from mtcjudge.models import Assessor, Document, Judgment, Lease, Pair, PlannerState, Query

_run = execute_plain
_CAMPAIGN_ID = bindparam("campaign_id", type_=Integer)


@dataclass(frozen=True)
class ProgressCounts:
    assessor_judged: int
    campaign_judged: int
    playable_pairs: int
    system_pairs: int
    system_pairs_settled: int
    stop_reason: str | None


def progress_columns(assessor_id: Any, campaign_id: Any) -> list[Any]:
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


def progress_from(row: Any) -> ProgressCounts:
    return ProgressCounts(
        assessor_judged=int(row.assessor_judged or 0),
        campaign_judged=int(row.campaign_judged or 0),
        playable_pairs=int(row.playable_pairs or 0),
        system_pairs=int(row.system_pairs or 0),
        system_pairs_settled=int(row.system_pairs_settled or 0),
        stop_reason=row.stop_reason,
    )


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
    # what the clip sounds like, from the import's analysis (None before it)
    loudness_lufs: float | None = None
    peaks: bytes | None = None


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
            query_doc.loudness_lufs,
            query_doc.peaks,
            candidate_doc.loudness_lufs,
            candidate_doc.peaks,
            # a reference trial's candidate is another excerpt of the query's recording
            query_doc.other_loudness_lufs,
            query_doc.other_peaks,
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
    candidate_sound = row[14:16] if kind == "reference" else row[12:14]
    return PairView(
        query_number=int(row[0] or 0),
        candidate_number=int(row[1] or 0),
        query=Clip(int(row[2]), bool(row[3]), row[4], row[5], row[10], row[11]),
        candidate=Clip(int(row[6]), bool(row[7]), row[8], row[9], *candidate_sound),
    )


_PROGRESS = (
    select(*progress_columns(ASSESSOR_ID, _CAMPAIGN_ID))
    .select_from(Assessor)
    .outerjoin(PlannerState, PlannerState.campaign_id == Assessor.campaign_id)
    .where(Assessor.id == ASSESSOR_ID)
)


def progress_counts(session: Session, campaign_id: int, assessor_id: int) -> ProgressCounts:
    """The assessor's and the campaign's counts and the planner's figures, in one query."""
    params = {"campaign_id": campaign_id, "assessor_id": assessor_id}
    return progress_from(_run(session, _PROGRESS, params).one())


_LAST_QUERY = (
    select(Judgment.query_id)
    .where(Judgment.assessor_id == bindparam("assessor_id"))
    .order_by(Judgment.created_at.desc(), Judgment.id.desc())
    .limit(1)
)


def last_judged_query(session: Session, assessor_id: int) -> int | None:
    """The query of the assessor's latest judgment (the one they have in mind)."""
    return session.scalar(_LAST_QUERY, {"assessor_id": assessor_id})
