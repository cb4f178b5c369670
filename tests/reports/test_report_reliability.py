"""The report's assessor reliability: what the planner concluded about each assessor and
what the organizers did, and the agreement over the judgments that count only."""

from __future__ import annotations

from sqlalchemy import select

from mtcjudge import audit
from mtcjudge.assessors import actions as actions
from mtcjudge.assessors import reliability as reliability
from mtcjudge.models import Assessor
from mtcjudge.reports import service

ACTOR = audit.Actor("tester")


def test_reliability_and_set_aside_in_the_report(db_session, assessed_campaign):
    campaign = assessed_campaign.judged.campaign
    a1, _a2, _a3 = db_session.scalars(
        select(Assessor.id).where(Assessor.campaign_id == campaign.id).order_by(Assessor.id)
    ).all()
    before = service.build_report(db_session, campaign.slug)
    first = before["assessors"]["assessors"][0]
    assert first["reliability"] == {
        "assessed": False,
        "flagged": False,
        "reasons": [],
        "metrics": {},
        "computed_at": None,
    }
    assert (first["counted_judgments"], first["set_aside_judgments"]) == (4, 0)
    reason = "Rated 3 of 4 anchor trials as very similar."
    reliability.store_reliability(
        db_session, campaign, {a1: (True, [reason], {"anchor_accuracy": 0.25})}
    )
    actions.set_aside(db_session, campaign, a1, ACTOR)
    after = service.build_report(db_session, campaign.slug)
    first = after["assessors"]["assessors"][0]
    assert (first["counted_judgments"], first["set_aside_judgments"], first["set_aside"]) == (
        0,
        4,
        True,
    )
    assert first["reliability"]["flagged"] is True
    assert first["reliability"]["reasons"] == [reason]
    # A1's judgments no longer count in the agreement: fewer values on the shared pairs
    assert after["agreement"]["fine"] != before["agreement"]["fine"]
    html = service.render_html(after)
    assert "Assessor reliability" in html
    assert reason in html
    assert "judgments set aside" in html
    assert "not assessed yet" in html  # A2 and A3
