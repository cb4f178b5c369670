"""Is the claimed confidence honest? Every estimator replayed on a suite of collections.

Usage::

    nice .venv/bin/python bench/calibration.py --collections 32 --mirex $MIREX2011 \\
        --json calibration.json --plot docs/calibration-plot.png

For every collection of the calibration suite
(:func:`bench.experiments.synthetic_zoo.suite_settings`: sizes, teams, weak systems,
judgment effects, heavy tails and metadata errors drawn from documented ranges; the measure
and scale cycle with the collection's index) and, with
``--mirex DIR``, MIREX 2011 FINE under each of CG, DCG, nDCG and RBP, each estimator the
project ships is replayed with the engine a campaign builds
(:func:`mtcjudge.mtc.factory.engine_for_settings`, confidence-weighted selection), judging with
the true scores, until the ranking confidence reaches the highest target (0.99). Selection
does not depend on the target (the [U12] weights use the fixed ``confident`` level, the
minimum of judgments is the same), so the stop at a lower target is read exactly from the
same trajectory: the first point where ``n_judged >= min_judgments`` and the confidence is
at least the target (or nothing is left to judge).

At each stop the claimed confidence of every system pair is compared with the true order
(complete judgments; true ties counted strictly, :func:`mtcjudge.mtc.replay.correct_signs`).
Reported per estimator and target: pooled wrong pairs against what the target allows
(``sum (1 - target) x pairs``) and against the claimed pair confidences
(``sum (1 - pair confidence)``), mean accuracy against mean claimed confidence, the share of
collections below their claim, effort against the uniform prior on the same collections, and
the *frontier* (the first point from which the true accuracy stays at or above the target
until the end of the replay: the 0.99 stop, or the complete pool with ``--to-complete``)
beside the stop. ``--plot`` draws the calibration plot.

``--ranges issue23`` replays the third suite (closer systems, weaker metadata, heavier
tails) instead of the ranges of suites 0 and 1, ``--ranges packed`` the fourth (MIREX 2011's
sizes, systems packed within hundredths, metadata that predicts little, results shared
across teams); ``--target T`` reads a further stop between
0.5 and 0.99 from the same replays.

Figures are printed, never asserted (docs/calibration.md has the measured ones).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

if __package__ in (None, ""):  # run as ``python bench/calibration.py``: bench.* from the tree
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import TARGETS, in_processes, non_negative_int, positive_int, run_benchmark
from bench.experiments.mirex_blends import BlendSettings, blend_settings, blended_collection
from bench.experiments.synthetic_zoo import (
    RANGE_SETS,
    ZooSettings,
    generate_zoo,
    smoke_sized,
    suite_settings,
)
from bench.experiments.variants import ONE_KAPPA_ERRORS, OneKappaEngine, build_engine_with_errors
from mtcjudge.cli.common import UsageError, check_output_file
from mtcjudge.ingest.formats import read_judgments, read_metadata, read_runs
from mtcjudge.ingest.loader import LoadedCollection, load_collection, load_synthetic
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.factory import ESTIMATOR_CHOICES, build_engine
from mtcjudge.mtc.joint import ErrorModel, SystemEffectEngine
from mtcjudge.mtc.measures import MEASURES, evaluate
from mtcjudge.mtc.replay import correct_signs, true_ties
from mtcjudge.mtc.scales import Scale, get_scale
from mtcjudge.mtc.selection import POLICIES

__all__ = [
    "DESCRIPTION",
    "Record",
    "add_arguments",
    "main",
    "pooled",
    "run_from_args",
    "suite_from_json",
]

DESCRIPTION = (
    "Replay every estimator on a suite of synthetic collections (and MIREX 2011 with --mirex) "
    "to the 0.99 target and compare the claimed confidence at the stops for 0.90/0.95/0.99 "
    "with the true accuracy: pooled wrong vs expected pairs, effort vs uniform, frontier."
)
#: the calibration plot's bins of claimed pair confidence ([T] Table 8.4)
BINS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0)
BASELINE = "uniform"
#: default for --selections: pairs are judged one per selection up to this pool size, then
#: ceil(pool / this) per selection, as a campaign's planner hands out several (docs/calibration.md)
SELECTIONS = 4000
#: bench-only estimator variants: (the estimator they start from, the error model they give
#: it, the engine that learns it, bench/experiments/variants.py); each is an experiment of
#: docs/experiments/, not something a campaign can name
VARIANTS: dict[str, tuple[str, ErrorModel, type[SystemEffectEngine]]] = {
    # joint before its variance strata (one κ; docs/experiments/2026-11-27-packed-suite.md)
    "joint-one-kappa": ("joint", ONE_KAPPA_ERRORS, OneKappaEngine),
}


@dataclass
class Stop:
    """The state when the stopping rule for one target first held."""

    target: float
    judgments: int
    confidence: float  # claimed ranking confidence (mean pair confidence)
    accuracy: float
    pairs: int
    wrong: int
    wrong_ties: int  # wrong pairs that are true ties
    expected_claimed: float  # sum over pairs of (1 - claimed pair confidence)
    frontier: int | None  # judgments from which accuracy stays >= target (None: never)
    bins_count: list[int]
    bins_correct: list[int]
    bins_confidence: list[float]


@dataclass
class Record:
    """One estimator on one collection."""

    collection: str
    kind: str  # "suite" or "mirex"
    estimator: str
    measure: str
    scale: str
    n_systems: int
    n_queries: int
    k: int
    pool: int
    true_ties: int
    batch: int
    min_judgments: int
    seconds: float
    stops: list[Stop]
    to_complete: bool = False
    trajectory_count: list[int] = field(default_factory=list)
    trajectory_correct: list[int] = field(default_factory=list)
    trajectory_confidence: list[float] = field(default_factory=list)
    curve: list[tuple[int, float, float]] = field(default_factory=list)

    def stop(self, target: float) -> Stop:
        return next(s for s in self.stops if abs(s.target - target) < 1e-9)


# ---------------------------------------------------------------------------- collections
@dataclass(frozen=True)
class Task:
    """One replay to run: a collection (suite settings or MIREX measure) and an estimator."""

    estimator: str
    policy: str
    settings: ZooSettings | None = None
    mirex: str | None = None  # directory
    measure: str = "cg"
    selections: int = SELECTIONS  # 0: one pair per selection whatever the pool
    to_complete: bool = False  # judge on past the 0.99 stop until the pool is complete
    targets: tuple[float, ...] = TARGETS  # the stops read from the replay (0.99 the highest)
    blend: BlendSettings | None = None  # a blended MIREX collection (with ``mirex``)

    @property
    def kind(self) -> str:
        """ "suite", "blend" or "mirex": the group its record is summed in."""
        if self.settings is not None:
            return "suite"
        return "blend" if self.blend is not None else "mirex"

    @property
    def cost(self) -> float:
        """Rough relative cost, to start the long replays first."""
        if self.settings is None:
            return 18 * 18 * 100 * 5.0
        s = self.settings
        return float(s.n_systems**2 * s.n_queries * s.k)


def load_mirex(directory: Path) -> LoadedCollection:
    runs = read_runs(directory / "runs.tsv")
    judgments = read_judgments(directory / "judgments-fine.tsv", "fine")
    metadata = read_metadata(directory / "metadata.tsv")
    return load_collection(runs, 5, metadata, judgments)


def _load(task: Task) -> tuple[str, str, str, LoadedCollection]:
    """(name, measure, scale, loaded collection) of a task."""
    if task.settings is not None:
        zoo = generate_zoo(task.settings)
        loaded = load_synthetic(zoo.collection, task.settings.scale)
        return task.settings.name, task.settings.measure, task.settings.scale, loaded
    assert task.mirex is not None
    if task.blend is not None:
        loaded = blended_collection(Path(task.mirex), task.blend)
        return task.blend.name, task.blend.measure, "fine", loaded
    return f"mirex2011 ({task.measure})", task.measure, "fine", load_mirex(Path(task.mirex))


# ---------------------------------------------------------------------------- one replay
def _bin_index(confidence: np.ndarray) -> np.ndarray:
    """Bin of each confidence in :data:`BINS` (the last bin is closed)."""
    return np.clip(np.searchsorted(BINS, confidence, side="right") - 1, 0, len(BINS) - 2)


def _histogram(
    confidence: np.ndarray, correct: np.ndarray
) -> tuple[list[int], list[int], list[float]]:
    index = _bin_index(confidence)
    n = len(BINS) - 1
    count = np.bincount(index, minlength=n)
    right = np.bincount(index, weights=correct.astype(np.float64), minlength=n)
    conf = np.bincount(index, weights=confidence, minlength=n)
    return count.tolist(), [round(x) for x in right.tolist()], conf.tolist()


def _met(engine: MTCEngine, confidence: float, target: float) -> bool:
    """The engine's stopping rule for ``target`` (the confidence scenario)."""
    if engine.n_unjudged == 0:
        return True
    return engine.n_judged >= engine.config.min_judgments and confidence >= target


