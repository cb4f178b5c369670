"""mtcjudge simulate says which estimator it ran, what the metadata covers, and counts ties
strictly (issue 11, truthful reporting)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mtcjudge.mtc.factory import DEFAULT_ESTIMATOR
from mtcjudge.mtc.synthetic import generate
from tests.cli import run


@pytest.fixture(scope="module")
def collection_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("synthetic")
    generate(5, 10, 5, n_genres=4, docs_per_genre=60, n_artists=40, seed=4).write(directory)
    return directory


def simulate(d: Path, metadata: Path | None, *extra: str) -> tuple[int, str, str]:
    args = ["simulate", "--runs", str(d / "runs.tsv"), "--judgments"]
    args += [str(d / "judgments-fine.tsv"), "--quiet", *extra]
    if metadata is not None:
        args += ["--metadata", str(metadata)]
    return run(*args)


def first_line(out: str) -> str:
    return out.splitlines()[0]


@pytest.mark.parametrize(
    ("options", "name", "default"),
    [
        ((), DEFAULT_ESTIMATOR, True),
        (("--model", "ordinal"), "ordinal", False),
        (("--model", "calibrated"), "calibrated", False),
        (("--model", "joint"), "joint", False),
        (("--model", "uniform"), "uniform", False),
    ],
)
def test_the_estimator_actually_used_is_named_in_summary_json_and_plot(
    collection_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    options: tuple[str, ...],
    name: str,
    default: bool,
) -> None:
    titles: list[str] = []
    monkeypatch.setattr(
        "mtcjudge.cli.plot.plot_replay", lambda _result, _path, title, _target: titles.append(title)
    )
    report = tmp_path / "r.json"
    code, out, err = simulate(
        collection_dir,
        collection_dir / "metadata.tsv",
        *options,
        "--json",
        str(report),
        "--plot",
        str(tmp_path / "r.png"),
    )
    assert code == 0, err
    suffix = " (the default)" if default else ""
    assert f"estimator {name}{suffix}, policy" in first_line(out)
    data = json.loads(report.read_text())
    assert data["estimator"]["name"] == name
    assert data["estimator"]["default"] is default
    assert len(titles) == 1
    assert f", {name}, confidence" in titles[0]


def test_complete_metadata_gives_no_warning(collection_dir: Path) -> None:
    code, _, err = simulate(collection_dir, collection_dir / "metadata.tsv")
    assert code == 0, err
    assert "warning" not in err


def test_metadata_with_other_ids_warns_that_it_covers_nothing(
    collection_dir: Path, tmp_path: Path
) -> None:
    metadata = tmp_path / "metadata.tsv"
    rows = (collection_dir / "metadata.tsv").read_text().splitlines()
    metadata.write_text("".join(f"X{row}\n" for row in rows))
    report = tmp_path / "r.json"
    code, _, err = simulate(
        collection_dir, metadata, "--model", "calibrated", "--json", str(report)
    )
    assert code == 0, err
    assert f"mtcjudge: warning: --metadata {metadata} covers none of the pool" in err
    assert "M_out cannot estimate any pool pair" in err
    coverage = json.loads(report.read_text())["estimator"]["metadata_coverage"]
    assert coverage["queries_with_genre"] == 0
    assert coverage["pool_pairs_with_genres"] == 0
    assert coverage["queries"] == 10


def test_metadata_missing_some_queries_and_documents_warns_with_counts(
    collection_dir: Path, tmp_path: Path
) -> None:
    queries = sorted({line.split("\t")[1] for line in (collection_dir / "runs.tsv").open()})
    runs_docs = sorted(
        {line.split("\t")[2].strip() for line in (collection_dir / "runs.tsv").open()}
    )
    dropped = set(queries[:3]) | {d for d in runs_docs[:7] if d not in queries}
    n_docs_dropped = len({d for d in runs_docs[:7] if d not in queries})
    metadata = tmp_path / "metadata.tsv"
    rows = (collection_dir / "metadata.tsv").read_text().splitlines()
    metadata.write_text("".join(f"{row}\n" for row in rows if row.split("\t")[0] not in dropped))
    report = tmp_path / "r.json"
    code, _, err = simulate(collection_dir, metadata, "--json", str(report))
    assert code == 0, err
    assert "has no genre for 3 of 10 queries; M_out cannot estimate their pairs" in err
    coverage = json.loads(report.read_text())["estimator"]["metadata_coverage"]
    missing_docs = coverage["pool_documents"] - coverage["pool_documents_with_genre"]
    assert missing_docs >= n_docs_dropped > 0
    assert f"has no genre for {missing_docs} of {coverage['pool_documents']} pooled" in err


def test_true_ties_are_counted_and_reported(collection_dir: Path, tmp_path: Path) -> None:
    # a sixth system with the runs of S01: its true score ties with S01's
    lines = (collection_dir / "runs.tsv").read_text().splitlines()
    copy = [line.replace("S01\t", "S99\t", 1) for line in lines if line.startswith("S01\t")]
    runs = tmp_path / "runs.tsv"
    runs.write_text("".join(f"{line}\n" for line in lines + copy))
    report = tmp_path / "r.json"
    code, out, err = run(
        "simulate",
        "--runs",
        str(runs),
        "--judgments",
        str(collection_dir / "judgments-fine.tsv"),
        "--metadata",
        str(collection_dir / "metadata.tsv"),
        "--quiet",
        "--json",
        str(report),
    )
    assert code == 0, err
    assert "(true ties: 1 of 15 pairs, counted strictly)" in out
    data = json.loads(report.read_text())
    assert data["true_ties"] == 1


def test_systems_with_the_same_run_share_their_rank_in_the_ranking(tmp_path: Path) -> None:
    """A system that repeats another's run is tied with it at the stop: one rank, marked =."""
    synthetic = generate(5, 10, 5, n_genres=4, docs_per_genre=60, n_artists=40, seed=4)
    synthetic.systems.append("S02-rerun")
    synthetic.runs["S02-rerun"] = {q: list(d) for q, d in synthetic.runs["S02"].items()}
    synthetic.teams["S02-rerun"] = synthetic.teams["S02"]
    synthetic.write(tmp_path)
    code, out, err = simulate(tmp_path, tmp_path / "metadata.tsv")
    assert code == 0, err
    table = out[out.index("ranking (estimated at the stop") :].splitlines()[2:]
    ranks = {line.split()[1]: line.split()[0] for line in table}
    assert ranks["S02"] == ranks["S02-rerun"]
    assert ranks["S02"].endswith("=")
    assert sum(rank.endswith("=") for rank in ranks.values()) == 2
    assert "(true ties: 1 of 15 pairs" in out
