"""``mtcjudge campaign create|list|open|close|set``: thin over mtcjudge.campaigns.creation and
mtcjudge.campaigns.service.

The other actions of the group have modules of their own: ``add-runs`` and ``import-bundle``
in :mod:`mtcjudge.cli.campaign_import`, ``status`` in :mod:`mtcjudge.cli.campaign_status`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mtcjudge import audit
from mtcjudge.cli import campaign_import, campaign_status
from mtcjudge.cli.clip_cut import add_cut_options, cut_text
from mtcjudge.cli.common import (
    SubParsers,
    UsageError,
    add_campaign_argument,
    add_confirm_unplayable,
    add_deprecated_alias,
    add_parser,
    add_quality_options,
    confidence,
    int_setting,
    shown_list,
)
from mtcjudge.cli.database import add_database_option, run_in_session, settings_for
from mtcjudge.cli.docs import doc_link
from mtcjudge.cli.run_order import add_order_by, run_order_line, warn_score_order
from mtcjudge.config import Settings
from mtcjudge.ingest.formats import read_clip_offsets, read_judgments, read_metadata, read_runs
from mtcjudge.mtc.factory import CAMPAIGN_ESTIMATORS, DEFAULT_ESTIMATOR
from mtcjudge.mtc.measures import MEASURES
from mtcjudge.mtc.selection import POLICIES
from mtcjudge.validation import printable

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from mtcjudge.campaigns.changes import ImportReport
    from mtcjudge.ingest.formats import Runs
    from mtcjudge.models import Campaign

__all__ = ["format_import_report", "register"]

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
        add_campaign_argument(change)
        if action == "open":
            add_confirm_unplayable(change)
        add_database_option(change)
        change.set_defaults(run=run_open_close)

    setting = add_parser(
        actions,
        "set",
        "change a campaign's target, lease time, overlap, stopping behaviour, listening rule "
        "or quality trials",
    )
    add_campaign_argument(setting)
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
    add_quality_options(setting, defaults=False)
    add_database_option(setting)
    setting.set_defaults(run=run_set)

    campaign_import.register(actions)
    campaign_status.register(actions)


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
    _add_collection_files(create)
    create.add_argument("--slug", help="URL name (default: made from --name)")
    create.add_argument("--description", default="", help="a longer text about the campaign")
    _add_engine_settings(create)
    _add_judging_settings(create)
    add_quality_options(create, defaults=True)
    create.add_argument("--open", action="store_true", help="open it to assessors at once")
    add_confirm_unplayable(create)
    add_database_option(create)
    create.set_defaults(run=run_create)


def _add_collection_files(create: argparse.ArgumentParser) -> None:
    """The runs, and the metadata, judgments and clips of a new campaign."""
    create.add_argument(
        "--runs",
        required=True,
        type=Path,
        metavar="PATH",
        help="TREC run file(s) (a file or a directory) or TSV system<TAB>query<TAB>doc",
    )
    add_order_by(create)
    create.add_argument(
        "--metadata", type=Path, metavar="FILE", help="TSV doc<TAB>artist<TAB>genre"
    )
    create.add_argument(
        "--judgments", type=Path, metavar="FILE", help="FINE judgments to import (0..100)"
    )
    add_deprecated_alias(create, "--judgments-fine", "--judgments")
    create.add_argument(
        "--judgments-broad", type=Path, metavar="FILE", help="BROAD judgments to import (0, 1, 2)"
    )
    create.add_argument(
        "--audio", type=Path, metavar="DIR", help="directory of <doc_id>.<ext> clips"
    )


def _add_engine_settings(create: argparse.ArgumentParser) -> None:
    """What the campaign's engine measures and estimates, and when it may stop."""
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
        "with one judgment in 20 given to a random audit; 'uniform' is the reference prior. "
        "Stored campaigns and replays may use the others; the calibration page measures every "
        f"estimator's confidence: {doc_link('calibration', option_help=True)})",
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


def _add_judging_settings(create: argparse.ArgumentParser) -> None:
    """How pairs are handed out to assessors."""
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
    add_cut_options(create)


