"""Documentation pages named by ``--help`` are in the package, linked from where it is installed.

A help text names a page ``docs/NAME.md`` only through :func:`mtcjudge.cli.docs.doc_link`:
the installed copy (``file://``, which the package's resources hold, in a wheel as in a
checkout) and the page online. ``mtcjudge docs`` lists the pages and prints where one is.
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from mtcjudge._resources import DOCS_ONLINE, doc_names, doc_path, resource_dir
from mtcjudge.cli import build_parser
from tests.cli import parsers, run

REPO_DOCS = Path(__file__).resolve().parents[2] / "docs"

# a page's name, wherever it appears: docs/NAME.md
MENTION = re.compile(r"docs/([\w./-]+?\.md)")
FILE_LINK = re.compile(r"file://\S+?\.md")
ONLINE_LINK = re.compile(re.escape(DOCS_ONLINE) + r"/([\w./-]+?\.md)")


def _pages_named(text: str) -> list[str]:
    """The pages a help text names; fails on a name that is not a link."""
    files = FILE_LINK.findall(text)
    online = ONLINE_LINK.findall(text)
    mentions = MENTION.findall(text)
    # every docs/NAME.md is part of a link: once in its file:// link, once online
    assert len(mentions) == len(files) + len(online), text
    assert len(files) == len(online), text
    names = []
    for link, page in zip(files, online, strict=True):
        path = Path(unquote(urlsplit(link).path))
        assert path == resource_dir("docs") / page
        assert path.is_file(), link
        names.append(page.removesuffix(".md"))
    return names


# Every command, none left out.
ALL = [
    pytest.param(path, parser, id=" ".join(path) or "mtcjudge")
    for path, parser in parsers(build_parser())
]


@pytest.mark.parametrize(("path", "parser"), ALL)
def test_every_page_named_by_help_is_a_link_to_a_page_of_the_package(
    path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    for name in _pages_named(" ".join(parser.format_help().split())):
        assert name in doc_names(), (path, name)
        assert (REPO_DOCS / f"{name}.md").is_file()


def test_the_help_texts_link_the_pages_they_always_named() -> None:
    every = dict(parsers(build_parser()))
    for path, pages in {
        ("campaign", "create"): ["calibration"],
        ("campaign", "add-runs"): ["reuse"],
        ("campaign", "import-bundle"): ["exports"],
        ("export",): ["exports"],
        ("report",): ["reports"],
        ("evaluate",): ["evaluate"],
    }.items():
        assert _pages_named(" ".join(every[path].format_help().split())) == pages, path


def test_a_link_stays_whole_on_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run("campaign", "create", "--help")
    text = capsys.readouterr().out
    assert f"{DOCS_ONLINE}/calibration.md" in text
    assert doc_path("calibration").as_uri() in text


def test_the_package_holds_every_page_and_picture_of_docs() -> None:
    docs = resource_dir("docs")
    for page in REPO_DOCS.rglob("*"):
        if page.suffix in (".md", ".png"):
            assert (docs / page.relative_to(REPO_DOCS)).is_file(), page
    assert "reuse" in doc_names()


def test_a_path_with_a_space_or_a_percent_sign_is_linked_and_help_still_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """argparse expands ``%`` in an option's help: a link's ``%20`` must not break it."""
    installed = tmp_path / "site packages 100%" / "docs"
    shutil.copytree(resource_dir("docs"), installed)
    monkeypatch.setattr("mtcjudge._resources.resource_dir", lambda name: installed.parent / name)
    for path, parser in parsers(build_parser()):
        text = parser.format_help()
        if path == ("campaign", "create"):
            assert "site%20packages%20100%25/docs/calibration.md" in text


def test_docs_lists_the_pages_and_prints_where_one_is() -> None:
    code, out, err = run("docs")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"installed in {resource_dir('docs')}, online at {DOCS_ONLINE}"
    assert "  reuse " in out
    assert "Reusing judgments" in out  # the page's title
    assert len(lines) == 2 + len(doc_names())
    assert run("docs", "reuse") == (0, f"{doc_path('reuse')}\n", "")
    assert run("docs", "docs/reuse.md") == (0, f"{doc_path('reuse')}\n", "")
    assert run("docs", "reuse", "--url") == (0, f"{DOCS_ONLINE}/reuse.md\n", "")
    code, out, err = run("docs", "nope")
    assert (code, out) == (2, "")
    assert err == "mtcjudge: error: docs: no page 'nope'; 'mtcjudge docs' lists them\n"
