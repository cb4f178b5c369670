"""``mtcjudge campaign status``: where a campaign stands, from its results document
(thin over mtcjudge.results)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

from mtcjudge.cli.common import SubParsers, add_campaign_argument, add_parser
from mtcjudge.cli.database import add_database_option, run_in_session
from mtcjudge.config import Settings
from mtcjudge.mtc.measures import MEASURE_TITLES, MEASURES
from mtcjudge.validation import printable

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from mtcjudge.results.document import Results

__all__ = ["format_campaign_status", "register"]


def register(actions: SubParsers) -> None:
    """Add ``status`` to the actions of ``mtcjudge campaign``."""
    status = add_parser(
        actions,
        "status",
        "judgments so far, the estimated ranking and its confidence",
        description="Where a campaign stands, as its planner last computed it (or computed "
        "now when nothing is stored yet, or for another measure or scale).",
    )
    add_campaign_argument(status)
    status.add_argument(
        "--json",
        action="store_true",
        help="print the results document, as GET /api/campaigns/SLUG/results sends it",
    )
    status.add_argument(
        "--measure",
        choices=MEASURES,
        help="rank by this measure (default: the campaign's): dcg = MIREX nDCG@k (all-maximum "
        "normalisation), ndcg = trec_eval nDCG@k (ideal ordering); see 'mtcjudge export --help'",
    )
    status.add_argument(
        "--scale", choices=("broad", "fine"), help="judgment scale (default: the campaign's)"
    )
    add_database_option(status)
    status.set_defaults(run=run_status)


def run_status(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.results.document import results_json
    from mtcjudge.results.read import results_for

    def report(session: Session, _settings: Settings) -> None:
        document = results_for(session, args.slug, args.measure, args.scale)
        if args.json:
            out.write(results_json(document) + "\n")
        else:
            out.write(format_campaign_status(document))

    return run_in_session(args, err, report)


def format_campaign_status(results: Results) -> str:
    """Progress, the estimated ranking and what is still needed, from the results document."""
    label = f"{MEASURE_TITLES[results.measure]}@{results.k}"
    reason = results.stop_reason
    judged, pool = results.judgments, results.pool_pairs
    lines = [
        f"{results.campaign} ({results.status}): {results.scale.upper()} {label}, "
        f"{results.estimator} estimator, {results.policy} policy",
        f"  pairs judged         {judged} of {pool} ({100 * judged / max(pool, 1):.1f} %), "
        f"{results.judgment_rows} judgment(s) stored",
        f"  ranking confidence   {results.ranking_confidence:.4f} (target {results.target:.2f})",
        f"  system pairs settled {results.system_pairs_settled} of {results.system_pairs}"
        + (f" ({results.system_pairs_tied} of them tied)" if results.system_pairs_tied else ""),
        f"  disagreement         {_disagreement(results)}",
        "  judging              "
        + (f"can stop ({reason})" if reason else "goes on")
        + (", keeps collecting" if results.keep_collecting else ""),
    ]
    projected = results.projected_judgments_to_target
    if projected is not None and not projected.reached and results.projection is not None:
        lines.append(
            f"  still needed         {_judgments(projected.median)} judged pairs "
            f"({_judgments(projected.low)}-{_judgments(projected.high)}, projected at "
            f"{results.projection.judgments})"
        )
    if unplayable := pool - results.playable_pairs:
        clips = ", ".join(printable(c) for c in results.unplayable_clips[:8])
        n_clips = len(results.unplayable_clips)
        more = f", ... ({n_clips} clips)" if n_clips > 8 else ""
        lines.append(
            f"  cannot be judged     {unplayable} pair(s): no readable audio for {clips}{more}"
        )
    if results.assessors:
        active = sum(1 for a in results.assessors if a.live_lease)
        lines.append(
            f"  assessors            {len(results.assessors)}, {active} holding a pair now"
        )
    lines += _hours_lines(results)
    if not results.driving:
        lines.append("  (not the measure and scale the campaign's loop runs on)")
    lines += ["", f"    rank  system              {label:>9}   95% interval"]
    for system in results.systems:
        rank = f"{system.rank}=" if system.tied else f"{system.rank} "
        lines.append(
            f"    {rank:>5} {printable(system.name):<18} {system.mean:9.4f}   "
            f"[{system.ci_low:.4f}, {system.ci_high:.4f}]"
        )
    lines += ["", *_notes(results)]
    return "\n".join(lines) + "\n"


def hours_text(hours: float | None) -> str:
    """Hours as the status and the report say them: seconds under a minute, minutes under
    an hour."""
    if hours is None:
        return "?"
    if hours < 1 / 60:
        return f"{round(hours * 3600)} s"
    return f"{round(hours * 60)} min" if hours < 1 else f"{hours:.1f} h"


def hours_span(low: float | None, high: float | None) -> str:
    """An interval of hours: ``9.5-22.0 h``, ``40 min to 1.2 h``, ``21.0 h or more``."""
    if high is None:
        return f"{hours_text(low)} or more"
    low_text, high_text = hours_text(low), hours_text(high)
    low_number, low_unit = low_text.split(" ")
    high_number, high_unit = high_text.split(" ")
    if low_unit == high_unit:
        return f"{low_number}-{high_number} {high_unit}"
    return f"{low_text} to {high_text}"


def _hours_lines(results: Results) -> list[str]:
    """The volunteers' time (docs/method.md §11): spent so far, in total and by assessor,
    still needed to each target, and the whole pool."""
    listening = results.listening
    spent = listening.spent
    modelled = f", {spent.imputed} partly modelled" if spent.imputed else ""
    lines = [
        f"  hours spent          {hours_text(spent.hours)}, {hours_text(spent.listening_hours)} "
        f"of it listening ({spent.judgments} judgment(s){modelled})"
    ]
    for a in listening.assessors:
        name = a.pseudonym or f"#{a.id}"
        lines.append(
            f"    {name:<18} {hours_text(a.hours)}, {hours_text(a.listening_hours)} listening "
            f"({a.judgments} judgment(s))"
        )
    for t in listening.targets:
        if t.reached:
            said = "reached"
        elif t.hours is None:
            said = "not reached within the pool"
        else:
            said = f"about {hours_text(t.hours)} ({hours_span(t.low, t.high)})"
        own = ", this campaign's target" if abs(t.target - results.target) < 1e-9 else ""
        lines.append(f"  {f'hours to {t.target:.2f}':<20} {said}{own}")
    pool = listening.pool
    level = round(100 * listening.level)
    lines.append(
        f"  whole pool once      {hours_text(pool.hours)} ({hours_span(pool.low, pool.high)}; "
        f"intervals at {level} %)"
    )
    return lines


def _disagreement(results: Results) -> str:
    """What the confidence includes of the assessors' disagreement (docs/method.md §10)."""
    d = results.assessor_disagreement
    if not d.measured:
        return (
            f"between assessors not measured yet ({d.pairs} pair(s) judged twice, 3 needed): "
            "the confidence assumes the assessors agree"
        )
    unit = "FINE points" if results.scale == "fine" else "BROAD grades"
    shared = (
        f", of which sd {d.offset_sd:.2f} is each one's own, shared by all their judgments "
        f"({d.offset_assessors} assessors)"
        if d.offset_sd > 0
        else ""
    )
    return (
        f"assessors differ by sd {d.sd:.2f} {unit} ({d.pairs} pairs judged twice){shared}; included"
    )


