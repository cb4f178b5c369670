"""The Python of docs/exports.md, "Rebuilding the results", runs as written against real
exports and finds what it says: every system's mean and every variance of the results (its
own assertions), so the page cannot rot."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.exports.rebuild import export
from tests.factories import partly_judged_campaign as partly_judged

PAGE = Path(__file__).resolve().parents[2] / "docs" / "exports.md"
SECTION = "## Rebuilding the results"
#: the files the page's code opens
NAMES = {
    "entries": "ams-2025-entries-fine.csv",
    "offsets": "ams-2025-offsets-fine.json",
    "results": "ams-2025-results-fine.json",
}


def page_code() -> list[str]:
    """The ``python`` code blocks of the section, in order."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start : end if end >= 0 else len(text)]
    return re.findall(r"^```python\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)


def test_the_section_shows_the_means_and_the_variances() -> None:
    blocks = page_code()
    assert len(blocks) == 2
    assert "def means(measure)" in blocks[0]
    assert "def covariance(measure)" in blocks[1]
    for name in NAMES.values():
        assert name in blocks[0]


@pytest.mark.parametrize(
    ("estimator", "scale"), [("joint", "fine"), ("joint", "broad"), ("uniform", "fine")]
)
def test_the_pages_code_rebuilds_the_results(
    db_session, tmp_path, monkeypatch, estimator: str, scale: str
) -> None:
    campaign = partly_judged(db_session, estimator).campaign
    for what, name in NAMES.items():  # the page names FINE files; a BROAD export reads alike
        (tmp_path / name).write_bytes(export(db_session, campaign.slug, what, scale=scale))
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "docs_exports"}
    for block in page_code():
        exec(compile(block, f"{PAGE}:{SECTION}", "exec"), namespace)
    # the page's own assertions passed; and what it computed is the results, not nothing
    results = json.loads((tmp_path / NAMES["results"]).read_text())["results"]
    means, covariance = namespace["means"], namespace["covariance"]
    for measure, result in results.items():
        rebuilt = means(measure)  # type: ignore[operator]
        cov = covariance(measure)  # type: ignore[operator]
        assert len(result["systems"]) == 5
        for s in result["systems"]:
            assert rebuilt[s["name"]] == pytest.approx(s["mean"], abs=1e-12, rel=0)
            assert cov[s["name"], s["name"]] == pytest.approx(s["var"], rel=1e-9)
        assert any(s["var"] > 0 for s in result["systems"])
