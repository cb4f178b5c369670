"""``mtcjudge organizer create|list|passwd|disable|enable``: organizer accounts, thin over
mtcjudge.organizers.service.

Passwords are asked for twice on the terminal (never echoed, never an option: a command line
is visible to other users of the machine), or read from standard input with
``--password-stdin`` (one line) for scripts. ``create`` may set up a new database, as
``campaign create`` does: it is often the first command run.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import TYPE_CHECKING, TextIO

from mtcjudge.cli.common import SubParsers, UsageError, add_parser
from mtcjudge.cli.database import add_database_option, run_in_session, settings_for
from mtcjudge.config import Settings
from mtcjudge.organizers.passwords import MIN_PASSWORD_LENGTH, check_password
from mtcjudge.validation import printable

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

__all__ = ["register"]


def register(sub: SubParsers) -> None:
    organizer = add_parser(
        sub, "organizer", "organizer accounts: who may sign in to the organizer pages"
    )
    actions = organizer.add_subparsers(dest="organizer_command", required=True, metavar="ACTION")

    create = add_parser(
        actions,
        "create",
        "add an organizer account",
        description="Add an organizer who signs in at /login with a username and a password "
        f"(at least {MIN_PASSWORD_LENGTH} characters), asked for twice on the terminal.",
    )
    _add_username(create)
    _add_password_stdin(create)
    add_database_option(create)
    create.set_defaults(run=run_create)

    listing = add_parser(actions, "list", "list the organizer accounts")
    add_database_option(listing)
    listing.set_defaults(run=run_list)

    passwd = add_parser(
        actions, "passwd", "set an organizer's password (their sessions end everywhere)"
    )
    _add_username(passwd)
    _add_password_stdin(passwd)
    add_database_option(passwd)
    passwd.set_defaults(run=run_passwd)

    for action, summary in (
        ("disable", "stop an organizer from signing in (their sessions end everywhere)"),
        ("enable", "let a disabled organizer sign in again"),
    ):
        change = add_parser(actions, action, summary)
        _add_username(change)
        add_database_option(change)
        change.set_defaults(run=run_disable_enable)


def _add_username(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "username", help="lowercase letters, digits and . _ @ - (at most 64 characters)"
    )


def _add_password_stdin(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of standard input instead of asking",
    )


def read_password(args: argparse.Namespace) -> str:
    """The new password: one line of standard input, or asked twice on the terminal.
    Checked before anything touches the database (UsageError)."""
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            raise UsageError("--password-stdin: standard input holds no password")
    else:
        try:
            password = getpass.getpass("Password: ")
            again = getpass.getpass("Repeat the password: ")
        except EOFError:
            raise UsageError(
                "no password given: type it when asked, or give it on standard input with "
                "--password-stdin"
            ) from None
        if password != again:
            raise UsageError("the two passwords differ; nothing was changed")
    try:
        check_password(password)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return password


def run_create(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge import audit
    from mtcjudge.organizers import service

    # a bad name or database URL fails before the password is asked for
    username = service.normalize_username(args.username)
    settings_for(args.database_url)
    password = read_password(args)

    def create(session: Session, settings: Settings) -> None:
        organizer = service.create_organizer(
            session, username, password, audit.command_line_actor()
        )
        out.write(f"created organizer {organizer.username}: sign in at {settings.base_url}/login\n")

    return run_in_session(args, err, create, create=True)


def run_list(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.organizers import service

    def show(session: Session, _settings: Settings) -> None:
        accounts = service.list_organizers(session)
        if not accounts:
            out.write("no organizers yet: create one with mtcjudge organizer create USERNAME\n")
            return
        width = max(len("USERNAME"), *(len(a.username) for a in accounts))
        out.write(f"{'USERNAME':<{width}}  STATE     SESSIONS  CREATED\n")
        for account in accounts:
            state = "disabled" if account.disabled else "active"
            created = account.created_at.strftime("%Y-%m-%d %H:%M UTC")
            out.write(
                f"{printable(account.username):<{width}}  {state:<8}  "
                f"{account.live_sessions:>8}  {created}\n"
            )

    return run_in_session(args, err, show)


def run_passwd(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge import audit
    from mtcjudge.organizers import service

    username = service.normalize_username(args.username)
    settings_for(args.database_url)
    password = read_password(args)

    def change(session: Session, _settings: Settings) -> None:
        ended = service.set_password(session, username, password, audit.command_line_actor())
        signed_out = f"; signed out of {ended} session{'s' if ended != 1 else ''}" if ended else ""
        out.write(f"new password for {username}{signed_out}\n")

    return run_in_session(args, err, change)


def run_disable_enable(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge import audit
    from mtcjudge.organizers import service

    disable = args.organizer_command == "disable"
    username = service.normalize_username(args.username)

    def change(session: Session, _settings: Settings) -> None:
        changed = service.set_disabled(session, username, disable, audit.command_line_actor())
        if not changed:
            out.write(f"{username} was already {'disabled' if disable else 'enabled'}\n")
        elif disable:
            out.write(f"{username} can no longer sign in (signed out everywhere)\n")
        else:
            out.write(f"{username} can sign in again\n")

    return run_in_session(args, err, change)
