"""Queries of the judgments: a judgment stored once (under its client id, counted on its
pair's row), revised and read back."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, and_, bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from mtcjudge.db import execute_plain
from mtcjudge.models import Judgment, Pair

_run = execute_plain
#: the parameters the statements of the judging path share
ASSESSOR_ID = bindparam("assessor_id", type_=Integer)
PER_PAIR = bindparam("per_pair", type_=Integer)


def same_pair() -> Any:
    """A judgment and a pool pair of the same (campaign, query, document): the judgments'
    unique key without the assessor and kind."""
    return and_(
        Judgment.campaign_id == Pair.campaign_id,
        Judgment.query_id == Pair.query_id,
        Judgment.document_id == Pair.document_id,
    )


def pair_of(session: Session, campaign_id: int, query_id: int, document_id: int) -> Pair | None:
    return session.scalars(
        select(Pair).where(
            Pair.campaign_id == campaign_id,
            Pair.query_id == query_id,
            Pair.document_id == document_id,
        )
    ).one_or_none()


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


_RECORD_JUDGMENT = (
    update(Pair)
    .where(Pair.id == bindparam("pair_id"), Pair.judged < PER_PAIR)
    .values(
        judged=Pair.judged + 1,
        changes=Pair.changes + 1,
        leased=Pair.leased - bindparam("ended", type_=Integer),
    )
    .execution_options(synchronize_session=False)
)


def record_judgment(session: Session, pair_id: int, per_pair: int, *, ends_lease: bool) -> bool:
    """Count one more judgment of the pair unless it has all it may have: the statement
    that keeps a pair from being judged more often than the campaign asks. With
    ``ends_lease`` the judgment's live lease stops being counted too."""
    params = {"pair_id": pair_id, "per_pair": per_pair, "ended": 1 if ends_lease else 0}
    counted = _run(session, _RECORD_JUDGMENT, params).rowcount
    return bool(counted)


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
