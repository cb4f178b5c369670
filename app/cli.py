"""Command line of mtcjudge.

``mtcjudge simulate`` replays the MTC loop on a fully judged collection;
``mtcjudge bench engine`` measures one loop iteration. Bad input exits with
status 2 and one line naming the file and line; nothing is half-written.
"""

from __future__ import annotations

import argparse
import errno
import json
import math
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, TextIO

import numpy as np

from app.campaigns.limits import INT_SETTINGS
from app.config import Settings
from app.ingest.formats import InputError, read_judgments, read_metadata, read_runs
from app.ingest.loader import DEFAULT_VARIOUS_ARTISTS, LoadedCollection, load_collection
from app.mtc.calibration import CALIBRATED, ESTIMATOR_CHOICES
from app.mtc.engine import STOP_RULES, EngineConfig
from app.mtc.measures import MEASURES, per_query_scores
from app.mtc.mirex import MirexAnalysis, friedman_tukey
from app.mtc.replay import ReplayConfig, ReplayResult, replay
from app.mtc.scales import get_scale
from app.mtc.selection import POLICIES
from app.validation import printable

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from app.campaigns.service import ImportReport
    from app.models import Campaign

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
        choices=ESTIMATOR_CHOICES,
        default=None,
        help="relevance estimator (default: ordinal with --metadata, else uniform; calibrated "
        "= ordinal M_out with --system-effect --no-m-jud)",
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
    load_benchmark = _load_benchmark_module()
    if load_benchmark is not None:
        load = bsub.add_parser(
            "load",
            help="simulated assessors against server processes",
            description="Start 'mtcjudge serve' on a fresh SQLite or Postgres database, create "
            "a MIREX-shaped campaign, drive simulated assessors over HTTP (stress or realistic), "
            "optionally inject a fault, then check from the database that no acknowledged "
            "judgment was lost and no pair was judged or leased twice (see bench/load.py).",
            formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        )
        load_benchmark.add_arguments(load)

    add_campaign_parsers(sub)
    add_server_parsers(sub)
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
    """Friedman + Tukey HSD on the per-query scores under complete judgments (docs/method.md §6)."""
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
            f"    {pos:4d}  {printable(loaded.systems[i]):<18} {result.estimated_means[i]:9.4f}"
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
    if model == CALIBRATED:
        model, args.system_effect, args.no_m_jud = "ordinal", True, True
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


def _load_benchmark_module() -> ModuleType | None:
    """bench/load.py of this source tree (benchmarks are not part of the installed package)."""
    import importlib.util

    from app.config import REPO_ROOT

    name = "mtcjudge_bench_load"
    if name in sys.modules:
        return sys.modules[name]
    path = REPO_ROOT / "bench" / "load.py"
    spec = importlib.util.spec_from_file_location(name, path) if path.is_file() else None
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def cmd_bench(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:  # noqa: ARG001
    from app.perf import engine_benchmark

    if args.bench == "load":
        load_benchmark = _load_benchmark_module()
        assert load_benchmark is not None  # the subcommand exists only with the module
        return int(load_benchmark.run_from_args(args, out))

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


# ---------------------------------------------------------------- campaign, assessor
_SHOWN_PROBLEMS = 10


def _int_setting(name: str) -> Callable[[str], int]:
    """The argparse type of a campaign's integer setting: an integer in its allowed range."""
    minimum, maximum = INT_SETTINGS[name]

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, found {text!r}") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(
                f"expected an integer from {minimum} to {maximum}, found {value}"
            )
        return value

    return parse


def _add_database_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        default=None,
        help="SQLAlchemy URL (default: $DATABASE_URL, else sqlite:///mtcjudge.sqlite3)",
    )


