"""The bundle carries what the quality of judgments added to a campaign, and a restore
gives it back: the listening rule, the quality-trial rate and the automatic pause; who is set
aside or paused (and what they are told); quality-trial leases (no pool pair) and judgments
with their kind, the judgment a repeat repeats, whether they are set aside and the bytes the
server sent; and what the planner concluded about each assessor. Export -> import -> export
gives the same bytes (SQLite or Postgres, as the fixtures give)."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, update

from mtcjudge import audit
from mtcjudge.assessors import actions as actions
from mtcjudge.assessors import reliability as reliability
from mtcjudge.campaigns import service as campaigns
from mtcjudge.exports import service
from mtcjudge.exports.bundle_read import open_bundle
from mtcjudge.exports.restore import restore_campaign
from mtcjudge.models import (
    Assessor,
    AssessorReliability,
    Campaign,
    Judgment,
    Lease,
    Pair,
    Query,
    counted_judgment,
)
from tests.factories import TEST_AUDIO, make_campaign

T1 = datetime(2026, 11, 24, 9, 0, 0, tzinfo=UTC)
ACTOR = audit.Actor("tester")


def bundle_of(session, slug: str) -> bytes:
    out = io.BytesIO()
    service.write_export(session, slug, service.ExportSpec("bundle"), out, now=T1)
    return out.getvalue()


def members(data: bytes) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(data))
    return {name: archive.read(name) for name in archive.namelist()}


def quality_campaign(session) -> Campaign:
    """Three assessors: A1 judged pool pairs and answered a reference and a repeat trial,
    and is set aside; A2 judged pool pairs, holds a live trial lease, is paused with a
    message and was assessed; A3 judged nothing."""
    campaign = make_campaign(session, share=0.0, keep_collecting=True).campaign
    campaign.listen_seconds = 7.5
    campaign.quality_rate = 0.25
    campaign.auto_pause = True
    people = []
    for name in ("Ann", "Bo", "Cy"):
        assessor, _ = campaigns.invite_assessor(session, campaign, name)
        people.append(assessor)
    session.flush()
    pairs = session.execute(
        select(Pair.id, Pair.query_id, Pair.document_id)
        .where(Pair.campaign_id == campaign.id)
        .order_by(Pair.id)
        .limit(4)
    ).all()
    query_doc = dict(session.execute(select(Query.id, Query.document_id)).all())
    now = T1

    def judge(assessor, pair, kind="pool", document=None, repeat_of=None, served=(1000, 2000)):
        pair_id, query_id, document_id = pair
        lease = Lease(
            campaign_id=campaign.id,
            pair_id=pair_id if kind == "pool" else None,
            query_id=query_id,
            document_id=document if document is not None else document_id,
            assessor_id=assessor.id,
            kind=kind,
            repeat_of=repeat_of,
            served_query_bytes=served[0],
            served_candidate_bytes=served[1],
            state="done",
            leased_at=now,
            expires_at=now + timedelta(minutes=10),
        )
        session.add(lease)
        session.flush()
        judgment = Judgment(
            campaign_id=campaign.id,
            query_id=query_id,
            document_id=lease.document_id,
            assessor_id=assessor.id,
            broad=2,
            fine=88.0,
            kind=kind,
            repeat_of=repeat_of,
            served_query_bytes=served[0],
            served_candidate_bytes=served[1],
            lease_id=lease.id,
            created_at=now,
            updated_at=now,
        )
        session.add(judgment)
        session.flush()
        if kind == "pool":
            session.execute(update(Pair).where(Pair.id == pair_id).values(judged=Pair.judged + 1))
        return judgment

    ann, bo, _cy = people
    first = judge(ann, pairs[0])
    judge(ann, pairs[1])
    judge(ann, pairs[0], kind="reference", document=query_doc[pairs[0][1]], served=(500, 500))
    judge(ann, pairs[0], kind="repeat", repeat_of=first.id, served=(0, 0))
    judge(bo, pairs[2])
    judge(bo, pairs[3])
    session.add(
        Lease(
            campaign_id=campaign.id,
            pair_id=None,
            query_id=pairs[3][1],
            document_id=pairs[3][2],
            assessor_id=bo.id,
            kind="anchor",
            served_query_bytes=123,
            state="live",
            leased_at=now,
            expires_at=now + timedelta(minutes=10),
        )
    )
    session.flush()
    reliability.store_reliability(
        session,
        campaign,
        {
            bo.id: (
                True,
                ["Agrees with the others on 40 % of pairs."],
                {"agreement": 0.4, "failed_trials": False, "n_pool": 2},
            )
        },
        now=now,
    )
    actions.set_aside(session, campaign, ann.id, ACTOR)
    actions.pause(session, campaign, bo.id, ACTOR, "Back on Monday, thank you!")
    session.commit()
    return campaign


def snapshot(session, campaign_id: int) -> dict[str, Any]:
    """Every new column of the campaign's rows, in an order that ignores database ids."""
    campaign = session.get(Campaign, campaign_id)
    assessors = session.execute(
        select(
            Assessor.set_aside_at.is_not(None),
            Assessor.paused_at.is_not(None),
            Assessor.pause_reason,
        )
        .where(Assessor.campaign_id == campaign_id)
        .order_by(Assessor.id)
    ).all()
    leases = session.execute(
        select(
            Lease.kind,
            Lease.pair_id.is_(None),
            Lease.repeat_of.is_not(None),
            Lease.served_query_bytes,
            Lease.served_candidate_bytes,
            Lease.state,
        )
        .where(Lease.campaign_id == campaign_id)
        .order_by(Lease.id)
    ).all()
    judgments = session.execute(
        select(
            Judgment.kind,
            Judgment.repeat_of.is_not(None),
            Judgment.set_aside,
            Judgment.served_query_bytes,
            Judgment.served_candidate_bytes,
        )
        .where(Judgment.campaign_id == campaign_id)
        .order_by(Judgment.id)
    ).all()
    reliability = session.execute(
        select(
            AssessorReliability.flagged, AssessorReliability.reasons, AssessorReliability.metrics
        )
        .where(AssessorReliability.campaign_id == campaign_id)
        .order_by(AssessorReliability.assessor_id)
    ).all()
    judged = session.scalar(select(func.sum(Pair.judged)).where(Pair.campaign_id == campaign_id))
    return {
        "settings": (campaign.listen_seconds, campaign.quality_rate, campaign.auto_pause),
        "assessors": [tuple(r) for r in assessors],
        "leases": [tuple(r) for r in leases],
        "judgments": [tuple(r) for r in judgments],
        "reliability": [tuple(r) for r in reliability],
        "judged": judged,
        "counted": session.scalar(
            select(func.count()).where(Judgment.campaign_id == campaign_id, counted_judgment())
        ),
    }


