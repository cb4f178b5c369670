"""Is the shape of the claimed distributions right? Sign errors against claims, in replays.

A pair confidence ``C_AB`` is a claim about the distribution of the error of the estimated
difference ``S_A - S_B``: the engine takes it normal (or t) with the variance its model
gives. ``bench/calibration.py`` checks the claims at the stop; this benchmark checks their
shape. It replays an estimator on suite collections (and MIREX 2011 with ``--mirex``), and
at about 60 checkpoints along each replay and at the ``--target`` stop it records, for every
system pair, ``z = |E[S_A - S_B]| / sd`` and whether the estimated order is wrong. Then it
prints, per bin of the claimed error probability ``P = 1 - Phi(z)``:

- the pairs wrong, against the number a normal distribution of the model's variance
  expects (``sum P``), and the number a t distribution with ``nu`` degrees of freedom scaled
  to the same variance expects (``sum 1 - F_nu(z sqrt(nu / (nu - 2)))``): heavier tails at
  the same variance put fewer errors in the middle and more at the top;
- the median and mean of the squared standardised errors of the differences (0.455 and 1
  for a normal of the right variance);
- the common factor on every variance that would make the normal claims fit the sign errors
  best (maximum likelihood): below 1, the claims are careful; above 1, over-confident.

It is a diagnosis, not a change of the claim: docs/calibration.md ("How much of the effort is the
stop's") reports what a heavier-tailed claim did on collections it was not read from.

    python bench/claim_shape.py --collections 16 --seed 1 --estimator joint
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from scipy import optimize, special

if __package__ in (None, ""):  # run as ``python bench/claim_shape.py``: bench.* from the tree
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.calibration import SELECTIONS, Task, _load, tasks_for
from bench.experiments.synthetic_zoo import RANGE_SETS
from mtcjudge.cli.common import UsageError, check_output_file
from mtcjudge.mtc.factory import DEFAULT_ESTIMATOR, ESTIMATOR_CHOICES, engine_for_settings
from mtcjudge.mtc.measures import evaluate
from mtcjudge.mtc.scales import get_scale

#: claimed error probabilities ``1 - Phi(z)``, bin edges
BINS = (0.0, 0.002, 0.01, 0.05, 0.1, 0.2, 0.5)
#: degrees of freedom of the heavier-tailed shapes compared
SHAPES = (3, 4, 6, 10)
#: checkpoints per replay (besides the stop)
CHECKPOINTS = 60

DESCRIPTION = "Sign errors against the claimed distributions' shape, in replays."


@dataclass
class Points:
    """Every system pair at every checkpoint of one replay."""

    collection: str
    z: np.ndarray  # |E| / sd (inf where the difference is known)
    z_error: np.ndarray  # (true - E) / sd, signed
    wrong: np.ndarray  # bool
    at_stop: np.ndarray  # bool: the checkpoint is the target's stop


def replay(task: Task, target: float) -> Points:
    """Replay ``task`` to its ``target`` stop, recording every system pair at checkpoints."""
    name, measure, scale_name, loaded = _load(task)
    scale = get_scale(scale_name)
    collection, truth = loaded.collection, loaded.judged_values
    true_means = evaluate(collection, truth, np.zeros_like(truth), measure, scale).mean
    engine, _ = engine_for_settings(
        collection, loaded.metadata, scale, task.estimator, measure=measure, target=target
    )
    batch = max(1, math.ceil(collection.n_pairs / task.selections)) if task.selections else 1
    step = max(1, collection.n_pairs // CHECKPOINTS)
    iu = np.triu_indices(collection.n_systems, 1)
    true_diff = (true_means[:, None] - true_means[None, :])[iu]
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, bool]] = []
    next_point = 0
    while True:
        evaluation = engine.evaluation()
        stop = engine.n_unjudged == 0 or (
            engine.n_judged >= engine.config.min_judgments
            and evaluation.ranking_confidence >= target
        )
        if engine.n_judged >= next_point or stop:
            next_point = engine.n_judged + step
            mean = evaluation.diff_mean[iu]
            sd = np.sqrt(evaluation.diff_var[iu])
            with np.errstate(divide="ignore", invalid="ignore"):
                z = np.where(sd > 0, np.abs(mean) / sd, np.inf)
                z_error = np.where(sd > 0, (true_diff - mean) / sd, 0.0)
            wrong = np.sign(mean) != np.sign(true_diff)
            parts.append((z, z_error, wrong, stop))
        if stop:
            break
        pairs = engine.select(min(batch, engine.n_unjudged))
        engine.judge(pairs, truth[pairs])
    return Points(
        collection=name,
        z=np.concatenate([p[0] for p in parts]),
        z_error=np.concatenate([p[1] for p in parts]),
        wrong=np.concatenate([p[2] for p in parts]),
        at_stop=np.concatenate([np.full(p[0].size, p[3]) for p in parts]),
    )


def heavy_tail_error(z: np.ndarray, nu: float) -> np.ndarray:
    """``1 - F_nu(z sqrt(nu / (nu - 2)))``: the error probability a t with ``nu`` degrees of
    freedom scaled to unit variance gives a difference ``z`` standard deviations from 0."""
    return np.asarray(special.stdtr(nu, -z * math.sqrt(nu / (nu - 2.0))), dtype=np.float64)


def common_factor(z: np.ndarray, wrong: np.ndarray) -> float:
    """The factor ``f`` on every variance that makes the normal claims ``Phi(-z / sqrt f)``
    most likely to have given the sign errors ``wrong`` (maximum likelihood)."""
    keep = np.isfinite(z)
    z, wrong = z[keep], wrong[keep]
    if z.size == 0:
        return float("nan")

    def loss(log_f: float) -> float:
        p = np.clip(special.ndtr(-z / math.exp(log_f / 2.0)), 1e-12, 1 - 1e-12)
        return float(-(np.log(p[wrong]).sum() + np.log1p(-p[~wrong]).sum()))

    found = optimize.minimize_scalar(loss, bounds=(-5.0, 5.0), method="bounded")
    return math.exp(float(found.x))


def shape_table(z: np.ndarray, z_error: np.ndarray, wrong: np.ndarray) -> dict[str, Any]:
    """Wrong pairs per bin of the claimed (normal) error probability, against what the
    normal and the heavier-tailed shapes of the same variance expect."""
    claimed = np.asarray(special.ndtr(-z), dtype=np.float64)  # 0 where z is infinite
    index = np.searchsorted(BINS, claimed, side="right") - 1
    uncertain = np.isfinite(z) & (index >= 0) & (index < len(BINS) - 1)
    rows = []
    for b in range(len(BINS) - 1):
        mask = uncertain & (index == b)
        rows.append(
            {
                "low": BINS[b],
                "high": BINS[b + 1],
                "pairs": int(mask.sum()),
                "wrong": int(wrong[mask].sum()),
                "normal": float(claimed[mask].sum()),
                **{f"t{nu}": float(heavy_tail_error(z[mask], nu).sum()) for nu in SHAPES},
            }
        )
    squares = z_error[uncertain] ** 2
    return {
        "pairs": int(uncertain.sum()),
        "median_z2": float(np.median(squares)) if squares.size else None,
        "mean_z2": float(squares.mean()) if squares.size else None,
        "common_factor": common_factor(z[uncertain], wrong[uncertain]),
        "bins": rows,
    }


def print_table(label: str, table: dict[str, Any], out: TextIO) -> None:
    median = table["median_z2"]
    mean = table["mean_z2"]
    out.write(
        f"\n{label}: {table['pairs']} uncertain system pairs; squared standardised errors "
        f"median {median if median is None else round(median, 3)} (normal 0.455), mean "
        f"{mean if mean is None else round(mean, 3)} (1); "
        f"best common variance factor {table['common_factor']:.2f}\n"
    )
    shapes = "".join(f"  t{nu} same var" for nu in SHAPES)
    out.write(f"  claimed error       pairs  wrong   normal{shapes}\n")
    for row in table["bins"]:
        heavy = "".join(f"  {row[f't{nu}']:11.1f}" for nu in SHAPES)
        out.write(
            f"  {row['low']:.3f}-{row['high']:.3f}  {row['pairs']:8d} {row['wrong']:6d} "
            f"{row['normal']:8.1f}{heavy}\n"
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--collections", type=int, default=16, help="suite collections (16)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the suite (1)")
    parser.add_argument(
        "--ranges",
        choices=list(RANGE_SETS),
        default="issue11",
        help="the suite's ranges: issue11 (suites 0 and 1, the default) or issue23 (the third)",
    )
    parser.add_argument(
        "--mirex", type=Path, metavar="DIR", help="also MIREX 2011 FINE under the four measures"
    )
    parser.add_argument(
        "--estimator",
        choices=ESTIMATOR_CHOICES,
        default=DEFAULT_ESTIMATOR,
        help=f"({DEFAULT_ESTIMATOR})",
    )
    parser.add_argument("--target", type=float, default=0.95, help="stop (0.95)")
    parser.add_argument("--workers", type=int, default=2, help="processes (2)")
    parser.add_argument("--quick", action="store_true", help="small collections: a smoke run")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the tables here")


def run_from_args(args: argparse.Namespace, out: TextIO) -> int:
    started = time.perf_counter()
    if args.collections < 0 or args.workers < 1:
        raise UsageError("--collections must be at least 0 and --workers at least 1")
    if not 0.5 < args.target < 1.0:
        raise UsageError(f"--target must be between 0.5 and 1, got {args.target}")
    if args.mirex is not None and not (args.mirex / "runs.tsv").is_file():
        raise UsageError(f"--mirex {args.mirex}: no runs.tsv there")
    check_output_file("--json", args.json)
    namespace = argparse.Namespace(
        collections=args.collections,
        seed=args.seed,
        ranges=args.ranges,
        quick=args.quick,
        estimator=[args.estimator],
        policy="confidence",
        selections=SELECTIONS,
        to_complete=False,
        mirex=args.mirex,
        blends=0,
    )
    tasks = tasks_for(namespace)
    if not tasks:
        raise UsageError("nothing to replay: give --collections or --mirex")
    targets = [args.target] * len(tasks)
    if args.workers > 1 and len(tasks) > 1:
        with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
            points = pool.starmap(replay, zip(tasks, targets, strict=True))
    else:
        points = [replay(task, args.target) for task in tasks]
    z = np.concatenate([p.z for p in points])
    z_error = np.concatenate([p.z_error for p in points])
    wrong = np.concatenate([p.wrong for p in points])
    at_stop = np.concatenate([p.at_stop for p in points])
    tables = {
        "trajectory": shape_table(z, z_error, wrong),
        "stop": shape_table(z[at_stop], z_error[at_stop], wrong[at_stop]),
    }
    out.write(
        f"{args.estimator}: {len(points)} replays to the {args.target} stop "
        f"({time.perf_counter() - started:.0f} s)\n"
    )
    print_table("whole trajectories", tables["trajectory"], out)
    print_table(f"at the {args.target} stops", tables["stop"], out)
    if args.json is not None:
        settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
        settings.pop("run", None)
        payload = {"settings": settings, "collections": [p.collection for p in points], **tables}
        args.json.write_text(json.dumps(payload, indent=1))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    add_arguments(parser)
    try:
        return run_from_args(parser.parse_args(argv), sys.stdout)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
