"""Hours, not judgments: the volunteers' listening time under each selection.

Usage::

    nice .venv/bin/python bench/hours.py --mirex $MIREX2011 --collections 8 --seeds 4 \\
        --json hours.json

Simulated campaigns (:func:`mtcjudge.mtc.volunteers.simulate_volunteers`) on MIREX 2011 FINE
(CG@5, with ``--mirex``) and the calibration suite's collections
(:func:`bench.experiments.synthetic_zoo.suite_settings`, as ``bench/calibration.py``), at each
target (0.90, 0.95, 0.99), under three selections:

* ``greedy`` — judgment-greedy MTC: the engine's best pair, whatever its query;
* ``locality`` — the rule the product had before: the volunteer's query's best pair when it
  weighs at least half the best pair;
* ``cost`` — cost-aware (the product): the most weight per expected second for that
  volunteer, with the listening-time model fitted to the judgments so far.

Every campaign runs the engine a campaign builds (the default estimator ``joint``) with
several volunteers judging at once, each with their own pace, hearing a new query in full
and a tenth of it again on its later pairs, taking breaks (:class:`VolunteerSetup`'s stated
assumptions). With ``--noise measured`` (default, the product) the volunteers are careful
assessors of ``bench/assessors.py`` (the truth with a personal offset and noise), a tenth of
the hand-outs are hidden trials (their time counts), a quarter of those second opinions, and
judged pairs keep the disagreement measured from them; ``--noise exact``: every answer is the
truth. The same seed gives every selection the same volunteers.

Reported per selection and target, pooled over collections and seeds: hours (listening and
deciding, trials included), judgments, queries heard, and the wrong system pairs at the stop
against the allowance ``(1 - target) x pairs`` (``1 -`` the confidence reached when the pool
ran out first; honest when wrong <= allowed, pooled). Wrong against the ranking the
volunteers give on average, which the claim is about (docs/method.md §10): with ``--noise
measured`` the careful assessors' average (:func:`bench.assessors.careful_average`), which
the scale's ends and the bands' edges move away from the truth; the count against the truth
is kept beside it. Then the change in hours against judgment-greedy; 95 % bootstrap
intervals over campaigns of that change and of the pooled wrong pairs less the allowance (a
pooled figure from a few long campaigns is only as sure as these say); and where MIREX 2011
at 0.95 lands against the 53 h of judging its whole pool ([U12]). Figures are printed and
written as JSON, never asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

if __package__ in (None, ""):  # run as ``python bench/hours.py``: bench.* from the tree
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (
    RESAMPLES,
    TARGETS,
    allowance,
    central_interval,
    excess_interval,
    in_processes,
    non_negative_int,
    positive_int,
    run_benchmark,
)
from bench.assessors import (
    QUALITY_RATE,
    Assessor,
    average_means,
    grade_truth,
    load_case,
    value_of,
)
from bench.experiments.synthetic_zoo import RANGE_SETS, ZooSettings, smoke_sized, suite_settings
from mtcjudge.cli.common import UsageError, check_output_file
from mtcjudge.mtc.assessor_offsets import JudgmentShares, apply_judged_noise
from mtcjudge.mtc.disagreement import disagreement
from mtcjudge.mtc.engine import EngineConfig
from mtcjudge.mtc.factory import DEFAULT_ESTIMATOR, build_engine
from mtcjudge.mtc.measures import evaluate
from mtcjudge.mtc.replay import correct_signs
from mtcjudge.mtc.scales import get_scale
from mtcjudge.mtc.volunteers import SELECTIONS, VolunteerSetup, simulate_volunteers

__all__ = ["DESCRIPTION", "Record", "Task", "add_arguments", "main", "run_from_args", "run_task"]

DESCRIPTION = (
    "Simulated volunteers with their own pace, query changes and breaks on MIREX 2011 and the "
    "calibration suite: hours, judgments and wrong pairs at 0.90/0.95/0.99 for judgment-greedy, "
    "the old locality rule and cost-aware selection."
)
#: the hours [U12] gives for judging MIREX 2011's whole pool (6,322 judgments of 30 s clips)
MIREX_FULL_HOURS = 53.0
#: second opinions among the hidden trials (one kind of four, as the product draws them)
SECOND_OPINION_SHARE = 0.25
#: the disagreement and the assessors' offsets are measured again every this many judgments
#: (and after every second opinion), as the planner measures them every few seconds
NOISE_EVERY = 5


@dataclass(frozen=True)
class Task:
    selection: str
    target: float
    seed: int
    settings: ZooSettings | None = None
    mirex: str | None = None
    volunteers: int = 4
    noise: str = "measured"

    @property
    def cost(self) -> float:
        if self.settings is None:
            return 18 * 18 * 100 * 5.0
        s = self.settings
        return float(s.n_systems**2 * s.n_queries * s.k)


@dataclass(frozen=True)
class Record:
    collection: str
    kind: str
    selection: str
    target: float
    seed: int
    pool: int
    n_queries: int
    judgments: int
    trials: int
    hours: float
    listening_hours: float
    queries_heard: int
    wall_hours: float
    full_hours: float  # judging the whole pool, each query heard once, by the same assumptions
    pairs: int
    wrong: int
    #: wrong pairs against the truth's ranking (the same as ``wrong`` with exact answers)
    wrong_vs_truth: int
    allowed: float
    confidence: float
    stop: str
    noise_sd: float
    seconds: float


def run_task(task: Task) -> Record:
    started = time.perf_counter()
    name, measure, scale_name, loaded, fine = load_case(task.settings, task.mirex, "cg")
    scale = get_scale(scale_name)
    collection = loaded.collection
    fine = np.nan_to_num(fine, nan=0.5)
    config = EngineConfig(measure=measure, target=task.target)
    engine, _ = build_engine(collection, loaded.metadata, scale, DEFAULT_ESTIMATOR, config)
    truth = loaded.judged_values
    measured = task.noise == "measured"
    true_means = evaluate(collection, truth, np.zeros_like(truth), measure, scale).mean
    # the claim is about the ranking the assessors give on average (docs/method.md §10):
    # careful volunteers' average where they answer, the truth where answers are exact
    claimed_means = (
        average_means(collection, truth, fine, measure, scale) if measured else true_means
    )
    people = [Assessor.make(i, "careful", task.seed) for i in range(task.volunteers)]
    rng = np.random.default_rng(np.random.SeedSequence([task.seed, 0x5EC0]))
    owner = np.full(collection.n_pairs, -1, dtype=np.intp)
    second: list[tuple[float, float]] = []

    def answer(who: int, pair: int) -> float:
        if not measured:
            return float(truth[pair])
        score, grade = people[who].answer(float(fine[pair]), pair, grade_truth(scale, truth, pair))
        return value_of(scale, score, grade)

    judged_by: list[int] = []  # the pairs judged, in order

    def measure_noise() -> None:
        """As the planner measures it: the disagreement from the second opinions, the
        assessors' offsets from every judgment and who made it (docs/method.md §10.1)."""
        pairs = np.asarray(judged_by, dtype=np.intp)
        shares = JudgmentShares.of(pairs, list(owner[pairs]), engine.values[pairs])
        apply_judged_noise(engine, disagreement(second), 1.0, shares)

    def after_judgment(who: int, pair: int, _value: float) -> None:
        owner[pair] = who
        judged_by.append(pair)
        if measured and len(judged_by) % NOISE_EVERY == 0:
            measure_noise()

    def on_trial(who: int) -> None:
        """A second opinion a quarter of the time, on a pair another volunteer judged; the
        judged pairs then keep the disagreement measured from all of them."""
        if rng.uniform() >= SECOND_OPINION_SHARE:
            return
        others = np.flatnonzero((owner >= 0) & (owner != who))
        if others.size == 0:
            return
        pair = int(others[int(rng.integers(others.size))])
        score, grade = people[who].answer(float(fine[pair]), pair, grade_truth(scale, truth, pair))
        second.append((float(engine.values[pair]), value_of(scale, score, grade)))
        measure_noise()

    setup = VolunteerSetup(
        volunteers=task.volunteers,
        selection=task.selection,
        trial_rate=QUALITY_RATE if measured else 0.0,
        seed=task.seed,
    )
    run = simulate_volunteers(
        engine, answer, setup, after_judgment=after_judgment, on_trial=on_trial
    )
    evaluation = engine.evaluation()
    correct = correct_signs(evaluation.mean, claimed_means)
    # judging everything by the same assumptions: each query heard once, every pair judged
    full = setup.pool_hours(collection.n_queries, collection.n_pairs)
    return Record(
        collection=name,
        kind="suite" if task.settings is not None else "mirex",
        selection=task.selection,
        target=task.target,
        seed=task.seed,
        pool=collection.n_pairs,
        n_queries=collection.n_queries,
        judgments=run.judgments,
        trials=sum(v.trials for v in run.volunteers),
        hours=run.hours,
        listening_hours=run.listening_hours,
        queries_heard=run.queries_heard,
        wall_hours=run.wall_hours,
        full_hours=full,
        pairs=int(correct.size),
        wrong=int((~correct).sum()),
        wrong_vs_truth=int((~correct_signs(evaluation.mean, true_means)).sum()),
        allowed=allowance(task.target, run.stop_reason, evaluation.ranking_confidence)
        * int(correct.size),
        confidence=float(evaluation.ranking_confidence),
        stop=run.stop_reason,
        noise_sd=float(np.sqrt(engine.judged_var.max(initial=0.0))) * 100.0 / float(scale.lmax),
        seconds=time.perf_counter() - started,
    )