def test_every_new_column_round_trips(db_session) -> None:
    campaign = quality_campaign(db_session)
    slug = campaign.slug
    before = snapshot(db_session, campaign.id)
    assert before["settings"] == (7.5, 0.25, True)
    assert before["judged"] == before["counted"] == 2  # A1's two are set aside
    # pausing A2 gave back the trial they held
    assert ("anchor", True, False, 123, 0, "released") in before["leases"]
    # the repeat's judgment names the judgment it repeats, in both members
    first = bundle_of(db_session, slug)
    state = members(first)
    judgments_csv = state["state/judgments.csv"].decode().splitlines()
    assert judgments_csv[0].endswith(
        "lease,kind,repeat_of,set_aside,served_query_bytes,served_candidate_bytes"
    )
    assert judgments_csv[4].endswith(",repeat,1,0,0,0")
    assert b"Back on Monday" in state["state/assessors.csv"]
    assert b"40 %" in state["state/reliability.csv"]
    manifest = json.loads(state["manifest.json"])
    assert manifest["campaign"]["auto_pause"] is True
    exported = state["assessors.csv"].decode().splitlines()
    assert exported[1].startswith("A1,0,0,2,2,1,")  # 0 counted, 2 set aside, 2 trials
    assert "Back on Monday" not in state["assessors.csv"].decode()  # no message to them

    db_session.execute(delete(Campaign).where(Campaign.id == campaign.id))
    db_session.commit()
    restored, _report = restore_campaign(
        db_session, open_bundle(io.BytesIO(first), "b.zip"), audio_dir=TEST_AUDIO / "synthetic-5"
    )
    db_session.commit()
    assert snapshot(db_session, restored.id) == before
    assert bundle_of(db_session, slug) == first


def test_the_judgments_and_assessors_exports_say_what_each_is(db_session) -> None:
    campaign = quality_campaign(db_session)
    out = io.BytesIO()
    spec = service.ExportSpec("judgments", format="jsonl")
    service.write_export(db_session, campaign.slug, spec, out)
    records = [json.loads(line) for line in out.getvalue().decode().splitlines()]
    kinds = sorted((r["assessor"], r["kind"], r["set_aside"]) for r in records)
    assert kinds == [
        ("A1", "pool", 1),
        ("A1", "pool", 1),
        ("A1", "reference", 0),
        ("A1", "repeat", 0),
        ("A2", "pool", 0),
        ("A2", "pool", 0),
    ]
    repeat = next(r for r in records if r["kind"] == "repeat")
    repeated = next(r for r in records if r["lease_id"] == repeat["repeat_of_lease"])
    assert (repeated["kind"], repeated["query"], repeated["document"]) == (
        "pool",
        repeat["query"],
        repeat["document"],
    )
    reference = next(r for r in records if r["kind"] == "reference")
    assert (reference["served_query_bytes"], reference["served_candidate_bytes"]) == (500, 500)

    out = io.BytesIO()
    service.write_export(
        db_session, campaign.slug, service.ExportSpec("assessors", format="json"), out
    )
    shown = json.loads(out.getvalue())["assessors"]
    assert [a["assessor"] for a in shown] == ["A1", "A2", "A3"]
    assert (shown[0]["set_aside"], shown[0]["set_aside_judgments"]) == (True, 2)
    assert shown[1]["paused"] is True
    assert shown[1]["flagged"] is True
    assert shown[1]["reasons"] == ["Agrees with the others on 40 % of pairs."]
    assert shown[1]["metrics"]["agreement"] == 0.4
    assert (shown[2]["assessed"], shown[2]["flagged"], shown[2]["reasons"]) == (False, False, [])


