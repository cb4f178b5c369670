"""``mtcjudge campaign add-runs|import-bundle``: a campaign's data brought in from files after
``campaign create``: new systems' runs (thin over mtcjudge.campaigns.creation), or a whole
campaign from an export bundle (thin over mtcjudge.exports.restore)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mtcjudge import audit
from mtcjudge.cli.common import (
    SubParsers,
    add_campaign_argument,
    add_parser,
    shown_list,
)
from mtcjudge.cli.database import add_database_option, run_in_session, settings_for
from mtcjudge.cli.docs import doc_link
from mtcjudge.cli.run_order import add_order_by, run_order_line, warn_score_order
from mtcjudge.config import Settings
from mtcjudge.ingest.formats import read_metadata, read_runs
from mtcjudge.validation import printable

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from mtcjudge.campaigns.changes import AddRunsReport
    from mtcjudge.models import Campaign

__all__ = ["format_add_runs_report", "register"]


def register(actions: SubParsers) -> None:
    """Add ``add-runs`` and ``import-bundle`` to the actions of ``mtcjudge campaign``."""
    _add_add_runs(actions)
    _add_import_bundle(actions)


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
        f"Nothing is saved when a file is wrong. More: {doc_link('reuse')}.",
    )
    add_campaign_argument(add_runs)
    add_runs.add_argument(
        "--runs",
        required=True,
        type=Path,
        metavar="PATH",
        help="TREC run file(s) (a file or a directory) or TSV system<TAB>query<TAB>doc",
    )
    add_order_by(add_runs)
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
        f"new link. Audio is not in a bundle: give --audio again. More: {doc_link('exports')}.",
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
    from mtcjudge.exports.bundle_read import open_bundle
    from mtcjudge.exports.restore import restore_campaign
    from mtcjudge.pool.service import unplayable_summary

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
            f"working links (mtcjudge assessor relink {campaign.slug} --name A1)"
            if report.n_assessors
            else "  assessors           none",
        ]
        if args.audio is not None:
            lines.append(
                f"  audio               {report.audio_found} found, {report.audio_missing} "
                f"missing in {args.audio}"
            )
        else:
            lines.append("  audio               none (no --audio directory)")
        if problem := unplayable_summary(session, campaign):
            lines.append(f"  cannot be judged    {printable(problem)}")
        out.write("\n".join(lines) + "\n")

    try:
        return run_in_session(args, err, restore, create=True)
    finally:
        bundle.archive.close()


def run_add_runs(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.campaigns import service
    from mtcjudge.campaigns.creation import add_runs

    settings_for(args.database_url)
    runs = read_runs(args.runs, order_by=args.order_by)
    warn_score_order(err, runs)
    metadata = read_metadata(args.metadata) if args.metadata else None

    def add(session: Session, _settings: Settings) -> None:
        campaign = service.get_campaign(session, args.slug)
        report = add_runs(
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
    if order := run_order_line(report.order_by, report.n_score_conflicts):
        lines.append(order)
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
