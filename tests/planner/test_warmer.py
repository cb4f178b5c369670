"""Renditions made ahead of the volunteers (app/mtcjudge/planner/warmer.py): the clips at the
top of each open campaign's plan are encoded before anyone asks for them, once."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import update

from mtcjudge.clips.rendition import clip_source, rendition_file
from mtcjudge.models import Campaign
from mtcjudge.planner.service import Planner
from mtcjudge.planner.warmer import RenditionWarmer, clips_ahead
from tests.factories import build_campaign
from tests.support import plan_rows


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MTCJUDGE_CLIP_CACHE", str(tmp_path / "cache"))


def made(clip) -> bool:
    source = clip_source(
        clip.audio_path,
        clip.content_sha256,
        clip.excerpt_start,
        clip.duration_seconds,
        clip.source_seconds,
    )
    return rendition_file(source, clip.variant).is_file()


def test_the_clips_of_the_top_of_the_plan_are_made_once(
    db_session, session_factory, tmp_path
) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=2, k=3, audio_dir=tmp_path / "audio")
    Planner(session_factory).run_once()
    ahead = clips_ahead(db_session, 2)
    top = plan_rows(db_session, fx.campaign.id)[:2]
    assert len(top) == 2
    # each pair's query and candidate, and the query's reference-trial excerpt, each once
    assert {clip.variant for clip in ahead} == {"clip", "other"}
    assert len({(clip.audio_path, clip.variant) for clip in ahead}) == len(ahead)
    assert not any(made(clip) for clip in ahead)
    first = RenditionWarmer(session_factory).run_once()
    assert first == len(clips_ahead(db_session))  # every clip of the (short) plan
    assert all(made(clip) for clip in ahead)
    assert RenditionWarmer(session_factory).run_once() == 0  # made already: nothing again


def test_closed_campaigns_and_missing_files_are_passed_over(
    db_session, session_factory, tmp_path
) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=2, k=3, audio_dir=tmp_path / "audio")
    Planner(session_factory).run_once()
    for document in fx.documents.values():
        if document.audio_path:
            Path(document.audio_path).unlink(missing_ok=True)
            break
    ahead = len(clips_ahead(db_session))
    # a missing file stops nothing: the others are made
    assert 0 < RenditionWarmer(session_factory).run_once() < ahead
    db_session.execute(update(Campaign).values(status="closed"))
    db_session.flush()
    assert clips_ahead(db_session) == []