def run_create(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.campaigns.changes import record_campaign_created
    from mtcjudge.campaigns.creation import create_campaign
    from mtcjudge.campaigns.spec import CampaignSpec

    settings_for(args.database_url)  # a bad URL fails before the files are read
    # read every file before touching the database: a bad line costs nothing
    runs = read_runs(args.runs, order_by=args.order_by)
    warn_score_order(err, runs)
    metadata = read_metadata(args.metadata) if args.metadata else None
    fine = read_judgments(args.judgments, "fine") if args.judgments else None
    broad = read_judgments(args.judgments_broad, "broad") if args.judgments_broad else None
    offsets = read_clip_offsets(args.clip_offsets) if args.clip_offsets else None
    spec = CampaignSpec(
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
        listen_seconds=args.listen_seconds,
        quality_rate=args.quality_rate,
        auto_pause=args.auto_pause,
        clip_cut=args.clip_cut or ("offsets" if offsets else "excerpt"),
        excerpt_seconds=args.excerpt_seconds,
        excerpt_start_fraction=args.excerpt_start,
    )

    def create(session: Session, _settings: Settings) -> None:
        campaign, report = create_campaign(
            session,
            spec,
            runs,
            metadata,
            judgments_fine=fine,
            judgments_broad=broad,
            audio_dir=args.audio,
            confirm_unplayable=args.confirm_unplayable,
            clip_offsets=offsets,
        )
        record_campaign_created(session, campaign, audit.command_line_actor(), report, runs)
        out.write(format_import_report(campaign, report, args.audio, runs) + "\n")
        if campaign.status == "draft":
            confirm = " --confirm-unplayable" if report.n_unplayable_pairs else ""
            out.write(
                f"open it to assessors with: mtcjudge campaign open {campaign.slug}{confirm}\n"
            )

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
        for name in (
            "target",
            "lease_minutes",
            "judgments_per_pair",
            "keep_collecting",
            "listen_seconds",
            "quality_rate",
            "auto_pause",
        )
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
    from mtcjudge.pool.service import unplayable_summary

    new_status = {"open": "open", "close": "closed"}[args.campaign_command]

    def change(session: Session, _settings: Settings) -> None:
        campaign = service.get_campaign(session, args.slug)
        # opening with pairs that cannot be played needs --confirm-unplayable (else exit 2)
        service.update_campaign(
            session,
            campaign,
            audit.command_line_actor(),
            confirm_unplayable=getattr(args, "confirm_unplayable", False),
            status=new_status,
        )
        out.write(f"campaign {campaign.slug} is {campaign.status}\n")
        if campaign.status == "open" and (problem := unplayable_summary(session, campaign)):
            out.write(f"warning: {printable(problem)}\n")

    return run_in_session(args, err, change)


def format_import_report(
    campaign: Campaign, report: ImportReport, audio: Path | None, runs: Runs | None = None
) -> str:
    """The few lines ``campaign create`` prints (with ``runs``: how their lists were ordered,
    when it matters)."""
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
    if runs is not None and (order := run_order_line(runs.order_by, len(runs.score_conflicts))):
        lines.append(order)
    if audio is None:
        lines.append("  audio               none (no --audio directory)")
        lines.append(
            f"  cannot be judged    all {report.n_pool_pairs} pool pairs: without audio no "
            "pair can be played, so assessors are given nothing to judge"
        )
        return "\n".join(lines)
    lines.append(
        f"  audio               {report.audio_found} found, {len(report.audio_missing)} "
        f"missing, {len(report.audio_unreadable)} unreadable in {audio}"
    )
    lines.append(f"  clips               {cut_text(campaign)}, served as MP3")
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
    if report.n_unplayable_pairs >= report.n_pool_pairs:
        lines.append(
            f"  cannot be judged    all {report.n_pool_pairs} pool pairs (no clip found and "
            "readable for them): assessors are given nothing to judge"
        )
    elif report.n_unplayable_pairs:
        lines.append(
            f"  cannot be judged    {report.n_unplayable_pairs} of {report.n_pool_pairs} "
            "pool pairs (a clip has no readable audio): assessors are not given them"
        )
    return "\n".join(lines)
