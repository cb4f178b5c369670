"""mtcjudge campaign set / status: change a running campaign, see where it stands."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtcjudge.mtc.synthetic import generate
from tests.cli import run
from tests.factories import clips_for


@pytest.fixture
def campaign(tmp_path: Path) -> tuple[str, str]:
    synthetic = generate(4, 6, 5, n_genres=3, docs_per_genre=40, n_artists=20, seed=5)
    paths = synthetic.write(tmp_path / "c")
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    code, _, err = run(
        "campaign",
        "create",
        "--name",
        "Trial",
        "--runs",
        str(paths["runs"]),
        "--metadata",
        str(paths["metadata"]),
        "--judgments",
        str(paths["judgments-fine"]),
        "--audio",
        str(clips_for(synthetic, tmp_path / "audio")),
        "--database-url",
        url,
        "--open",
    )
    assert code == 0, err
    return "trial", url


def test_set_changes_the_settings(campaign) -> None:
    slug, url = campaign
    code, out, err = run(
        "campaign",
        "set",
        slug,
        "--target",
        "0.99",
        "--keep-collecting",
        "--lease-minutes",
        "20",
        "--database-url",
        url,
    )
    assert code == 0, err
    assert "target 0.99" in out
    assert "keep collecting True" in out
    assert "lease minutes 20" in out
    code, out, _ = run("campaign", "set", slug, "--stop-at-target", "--database-url", url)
    assert code == 0
    assert "keep collecting False" in out


def test_set_needs_a_setting_and_a_known_campaign(campaign) -> None:
    slug, url = campaign
    code, _, err = run("campaign", "set", slug, "--database-url", url)
    assert code == 2
    assert "at least one setting" in err
    code, _, err = run("campaign", "set", "nope", "--target", "0.9", "--database-url", url)
    assert code == 2
    assert "nope" in err


def test_status_shows_progress_and_the_ranking(campaign) -> None:
    slug, url = campaign
    code, out, err = run("campaign", "status", slug, "--database-url", url)
    assert code == 0, err
    # every pair was imported as judged: the ranking is exact
    assert "pairs judged" in out
    assert "ranking confidence   1.0000" in out
    assert "can stop (complete)" in out
    assert out.count("[") == 4  # one interval per system
