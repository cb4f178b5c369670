"""bench/assessors.py: a tiny simulated campaign per scenario, and the bookkeeping of the
figures (no MIREX data needed)."""

from __future__ import annotations

import argparse
import json
import sys
from types import ModuleType

import pytest

from mtcjudge.cli import main
from mtcjudge.cli.bench import benchmark_module


def _bench_module() -> ModuleType:
    module = benchmark_module("assessors")
    if module is None:
        raise RuntimeError("bench/assessors.py is missing from the checkout")
    return module


assessors = _bench_module()


def person(kind: str, answers: int, flagged_at: int | None) -> object:
    return assessors.AssessorRecord(
        kind=kind,
        answers=answers,
        pool=answers,
        flagged_at=flagged_at,
        failed_trials_at=None,
        reasons=[],
        metrics={},
    )


def campaign(scenario: str, collection: str, wrong: int, answers: int, people: list) -> object:
    return assessors.CampaignRecord(
        collection=collection,
        kind="suite",
        scenario=scenario,
        rule_on=False,
        n_systems=5,
        pool=100,
        pairs=10,
        wrong=wrong,
        wrong_vs_truth=wrong,
        allowed=0.5,
        confidence=0.95,
        judgments_at_stop=answers,
        pool_answers=answers,
        trials=3,
        set_aside_judgments=0,
        stop="confidence",
        seconds=0.0,
        assessors=people,
        second_opinions=4,
        noise_sd=15.0 if scenario != "exact" else 0.0,
    )


def test_flag_figures_per_type() -> None:
    records = [
        campaign(
            "mixed",
            "a",
            1,
            50,
            [
                person("careful", 40, None),
                person("careful", 20, None),
                person("random", 40, 12),
                person("random", 40, 35),
                person("random", 10, None),
                person("random", 5, 5),  # flagged after 5 answers and set aside
            ],
        )
    ]
    flags = assessors.flag_summary(records)
    assert flags["careful"]["share_flagged"] == 0.0
    random = flags["random"]
    assert random["assessors"] == 4
    assert random["flagged"] == 3
    assert random["gave_30"] == 3
    assert random["flagged_within_30"] == 2
    assert random["share_flagged_within_30"] == pytest.approx(2 / 3)
    assert random["median_answers_until_flagged"] == 12


def test_ranking_figures_against_the_clean_campaign() -> None:
    records = [
        campaign("clean", "a", 0, 100, []),
        campaign("clean", "b", 1, 50, []),
        campaign("random20 set aside", "a", 1, 120, []),
        campaign("random20 set aside", "b", 0, 60, []),
    ]
    ranking = assessors.ranking_summary(records)
    aside = ranking["random20 set aside"]
    assert aside["wrong"] == 1
    assert aside["allowed"] == pytest.approx(1.0)
    assert aside["honest"]
    assert aside["judgments_vs_clean"] == pytest.approx(180 / 150)
    assert ranking["clean"]["judgments_vs_clean"] == pytest.approx(1.0)
    assert aside["second_opinions"] == 8
    assert aside["mean_noise_sd"] == pytest.approx(15.0)
    # excess over the allowance of 0.5 a campaign: +0.5 and -0.5, summed over two draws
    low, high = aside["excess_interval"]
    assert (low, high) == (pytest.approx(-1.0), pytest.approx(1.0))


def test_one_campaign_has_no_excess_interval_and_the_table_says_so(capsys) -> None:
    records = [
        campaign("clean", "a", 3, 100, []),
        campaign("random20 set aside", "a", 0, 120, []),
        campaign("random20 set aside", "b", 2, 60, []),
    ]
    summary = assessors.summarise(records)
    ranking = summary["suite"]["ranking"]
    assert ranking["clean"]["excess_interval"] is None
    assessors.print_summary(summary, sys.stdout)
    table = capsys.readouterr().out
    clean_row = next(line for line in table.splitlines() if line.strip().startswith("clean"))
    assert clean_row.rstrip().endswith("+2.5")
    aside_row = next(line for line in table.splitlines() if "random20 set aside" in line)
    assert aside_row.rstrip().endswith("+1.0 [-1.0, +3.0]")


def test_the_disagreement_is_measured_from_second_opinions_as_the_planner_does() -> None:
    """Exact answers measure none; careful ones about their noise; a set-aside assessor's
    second opinions, and those of pairs whose judge was set aside, count for nothing."""
    settings = assessors.tasks_for(_quick_args())[0].settings
    exact = assessors.Campaign(assessors.Task("exact", settings=settings, n_assessors=5))
    exact.run()
    assert exact.second
    assert exact._disagreement().measured
    assert exact._disagreement().variance == 0.0
    assert exact.engine.judged_var.max() == 0.0
    clean = assessors.Campaign(assessors.Task("clean", settings=settings, n_assessors=5))
    record = clean.run()
    measured = clean._disagreement()
    assert measured.measured
    assert record.second_opinions == measured.pairs
    assert 5.0 < record.noise_sd < 40.0  # FINE points; the careful noise is 10-25
    judged = clean.engine.judged
    assert clean.engine.var[judged] == pytest.approx(measured.variance)
    # setting an assessor aside drops their second opinions and those on their pairs
    who = clean.second[0][0]
    before = measured.pairs
    clean._set_aside(clean.assessors[who])
    assert clean._disagreement().pairs < before
    off = assessors.Campaign(assessors.Task("clean", settings=settings, n_assessors=5, noise="off"))
    off.run()
    assert off.engine.judged_var.max() == 0.0


