"""What ``mtcjudge simulate`` reports: the text summary and the JSON document of a replay,
with the MIREX analysis under complete judgments."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from mtcjudge.ingest.loader import LoadedCollection
from mtcjudge.mtc.factory import CALIBRATED, DEFAULT_ESTIMATOR, JOINT
from mtcjudge.mtc.listening_time import Defaults
from mtcjudge.mtc.measures import MEASURE_TITLES, TIE_TOLERANCE, per_query_scores
from mtcjudge.mtc.mirex import MirexAnalysis, friedman_tukey
from mtcjudge.mtc.replay import ReplayConfig, ReplayResult, true_ties
from mtcjudge.mtc.scales import get_scale
from mtcjudge.mtc.volunteers import VolunteerRun, VolunteerSetup
from mtcjudge.validation import printable

__all__ = ["format_summary", "metadata_coverage", "mirex_analysis", "payload"]


def metadata_coverage(loaded: LoadedCollection) -> dict[str, int] | None:
    """How much of the pool the metadata covers (None without metadata).

    M_out needs the genre of the query and of the document (docs/method.md §2.4), so the
    pool pairs it can estimate are those with both known.
    """
    meta = loaded.metadata
    if meta is None:
        return None
    c = loaded.collection
    pool_docs = np.unique(c.pair_doc)
    query_known = meta.query_genre >= 0
    genre_known = (meta.doc_genre[c.pair_doc] >= 0) & query_known[c.pair_query]
    return {
        "queries": c.n_queries,
        "queries_with_genre": int(query_known.sum()),
        "pool_documents": int(pool_docs.shape[0]),
        "pool_documents_with_genre": int((meta.doc_genre[pool_docs] >= 0).sum()),
        "pool_documents_with_artist": int((meta.doc_artist[pool_docs] >= 0).sum()),
        "pool_pairs": c.n_pairs,
        "pool_pairs_with_genres": int(genre_known.sum()),
    }


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
    estimator: str,
    mirex: MirexAnalysis,
    hours: tuple[VolunteerSetup, VolunteerRun] | None = None,
) -> str:
    label = f"{MEASURE_TITLES[args.measure]}@{args.k}"
    default = " (the default)" if args.model is None and estimator == DEFAULT_ESTIMATOR else ""
    ns = len(loaded.systems)
    ties = int(true_ties(result.true_means).sum())
    lines = [
        f"mtcjudge simulate: {args.scale.upper()}, {label}, estimator {estimator}{default}, "
        f"policy {args.policy}, target {args.target:.2f}",
        f"  systems x queries        {loaded.collection.n_systems} x {loaded.collection.n_queries}",
        f"  pool size                {result.pool_size}",
        f"  judgments to target      {result.judgments_to_target} "
        f"({100 * result.fraction_judged:.1f} %)",
        f"  stopped because          {result.stop_reason}",
        f"  confidence at 0 / stop   {result.initial_confidence:.4f} / "
        f"{result.final_confidence:.4f}",
        f"  sign accuracy            {result.sign_accuracy:.4f} (true ties: {ties} of "
        f"{ns * (ns - 1) // 2} pairs, counted strictly)",
        f"  Kendall tau              {result.kendall_tau:.4f}",
        f"  mean abs error           {result.mean_abs_error:.4f}",
        f"  RMSE of differences      {result.rmse_difference:.4f}",
        f"  replay time              {result.seconds:.2f} s",
    ]
    if hours is not None:
        setup, run = hours
        full = full_pool_hours(loaded, setup)
        lines += [
            "",
            f"  listening time: {setup.volunteers} simulated volunteers, {setup.selection} "
            "selection (docs/method.md §12; 30 s clips, the stated assumptions)",
            f"    hours to target        {run.hours:.1f} h ({run.listening_hours:.1f} h of "
            f"listening), {run.judgments} judgments, {run.queries_heard} queries heard",
            f"    judging the whole pool {full:.1f} h by the same assumptions ([U12] counts "
            f"30 s per judgment: {result.pool_size * 30 / 3600:.1f} h); "
            f"{run.hours / full:.0%} of it",
        ]
    if result.judgments_to_target == 0 and result.stop_reason != "max_judgments":
        lines += [
            "",
            "  Nothing had to be judged: before any judgment, the estimates alone put the ranking",
            f"  at confidence {result.initial_confidence:.4f}, at or above the target "
            f"{args.target:.2f} (sign accuracy then: {result.initial_accuracy:.4f}). A higher",
            "  --target or another --model makes the loop judge; docs/replay-mirex2011.md shows "
            "how far",
            "  the confidence of the ordinal models can be trusted.",
        ]
    lines += [
        "",
        "  calibration at the stop (pairs binned by confidence)",
        "    bin           pairs  accuracy  mean conf",
    ]
    for b in result.calibration:
        acc = "     -" if b.count == 0 else f"{b.accuracy:9.3f}"
        conf = "      -" if b.count == 0 else f"{b.mean_confidence:10.3f}"
        close = "]" if b.high == 1.0 else ")"
        lines.append(f"    [{b.low:.2f}, {b.high:.2f}{close}  {b.count:5d} {acc} {conf}")
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
    means = result.estimated_means
    order = sorted(range(ns), key=lambda i: -means[i])
    # equal estimated scores share a rank (1, 1, 3), as the sign accuracy counts them
    for i in order:
        above = int(np.sum(means > means[i] + TIE_TOLERANCE))
        tied = int(np.sum(np.abs(means - means[i]) <= TIE_TOLERANCE)) > 1
        rank = f"{above + 1}{'=' if tied else ' '}"
        lines.append(
            f"    {rank:>5} {printable(loaded.systems[i]):<18} {means[i]:9.4f}"
            f"  {result.true_means[i]:.4f}"
        )
    return "\n".join(lines)


def full_pool_hours(loaded: LoadedCollection, setup: VolunteerSetup) -> float:
    """Hours of judging every pool pair once, each query heard once, by the setup's
    assumptions (clips of the default length)."""
    c = loaded.collection
    return setup.pool_hours(c.n_queries, c.n_pairs, Defaults().clip_seconds)


def _hours_payload(
    loaded: LoadedCollection, hours: tuple[VolunteerSetup, VolunteerRun] | None
) -> dict[str, Any]:
    if hours is None:
        return {"listening_hours_to_target": None, "hours_to_target": None, "volunteers": None}
    setup, run = hours
    return {
        "listening_hours_to_target": run.listening_hours,
        "hours_to_target": run.hours,
        "volunteers": {
            **run.summary(),
            "full_pool_hours": full_pool_hours(loaded, setup),
            "time_model": setup.assumptions(),
        },
    }


def payload(
    result: ReplayResult,
    loaded: LoadedCollection,
    args: argparse.Namespace,
    model: str,
    config: ReplayConfig,
    mirex: MirexAnalysis,
    hours: tuple[VolunteerSetup, VolunteerRun] | None = None,
) -> dict[str, Any]:
    return {
        "estimator": {
            "name": model,
            "default": args.model is None and model == DEFAULT_ESTIMATOR,
            "metadata_coverage": metadata_coverage(loaded),
        },
        "true_ties": int(true_ties(result.true_means).sum()),
        "settings": {
            "runs": str(args.runs),
            "order_by": args.order_by,
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
            "system_effect": model in (CALIBRATED, JOINT),
            "m_jud": model not in (CALIBRATED, JOINT),
        },
        **result.summary(),
        **_hours_payload(loaded, hours),
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
