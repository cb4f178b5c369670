"""Engine benchmark: the cost of one MTC loop iteration.

Usage::

    mtcjudge bench engine --json bench.json     # from a source checkout
    .venv/bin/python bench/engine.py --json bench.json [--iterations N] [--skip-large]
        [--runs R --judgments J --metadata M]

One iteration = apply one judgment, update the estimates (M_jud), the score
distributions and pair confidences, compute the selection weights and pick the
next pair. It is timed for the incremental engine and for a naive full
recompute (re-estimate every pair, re-evaluate every system and pair from
scratch, recompute the weights) in the same run, on the same collection.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
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

from app.ingest.formats import read_judgments, read_metadata, read_runs
from app.ingest.loader import LoadedCollection, load_collection, load_synthetic
from app.mtc.engine import EngineConfig, MTCEngine
from app.mtc.estimators import RelevanceModel
from app.mtc.measures import evaluate
from app.mtc.scales import FINE
from app.mtc.selection import best_pairs, confidence_weights
from app.mtc.synthetic import generate

__all__ = ["DESCRIPTION", "add_arguments", "engine_benchmark", "main", "run_from_args"]

DESCRIPTION = (
    "Median time of one loop iteration (apply a judgment, update, pick the next pair) at "
    "MIREX 2011 scale and at 100 systems x 1,000 queries x k=10, against a naive full "
    "recompute measured in the same run."
)


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _time_case(
    loaded: LoadedCollection, iterations: int, naive_iterations: int, out: TextIO, name: str
) -> dict[str, float]:
    c = loaded.collection
    truth = loaded.judged_values
    model = RelevanceModel(c, FINE, "ordinal", loaded.metadata)
    t0 = time.perf_counter()
    engine = MTCEngine(c, model, EngineConfig(measure="cg", policy="confidence"))
    nxt = engine.select(1)
    setup = time.perf_counter() - t0
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        p = int(nxt[0])
        engine.judge([p], [truth[p]])
        nxt = engine.select(1)
        times.append(time.perf_counter() - start)

    # naive: the same iteration with everything recomputed from scratch
    judged = engine.judged.copy()
    values = engine.values.copy()
    co = engine._co
    naive = []
    p = int(nxt[0])
    for _ in range(naive_iterations):
        start = time.perf_counter()
        judged[p] = True
        values[p] = truth[p]
        mean, var, _ = model.estimate_all(judged, values)
        ev = evaluate(c, mean, var, "cg", FINE)
        w = confidence_weights(
            c, engine.coef, ev.pair_confidence, engine.config.confident_level, co
        )
        p = int(best_pairs(w, ~judged, var, c.mean_rank, c.pair_query, 1)[0])
        naive.append(time.perf_counter() - start)
    fig = {
        "systems": c.n_systems,
        "queries": c.n_queries,
        "k": c.k,
        "pool_size": c.n_pairs,
        "setup_s": setup,
        "iterations": iterations,
        "median_ms": 1e3 * statistics.median(times),
        "p95_ms": 1e3 * float(np.percentile(times, 95)),
        "naive_median_ms": 1e3 * statistics.median(naive),
        "naive_ratio": statistics.median(naive) / statistics.median(times),
        "peak_mib": _peak_mib(),
    }
    out.write(
        f"{name:14s} {fig['systems']:4d} systems x {fig['queries']:5d} queries x k={fig['k']:<3d}"
        f" pool {fig['pool_size']:>7d}: median {fig['median_ms']:8.3f} ms "
        f"(p95 {fig['p95_ms']:.3f})  naive {fig['naive_median_ms']:9.2f} ms  "
        f"ratio {fig['naive_ratio']:6.1f}x  peak {fig['peak_mib']:.0f} MiB\n"
    )
    out.flush()
    return fig


def engine_benchmark(
    iterations: int = 200,
    runs: Path | None = None,
    metadata: Path | None = None,
    judgments: Path | None = None,
    large: bool = True,
    out: TextIO | None = None,
) -> dict[str, object]:
    """Run the benchmark and return its figures (also printed to ``out``).

    Targets (issue 2): median <= 2 ms at MIREX 2011 scale (18 x 100 x 5);
    <= 100 ms at 100 systems x 1,000 queries x k=10 with peak memory <= 2 GiB.
    """
    out = out or sys.stdout
    if runs is not None:
        if judgments is None:
            raise ValueError("--runs needs --judgments (the answers to replay)")
        mirex = load_collection(
            read_runs(runs),
            5,
            read_metadata(metadata) if metadata else None,
            read_judgments(judgments, "fine"),
        )
        source = str(runs)
    else:
        mirex = load_synthetic(generate(18, 100, 5, seed=0))
        source = "synthetic 18x100x5"
    small = _time_case(mirex, iterations, max(10, iterations // 4), out, "mirex2011")
    figures: dict[str, object] = {"mirex2011_scale": {**small, "source": source}}
    ratio = small["naive_ratio"]
    if large:
        del mirex
        gc.collect()
        started = time.perf_counter()
        big = load_synthetic(generate(100, 1000, 10, seed=0))
        gen_s = time.perf_counter() - started
        large_fig = _time_case(big, max(20, iterations // 4), 5, out, "large")
        figures["large_scale"] = {
            **large_fig,
            "generate_s": gen_s,
            "source": "synthetic 100x1000x10",
        }
        ratio = large_fig["naive_ratio"]
    figures["naive_ratio"] = ratio
    figures["targets"] = {
        "mirex2011_median_ms": 2.0,
        "large_median_ms": 100.0,
        "large_peak_mib": 2048.0,
    }
    return figures


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, found {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``bench/engine.py`` and ``mtcjudge bench engine``."""
    parser.add_argument(
        "--json", type=Path, metavar="FILE", help="write the figures to this JSON file"
    )
    parser.add_argument(
        "--iterations",
        type=_positive_int,
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
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_from_args(args, sys.stdout)
    except ValueError as exc:
        sys.stderr.write(f"engine: error: {exc}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
