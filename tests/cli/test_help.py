"""Help and version: every option explained, defaults shown once, never "(default: None)"."""

from __future__ import annotations

import argparse
import re
from importlib.metadata import version

import pytest

from mtcjudge.cli import build_parser, main
from mtcjudge.cli.common import DeprecatedAlias
from tests.cli import parsers

# bench/load.py defines its own options (``mtcjudge bench load`` runs it unchanged)
ALL = [
    pytest.param(path, parser, id=" ".join(path) or "mtcjudge")
    for path, parser in parsers(build_parser())
    if path != ("bench", "load")
]


@pytest.mark.parametrize(("path", "parser"), ALL)
def test_every_option_and_argument_has_help(
    path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            assert all(choice.help for choice in action._choices_actions), path
            continue
        if isinstance(action, DeprecatedAlias):  # an old spelling, hidden on purpose
            continue
        assert action.help, (path, action.dest)
        assert action.help != argparse.SUPPRESS, (path, action.dest)


@pytest.mark.parametrize(("path", "parser"), ALL)
def test_defaults_are_shown_once_and_never_as_none(
    path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    text = parser.format_help()
    assert "(default: None)" not in text
    # one entry per option: from its flags to the next option's flags
    entries = re.split(r"\n  (?=-)", text.split("options:", 1)[1])
    for entry in entries:
        assert len(re.findall(r"\bdefault\b", entry)) <= 1, (path, entry)
    for action in parser._actions:
        # a real default is shown (false flags and unset options have none to show)
        if action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
            entry = next(e for e in entries if e.lstrip().startswith(action.option_strings[0]))
            assert "default" in entry, (path, action.option_strings)


def test_zero_defaults_are_shown() -> None:
    text = dict(parsers(build_parser()))[("simulate",)].format_help()
    assert re.search(r"--seed SEED\s+seed of the random choices \(default: 0\)", text)


def test_version_is_the_installed_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"mtcjudge {version('mtcjudge')}\n"


def test_campaign_create_offers_only_the_campaign_estimators(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["campaign", "create", "--name", "x", "--runs", "r.tsv", "--model", "ordinal"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--model: invalid choice: 'ordinal' (choose from 'joint', 'uniform')" in err
