"""Queries of the hidden quality trials: the query a trial is made on, the anchor, repeat
and second-opinion pairs, and the trial's lease."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    DateTime,
    Integer,
    String,
    bindparam,
    case,
    cast,
    exists,
    literal,
    select,
    tuple_,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, aliased

from mtcjudge.db import execute_plain
from mtcjudge.judging.repository.judgments import same_pair
from mtcjudge.models import Document, Judgment, Lease, Pair, Query, Result

_run = execute_plain


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
            same_pair(),
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
            same_pair(),
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
