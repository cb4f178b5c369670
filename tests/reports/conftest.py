"""Campaigns for the report: the exports' synthetic campaign (5 systems, 6 queries, k = 5,
imported judgments of a share of the pool), plus two assessors who judged the same pairs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from sqlalchemy import select

from mtcjudge.models import Assessor, Document, Judgment, Lease, Pair, Query, utcnow
from tests.exports.conftest import Judged, make_campaign

#: (broad, fine) given by A1 and A2 to the first pool pairs (by query and document id)
ASSESSED = [
    ((2, 90.0), (2, 80.0)),
    ((1, 50.0), (2, 70.0)),
    ((0, 10.0), (0, 0.0)),
    ((1, 40.0), (0, 30.0)),
]
#: A1 took 10 s per judgment and listened 6 s + 8 s; A2 took 20 s and listened 9 s + 11 s
SECONDS = {"A1": 10.0, "A2": 20.0}
LISTEN_MS = {"A1": (6000, 8000), "A2": (9000, 11000)}


@dataclass
class Assessed:
    judged: Judged
    #: the external (query, document) ids of the assessed pairs, in ASSESSED's order
    pairs: list[tuple[str, str]]


def add_assessors(session, judged: Judged) -> Assessed:
    """Invite A1 ("Ada"), A2 ("Bo") and A3 ("Cy", who judges nothing); A1 and A2 judge the
    first pool pairs with leases handed out SECONDS before each judgment."""
    campaign = judged.campaign
    people = [
        Assessor(campaign_id=campaign.id, name=name, token_hash=name[0] * 64)
        for name in ("Ada", "Bo", "Cy")
    ]
    session.add_all(people)
    session.flush()
    external = dict(session.execute(select(Document.id, Document.external_id)).all())
    query_doc = dict(session.execute(select(Query.id, Query.document_id)).all())
    pool = session.execute(
        select(Pair.id, Pair.query_id, Pair.document_id).where(Pair.campaign_id == campaign.id)
    ).all()
    rows = sorted(pool, key=lambda r: (external[query_doc[r.query_id]], external[r.document_id]))
    pairs = []
    now = utcnow()
    for (pair_id, query_id, document_id), given in zip(rows, ASSESSED, strict=False):
        pairs.append((external[query_doc[query_id]], external[document_id]))
        for assessor, pseudonym, (broad, fine) in zip(people, ("A1", "A2"), given, strict=False):
            leased = now - timedelta(seconds=SECONDS[pseudonym])
            lease = Lease(
                campaign_id=campaign.id,
                pair_id=pair_id,
                query_id=query_id,
                document_id=document_id,
                assessor_id=assessor.id,
                state="done",
                leased_at=leased,
                expires_at=now + timedelta(minutes=5),
            )
            session.add(lease)
            session.flush()
            query_ms, candidate_ms = LISTEN_MS[pseudonym]
            session.add(
                Judgment(
                    campaign_id=campaign.id,
                    query_id=query_id,
                    document_id=document_id,
                    assessor_id=assessor.id,
                    broad=broad,
                    fine=fine,
                    lease_id=lease.id,
                    created_at=now,
                    updated_at=now,
                    query_listen_ms=query_ms,
                    candidate_listen_ms=candidate_ms,
                )
            )
    session.flush()
    return Assessed(judged, pairs)


@pytest.fixture
def complete_campaign(db_session) -> Judged:
    return make_campaign(db_session)


@pytest.fixture
def partial_campaign(db_session) -> Judged:
    return make_campaign(db_session, share=0.4)


@pytest.fixture
def assessed_campaign(db_session) -> Assessed:
    """Partly judged (imports of 40 % of the pool) with two assessors on the same pairs."""
    return add_assessors(db_session, make_campaign(db_session, share=0.4))
