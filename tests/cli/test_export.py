"""``mtcjudge export``: files written whole (or not at all), stdout, exit status 2."""

from __future__ import annotations

import json
import zipfile

import pytest

from tests.cli import run
from tests.factories import seed_judged_campaign


@pytest.fixture
def database(empty_database_url):
    """A database (SQLite file or Postgres schema) with a partly judged campaign."""
    return empty_database_url, seed_judged_campaign(empty_database_url, share=0.5)


def test_export_writes_each_kind_of_file(database, tmp_path) -> None:
    url, slug = database
    status, _, err = run(
        "export", slug, "--what", "qrels", "--scale", "broad", "--out", str(tmp_path / "q.txt"),
        "--database-url", url,
    )  # fmt: skip
    assert status == 0, err
    assert f"({slug}-qrels-broad.txt," in err
    lines = (tmp_path / "q.txt").read_text().splitlines()
    assert lines
    assert all(line.split()[1] == "0" and line.split()[3] in "012" for line in lines)
    status, out, err = run("export", slug, "--what", "judgments", "--format", "jsonl",
                           "--out", "-", "--database-url", url)  # fmt: skip
    assert status == 0, err
    assert len(out.splitlines()) == len(lines)
    assert {json.loads(line)["source"] for line in out.splitlines()} == {"import"}
    path = tmp_path / "bundle.zip"
    status, _, err = run("export", slug, "--what", "bundle", "--aggregate", "median",
                         "--out", str(path), "--database-url", url)  # fmt: skip
    assert status == 0, err
    manifest = json.loads(zipfile.ZipFile(path).read("manifest.json"))
    assert manifest["complete"] is False
    assert manifest["qrels_aggregate"]["rule"] == "median"


def test_export_failures_are_one_line_and_leave_no_file(database, tmp_path) -> None:
    url, slug = database
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "x.txt"
    status, _, err = run("export", "nope", "--what", "qrels", "--out", str(target),
                         "--database-url", url)  # fmt: skip
    assert status == 2
    assert err.startswith("mtcjudge: error:")
    assert not target.exists()
    assert list((tmp_path / "out").iterdir()) == []
    status, _, err = run("export", slug, "--what", "qrels", "--format", "csv",
                         "--out", str(target), "--database-url", url)  # fmt: skip
    assert status == 2
    assert "qrels exports as trec" in err
    status, _, err = run("export", slug, "--what", "runs", "--out",
                         str(tmp_path / "no" / "x.txt"), "--database-url", url)  # fmt: skip
    assert status == 2
    assert "does not exist" in err


def test_help_names_the_two_ndcgs(capsys) -> None:
    with pytest.raises(SystemExit):
        run("export", "--help")
    text = " ".join(capsys.readouterr().out.split())
    assert "dcg = MIREX nDCG@k, normalised by an all-maximum list" in text
    assert "ndcg = trec_eval/ir_measures nDCG@k, normalised by the ideal ordering" in text
