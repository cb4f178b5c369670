"""Engine benchmark: the cost of one MTC loop iteration with the default estimator.

Usage::

    mtcjudge bench engine --json bench.json     # from a source checkout
    .venv/bin/python bench/engine.py --json bench.json [--iterations N] [--skip-large]
        [--runs R --judgments J --metadata M]

The engine is the one a campaign runs (:func:`mtcjudge.mtc.factory.engine_for_settings`) with the
default estimator of campaigns and of ``mtcjudge simulate`` (``DEFAULT_ESTIMATOR``: a
:class:`~mtcjudge.mtc.joint.SystemEffectEngine`, M_out plus error offsets learnt from the
judgments), the CG measure and confidence-weighted selection. One iteration is what a
campaign's loop does per judgment: ``judge`` (the pair's query's estimates and score
statistics, then the offsets from every judgment), the stopping check (the score
distributions with the offsets, the pair confidences) and ``select(1)`` (the selection
weights, the next pair). It is timed against a naive full recompute in the same run, on the
same collection: a copy of the engine re-estimates every pair, rebuilds every score
statistic, re-estimates the offsets and the coefficient mass they weigh from every entry,
re-evaluates every system and pair, recomputes the weights and picks. The plain engine with
the ``ordinal`` estimator (M_out and M_jud, no offsets) is timed the same way as a second row.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import resource
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

if __package__ in (None, ""):  # run as ``python bench/engine.py``: bench.* from the tree
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import mirex_or_synthetic, positive_int, run_benchmark
from mtcjudge.ingest.loader import LoadedCollection, load_synthetic
from mtcjudge.mtc.engine import MTCEngine
from mtcjudge.mtc.factory import DEFAULT_ESTIMATOR, engine_for_settings
from mtcjudge.mtc.scales import FINE
from mtcjudge.mtc.synthetic import generate

__all__ = ["DESCRIPTION", "add_arguments", "engine_benchmark", "main", "run_from_args"]

DESCRIPTION = (
    f"Median time of one loop iteration with the default estimator ({DEFAULT_ESTIMATOR}: "
    "judge, learn from the judgments, check the stop, pick the next pair) at MIREX 2011 scale and "
    "at 100 "
    "systems x 1,000 queries x k=10, against a naive full recompute measured in the same run; "
    "the plain engine with the ordinal estimator as a second row."
)

#: the measure of every case
MEASURE = "cg"
#: the second row: the plain engine with M_out and M_jud
SECOND_ESTIMATOR = "ordinal"


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _iterate(engine: MTCEngine, pair: int, value: float) -> int:
    """One judgment as a campaign's loop applies it; returns the next pair."""
    engine.judge([pair], [value])  # the estimates, then the offsets (none on the plain engine)
    engine.stop_reason()
    return int(engine.select(1)[0])


def _naive_engine(engine: MTCEngine) -> MTCEngine:
    """A copy of ``engine`` for the naive iterations, which recompute everything from scratch.

    The collection, the relevance model and the co-retrievals (fixed by the runs) are
    shared; ``reestimate`` rebuilds every statistic, a calibrated engine's ``f_A`` included
    (a full pass over every entry).
    """
    memo: dict[int, object] = {id(engine.collection): engine.collection}
    memo[id(engine.model)] = engine.model
    if engine._co is not None:
        memo[id(engine._co)] = engine._co
    return copy.deepcopy(engine, memo)


def _naive_iteration(naive: MTCEngine, pair: int, value: float) -> int:
    """The same iteration with everything recomputed from scratch; returns the next pair."""
    if not naive.judged[pair]:
        naive.n_judged += 1
    naive.judged[pair] = True
    naive.values[pair] = value
    naive.reestimate()  # every pair re-estimated, every score statistic rebuilt
    naive.learn_from_judgments()  # the offsets from every judged entry (plain engine: nothing)
    naive.stop_reason()
    return int(naive.select(1)[0])  # the weights of every pair, from the new evaluation


def _time_case(
    loaded: LoadedCollection,
    estimator: str,
    iterations: int,
    naive_iterations: int,
    out: TextIO,
    name: str,
) -> dict[str, object]:
    c = loaded.collection
    truth = loaded.judged_values
    t0 = time.perf_counter()
    engine, _ = engine_for_settings(c, loaded.metadata, FINE, estimator, measure=MEASURE)
    nxt = int(engine.select(1)[0])
    setup = time.perf_counter() - t0
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        nxt = _iterate(engine, nxt, float(truth[nxt]))
        times.append(time.perf_counter() - start)

    # the baseline computes what the engine holds: compare once, outside the timings
    naive_engine = _naive_engine(engine)
    naive_engine.reestimate()
    naive_engine.learn_from_judgments()
    check, current = naive_engine.evaluation(), engine.evaluation()
    agreement = max(
        float(np.abs(check.mean - current.mean).max()),
        float(np.abs(check.pair_confidence - current.pair_confidence).max()),
    )
    naive = []
    p = nxt
    for _ in range(naive_iterations):
        start = time.perf_counter()
        p = _naive_iteration(naive_engine, p, float(truth[p]))
        naive.append(time.perf_counter() - start)
    del naive_engine
    fig: dict[str, object] = {
        "estimator": estimator,
        "engine": type(engine).__name__,
        "systems": c.n_systems,
        "queries": c.n_queries,
        "k": c.k,
        "pool_size": c.n_pairs,
        "setup_s": setup,
        "iterations": iterations,
        "median_ms": 1e3 * statistics.median(times),
        "p95_ms": 1e3 * float(np.percentile(times, 95)),
        "naive_iterations": naive_iterations,
        "naive_median_ms": 1e3 * statistics.median(naive),
        "naive_ratio": statistics.median(naive) / statistics.median(times),
        "naive_max_abs_difference": agreement,
        "peak_mib": _peak_mib(),
    }
    out.write(
        f"{name:10s} {estimator:10s} {c.n_systems:4d} systems x {c.n_queries:5d} queries x "
        f"k={c.k:<3d} pool {c.n_pairs:>7d}: median {fig['median_ms']:8.3f} ms "
        f"(p95 {fig['p95_ms']:.3f})  naive {fig['naive_median_ms']:9.2f} ms  "
        f"ratio {fig['naive_ratio']:6.1f}x  peak {fig['peak_mib']:.0f} MiB\n"
    )
    out.flush()
    return fig