def frontier(judgments: Sequence[int], accuracy: Sequence[float], target: float) -> int | None:
    """Judgments from which the accuracy stays at or above ``target`` to the end, or None."""
    found: int | None = None
    for n, acc in zip(reversed(judgments), reversed(accuracy), strict=True):
        if acc < target:
            break
        found = n
    return found


def _task_engine(task: Task, loaded: LoadedCollection, scale: Scale, measure: str) -> MTCEngine:
    """The engine of the task's estimator (a campaign's, or a bench variant's,
    :data:`VARIANTS`), with the campaigns' settings and the highest target."""
    config = EngineConfig(measure=measure, policy=task.policy, target=max(TARGETS))
    collection = loaded.collection
    engine: MTCEngine
    if task.estimator not in VARIANTS:
        engine, _ = build_engine(collection, loaded.metadata, scale, task.estimator, config)
        return engine
    base, errors, engine_class = VARIANTS[task.estimator]
    engine, _ = build_engine_with_errors(
        collection, loaded.metadata, scale, base, config, errors=errors, engine_class=engine_class
    )
    return engine


def _stops(
    pending: dict[float, dict[str, Any]], curve: list[tuple[int, float, float]]
) -> list[Stop]:
    """The :class:`Stop` of every target, from the state noted when it was first met and the
    replay's curve of (judgments, confidence, accuracy)."""
    judged = [c[0] for c in curve]
    accuracies = [c[2] for c in curve]
    return [
        Stop(
            target=t,
            judgments=p["judgments"],
            confidence=p["confidence"],
            accuracy=p["accuracy"],
            pairs=p["pairs"],
            wrong=p["wrong"],
            wrong_ties=p["wrong_ties"],
            expected_claimed=p["expected_claimed"],
            frontier=frontier(judged, accuracies, t),
            bins_count=p["hist"][0],
            bins_correct=p["hist"][1],
            bins_confidence=p["hist"][2],
        )
        for t, p in sorted(pending.items())
    ]


