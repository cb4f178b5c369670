"""One name per concept across commands, the old names still working, short modules.

A judgments file is ``--judgments`` and an existing campaign the argument ``SLUG`` in every
command (the module docstring of :mod:`mtcjudge.cli` says so); the spellings they replace
(``evaluate --qrels``, ``campaign create --judgments-fine``, ``assessor ... --campaign``) are
hidden from ``--help``, still work, and print one line on stderr saying what to write instead.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import mtcjudge.cli
from mtcjudge.cli import build_parser
from mtcjudge.cli.common import DeprecatedAlias
from tests.cli import parsers, run

CLI = Path(mtcjudge.cli.__file__).parent
MAX_LINES = 400

OLD_NAMES = {"--qrels": "--judgments", "--judgments-fine": "--judgments", "--campaign": "SLUG"}

ALL = [
    pytest.param(path, parser, id=" ".join(path) or "mtcjudge")
    for path, parser in parsers(build_parser())
]


@pytest.mark.parametrize(("path", "parser"), ALL)
def test_the_old_names_are_not_offered(
    path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    text = parser.format_help()
    for old in OLD_NAMES:
        assert f"{old} " not in text, (path, old)
    for action in parser._actions:
        if set(action.option_strings) & set(OLD_NAMES):
            assert isinstance(action, DeprecatedAlias), (path, action.option_strings)
            assert action.help == argparse.SUPPRESS


ABOUT_A_CAMPAIGN = [
    ("export",),
    ("report",),
    *(("campaign", verb) for verb in ("open", "close", "set", "add-runs", "status")),
    *(("assessor", verb) for verb in ("invite", "list", "relink", "revoke")),
]


@pytest.mark.parametrize("path", ABOUT_A_CAMPAIGN, ids=" ".join)
def test_a_campaign_is_the_argument_slug(path: tuple[str, ...]) -> None:
    parser = dict(parsers(build_parser()))[path]
    (slug,) = [a for a in parser._actions if not a.option_strings and a.dest == "slug"]
    assert slug.metavar == "SLUG"
    assert parser.format_usage().rstrip().endswith(" SLUG")  # shown as required


def test_the_judgments_file_is_one_option() -> None:
    named = {
        path: {option for a in parser._actions for option in a.option_strings}
        for path, parser in parsers(build_parser())
    }
    for path in [("evaluate",), ("campaign", "create")]:
        assert "--judgments" in named[path], path


@pytest.fixture
def collection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("MTCJUDGE_BASE_URL", "https://judge.example.org")
    (tmp_path / "runs.tsv").write_text("S1\tq1\td1\nS2\tq1\td2\nS1\tq2\td3\nS2\tq2\td1\n")
    (tmp_path / "fine.tsv").write_text("q1\td1\t80\nq1\td2\t20\nq2\td3\t50\nq2\td1\t40\n")
    return tmp_path, f"sqlite:///{tmp_path / 'db.sqlite3'}"


def test_evaluate_qrels_is_judgments_with_a_note(collection: tuple[Path, str]) -> None:
    folder, _ = collection
    argv = ["evaluate", "--runs", str(folder / "runs.tsv"), "--scale", "fine"]
    new = run(*argv, "--judgments", str(folder / "fine.tsv"))
    old = run(*argv, "--qrels", str(folder / "fine.tsv"))
    assert new[0] == old[0] == 0
    assert old[1] == new[1]
    assert new[2] == ""
    assert old[2] == "mtcjudge evaluate: note: --qrels is deprecated, use --judgments\n"


def test_campaign_create_judgments_fine_is_judgments_with_a_note(
    collection: tuple[Path, str],
) -> None:
    folder, database = collection
    argv = ["campaign", "create", "--runs", str(folder / "runs.tsv"), "--database-url", database]
    code, new, err = run(*argv, "--name", "New", "--judgments", str(folder / "fine.tsv"))
    assert (code, err) == (0, "")
    code, old, err = run(*argv, "--name", "Old", "--judgments-fine", str(folder / "fine.tsv"))
    assert code == 0
    assert (
        err == "mtcjudge campaign create: note: --judgments-fine is deprecated, use --judgments\n"
    )
    assert "imported judgments  4\n" in new
    assert "imported judgments  4\n" in old


def test_assessor_campaign_option_is_the_slug_with_a_note(collection: tuple[Path, str]) -> None:
    folder, database = collection
    create = ["campaign", "create", "--name", "AMS", "--runs", str(folder / "runs.tsv")]
    assert run(*create, "--database-url", database)[0] == 0
    db = ["--database-url", database]
    code, out, err = run("assessor", "invite", "ams", "--name", "Ada", *db)
    assert (code, err) == (0, "")
    code, out, err = run("assessor", "invite", "--campaign", "ams", "--name", "Bob", *db)
    assert code == 0
    assert err == (
        "mtcjudge assessor invite: note: --campaign is deprecated, give the campaign's slug as "
        "an argument: mtcjudge assessor invite SLUG ...\n"
    )
    # the same campaign given both ways is no conflict
    code, out, _ = run("assessor", "list", "ams", "--campaign", "ams", *db)
    assert code == 0
    assert out == "Ada  invited\nBob  invited\n"


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--name", "Ada"], "the following arguments are required: SLUG"),
        (
            ["ams", "--campaign", "other", "--name", "Ada"],
            "two campaigns given: ams and --campaign",
        ),
    ],
)
def test_assessor_needs_one_campaign(
    argv: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run("assessor", "invite", *argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: mtcjudge assessor invite ")
    assert f"mtcjudge assessor invite: error: {problem}" in err


CLI_MODULES = sorted(CLI.rglob("*.py"))


# Every module of the command line, with none left out.
@pytest.mark.parametrize(
    "module", CLI_MODULES, ids=[p.relative_to(CLI).as_posix() for p in CLI_MODULES]
)
def test_no_command_line_module_is_over_400_lines(module: Path) -> None:
    lines = len(module.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{module.name}: {lines} lines"