def add_campaign_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``mtcjudge campaign create|list|open|close`` and ``mtcjudge assessor invite|list``."""
    campaign = sub.add_parser(
        "campaign", help="create, list, open, close, change and follow campaigns"
    )
    csub = campaign.add_subparsers(dest="campaign_command", required=True, metavar="ACTION")
    create = csub.add_parser(
        "create",
        help="import runs (and metadata, judgments, audio) as a new campaign",
        description="Create a campaign from run files, with optional metadata, imported "
        "judgments and a directory of <doc_id>.<ext> clips (wav, flac, ogg, mp3). Missing and "
        "unreadable clips are listed. Nothing is saved when a file is wrong.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    create.add_argument("--name", required=True)
    create.add_argument(
        "--runs",
        required=True,
        type=Path,
        help="TREC run file(s) (a file or a directory) or TSV system<TAB>query<TAB>doc",
    )
    create.add_argument("--metadata", type=Path, help="TSV doc<TAB>artist<TAB>genre")
    create.add_argument("--judgments-fine", type=Path, help="FINE judgments to import (0..100)")
    create.add_argument("--judgments-broad", type=Path, help="BROAD judgments to import (0, 1, 2)")
    create.add_argument("--audio", type=Path, help="directory of <doc_id>.<ext> clips")
    create.add_argument("--slug", help="URL name (default: from --name)")
    create.add_argument("--description", default="")
    create.add_argument(
        "--scale", choices=("broad", "fine"), default="fine", help="scale the MTC loop runs on"
    )
    create.add_argument("--k", type=_int_setting("k"), default=5, help="evaluation cut-off")
    create.add_argument("--measure", choices=MEASURES, default="cg")
    create.add_argument(
        "--model",
        choices=ESTIMATOR_CHOICES,
        default="calibrated",
        help="relevance estimator (calibrated: M_out plus per-system error offsets learnt from "
        "the judgments, whose confidence held up on MIREX 2011)",
    )
    create.add_argument("--policy", choices=POLICIES, default="confidence")
    create.add_argument(
        "--target", type=_probability, default=0.95, help="ranking confidence at which to stop"
    )
    create.add_argument(
        "--lease-minutes",
        type=_int_setting("lease_minutes"),
        default=10,
        help="time to judge a handed-out pair",
    )
    create.add_argument("--judgments-per-pair", type=_int_setting("judgments_per_pair"), default=1)
    create.add_argument("--seed", type=_int_setting("seed"), default=0)
    create.add_argument(
        "--keep-collecting",
        action="store_true",
        help="keep handing out pairs once the target confidence is reached",
    )
    create.add_argument("--open", action="store_true", help="open it to assessors at once")
    _add_database_option(create)

    listing = csub.add_parser("list", help="list the campaigns")
    _add_database_option(listing)
    for action, verb in (("open", "open a campaign to assessors"), ("close", "close a campaign")):
        change = csub.add_parser(action, help=verb)
        change.add_argument("slug")
        _add_database_option(change)
    setting = csub.add_parser(
        "set", help="change a campaign's target, lease time, overlap or stopping behaviour"
    )
    setting.add_argument("slug")
    setting.add_argument("--target", type=_probability)
    setting.add_argument("--lease-minutes", type=_int_setting("lease_minutes"))
    setting.add_argument("--judgments-per-pair", type=_int_setting("judgments_per_pair"))
    collect = setting.add_mutually_exclusive_group()
    collect.add_argument(
        "--keep-collecting",
        dest="keep_collecting",
        action="store_true",
        default=None,
        help="keep handing out pairs past the target",
    )
    collect.add_argument(
        "--stop-at-target",
        dest="keep_collecting",
        action="store_false",
        help="thank assessors once the target confidence is reached",
    )
    _add_database_option(setting)
    status = csub.add_parser(
        "status", help="judgments so far, the estimated ranking and its confidence"
    )
    status.add_argument("slug")
    _add_database_option(status)

    assessor = sub.add_parser("assessor", help="invite assessors")
    asub = assessor.add_subparsers(dest="assessor_command", required=True, metavar="ACTION")
    invite = asub.add_parser("invite", help="add an assessor and print the personal link")
    invite.add_argument("--campaign", required=True, metavar="SLUG")
    invite.add_argument("--name", required=True)
    invite.add_argument("--email")
    _add_database_option(invite)
    members = asub.add_parser("list", help="list the assessors of a campaign")
    members.add_argument("--campaign", required=True, metavar="SLUG")
    _add_database_option(members)
    for action, text in (
        ("relink", "give an assessor a new personal link (the old one stops working)"),
        ("revoke", "make an assessor's link stop working (their judgments stay)"),
    ):
        change = asub.add_parser(action, help=text)
        change.add_argument("--campaign", required=True, metavar="SLUG")
        change.add_argument("--name", required=True, help="the assessor's name")
        _add_database_option(change)


@contextmanager
def _organizer_session(args: argparse.Namespace) -> Iterator[tuple[Session, Settings]]:
    """One migrated database, one transaction: committed only if the command succeeds."""
    from app.db import make_engine, make_sessionmaker, session_scope, upgrade_database

    overrides = {"database_url": args.database_url} if args.database_url else {}
    settings = Settings.from_env(**overrides)
    upgrade_database(settings.database_url)
    engine = make_engine(settings.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            yield session, settings
    finally:
        engine.dispose()


def _run_organizer_command(
    args: argparse.Namespace, err: TextIO, work: Callable[[Session, Settings], None]
) -> int:
    from sqlalchemy.exc import OperationalError

    from app.errors import DomainError

    try:
        with _organizer_session(args) as (session, settings):
            work(session, settings)
    except DomainError as exc:
        err.write(f"mtcjudge: error: {exc.message}\n")
        return 2
    except OperationalError as exc:
        err.write(f"mtcjudge: error: database: {exc.orig or exc}\n")
        return 1
    return 0


def _shown(items: list[str]) -> str:
    text = ", ".join(printable(item) for item in items[:_SHOWN_PROBLEMS])
    if len(items) > _SHOWN_PROBLEMS:
        text += f" and {len(items) - _SHOWN_PROBLEMS} more"
    return text


def format_import_report(campaign: Campaign, report: ImportReport, audio: Path | None) -> str:
    """The few lines ``campaign create`` prints (also used by ``mtcjudge demo``)."""
    lines = [
        f"created campaign {campaign.slug} ({campaign.status}): {printable(campaign.name)}",
        f"  systems x queries   {report.n_systems} x {report.n_queries}",
        f"  documents           {report.n_documents}",
        f"  results             {report.n_results}",
        f"  pool pairs          {report.n_pool_pairs} (top {campaign.k}, same-artist filtered)",
        f"  imported judgments  {report.n_judgments}",
    ]
    if report.n_judgments_ignored:
        lines[-1] += f" ({report.n_judgments_ignored} ignored: query or doc not in the runs)"
    if audio is None:
        lines.append("  audio               not scanned (no --audio directory)")
    else:
        lines.append(
            f"  audio               {report.audio_found} found, {len(report.audio_missing)} "
            f"missing, {len(report.audio_unreadable)} unreadable in {audio}"
        )
        if report.audio_missing:
            lines.append(f"    missing: {_shown(report.audio_missing)}")
        if report.audio_unreadable:
            shown = report.audio_unreadable[:_SHOWN_PROBLEMS]
            lines.append("    unreadable:")
            lines += [f"      {printable(doc)}: {printable(reason)}" for doc, reason in shown]
            if len(report.audio_unreadable) > _SHOWN_PROBLEMS:
                lines.append(f"      and {len(report.audio_unreadable) - _SHOWN_PROBLEMS} more")
        if report.audio_notes:
            lines.append(f"    several files: {_shown(report.audio_notes)}")
        if report.n_unplayable_pairs:
            lines.append(
                f"  cannot be judged    {report.n_unplayable_pairs} of {report.n_pool_pairs} "
                "pool pairs (a clip has no readable audio): assessors are not given them"
            )
    return "\n".join(lines)


def cmd_campaign(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from app.campaigns import service

    if args.campaign_command == "create":
        # read every file before touching the database: a bad line costs nothing
        runs = read_runs(args.runs)
        metadata = read_metadata(args.metadata) if args.metadata else None
        fine = read_judgments(args.judgments_fine, "fine") if args.judgments_fine else None
        broad = read_judgments(args.judgments_broad, "broad") if args.judgments_broad else None
        spec = service.CampaignSpec(
            name=args.name,
            slug=args.slug,
            description=args.description,
            scale=args.scale,
            k=args.k,
            measure=args.measure,
            estimator=args.model,
            policy=args.policy,
            target=args.target,
            lease_minutes=args.lease_minutes,
            judgments_per_pair=args.judgments_per_pair,
            seed=args.seed,
            keep_collecting=args.keep_collecting,
            status="open" if args.open else "draft",
        )

        def create(session: Session, _settings: Settings) -> None:
            campaign, report = service.create_campaign(
                session, spec, runs, metadata, fine, broad, args.audio
            )
            out.write(format_import_report(campaign, report, args.audio) + "\n")
            if campaign.status == "draft":
                out.write(f"open it to assessors with: mtcjudge campaign open {campaign.slug}\n")

        return _run_organizer_command(args, err, create)

    if args.campaign_command == "list":

        def show(session: Session, _settings: Settings) -> None:
            campaigns = service.list_campaigns(session)
            if not campaigns:
                out.write("no campaigns yet: create one with mtcjudge campaign create\n")
                return
            width = max(len(c.slug) for c in campaigns)
            out.write(f"{'SLUG':<{width}}  STATUS  SCALE  K    NAME\n")
            for c in campaigns:
                out.write(
                    f"{c.slug:<{width}}  {c.status:<6}  {c.scale:<5}  {c.k:<3}  "
                    f"{printable(c.name)}\n"
                )

        return _run_organizer_command(args, err, show)

    if args.campaign_command == "set":
        changes = {
            name: getattr(args, name)
            for name in ("target", "lease_minutes", "judgments_per_pair", "keep_collecting")
            if getattr(args, name) is not None
        }
        if not changes:
            raise UsageError("campaign set: give at least one setting to change")

        def apply(session: Session, _settings: Settings) -> None:
            campaign = service.update_campaign(
                session, service.get_campaign(session, args.slug), **changes
            )
            shown = ", ".join(f"{k.replace('_', ' ')} {getattr(campaign, k)}" for k in changes)
            out.write(f"campaign {campaign.slug}: {shown}\n")

        return _run_organizer_command(args, err, apply)

    if args.campaign_command == "status":

        def report(session: Session, _settings: Settings) -> None:
            out.write(format_campaign_status(session, service.get_campaign(session, args.slug)))

        return _run_organizer_command(args, err, report)

    new_status = {"open": "open", "close": "closed"}[args.campaign_command]

    def change(session: Session, _settings: Settings) -> None:
        from app.planner.service import unplayable_summary

        campaign = service.update_campaign(
            session, service.get_campaign(session, args.slug), status=new_status
        )
        out.write(f"campaign {campaign.slug} is {campaign.status}\n")
        if campaign.status == "open" and (problem := unplayable_summary(session, campaign)):
            out.write(f"warning: {printable(problem)}\n")

    return _run_organizer_command(args, err, change)


def format_campaign_status(session: Session, campaign: Campaign) -> str:
    """Progress and the estimated ranking of a campaign, as the engine sees it now."""
    from app.planner.build import build_engine
    from app.planner.service import unplayable_summary

    problem = unplayable_summary(session, campaign)
    state = build_engine(session, campaign)
    engine = state.engine
    ev = engine.evaluation()
    reason = engine.stop_reason()
    label = f"{MEASURE_LABELS[campaign.measure]}@{campaign.k}"
    lines = [
        f"{campaign.slug} ({campaign.status}): {campaign.scale.upper()} {label}, "
        f"{campaign.estimator} estimator, {campaign.policy} policy",
        f"  pairs judged         {engine.n_judged} of {state.n_pairs} "
        f"({100 * engine.n_judged / max(state.n_pairs, 1):.1f} %)",
        f"  ranking confidence   {ev.ranking_confidence:.4f} (target {campaign.target:.2f})",
        "  judging              "
        + (f"can stop ({reason})" if reason else "goes on")
        + (", keeps collecting" if campaign.keep_collecting else ""),
        *([f"  cannot be judged     {printable(problem)}"] if problem else []),
        "",
        f"    rank  system              {label:>9}   95% interval",
    ]
    for pos, i in enumerate(ev.ranking(), 1):
        lines.append(
            f"    {pos:4d}  {printable(state.system_names[i]):<18} {ev.mean[i]:9.4f}   "
            f"[{ev.ci_low[i]:.4f}, {ev.ci_high[i]:.4f}]"
        )
    return "\n".join(lines) + "\n"


def cmd_assessor(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from app.campaigns import repository, service

    if args.assessor_command == "invite":

        def invite(session: Session, settings: Settings) -> None:
            campaign = service.get_campaign(session, args.campaign)
            assessor, token = service.invite_assessor(session, campaign, args.name, args.email)
            out.write(
                f"invited {printable(assessor.name)} to {campaign.slug}; their personal link "
                "(shown only now: keep it, or make a new one with 'assessor relink'):\n"
            )
            out.write(service.assessor_link(settings, token) + "\n")

        return _run_organizer_command(args, err, invite)

    if args.assessor_command in ("relink", "revoke"):

        def change_link(session: Session, settings: Settings) -> None:
            campaign = service.get_campaign(session, args.campaign)
            assessor = service.find_assessor(session, campaign, args.name)
            if args.assessor_command == "revoke":
                service.revoke_link(session, assessor)
                out.write(f"the link of {printable(assessor.name)} no longer works\n")
                return
            token = service.reissue_link(session, assessor)
            out.write(
                f"new personal link of {printable(assessor.name)} (the old one no longer works):\n"
            )
            out.write(service.assessor_link(settings, token) + "\n")

        return _run_organizer_command(args, err, change_link)

    def members(session: Session, _settings: Settings) -> None:
        campaign = service.get_campaign(session, args.campaign)
        for assessor in repository.assessors_of(session, campaign.id):
            state = (
                "revoked"
                if assessor.revoked_at
                else "consented"
                if assessor.consented_at
                else "invited"
            )
            email = f" <{printable(assessor.email)}>" if assessor.email else ""
            out.write(f"{printable(assessor.name)}{email}  {state}\n")

    return _run_organizer_command(args, err, members)


# ---------------------------------------------------------------- demo, serve
DEFAULT_DEMO_DIR = Path("mtcjudge-demo")


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, found {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port between 1 and 65535, found {value}")
    return value


def add_server_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``mtcjudge demo`` and ``mtcjudge serve``."""
    demo = sub.add_parser(
        "demo",
        help="set up a demo campaign with synthetic clips and serve it",
        description="Create (or reuse) the campaign 'demo': 6 systems from 3 teams, 10 "
        "queries, top 5, with synthesised clips in DATA_DIR/audio and two invited "
        "volunteers, in the SQLite database DATA_DIR/mtcjudge.sqlite3 (or $DATABASE_URL). "
        "Print the organizer information and the assessor links, then serve the app. "
        "Running it again reuses everything.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    demo.add_argument(
        "--data-dir", type=Path, default=DEFAULT_DEMO_DIR, help="database and audio directory"
    )
    _add_listen_options(demo)
    demo.add_argument(
        "--no-serve", action="store_true", help="set up and print the links, then exit"
    )
    serve = sub.add_parser(
        "serve",
        help="run the web application",
        description="Apply the database migrations, then serve the app with uvicorn. Other "
        "settings come from the environment: MTCJUDGE_BASE_URL (links; default "
        "http://HOST:PORT), MTCJUDGE_ORGANIZER_TOKEN, MTCJUDGE_MAX_IMPORT_BYTES.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    _add_listen_options(serve)
    _add_database_option(serve)
    serve.add_argument(
        "--workers",
        type=_positive_int,
        default=os.environ.get("MTCJUDGE_WORKERS") or "1",  # a string: argparse checks it
        help="worker processes sharing the listening socket (they share nothing else: state "
        "lives in the database); MTCJUDGE_WORKERS sets the default",
    )


def _add_listen_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=_port, default=8000, help="port to listen on")