def run_task(task: Task) -> Record:
    started = time.perf_counter()
    name, measure, scale_name, loaded = _load(task)
    scale = get_scale(scale_name)
    collection, truth = loaded.collection, loaded.judged_values
    true_means = evaluate(collection, truth, np.zeros_like(truth), measure, scale).mean
    ties = true_ties(true_means)
    engine = _task_engine(task, loaded, scale, measure)
    batch = max(1, math.ceil(collection.n_pairs / task.selections)) if task.selections else 1
    n_bins = len(BINS) - 1
    traj_count = np.zeros(n_bins, dtype=np.int64)
    traj_right = np.zeros(n_bins)
    traj_conf = np.zeros(n_bins)
    curve: list[tuple[int, float, float]] = []
    pending: dict[float, dict[str, Any]] = {}
    iu = np.triu_indices(collection.n_systems, 1)
    while True:
        evaluation = engine.evaluation()
        conf = evaluation.pair_confidence[iu]
        correct = correct_signs(evaluation.mean, true_means)
        accuracy = float(correct.mean()) if correct.size else 1.0
        curve.append((engine.n_judged, evaluation.ranking_confidence, accuracy))
        count, right, confsum = _histogram(conf, correct)
        traj_count += count
        traj_right += right
        traj_conf += confsum
        for target in task.targets:
            if target not in pending and _met(engine, evaluation.ranking_confidence, target):
                pending[target] = {
                    "judgments": engine.n_judged,
                    "confidence": evaluation.ranking_confidence,
                    "accuracy": accuracy,
                    "pairs": int(correct.size),
                    "wrong": int((~correct).sum()),
                    "wrong_ties": int((~correct & ties).sum()),
                    "expected_claimed": float((1.0 - conf).sum()),
                    "hist": (count, right, confsum),
                }
        if len(pending) == len(task.targets) and (not task.to_complete or engine.n_unjudged == 0):
            break
        pairs = engine.select(min(batch, engine.n_unjudged))
        engine.judge(pairs, truth[pairs])
    stops = _stops(pending, curve)
    # keep the curve light: about 200 points
    every = max(1, len(curve) // 200)
    return Record(
        collection=name,
        kind=task.kind,
        estimator=task.estimator,
        measure=measure,
        scale=scale_name,
        n_systems=collection.n_systems,
        n_queries=collection.n_queries,
        k=collection.k,
        pool=collection.n_pairs,
        true_ties=int(ties.sum()),
        batch=batch,
        to_complete=task.to_complete,
        min_judgments=engine.config.min_judgments,
        seconds=time.perf_counter() - started,
        stops=stops,
        trajectory_count=traj_count.tolist(),
        trajectory_correct=[round(x) for x in traj_right.tolist()],
        trajectory_confidence=traj_conf.tolist(),
        curve=curve[::every] + ([curve[-1]] if (len(curve) - 1) % every else []),
    )


# ---------------------------------------------------------------------------- summaries
def pooled(records: Sequence[Record], target: float) -> dict[str, Any]:
    """Pooled figures of one estimator's records at one target (docs/calibration.md)."""
    stops = [r.stop(target) for r in records]
    pairs = sum(s.pairs for s in stops)
    return {
        "collections": len(stops),
        "pairs": pairs,
        "wrong": sum(s.wrong for s in stops),
        "wrong_ties": sum(s.wrong_ties for s in stops),
        "expected_target": (1.0 - target) * pairs,
        "expected_claimed": sum(s.expected_claimed for s in stops),
        "pooled_accuracy": 1.0 - sum(s.wrong for s in stops) / pairs if pairs else None,
        "mean_accuracy": statistics.fmean(s.accuracy for s in stops) if stops else None,
        "mean_confidence": statistics.fmean(s.confidence for s in stops) if stops else None,
        "below_claim": sum(s.accuracy < s.confidence for s in stops) / len(stops)
        if stops
        else None,
        "below_target": sum(s.accuracy < target for s in stops) / len(stops) if stops else None,
        "judgments": sum(s.judgments for s in stops),
        "pool": sum(r.pool for r in records),
        "median_stop_fraction": statistics.median(
            s.judgments / r.pool for s, r in zip(stops, records, strict=True)
        )
        if stops
        else None,
        "frontier_reached": sum(s.frontier is not None for s in stops),
        # a collection whose accuracy never settles at the target counts as beyond every
        # other (infinite); the median is None when that is where it falls
        "median_frontier_fraction": _finite_or_none(
            statistics.median(
                math.inf if s.frontier is None else s.frontier / r.pool
                for s, r in zip(stops, records, strict=True)
            )
        )
        if stops
        else None,
        "stops_before_frontier": sum(s.frontier is None or s.judgments < s.frontier for s in stops),
    }


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def effort(
    records: Sequence[Record], baseline: Sequence[Record], target: float
) -> dict[str, float | None]:
    """Judgments against the baseline's on the same collections: ratio of sums, median ratio."""
    base = {r.collection: r.stop(target).judgments for r in baseline}
    paired = [
        (r.stop(target).judgments, base[r.collection]) for r in records if r.collection in base
    ]
    if not paired:
        return {"ratio_of_sums": None, "median_ratio": None}
    total = sum(b for _, b in paired)
    ratios = [a / b for a, b in paired if b > 0]
    return {
        "ratio_of_sums": sum(a for a, _ in paired) / total if total else None,
        "median_ratio": statistics.median(ratios) if ratios else None,
    }


def calibration_bins(records: Sequence[Record], target: float | None) -> list[dict[str, Any]]:
    """Pooled bins of claimed pair confidence with observed accuracy (None: whole trajectory)."""
    n = len(BINS) - 1
    count, right, conf = np.zeros(n), np.zeros(n), np.zeros(n)
    for r in records:
        if target is None:
            count += r.trajectory_count
            right += r.trajectory_correct
            conf += r.trajectory_confidence
        else:
            s = r.stop(target)
            count += s.bins_count
            right += s.bins_correct
            conf += s.bins_confidence
    return [
        {
            "low": lo,
            "high": hi,
            "count": int(c),
            "accuracy": float(a / c) if c else None,
            "mean_confidence": float(m / c) if c else None,
        }
        for lo, hi, c, a, m in zip(BINS[:-1], BINS[1:], count, right, conf, strict=True)
    ]


def summarise(
    records: Sequence[Record], estimators: Sequence[str], targets: Sequence[float] = TARGETS
) -> dict[str, Any]:
    groups: dict[str, list[Record]] = {
        "suite": [r for r in records if r.kind == "suite"],
        "mirex": [r for r in records if r.kind == "mirex"],
        "blend": [r for r in records if r.kind == "blend"],
        # both kinds together, when there are both
        "all": list(records) if len({r.kind for r in records}) > 1 else [],
    }
    result: dict[str, Any] = {}
    for group, members in groups.items():
        if not members:
            continue
        per: dict[str, Any] = {}
        for estimator in estimators:
            mine = [r for r in members if r.estimator == estimator]
            if not mine:
                continue
            base = [r for r in members if r.estimator == BASELINE]
            per[estimator] = {
                f"{t:.2f}": {**pooled(mine, t), "effort_vs_uniform": effort(mine, base, t)}
                for t in targets
            }
        result[group] = per
    result["calibration_bins"] = {
        estimator: {
            "trajectory": calibration_bins([r for r in records if r.estimator == estimator], None),
            **{
                f"stop {t:.2f}": calibration_bins(
                    [r for r in records if r.estimator == estimator], t
                )
                for t in targets
            },
        }
        for estimator in estimators
        if any(r.estimator == estimator for r in records)
    }
    return result


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def print_table(summary: dict[str, Any], out: TextIO) -> None:
    titles = {
        "suite": "calibration suite",
        "mirex": "MIREX 2011 FINE",
        "blend": "blended MIREX 2011 (real runs and judgments, systems closer together)",
        "all": "all collections",
    }
    for group in ("suite", "mirex", "blend", "all"):
        per = summary.get(group)
        if not per:
            continue
        print(f"\n{titles[group]}", file=out)
        print(
            f"  {'estimator':<11}{'target':>6} {'n':>3} {'wrong/allowed':>15} {'/claimed':>9} "
            f"{'acc':>6} {'conf':>6} {'<claim':>6} {'effort':>6} {'vs unif':>13} "
            f"{'stop':>6} {'frontier':>9}",
            file=out,
        )
        for estimator, targets in per.items():
            for t, p in targets.items():
                e = p["effort_vs_uniform"]
                print(
                    f"  {estimator:<11}{t:>6} {p['collections']:>3} "
                    f"{p['wrong']:>6}/{p['expected_target']:>8.1f} "
                    f"{p['expected_claimed']:>9.1f} "
                    f"{_fmt(p['mean_accuracy'])} {_fmt(p['mean_confidence'])} "
                    f"{_fmt(p['below_claim'], '6.2f')} "
                    f"{p['judgments'] / p['pool']:6.3f} "
                    f"{_fmt(e['ratio_of_sums'], '6.2f')}/{_fmt(e['median_ratio'], '6.2f')} "
                    f"{_fmt(p['median_stop_fraction'], '6.3f')} "
                    f"{_fmt(p['median_frontier_fraction'], '6.3f'):>6}"
                    f"({p['frontier_reached']})",
                    file=out,
                )
    print(
        "\n  wrong/allowed: wrong pairs at the stop / sum (1 - target) x pairs; /claimed: sum "
        "(1 - claimed pair confidence);\n  acc, conf: mean accuracy and claimed confidence; "
        "<claim: share of collections below their claim;\n  effort: judged share of the pooled "
        "pools; vs unif: ratio of sums / median ratio of judgments against uniform;\n  stop, "
        "frontier: median share of the pool at the stop and where accuracy reaches the target "
        "and stays (collections where it does)",
        file=out,
    )


def plot_calibration(summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (("trajectory", "whole trajectories"), ("stop 0.95", "at the stop, target 0.95"))
    fig, axes = plt.subplots(1, len(panels), figsize=(11, 5), sharey=True)
    for ax, (key, title) in zip(axes, panels, strict=True):
        ax.plot([0.5, 1.0], [0.5, 1.0], color="grey", linestyle="--", linewidth=1, label="honest")
        for estimator, bins in summary["calibration_bins"].items():
            pts = [(b["mean_confidence"], b["accuracy"]) for b in bins[key] if b["count"]]
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.plot(xs, ys, marker="o", label=estimator)
        ax.set_title(f"Claimed vs observed, {title}")
        ax.set_xlabel("claimed pair confidence (bin mean)")
        ax.set_xlim(0.5, 1.0)
        ax.set_ylim(0.2, 1.0)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("share of pairs ordered right")
    axes[0].legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------- command line
def targets_of(args: argparse.Namespace) -> tuple[float, ...]:
    """0.90, 0.95, 0.99 and the further ``--target`` values, in increasing order."""
    return tuple(sorted({*TARGETS, *(getattr(args, "target", None) or [])}))


def tasks_for(args: argparse.Namespace) -> list[Task]:
    settings = suite_settings(args.collections, args.seed, args.ranges)
    if args.quick:
        settings = [smoke_sized(s, 6, 20) for s in settings]
    args.suite = settings
    # every collection, suite or MIREX, with every estimator and the same loop settings
    collections: list[dict[str, Any]] = [{"settings": s} for s in settings]
    if args.mirex is not None:
        collections += [{"mirex": str(args.mirex), "measure": m} for m in MEASURES]
    if getattr(args, "blends", 0):
        if args.mirex is None:
            raise UsageError("--blends needs --mirex DIR (the blends are made of its runs)")
        args.blend_suite = blend_settings(args.blends, args.seed)
        collections += [
            {"mirex": str(args.mirex), "blend": b, "measure": b.measure} for b in args.blend_suite
        ]
    tasks = [
        Task(
            estimator,
            args.policy,
            selections=args.selections,
            to_complete=args.to_complete,
            targets=targets_of(args),
            **collection,
        )
        for collection in collections
        for estimator in args.estimator
    ]
    return sorted(tasks, key=lambda t: -t.cost)


def suite_from_json(payload: dict[str, Any]) -> list[ZooSettings]:
    """The suite settings a ``--json`` file was run with, to regenerate its collections."""
    return [ZooSettings(**s) for s in payload["suite"]]


def record_json(r: Record) -> dict[str, Any]:
    return dataclasses.asdict(r)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--collections",
        type=non_negative_int,
        default=32,
        help="suite collections (32: each measure on each scale 4 times)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the suite (0)")
    parser.add_argument(
        "--ranges",
        choices=list(RANGE_SETS),
        default="issue11",
        help="the ranges the suite is drawn from: issue11 (suites 0 and 1, the default), "
        "issue23 (the third suite: closer systems, weaker metadata, heavier tails) or packed "
        "(the fourth: MIREX-sized, systems within hundredths, results shared across teams)",
    )
    parser.add_argument(
        "--mirex", type=Path, metavar="DIR", help="MIREX 2011 AMS directory (runs.tsv, ...)"
    )
    parser.add_argument(
        "--blends",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="also replay N blended MIREX 2011 collections (needs --mirex: 18 blends of the "
        "real runs, closer together, with weaker metadata)",
    )
    parser.add_argument(
        "--estimator",
        action="append",
        choices=[*ESTIMATOR_CHOICES, *VARIANTS],
        help="estimator to replay (repeatable; default: all of them); the variants "
        f"{', '.join(VARIANTS)} are bench-only experiments that no campaign runs",
    )
    parser.add_argument("--policy", choices=POLICIES, default="confidence", help="(confidence)")
    parser.add_argument(
        "--selections",
        type=non_negative_int,
        default=SELECTIONS,
        metavar="N",
        help=f"selections per replay at most: larger pools judge ceil(pool / N) pairs per "
        f"selection ({SELECTIONS}; 0 = always one pair, slower on large pools)",
    )
    parser.add_argument(
        "--to-complete",
        action="store_true",
        help="judge on after the 0.99 stop until every pair is judged, so that the frontier "
        "(accuracy reaches the target and stays) is known for 0.99 too (slower)",
    )
    parser.add_argument(
        "--target",
        type=_between_target,
        action="append",
        metavar="T",
        help="a further target (repeatable), above 0.5 and below 0.99, whose stops are read "
        "from the same replays as 0.90, 0.95 and 0.99 (selection does not depend on the target)",
    )
    parser.add_argument("--workers", type=positive_int, default=2, help="processes (2)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small collections (6 systems x 20 queries): a smoke run",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every figure here")
    parser.add_argument(
        "--plot", type=Path, metavar="FILE", help="calibration plot (.png; needs [plot])"
    )


def _between_target(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text}") from None
    if not 0.5 < value < max(TARGETS):
        raise argparse.ArgumentTypeError(
            f"expected a target above 0.5 and below {max(TARGETS)}, got {text}"
        )
    return value


def run_from_args(args: argparse.Namespace, out: TextIO) -> int:
    started = time.perf_counter()
    args.estimator = args.estimator or list(ESTIMATOR_CHOICES)
    args.targets = targets_of(args)
    # every check that can fail is made before replays that take minutes
    if args.mirex is not None and not (args.mirex / "runs.tsv").is_file():
        raise UsageError(f"--mirex {args.mirex}: no runs.tsv there")
    check_output_file("--json", args.json)
    check_output_file("--plot", args.plot, (".png", ".svg"))
    if args.plot is not None:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise UsageError("--plot needs matplotlib: pip install 'mtcjudge[plot]'")
    tasks = tasks_for(args)
    records: list[Record] = []
    done = 0

    def report(record: Record) -> None:
        nonlocal done
        done += 1
        stops = ", ".join(
            f"{s.target:.2f}: {s.judgments} acc {s.accuracy:.3f} conf {s.confidence:.3f}"
            for s in record.stops
        )
        print(
            f"[{done}/{len(tasks)} {time.perf_counter() - started:6.0f} s] {record.collection} "
            f"{record.estimator}: pool {record.pool}, {stops} ({record.seconds:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
        records.append(record)

    for record in in_processes(run_task, tasks, args.workers):
        report(record)
    records.sort(key=lambda r: (r.kind, r.collection, args.estimator.index(r.estimator)))
    summary = summarise(records, args.estimator, args.targets)
    print_table(summary, out)
    seconds = time.perf_counter() - started
    print(f"\n{len(records)} replays in {seconds:.0f} s with {args.workers} workers", file=out)
    if args.plot is not None:
        plot_calibration(summary, args.plot)
    if args.json is not None:
        payload = {
            "settings": {
                "collections": args.collections,
                "seed": args.seed,
                "ranges": args.ranges,
                "quick": args.quick,
                "policy": args.policy,
                "estimators": args.estimator,
                "targets": list(args.targets),
                "selections": args.selections,
                "to_complete": args.to_complete,
                "mirex": str(args.mirex) if args.mirex else None,
                "blends": args.blends,
                "workers": args.workers,
            },
            "seconds": seconds,
            "summary": summary,
            "suite": [s.as_dict() for s in args.suite],
            "blends": [b.as_dict() for b in getattr(args, "blend_suite", [])],
            "records": [record_json(r) for r in records],
        }
        args.json.write_text(json.dumps(payload, indent=1))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_benchmark(argv, DESCRIPTION, add_arguments, run_from_args)


if __name__ == "__main__":
    raise SystemExit(main())
