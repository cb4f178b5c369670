"""What every command group shares: the exit-status-2 error, option types, help, output files.

Option types only convert the text; the checks are the engine's (:mod:`mtcjudge.mtc._validation`),
so the command line and the library refuse the same values with the same words.
"""

from __future__ import annotations

import argparse
import os
import stat
import tempfile
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Protocol, TextIO, TypeAlias, TypeVar
from urllib.parse import urlsplit

from mtcjudge.campaigns.limits import FLOAT_SETTING_HELP, FLOAT_SETTINGS, INT_SETTINGS
from mtcjudge.clips.cut import Cut
from mtcjudge.models import DEFAULT_LISTEN_SECONDS, DEFAULT_QUALITY_RATE
from mtcjudge.mtc._validation import check_confidence, check_int
from mtcjudge.validation import printable

__all__ = [
    "DEPRECATION_NOTES",
    "Command",
    "DeprecatedAlias",
    "HelpFormatter",
    "Parser",
    "SubParsers",
    "UsageError",
    "add_campaign_argument",
    "add_confirm_unplayable",
    "add_deprecated_alias",
    "add_parser",
    "add_quality_options",
    "base_url",
    "check_output_file",
    "confidence",
    "float_setting",
    "int_setting",
    "integer",
    "port",
    "shown_list",
    "write_atomically",
]

_T = TypeVar("_T")

_SHOWN_ITEMS = 10


class UsageError(Exception):
    """A problem with the command line, its input files or its database (exit status 2)."""


class Command(Protocol):
    """What a leaf parser runs (``set_defaults(run=...)``): returns the exit status."""

    def __call__(self, args: argparse.Namespace, out: TextIO, err: TextIO) -> int: ...


SubParsers: TypeAlias = "argparse._SubParsersAction[Parser]"


class Parser(argparse.ArgumentParser):
    """argparse's parser, plus checks that run once the command line is parsed.

    A check takes the parsed namespace, may change it, and returns the problem to report (as
    argparse reports its own: usage and exit status 2) or None. Every subcommand's parser is
    of this class too (``add_subparsers`` makes its children of the parent's class).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.checks: list[Callable[[argparse.Namespace], str | None]] = []

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace or argparse.Namespace())
        for check in self.checks:
            if (problem := check(parsed)) is not None:
                self.error(problem)
        return parsed, extras


#: the namespace attribute listing the deprecation notes of a command line, for main to print
DEPRECATION_NOTES = "deprecation_notes"


class DeprecatedAlias(argparse.Action):
    """An old spelling of an option, still accepted: hidden from ``--help``, it stores into the
    new option's ``dest`` and leaves a one-line note saying what to write instead."""

    def __init__(
        self, option_strings: Sequence[str], dest: str, *, instead: str, **kwargs: Any
    ) -> None:
        kwargs["help"] = argparse.SUPPRESS
        super().__init__(option_strings, dest, **kwargs)
        self.instead = instead

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        notes = getattr(namespace, DEPRECATION_NOTES, None) or []
        notes.append(f"{parser.prog}: note: {option_string} is deprecated, {self.instead}")
        setattr(namespace, DEPRECATION_NOTES, notes)


def add_deprecated_alias(
    parser: argparse.ArgumentParser, old: str, new: str, **kwargs: Any
) -> None:
    """Accept option ``old`` as the hidden, deprecated spelling of option ``new``."""
    (action,) = (a for a in parser._actions if new in a.option_strings)
    if action.type is not None:
        kwargs["type"] = action.type
    parser.add_argument(
        old,
        action=DeprecatedAlias,
        dest=action.dest,
        metavar=action.metavar,
        instead=f"use {new}",
        **kwargs,
    )


class _CampaignArgument(argparse._StoreAction):
    """The campaign's slug as an argument that may instead come from a deprecated option:
    optional for argparse (``nargs="?"``), required by a check, and shown as required."""