# ---------------------------------------------------------------------------- summaries
def _mean(xs: Sequence[float]) -> float:
    return float(statistics.fmean(xs)) if xs else math.nan


def _se(xs: Sequence[float]) -> float:
    return float(statistics.stdev(xs) / math.sqrt(len(xs))) if len(xs) > 1 else math.nan


def _pooled_intervals(
    at: Sequence[Record], sel: str, rng: np.random.Generator
) -> dict[str, tuple[float, float]]:
    """95 % bootstrap intervals over campaigns (a collection and seed, with its
    judgment-greedy twin, drawn with replacement): of the pooled hours against
    judgment-greedy's, and of the pooled wrong pairs less the pooled allowance. A pooled
    figure from a few long campaigns is only as sure as these say."""
    mine = {(r.collection, r.seed): r for r in at if r.selection == sel}
    twins = {(r.collection, r.seed): r for r in at if r.selection == "greedy"}
    keys = sorted(mine)
    excess = excess_interval([mine[k].wrong for k in keys], [mine[k].allowed for k in keys], rng)
    if excess is None:
        return {}
    out = {"excess_interval": excess}
    paired = [k for k in keys if k in twins]
    if sel != "greedy" and len(paired) >= 2:
        own = np.array([mine[k].hours for k in paired], dtype=np.float64)
        base = np.array([twins[k].hours for k in paired], dtype=np.float64)
        draws = rng.integers(0, len(paired), size=(RESAMPLES, len(paired)))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = own[draws].sum(axis=1) / base[draws].sum(axis=1)
        out["hours_vs_greedy_interval"] = central_interval(ratios)
    return out


