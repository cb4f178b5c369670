"""``mtcjudge campaign create|list|open|close|set|add-runs|import-bundle|status``: thin over
mtcjudge.campaigns.service (and mtcjudge.exports.restore for ``import-bundle``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mtcjudge import audit
from mtcjudge.cli.common import (
    SubParsers,
    UsageError,
    add_parser,
    confidence,
    int_setting,
    shown_list,
)
from mtcjudge.cli.database import add_database_option, run_in_session, settings_for
from mtcjudge.config import Settings
from mtcjudge.ingest.formats import read_judgments, read_metadata, read_runs
from mtcjudge.mtc.calibration import CAMPAIGN_ESTIMATORS, DEFAULT_ESTIMATOR
from mtcjudge.mtc.measures import MEASURE_TITLES, MEASURES
from mtcjudge.mtc.selection import POLICIES
from mtcjudge.validation import printable

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from mtcjudge.campaigns.results import Results
    from mtcjudge.campaigns.service import AddRunsReport, ImportReport
    from mtcjudge.models import Campaign

__all__ = [
    "format_add_runs_report",
    "format_campaign_status",
    "format_import_report",
    "register",
]

_SHOWN_PROBLEMS = 10


def register(sub: SubParsers) -> None:
    campaign = add_parser(sub, "campaign", "create, list, open, close, change and follow campaigns")
    actions = campaign.add_subparsers(dest="campaign_command", required=True, metavar="ACTION")
    _add_create(actions)

    listing = add_parser(actions, "list", "list the campaigns")
    add_database_option(listing)
    listing.set_defaults(run=run_list)

    for action, summary in (("open", "open a campaign to assessors"), ("close", "close it")):
        change = add_parser(actions, action, summary)
        change.add_argument("slug", help="the campaign's URL name")
        add_database_option(change)
        change.set_defaults(run=run_open_close)

    setting = add_parser(
        actions, "set", "change a campaign's target, lease time, overlap or stopping behaviour"
    )
    setting.add_argument("slug", help="the campaign's URL name")
    setting.add_argument(
        "--target", type=confidence("target"), help="ranking confidence at which judging may stop"
    )
    setting.add_argument(
        "--lease-minutes",
        type=int_setting("lease_minutes"),
        metavar="N",
        help="time to judge a handed-out pair",
    )
    setting.add_argument(
        "--judgments-per-pair",
        type=int_setting("judgments_per_pair"),
        metavar="N",
        help="judgments wanted per pair (assessors judging the same pair)",
    )
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
    add_database_option(setting)
    setting.set_defaults(run=run_set)

    _add_add_runs(actions)
    _add_import_bundle(actions)

    status = add_parser(
        actions,
        "status",
        "judgments so far, the estimated ranking and its confidence",
        description="Where a campaign stands, as its planner last computed it (or computed "
        "now when nothing is stored yet, or for another measure or scale).",
    )
    status.add_argument("slug", help="the campaign's URL name")
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


def _add_create(actions: SubParsers) -> None:
    create = add_parser(
        actions,
        "create",
        "import runs (and metadata, judgments, audio) as a new campaign",
        description="Create a campaign from run files, with optional metadata, imported "
        "judgments and a directory of <doc_id>.<ext> clips (wav, flac, ogg, mp3). Missing and "
        "unreadable clips are listed. Nothing is saved when a file is wrong. To create one "
        "from an export bundle, use 'mtcjudge campaign import-bundle'.",
    )
    create.add_argument("--name", required=True, help="the campaign's name, shown to assessors")
    create.add_argument(
        "--runs",
        required=True,
        type=Path,
        metavar="PATH",
        help="TREC run file(s) (a file or a directory) or TSV system<TAB>query<TAB>doc",
    )
    create.add_argument(
        "--metadata", type=Path, metavar="FILE", help="TSV doc<TAB>artist<TAB>genre"
    )
    create.add_argument(
        "--judgments-fine", type=Path, metavar="FILE", help="FINE judgments to import (0..100)"
    )
    create.add_argument(
        "--judgments-broad", type=Path, metavar="FILE", help="BROAD judgments to import (0, 1, 2)"
    )
    create.add_argument(
        "--audio", type=Path, metavar="DIR", help="directory of <doc_id>.<ext> clips"
    )
    create.add_argument("--slug", help="URL name (default: made from --name)")
    create.add_argument("--description", default="", help="a longer text about the campaign")
    create.add_argument(
        "--scale", choices=("broad", "fine"), default="fine", help="scale the MTC loop runs on"
    )
    create.add_argument("--k", type=int_setting("k"), default=5, help="evaluation cut-off")
    create.add_argument("--measure", choices=MEASURES, default="cg", help="effectiveness measure")
    create.add_argument(
        "--model",
        choices=CAMPAIGN_ESTIMATORS,
        default=DEFAULT_ESTIMATOR,
        help="relevance estimator (default %(default)s: M_out plus error offsets shared by the "
        "pairs of a system, a query, an artist and a genre cell, learnt from the judgments, "
        "with one judgment in 20 given to a random audit; docs/calibration.md measures every "
        "estimator's confidence)",
    )
    create.add_argument(
        "--policy", choices=POLICIES, default="confidence", help="which pair to hand out next"
    )
    create.add_argument(
        "--target",
        type=confidence("target"),
        default=0.95,
        help="ranking confidence at which to stop",
    )
    create.add_argument(
        "--lease-minutes",
        type=int_setting("lease_minutes"),
        default=10,
        metavar="N",
        help="time to judge a handed-out pair",
    )
    create.add_argument(
        "--judgments-per-pair",
        type=int_setting("judgments_per_pair"),
        default=1,
        metavar="N",
        help="judgments wanted per pair (assessors judging the same pair)",
    )
    create.add_argument(
        "--seed", type=int_setting("seed"), default=0, help="seed of the MTC loop's random choices"
    )
    create.add_argument(
        "--keep-collecting",
        action="store_true",
        help="keep handing out pairs once the target confidence is reached",
    )
    create.add_argument("--open", action="store_true", help="open it to assessors at once")
    add_database_option(create)
    create.set_defaults(run=run_create)


def _add_add_runs(actions: SubParsers) -> None:
    add_runs = add_parser(
        actions,
        "add-runs",
        "add systems to a campaign, keeping its judgments",
        description="Add the systems of new run files to an existing campaign. Every judgment "
        "is kept; the pool grows by the new systems' pairs it does not hold yet, and the "
        "campaign is planned again at once: assessors are asked for the pairs that tell the "
        "new systems apart (a campaign that could stop goes on while they are uncertain). A "
        "system name the campaign has already, or a query it does not have, is refused. "
        "Nothing is saved when a file is wrong. See docs/reuse.md.",
    )
    add_runs.add_argument("slug", help="the campaign's URL name")
    add_runs.add_argument(
        "--runs",
        required=True,
        type=Path,
        metavar="PATH",
        help="TREC run file(s) (a file or a directory) or TSV system<TAB>query<TAB>doc",
    )
    add_runs.add_argument(
        "--metadata",
        type=Path,
        metavar="FILE",
        help="TSV doc<TAB>artist<TAB>genre for the documents new to the campaign",
    )
    add_runs.add_argument(
        "--audio", type=Path, metavar="DIR", help="directory of clips of the new documents"
    )
    add_database_option(add_runs)
    add_runs.set_defaults(run=run_add_runs)


def _add_import_bundle(actions: SubParsers) -> None:
    restore = add_parser(
        actions,
        "import-bundle",
        "create a campaign from an export bundle (the same campaign again)",
        description="Create a campaign from the zip 'mtcjudge export SLUG --what bundle' "
        "wrote: its settings, systems and lists, documents, judgments with their times and "
        "revisions, leases, assessors and confidence curve; exporting it again gives the same "
        "files. Every member's SHA-256 is checked first; a changed, incomplete or foreign "
        "zip is refused and nothing is saved. Assessors come back as their pseudonyms "
        "(A1, A2, ...) whose old links no longer work: 'mtcjudge assessor relink' gives one a "
        "new link. Audio is not in a bundle: give --audio again. See docs/exports.md.",
    )
    restore.add_argument("bundle", type=Path, metavar="BUNDLE.zip", help="the export bundle")
    restore.add_argument(
        "--slug", help="URL name of the new campaign (default: the exported campaign's)"
    )
    restore.add_argument(
        "--audio", type=Path, metavar="DIR", help="directory of <doc_id>.<ext> clips"
    )
    add_database_option(restore)
    restore.set_defaults(run=run_import_bundle)


def run_import_bundle(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.exports.restore import open_bundle, restore_campaign

    settings_for(args.database_url)
    bundle = open_bundle(args.bundle)  # verified before the database is touched

    def restore(session: Session, _settings: Settings) -> None:
        campaign, report = restore_campaign(
            session,
            bundle,
            slug=args.slug,
            audio_dir=args.audio,
            actor=audit.command_line_actor(),
        )
        lines = [
            f"created campaign {campaign.slug} ({campaign.status}) from {args.bundle}: "
            f"{printable(campaign.name)}",
            f"  exported            {report.exported_at} by {report.software}",
            f"  systems x queries   {report.n_systems} x {report.n_queries}",
            f"  documents           {report.n_documents}, {report.n_results} results",
            f"  pool pairs          {report.n_pool_pairs}",
            f"  judgments           {report.n_judgments} ({report.n_leases} leases)",
            f"  assessors           {report.n_assessors}: A1..A{report.n_assessors}, without "
            f"working links (mtcjudge assessor relink --campaign {campaign.slug} --name A1)"
            if report.n_assessors
            else "  assessors           none",
        ]
        if args.audio is not None:
            lines.append(
                f"  audio               {report.audio_found} found, {report.audio_missing} "
                f"missing in {args.audio}"
            )
        out.write("\n".join(lines) + "\n")

    try:
        return run_in_session(args, err, restore, create=True)
    finally:
        bundle.archive.close()


def run_add_runs(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.campaigns import service

    settings_for(args.database_url)
    runs = read_runs(args.runs)
    metadata = read_metadata(args.metadata) if args.metadata else None

    def add(session: Session, _settings: Settings) -> None:
        campaign = service.get_campaign(session, args.slug)
        report = service.add_runs(
            session, campaign, runs, metadata, args.audio, actor=audit.command_line_actor()
        )
        out.write(format_add_runs_report(campaign, report) + "\n")

    return run_in_session(args, err, add)


def format_add_runs_report(campaign: Campaign, report: AddRunsReport) -> str:
    """The lines ``campaign add-runs`` prints."""
    judging = f"can stop ({report.stop_reason})" if report.stop_reason else "goes on"
    if report.stop_reason_before and not report.stop_reason:
        judging += " (it could stop before: the new systems need judgments)"
    lines = [
        f"added {len(report.systems)} system(s) to {campaign.slug}: "
        + ", ".join(printable(s) for s in report.systems),
        f"  results             {report.n_results}, {report.n_new_documents} new document(s)",
        f"  pool pairs          {report.pool_pairs_before} -> {report.pool_pairs} "
        f"(+{report.new_pairs}, {report.new_pairs_judged} of them judged already)",
        f"  judgments kept      {report.judgments_kept}",
        f"  ranking confidence  {report.ranking_confidence:.4f}, system pairs settled "
        f"{report.system_pairs_settled} of {report.system_pairs}",
        f"  judging             {judging}",
    ]
    if report.audio_missing:
        lines.append(f"  audio missing       {shown_list(report.audio_missing)}")
    if report.n_unplayable_new_pairs:
        lines.append(
            f"  cannot be judged    {report.n_unplayable_new_pairs} new pair(s) (a clip has no "
            "readable audio): assessors are not given them"
        )
    if campaign.status != "open":
        lines.append(f"  the campaign is {campaign.status}: open it with mtcjudge campaign open")
    return "\n".join(lines)


def run_create(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.campaigns import service

    settings_for(args.database_url)  # a bad URL fails before the files are read
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
        audit.record_campaign_created(session, campaign, audit.command_line_actor(), report)
        out.write(format_import_report(campaign, report, args.audio) + "\n")
        if campaign.status == "draft":
            out.write(f"open it to assessors with: mtcjudge campaign open {campaign.slug}\n")

    return run_in_session(args, err, create, create=True)


def run_list(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.campaigns import service

    def show(session: Session, _settings: Settings) -> None:
        campaigns = service.list_campaigns(session)
        if not campaigns:
            out.write("no campaigns yet: create one with mtcjudge campaign create\n")
            return
        width = max(len(c.slug) for c in campaigns)
        out.write(f"{'SLUG':<{width}}  STATUS  SCALE  K    NAME\n")
        for c in campaigns:
            out.write(
                f"{c.slug:<{width}}  {c.status:<6}  {c.scale:<5}  {c.k:<3}  {printable(c.name)}\n"
            )

    return run_in_session(args, err, show)


def run_set(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.campaigns import service

    changes = {
        name: getattr(args, name)
        for name in ("target", "lease_minutes", "judgments_per_pair", "keep_collecting")
        if getattr(args, name) is not None
    }
    if not changes:
        raise UsageError("campaign set: give at least one setting to change")

    def apply(session: Session, _settings: Settings) -> None:
        campaign = service.get_campaign(session, args.slug)
        service.update_campaign(session, campaign, audit.command_line_actor(), **changes)
        shown = ", ".join(f"{k.replace('_', ' ')} {getattr(campaign, k)}" for k in changes)
        out.write(f"campaign {campaign.slug}: {shown}\n")

    return run_in_session(args, err, apply)


def run_open_close(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.campaigns import service
    from mtcjudge.planner.service import unplayable_summary

    new_status = {"open": "open", "close": "closed"}[args.campaign_command]

    def change(session: Session, _settings: Settings) -> None:
        campaign = service.get_campaign(session, args.slug)
        service.update_campaign(session, campaign, audit.command_line_actor(), status=new_status)
        out.write(f"campaign {campaign.slug} is {campaign.status}\n")
        if campaign.status == "open" and (problem := unplayable_summary(session, campaign)):
            out.write(f"warning: {printable(problem)}\n")

    return run_in_session(args, err, change)


def run_status(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.campaigns import results

    def report(session: Session, _settings: Settings) -> None:
        document = results.results_for(session, args.slug, args.measure, args.scale)
        if args.json:
            out.write(results.results_json(document) + "\n")
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
        f"  system pairs settled {results.system_pairs_settled} of {results.system_pairs}",
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
    if not results.driving:
        lines.append("  (not the measure and scale the campaign's loop runs on)")
    lines += ["", f"    rank  system              {label:>9}   95% interval"]
    for system in results.systems:
        lines.append(
            f"    {system.rank:4d}  {printable(system.name):<18} {system.mean:9.4f}   "
            f"[{system.ci_low:.4f}, {system.ci_high:.4f}]"
        )
    return "\n".join(lines) + "\n"


def _judgments(count: int | None) -> str:
    return "?" if count is None else str(count)


def format_import_report(campaign: Campaign, report: ImportReport, audio: Path | None) -> str:
    """The few lines ``campaign create`` prints."""
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
        return "\n".join(lines)
    lines.append(
        f"  audio               {report.audio_found} found, {len(report.audio_missing)} "
        f"missing, {len(report.audio_unreadable)} unreadable in {audio}"
    )
    if report.audio_missing:
        lines.append(f"    missing: {shown_list(report.audio_missing)}")
    if report.audio_unreadable:
        lines.append("    unreadable:")
        lines += [
            f"      {printable(doc)}: {printable(reason)}"
            for doc, reason in report.audio_unreadable[:_SHOWN_PROBLEMS]
        ]
        if len(report.audio_unreadable) > _SHOWN_PROBLEMS:
            lines.append(f"      and {len(report.audio_unreadable) - _SHOWN_PROBLEMS} more")
    if report.audio_notes:
        lines.append(f"    several files: {shown_list(report.audio_notes)}")
    if report.n_unplayable_pairs:
        lines.append(
            f"  cannot be judged    {report.n_unplayable_pairs} of {report.n_pool_pairs} "
            "pool pairs (a clip has no readable audio): assessors are not given them"
        )
    return "\n".join(lines)