def add_campaign_argument(parser: Parser, *, old_option: str | None = None) -> None:
    """The ``SLUG`` argument naming an existing campaign (``args.slug``).

    ``old_option`` (e.g. ``--campaign``) is an older way of giving it, still accepted as a
    hidden, deprecated option."""
    help_text = "the campaign's URL name"
    if old_option is None:
        parser.add_argument("slug", metavar="SLUG", help=help_text)
        return
    parser.add_argument("slug", metavar="SLUG", nargs="?", action=_CampaignArgument, help=help_text)
    example = f"{parser.prog} SLUG ..."
    parser.add_argument(
        old_option,
        dest="slug_option",
        metavar="SLUG",
        action=DeprecatedAlias,
        instead=f"give the campaign's slug as an argument: {example}",
    )

    def one_slug(args: argparse.Namespace) -> str | None:
        given = args.__dict__.pop("slug_option")
        if given is not None and args.slug is not None and given != args.slug:
            return f"two campaigns given: {args.slug} and {old_option} {given}"
        args.slug = args.slug or given
        return "the following arguments are required: SLUG" if args.slug is None else None

    parser.checks.append(one_slug)


class HelpFormatter(argparse.HelpFormatter):
    """Shows an option's default after its help, once, and only when there is one to show.

    argparse's ``ArgumentDefaultsHelpFormatter`` prints ``(default: None)`` for options
    without a default and a second default after help texts that already state theirs.
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            not action.option_strings
            or action.default is None
            or action.default is False
            or action.default == argparse.SUPPRESS
            or "default" in text
        ):
            return text
        return f"{text} (default: %(default)s)"

    def _format_args(self, action: argparse.Action, default_metavar: str) -> str:
        if isinstance(action, _CampaignArgument):  # required, though argparse does not check it
            return self._metavar_formatter(action, default_metavar)(1)[0]
        return super()._format_args(action, default_metavar)

    # a path or an address is never cut in two: it stays whole on a line of its own
    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(
            " ".join(text.split()), width, break_long_words=False, break_on_hyphens=False
        )

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(
            " ".join(text.split()),
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )


def _option_type(
    convert: Callable[[str], _T], check: Callable[[_T], object], what: str
) -> Callable[[str], _T]:
    """An argparse type: ``convert`` the text, then ``check`` it (a ValueError is a usage error)."""

    def parse(text: str) -> _T:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, found {text!r}") from None
        try:
            check(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return value

    parse.__name__ = what  # argparse names the type in some messages
    return parse


def integer(name: str, minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An integer option from ``minimum`` (to ``maximum``)."""
    return _option_type(int, lambda value: check_int(name, value, minimum, maximum), "an integer")


def int_setting(name: str) -> Callable[[str], int]:
    """A campaign's integer setting, in the range the database accepts (``INT_SETTINGS``)."""
    minimum, maximum = INT_SETTINGS[name]
    return integer(name.replace("_", " "), minimum, maximum)


def float_setting(name: str) -> Callable[[str], float]:
    """A campaign's decimal setting, in its range (``FLOAT_SETTINGS``; 0 turns it off)."""
    low, high = FLOAT_SETTINGS[name]

    def check(value: float) -> None:
        if not low <= value <= high:  # NaN fails too
            raise ValueError(
                f"{name.replace('_', ' ')} must be a number from {low:g} to {high:g} "
                f"(0 turns it off), found {value:g}"
            )

    return _option_type(float, check, "a number")


def confidence(name: str) -> Callable[[str], float]:
    """A confidence level option: a number from 0.5 to 1."""
    return _option_type(float, lambda value: check_confidence(name, value), "a number")


def cut_number(name: str) -> Callable[[str], float]:
    """``--excerpt-seconds`` or ``--excerpt-start``, checked as the campaign checks them."""

    def check(value: float) -> None:
        if name == "excerpt_seconds":
            Cut("excerpt", seconds=value)
        else:
            Cut("excerpt", start_fraction=value)

    return _option_type(float, check, "a number")