def summarise(records: Sequence[Record], selections: Sequence[str]) -> dict[str, Any]:
    """Per target and selection: pooled hours, judgments, queries heard, wrong pairs against
    the allowance; hours against judgment-greedy (the ratio of pooled hours with its 95 %
    bootstrap interval over campaigns, and per collection the mean of the paired ratios);
    the pooled excess of wrong pairs over the allowance with its interval; MIREX 2011's
    figures apart."""
    rng = np.random.default_rng(20261130)
    out: dict[str, Any] = {}
    for target in sorted({r.target for r in records}):
        at = [r for r in records if r.target == target]
        per: dict[str, Any] = {}
        for sel in selections:
            mine = [r for r in at if r.selection == sel]
            if not mine:
                continue
            wrong = sum(r.wrong for r in mine)
            wrong_vs_truth = sum(r.wrong_vs_truth for r in mine)
            allowed = sum(r.allowed for r in mine)
            per[sel] = {
                "campaigns": len(mine),
                "hours": sum(r.hours for r in mine),
                "mean_hours": _mean([r.hours for r in mine]),
                "judgments": sum(r.judgments for r in mine),
                "queries_heard": sum(r.queries_heard for r in mine),
                "wrong": wrong,
                "wrong_vs_truth": wrong_vs_truth,
                "allowed": allowed,
                "honest": wrong <= allowed,
                "full_hours": sum(r.full_hours for r in mine),
            }
        greedy = per.get("greedy")
        for sel, fig in per.items():
            if greedy is not None and greedy["hours"] > 0:
                fig["hours_vs_greedy"] = fig["hours"] / greedy["hours"]
                fig["judgments_vs_greedy"] = fig["judgments"] / max(greedy["judgments"], 1)
            # paired by collection and seed: the mean ratio and its standard error
            ratios = [
                r.hours / g.hours
                for r in at
                if r.selection == sel
                for g in at
                if g.selection == "greedy"
                and g.collection == r.collection
                and g.seed == r.seed
                and g.hours > 0
            ]
            fig["paired_ratio_mean"] = _mean(ratios)
            fig["paired_ratio_se"] = _se(ratios)
            fig.update(_pooled_intervals(at, sel, rng))
        mirex_runs: dict[str, list[Record]] = {}
        for r in at:
            if r.kind == "mirex":
                mirex_runs.setdefault(r.selection, []).append(r)
        mirex = {
            sel: {
                "mean_hours": _mean([r.hours for r in rs]),
                "se_hours": _se([r.hours for r in rs]),
                "mean_judgments": _mean([r.judgments for r in rs]),
                "wrong": sum(r.wrong for r in rs),
                "allowed": sum(r.allowed for r in rs),
                "share_of_53h": _mean([r.hours for r in rs]) / MIREX_FULL_HOURS,
                "full_hours_by_model": rs[0].full_hours,
            }
            for sel, rs in mirex_runs.items()
        }
        out[f"{target:.2f}"] = {"selections": per, "mirex2011": mirex}
    return out


