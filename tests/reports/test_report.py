"""The report document: rankings, the confidence matrix, counts against the pool, the
assessors, agreement, the MIREX analysis; its HTML twin; the API."""

from __future__ import annotations

import json
import math
import re
from typing import Literal

import krippendorff
import numpy as np
import pytest
from fastapi.testclient import TestClient

from mtcjudge.config import Settings
from mtcjudge.errors import CampaignNotFound, InvalidInput
from mtcjudge.main import create_app
from mtcjudge.mtc.measures import MEASURES
from mtcjudge.reports import service
from mtcjudge.reports.agreement import agreement
from mtcjudge.reports.analysis import group_labels
from mtcjudge.results.read import results_for
from tests.factories import ASSESSED, LISTEN_MS, SECONDS
from tests.support import ORGANIZER_HEADERS as AUTH
from tests.support import ORGANIZER_TOKEN as TOKEN

# ------------------------------------------------------------------ rankings and pairs


def test_rankings_are_the_results_of_every_measure_best_first(db_session, partial_campaign):
    slug = partial_campaign.campaign.slug
    document = service.build_report(db_session, slug)
    assert document["scale"] == "fine"
    assert list(document["rankings"]) == list(MEASURES)
    names = {m: document["rankings"][m]["name"] for m in MEASURES}
    assert "all-maximum" in names["dcg"]
    assert "ideal" in names["ndcg"]
    for measure, section in document["rankings"].items():
        expected = results_for(db_session, slug, measure, "fine")
        systems = section["systems"]
        assert [s["name"] for s in systems] == [s.name for s in expected.systems]
        assert [s["rank"] for s in systems] == list(range(1, 6))
        means = [s["mean"] for s in systems]
        assert means == sorted(means, reverse=True)
        assert all(s["ci_low"] <= s["mean"] <= s["ci_high"] for s in systems)
        assert section["ranking_confidence"] == expected.ranking_confidence
        assert section["drives_campaign"] == (measure == partial_campaign.campaign.measure)


def test_confidence_matrix_is_symmetric_in_ranking_order(db_session, partial_campaign):
    document = service.build_report(db_session, partial_campaign.campaign.slug)
    for section in document["rankings"].values():
        matrix = section["confidence_matrix"]
        names, values = matrix["systems"], matrix["confidence"]
        assert names == [s["name"] for s in section["systems"]]
        n = len(names)
        assert len(values) == n
        assert all(len(row) == n for row in values)
        for i in range(n):
            assert values[i][i] is None
            for j in range(n):
                if i != j:
                    assert values[i][j] == values[j][i]
                    assert 0.5 <= values[i][j] <= 1.0
        # every cell is its pair's confidence
        for pair in section["pairs"]:
            i, j = names.index(pair["a"]), names.index(pair["b"])
            assert values[i][j] == pair["confidence"]
        assert len(section["pairs"]) == n * (n - 1) // 2 == section["system_pairs"]


# ------------------------------------------------------------------ judgments and assessors


def test_judgments_against_the_pool(db_session, assessed_campaign):
    judged = assessed_campaign.judged
    document = service.build_report(db_session, judged.campaign.slug)
    counts = document["judgments"]
    pool = len(judged.synthetic.fine)
    assert counts["pool_pairs"] == pool
    # the assessed pairs are among the imported ones: judged pairs do not grow
    assert counts["judged_pool_pairs"] == counts["judged_pool_pairs_on_scale"] == len(judged.judged)
    assert counts["unjudged_pool_pairs"] == pool - len(judged.judged)
    assert counts["judgment_rows"] == len(judged.judged) + 2 * len(ASSESSED)
    assert counts["complete"] is False
    assert counts["completeness"].startswith(f"partially judged: {len(judged.judged)} of {pool}")


