"""``mtcjudge assessor invite|list|relink|revoke SLUG``: thin over mtcjudge.campaigns.service.

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

    from mtcjudge.models import Assessor

__all__ = ["register"]


def register(sub: SubParsers) -> None:
    assessor = add_parser(sub, "assessor", "invite assessors, renew or revoke their links")
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


def _state(assessor: Assessor) -> str:
    if assessor.revoked_at:
        return "revoked"
    return "consented" if assessor.consented_at else "invited"


def run_list(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.campaigns import service

    def members(session: Session, _settings: Settings) -> None:
        campaign = service.get_campaign(session, args.slug)
        for assessor in service.list_assessors(session, campaign):
            email = f" <{printable(assessor.email)}>" if assessor.email else ""
            out.write(f"{printable(assessor.name)}{email}  {_state(assessor)}\n")

    return run_in_session(args, err, members)