def _notes(results: Results) -> list[str]:
    """What the ranking's numbers are, said for this campaign as it stands."""
    notes = []
    if results.systems and all(system.var == 0.0 for system in results.systems):
        judged = (
            "Every pool pair is judged"
            if results.judgments >= results.pool_pairs
            else ("Every pair the scores depend on is judged")
        )
        notes.append(
            f"  {judged}: the scores are exact and the intervals have no width "
            "(they show the uncertainty of pairs not judged, not the spread over queries)."
        )
    elif results.assessor_disagreement.measured:
        unjudged = (
            f"Pairs not judged enter by what the {results.estimator} estimator expects of them; "
            if results.judgments < results.pool_pairs
            else "Every pool pair is judged; "
        )
        notes.append(
            f"  {unjudged}the intervals also hold the assessors' disagreement (other "
            "volunteers could have judged differently), not the spread over queries."
        )
    else:
        notes.append(
            f"  Pairs not judged enter by what the {results.estimator} estimator expects of them; "
            "the intervals show that uncertainty only, not the spread over queries."
        )
    if results.system_pairs_tied:
        notes.append(
            "  '=': tied, the scores are known to be equal (the same run, or equal once every "
            "pair they differ on is judged); tied systems share a rank."
        )
    return notes


def _judgments(count: int | None) -> str:
    return "?" if count is None else str(count)
