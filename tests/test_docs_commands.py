"""Every ``mtcjudge ...`` command line the README, CONTRIBUTING and docs/ show still parses.

The command lines are taken from the ``bash``/``sh`` code blocks of README.md, CONTRIBUTING.md
and docs/*.md (not docs/experiments/: those are dated records of what was run then). Each is
parsed by the real parser (:func:`mtcjudge.cli.build_parser`), never run, and must use no
deprecated spelling (``evaluate --qrels``, ``assessor ... --campaign``): a page that still
shows a removed or renamed option fails here.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from mtcjudge.cli import build_parser
from mtcjudge.cli.common import DEPRECATION_NOTES

ROOT = Path(__file__).resolve().parent.parent

_SHELL_FENCE = re.compile(r"^\s*```(?:bash|sh|shell|console)\s*$")
_FENCE = re.compile(r"^\s*```")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_CONTROL = {"|", "||", "&&", ";", "&", "(", ")"}
_REDIRECT = {">", ">>", "<", ">&", "&>"}
#: words after which ``mtcjudge`` is the package's name, not the command (``pipx install``)
_PACKAGING = {"install", "uninstall", "show"}

#: Synopsis lines (``[OPTION]``, ``a|b|c``) that stand for a family of command lines and so
#: cannot parse as written, by page and how the line starts; each must still be in its page.
SYNOPSES = {
    ("docs/exports.md", "mtcjudge export SLUG --what qrels|judgments|estimates|"),
    ("docs/exports.md", "mtcjudge campaign import-bundle B.zip [--slug NEW-SLUG]"),
    ("docs/reports.md", "mtcjudge report SLUG [--scale fine|broad]"),
    ("docs/reuse.md", "mtcjudge campaign add-runs SLUG --runs FILE_OR_DIR [--metadata FILE]"),
    ("README.md", "mtcjudge organizer create ada [--password-stdin]"),
}


def is_synopsis(page: str, line: str) -> bool:
    return any(page == p and line.strip().startswith(start) for p, start in SYNOPSES)


@dataclass(frozen=True)
class CommandLine:
    """One ``mtcjudge`` invocation shown in a page: where, the line as written, its arguments."""

    page: str
    line: int
    text: str
    argv: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.text.strip()}"


def pages() -> list[Path]:
    """README.md, CONTRIBUTING.md and the reference pages of docs/ (not docs/experiments/)."""
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def _shell_blocks(text: str) -> list[list[tuple[int, str]]]:
    """The lines (numbered from 1) of each bash/sh code block of a Markdown text."""
    blocks: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] | None = None
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        if not inside and _FENCE.match(line):
            inside = True
            current = [] if _SHELL_FENCE.match(line) else None
            continue
        if inside and _FENCE.match(line):
            inside = False
            if current is not None:
                blocks.append(current)
            current = None
            continue
        if current is not None:
            current.append((number, line))
    return blocks


def _logical_lines(block: list[tuple[int, str]]) -> list[tuple[int, str, str]]:
    """(first line number, first physical line, whole line) with ``\\`` continuations joined."""
    joined: list[tuple[int, str, str]] = []
    pending: tuple[int, str, str] | None = None
    for number, line in block:
        if pending is None:
            pending = (number, line, "")
        start, first, text = pending
        if line.rstrip().endswith("\\"):
            pending = (start, first, text + line.rstrip()[:-1] + " ")
            continue
        joined.append((start, first, text + line))
        pending = None
    if pending is not None:
        joined.append(pending)
    return joined


def _words(line: str, variables: dict[str, str]) -> list[str]:
    """The shell words of a line, comments dropped, ``$NAME`` of the block's own assignments
    (``A="--workers 2"``, ``for p in a b``) expanded and split as the shell would; other
    variables stay as written (``$MIREX2011/runs.tsv`` is as good a path as any for parsing)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    for word in lexer:
        if word.startswith("$") and word[1:] in variables:
            words.extend(variables[word[1:]].split())
        else:
            words.append(word)
    return words


def _simple_commands(words: list[str]) -> list[list[str]]:
    """The words split at ``|``, ``&&``, ``;`` ..., redirections and their targets dropped."""
    commands: list[list[str]] = [[]]
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in _CONTROL:
            commands.append([])
        elif word in _REDIRECT:
            skip = True
        else:
            commands[-1].append(word)
    return [c for c in commands if c]


