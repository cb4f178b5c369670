"""Renditions made ahead of the volunteers (docs/audio.md, "One served form").

A clip is encoded into its MP3 rendition the first time it is asked for, which takes about a
second of one core for 30 s of music: a volunteer would wait that long for each new clip.
:class:`RenditionWarmer` makes them before: every few seconds it reads the clips of the pairs
at the top of each open campaign's plan (and each query's reference-trial excerpt) and
encodes those this machine does not have yet, on a thread of its own, one at a time. Every
app process runs one (the cache is the machine's; two processes of one machine may now and
then encode the same clip, each writing it atomically).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from sqlalchemy import Integer, bindparam, select
from sqlalchemy.orm import Session, aliased, sessionmaker

from mtcjudge.clips.decode import UnreadableAudio
from mtcjudge.clips.rendition import clip_source, rendition_file, safe_rendition
from mtcjudge.clips.sources import factory_loader, local_path
from mtcjudge.db import execute_plain, session_scope
from mtcjudge.models import Campaign, Document, Pair, PlanEntry, Query

__all__ = ["AHEAD", "RenditionWarmer", "clips_ahead"]

log = logging.getLogger(__name__)

#: pairs of the top of each plan whose clips are made ahead
AHEAD = 40
#: seconds between two looks at the plans
INTERVAL = 3.0


@dataclass(frozen=True)
class ClipAhead:
    """A clip to make: its document's audio and the variant served."""

    audio_path: str
    content_sha256: str | None
    excerpt_start: float | None
    duration_seconds: float | None
    source_seconds: float | None
    variant: str


def _statement() -> object:
    query_doc, candidate_doc = aliased(Document), aliased(Document)
    columns = ("audio_path", "content_sha256", "excerpt_start", "duration_seconds")
    return (
        select(
            *(getattr(query_doc, c) for c in columns),
            query_doc.source_seconds,
            *(getattr(candidate_doc, c) for c in columns),
            candidate_doc.source_seconds,
        )
        .select_from(PlanEntry)
        .join(Campaign, Campaign.id == PlanEntry.campaign_id)
        .join(Pair, Pair.id == PlanEntry.pair_id)
        .join(Query, Query.id == Pair.query_id)
        .join(query_doc, query_doc.id == Query.document_id)
        .join(candidate_doc, candidate_doc.id == Pair.document_id)
        .where(
            Campaign.status == "open",
            Pair.playable.is_(True),
            PlanEntry.rank < bindparam("ahead", type_=Integer),
        )
        .order_by(PlanEntry.rank)
    )


_AHEAD = _statement()


def clips_ahead(session: Session, ahead: int = AHEAD) -> list[ClipAhead]:
    """The clips of the top ``ahead`` pairs of every open campaign's plan, best first: each
    pair's query (and its reference-trial excerpt) and candidate, each once."""
    out: dict[tuple[str, str], ClipAhead] = {}
    for row in execute_plain(session, _AHEAD, {"ahead": ahead}):
        query, candidate = row[:5], row[5:]
        for values, variant in ((query, "clip"), (candidate, "clip"), (query, "other")):
            path, sha256, start, duration, source = values
            if path is not None:
                clip = ClipAhead(path, sha256, start, duration, source, variant)
                out.setdefault((path, variant), clip)
    return list(out.values())


class RenditionWarmer:
    """Makes the renditions of the clips :func:`clips_ahead` names, on a background thread."""

    def __init__(
        self, session_factory: sessionmaker[Session], *, interval: float = INTERVAL
    ) -> None:
        self.session_factory = session_factory
        self.load = factory_loader(session_factory)  # audio uploaded into the database
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> int:
        """One look: the renditions made (those this machine had are skipped)."""
        with session_scope(self.session_factory) as session:
            wanted = clips_ahead(session)
        made = 0
        for clip in wanted:
            if self._stop.is_set():
                break
            try:
                source = clip_source(
                    str(local_path(clip.audio_path, self.load)),
                    clip.content_sha256,
                    clip.excerpt_start,
                    clip.duration_seconds,
                    clip.source_seconds,
                )
            except UnreadableAudio:
                continue  # the pool's check of the clips takes the pair out
            if not rendition_file(source, clip.variant).is_file():
                made += safe_rendition(source, clip.variant) is not None
        return made

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # the warmer must outlive a bad look (database down, ...)
                log.exception("making renditions ahead failed; retrying")
            self._stop.wait(self.interval)

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="mtc-warmer", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
