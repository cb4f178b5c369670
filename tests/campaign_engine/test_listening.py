"""The listening section from the database (docs/method.md §11): which judgments it reads and
how, what bad records do to the hours (no lease, unknown durations, a tab open overnight, a
clock stepped back, two live tabs), the hours to each target, and its stored JSON form."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, insert, select

from mtcjudge.campaign_engine.document import (
    TargetProjection,
    parse_stored,
    parse_stored_parts,
    plain,
)
from mtcjudge.campaign_engine.listening import (
    ListeningInput,
    listening_facts,
    listening_section,
    read_listening,
    section_from_dict,
    with_pseudonyms,
)
from mtcjudge.campaign_engine.repository import PoolClips, listening_observations, pool_clips
from mtcjudge.models import Assessor, Judgment, Lease, Pair, Query
from mtcjudge.mtc.listening_time import Defaults, Observation, fit, forecast_judgments
from tests.factories import CampaignFixture, build_campaign

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@dataclass
class Campaign:
    """A campaign of 2 queries and its pairs, with two assessors and 30 s clips."""

    fx: CampaignFixture
    assessors: list[int]
    pairs: list[tuple[int, int, int]]  # (pair id, query id, candidate document id)


@pytest.fixture
def campaign(db_session) -> Campaign:
    fx = build_campaign(db_session, n_systems=3, n_queries=2, k=3, n_assessors=2)
    for document in fx.documents.values():
        document.duration_seconds = 30.0
    db_session.flush()
    assessors = list(
        db_session.scalars(
            select(Assessor.id).where(Assessor.campaign_id == fx.campaign.id).order_by(Assessor.id)
        )
    )
    pairs = [
        (int(p), int(q), int(d))
        for p, q, d in db_session.execute(
            select(Pair.id, Pair.query_id, Pair.document_id)
            .where(Pair.campaign_id == fx.campaign.id)
            .order_by(Pair.query_id, Pair.id)
        )
    ]
    return Campaign(fx, assessors, pairs)


def give(
    session,
    c: Campaign,
    assessor: int,
    pair: int,
    *,
    submitted: float,
    leased: float | None,
    kind: str = "pool",
    set_aside: bool = False,
    query_ms: int | None = 30_000,
    candidate_ms: int | None = 30_000,
) -> int:
    """A judgment of ``c.pairs[pair]`` by ``c.assessors[assessor]``, submitted ``submitted``
    seconds after T0 and leased ``leased`` seconds after T0 (None: no lease)."""
    pair_id, query_id, document_id = c.pairs[pair]
    lease_id = None
    if leased is not None:
        lease = Lease(
            campaign_id=c.fx.campaign.id,
            pair_id=pair_id if kind == "pool" else None,
            query_id=query_id,
            document_id=document_id,
            assessor_id=c.assessors[assessor],
            kind=kind,
            state="done",
            leased_at=T0 + timedelta(seconds=leased),
            expires_at=T0 + timedelta(seconds=leased + 600),
        )
        session.add(lease)
        session.flush()
        lease_id = lease.id
    judgment = Judgment(
        campaign_id=c.fx.campaign.id,
        query_id=query_id,
        document_id=document_id,
        assessor_id=c.assessors[assessor],
        broad=1,
        fine=50.0,
        kind=kind,
        source="assessor",
        set_aside=set_aside,
        query_listen_ms=query_ms,
        candidate_listen_ms=candidate_ms,
        served_query_bytes=480_000,
        served_candidate_bytes=480_000,
        lease_id=lease_id,
        created_at=T0 + timedelta(seconds=submitted),
        updated_at=T0 + timedelta(seconds=submitted),
    )
    session.add(judgment)
    session.flush()
    return int(judgment.id)


def at(seconds: float) -> float:
    return (T0 + timedelta(seconds=seconds)).timestamp()


def test_every_judgment_an_assessor_gave_in_submit_order(db_session, campaign) -> None:
    c = campaign
    # submitted out of time order: the order is the judgments' ids, not their times
    give(db_session, c, 0, 0, leased=0, submitted=75)
    give(db_session, c, 1, 1, leased=10, submitted=90, set_aside=True)
    give(db_session, c, 0, 2, leased=80, submitted=150, kind="reference")
    last = len(c.pairs) - 1  # the second query's
    give(db_session, c, 1, last, leased=None, submitted=60, query_ms=None)
    _, query_id, document_id = c.pairs[4]
    db_session.add(  # imported: no assessor listened to it
        Judgment(
            campaign_id=c.fx.campaign.id,
            query_id=query_id,
            document_id=document_id,
            assessor_id=None,
            fine=20.0,
            source="import",
        )
    )
    query_doc = db_session.get(Query, c.pairs[last][1]).document_id
    for document in c.fx.documents.values():
        if document.id in (query_doc, c.pairs[last][2]):
            document.duration_seconds = None  # durations unknown
    db_session.flush()
    a, b = c.assessors
    sent = (480_000, 480_000)
    assert listening_observations(db_session, c.fx.campaign.id) == [
        Observation(a, c.pairs[0][1], at(75), at(0), 30.0, 30.0, 30_000, 30_000, *sent),
        Observation(b, c.pairs[1][1], at(90), at(10), 30.0, 30.0, 30_000, 30_000, *sent),
        Observation(a, c.pairs[2][1], at(150), at(80), 30.0, 30.0, 30_000, 30_000, *sent),
        Observation(b, c.pairs[last][1], at(60), None, None, None, None, 30_000, *sent),
    ]


def test_reading_a_campaign_s_judgments_is_one_select(db_session, campaign) -> None:
    c = campaign
    kinds = ("pool", "reference", "anchor", "repeat", "second")
    rows = [
        {
            "campaign_id": c.fx.campaign.id,
            "query_id": query_id,
            "document_id": document_id,
            "assessor_id": assessor,
            "fine": 50.0,
            "source": "assessor",
            "kind": kind,
            "created_at": T0,
            "updated_at": T0,
        }
        for _, query_id, document_id in c.pairs
        for assessor in c.assessors
        for kind in kinds
    ]
    db_session.execute(insert(Judgment), rows)
    statements: list[str] = []
    engine = db_session.connection().engine

    def count(_conn, _cursor, statement, *_args) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        observations = listening_observations(db_session, c.fx.campaign.id)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(observations) == len(rows) >= 50
    assert len(statements) == 1


def test_the_pool_s_clips_are_counted_in_the_database(db_session, campaign) -> None:
    c = campaign
    clips = pool_clips(db_session, c.fx.campaign.id)
    assert (clips.queries, clips.pairs) == (2, len(c.pairs))
    assert (clips.queries_timed, clips.query_seconds) == (2, 60.0)
    assert (clips.pairs_timed, clips.candidate_seconds) == (len(c.pairs), 30.0 * len(c.pairs))
    first = db_session.get(Query, c.pairs[0][1]).document_id
    for document in c.fx.documents.values():
        if document.id == first or document.id == c.pairs[0][2]:
            document.duration_seconds = None
    db_session.flush()
    clips = pool_clips(db_session, c.fx.campaign.id)
    assert (clips.queries_timed, clips.query_seconds) == (1, 30.0)
    timed = len(c.pairs) - sum(1 for _, _, d in c.pairs if d == c.pairs[0][2])
    assert (clips.pairs_timed, clips.candidate_seconds) == (timed, 30.0 * timed)


def section_of(session, c: Campaign, projections=()):
    return listening_section(listening_facts(read_listening(session, c.fx.campaign)), projections)


def spent_seconds(session, c: Campaign) -> dict[int, float]:
    section = section_of(session, c)
    return {a.id: a.hours * 3600 for a in section.assessors}


def test_clean_judgments_count_their_wall_time(db_session, campaign) -> None:
    c = campaign
    # 75 s each, back to back: 60 s of listening (the page's report), 15 s of decision
    for i in range(4):
        give(db_session, c, 0, i, leased=75 * i, submitted=75 * (i + 1))
    section = section_of(db_session, c)
    assert section.spent.judgments == 4
    assert section.spent.hours == pytest.approx(300 / 3600, abs=1e-3)
    assert section.spent.listening_hours == pytest.approx(240 / 3600, abs=1e-3)
    assert section.spent.imputed == 0
    assert [(a.id, a.judgments) for a in section.assessors] == [(c.assessors[0], 4)]


def test_bad_records_leave_the_hours_sane(db_session, campaign) -> None:
    c = campaign
    a = 0
    give(db_session, c, a, 0, leased=0, submitted=75)
    # a tab left open overnight: leased at night, submitted the next morning
    give(db_session, c, a, 1, leased=100, submitted=100 + 11 * 3600)
    night_end = 100 + 11 * 3600
    # the server's clock stepped back: submitted before the lease
    give(db_session, c, a, 2, leased=night_end + 500, submitted=night_end + 400)
    # no lease, and clips of unknown duration
    give(db_session, c, a, 3, leased=None, submitted=night_end + 600, query_ms=None)
    # two live tabs: the second leased while the first was open, both 75 s long
    give(db_session, c, a, 4, leased=night_end + 700, submitted=night_end + 775)
    give(db_session, c, a, 5, leased=night_end + 710, submitted=night_end + 800)
    for document in c.fx.documents.values():
        if document.id == c.pairs[3][2]:
            document.duration_seconds = None
    db_session.flush()
    section = section_of(db_session, c)
    spent = section.spent
    assert spent.judgments == 6
    assert 0 < spent.listening_hours <= spent.hours
    # nothing negative, no night counted: every judgment costs about a judgment's time
    # (about a minute each here), not 11 hours
    assert spent.hours < 6 * 120 / 3600
    assert spent.hours > 6 * 40 / 3600
    assert spent.imputed >= 3  # the night, the clock, the missing lease and report
    assert 0 <= section.parameters.decision.value < 60
    for a_hours in section.assessors:
        assert a_hours.hours >= a_hours.listening_hours >= 0


def test_two_live_tabs_are_not_counted_twice(db_session, campaign) -> None:
    c = campaign
    # the assessor opens two tabs at once and judges both within 80 s
    give(db_session, c, 0, 0, leased=0, submitted=75)
    give(db_session, c, 0, 1, leased=1, submitted=80)
    seconds = spent_seconds(db_session, c)[c.assessors[0]]
    assert seconds <= 80 + 1e-6
    assert seconds > 60


def test_hours_to_each_target_use_the_projection_and_the_measured_share(
    db_session, campaign
) -> None:
    c = campaign
    c.fx.campaign.judgments_per_pair = 2
    c.fx.campaign.quality_rate = 0.2
    for i in range(6):
        give(db_session, c, 0, i, leased=75 * i, submitted=75 * (i + 1))
    db_session.flush()
    rows = read_listening(db_session, c.fx.campaign)
    facts = listening_facts(rows)
    projections = [
        TargetProjection(0.9, True, 0, 0, 0),
        TargetProjection(0.95, False, 100, 60, 180),
        TargetProjection(0.99, False, 400, 250, None),
        TargetProjection(0.999, False, None, None, None),
    ]
    section = listening_section(facts, projections)
    reached, mid, far, never = section.targets
    assert (reached.reached, reached.hours, reached.low, reached.high) == (True, 0, 0, 0)
    # 100 judged pairs, each judged twice, a fifth of the hand-outs hidden trials
    per_pair = 2 / 0.8
    assert mid.judgments == pytest.approx(100 * per_pair)
    share = facts.changes.share
    model = fit(rows.observations, rows.defaults)
    expected = forecast_judgments(model, 100 * per_pair, share, 30.0, 30.0, 0.8)
    assert mid.hours == pytest.approx(expected.hours, abs=1e-3)
    assert mid.low == pytest.approx(
        forecast_judgments(model, 60 * per_pair, share, 30.0, 30.0, 0.8).low, abs=1e-3
    )
    assert mid.high == pytest.approx(
        forecast_judgments(model, 180 * per_pair, share, 30.0, 30.0, 0.8).high, abs=1e-3
    )
    assert mid.low is not None
    assert mid.hours is not None
    assert mid.high is not None
    assert far.hours is not None
    assert mid.low < mid.hours < mid.high
    assert far.hours > mid.hours
    assert far.high is None
    assert (never.judgments, never.hours, never.low, never.high) == (None,) * 4
    # pairs of the first query, then of the second: 2 changes, shrunk toward 0.2
    assert len({q for _, q, _ in c.pairs[:6]}) == 2
    assert section.query_changes.changes == 2
    assert share == pytest.approx((2 + 20 * 0.2) / (6 + 20))
    assert section.query_changes.share == round(share, 4)


def test_before_any_judgment_the_defaults_hold(db_session, campaign) -> None:
    c = campaign
    c.fx.campaign.listen_seconds = 5.0
    section = section_of(db_session, c)
    assert section.spent.judgments == 0
    assert section.spent.hours == 0
    assert section.assessors == []
    d = section.defaults
    assert (d.clip_seconds, d.query_new_share, d.candidate_share, d.decision_seconds) == (
        30.0,
        1.0,
        1.0,
        10.0,
    )
    assert d.listen_rule_seconds == 5.0
    assert section.parameters.decision.value == 10.0
    assert section.parameters.decision.n == 0
    assert section.query_changes.share == 0.2
    # the whole pool: 2 queries heard once, every pair's candidate and decision once; on a
    # pair of the same query the listening rule (5 s) is the floor of the query's replay
    pool = section.pool
    n = len(c.pairs)
    assert (pool.queries, pool.pairs) == (2, n)
    assert pool.hours == pytest.approx((2 * 70 + (n - 2) * 45) / 3600, abs=1e-3)
    assert pool.listening_hours == pytest.approx((2 * 60 + (n - 2) * 35) / 3600, abs=1e-3)
    assert pool.low < pool.hours < pool.high


def test_the_stored_json_form_reads_back_and_old_documents_still_load(db_session, campaign) -> None:
    c = campaign
    give(db_session, c, 0, 0, leased=0, submitted=75)
    give(db_session, c, 1, 1, leased=0, submitted=90)
    section = section_of(db_session, c, [TargetProjection(0.95, False, 10, 5, 20)])
    assert section_from_dict(json.loads(json.dumps(plain(section)))) == section
    named = with_pseudonyms(section, {c.assessors[0]: "A1"})
    assert [a.pseudonym for a in named.assessors] == ["A1", None]
    # a document stored before the section existed: the engine part, no section
    results = {
        "format": 3,
        "settings_key": "k",
        "results": {"not": "an engine part"},
    }
    assert parse_stored_parts(json.dumps(results), "k").listening is None
    assert parse_stored(json.dumps(results), "k") is None
    with pytest.raises(KeyError):
        section_from_dict({"level": 0.8})


def test_clips_of_unknown_duration_count_as_the_default_clip() -> None:
    rows = ListeningInput([], PoolClips(4, 0, 0.0, 20, 10, 100.0), Defaults(), 1, 0.0)
    facts = listening_facts(rows)
    assert facts.query_seconds == 30.0
    assert facts.candidate_seconds == pytest.approx((100.0 + 10 * 30.0) / 20)