def print_summary(summary: dict[str, Any], out: TextIO) -> None:
    for target, block in summary.items():
        print(f"\n== target {target} (pooled over collections and seeds)", file=out)
        print(
            f"{'selection':10} {'hours':>9} {'vs greedy':>10} {'95 % interval':>17} "
            f"{'paired':>14} {'judgments':>10} {'queries':>8} {'wrong/allowed':>15} "
            f"{'excess, 95 % interval':>24} {'vs truth':>9}",
            file=out,
        )
        for sel, f in block["selections"].items():
            vs = f.get("hours_vs_greedy")
            paired = f["paired_ratio_mean"]
            se = f["paired_ratio_se"]
            low, high = f.get("hours_vs_greedy_interval", (math.nan, math.nan))
            spread = "" if math.isnan(low) else f"[{low - 1:+.0%}, {high - 1:+.0%}]"
            e_low, e_high = f.get("excess_interval", (math.nan, math.nan))
            excess = f["wrong"] - f["allowed"]
            over = "" if math.isnan(e_low) else f"{excess:+.1f} [{e_low:+.1f}, {e_high:+.1f}]"
            print(
                f"{sel:10} {f['hours']:9.1f} "
                f"{'' if vs is None else f'{vs - 1:+.1%}':>10} {spread:>17} "
                f"{'' if math.isnan(paired) else f'{paired - 1:+.1%} ±{se:.1%}':>14} "
                f"{f['judgments']:10d} {f['queries_heard']:8d} "
                f"{f['wrong']:6d}/{f['allowed']:7.1f} {'ok' if f['honest'] else 'OVER'} "
                f"{over:>24} {f['wrong_vs_truth']:9d}",
                file=out,
            )
        for sel, m in block["mirex2011"].items():
            print(
                f"  MIREX 2011 {sel}: {m['mean_hours']:.1f} h (±{m['se_hours']:.1f}), "
                f"{m['mean_judgments']:.0f} judgments, {m['share_of_53h']:.0%} of the 53 h "
                f"of full judging ({m['full_hours_by_model']:.0f} h by these assumptions)",
                file=out,
            )


# ---------------------------------------------------------------------------- command line
def tasks_for(args: argparse.Namespace) -> list[Task]:
    settings = suite_settings(args.collections, args.seed, args.ranges)
    if args.quick:
        settings = [smoke_sized(s, 8, 30) for s in settings]
    args.suite = settings
    tasks: list[Task] = []
    for target in args.targets:
        for sel in args.selections:
            for rep in range(args.seeds):
                for i, s in enumerate(settings):
                    seed = args.seed * 100_000 + rep * 1000 + i
                    tasks.append(
                        Task(
                            sel,
                            target,
                            seed,
                            settings=s,
                            volunteers=args.volunteers,
                            noise=args.noise,
                        )
                    )
                if args.mirex is not None:
                    seed = args.seed * 100_000 + rep * 1000 + 999
                    tasks.append(
                        Task(
                            sel,
                            target,
                            seed,
                            mirex=str(args.mirex),
                            volunteers=args.volunteers,
                            noise=args.noise,
                        )
                    )
    return sorted(tasks, key=lambda t: -t.cost)


