"""A campaign on an estimator that learns its errors (calibrated, joint) judges like any other,
and processes agree on it."""

from __future__ import annotations

import uuid

import pytest

from tests.factories import build_campaign


@pytest.mark.parametrize("estimator", ["calibrated", "joint"])
def test_calibrated_campaign_round_trip_and_agreement(db_session, make_client, estimator) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=3, k=3, estimator=estimator, target=0.99)
    app1, app2 = make_client(), make_client()
    token = fx.tokens[0]
    for fine in (90.0, 10.0, 55.0):
        body = app1.get(f"/api/a/{token}/next").json()
        assert body["status"] == "pair"
        response = app1.post(
            f"/api/a/{token}/judgments",
            json={
                "lease_id": body["pair"]["lease_id"],
                "broad": 1,
                "fine": fine,
                "client_id": str(uuid.uuid4()),
            },
        )
        assert response.status_code == 201, response.text
    p1 = app1.get(f"/api/a/{token}/progress").json()
    p2 = app2.get(f"/api/a/{token}/progress").json()
    assert p1["campaign_judged"] == p2["campaign_judged"] == 3
    assert p1 == p2


@pytest.mark.parametrize("estimator", ["calibrated", "joint"])
def test_calibrated_campaign_does_not_stop_before_the_minimum_evidence(
    db_session, client, estimator
) -> None:
    # target 0.5 is met by any ranking, but 2 judgments per system are needed first
    fx = build_campaign(db_session, n_systems=2, n_queries=3, k=2, estimator=estimator, target=0.5)
    body = client.get(f"/api/a/{fx.tokens[0]}/next").json()
    assert body["status"] == "pair"
    assert body["progress"]["can_stop"] is False