def _quick_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    assessors.add_arguments(parser)
    return parser.parse_args(["--quick", "--collections", "1", "--scenario", "clean"])


def test_population_of_each_scenario() -> None:
    assert assessors.population("clean", 5) == ["careful"] * 5
    mixed = assessors.population("mixed", 10)
    assert set(mixed) == set(assessors.TYPES)
    assert assessors.population("random20", 10).count("random") == 2


def test_a_tiny_run_flags_random_clickers(tmp_path) -> None:
    out = tmp_path / "assessors.json"
    code = main(
        [
            "bench",
            "assessors",
            "--quick",
            "--collections",
            "1",
            "--workers",
            "1",
            "--scenario",
            "clean",
            "--scenario",
            "random20 set aside",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    payload = json.loads(out.read_text())
    assert payload["settings"]["estimator"] == "joint"
    summary = payload["summary"]["listening rule off"]
    ranking = summary["all"]["ranking"]
    assert set(ranking) == {"clean", "random20 set aside"}
    assert ranking["clean"]["judgments_vs_clean"] == pytest.approx(1.0)
    assert ranking["clean"]["set_aside_judgments"] == 0
    flags = summary["all"]["flags"]
    # a random clicker who does not listen is caught, and set aside with their judgments
    assert flags["random"]["share_flagged"] == 1.0
    assert ranking["random20 set aside"]["set_aside_judgments"] > 0
    records = payload["records"]
    assert {r["scenario"] for r in records} == {"clean", "random20 set aside"}
    for r in records:
        assert r["pairs"] > 0
        assert r["wrong"] <= r["pairs"]


def test_bad_options_exit_2(tmp_path, capsys) -> None:
    assert main(["bench", "assessors", "--mirex", str(tmp_path)]) == 2
    assert "no runs.tsv" in capsys.readouterr().err
    assert main(["bench", "assessors", "--alpha", "2", "--collections", "1"]) == 2


def test_on_a_broad_collection_careful_grades_centre_on_its_own_truth() -> None:
    """A suite's BROAD grades are not always the band of its FINE scores; a careful assessor
    answers around the collection's grade, moved only by as many bands as their view moved,
    and an exact one gives the grade itself."""
    exact = assessors.Assessor.make(0, "exact", 0)
    # a FINE truth of 0.5 (band 1) whose collection grade is 2
    assert exact.answer(0.5, 3, grade_truth=2)[1] == 2
    assert exact.answer(0.5, 3)[1] == 1  # without a grade of its own: the band
    careful = assessors.Assessor.make(1, "careful", 0)
    grades = [careful.answer(0.5, None, grade_truth=2)[1] for _ in range(400)]
    # mostly the collection's grade; 0 (a band below band 1's own 1) only by a rare slip
    assert grades.count(2) > grades.count(1) > grades.count(0)
    assert grades.count(0) < 0.1 * len(grades)
    low = [careful.answer(0.1, None, grade_truth=0)[1] for _ in range(400)]
    assert set(low) <= {0, 1}
    assert low.count(0) > 300


def test_a_pool_judged_to_the_end_below_the_target_is_allowed_its_own_confidence() -> None:
    from bench._common import allowance

    assert allowance(0.95, "confidence", 0.97) == pytest.approx(0.05)
    assert allowance(0.95, "complete", 0.93) == pytest.approx(0.07)
    assert allowance(0.95, "complete", 0.99) == pytest.approx(0.05)


def test_what_careful_assessors_give_on_average_is_what_they_answer_on_average() -> None:
    """The ranking a measured campaign is judged against: careful assessors' average answer,
    worked out in closed form, agrees with many simulated careful assessors answering, and
    differs from the truth where the scale's ends or a band's edge move it."""
    truth = [0.0, 0.2, 0.33, 0.5, 0.7, 1.0]
    grades = [0, 0, 0, 1, 2, 2]
    fine = assessors.careful_average(truth)
    broad = assessors.careful_average(truth, grades)
    n = 3000
    heard_fine = [0.0] * len(truth)
    heard_broad = [0.0] * len(truth)
    for i in range(n):
        someone = assessors.Assessor.make(i, "careful", 2026)
        for j, (t, g) in enumerate(zip(truth, grades, strict=True)):
            heard_fine[j] += round(someone.answer(t, None)[0] * 100) / n
            heard_broad[j] += someone.answer(t, None, grade_truth=g)[1] / n
    assert fine == pytest.approx(heard_fine, abs=0.6)  # FINE points
    assert broad == pytest.approx(heard_broad, abs=0.03)  # grades
    # mid-scale and mid-band nothing moves; at the ends the average moves inwards, and a
    # grade 0 whose score lies at its band's edge averages half a grade up
    assert (fine[3], broad[3]) == (pytest.approx(50.0), pytest.approx(1.0))
    assert fine[0] > 5.0
    assert fine[-1] < 95.0
    assert broad[2] > 0.4
