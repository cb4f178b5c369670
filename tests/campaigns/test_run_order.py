"""Runs whose scores contradict their ranks, wherever a campaign imports them: reported by
file and line (command line, API answers, preview, audit log) and ordered by score as
trec_eval does when ``--order-by score`` / ``order_by: "score"`` asks."""

from __future__ import annotations

import io

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from mtcjudge import audit
from mtcjudge.config import Settings
from mtcjudge.exports import service as exports
from mtcjudge.main import create_app
from mtcjudge.models import Campaign
from tests.cli import run
from tests.support import ORGANIZER_HEADERS as AUTH
from tests.support import ORGANIZER_TOKEN as TOKEN

# S1 is in trec_eval's order; S2's q1 has a higher score at rank 2, its q2 a tie that
# trec_eval breaks by docno, descending (d6 before d5)
RUNS = """q1 Q0 d1 1 9 S1
q1 Q0 d2 2 8 S1
q1 Q0 d3 3 7 S1
q2 Q0 d4 1 9 S1
q2 Q0 d5 2 8 S1
q1 Q0 d2 1 0.5 S2
q1 Q0 d3 2 0.9 S2
q1 Q0 d4 3 0.1 S2
q2 Q0 d5 1 1 S2
q2 Q0 d6 2 1 S2
"""
BY_RANK = {"S2": {"q1": ["d2", "d3", "d4"], "q2": ["d5", "d6"]}}
BY_SCORE = {"S2": {"q1": ["d3", "d2", "d4"], "q2": ["d6", "d5"]}}
NEW_SYSTEM = "q1 Q0 d1 1 1 S3\nq1 Q0 d4 2 5 S3\nq2 Q0 d4 1 3 S3\nq2 Q0 d6 2 2 S3\n"


def exported_lists(session, slug: str) -> dict[str, dict[str, list[str]]]:
    """The campaign's lists, as its runs export gives them (rank order)."""
    out = io.BytesIO()
    exports.write_export(session, slug, exports.ExportSpec("runs"), out)
    lists: dict[str, dict[str, list[str]]] = {}
    for line in out.getvalue().decode().splitlines():
        qid, _, doc, _rank, _score, tag = line.split()
        lists.setdefault(tag, {}).setdefault(qid, []).append(doc)
    return lists


def lists_from_text(text: str) -> dict[str, dict[str, list[str]]]:
    lists: dict[str, dict[str, list[str]]] = {}
    for line in text.splitlines():
        qid, _, doc, _rank, _score, tag = line.split()
        lists.setdefault(tag, {}).setdefault(qid, []).append(doc)
    return lists


# ------------------------------------------------------------------ the command line


def test_campaign_create_warns_and_keeps_the_rank_order(empty_database_url, tmp_path) -> None:
    url = empty_database_url
    runs = tmp_path / "runs.txt"
    runs.write_text(RUNS)
    status, out, err = run("campaign", "create", "--name", "By rank", "--runs", str(runs),
                           "--database-url", url)  # fmt: skip
    assert status == 0, err
    assert err.splitlines() == [
        "mtcjudge: warning: the scores of 2 of the 4 lists order them otherwise than their "
        "ranks (system S2). They are ordered by the rank column; trec_eval, ir_measures and "
        "pytrec_eval ignore it and order each list by score (decreasing, ties by decreasing "
        "docno), so their figures from these files will differ. --order-by score orders them "
        "as those tools do.",
        f"  {runs}:7: system S2 query q1: rank 2 has score 0.9 above rank 1's 0.5",
        f"  {runs}:10: system S2 query q2: rank 2 (d6) ties rank 1 (d5) at score 1; trec_eval "
        "breaks ties by docno, descending, and puts d6 first",
    ]
    assert (
        "  lists ordered by    rank (2 whose scores order them otherwise: see the warning above)"
        in out.splitlines()
    )
    status, text, err = run("export", "by-rank", "--what", "runs", "--out", "-",
                            "--database-url", url)  # fmt: skip
    assert status == 0, err
    assert lists_from_text(text)["S2"] == BY_RANK["S2"]


