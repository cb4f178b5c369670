"""A live judging site for the browser tests: a campaign over real WAV clips, served by
uvicorn in a thread on its own database (a migrated SQLite file, or a fresh Postgres schema
when ``TEST_DATABASE_URL`` is set), and the steps a volunteer takes to reach a pair."""

from __future__ import annotations

import time
import wave
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.signal import lfilter, resample_poly

from mtcjudge.campaigns.creation import audio_columns
from mtcjudge.clips.analysis import analyse
from mtcjudge.clips.audio import AudioFile
from mtcjudge.clips.cut import Cut
from mtcjudge.config import Settings
from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.main import create_app
from mtcjudge.models import (
    DEFAULT_QUALITY_RATE,
    Assessor,
    Campaign,
    Document,
    Query,
    Result,
    System,
)
from mtcjudge.security import hash_token
from tests.audio_files import write_clip
from tests.servers import serve_in_thread
from tests.support import write_tone

TOKEN = "browser-test-token"
QUERY_HZ = 196.0
LOUD, QUIET = 0.25, 0.05


def seed(
    url: str,
    audio_dir: Path,
    *,
    listen_seconds: float = 0.0,
    quality_rate: float = DEFAULT_QUALITY_RATE,
    clip_seconds: float = 4.0,
    quiet_candidates: bool = False,
    candidate_amplitude: float | None = None,
    notes: bool = False,
    encoded: str | None = None,
) -> None:
    """3 systems x 2 queries x k=3 over real WAV clips, one assessor who has not consented.

    ``listen_seconds`` is the campaign's listening rule (off by default here);
    ``quality_rate`` the share of hand-outs that are hidden quality trials (a new campaign's
    default; none in an assessor's first ``trials.WARMUP`` hand-outs); clips last
    ``clip_seconds``; with ``quiet_candidates`` the candidates are 14 dB quieter than the
    queries (sine amplitudes LOUD and QUIET); ``candidate_amplitude`` sets theirs; with
    ``notes`` each clip is a run of plucked notes (a waveform worth looking at) instead of a
    steady tone; with ``encoded`` ("mp3", "ogg", "flac", ...) each clip is a music-like file
    of that format (tests/audio_files.py), analysed as the import does."""
    engine = make_database_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            campaign = Campaign(
                slug="browser",
                name="Browser test campaign",
                status="open",
                scale="fine",
                k=3,
                estimator="uniform",
                policy="confidence",
                target=0.95,
                listen_seconds=listen_seconds,
                quality_rate=quality_rate,
            )
            session.add(campaign)
            session.flush()
            documents: dict[str, Document] = {}

            def document(external_id: str) -> Document:
                if external_id not in documents and encoded is not None:
                    path = write_clip(
                        audio_dir / f"{external_id}.{encoded}", clip_seconds, seed=len(documents)
                    )
                    analysis = analyse(path, Cut("whole"), query=external_id.startswith("query"))
                    audio = AudioFile(path, analysis.mime, analysis.window.seconds, analysis)
                    documents[external_id] = Document(
                        campaign_id=campaign.id, external_id=external_id, **audio_columns(audio)
                    )
                    session.add(documents[external_id])
                    session.flush()
                if external_id not in documents:
                    path = audio_dir / f"{external_id}.wav"
                    quiet = quiet_candidates and external_id.startswith("cand")
                    write = write_notes if notes else write_tone
                    write(
                        path,
                        QUERY_HZ * 2 ** (len(documents) / 12),
                        seconds=clip_seconds,
                        amplitude=(
                            candidate_amplitude
                            if candidate_amplitude is not None and external_id.startswith("cand")
                            else QUIET
                            if quiet
                            else LOUD
                        ),
                    )
                    documents[external_id] = Document(
                        campaign_id=campaign.id,
                        external_id=external_id,
                        audio_path=str(path),
                        audio_type="audio/wav",
                        duration_seconds=clip_seconds,
                    )
                    session.add(documents[external_id])
                    session.flush()
                return documents[external_id]

            queries = []
            for q in range(2):
                query = Query(campaign_id=campaign.id, document_id=document(f"query-{q}").id)
                session.add(query)
                queries.append(query)
            systems = [System(campaign_id=campaign.id, name=f"SYSTEM-{s}") for s in range(3)]
            session.add_all(systems)
            session.flush()
            for s, system in enumerate(systems):
                for q, query in enumerate(queries):
                    for rank in range(1, 4):
                        session.add(
                            Result(
                                campaign_id=campaign.id,
                                system_id=system.id,
                                query_id=query.id,
                                rank=rank,
                                document_id=document(f"cand-{q}-{(s + rank) % 4}").id,
                            )
                        )
            session.add(Assessor(campaign_id=campaign.id, name="Ada", token_hash=hash_token(TOKEN)))
    finally:
        engine.dispose()


