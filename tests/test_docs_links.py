"""Every relative link in the README, CONTRIBUTING and docs/ reaches a file (and its anchor).

Links to other sites are not fetched; a link to a file of the repository must name one that
exists, and a ``#fragment`` must name a heading of the target page as GitHub renders it.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent

_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def markdown_files() -> list[Path]:
    """The pages whose links are checked: README.md, CONTRIBUTING.md and docs/**/*.md."""
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    files += sorted((ROOT / "docs").rglob("*.md"))
    return [f for f in files if f.is_file()]


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, inline code blanked out."""
    lines: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            lines.append("")
            continue
        lines.append("" if fenced else _INLINE_CODE.sub("", line))
    return lines


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text)
    text = unicodedata.normalize("NFC", text).strip().lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in "-_ " or ch == "\u200d")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a page offers: its headings' slugs (repeats numbered) and HTML anchors."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        found.update(_HTML_ANCHOR.findall(line))
        match = _HEADING.match(line)
        if match is None:
            continue
        slug = github_slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(page: Path) -> list[str]:
    """The relative links of one page that name a missing file or anchor, as readable lines."""
    problems: list[str] = []
    text = "\n".join(_prose_lines(page.read_text(encoding="utf-8")))
    for match in _LINK.finditer(text):
        target = match.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, mailto:, ...
            continue
        line = text.count("\n", 0, match.start()) + 1
        where = f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page}:{line}"
        path_part, _, fragment = target.partition("#")
        dest = (page.parent / unquote(path_part)).resolve() if path_part else page
        if not dest.exists():
            problems.append(f"{where}: {target} (no such file)")
            continue
        if fragment and dest.is_file() and dest.suffix == ".md":
            if unquote(fragment).lower() not in anchors(dest):
                problems.append(f"{where}: {target} (no such heading)")
    return problems


def test_the_docs_have_pages_to_check() -> None:
    pages = markdown_files()
    assert ROOT / "README.md" in pages
    assert any(p.parent.name == "experiments" for p in pages)


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# A title: with `code`, and more\n\n## Twice\n\n## Twice\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[fine](other.md) [anchor](other.md#a-title-with-code-and-more) [again](other.md#twice-1)\n"
        "[gone](missing.md) and [bad anchor](other.md#nowhere)\n"
        "![gone picture](missing.png) [split\nacross lines](also-missing.md)\n"
        "`[in code](not-checked.md)` and [web](https://example.org/x.md)\n"
        "```\n[in a block](not-checked-either.md)\n```\n"
    )
    assert broken_links(page) == [
        f"{page}:2: missing.md (no such file)",
        f"{page}:2: other.md#nowhere (no such heading)",
        f"{page}:3: missing.png (no such file)",
        f"{page}:3: also-missing.md (no such file)",
    ]


def experiment_records() -> list[Path]:
    """The dated records of docs/experiments/ (every file but its README)."""
    return sorted(p for p in (ROOT / "docs" / "experiments").glob("*.md") if p.name != "README.md")


def test_every_experiment_record_is_dated_ends_with_its_decision_and_is_indexed() -> None:
    records = experiment_records()
    assert records
    index = (ROOT / "docs" / "decisions.md").read_text(encoding="utf-8")
    for record in records:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md", record.name), record.name
        headings = [
            h for h in record.read_text(encoding="utf-8").splitlines() if h.startswith("## ")
        ]
        assert headings[-1] == "## Decision", record.name
        assert f"](experiments/{record.name})" in index, f"{record.name} not in decisions.md"