def add_confirm_unplayable(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--confirm-unplayable",
        action="store_true",
        help="open it although some pool pairs cannot be played (a clip is missing or "
        "unreadable; every pair without audio): they are never handed out. Without this "
        "flag, opening such a campaign stops with exit status 2 and says which clips",
    )


def add_quality_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """--listen-seconds, --quality-rate and --auto-pause/--no-auto-pause; with ``defaults``
    a new campaign's (``campaign create``), else None: unchanged (``campaign set``)."""
    parser.add_argument(
        "--listen-seconds",
        type=float_setting("listen_seconds"),
        default=DEFAULT_LISTEN_SECONDS if defaults else None,
        metavar="S",
        help=FLOAT_SETTING_HELP["listen_seconds"] + (" (default %(default)s)" if defaults else ""),
    )
    parser.add_argument(
        "--quality-rate",
        type=float_setting("quality_rate"),
        default=DEFAULT_QUALITY_RATE if defaults else None,
        metavar="R",
        help=FLOAT_SETTING_HELP["quality_rate"] + (" (default %(default)s)" if defaults else ""),
    )
    pause = parser.add_mutually_exclusive_group()
    pause.add_argument(
        "--auto-pause",
        dest="auto_pause",
        action="store_true",
        default=False if defaults else None,
        help="pause an assessor automatically, with a kind message, when they fail quality "
        "trials" + (" (default: off)" if defaults else ""),
    )
    pause.add_argument(
        "--no-auto-pause",
        dest="auto_pause",
        action="store_false",
        help="never pause assessors automatically",
    )


port = integer("the port", 1, 65535)


def _check_base_url(text: str) -> None:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"expected an address such as https://judge.example.org, found {text!r}")


base_url = _option_type(lambda text: text.strip().rstrip("/"), _check_base_url, "an address")


def check_output_file(option: str, path: Path | None, suffixes: Sequence[str] = ()) -> None:
    """Fail now, not after the work, when ``path`` cannot be written (UsageError)."""
    if path is None:
        return
    if suffixes and path.suffix.lower() not in suffixes:
        expected = " or ".join(suffixes)
        raise UsageError(f"{option}: expected a {expected} file name, found {path}")
    directory = path.parent
    if not directory.is_dir():
        raise UsageError(f"{option}: {path}: the directory {directory} does not exist")
    if path.is_dir():
        raise UsageError(f"{option}: {path} is a directory, expected a file name")
    if not os.access(directory, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"{option}: {path}: permission denied")


def shown_list(items: Sequence[str]) -> str:
    """The first few ``items``, printable, and how many more there are."""
    text = ", ".join(printable(item) for item in items[:_SHOWN_ITEMS])
    if len(items) > _SHOWN_ITEMS:
        text += f" and {len(items) - _SHOWN_ITEMS} more"
    return text


def add_parser(sub: SubParsers, name: str, summary: str, **kwargs: Any) -> Parser:
    """A subcommand whose help shows defaults the :class:`HelpFormatter` way."""
    parser = sub.add_parser(name, help=summary, formatter_class=HelpFormatter, **kwargs)
    if not isinstance(parser, Parser):
        raise TypeError(f"{name}: a command's parser is made by mtcjudge.cli.common.Parser")
    return parser


def _new_file_mode(path: Path) -> int:
    """The permissions ``path`` gets: those of the file it replaces, else what the umask
    leaves of rw-rw-rw- (as ``open(path, "w")`` or a shell's ``>`` would give)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0o077)  # read it: os.umask only reads by setting, set it back at once
        os.umask(umask)
        return 0o666 & ~umask


def write_atomically(path: Path, write: Callable[[BinaryIO], _T]) -> _T:
    """Call ``write`` on a new file next to ``path``, then rename it to ``path``: a failure
    (or Ctrl+C) leaves no half-written file, and an existing ``path`` stays as it was.

    The file gets the mode of the one it replaces, else the umask's (a temporary file is
    created private, mode 0600, and would otherwise keep that mode)."""
    fd, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as target:
            os.fchmod(target.fileno(), _new_file_mode(path))
            result = write(target)
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return result
