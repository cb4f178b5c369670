"""The report's sentences against its own figures (issue 23): a complete campaign (exact
scores, intervals of no width), a partly judged one (the estimator's intervals, within
[0, 1]) and one with a tie (a shared rank, the tie named, no order claimed)."""

from __future__ import annotations

import html as html_lib
import re

import pytest

from mtcjudge.mtc.factory import ESTIMATOR_SUMMARIES
from mtcjudge.reports import service
from tests.factories import make_campaign

TWIN = "S02-rerun"


def _report(db_session, **settings) -> tuple[dict, str]:
    """The document and its HTML with white space collapsed and entities decoded; the
    sentences are checked on :func:`_plain`, the markup on this."""
    judged = make_campaign(db_session, estimator="joint", **settings)
    document = service.build_report(db_session, judged.campaign.slug)
    text = html_lib.unescape(re.sub(r"\s+", " ", service.render_html(document)))
    return document, text


def _plain(text: str) -> str:
    return re.sub(r"<[^>]+>", "", text)


def _ranking_table(text: str) -> str:
    start = text.index("The same numbers:")
    return text[start : text.index("</table>", start)]


def _common(document: dict, text: str) -> None:
    # never the old claim that the intervals are the spread over queries
    assert "they are the spread over queries" not in text
    assert "never include the spread over queries" in text
    # the estimator by name, with what it expects of the pairs not judged
    assert document["estimator"] == {"name": "joint", "summary": ESTIMATOR_SUMMARIES["joint"]}
    assert ESTIMATOR_SUMMARIES["joint"] in text
    # quality trials are off in these campaigns: the reliability section says so
    assert "This campaign hands out no hidden quality trials." in text
    assert "from the hidden quality trials" not in text
    # the planner has not planned them: the curve's absence says why, truly
    assert "it has not planned this one yet" in text
    for section in document["rankings"].values():
        for s in section["systems"]:
            assert 0.0 <= s["ci_low"] <= s["mean"] <= s["ci_high"] <= 1.0


def test_a_complete_campaign_says_its_scores_are_exact(db_session) -> None:
    document, text = _report(db_session, share=1.0)
    _common(document, text)
    assert document["judgments"]["complete"]
    for section in document["rankings"].values():
        assert section["exact"]
        assert section["widest_interval"] == 0.0
    assert "Scores and ranking" in text
    assert "Estimated ranking with intervals" not in text
    assert "its 95 % interval has no width" in text
    assert "what the MIREX analysis below tests" in text
    assert "every confidence is 1" in text
    # the charts and the table show scores, not intervals of no width
    assert "[" not in _ranking_table(text)
    ranking = text[text.index("Scores and ranking") : text.index("Pairwise confidence (")]
    assert "[" not in _plain(ranking)
    assert "score of each system (exact" in ranking
    assert "score on each measure" in text
    assert "; every score exact" in text
    assert "tied" not in _ranking_table(text)


def test_a_partly_judged_campaign_says_what_its_intervals_are(db_session) -> None:
    document, text = _report(db_session, share=0.3)
    _common(document, text)
    judgments = document["judgments"]
    unjudged = judgments["pool_pairs"] - judgments["judged_pool_pairs_on_scale"]
    assert unjudged > 0
    assert "Estimated ranking with intervals" in text
    plain = _plain(text)
    assert (
        f"{unjudged} of the {judgments['pool_pairs']} pool pairs are not judged on FINE yet: "
        "they enter by what the joint estimator expects of them"
    ) in plain
    assert "cut to the measure's range, 0 to 1" in text
    for section in document["rankings"].values():
        assert not section["exact"]
        assert section["widest_interval"] > 0.0
    assert "every confidence is 1" not in text
    assert "[" in _ranking_table(text)
    assert "estimated score and interval of each system" in text
    assert "every score exact" not in text
    assert "MIREX analysis is absent" in text


@pytest.mark.parametrize("share", [0.3, 1.0])
def test_a_tie_is_told_as_a_tie(db_session, share: float) -> None:
    document, text = _report(db_session, share=share, twin=TWIN)
    _common(document, text)
    main = document["rankings"][document["campaign"]["measure"]]
    assert main["system_pairs_tied"] == 1
    by_name = {s["name"]: s for s in main["systems"]}
    rank = by_name["S02"]["rank"]
    assert by_name[TWIN]["rank"] == rank
    # the chart's labels and the table's rank column
    assert f"{rank}= S02<" in text
    assert f"{rank}= {TWIN}<" in text
    assert text.count(f'<td class="num">{rank}=</td>') == 2
    assert "Systems marked = are tied" in _plain(text)
    assert "Tied: S02 and S02-rerun." in text
    assert "(1 of them tied)" in text
    assert "; 1 of them tied" in text  # the figure of settled pairs
    # the heat map: the pair's two cells are the tie's, with the legend's entry
    assert text.count(": tied (known to be equal; no order is claimed)") == 2
    assert "= tied: known to be equal, no order claimed" in text
    matrix = main["confidence_matrix"]
    i, j = matrix["systems"].index("S02"), matrix["systems"].index(TWIN)
    assert matrix["tied"][i][j]
    assert matrix["tied"][j][i]
    assert sum(map(sum, matrix["tied"])) == 2
    # no order claimed: the pair is settled, not listed among those below the target
    assert "S02 – S02-rerun" not in text


def test_a_report_without_a_tie_says_nothing_of_ties(db_session) -> None:
    document, text = _report(db_session, share=0.3)
    assert all(not r["system_pairs_tied"] for r in document["rankings"].values())
    assert "are tied" not in text
    assert "= tied" not in text
    assert "Tied:" not in text
