"""``mtcjudge assessor invite|list|relink|revoke|set-aside|bring-back|pause|resume SLUG``: thin
over mtcjudge.campaigns.service and mtcjudge.assessors.actions.

A personal link is the server's public address followed by ``/a/TOKEN``. The command line
runs apart from the server, so it cannot see where the server listens: the address comes from
``--base-url``, else ``MTCJUDGE_BASE_URL`` (what the server's own API uses too, see
``mtcjudge serve``), else the default address of ``mtcjudge serve``, and then the command says
so on stderr rather than silently assuming it.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, TextIO

from mtcjudge import audit
from mtcjudge.cli.common import SubParsers, add_campaign_argument, add_parser, base_url
from mtcjudge.cli.database import add_database_option, run_in_session
from mtcjudge.config import Settings
from mtcjudge.validation import printable

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from mtcjudge.assessors.overview import AssessorOverview

__all__ = ["register"]


def register(sub: SubParsers) -> None:
    assessor = add_parser(
        sub,
        "assessor",
        "invite assessors, renew or revoke their links, set their judgments aside, pause them",
    )
    actions = assessor.add_subparsers(dest="assessor_command", required=True, metavar="ACTION")

    invite = add_parser(actions, "invite", "add an assessor and print the personal link")
    add_campaign_argument(invite, old_option="--campaign")
    invite.add_argument("--name", required=True, help="the assessor's name, unique in a campaign")
    invite.add_argument("--email", help="the assessor's e-mail address, for your records")
    _add_link_options(invite)
    invite.set_defaults(run=run_invite)

    members = add_parser(actions, "list", "list the assessors of a campaign and their state")
    add_campaign_argument(members, old_option="--campaign")
    add_database_option(members)
    members.set_defaults(run=run_list)

    relink = add_parser(
        actions, "relink", "give an assessor a new personal link (the old one stops working)"
    )
    add_campaign_argument(relink, old_option="--campaign")
    relink.add_argument("--name", required=True, help="the assessor's name")
    _add_link_options(relink)
    relink.set_defaults(run=run_relink)

    revoke = add_parser(
        actions, "revoke", "make an assessor's link stop working (their judgments stay)"
    )
    add_campaign_argument(revoke, old_option="--campaign")
    revoke.add_argument("--name", required=True, help="the assessor's name")
    add_database_option(revoke)
    revoke.set_defaults(run=run_revoke)

    aside = add_parser(
        actions,
        "set-aside",
        "set an assessor's judgments aside: they count nowhere and their pairs go back to the "
        "pool; the assessor is handed no more pairs",
    )
    add_campaign_argument(aside, old_option="--campaign")
    aside.add_argument("--name", required=True, help="the assessor's name")
    add_database_option(aside)
    aside.set_defaults(run=run_set_aside)

    back = add_parser(
        actions,
        "bring-back",
        "bring an assessor's set-aside judgments back (those whose pair was not judged again "
        "meanwhile)",
    )
    add_campaign_argument(back, old_option="--campaign")
    back.add_argument("--name", required=True, help="the assessor's name")
    add_database_option(back)
    back.set_defaults(run=run_bring_back)

    pause = add_parser(actions, "pause", "hand an assessor no more pairs for now")
    add_campaign_argument(pause, old_option="--campaign")
    pause.add_argument("--name", required=True, help="the assessor's name")
    pause.add_argument(
        "--message",
        help="what the assessor is told (default: a kind word that you will be in touch)",
    )
    add_database_option(pause)
    pause.set_defaults(run=run_pause)

    resume = add_parser(actions, "resume", "hand a paused assessor pairs again")
    add_campaign_argument(resume, old_option="--campaign")
    resume.add_argument("--name", required=True, help="the assessor's name")
    add_database_option(resume)
    resume.set_defaults(run=run_resume)


def _add_link_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base-url",
        type=base_url,
        metavar="URL",
        help="public address of the server, the start of the link (default: "
        f"$MTCJUDGE_BASE_URL, else {Settings.base_url}, the address of 'mtcjudge serve' "
        "without options)",
    )
    add_database_option(parser)


def _write_link(args: argparse.Namespace, out: TextIO, err: TextIO, link: str) -> None:
    out.write(link + "\n")
    if not args.base_url and not os.environ.get("MTCJUDGE_BASE_URL"):
        err.write(
            f"mtcjudge: note: the link assumes the server is at {Settings.base_url}, the "
            "default of 'mtcjudge serve'; if it is elsewhere, give --base-url (or set "
            "MTCJUDGE_BASE_URL) and make a new link with 'assessor relink'\n"
        )


def run_invite(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.campaigns import service

    def invite(session: Session, settings: Settings) -> None:
        campaign = service.get_campaign(session, args.slug)
        assessor, token = service.invite_assessor(session, campaign, args.name, args.email)
        audit.record(
            session, campaign.id, audit.command_line_actor(), audit.ASSESSOR_INVITED, assessor.name
        )
        out.write(
            f"invited {printable(assessor.name)} to {campaign.slug}; their personal link "
            "(shown only now: keep it, or make a new one with 'assessor relink'):\n"
        )
        _write_link(args, out, err, service.assessor_link(settings, token))

    return run_in_session(args, err, invite, base_url=args.base_url)


def run_relink(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.campaigns import service

    def relink(session: Session, settings: Settings) -> None:
        campaign = service.get_campaign(session, args.slug)
        assessor = service.find_assessor(session, campaign, args.name)
        token = service.reissue_link(session, assessor)
        audit.record(
            session, campaign.id, audit.command_line_actor(), audit.ASSESSOR_RELINKED, assessor.name
        )
        out.write(
            f"new personal link of {printable(assessor.name)} (the old one no longer works):\n"
        )
        _write_link(args, out, err, service.assessor_link(settings, token))

    return run_in_session(args, err, relink, base_url=args.base_url)


def run_revoke(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.campaigns import service

    def revoke(session: Session, _settings: Settings) -> None:
        campaign = service.get_campaign(session, args.slug)
        assessor = service.find_assessor(session, campaign, args.name)
        service.revoke_link(session, assessor)
        audit.record(
            session, campaign.id, audit.command_line_actor(), audit.ASSESSOR_REVOKED, assessor.name
        )
        out.write(f"the link of {printable(assessor.name)} no longer works\n")

    return run_in_session(args, err, revoke)


def _state(assessor: AssessorOverview) -> str:
    """The link's state, then what organizers and the planner said, when anything."""
    words = [assessor.state]
    if assessor.set_aside:
        words.append(f"{assessor.set_aside_judgments} judgment(s) set aside")
    if assessor.paused:
        words.append("paused")
    r = assessor.reliability
    if r.flagged:
        words.append("flagged: " + " ".join(r.reasons) if r.reasons else "flagged")
    return "; ".join(words)