#: issue 11: one iteration with the default estimator
TARGETS = {
    "estimator": DEFAULT_ESTIMATOR,
    "mirex2011_median_ms": 2.0,
    "large_median_ms": 100.0,
    "large_peak_mib": 2048.0,
}


def _targets_met(figures: dict[str, object]) -> dict[str, bool]:
    met = {}
    small = figures["mirex2011_scale"]
    assert isinstance(small, dict)
    met["mirex2011_median_ms"] = small["median_ms"] <= TARGETS["mirex2011_median_ms"]
    large = figures.get("large_scale")
    if isinstance(large, dict):
        met["large_median_ms"] = large["median_ms"] <= TARGETS["large_median_ms"]
        met["large_peak_mib"] = large["peak_mib"] <= TARGETS["large_peak_mib"]
    return met


def engine_benchmark(
    iterations: int = 200,
    runs: Path | None = None,
    metadata: Path | None = None,
    judgments: Path | None = None,
    large: bool = True,
    out: TextIO | None = None,
) -> dict[str, object]:
    """Run the benchmark and return its figures (also printed to ``out``).

    Targets (issue 11), for the default estimator: median <= 2 ms at MIREX 2011 scale
    (18 x 100 x 5); <= 100 ms at 100 systems x 1,000 queries x k=10 with peak memory
    <= 2 GiB. ``mirex2011_scale``, ``large_scale`` and ``naive_ratio`` are the default
    estimator's; ``second_row`` holds the same figures for the plain ordinal engine.
    """
    out = out or sys.stdout
    mirex, source = mirex_or_synthetic(
        runs, metadata, judgments, judgments_for="the answers to replay"
    )
    naive_small = max(10, iterations // 4)
    small = _time_case(mirex, DEFAULT_ESTIMATOR, iterations, naive_small, out, "mirex2011")
    small_second = _time_case(mirex, SECOND_ESTIMATOR, iterations, naive_small, out, "mirex2011")
    figures: dict[str, object] = {
        "estimator": DEFAULT_ESTIMATOR,
        "mirex2011_scale": {**small, "source": source},
    }
    second: dict[str, object] = {
        "estimator": SECOND_ESTIMATOR,
        "mirex2011_scale": {**small_second, "source": source},
    }
    ratio = small["naive_ratio"]
    if large:
        del mirex
        gc.collect()
        started = time.perf_counter()
        big = load_synthetic(generate(100, 1000, 10, seed=0))
        gen_s = time.perf_counter() - started
        n_large = max(20, iterations // 4)
        large_fig = _time_case(big, DEFAULT_ESTIMATOR, n_large, 5, out, "large")
        about = {"generate_s": gen_s, "source": "synthetic 100x1000x10"}
        figures["large_scale"] = {**large_fig, **about}
        ratio = large_fig["naive_ratio"]
        second["large_scale"] = {
            **_time_case(big, SECOND_ESTIMATOR, n_large, 5, out, "large"),
            **about,
        }
    figures["naive_ratio"] = ratio
    figures["targets"] = dict(TARGETS)
    figures["targets_met"] = _targets_met(figures)
    figures["second_row"] = second
    met = figures["targets_met"]
    assert isinstance(met, dict)
    verdict = ", ".join(f"{k} {'met' if v else 'MISSED'}" for k, v in met.items())
    out.write(f"targets ({DEFAULT_ESTIMATOR}): {verdict}\n")
    return figures


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``bench/engine.py`` and ``mtcjudge bench engine``."""
    parser.add_argument(
        "--json", type=Path, metavar="FILE", help="write the figures to this JSON file"
    )
    parser.add_argument(
        "--iterations",
        type=positive_int,
        default=200,
        metavar="N",
        help="timed iterations at MIREX scale (a quarter of them at large scale)",
    )
    parser.add_argument(
        "--runs",
        type=Path,
        metavar="PATH",
        help="real runs for the MIREX-scale case (default: synthetic 18x100x5)",
    )
    parser.add_argument(
        "--metadata", type=Path, metavar="FILE", help="metadata of the --runs collection"
    )
    parser.add_argument(
        "--judgments",
        type=Path,
        metavar="FILE",
        help="FINE judgments of the --runs collection (the answers to replay)",
    )
    parser.add_argument("--skip-large", action="store_true", help="only the MIREX-scale case")


def run_from_args(args: argparse.Namespace, out: TextIO) -> int:
    figures = engine_benchmark(
        iterations=args.iterations,
        runs=args.runs,
        metadata=args.metadata,
        judgments=args.judgments,
        large=not args.skip_large,
        out=out,
    )
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_benchmark(argv, DESCRIPTION, add_arguments, run_from_args, name="engine")


if __name__ == "__main__":
    raise SystemExit(main())