def write_notes(path: Path, frequency: float, seconds: float, amplitude: float) -> None:
    """Plucked notes (a tone and its octave, decaying) at an uneven rhythm, as 16-bit mono WAV."""
    rate = 16000
    t = np.arange(int(seconds * rate)) / rate
    onsets = np.cumsum(np.resize([0.0, 0.5, 0.25, 0.25, 0.5, 0.75], 64))
    since = t - onsets[np.searchsorted(onsets, t, side="right") - 1]
    accent = 0.55 + 0.45 * np.cos(onsets[np.searchsorted(onsets, t, side="right") - 1] * 1.7) ** 2
    envelope = accent * np.exp(-since * 5) * np.minimum(1.0, np.minimum(t, seconds - t) * 20)
    wave_ = np.sin(2 * np.pi * frequency * t) + 0.3 * np.sin(4 * np.pi * frequency * t)
    samples = (amplitude * envelope * wave_ / 1.3 * 32767).astype("<i2")
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(samples.tobytes())


@dataclass
class LiveServer:
    base_url: str
    database_url: str


@contextmanager
def serve(database_url: str, directory: Path, **campaign: Any) -> Iterator[LiveServer]:
    """Migrate the empty database, seed it (``campaign``: the options of :func:`seed`) with its
    clips in ``directory``/audio, and serve it."""
    upgrade_database(database_url)
    audio_dir = directory / "audio"
    audio_dir.mkdir()
    seed(database_url, audio_dir, **campaign)
    with serve_in_thread(create_app(Settings(database_url=database_url))) as base:
        yield LiveServer(base, database_url)


def wait_until(page: Any, expression: str, timeout: float = 10.0) -> None:
    """Poll a JavaScript expression from outside the page.

    ``page.wait_for_function`` evaluates its expression with ``eval`` inside the page,
    which the Content-Security-Policy forbids (no 'unsafe-eval'); ``page.evaluate`` goes
    through the DevTools protocol and is not subject to it.
    """
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        time.sleep(0.05)


def start_judging(page: Any, base_url: str, *, check: bool = True) -> None:
    """Open the invitation, consent, and (``check``) answer the volume check with "Yes"."""
    from playwright.sync_api import expect

    page.goto(f"{base_url}/a/{TOKEN}")
    page.get_by_label("I understand the task").check()
    page.get_by_role("button", name="Start judging").click()
    expect(page.locator("#judge")).to_have_attribute("data-state", "check")
    if check:
        page.get_by_role("button", name="Yes, start judging").click()
        expect(page.locator("#judge")).to_have_attribute("data-state", "pair")


def wait_ready(page: Any, prefix: str = "main") -> None:
    """Wait until both clips of the pair are decoded (and levelled)."""
    for role in ("query", "candidate"):
        wait_until(
            page, f"document.querySelector('#{prefix}-{role}-player').dataset.state === 'ready'"
        )


def player(page: Any, role: str, field: str, prefix: str = "main") -> str:
    """A data attribute of a player (``position``, ``listenedMs``, ``loopStart``, ``gainDb``...)."""
    value = page.evaluate(f"document.querySelector('#{prefix}-{role}-player').dataset.{field}")
    return "" if value is None else str(value)


def k_weighted_loudness(frequency: float, amplitude: float, seconds: float) -> float:
    """The integrated loudness (LUFS, ITU-R BS.1770-4) of a clip of ``write_tone`` after the
    browser resamples it to 48 kHz, computed here with the standard's published 48 kHz
    K-weighting coefficients: the reference the page's meter is checked against."""
    rate = 16000
    t = np.arange(int(seconds * rate)) / rate
    envelope = np.minimum(1.0, np.minimum(t, seconds - t) * 20)
    pcm = (amplitude * envelope * np.sin(2 * np.pi * frequency * t) * 32767).astype("<i2")
    x = resample_poly(pcm / 32768, 3, 1)
    shelf = (
        [1.53512485958697, -2.69169618940638, 1.19839281085285],
        [1.0, -1.69065929318241, 0.73248077421585],
    )
    highpass = ([1.0, -2.0, 1.0], [1.0, -1.99004745483398, 0.99007225036621])
    y = lfilter(*highpass, lfilter(*shelf, x))
    block, step = 19200, 4800
    z = np.array([np.mean(y[i : i + block] ** 2) for i in range(0, len(y) - block + 1, step)])
    loudness = -0.691 + 10 * np.log10(z)
    z = z[loudness > -70]
    relative = -0.691 + 10 * np.log10(z.mean()) - 10
    z = z[-0.691 + 10 * np.log10(z) > relative]
    return float(-0.691 + 10 * np.log10(z.mean()))
