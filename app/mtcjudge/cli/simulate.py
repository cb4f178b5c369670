"""``mtcjudge simulate`` (replay the MTC loop on a judged collection) and ``mtcjudge synthetic``.

Every check that can fail is done before the replay: options, output files, then the input
files (one line naming the file and line, exit status 2); nothing is half-written.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
from pathlib import Path
from typing import TextIO

from mtcjudge.cli.common import (
    SubParsers,
    UsageError,
    add_parser,
    check_output_file,
    confidence,
    integer,
)
from mtcjudge.cli.docs import doc_link
from mtcjudge.cli.progress import ProgressBar
from mtcjudge.cli.run_order import add_order_by, warn_score_order
from mtcjudge.cli.simulate_report import format_summary, metadata_coverage, mirex_analysis, payload
from mtcjudge.ingest.formats import InputError, read_judgments, read_metadata, read_runs
from mtcjudge.ingest.loader import DEFAULT_VARIOUS_ARTISTS, LoadedCollection, load_collection
from mtcjudge.mtc.engine import STOP_RULES, EngineConfig
from mtcjudge.mtc.factory import CALIBRATED, DEFAULT_ESTIMATOR, ESTIMATOR_CHOICES, JOINT
from mtcjudge.mtc.measures import MEASURE_TITLES, MEASURES
from mtcjudge.mtc.replay import ReplayConfig, replay
from mtcjudge.mtc.scales import get_scale
from mtcjudge.mtc.selection import POLICIES
from mtcjudge.mtc.volunteers import SELECTIONS, VolunteerRun, VolunteerSetup, replay_volunteers

__all__ = ["register"]

_PLOT_SUFFIXES = (".png", ".svg")


def register(sub: SubParsers) -> None:
    _add_simulate(sub)
    _add_synthetic(sub)


def _add_simulate(sub: SubParsers) -> None:
    sim = add_parser(
        sub,
        "simulate",
        "replay the MTC loop on a fully judged collection",
        description=(
            "Replay the MTC loop on a fully judged collection: judge the pairs the engine asks "
            "for, reading the answers from --judgments, until the stopping rule holds; report "
            "the effort and how accurate the ranking was at the stop."
        ),
    )
    _add_collection(sim)
    _add_engine(sim)
    _add_replay(sim)
    sim.add_argument(
        "--json", type=Path, metavar="FILE", help="write every figure to this JSON file"
    )
    sim.add_argument(
        "--plot",
        type=Path,
        metavar="FILE",
        help="draw confidence and accuracy against judgments (.png or .svg)",
    )
    sim.add_argument("--quiet", action="store_true", help="no progress on stderr")
    sim.set_defaults(run=run_simulate)


def _add_collection(sim: argparse.ArgumentParser) -> None:
    """The judged collection the loop is replayed on, and how it is measured."""
    sim.add_argument(
        "--runs",
        required=True,
        type=Path,
        metavar="PATH",
        help="TREC run file(s) (a file or a directory) or TSV system<TAB>query<TAB>doc",
    )
    add_order_by(sim)
    sim.add_argument(
        "--judgments",
        required=True,
        type=Path,
        metavar="FILE",
        help="TREC qrels or TSV query<TAB>doc<TAB>score, covering every run pair",
    )
    sim.add_argument(
        "--metadata",
        type=Path,
        metavar="FILE",
        help="TSV doc<TAB>artist<TAB>genre (enables the ordinal models and the MIREX "
        "same-artist filter)",
    )
    sim.add_argument("--k", type=integer("k", 1), default=5, help="evaluation cut-off")
    sim.add_argument("--scale", choices=("broad", "fine"), default="fine", help="judgment scale")
    sim.add_argument(
        "--measure",
        choices=MEASURES,
        default="cg",
        help="effectiveness measure: cg = CG@k; dcg = MIREX nDCG@k, normalised by an "
        "all-maximum list (the 2012/2013 papers); ndcg = trec_eval/ir_measures nDCG@k, "
        "normalised by the ideal ordering of the pool; rbp = RBP (p = 0.8) normalised by the "
        "ideal ordering",
    )


def _add_engine(sim: argparse.ArgumentParser) -> None:
    """The engine a campaign with these settings runs."""
    sim.add_argument(
        "--model",
        choices=ESTIMATOR_CHOICES,
        help=f"relevance estimator (default: {DEFAULT_ESTIMATOR}, as for a new campaign; the "
        "engine is the one a campaign with this estimator runs; the calibration page measures "
        f"how honest each one's confidence is: {doc_link('calibration', option_help=True)})",
    )
    sim.add_argument(
        "--policy", choices=POLICIES, default="confidence", help="which pair to judge next"
    )
    sim.add_argument(
        "--target",
        type=confidence("target"),
        default=0.95,
        help="ranking confidence at which to stop",
    )
    sim.add_argument(
        "--confident",
        type=confidence("confident"),
        help="pairs of systems this sure leave the confidence weights (default 0.99)",
    )
    sim.add_argument(
        "--distribution",
        choices=("t", "normal"),
        default="t",
        help="t with n_Q-1 df ([T]) or the normal ([U12])",
    )
    sim.add_argument(
        "--stop",
        choices=STOP_RULES,
        default="confidence",
        help="stopping rule: the target confidence, score intervals narrow enough (absolute), "
        "or every pair judged (complete)",
    )


def _add_replay(sim: argparse.ArgumentParser) -> None:
    """How the replay judges: pairs a round, its seed, when it gives up, the artist filter."""
    sim.add_argument(
        "--batch",
        type=integer("batch", 1),
        default=1,
        metavar="N",
        help="pairs judged per round (N concurrent assessors)",
    )
    sim.add_argument("--seed", type=int, default=0, help="seed of the random choices")
    sim.add_argument(
        "--max-judgments",
        type=integer("max judgments", 1),
        metavar="N",
        help="give up after N judgments (default: when the stopping rule holds)",
    )
    sim.add_argument(
        "--volunteers",
        type=integer("volunteers", 0),
        default=4,
        metavar="N",
        help="also simulate N volunteers judging at once, with their own pace, query changes "
        "and breaks, to report the listening hours to the target (4; 0: judgments only)",
    )
    sim.add_argument(
        "--selection",
        choices=SELECTIONS,
        default="cost",
        help="how the simulated volunteers' pairs are chosen: cost = the most confidence per "
        "second of theirs (the product), greedy = the best pair whatever its query, "
        "locality = the query they are on when worth half the best (the rule before)",
    )
    sim.add_argument(
        "--no-artist-filter",
        action="store_true",
        help="keep results by the query's artist (MIREX removes them)",
    )
    sim.add_argument(
        "--various-artists",
        action="append",
        metavar="ID",
        help="artist id that links nothing (repeatable; default: "
        + ", ".join(sorted(DEFAULT_VARIOUS_ARTISTS))
        + ")",
    )


def _add_synthetic(sub: SubParsers) -> None:
    syn = add_parser(
        sub,
        "synthetic",
        "write a synthetic, fully judged AMS collection",
        description="Write a seeded synthetic collection (runs.tsv, judgments-fine.tsv, "
        "judgments-broad.tsv, metadata.tsv) with MIREX-like structure, to try simulate on.",
    )
    syn.add_argument("directory", type=Path, help="where to write the files (created if missing)")
    syn.add_argument("--systems", type=integer("systems", 2), default=18, help="number of systems")
    syn.add_argument("--queries", type=integer("queries", 1), default=100, help="number of queries")
    syn.add_argument("--k", type=integer("k", 1), default=5, help="length of every result list")
    syn.add_argument("--seed", type=int, default=0, help="seed of the generator")
    syn.set_defaults(run=run_synthetic)


def load_inputs(args: argparse.Namespace, err: TextIO) -> LoadedCollection:
    """Read and validate the three files; raise InputError naming the culprit. Lists whose
    scores contradict their ranks are reported on ``err``."""
    for name in ("runs", "judgments", "metadata"):
        path = getattr(args, name, None)
        if path is not None and not Path(path).exists():
            raise InputError(str(path), None, f"--{name}: no such file or directory")
    runs = read_runs(args.runs, order_by=args.order_by)
    warn_score_order(err, runs)
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


def replay_config(args: argparse.Namespace, model: str) -> ReplayConfig:
    """The replay the options ask for: the engine a campaign with estimator ``model`` runs
    (:func:`mtcjudge.mtc.factory.build_engine`), fed the pairs it asks for."""
    return ReplayConfig(
        engine=EngineConfig(
            measure=args.measure,
            policy=args.policy,
            target=args.target,
            confident=args.confident,
            distribution=args.distribution,
            stop=args.stop,
        ),
        estimator=model,
        batch=args.batch,
        seed=args.seed,
        max_judgments=args.max_judgments,
    )


def coverage_warnings(coverage: dict[str, int] | None, model: str, path: Path | None) -> list[str]:
    """What the metadata leaves out, and what that does to the estimator (none: empty)."""
    if coverage is None:
        return []
    uses_m_out = model in ("ordinal", CALIBRATED, JOINT)
    consequence = (
        "M_out cannot estimate {} and the historical prior is used there"
        if uses_m_out
        else "the same-artist filter cannot apply there"
    )
    queries, docs = coverage["queries"], coverage["pool_documents"]
    q_known, d_known = coverage["queries_with_genre"], coverage["pool_documents_with_genre"]
    if coverage["pool_pairs_with_genres"] == 0:
        what = "any pool pair" if uses_m_out else ""
        return [
            f"--metadata {path} covers none of the pool: {q_known} of {queries} queries and "
            f"{d_known} of {docs} pooled documents have a genre (are the ids the runs' ids?); "
            + consequence.format(what)
        ]
    warnings = []
    if q_known < queries:
        warnings.append(
            f"--metadata {path} has no genre for {queries - q_known} of {queries} queries; "
            + consequence.format("their pairs")
        )
    if d_known < docs:
        warnings.append(
            f"--metadata {path} has no genre for {docs - d_known} of {docs} pooled documents; "
            + consequence.format("their pairs")
        )
    return warnings


def _check_outputs(args: argparse.Namespace) -> None:
    """Output files are checked before the replay, which can take minutes."""
    check_output_file("--json", args.json)
    check_output_file("--plot", args.plot, _PLOT_SUFFIXES)
    if args.plot is not None and importlib.util.find_spec("matplotlib") is None:
        raise UsageError(
            "--plot needs matplotlib, which is not installed: pip install 'mtcjudge[plot]'"
        )


def run_simulate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    _check_outputs(args)
    loaded = load_inputs(args, err)
    model = args.model or DEFAULT_ESTIMATOR
    if model in ("ordinal", CALIBRATED, JOINT) and args.metadata is None:
        err.write(
            f"mtcjudge: note: the {model} estimator without --metadata falls back to the "
            "historical prior where M_jud does not apply\n"
        )
    for warning in coverage_warnings(metadata_coverage(loaded), model, args.metadata):
        err.write(f"mtcjudge: warning: {warning}\n")
    config = replay_config(args, model)
    if args.volunteers and not args.quiet:
        err.write(
            f"simulate: the replay, then {args.volunteers} simulated volunteers for the "
            "listening hours (--volunteers 0: the replay only)\n"
        )
    bar = ProgressBar(err, loaded.collection.n_pairs, args.target, enabled=not args.quiet)
    try:
        result = replay(
            loaded.collection,
            loaded.metadata,
            loaded.judged_values,
            get_scale(args.scale),
            config,
            progress=bar,
        )
    finally:
        bar.close()
    hours = _volunteers(args, loaded, config)
    mirex = mirex_analysis(loaded, args)
    out.write(format_summary(result, loaded, args, model, mirex, hours) + "\n")
    if args.json is not None:
        document = payload(result, loaded, args, model, config, mirex, hours)
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    if args.plot is not None:
        from mtcjudge.cli.plot import plot_replay

        title = (
            f"MTC replay: {args.scale.upper()} {MEASURE_TITLES[args.measure]}@{args.k}, "
            f"{model}, {args.policy}"
        )
        plot_replay(result, args.plot, title, args.target)
    return 0


def _volunteers(
    args: argparse.Namespace, loaded: LoadedCollection, config: ReplayConfig
) -> tuple[VolunteerSetup, VolunteerRun] | None:
    """The listening hours: the same campaign judged by ``--volunteers`` simulated volunteers
    (None with 0)."""
    if args.volunteers == 0:
        return None
    setup = VolunteerSetup(volunteers=args.volunteers, selection=args.selection, seed=args.seed)
    run = replay_volunteers(
        loaded.collection,
        loaded.metadata,
        loaded.judged_values,
        get_scale(args.scale),
        config.engine,
        config.estimator,
        setup,
    )
    return setup, run


def run_synthetic(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:  # noqa: ARG001
    from mtcjudge.mtc.synthetic import generate

    args.directory.mkdir(parents=True, exist_ok=True)
    paths = generate(args.systems, args.queries, args.k, seed=args.seed).write(args.directory)
    for name, path in paths.items():
        out.write(f"{name:16s} {path}\n")
    return 0