def test_campaign_create_and_add_runs_order_by_score(empty_database_url, tmp_path) -> None:
    url = empty_database_url
    runs = tmp_path / "runs.txt"
    runs.write_text(RUNS)
    status, out, err = run("campaign", "create", "--name", "By score", "--runs", str(runs),
                           "--order-by", "score", "--database-url", url)  # fmt: skip
    assert status == 0, err
    assert "They are ordered by score, as trec_eval, ir_measures and pytrec_eval" in err
    assert "  lists ordered by    score, as trec_eval orders them; 2 differ from their rank" in out
    status, text, err = run("export", "by-score", "--what", "runs", "--out", "-",
                            "--database-url", url)  # fmt: skip
    assert status == 0, err
    exported = lists_from_text(text)
    assert exported["S2"] == BY_SCORE["S2"]
    assert exported["S1"] == {"q1": ["d1", "d2", "d3"], "q2": ["d4", "d5"]}
    new = tmp_path / "s3.txt"
    new.write_text(NEW_SYSTEM)
    status, out, err = run("campaign", "add-runs", "by-score", "--runs", str(new),
                           "--order-by", "score", "--database-url", url)  # fmt: skip
    assert status == 0, err
    assert f"  {new}:2: system S3 query q1: rank 2 has score 5 above rank 1's 1" in err
    assert "lists ordered by    score, as trec_eval orders them; 1 differ" in out
    status, text, err = run("export", "by-score", "--what", "runs", "--out", "-",
                            "--database-url", url)  # fmt: skip
    assert lists_from_text(text)["S3"] == {"q1": ["d4", "d1"], "q2": ["d4", "d6"]}
    status, out, _ = run("campaign", "status", "by-score", "--database-url", url)
    assert status == 0


def test_simulate_warns_and_records_the_order(tmp_path) -> None:
    runs = tmp_path / "runs.txt"
    runs.write_text(RUNS)
    judgments = tmp_path / "judgments.tsv"
    judgments.write_text(
        "".join(f"{q}\td{d}\t{10 * d}\n" for q in ("q1", "q2") for d in range(1, 7))
    )
    out_json = tmp_path / "replay.json"
    status, _, err = run("simulate", "--runs", str(runs), "--judgments", str(judgments),
                         "--k", "2", "--order-by", "score", "--max-judgments", "3", "--quiet",
                         "--model", "uniform", "--json", str(out_json))  # fmt: skip
    assert status == 0, err
    assert f"  {runs}:7: system S2 query q1: rank 2 has score 0.9" in err
    assert '"order_by": "score"' in out_json.read_text()


def test_python_api_warns(tmp_path) -> None:
    import mtcjudge

    runs = tmp_path / "runs.txt"
    runs.write_text(RUNS)
    with pytest.warns(mtcjudge.ScoreOrderWarning, match=r"runs\.txt:7: system S2 query q1"):
        loaded = mtcjudge.load_files(runs, k=3)
    with pytest.warns(mtcjudge.ScoreOrderWarning, match=r"order_by='score'\) orders them"):
        mtcjudge.load_files(runs, k=3)
    assert loaded.systems == ["S1", "S2"]
    with pytest.warns(mtcjudge.ScoreOrderWarning, match="They are ordered by score"):
        mtcjudge.load_files(runs, k=3, order_by="score")


# ------------------------------------------------------------------ the API


@pytest.fixture
def client(session_factory):
    app = create_app(Settings(organizer_token=TOKEN), session_factory=session_factory)
    with TestClient(app, headers=AUTH) as test_client:
        yield test_client


def audit_detail(session, slug: str) -> str:
    campaign = session.scalars(select(Campaign).where(Campaign.slug == slug)).one()
    (created,) = [
        e for e in audit.events(session, campaign.id) if e.action == audit.CAMPAIGN_CREATED
    ]
    return created.detail


def test_api_create_answers_with_warnings_by_line(client, db_session) -> None:
    response = client.post("/api/campaigns", json={"name": "Texts", "runs": RUNS})
    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer["order_by"] == "rank"
    summary, first, second = answer["warnings"]
    assert summary["file"] is None
    assert summary["input"] == "runs"
    assert summary["message"].startswith("The scores of 2 of the 4 lists order them otherwise")
    assert (
        '(the form\'s "Order of each list", the API\'s order_by "score") gives'
        in (summary["message"])
    )
    assert (first["file"], first["line"], first["field"]) == ("runs", 7, "score")
    assert first["message"] == "system S2 query q1: rank 2 has score 0.9 above rank 1's 0.5"
    assert (second["file"], second["line"]) == ("runs", 10)
    assert exported_lists(db_session, "texts")["S2"] == BY_RANK["S2"]
    assert "lists in rank order (2 whose scores order them otherwise)" in audit_detail(
        db_session, "texts"
    )
    response = client.post(
        "/api/campaigns", json={"name": "Scored", "runs": RUNS, "order_by": "score"}
    )
    assert response.status_code == 201, response.text
    assert response.json()["order_by"] == "score"
    assert exported_lists(db_session, "scored")["S2"] == BY_SCORE["S2"]
    assert "lists ordered by score as trec_eval orders them (2 differ" in audit_detail(
        db_session, "scored"
    )
    # runs in trec_eval's order: no warning
    calm = "".join(line + "\n" for line in RUNS.splitlines()[:5])
    calm += "q1 Q0 d9 1 2 S9\nq1 Q0 d8 2 1 S9\n"
    response = client.post("/api/campaigns", json={"name": "Calm", "runs": calm})
    assert response.status_code == 201, response.text
    assert response.json()["warnings"] == []


