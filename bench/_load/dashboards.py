"""Organizer dashboards left open during the load: the results, then the event stream."""

from __future__ import annotations

import asyncio

import httpx

from bench._load.assessors import Recorder, pause
from bench._load.campaign import Campaign
from bench._load.config import ORGANIZER_TOKEN


async def run_dashboard(
    base_url: str, campaign: Campaign, recorder: Recorder, stop: asyncio.Event
) -> None:
    """An organizer's dashboard left open: the results once, then the event stream, as
    static/js/dashboard.js does (reconnecting after an error)."""
    headers = {"Authorization": f"Bearer {ORGANIZER_TOKEN}"}
    timeout = httpx.Timeout(30.0, read=60.0)
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=timeout) as client:
        while not stop.is_set():
            try:
                results = await client.get(f"/api/campaigns/{campaign.slug}/results")
                recorder.dashboard_bytes += len(results.content)
                url = f"/api/campaigns/{campaign.slug}/events"
                async with client.stream("GET", url) as stream:
                    async for line in stream.aiter_lines():
                        recorder.dashboard_bytes += len(line) + 1
                        if line.startswith("event: results"):
                            recorder.dashboard_events += 1
                        if stop.is_set():
                            return
            except (httpx.HTTPError, OSError):
                recorder.dashboard_errors += 1
                await pause(stop, 1.0)