def run_list(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.assessors.overview import assessor_overview
    from mtcjudge.campaigns import service

    def members(session: Session, _settings: Settings) -> None:
        campaign = service.get_campaign(session, args.slug)
        emails = {a.id: a.email for a in service.list_assessors(session, campaign)}
        for assessor in assessor_overview(session, campaign):
            email = emails.get(assessor.id)
            shown = f" <{printable(email)}>" if email else ""
            out.write(f"{printable(assessor.name)}{shown}  {printable(_state(assessor))}\n")

    return run_in_session(args, err, members)


def _report_action(args: argparse.Namespace, out: TextIO, err: TextIO, action: str) -> int:
    """Run ``set_aside`` or ``bring_back`` of :mod:`mtcjudge.assessors.actions` on the named
    assessor and print its report."""
    from mtcjudge.assessors import actions
    from mtcjudge.campaigns import service

    def act(session: Session, _settings: Settings) -> None:
        campaign = service.get_campaign(session, args.slug)
        assessor = service.find_assessor(session, campaign, args.name)
        actor = audit.command_line_actor()
        report: actions.SetAsideReport | actions.BringBackReport
        if action == "set_aside":
            report = actions.set_aside(session, campaign, assessor.id, actor)
        else:
            report = actions.bring_back(session, campaign, assessor.id, actor)
        out.write(printable(report.summary()) + "\n")

    return run_in_session(args, err, act)


def run_set_aside(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    return _report_action(args, out, err, "set_aside")


def run_bring_back(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    return _report_action(args, out, err, "bring_back")


def run_pause(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.assessors import actions
    from mtcjudge.campaigns import service

    def pause(session: Session, _settings: Settings) -> None:
        campaign = service.get_campaign(session, args.slug)
        assessor = service.find_assessor(session, campaign, args.name)
        report = actions.pause(
            session, campaign, assessor.id, audit.command_line_actor(), args.message
        )
        told = report.message or actions.DEFAULT_PAUSE_MESSAGE
        out.write(f"{printable(assessor.name)} is paused and is told: {printable(told)}\n")

    return run_in_session(args, err, pause)


def run_resume(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.assessors import actions
    from mtcjudge.campaigns import service

    def resume(session: Session, _settings: Settings) -> None:
        campaign = service.get_campaign(session, args.slug)
        assessor = service.find_assessor(session, campaign, args.name)
        actions.resume(session, campaign, assessor.id, audit.command_line_actor())
        out.write(f"{printable(assessor.name)} may judge again\n")

    return run_in_session(args, err, resume)