def with_a_second_opinion(session) -> tuple[Campaign, int]:
    """:func:`quality_campaign`, and A3 gave a second opinion on A2's first pair: (the
    campaign, the second opinion's judgment id)."""
    campaign = quality_campaign(session)
    bo, cy = session.scalars(
        select(Assessor).where(Assessor.campaign_id == campaign.id).order_by(Assessor.id)
    ).all()[1:]
    original = session.scalars(
        select(Judgment)
        .where(Judgment.assessor_id == bo.id, Judgment.kind == "pool")
        .order_by(Judgment.id)
    ).first()
    assert original is not None
    lease = Lease(
        campaign_id=campaign.id,
        pair_id=None,
        query_id=original.query_id,
        document_id=original.document_id,
        assessor_id=cy.id,
        kind="second",
        repeat_of=original.id,
        served_query_bytes=700,
        served_candidate_bytes=900,
        state="done",
        leased_at=T1,
        expires_at=T1 + timedelta(minutes=10),
    )
    session.add(lease)
    session.flush()
    second = Judgment(
        campaign_id=campaign.id,
        query_id=original.query_id,
        document_id=original.document_id,
        assessor_id=cy.id,
        broad=0,
        fine=12.0,
        kind="second",
        repeat_of=original.id,
        served_query_bytes=700,
        served_candidate_bytes=900,
        lease_id=lease.id,
        created_at=T1,
        updated_at=T1,
    )
    session.add(second)
    session.commit()
    return campaign, second.id


def test_a_second_opinion_is_exported_and_restored_as_what_it_is(db_session) -> None:
    campaign, _ = with_a_second_opinion(db_session)
    slug = campaign.slug
    before = snapshot(db_session, campaign.id)
    assert ("second", True, False, 700, 900) in before["judgments"]
    assert before["counted"] == 2  # A2's two; the second opinion counts nowhere

    out = io.BytesIO()
    service.write_export(db_session, slug, service.ExportSpec("judgments", format="jsonl"), out)
    records = [json.loads(line) for line in out.getvalue().decode().splitlines()]
    second = next(r for r in records if r["kind"] == "second")
    original = next(r for r in records if r["lease_id"] == second["repeat_of_lease"])
    assert (second["assessor"], second["fine"], second["set_aside"]) == ("A3", 12.0, 0)
    assert (original["assessor"], original["kind"], original["set_aside"]) == ("A2", "pool", 0)
    assert (original["query"], original["document"]) == (second["query"], second["document"])

    out = io.BytesIO()
    service.write_export(db_session, slug, service.ExportSpec("assessors", format="json"), out)
    shown = {a["assessor"]: a for a in json.loads(out.getvalue())["assessors"]}
    assert shown["A3"]["quality_trials"] == 1
    assert shown["A3"]["trials_by_kind"] == {"reference": 0, "anchor": 0, "repeat": 0, "second": 1}
    assert shown["A1"]["trials_by_kind"] == {"reference": 1, "anchor": 0, "repeat": 1, "second": 0}
    out = io.BytesIO()
    service.write_export(db_session, slug, service.ExportSpec("assessors"), out)
    header, *lines = out.getvalue().decode().splitlines()
    assert header.endswith(",computed_at,trials_by_kind")
    assert lines[2].endswith('"{""reference"": 0, ""anchor"": 0, ""repeat"": 0, ""second"": 1}"')

    first = bundle_of(db_session, slug)
    judgments_csv = members(first)["state/judgments.csv"].decode().splitlines()
    original_number = next(n for n, line in enumerate(judgments_csv[1:], start=1) if ",A2," in line)
    assert judgments_csv[-1].endswith(f",second,{original_number},0,700,900")
    db_session.execute(delete(Campaign).where(Campaign.id == campaign.id))
    db_session.commit()
    restored, _report = restore_campaign(
        db_session, open_bundle(io.BytesIO(first), "b.zip"), audio_dir=TEST_AUDIO / "synthetic-5"
    )
    db_session.commit()
    assert snapshot(db_session, restored.id) == before
    assert bundle_of(db_session, slug) == first
    second_row = db_session.scalars(
        select(Judgment).where(Judgment.campaign_id == restored.id, Judgment.kind == "second")
    ).one()
    original_row = db_session.get(Judgment, second_row.repeat_of)
    assert original_row is not None
    assert original_row.assessor_id != second_row.assessor_id
    assert (original_row.query_id, original_row.document_id, original_row.kind) == (
        second_row.query_id,
        second_row.document_id,
        "pool",
    )