def test_assessors_by_pseudonym_from_their_judgments(db_session, assessed_campaign):
    judged = assessed_campaign.judged
    document = service.build_report(db_session, judged.campaign.slug)
    section = document["assessors"]
    assert section["imported_judgments"] == len(judged.judged)
    a1, a2, a3 = section["assessors"]
    assert [a["pseudonym"] for a in (a1, a2, a3)] == ["A1", "A2", "A3"]
    for summary, pseudonym in ((a1, "A1"), (a2, "A2")):
        n = len(ASSESSED)
        query_ms, candidate_ms = LISTEN_MS[pseudonym]
        assert summary["judgments"] == n
        assert summary["revised"] == 0
        assert summary["median_seconds_per_judgment"] == pytest.approx(SECONDS[pseudonym])
        assert summary["total_judging_seconds"] == pytest.approx(n * SECONDS[pseudonym])
        assert summary["median_query_listen_ms"] == query_ms
        assert summary["median_candidate_listen_ms"] == candidate_ms
        assert summary["total_listen_seconds"] == pytest.approx(n * (query_ms + candidate_ms) / 1e3)
        assert summary["first_judgment_at"].endswith("+00:00")
    assert a3["judgments"] == 0
    assert a3["median_seconds_per_judgment"] is None
    assert a3["first_judgment_at"] is None
    # names never leave the app
    text = service.report_json(document) + service.render_html(document)
    for name in ("Ada", "Bo", "Cy"):
        assert not re.search(rf"\b{name}\b", text)


def test_the_volunteers_hours_against_the_whole_pool(db_session, assessed_campaign):
    judged = assessed_campaign.judged
    document = service.build_report(db_session, judged.campaign.slug)
    assert document["format_version"] == 3
    hours = document["listening"]
    spent, pool = hours["spent"], hours["pool"]
    # every assessor's judgment (not the imported ones), by the model of docs/method.md §11
    assert spent["judgments"] == 2 * len(ASSESSED)
    assert 0 < spent["listening_hours"] <= spent["hours"]
    # the whole pool once: every pool pair, each query heard once, by the same model
    assert (pool["pairs"], pool["queries"]) == (document["judgments"]["pool_pairs"], 6)
    assert pool["low"] < pool["hours"] < pool["high"]
    assert hours["share_of_pool"]["listening_hours"] == pytest.approx(
        spent["listening_hours"] / pool["listening_hours"]
    )
    assert hours["share_of_pool"]["hours"] == pytest.approx(spent["hours"] / pool["hours"])
    # each assessor's time is theirs in the assessors' section, by pseudonym only
    assert "assessors" not in hours
    a1, a2, a3 = document["assessors"]["assessors"]
    assert a1["hours"] + a2["hours"] == pytest.approx(spent["hours"], abs=1e-3)
    assert (a3["hours"], a3["listening_hours"]) == (0.0, 0.0)
    html = service.render_html(document)
    assert "Volunteers' time" in html
    share = round(100 * hours["share_of_pool"]["listening_hours"])
    assert f"the listening so far is {share} % of that" in html


# ------------------------------------------------------------------ agreement


def _units(coders: list[list[int | None]]) -> dict[int, list[float]]:
    """Reliability data (coders x units, None = missing) as values by unit."""
    units: dict[int, list[float]] = {}
    for row in coders:
        for unit, value in enumerate(row):
            if value is not None:
                units.setdefault(unit, []).append(float(value))
    return units


def test_alpha_on_krippendorffs_worked_example():
    """Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four
    coders, twelve units, values 1-5 with missing ones; published alpha: ordinal 0.815,
    interval 0.849."""
    _ = None
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
        [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
    ]
    units = _units(coders)
    ordinal = agreement("broad", units)
    interval = agreement("fine", units)
    assert ordinal.level_of_measurement == "ordinal"
    assert interval.level_of_measurement == "interval"
    assert ordinal.alpha is not None
    assert interval.alpha is not None
    assert round(ordinal.alpha, 3) == 0.815
    assert round(interval.alpha, 3) == 0.849
    # unit 12 has one value only: it is not pairable
    assert ordinal.pairs == 11
    assert ordinal.judgments == 40


