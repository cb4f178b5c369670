"""Command line of mtcjudge.

``mtcjudge simulate`` replays the MTC loop on a fully judged collection;
``mtcjudge bench engine`` measures one loop iteration. Bad input exits with
status 2 and one line naming the file and line; nothing is half-written.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from app.ingest.formats import InputError, read_judgments, read_metadata, read_runs
from app.ingest.loader import DEFAULT_VARIOUS_ARTISTS, LoadedCollection, load_collection
from app.mtc.engine import STOP_RULES, EngineConfig
from app.mtc.estimators import ESTIMATOR_KINDS
from app.mtc.measures import MEASURES, per_query_scores
from app.mtc.mirex import MirexAnalysis, friedman_tukey
from app.mtc.replay import ReplayConfig, ReplayResult, replay
from app.mtc.scales import get_scale
from app.mtc.selection import POLICIES

__all__ = ["main"]

MEASURE_LABELS = {"cg": "CG_l", "dcg": "DCG_l", "ndcg": "nDCG_l", "rbp": "RBP_l"}


class UsageError(Exception):
    """A problem with the command line or its input files (exit status 2)."""


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, found {text!r}") from None
    if not 0.5 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a confidence between 0.5 and 1, found {value}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, found {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, found {value}")
    return value


def _non_negative_int(text: str) -> int:
    if text == "0":
        return 0
    return _positive_int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mtcjudge",
        description="Minimal Test Collections for Audio Music Similarity evaluation.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = sub.add_parser(
        "simulate",
        help="replay the MTC loop on a fully judged collection",
        description=(
            "Replay the MTC loop on a fully judged collection: judge the pairs the engine asks "
            "for, reading the answers from --judgments, until the stopping rule holds; report "
            "the effort and how accurate the ranking was at the stop."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    sim.add_argument(
        "--runs",
        required=True,
        type=Path,
        help="TREC run file(s) (a file or a directory) or TSV system<TAB>query<TAB>doc",
    )
    sim.add_argument(
        "--judgments",
        required=True,
        type=Path,
        help="TREC qrels or TSV query<TAB>doc<TAB>score, covering every run pair",
    )
    sim.add_argument("--metadata", type=Path, help="TSV doc<TAB>artist<TAB>genre")
    sim.add_argument("--k", type=_positive_int, default=5, help="evaluation cut-off")
    sim.add_argument("--scale", choices=("broad", "fine"), default="fine")
    sim.add_argument("--measure", choices=MEASURES, default="cg")
    sim.add_argument(
        "--model",
        choices=ESTIMATOR_KINDS,
        default=None,
        help="relevance estimator (default: ordinal with --metadata, else uniform)",
    )
    sim.add_argument("--policy", choices=POLICIES, default="confidence")
    sim.add_argument(
        "--target", type=_probability, default=0.95, help="ranking confidence at which to stop"
    )
    sim.add_argument(
        "--confident",
        type=_probability,
        default=None,
        help="pairs this sure leave the confidence weights (default 0.99)",
    )
    sim.add_argument(
        "--distribution",
        choices=("t", "normal"),
        default="t",
        help="t with n_Q-1 df ([T]) or the normal ([U12])",
    )
    sim.add_argument("--stop", choices=STOP_RULES, default="confidence")
    sim.add_argument(
        "--batch",
        type=_positive_int,
        default=1,
        help="pairs judged per round (N concurrent assessors)",
    )
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--max-judgments", type=_positive_int, default=None)
    sim.add_argument(
        "--calibrate-variance",
        action="store_true",
        help="inflate estimator variances by their observed error",
    )
    sim.add_argument(
        "--system-effect",
        action="store_true",
        help="learn a per-system offset of the estimation errors from the judged pairs and "
        "account for it (honest confidence; see docs/replay-mirex2011.md)",
    )
    sim.add_argument(
        "--no-m-jud",
        action="store_true",
        help="with --model ordinal, keep M_out throughout instead of switching to M_jud",
    )
    sim.add_argument(
        "--refit-every",
        type=_non_negative_int,
        default=0,
        help="refit the ordinal models every N judgments (0 = never)",
    )
    sim.add_argument(
        "--no-artist-filter",
        action="store_true",
        help="keep results by the query's artist (MIREX removes them)",
    )
    sim.add_argument(
        "--various-artists",
        action="append",
        default=None,
        metavar="ID",
        help="artist id that links nothing (repeatable; default: "
        + ", ".join(sorted(DEFAULT_VARIOUS_ARTISTS))
        + ")",
    )
    sim.add_argument("--json", type=Path, help="write every figure to this JSON file")
    sim.add_argument("--plot", type=Path, help="draw confidence and accuracy (.png or .svg)")
    sim.add_argument("--quiet", action="store_true", help="no progress bar")

    syn = sub.add_parser(
        "synthetic",
        help="write a synthetic, fully judged AMS collection",
        description="Write a seeded synthetic collection (runs.tsv, judgments-fine.tsv, "
        "judgments-broad.tsv, metadata.tsv) with MIREX-like structure, to try simulate on.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    syn.add_argument("directory", type=Path)
    syn.add_argument("--systems", type=_positive_int, default=18)
    syn.add_argument("--queries", type=_positive_int, default=100)
    syn.add_argument("--k", type=_positive_int, default=5)
    syn.add_argument("--seed", type=int, default=0)

    bench = sub.add_parser("bench", help="benchmarks")
    bsub = bench.add_subparsers(dest="bench", required=True, metavar="BENCHMARK")
    eng = bsub.add_parser(
        "engine",
        help="time one MTC loop iteration",
        description="Median time of one loop iteration (apply a judgment, update, pick the next "
        "pair) at MIREX 2011 scale and at 100 systems x 1,000 queries x k=10, against a naive "
        "full recompute measured in the same run.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    eng.add_argument("--json", type=Path, help="write the figures to this JSON file")
    eng.add_argument(
        "--iterations",
        type=_positive_int,
        default=200,
        help="timed iterations at MIREX scale (a quarter of them at large scale)",
    )
    eng.add_argument(
        "--runs", type=Path, help="real runs for the MIREX-scale case (default: synthetic 18x100x5)"
    )
    eng.add_argument("--metadata", type=Path)
    eng.add_argument("--judgments", type=Path)
    eng.add_argument("--skip-large", action="store_true", help="only the MIREX-scale case")
    return parser


# ---------------------------------------------------------------- simulate
def load_inputs(args: argparse.Namespace) -> LoadedCollection:
    """Read and validate the three files; raise InputError naming the culprit."""
    for name in ("runs", "judgments", "metadata"):
        path = getattr(args, name, None)
        if path is not None and not Path(path).exists():
            raise InputError(str(path), None, f"--{name}: no such file or directory")
    runs = read_runs(args.runs)
    judgments = read_judgments(args.judgments, args.scale)
    metadata = read_metadata(args.metadata) if args.metadata else None
    various = args.various_artists if args.various_artists else DEFAULT_VARIOUS_ARTISTS
    loaded = load_collection(
        runs,
        args.k,
        metadata,
        judgments,
        filter_same_artist=not args.no_artist_filter,
        various_artists=various,
    )
    missing = [p for p in range(loaded.collection.n_pairs) if math.isnan(loaded.judged_values[p])]
    if missing:
        shown = ", ".join("query {} doc {}".format(*loaded.pair_ids(p)) for p in missing[:3])
        more = ", ..." if len(missing) > 3 else ""
        raise InputError(
            str(args.judgments),
            None,
            f"{len(missing)} run pairs have no judgment in the top {args.k} "
            f"(first: {shown}{more}); simulate needs a fully judged collection",
        )
    return loaded


class ProgressBar:
    """A one-line progress bar on a terminal; sparse lines when not a terminal."""

    def __init__(self, stream: TextIO, total: int, target: float, enabled: bool) -> None:
        self.stream = stream
        self.total = total
        self.target = target
        self.enabled = enabled
        self.tty = stream.isatty()
        self.started = time.perf_counter()
        self.last = 0.0

    def __call__(self, judged: int, confidence: float) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.last < (0.1 if self.tty else 5.0):
            return
        self.last = now
        done = min(1.0, max(0.0, (confidence - 0.5) / max(self.target - 0.5, 1e-9)))
        width = 30
        bar = "#" * int(done * width) + "-" * (width - int(done * width))
        line = (
            f"[{bar}] confidence {confidence:.4f}/{self.target:.2f}  "
            f"judged {judged}/{self.total}  {now - self.started:.1f}s"
        )
        if self.tty:
            self.stream.write("\r" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty and self.last:
            self.stream.write("\n")
            self.stream.flush()


def mirex_analysis(loaded: LoadedCollection, args: argparse.Namespace) -> MirexAnalysis:
    """Friedman + Tukey HSD on the per-query scores under complete judgments (MTC-SPEC 6)."""
    scores = per_query_scores(
        loaded.collection, loaded.judged_values, args.measure, get_scale(args.scale)
    )
    return friedman_tukey(scores)


def format_summary(
    result: ReplayResult,
    loaded: LoadedCollection,
    args: argparse.Namespace,
    model: str,
    mirex: MirexAnalysis,
) -> str:
    label = f"{MEASURE_LABELS[args.measure]}@{args.k}"
    lines = [
        f"mtcjudge simulate: {args.scale.upper()}, {label}, model {model}, "
        f"policy {args.policy}, target {args.target:.2f}",
        f"  systems x queries        {loaded.collection.n_systems} x {loaded.collection.n_queries}",
        f"  pool size                {result.pool_size}",
        f"  judgments to target      {result.judgments_to_target} "
        f"({100 * result.fraction_judged:.1f} %)",
        f"  stopped because          {result.stop_reason}",
        f"  confidence at 0 / stop   {result.initial_confidence:.4f} / "
        f"{result.final_confidence:.4f}",
        f"  sign accuracy            {result.sign_accuracy:.4f}",
        f"  Kendall tau              {result.kendall_tau:.4f}",
        f"  mean abs error           {result.mean_abs_error:.4f}",
        f"  RMSE of differences      {result.rmse_difference:.4f}",
        f"  replay time              {result.seconds:.2f} s",
        "",
        "  calibration at the stop (pairs binned by confidence)",
        "    bin           pairs  accuracy  mean conf",
    ]
    for b in result.calibration:
        acc = "     -" if b.count == 0 else f"{b.accuracy:9.3f}"
        conf = "      -" if b.count == 0 else f"{b.mean_confidence:10.3f}"
        close = "]" if b.high == 1.0 else ")"
        lines.append(f"    [{b.low:.2f}, {b.high:.2f}{close}  {b.count:5d} {acc} {conf}")
    ns = len(loaded.systems)
    n_sig = int(mirex.significant[np.triu_indices(ns, 1)].sum())
    lines += [
        "",
        "  MIREX analysis under complete judgments (Friedman + Tukey HSD on per-query scores)",
        f"    Friedman chi2 {mirex.chi2:.2f}, df {mirex.df}, p {mirex.p_value:.3g}; "
        f"{n_sig} of {ns * (ns - 1) // 2} pairs significantly different at "
        f"{mirex.alpha:.2f}",
        "",
        "  ranking (estimated at the stop vs complete judgments)",
        "    rank  system              estimated   true",
    ]
    order = sorted(range(ns), key=lambda i: -result.estimated_means[i])
    for pos, i in enumerate(order, 1):
        lines.append(
            f"    {pos:4d}  {loaded.systems[i]:<18} {result.estimated_means[i]:9.4f}"
            f"  {result.true_means[i]:.4f}"
        )
    return "\n".join(lines)


def plot_replay(result: ReplayResult, path: Path, title: str, target: float) -> None:
    """Confidence and accuracy against judgments, as Figures 2-3 of [U12]."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [t.judgments for t in result.trajectory]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    ax.plot(
        xs,
        [t.ranking_confidence for t in result.trajectory],
        label="ranking confidence",
        color="#1f77b4",
    )
    ax.plot(
        xs,
        [t.sign_accuracy for t in result.trajectory],
        label="sign accuracy",
        color="#d62728",
        alpha=0.8,
    )
    ax.axhline(target, color="grey", ls="--", lw=0.8, label=f"target {target:.2f}")
    ax.axvline(result.judgments_to_target, color="grey", ls=":", lw=0.8)
    ax.set_xlabel("judgments")
    ax.set_ylabel("proportion")
    ax.set_ylim(0.45, 1.01)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def cmd_simulate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.plot is not None and args.plot.suffix.lower() not in (".png", ".svg"):
        raise UsageError(f"--plot: expected a .png or .svg file name, found {args.plot}")
    loaded = load_inputs(args)
    model = args.model or ("ordinal" if args.metadata else "uniform")
    if model == "ordinal" and args.metadata is None:
        err.write(
            "mtcjudge: note: --model ordinal without --metadata falls back to the "
            "historical prior where M_jud does not apply\n"
        )
    scale = get_scale(args.scale)
    config = ReplayConfig(
        engine=EngineConfig(
            measure=args.measure,
            policy=args.policy,
            target=args.target,
            confident=args.confident,
            distribution=args.distribution,
            stop=args.stop,
        ),
        model=model,
        batch=args.batch,
        seed=args.seed,
        max_judgments=args.max_judgments,
        calibrate_variance=args.calibrate_variance,
        refit_every=args.refit_every,
        system_effect=args.system_effect,
        use_m_jud=not args.no_m_jud,
    )
    bar = ProgressBar(err, loaded.collection.n_pairs, args.target, not args.quiet)
    try:
        result = replay(
            loaded.collection, loaded.metadata, loaded.judged_values, scale, config, progress=bar
        )
    finally:
        bar.close()
    mirex = mirex_analysis(loaded, args)
    out.write(format_summary(result, loaded, args, model, mirex) + "\n")
    if args.json is not None:
        payload = {
            "settings": {
                "runs": str(args.runs),
                "judgments": str(args.judgments),
                "metadata": str(args.metadata) if args.metadata else None,
                "k": args.k,
                "scale": args.scale,
                "measure": args.measure,
                "model": model,
                "policy": args.policy,
                "target": args.target,
                "batch": args.batch,
                "seed": args.seed,
                "distribution": args.distribution,
                "confident": config.engine.confident_level,
                "calibrate_variance": args.calibrate_variance,
                "refit_every": args.refit_every,
                "system_effect": args.system_effect,
                "m_jud": not args.no_m_jud,
            },
            **result.summary(),
            "mirex_analysis": {
                "friedman_chi2": mirex.chi2,
                "df": mirex.df,
                "p_value": mirex.p_value,
                "tukey_critical_difference": mirex.critical_difference,
                "significant_pairs": [
                    [loaded.systems[i], loaded.systems[j]]
                    for i, j in zip(*np.nonzero(np.triu(mirex.significant, 1)), strict=True)
                ],
            },
            "systems": [
                {
                    "system": s,
                    "estimated": float(result.estimated_means[i]),
                    "true": float(result.true_means[i]),
                }
                for i, s in enumerate(loaded.systems)
            ],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    if args.plot is not None:
        title = (
            f"MTC replay: {args.scale.upper()} {MEASURE_LABELS[args.measure]}@{args.k}, "
            f"{model}, {args.policy}"
        )
        plot_replay(result, args.plot, title, args.target)
    return 0


def cmd_synthetic(args: argparse.Namespace, out: TextIO) -> int:
    from app.mtc.synthetic import generate

    if args.systems < 2:
        raise UsageError(f"--systems: at least 2 systems are needed, found {args.systems}")
    args.directory.mkdir(parents=True, exist_ok=True)
    paths = generate(args.systems, args.queries, args.k, seed=args.seed).write(args.directory)
    for name, path in paths.items():
        out.write(f"{name:16s} {path}\n")
    return 0


def cmd_bench(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:  # noqa: ARG001
    from app.perf import engine_benchmark

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


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "simulate":
            return cmd_simulate(args, out, err)
        if args.command == "synthetic":
            return cmd_synthetic(args, out)
        return cmd_bench(args, out, err)
    except (InputError, UsageError) as exc:
        err.write(f"mtcjudge: error: {exc}\n")
        return 2
    except OSError as exc:
        err.write(f"mtcjudge: error: {exc.filename or ''}: {exc.strerror or exc}\n")
        return 2
    except ValueError as exc:
        err.write(f"mtcjudge: error: {exc}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
