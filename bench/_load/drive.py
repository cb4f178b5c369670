"""The load: every assessor, the lease sampler, the dashboards and the fault, run together
for the configured duration, then stopped."""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass

import httpx

from bench._load.assessors import Recorder, pause, run_assessor
from bench._load.campaign import Campaign
from bench._load.config import LoadConfig
from bench._load.dashboards import run_dashboard
from bench._load.database import plain_engine
from bench._load.faults import FaultLog, inject_fault
from bench._load.invariants import LeaseSql, sample_leases
from bench._load.servers import Servers


@dataclass
class Outcome:
    recorder: Recorder
    window: float
    fault: FaultLog | None


async def drive(
    config: LoadConfig,
    servers: Servers,
    campaign: Campaign,
    database_url: str,
    database_name: str | None,
) -> Outcome:
    sampler_engine = plain_engine(database_url, pool_size=1, max_overflow=0, pool_pre_ping=True)
    with sampler_engine.connect() as conn:
        lease_sql = LeaseSql.detect(conn)
    timeout = httpx.Timeout(config.timeout, connect=min(5.0, config.timeout))
    clients = [
        httpx.AsyncClient(
            base_url=servers.base_urls[i % len(servers.base_urls)], timeout=timeout, verify=False
        )
        for i in range(len(campaign.tokens))
    ]
    stop, hard_stop = asyncio.Event(), asyncio.Event()
    recorder = Recorder(time.perf_counter())
    fault = FaultLog(config.fault) if config.fault else None
    try:
        assessors = [
            asyncio.create_task(
                run_assessor(i, token, clients[i], config, recorder, stop, hard_stop)
            )
            for i, token in enumerate(campaign.tokens)
        ]
        helpers = [
            asyncio.create_task(
                sample_leases(sampler_engine, lease_sql, campaign, config, recorder, stop)
            )
        ]
        helpers += [
            asyncio.create_task(
                run_dashboard(
                    servers.base_urls[i % len(servers.base_urls)], campaign, recorder, stop
                )
            )
            for i in range(config.dashboards)
        ]
        if fault is not None:
            helpers.append(
                asyncio.create_task(
                    inject_fault(config, servers, database_name, recorder, stop, fault)
                )
            )
        progress = asyncio.create_task(report_progress(config, recorder, stop))
        await asyncio.wait(assessors, timeout=config.duration)
        window = min(recorder.now(), config.duration)
        stop.set()
        # in-flight requests finish (a submission may retry once or twice), then we give up
        _finished, pending = await asyncio.wait(assessors, timeout=config.timeout + 5)
        hard_stop.set()
        if pending:
            _finished, pending = await asyncio.wait(pending, timeout=config.timeout + 2)
        for task in [*pending, *helpers, progress]:
            task.cancel()
        await asyncio.gather(*assessors, *helpers, progress, return_exceptions=True)
    finally:
        await asyncio.gather(*(c.aclose() for c in clients), return_exceptions=True)
        sampler_engine.dispose()
    return Outcome(recorder, window, fault)


async def report_progress(config: LoadConfig, recorder: Recorder, stop: asyncio.Event) -> None:
    if config.quiet:
        return
    while not await pause(stop, 10.0):
        seconds = recorder.now()
        sys.stderr.write(
            f"  {seconds:5.0f} s  {len(recorder.acked):6d} judgments  "
            f"{len(recorder.acked) / max(seconds, 1e-9):7.1f}/s\n"
        )