def test_alpha_by_hand_and_when_it_cannot_be_computed():
    # D_o = (8 / (2 - 1)) / 4 = 2; D_e = 16 / (4 * 3) = 4/3; alpha = 1 - 2 / (4/3)
    assert agreement("fine", {"p": [0.0, 2.0], "q": [1.0, 1.0]}).alpha == pytest.approx(-0.5)
    assert agreement("broad", {"p": [0, 0], "q": [2, 2], "r": [1]}).alpha == pytest.approx(1.0)
    none = agreement("broad", {"p": [1.0], "q": [2.0]})
    assert (none.alpha, none.pairs, none.judgments) == (None, 0, 0)
    assert "more than once" in (none.reason or "")
    same = agreement("fine", {"p": [40.0, 40.0], "q": [40.0, 40.0, 40.0]})
    assert (same.alpha, same.pairs, same.judgments) == (None, 2, 5)
    assert "no variation" in (same.reason or "")


def test_agreement_of_the_assessors_and_the_import(db_session, assessed_campaign):
    """alpha over every judgment of the pairs judged more than once (the import and both
    assessors), as krippendorff computes it from coder-by-unit reliability data."""
    judged = assessed_campaign.judged
    document = service.build_report(db_session, judged.campaign.slug)
    truth = {"broad": judged.synthetic.broad, "fine": judged.synthetic.fine}
    levels: tuple[tuple[str, int, Literal["ordinal", "interval"]], ...] = (
        ("broad", 0, "ordinal"),
        ("fine", 1, "interval"),
    )
    for scale, column, level in levels:
        imported = [float(truth[scale][pair]) for pair in assessed_campaign.pairs]
        a1 = [float(given[0][column]) for given in ASSESSED]
        a2 = [float(given[1][column]) for given in ASSESSED]
        expected = krippendorff.alpha(
            reliability_data=np.array([imported, a1, a2]), level_of_measurement=level
        )
        section = document["agreement"][scale]
        assert section["level_of_measurement"] == level
        assert section["pairs"] == len(ASSESSED)
        assert section["judgments"] == 3 * len(ASSESSED)
        assert section["alpha"] == pytest.approx(expected, rel=1e-12)
        assert section["reason"] is None


# ------------------------------------------------------------------ MIREX analysis


def test_mirex_analysis_is_absent_while_judgments_are_incomplete(db_session, partial_campaign):
    document = service.build_report(db_session, partial_campaign.campaign.slug)
    mirex = document["mirex"]
    assert mirex["measures"] is None
    judged, pool = len(partial_campaign.judged), len(partial_campaign.synthetic.fine)
    assert mirex["reason"].startswith("absent: the MIREX analysis needs every pool pair judged")
    assert f"{judged} of {pool} are" in mirex["reason"]
    html = service.render_html(document)
    assert "The MIREX analysis is absent" in html


def test_mirex_analysis_when_every_pool_pair_is_judged(db_session, complete_campaign):
    document = service.build_report(db_session, complete_campaign.campaign.slug)
    assert document["judgments"]["complete"] is True
    mirex = document["mirex"]
    assert mirex["reason"] is None
    assert list(mirex["measures"]) == list(MEASURES)
    for measure, section in mirex["measures"].items():
        assert section["friedman"]["df"] == 4
        assert 0.0 <= section["friedman"]["p_value"] <= 1.0
        # with every pair judged the per-query scores average to the ranking's estimates
        ranking = {s["name"]: s["mean"] for s in document["rankings"][measure]["systems"]}
        for system in section["systems"]:
            assert system["mean"] == pytest.approx(ranking[system["name"]], rel=1e-9)
        ranks = [s["mean_rank"] for s in section["systems"]]
        assert ranks == sorted(ranks, reverse=True)
        # two systems share a group exactly when the HSD does not separate them
        groups = {s["name"]: set(s["groups"]) for s in section["systems"]}
        assert all(groups.values())
        for pair in section["pairs"]:
            assert bool(groups[pair["a"]] & groups[pair["b"]]) is not pair["significant"]
        assert section["pairs_significant"] == sum(p["significant"] for p in section["pairs"])
    html = service.render_html(document)
    assert "Friedman χ²" in html