def _server_settings(host: str, port: int, database_url: str | None) -> Settings:
    overrides: dict[str, object] = {"database_url": database_url} if database_url else {}
    if not os.environ.get("MTCJUDGE_BASE_URL"):
        # links must reach this server; a wildcard address is not one to click on
        shown = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host
        shown = f"[{shown}]" if ":" in shown else shown
        overrides["base_url"] = f"http://{shown}:{port}"
    return Settings.from_env(**overrides)


def _listen(host: str, port: int) -> socket.socket:
    """Bind the server's socket now, so a taken port fails before any work (exit status 2).

    uvicorn then serves on this very socket: nothing can take the port in between.
    """
    try:
        family, kind, proto, _name, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise UsageError(f"--host: cannot listen on {host!r}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    # as uvicorn does: a port left in TIME_WAIT by a previous run is free
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(
                f"port {port} on {host} is already in use (is mtcjudge already running?); "
                "stop that program or choose another port with --port"
            ) from None
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def _serve(settings: Settings, sock: socket.socket) -> None:
    import uvicorn

    from app.main import create_app

    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="info"))
    server.run(sockets=[sock])


def _serve_workers(settings: Settings, sock: socket.socket, workers: int) -> None:
    """``workers`` uvicorn processes accepting on one socket; uvicorn replaces any that dies.

    Workers are spawned fresh and build their app with ``create_app()`` from the environment,
    so the settings this process resolved from its options are exported first.
    """
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    os.environ["DATABASE_URL"] = settings.database_url
    os.environ["MTCJUDGE_BASE_URL"] = settings.base_url
    config = uvicorn.Config(
        "app.main:create_app",
        factory=True,
        workers=workers,
        log_level="info",
        # a worker answers the supervisor's pings only once it has imported the app (numpy,
        # scipy: seconds on a busy machine); uvicorn's 5 s would kill and respawn it in a loop
        timeout_worker_healthcheck=60,
    )
    Multiprocess(config, sockets=[sock]).run()


