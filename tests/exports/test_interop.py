"""Exports without interop traps: one TREC run file per system (``--per-system``, the zip
format), and exports without rows refused with the reason (exit status 1, 409) unless asked."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import ir_measures
import pytest
from fastapi.testclient import TestClient

from mtcjudge.config import Settings
from mtcjudge.exports import service
from mtcjudge.exports.empty import EmptyExport
from mtcjudge.exports.formats import run_file_name
from mtcjudge.exports.judgment_files import JUDGMENT_COLUMNS
from mtcjudge.main import create_app
from tests.cli import run
from tests.factories import make_campaign, seed_judged_campaign
from tests.support import ORGANIZER_HEADERS as AUTH
from tests.support import ORGANIZER_TOKEN as TOKEN

SYSTEMS = ("S1", "S2", "S3")
QUERIES = ("q1", "q2")


def _runs_text() -> str:
    """Three systems over two queries, scores decreasing with rank (trec_eval's order)."""
    lines = []
    for s, system in enumerate(SYSTEMS):
        for query in QUERIES:
            docs = [f"d{(s + i) % 6 + 1}" for i in range(4)]
            lines += [f"{query} Q0 {doc} {r} {10 - r} {system}" for r, doc in enumerate(docs, 1)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def fine_only(empty_database_url, tmp_path):
    """A campaign created by the command line from TREC runs and FINE judgments only."""
    (tmp_path / "runs.txt").write_text(_runs_text())
    fine = "".join(f"{q}\td{d}\t{10 * d}\n" for q in QUERIES for d in range(1, 7))
    (tmp_path / "fine.tsv").write_text(fine)
    status, _, err = run(
        "campaign", "create", "--name", "Fine only", "--slug", "fine-only",
        "--runs", str(tmp_path / "runs.txt"), "--judgments", str(tmp_path / "fine.tsv"),
        "--database-url", empty_database_url,
    )  # fmt: skip
    assert status == 0, err
    return empty_database_url, "fine-only"


def export(url: str, slug: str, *options: str) -> tuple[int, str, str]:
    return run("export", slug, *options, "--database-url", url)


def leftovers(directory: Path) -> list[str]:
    """Hidden files or directories a failed write would leave."""
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


# ------------------------------------------------------------------ one run file per system


def test_per_system_writes_one_trec_file_per_system(fine_only, tmp_path) -> None:
    url, slug = fine_only
    target = tmp_path / "out" / "runs"
    (tmp_path / "out").mkdir()
    status, _, err = export(url, slug, "--what", "runs", "--per-system", "--out", str(target))
    assert status == 0, err
    assert f"wrote {target}{os.sep} (3 run file(s), one per system: S1.txt, S2.txt, S3.txt" in err
    assert sorted(p.name for p in target.iterdir()) == ["S1.txt", "S2.txt", "S3.txt"]
    assert leftovers(tmp_path / "out") == []
    status, single, err = export(url, slug, "--what", "runs", "--out", "-")
    assert status == 0, err
    for system in SYSTEMS:
        text = (target / f"{system}.txt").read_text()
        assert {line.split()[5] for line in text.splitlines()} == {system}
    # the files are the single export split by system
    assert "".join((target / f"{s}.txt").read_text() for s in SYSTEMS) == single
    # the directory is a valid runs input again, one system per file
    status, out, err = run("evaluate", "--runs", str(target),
                           "--judgments", str(tmp_path / "fine.tsv"))  # fmt: skip
    assert status == 0, err
    assert all(system in out for system in SYSTEMS)
    # a second export replaces the files of the first
    status, _, err = export(url, slug, "--what", "runs", "--per-system", "--out", str(target))
    assert status == 0, err
    assert sorted(p.name for p in target.iterdir()) == ["S1.txt", "S2.txt", "S3.txt"]


def test_per_system_files_give_ir_measures_one_value_per_system(fine_only, tmp_path) -> None:
    url, slug = fine_only
    status, _, err = export(url, slug, "--what", "qrels", "--out", str(tmp_path / "q.txt"))
    assert status == 0, err
    status, _, err = export(url, slug, "--what", "runs", "--out", str(tmp_path / "all.txt"))
    assert status == 0, err
    assert "--per-system --out DIR writes one file per system" in err  # the trap, named
    status, _, err = export(
        url, slug, "--what", "runs", "--per-system", "--out", str(tmp_path / "runs")
    )
    assert status == 0, err
    qrels = list(ir_measures.read_trec_qrels(str(tmp_path / "q.txt")))
    measure = ir_measures.nDCG @ 3
    per_system = {
        system: ir_measures.calc_aggregate(
            [measure], qrels, ir_measures.read_trec_run(str(tmp_path / "runs" / f"{system}.txt"))
        )[measure]
        for system in SYSTEMS
    }
    assert len(set(per_system.values())) == len(SYSTEMS)  # the systems differ
    # the single file given as a run: one number, none of the systems'
    merged = ir_measures.calc_aggregate(
        [measure], qrels, ir_measures.read_trec_run(str(tmp_path / "all.txt"))
    )[measure]
    assert merged not in per_system.values()


def test_per_system_refuses_what_it_cannot_write(fine_only, tmp_path) -> None:
    url, slug = fine_only
    existing = tmp_path / "runs.txt"
    existing.write_text("keep me\n")
    status, _, err = export(url, slug, "--what", "runs", "--per-system", "--out", str(existing))
    assert status == 2
    assert f"--out: {existing} exists and is not a directory" in err
    assert existing.read_text() == "keep me\n"
    for options, message in (
        (("--what", "qrels", "--per-system", "--out", str(tmp_path / "d")), "needs --what runs"),
        (("--what", "runs", "--per-system", "--out", "-"), "give --out DIR, not '-'"),
        (("--what", "runs", "--per-system", "--format", "zip", "--out", str(tmp_path / "d")),
         "give one or the other"),
        (("--what", "runs", "--per-system", "--out", str(tmp_path / "no" / "d")),
         "does not exist"),
    ):  # fmt: skip
        status, _, err = export(url, slug, *options)
        assert status == 2, options
        assert err.startswith("mtcjudge: error:"), err
        assert message in err
    assert not (tmp_path / "d").exists()
    # a directory holding other files is left as it was
    crowded = tmp_path / "crowded"
    crowded.mkdir()
    (crowded / "qrels.txt").write_text("q 0 d 1\n")
    (crowded / "S1.txt").write_text("old\n")
    status, _, err = export(url, slug, "--what", "runs", "--per-system", "--out", str(crowded))
    assert status == 2
    assert "holds files this export does not write (qrels.txt)" in err
    assert sorted(p.name for p in crowded.iterdir()) == ["S1.txt", "qrels.txt"]
    assert (crowded / "S1.txt").read_text() == "old\n"
    assert leftovers(tmp_path) == []


def test_run_file_names_are_safe_and_one_to_one() -> None:
    assert run_file_name("S01") == "S01.txt"
    assert run_file_name("a.b_c-d") == "a.b_c-d.txt"
    assert run_file_name("team/run") == "team%2Frun.txt"
    assert run_file_name(".hidden") == "%2Ehidden.txt"
    assert run_file_name("..") == "%2E..txt"
    assert run_file_name("100%") == "100%25.txt"
    assert run_file_name("Ünï") == "%C3%9Cn%C3%AF.txt"
    names = ["a/b", "a%2Fb", "a_b", "a b", ".a", "%2Ea", "ü", "%C3%BC"]
    assert len({run_file_name(n) for n in names}) == len(names)
    assert all("/" not in run_file_name(n) and not run_file_name(n).startswith(".") for n in names)


def test_runs_zip_holds_the_per_system_files(fine_only, tmp_path) -> None:
    url, slug = fine_only
    status, _, err = export(url, slug, "--what", "runs", "--format", "zip",
                            "--out", str(tmp_path / "runs.zip"))  # fmt: skip
    assert status == 0, err
    assert "(fine-only-runs.zip," in err
    status, _, err = export(
        url, slug, "--what", "runs", "--per-system", "--out", str(tmp_path / "dir")
    )
    assert status == 0, err
    archive = zipfile.ZipFile(tmp_path / "runs.zip")
    assert archive.namelist() == [f"runs/{s}.txt" for s in SYSTEMS]
    for system in SYSTEMS:
        assert (
            archive.read(f"runs/{system}.txt") == (tmp_path / "dir" / f"{system}.txt").read_bytes()
        )


def test_help_says_which_tool_wants_which_runs_file(capsys) -> None:
    with pytest.raises(SystemExit):
        run("export", "--help")
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "trec_eval, ir_measures, pytrec_eval and ranx read a run file as ONE system (the tag "
        "column is only a label): give them --per-system --out DIR, one file per system; the "
        "single file (every system, told apart by the tag) is for mtcjudge evaluate and "
        "campaign create"
    ) in text
    assert "exits with status 1 unless --allow-empty" in text
    assert "--out PATH the file to write ('-': stdout); with --per-system, the directory" in text


# ------------------------------------------------------------------ exports without rows


def test_qrels_on_a_scale_nothing_was_judged_on_is_refused_with_the_reason(
    fine_only, tmp_path
) -> None:
    url, slug = fine_only
    target = tmp_path / "q.txt"
    status, out, err = export(
        url, slug, "--what", "qrels", "--scale", "broad", "--out", str(target)
    )
    assert status == 1
    assert err == (
        "mtcjudge: warning: nothing written, the qrels export has no rows: no BROAD judgments: "
        "this campaign judges on FINE, and its 12 judgments that count are FINE only; use "
        "--scale fine, or --allow-empty writes the empty file anyway\n"
    )
    assert not target.exists()
    assert leftovers(tmp_path) == []
    # an existing file is not clobbered
    target.write_text("earlier qrels\n")
    status, _, _ = export(url, slug, "--what", "qrels", "--scale", "broad", "--out", str(target))
    assert status == 1
    assert target.read_text() == "earlier qrels\n"
    # standard output gets nothing
    status, out, err = export(url, slug, "--what", "qrels", "--scale", "broad", "--out", "-")
    assert (status, out) == (1, "")
    # asked for: written, with the warning
    status, _, err = export(url, slug, "--what", "qrels", "--scale", "broad", "--allow-empty",
                            "--out", str(target))  # fmt: skip
    assert status == 0, err
    assert target.read_bytes() == b""
    assert f"mtcjudge: warning: {target} has no rows: no BROAD judgments" in err
    # the FINE qrels have rows
    status, out, err = export(url, slug, "--what", "qrels", "--scale", "fine", "--out", "-")
    assert status == 0, err
    assert len(out.splitlines()) == 12


def test_every_kind_of_export_without_rows_says_why(empty_database_url, tmp_path) -> None:
    url = empty_database_url
    slug = seed_judged_campaign(url, share=0.0)  # nothing judged, nobody invited
    cases = {
        ("judgments",): "no judgments yet: nobody has judged a pair of this campaign",
        ("qrels",): "no judgments yet",
        ("qrels", "--scale", "broad"): "no judgments yet",
        ("assessors", "--format", "json"): "no assessors: nobody has been invited",
    }
    for i, ((what, *options), reason) in enumerate(cases.items()):
        target = tmp_path / f"{what}-{i}.out"
        status, _, err = export(url, slug, "--what", what, *options, "--out", str(target))
        assert status == 1, (what, err)
        assert f"the {what} export has no rows: {reason}" in err
        assert "--allow-empty writes the empty file anyway" in err
        assert "--scale" not in err  # no other scale has rows
        assert not target.exists()
        status, _, err = export(url, slug, "--what", what, *options, "--allow-empty",
                                "--out", str(target))  # fmt: skip
        assert status == 0, err
        assert "has no rows" in err
    assert (tmp_path / "assessors-3.out").read_text() == '{\n "assessors": []\n}\n'
    assert (tmp_path / "judgments-0.out").read_text().count("\n") == 1  # the header
    assert (tmp_path / "qrels-1.out").read_bytes() == b""
    # the results and the bundle always have content
    for what in ("results", "bundle", "runs", "estimates"):
        status, _, err = export(url, slug, "--what", what, "--out", str(tmp_path / what))
        assert status == 0, (what, err)


def test_estimates_of_a_fully_judged_campaign(empty_database_url, tmp_path) -> None:
    url = empty_database_url
    slug = seed_judged_campaign(url, share=1.0)
    status, _, err = export(url, slug, "--what", "estimates", "--out", str(tmp_path / "e.csv"))
    assert status == 1
    assert "no unjudged pool pairs on FINE: all " in err
    assert "pool pairs are judged, so there is nothing to estimate" in err


def test_service_refuses_or_writes_the_empty_export(db_session) -> None:
    slug = make_campaign(db_session, share=0.0).campaign.slug
    out = io.BytesIO()
    with pytest.raises(EmptyExport, match="nothing to export: no judgments yet") as refused:
        service.write_export(db_session, slug, service.ExportSpec("qrels"), out)
    assert out.getvalue() == b""
    assert refused.value.status == 409
    assert refused.value.code == "empty_export"
    written = service.write_export(
        db_session, slug, service.ExportSpec("judgments", allow_empty=True), out
    )
    assert written.empty is not None
    assert written.empty.startswith("no judgments yet")
    assert out.getvalue().decode().splitlines() == [",".join(JUDGMENT_COLUMNS)]
    full = service.write_export(db_session, slug, service.ExportSpec("runs"), io.BytesIO())
    assert full.empty is None


# ------------------------------------------------------------------ the API


@pytest.fixture
def client(session_factory):
    return TestClient(create_app(Settings(organizer_token=TOKEN), session_factory=session_factory))


def test_api_empty_export_is_a_409_unless_allowed(db_session, client) -> None:
    slug = make_campaign(db_session, share=0.0).campaign.slug
    base = f"/api/campaigns/{slug}/export"
    for what, params in (("qrels", {"scale": "broad"}), ("judgments", {}), ("assessors", {})):
        response = client.get(f"{base}/{what}", params=params, headers=AUTH)
        assert response.status_code == 409, response.text
        body = response.json()
        assert body["error"] == "empty_export"
        assert body["detail"].startswith("nothing to export: no ")
        assert "allow_empty=true" in body["detail"]
        allowed = client.get(
            f"{base}/{what}", params={**params, "allow_empty": "true"}, headers=AUTH
        )
        assert allowed.status_code == 200, allowed.text
        assert allowed.headers["content-disposition"].startswith("attachment;")
    assert client.get(f"{base}/qrels?allow_empty=maybe", headers=AUTH).status_code == 422


def test_api_runs_as_a_zip_of_per_system_files(db_session, client) -> None:
    judged = make_campaign(db_session)
    slug = judged.campaign.slug
    response = client.get(f"/api/campaigns/{slug}/export/runs?format=zip", headers=AUTH)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/zip"
    assert response.headers["content-disposition"] == f'attachment; filename="{slug}-runs.zip"'
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    systems = judged.synthetic.systems
    assert archive.namelist() == [f"runs/{s}.txt" for s in systems]
    single = client.get(f"/api/campaigns/{slug}/export/runs", headers=AUTH).content
    assert b"".join(archive.read(f"runs/{s}.txt") for s in systems) == single