def command_lines(page: Path) -> list[CommandLine]:
    """Every ``mtcjudge`` invocation of the shell blocks of ``page``, synopses excepted."""
    name = str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else page.name
    found: list[CommandLine] = []
    for block in _shell_blocks(page.read_text(encoding="utf-8")):
        variables: dict[str, str] = {}
        for number, first, line in _logical_lines(block):
            if is_synopsis(name, first):
                continue
            for words in _simple_commands(_words(line, variables)):
                if len(words) == 1 and (assignment := _ASSIGNMENT.match(words[0])):
                    variables[assignment.group(1)] = assignment.group(2)
                    continue
                if words[0] == "for" and len(words) > 3 and words[2] == "in":
                    variables[words[1]] = words[3]  # the loop's first value stands for all
                    continue
                programs = [
                    i
                    for i, w in enumerate(words)
                    if Path(w).name == "mtcjudge" and (i == 0 or words[i - 1] not in _PACKAGING)
                ]
                if programs:
                    argv = tuple(words[programs[0] + 1 :])
                    found.append(CommandLine(name, number, first, argv))
    return found


def problem(parser: argparse.ArgumentParser, command: CommandLine) -> str | None:
    """Why ``command`` is no longer a good example (argparse's complaint, or the deprecation
    note it prints), or None."""
    stderr, stdout = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
            args = parser.parse_args(list(command.argv))
    except SystemExit as exit_:
        if exit_.code in (0, None):  # --help, --version
            return None
        return f"{command}\n    {stderr.getvalue().strip().splitlines()[-1]}"
    notes = vars(args).get(DEPRECATION_NOTES) or []
    return f"{command}\n    " + "; ".join(notes) if notes else None


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return build_parser()


def all_command_lines() -> list[CommandLine]:
    return [command for page in pages() for command in command_lines(page)]


def test_the_pages_show_command_lines() -> None:
    commands = all_command_lines()
    shown = {c.page for c in commands}
    assert {"README.md", "CONTRIBUTING.md", "docs/evaluate.md"} <= shown
    assert len(commands) > 30
    assert not any(c.page.startswith("docs/experiments") for c in commands)


def test_every_command_line_parses_without_a_deprecated_spelling(
    parser: argparse.ArgumentParser,
) -> None:
    problems = [p for c in all_command_lines() if (p := problem(parser, c)) is not None]
    assert problems == [], "\n".join(problems)


def test_every_synopsis_skipped_is_still_shown() -> None:
    for page, start in SYNOPSES:
        lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
        assert any(line.strip().startswith(start) for line in lines), (page, start)


def test_every_synopsis_skipped_names_no_deprecated_option(
    parser: argparse.ArgumentParser,
) -> None:
    deprecated = {
        option
        for action in _all_actions(parser)
        if action.help == argparse.SUPPRESS
        for option in action.option_strings
    }
    assert {"--qrels", "--campaign", "--judgments-fine"} <= deprecated
    for page, start in SYNOPSES:
        for line in (ROOT / page).read_text(encoding="utf-8").splitlines():
            if line.strip().startswith(start):
                assert not deprecated & set(re.findall(r"--[a-z-]+", line)), (page, line)


def _all_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    actions: list[argparse.Action] = []
    for action in parser._actions:
        actions.append(action)
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                actions.extend(_all_actions(child))
    return actions


def test_a_stale_command_line_is_found(parser: argparse.ArgumentParser, tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```bash\n"
        'A="--runs runs.tsv"\n'
        "for f in j.tsv k.tsv; do\n"
        "  mtcjudge evaluate $A --judgments $f   # fine\n"
        "done\n"
        "mtcjudge evaluate --runs r.tsv --qrels q.txt\n"
        "python3 -m venv .venv && .venv/bin/mtcjudge assessor invite --campaign c --name A\n"
        "pipx install mtcjudge   # the package, not the command\n"
        "nice mtcjudge simulate --runs r.tsv --judgments j.tsv \\\n"
        "    --system-effect | head\n"
        "```\n"
        "```python\nmtcjudge evaluate --not-checked\n```\n"
        "```\nmtcjudge nor-this\n```\n"
    )
    commands = command_lines(page)
    assert [c.argv for c in commands] == [
        ("evaluate", "--runs", "runs.tsv", "--judgments", "j.tsv"),
        ("evaluate", "--runs", "r.tsv", "--qrels", "q.txt"),
        ("assessor", "invite", "--campaign", "c", "--name", "A"),
        ("simulate", "--runs", "r.tsv", "--judgments", "j.tsv", "--system-effect"),
    ]
    found = [problem(parser, c) for c in commands]
    assert found[0] is None
    assert "--qrels is deprecated, use --judgments" in (found[1] or "")
    assert "--campaign is deprecated" in (found[2] or "")
    assert "unrecognized arguments: --system-effect" in (found[3] or "")
    assert (found[3] or "").startswith("page.md:9: nice mtcjudge simulate")
