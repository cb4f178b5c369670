"""What every command group shares: the exit-status-2 error, option types, help, output files.

Option types only convert the text; the checks are the engine's (:mod:`mtcjudge.mtc._validation`),
so the command line and the library refuse the same values with the same words.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Protocol, TextIO, TypeAlias, TypeVar
from urllib.parse import urlsplit

from mtcjudge.campaigns.limits import INT_SETTINGS
from mtcjudge.mtc._validation import check_confidence, check_int
from mtcjudge.validation import printable

__all__ = [
    "Command",
    "HelpFormatter",
    "SubParsers",
    "UsageError",
    "add_parser",
    "base_url",
    "check_output_file",
    "confidence",
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


SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


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


def confidence(name: str) -> Callable[[str], float]:
    """A confidence level option: a number from 0.5 to 1."""
    return _option_type(float, lambda value: check_confidence(name, value), "a number")


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


def add_parser(sub: SubParsers, name: str, summary: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A subcommand whose help shows defaults the :class:`HelpFormatter` way."""
    return sub.add_parser(name, help=summary, formatter_class=HelpFormatter, **kwargs)


def write_atomically(path: Path, write: Callable[[BinaryIO], _T]) -> _T:
    """Call ``write`` on a new file next to ``path``, then rename it to ``path``: a failure
    (or Ctrl+C) leaves no half-written file, and an existing ``path`` stays as it was."""
    fd, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as target:
            result = write(target)
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return result
