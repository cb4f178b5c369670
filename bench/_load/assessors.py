"""Simulated assessors: one HTTP client each, judging as the judging page does, and the
recorder of every request, lease and acknowledged judgment."""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench._load.config import LoadConfig


@dataclass
class Request:
    endpoint: str
    started: float
    ended: float
    status: int | None  # None: transport error
    error: str | None = None
    retry_after: bool = False


@dataclass
class Lease:
    pair_lease_id: int
    received: float
    released: float | None = None  # when the submission was sent
    refused: bool = False  # the server said it was not (or no longer) leased


@dataclass
class Recorder:
    t0: float
    requests: list[Request] = field(default_factory=list)
    acked: dict[str, tuple[float, int]] = field(default_factory=dict)  # client_id -> (t, status)
    leases: list[Lease] = field(default_factory=list)
    done: int = 0
    waits: int = 0
    snapshots: int = 0
    snapshot_failures: int = 0
    snapshot_violations: set[tuple[str, int, int]] = field(default_factory=set)
    dashboard_events: int = 0
    dashboard_bytes: int = 0
    dashboard_errors: int = 0
    # pairs handed out after an assessor's first, and those of the query they were on
    later_pairs: int = 0
    same_query_pairs: int = 0
    # the clips' bytes the assessors received, and the clip requests their caches saved
    clip_bytes: int = 0
    clips_from_cache: int = 0

    def now(self) -> float:
        return time.perf_counter() - self.t0

    async def call(
        self, endpoint: str, client: httpx.AsyncClient, method: str, url: str, **kwargs: Any
    ) -> httpx.Response | None:
        started = self.now()
        try:
            response = await client.request(method, url, **kwargs)
        except httpx.TimeoutException as exc:
            self.requests.append(Request(endpoint, started, self.now(), None, error_kind(exc)))
            return None
        except httpx.TransportError as exc:
            self.requests.append(Request(endpoint, started, self.now(), None, error_kind(exc)))
            return None
        self.requests.append(
            Request(
                endpoint,
                started,
                self.now(),
                response.status_code,
                retry_after=response.status_code == 503 and "retry-after" in response.headers,
            )
        )
        return response


def error_kind(exc: Exception) -> str:
    return type(exc).__name__


def retry_delay(response: httpx.Response | None, attempt: int) -> float:
    if response is not None:
        with contextlib.suppress(ValueError):
            return min(5.0, float(response.headers.get("retry-after", "")))
    return min(2.0, 0.1 * 2.0**attempt)


async def run_assessor(
    index: int,
    token: str,
    client: httpx.AsyncClient,
    config: LoadConfig,
    recorder: Recorder,
    stop: asyncio.Event,
    hard_stop: asyncio.Event,
) -> None:
    rng = random.Random(config.seed * 100_003 + index)
    held: dict[int, Lease] = {}
    cache: set[str] = set()  # the clip URLs this assessor's browser holds (max-age one hour)
    seen_before = False  # this assessor has been handed a pair before
    heard: set[int] = set()  # the queries (by number) this assessor has listened to
    attempt = 0
    if config.clip_seconds is not None and await pause(stop, rng.uniform(0, config.settle_after)):
        return  # arrivals spread over one pair's time
    while not stop.is_set():
        response = await recorder.call("next", client, "GET", f"/api/a/{token}/next")
        if response is None or response.status_code != 200:
            attempt += 1
            await pause(stop, retry_delay(response, attempt))
            continue
        attempt = 0
        body = response.json()
        if body["status"] == "done":
            recorder.done += 1
            return
        if body["status"] != "pair":
            recorder.waits += 1
            await pause(stop, 0.2 + 0.1 * rng.random())
            continue
        lease_id = int(body["pair"]["lease_id"])
        lease = held.get(lease_id)
        if lease is None:
            lease = held[lease_id] = Lease(lease_id, recorder.now())
            recorder.leases.append(lease)
            if seen_before:
                recorder.later_pairs += 1
                recorder.same_query_pairs += bool(body["pair"].get("same_query_as_previous"))
            seen_before = True
        # the page fetches both clips of every pair, as a browser does: a clip whose URL it
        # fetched before (a query kept for the next pair of the query) comes from its cache
        listened = {}
        rule = body["pair"].get("listen_seconds", 0.0)
        query_number = body["pair"].get("query_number")
        for which in ("query", "candidate"):
            clip = body["pair"][which]
            url = clip.get("audio_url")
            if url and url in cache:
                recorder.clips_from_cache += 1
            elif url:
                fetched = await recorder.call("clip", client, "GET", url)
                if fetched is not None and fetched.status_code == 200:
                    cache.add(url)
                    recorder.clip_bytes += len(fetched.content)
            if config.clip_seconds is None:
                listened[which] = played_ms(clip, rule)
            else:
                # a clip new to them in full; a query they heard before (on an earlier pair,
                # whatever its URL) only as long as the rule asks
                again = which == "query" and query_number in heard
                listened[which] = played_ms(clip, rule if again else config.clip_seconds)
        if query_number is not None:
            heard.add(query_number)
        if config.mode == "realistic":
            listen = rng.uniform(config.think_min, config.think_max)
            if config.clip_seconds is not None:  # the think time is the decision after them
                listen += (listened["query"] + listened["candidate"]) / 1000
            if await pause(stop, listen):
                return  # the run ended while listening: the lease is still held
        client_id = str(uuid.uuid4())
        payload = {
            "lease_id": lease_id,
            "broad": rng.randrange(3),
            "fine": float(rng.randrange(101)),
            "client_id": client_id,
            "query_listen_ms": listened["query"],
            "candidate_listen_ms": listened["candidate"],
        }
        lease.released = recorder.now()
        # the judging page keeps retrying one submission with the same client_id
        for retry in range(6):
            reply = await recorder.call(
                "submit", client, "POST", f"/api/a/{token}/judgments", json=payload
            )
            if reply is not None and reply.status_code < 300:
                recorder.acked[client_id] = (recorder.now(), reply.status_code)
                break
            if reply is not None and reply.status_code < 500:
                lease.refused = True
                break
            if hard_stop.is_set():
                break
            await asyncio.sleep(retry_delay(reply, retry))
        held.pop(lease_id, None)


def played_ms(clip: dict[str, Any], listen_seconds: float) -> int:
    """What the page reports of a clip played as the campaign's rule asks: to its end when it
    is shorter than the rule. (A stress assessor reports it without waiting that long: the
    server checks the bytes it sent, which are really fetched, and cannot time a listener.)"""
    duration = clip.get("duration_seconds") or 0.0
    seconds = min(listen_seconds, duration) if duration > 0 else listen_seconds
    return max(1000, math.ceil(seconds * 1000))


async def pause(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep, or less if the run stops; True when it stopped."""
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except TimeoutError:
        return False
    return True
