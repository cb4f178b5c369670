"""``mtcjudge report``: the file written whole (or not at all), its format, exit status 2."""

from __future__ import annotations

import json

import pytest

from tests.cli import run
from tests.factories import seed_judged_campaign


@pytest.fixture
def database(empty_database_url):
    """A database (SQLite file or Postgres schema) with a partly judged campaign."""
    return empty_database_url, seed_judged_campaign(empty_database_url, share=0.5)


def test_report_writes_html_or_json(database, tmp_path) -> None:
    url, slug = database
    html = tmp_path / "report.html"
    status, _, err = run("report", slug, "--out", str(html), "--database-url", url)
    assert status == 0, err
    assert f"({slug}-report-fine.html," in err
    text = html.read_text()
    assert text.startswith("<!doctype html>")
    assert "<svg" in text
    # the format follows the file name unless given
    status, _, err = run("report", slug, "--scale", "broad", "--out", str(tmp_path / "r.json"),
                         "--database-url", url)  # fmt: skip
    assert status == 0, err
    document = json.loads((tmp_path / "r.json").read_text())
    assert document["scale"] == "broad"
    assert document["mirex"]["measures"] is None
    status, out, err = run("report", slug, "--format", "json", "--out", "-", "--database-url", url)
    assert status == 0, err
    assert json.loads(out)["campaign"]["slug"] == slug


def test_report_failures_are_one_line_and_leave_no_file(database, tmp_path) -> None:
    url, slug = database
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "r.html"
    status, _, err = run("report", "nope", "--out", str(target), "--database-url", url)
    assert status == 2
    assert err == "mtcjudge: error: no campaign 'nope'\n"
    assert list((tmp_path / "out").iterdir()) == []
    status, _, err = run("report", slug, "--out", str(tmp_path / "no" / "r.html"),
                         "--database-url", url)  # fmt: skip
    assert status == 2
    assert "does not exist" in err
    with pytest.raises(SystemExit) as exit_info:
        run("report", slug, "--format", "pdf", "--out", str(target), "--database-url", url)
    assert exit_info.value.code == 2


def test_help_names_the_two_ndcgs(capsys) -> None:
    with pytest.raises(SystemExit):
        run("report", "--help")
    text = " ".join(capsys.readouterr().out.split())
    assert "dcg = MIREX nDCG@k, normalised by an all-maximum list" in text
    assert "ndcg = trec_eval/ir_measures nDCG@k, normalised by the ideal ordering" in text