def test_tukey_groups_on_a_chain():
    # 4 and 3 together, 3 and 2 together, but 4 and 2 apart; 1 alone
    assert group_labels([4.0, 3.0, 2.0, 0.5], 1.0) == [["a"], ["a", "b"], ["b"], ["c"]]
    assert group_labels([2.0, 2.0], 0.0) == [["a"], ["a"]]
    assert group_labels([1.0, 2.0, 3.0], 5.0) == [["a"], ["a"], ["a"]]


# ------------------------------------------------------------------ scale, HTML, JSON


def test_another_scale_has_no_curve_and_says_why(db_session, partial_campaign):
    document = service.build_report(db_session, partial_campaign.campaign.slug, "broad")
    assert document["scale"] == "broad"
    assert all(not r["drives_campaign"] for r in document["rankings"].values())
    trajectory = document["trajectory"]
    assert trajectory["points"] == []
    assert "recorded for the campaign's own measure and scale" in trajectory["reason"]
    with pytest.raises(InvalidInput, match="scale must be fine or broad"):
        service.build_report(db_session, partial_campaign.campaign.slug, "coarse")
    with pytest.raises(CampaignNotFound):
        service.build_report(db_session, "nope")


_EXTERNAL = re.compile(r"""(?:src|href|xlink:href)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


def test_html_is_self_contained_with_its_charts(db_session, assessed_campaign):
    document = service.build_report(db_session, assessed_campaign.judged.campaign.slug)
    html = service.render_html(document)
    assert html.startswith("<!doctype html>")
    assert not _EXTERNAL.search(html)
    assert "http://" not in html
    assert "https://" not in html
    assert "<script" not in html
    assert "<link" not in html
    assert "@import" not in html
    assert "url(" not in html
    # a forest per measure, the heat map (one cell per ordered pair), the pool bar
    assert html.count('<svg class="chart"') == len(MEASURES) + 2
    n = len(document["rankings"]["cg"]["systems"])
    assert html.count("</rect>") == n * (n - 1)  # the heat map's cells carry a <title>
    main = document["rankings"][document["campaign"]["measure"]]
    assert f"{main['ranking_confidence']:.4f}" in html
    assert "No curve: no point yet" in html


def test_json_twin_is_the_document(db_session, partial_campaign):
    document = service.build_report(db_session, partial_campaign.campaign.slug)
    assert json.loads(service.report_json(document)) == document
    assert document["format"] == "mtcjudge report"
    for value in _numbers(document):
        assert math.isfinite(value)


def _numbers(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, float):
        yield value


# ------------------------------------------------------------------ API


@pytest.fixture
def client(session_factory):
    return TestClient(create_app(Settings(organizer_token=TOKEN), session_factory=session_factory))


def test_api_sends_the_report(db_session, assessed_campaign, client):
    slug = assessed_campaign.judged.campaign.slug
    response = client.get(f"/api/campaigns/{slug}/report", headers=AUTH)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    disposition = response.headers["content-disposition"]
    assert disposition == f'attachment; filename="{slug}-report-fine.html"'
    assert "<svg" in response.text
    response = client.get(
        f"/api/campaigns/{slug}/report", params={"format": "json", "scale": "broad"}, headers=AUTH
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["content-disposition"].endswith(f'"{slug}-report-broad.json"')
    document = response.json()
    assert document["scale"] == "broad"
    assert document["agreement"]["broad"]["pairs"] == len(ASSESSED)


def test_api_errors(assessed_campaign, client):
    slug = assessed_campaign.judged.campaign.slug
    response = client.get(f"/api/campaigns/{slug}/report")
    assert response.status_code == 401
    assert response.json()["error"] == "organizer_only"
    wrong = {"Authorization": "Bearer wrong"}
    assert client.get(f"/api/campaigns/{slug}/report", headers=wrong).status_code == 401
    response = client.get("/api/campaigns/nope/report", headers=AUTH)
    assert response.status_code == 404
    assert response.json()["error"] == "campaign_not_found"
    for query in ("format=pdf", "scale=coarse"):
        response = client.get(f"/api/campaigns/{slug}/report?{query}", headers=AUTH)
        assert response.status_code == 422
        assert response.json()["error"] == "malformed_request"
