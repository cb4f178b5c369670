"""Hidden trials stay hidden in every format (docs/audio.md, "One served form"): with the
collection's clips in WAV, FLAC, Ogg Vorbis, Opus or MP3, a reference trial's candidate (the
query against itself) is served like any candidate, through the API: another excerpt of the
query's recording, never the query's bytes, of the same length, type and size, at a URL of
the same shape, with its own measures."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile
from sqlalchemy import update

from mtcjudge.campaigns.creation import audio_columns
from mtcjudge.clips.analysis import analyse
from mtcjudge.clips.audio import AudioFile
from mtcjudge.clips.cut import Cut
from mtcjudge.judging import trials
from mtcjudge.models import Document, Query
from tests.audio_files import write_clip
from tests.factories import build_campaign
from tests.support import judge_pool, lease_of, next_body, no_genres


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MTCJUDGE_CLIP_CACHE", str(tmp_path / "cache"))


def collection_in(db_session, fx, directory: Path, suffix: str, seconds: float, cut: Cut) -> None:
    """Every clip of the campaign rewritten as a real file of ``suffix``, analysed as the
    import does (query clips with their trial excerpt)."""
    queries = {q.document_id for q in db_session.query(Query).filter_by(campaign_id=fx.campaign.id)}
    for i, document in enumerate(fx.documents.values()):
        path = write_clip(directory / f"{document.external_id}{suffix}", seconds, seed=i)
        analysis = analyse(path, cut, query=document.id in queries)
        audio = AudioFile(analysis.path, analysis.mime, analysis.window.seconds, analysis)
        db_session.execute(
            update(Document).where(Document.id == document.id).values(**audio_columns(audio))
        )
    db_session.flush()


@pytest.mark.parametrize("suffix", [".wav", ".flac", ".ogg", ".opus", ".mp3"])
@pytest.mark.parametrize(
    ("seconds", "cut"),
    [(8.0, Cut("excerpt", seconds=3.0)), (3.0, Cut("whole"))],
    ids=["another stretch", "rotated"],
)
def test_a_reference_trial_is_served_like_any_pair(
    db_session, client, tmp_path, suffix: str, seconds: float, cut: Cut
) -> None:
    fx = build_campaign(db_session, n_queries=2, quality_rate=1.0, target=1.0)
    no_genres(db_session, fx)  # no anchors: the first trial is the reference
    collection_in(db_session, fx, tmp_path, suffix, seconds, cut)
    token = fx.tokens[0]
    pools = judge_pool(db_session, client, token, trials.WARMUP)
    trial = next_body(client, token)["pair"]
    assert lease_of(db_session, trial).kind == "reference"
    pool = pools[-1]
    query = client.get(trial["query"]["audio_url"])
    candidate = client.get(trial["candidate"]["audio_url"])
    pool_candidate = client.get(pool["candidate"]["audio_url"])
    for response in (query, candidate, pool_candidate):
        assert response.status_code == 200
        assert response.headers["content-type"] == "audio/mpeg"
    assert candidate.content != query.content  # never the query's bytes
    # the same length and size as the query, and as a pool pair's candidate
    assert len(candidate.content) == len(query.content) == len(pool_candidate.content)
    assert trial["candidate"]["duration_seconds"] == trial["query"]["duration_seconds"]
    # the same URL shapes, and the query's URL the same as its pool pairs'
    assert trial["query"]["audio_url"] == pool["query"]["audio_url"]
    lease_part = re.compile(r"/lease/\d+/")
    assert lease_part.sub("/lease/N/", trial["candidate"]["audio_url"]) == lease_part.sub(
        "/lease/N/", pool["candidate"]["audio_url"]
    )
    # its own measures: not the query's waveform
    assert trial["candidate"]["peaks"] is not None
    assert len(trial["candidate"]["peaks"]) == len(trial["query"]["peaks"])
    assert trial["candidate"]["peaks"] != trial["query"]["peaks"]
    # and the sound differs: another stretch of the recording
    a, _ = soundfile.read(io.BytesIO(query.content), dtype="float32")
    b, _ = soundfile.read(io.BytesIO(candidate.content), dtype="float32")
    assert a.shape == b.shape
    assert not np.allclose(a, b, atol=1e-3)