def test_api_refuses_an_order_it_cannot_apply(client) -> None:
    response = client.post("/api/campaigns", json={"name": "x", "runs": RUNS, "order_by": "doc"})
    assert response.status_code == 422
    tsv = "S1\tq1\td1\nS2\tq1\td2\n"
    response = client.post("/api/campaigns", json={"name": "x", "runs": tsv, "order_by": "score"})
    assert response.status_code == 400
    assert response.json()["detail"] == (
        "runs: cannot order by score: this is a TSV run (system query doc), which has no score "
        "column; its lines are in rank order (order by rank)"
    )
    body = {"runs": [{"name": "runs.tsv", "text": tsv}], "order_by": "score"}
    response = client.post("/api/campaigns/preview", json=body)
    assert response.status_code == 400
    (problem,) = response.json()["preview"]["problems"]
    assert (problem["file"], problem["input"]) == ("runs.tsv", "runs")
    assert problem["message"].startswith("cannot order by score: this is a TSV run")
    response = client.post("/api/campaigns/import", json={**body, "name": "x"})
    assert response.status_code == 400
    assert client.get("/api/campaigns").json() == []


def test_preview_and_import_name_the_uploaded_file(client, db_session) -> None:
    lines = RUNS.splitlines(keepends=True)
    body = {
        "runs": [
            {"name": "S1.txt", "text": "".join(lines[:5])},
            {"name": "S2.txt", "text": "".join(lines[5:])},
        ],
        "k": 3,
    }
    response = client.post("/api/campaigns/preview", json=body)
    assert response.status_code == 200, response.text
    preview = response.json()
    assert preview["ok"] is True  # warnings do not stop a campaign
    assert preview["order_by"] == "rank"
    assert [(w["file"], w["line"]) for w in preview["warnings"]] == [
        (None, None),
        ("S2.txt", 2),
        ("S2.txt", 5),
    ]
    assert "mtcjudge-preview-" not in str(preview["warnings"])
    scored = client.post("/api/campaigns/preview", json={**body, "order_by": "score"}).json()
    assert scored["order_by"] == "score"
    assert scored["warnings"][0]["message"].startswith("The scores of 2 of the 4 lists")
    response = client.post(
        "/api/campaigns/import", json={**body, "name": "Named", "order_by": "score"}
    )
    assert response.status_code == 201, response.text
    assert [(w["file"], w["line"]) for w in response.json()["warnings"][1:]] == [
        ("S2.txt", 2),
        ("S2.txt", 5),
    ]
    assert exported_lists(db_session, "named")["S2"] == BY_SCORE["S2"]
    # new systems: the same, on the management page's route
    url = "/api/campaigns/named/runs"
    added = client.post(
        url, json={"runs": [{"name": "S3.txt", "text": NEW_SYSTEM}], "order_by": "score"}
    )
    assert added.status_code == 201, added.text
    answer = added.json()
    assert answer["order_by"] == "score"
    assert [(w["file"], w["line"]) for w in answer["warnings"][1:]] == [("S3.txt", 2)]
    assert exported_lists(db_session, "named")["S3"] == {"q1": ["d4", "d1"], "q2": ["d4", "d6"]}
    refused = client.post(
        url, json={"runs": [{"name": "S4.tsv", "text": "S4\tq1\td1\n"}], "order_by": "score"}
    )
    assert refused.status_code == 400
    assert "S4.tsv: cannot order by score" in refused.json()["detail"]


def test_warnings_stop_at_ten_lists_and_count_the_rest(client) -> None:
    lines = [f"q{q:02d} Q0 d{r} {r} {r} S{q % 2}" for q in range(30) for r in (1, 2)]
    response = client.post("/api/campaigns", json={"name": "Many", "runs": "\n".join(lines)})
    assert response.status_code == 201, response.text
    warnings = response.json()["warnings"]
    assert len(warnings) == 1 + 10 + 1
    assert warnings[0]["message"].startswith("The scores of 30 of the 30 lists")
    assert warnings[-1] == {
        "input": "runs",
        "message": "and 20 more lists",
        "file": None,
        "line": None,
        "field": "score",
    }
