"""Live results for the organizer's pages: one poller per campaign per process, fanned out.

Any process may serve the stream of a campaign whose planner runs in another process (or on
another machine), so the stream follows the database, not the planner: every
:data:`POLL_SECONDS` one poller per campaign and process reads the version of the
campaign's stored results (one indexed row), and when it changed builds the document once
(:mod:`mtcjudge.results.read`) and hands it to every open stream of the campaign in this
process. Twenty open dashboards cost one poll every half second, not twenty; the poller
stops with the last stream. Every :data:`REFRESH_SECONDS` the document is rebuilt anyway
and sent if it changed: the assessors' leases come and go without new judgments.

A stream ends when its client goes, and when the server shuts down: uvicorn waits for open
responses to finish before it stops, and a stream never finishes by itself, so each poller
also watches for uvicorn's exit flag (and :meth:`ResultsFeeds.close` ends every stream).
"""

from __future__ import annotations

import asyncio
import logging
import math
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import anyio
import anyio.to_thread
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.campaign_engine import repository as engine_repository
from mtcjudge.db import session_scope
from mtcjudge.errors import CampaignNotFound
from mtcjudge.models import Campaign
from mtcjudge.results import read
from mtcjudge.results.document import results_json

__all__ = ["POLL_SECONDS", "REFRESH_SECONDS", "ResultsEvent", "ResultsFeeds", "server_exiting"]

log = logging.getLogger("mtcjudge.events")

#: how often a campaign's poller reads the results version: with the planner's tick, a
#: judgment reaches the open dashboards in about a second
POLL_SECONDS = 0.5
#: how often the document is rebuilt without a new version (leases, last activity)
REFRESH_SECONDS = 15.0
#: database reads of the pollers: a few at a time, on threads of their own, so that open
#: dashboards never take the request threads the assessors need
_READS = anyio.CapacityLimiter(2)


@dataclass(frozen=True)
class ResultsEvent:
    """A results document ready to send: its version (the event id) and its JSON text."""

    version: int
    document: str


class _Closed:
    """What a stream receives when the server shuts down or the campaign goes."""


_CLOSED = _Closed()


@dataclass(eq=False)
class _Stream:
    """One open stream: the latest event it has not sent yet (older ones are dropped)."""

    skip_version: int | None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    pending: ResultsEvent | _Closed | None = None

    def offer(self, event: ResultsEvent | _Closed) -> None:
        if isinstance(event, ResultsEvent) and event.version == self.skip_version:
            # a client that reconnects with Last-Event-ID has this version already
            self.skip_version = None
            return
        self.skip_version = None
        self.pending = event
        self.ready.set()

    async def next(self) -> ResultsEvent | _Closed:
        await self.ready.wait()
        self.ready.clear()
        event, self.pending = self.pending, None
        assert event is not None
        return event


@dataclass(eq=False)
class _Feed:
    campaign_id: int
    slug: str
    streams: set[_Stream] = field(default_factory=set)
    latest: ResultsEvent | None = None
    task: asyncio.Task[None] | None = None

    def publish(self, event: ResultsEvent | _Closed) -> None:
        if isinstance(event, ResultsEvent):
            self.latest = event
        for stream in self.streams:
            stream.offer(event)


def server_exiting() -> bool:
    """True once uvicorn has been asked to stop (SIGTERM, Ctrl+C).

    uvicorn's signal handler is its server's bound method, and the server's ``should_exit``
    turns true when a signal arrives; there is no other way for an application to learn that
    before its open responses have ended (sse-starlette watches the same flag)."""
    handler = signal.getsignal(signal.SIGTERM)
    server = getattr(handler, "__self__", None)
    return bool(getattr(server, "should_exit", False))


class ResultsFeeds:
    """The live results of every campaign someone follows in this process.

    Parameters
    ----------
    session_factory : sessionmaker
    poll_seconds, refresh_seconds : float
        See :data:`POLL_SECONDS`, :data:`REFRESH_SECONDS`.
    """

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        *,
        poll_seconds: float = POLL_SECONDS,
        refresh_seconds: float = REFRESH_SECONDS,
    ) -> None:
        self.session_factory = session_factory
        self.poll_seconds = poll_seconds
        self.refresh_seconds = refresh_seconds
        self._feeds: dict[int, _Feed] = {}
        self._closed = False

    @property
    def pollers(self) -> int:
        """Campaigns polled now (one poller each, whatever the number of streams)."""
        return sum(1 for feed in self._feeds.values() if feed.task is not None)

    def streams(self, campaign_id: int) -> int:
        feed = self._feeds.get(campaign_id)
        return len(feed.streams) if feed is not None else 0

    async def follow(
        self, campaign: Campaign, *, last_version: int | None = None
    ) -> AsyncIterator[ResultsEvent]:
        """The campaign's results: the latest at once (unless the client has that version
        already), then every new one, until the client goes or the server stops."""
        if self._closed:
            return
        feed = self._feeds.get(campaign.id)
        if feed is None:
            feed = self._feeds[campaign.id] = _Feed(campaign.id, campaign.slug)
        stream = _Stream(skip_version=last_version)
        feed.streams.add(stream)
        if feed.latest is not None:
            stream.offer(feed.latest)
        if feed.task is None:
            feed.task = asyncio.create_task(self._poll(feed), name=f"results-feed-{campaign.id}")
        try:
            while True:
                event = await stream.next()
                if isinstance(event, _Closed):
                    return
                yield event
        finally:
            feed.streams.discard(stream)
            if not feed.streams:
                self._stop(feed)

    def _stop(self, feed: _Feed) -> None:
        if feed.task is not None:
            feed.task.cancel()
            feed.task = None
        if self._feeds.get(feed.campaign_id) is feed:
            del self._feeds[feed.campaign_id]

    async def _poll(self, feed: _Feed) -> None:
        refreshed = -math.inf
        while True:
            if server_exiting():
                self._end(feed)
                return
            try:
                version = await anyio.to_thread.run_sync(
                    self._version, feed.campaign_id, limiter=_READS
                )
                stale = time.monotonic() - refreshed >= self.refresh_seconds
                if feed.latest is None or version != feed.latest.version or stale:
                    event = await anyio.to_thread.run_sync(self._document, feed.slug)
                    refreshed = time.monotonic()
                    if feed.latest is None or event != feed.latest:
                        feed.publish(event)
            except CampaignNotFound:
                self._end(feed)
                return
            except Exception:  # a database hiccup: the streams stay open, the next poll retries
                log.warning("results feed of campaign %s: poll failed", feed.slug, exc_info=True)
            await asyncio.sleep(self.poll_seconds)

    def _end(self, feed: _Feed) -> None:
        feed.publish(_CLOSED)
        feed.task = None
        if self._feeds.get(feed.campaign_id) is feed:
            del self._feeds[feed.campaign_id]

    def _version(self, campaign_id: int) -> int:
        with session_scope(self.session_factory) as session:
            return engine_repository.results_version(session, campaign_id)

    def _document(self, slug: str) -> ResultsEvent:
        with session_scope(self.session_factory) as session:
            snapshot = read.read_snapshot(session, slug)
        document = read.complete(snapshot, read.rows_loader(self.session_factory))
        return ResultsEvent(document.version, results_json(document))

    async def close(self) -> None:
        """End every stream (the server is stopping)."""
        self._closed = True
        for feed in list(self._feeds.values()):
            task = feed.task
            self._end(feed)
            if task is not None:
                task.cancel()