def _database_failure(err: TextIO, exc: Exception) -> int:
    err.write(f"mtcjudge: error: database: {getattr(exc, 'orig', None) or exc}\n")
    return 1


def cmd_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from sqlalchemy.exc import OperationalError

    from app.demo.setup import ensure_demo
    from app.errors import DomainError

    data_dir = args.data_dir.expanduser().resolve()
    database_url = os.environ.get("DATABASE_URL") or f"sqlite:///{data_dir / 'mtcjudge.sqlite3'}"
    settings = _server_settings(args.host, args.port, database_url)
    sock = None if args.no_serve else _listen(args.host, args.port)
    try:
        try:
            info = ensure_demo(database_url, data_dir, settings=settings)
        except OperationalError as exc:
            return _database_failure(err, exc)
        except DomainError as exc:
            err.write(f"mtcjudge: error: {exc.message}\n")
            return 2
        action = "created" if info.created else "reused"
        clips = f"{info.audio_written} clips written" if info.audio_written else "clips in place"
        out.write(
            f"mtcjudge demo: {action} campaign {info.campaign_slug!r} in {data_dir} "
            f"({clips} in {data_dir / 'audio'})\n\nOrganizer\n"
        )
        out.write("".join(f"  {line}\n" for line in info.organizer_hint.splitlines()))
        out.write("\nAssessor links (one per volunteer, each a personal login):\n")
        width = max((len(name) for name in info.assessor_names), default=0)
        for name, link in zip(info.assessor_names, info.assessor_links, strict=True):
            out.write(f"  {name:<{width}}  {link}\n")
        if sock is None:
            out.write(f"\nstart the server with: mtcjudge demo --data-dir {data_dir}\n")
            return 0
        out.write(f"\nserving on {settings.base_url} (Ctrl+C to stop)\n")
        out.flush()
        _serve(settings, sock)
        return 0
    finally:
        if sock is not None:
            sock.close()


def cmd_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from sqlalchemy.exc import OperationalError

    from app.db import upgrade_database

    settings = _server_settings(args.host, args.port, args.database_url)
    sock = _listen(args.host, args.port)
    try:
        try:
            upgrade_database(settings.database_url)
        except OperationalError as exc:
            return _database_failure(err, exc)
        shown = f", {args.workers} workers" if args.workers > 1 else ""
        out.write(f"mtcjudge serve: {settings.base_url}{shown} (Ctrl+C to stop)\n")
        out.flush()
        if args.workers > 1:
            _serve_workers(settings, sock, args.workers)
        else:
            _serve(settings, sock)
        return 0
    finally:
        sock.close()


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
        if args.command == "campaign":
            return cmd_campaign(args, out, err)
        if args.command == "assessor":
            return cmd_assessor(args, out, err)
        if args.command == "demo":
            return cmd_demo(args, out, err)
        if args.command == "serve":
            return cmd_serve(args, out, err)
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
