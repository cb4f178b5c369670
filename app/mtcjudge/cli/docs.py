"""``mtcjudge docs [NAME]``: the documentation pages this copy of mtcjudge holds.

The pages are ``docs/NAME.md`` of the repository, installed with the package
(:mod:`mtcjudge._resources`). A help text that refers to a page gives :func:`doc_link`: the
installed file as a ``file://`` link, and its address online.
"""

from __future__ import annotations

import argparse
from typing import TextIO

from mtcjudge._resources import DOCS_ONLINE, doc_names, doc_path, doc_url, resource_dir
from mtcjudge.cli.common import SubParsers, UsageError, add_parser

__all__ = ["doc_link", "register"]


def doc_link(name: str, *, option_help: bool = False) -> str:
    """Where to read the page ``docs/NAME.md``, for a help text: the installed copy as a
    ``file://`` link, then the page online.

    ``option_help``: for an option's help, which argparse expands with ``%``: the ``%`` of
    the link (a space in the path is ``%20``) is then written ``%%``."""
    link = f"{doc_path(name).as_uri()} (online: {doc_url(name)})"
    return link.replace("%", "%%") if option_help else link


def register(sub: SubParsers) -> None:
    docs = add_parser(
        sub,
        "docs",
        "list the documentation pages, or print where one is",
        description="Without NAME, list the documentation pages installed with mtcjudge and "
        "their titles. With NAME, print the path of that page (a Markdown file), e.g. "
        "'less $(mtcjudge docs reuse)', or with --url its address online.",
    )
    docs.add_argument("name", nargs="?", metavar="NAME", help="a page, as the list names it")
    docs.add_argument(
        "--url", action="store_true", help="print the page's address online instead of its path"
    )
    docs.set_defaults(run=run_docs)


def _title(name: str) -> str:
    for line in doc_path(name).read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def run_docs(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:  # noqa: ARG001
    names = doc_names()
    if args.name is None:
        if args.url:
            out.write(f"{DOCS_ONLINE}\n")
            return 0
        width = max(len(name) for name in names)
        out.write(f"installed in {resource_dir('docs')}, online at {DOCS_ONLINE}\n\n")
        for name in names:
            out.write(f"  {name:<{width}}  {_title(name)}\n")
        return 0
    name = args.name.removeprefix("docs/").removesuffix(".md")
    if name not in names:
        raise UsageError(f"docs: no page {args.name!r}; 'mtcjudge docs' lists them")
    out.write(f"{doc_url(name) if args.url else doc_path(name)}\n")
    return 0