def _targets(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected targets like 0.9,0.95, got {text}") from exc
    if not values or not all(0.5 <= v < 1.0 for v in values):
        raise argparse.ArgumentTypeError(f"targets must be in [0.5, 1), got {text}")
    return values


def _selections(text: str) -> list[str]:
    values = [x.strip() for x in text.split(",") if x.strip()]
    bad = [v for v in values if v not in SELECTIONS]
    if not values or bad:
        raise argparse.ArgumentTypeError(
            f"selections are among {', '.join(SELECTIONS)}, got {text}"
        )
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--collections", type=non_negative_int, default=8, help="suite collections (8)"
    )
    parser.add_argument("--seeds", type=positive_int, default=3, help="runs per collection (3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the suite and volunteers (0)")
    parser.add_argument(
        "--ranges",
        choices=list(RANGE_SETS),
        default="issue11",
        help="the ranges the suite is drawn from (as bench calibration): issue11 (the default), "
        "issue23 (the third suite: closer systems, weaker metadata, heavier tails) or packed",
    )
    parser.add_argument(
        "--mirex", type=Path, metavar="DIR", help="MIREX 2011 AMS directory (runs.tsv, ...)"
    )
    parser.add_argument(
        "--targets",
        type=_targets,
        default=list(TARGETS),
        help="ranking-confidence targets (0.9,0.95,0.99)",
    )
    parser.add_argument(
        "--selections",
        type=_selections,
        default=["greedy", "locality", "cost"],
        help="selections to compare (greedy,locality,cost)",
    )
    parser.add_argument(
        "--volunteers", type=positive_int, default=4, help="volunteers judging at once (4)"
    )
    parser.add_argument(
        "--noise",
        choices=("measured", "exact"),
        default="measured",
        help="measured (the product): careful assessors, hidden trials, judged pairs keep the "
        "disagreement measured from second opinions; exact: every answer is the truth",
    )
    parser.add_argument("--workers", type=positive_int, default=2, help="processes (2)")
    parser.add_argument(
        "--quick", action="store_true", help="small collections (8 systems x 30 queries)"
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every figure here")


def run_from_args(args: argparse.Namespace, out: TextIO) -> int:
    started = time.perf_counter()
    if args.mirex is not None and not (args.mirex / "runs.tsv").is_file():
        raise UsageError(f"--mirex {args.mirex}: no runs.tsv there")
    check_output_file("--json", args.json)
    tasks = tasks_for(args)
    if not tasks:
        raise UsageError("nothing to run: give --collections above 0 or --mirex")
    records: list[Record] = []
    for record in in_processes(run_task, tasks, args.workers):
        records.append(record)
        print(
            f"[{len(records)}/{len(tasks)} {time.perf_counter() - started:6.0f} s] "
            f"{record.collection} {record.selection} @{record.target:.2f} seed {record.seed}: "
            f"{record.hours:.1f} h, {record.judgments} judgments, {record.queries_heard} "
            f"queries, wrong {record.wrong}/{record.allowed:.1f} "
            f"({record.wrong_vs_truth} against the truth) ({record.seconds:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
    records.sort(key=lambda r: (r.target, r.kind, r.collection, r.selection, r.seed))
    summary = summarise(records, args.selections)
    print_summary(summary, out)
    seconds = time.perf_counter() - started
    print(f"\n{len(records)} campaigns in {seconds:.0f} s with {args.workers} workers", file=out)
    if args.json is not None:
        payload = {
            "settings": {
                "collections": args.collections,
                "seeds": args.seeds,
                "seed": args.seed,
                "ranges": args.ranges,
                "quick": args.quick,
                "targets": args.targets,
                "selections": args.selections,
                "volunteers": args.volunteers,
                "noise": args.noise,
                "estimator": DEFAULT_ESTIMATOR,
                "mirex": str(args.mirex) if args.mirex else None,
                "workers": args.workers,
                "volunteer_assumptions": VolunteerSetup().assumptions(),
                "quality_rate": QUALITY_RATE,
            },
            "seconds": seconds,
            "summary": summary,
            "suite": [s.as_dict() for s in args.suite],
            "records": [asdict(r) for r in records],
        }
        args.json.write_text(json.dumps(payload, indent=1))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_benchmark(argv, DESCRIPTION, add_arguments, run_from_args)


if __name__ == "__main__":
    raise SystemExit(main())
