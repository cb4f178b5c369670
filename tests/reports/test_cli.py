"""``mtcjudge report``: the file written whole (or not at all), its format, exit status 2."""

from __future__ import annotations

import io
import json

import pytest

from mtcjudge.cli import main as cli_main
from mtcjudge.db import make_engine, make_sessionmaker, session_scope, upgrade_database
from tests.factories import make_campaign


@pytest.fixture
def database(empty_database_url):
    """A database (SQLite file or Postgres schema) with a partly judged campaign."""
    upgrade_database(empty_database_url)
    engine = make_engine(empty_database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            slug = make_campaign(session, share=0.5).campaign.slug
    finally:
        engine.dispose()
    return empty_database_url, slug


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = cli_main(list(argv), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


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
