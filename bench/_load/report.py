"""The figures of a run (the JSON document) and their printed summary."""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench._load.assessors import Recorder, Request
from bench._load.campaign import Campaign
from bench._load.config import LoadConfig
from bench._load.drive import Outcome


def git_commit(root: Path) -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def latency_figures(requests: list[Request]) -> dict[str, Any]:
    durations = np.array([r.ended - r.started for r in requests if r.status is not None]) * 1e3
    if durations.size == 0:
        return {"count": 0, "p50_ms": None, "p95_ms": None, "p99_ms": None, "max_ms": None}
    p50, p95, p99 = np.percentile(durations, [50, 95, 99])
    return {
        "count": int(durations.size),
        "mean_ms": round(float(durations.mean()), 2),
        "p50_ms": round(float(p50), 2),
        "p95_ms": round(float(p95), 2),
        "p99_ms": round(float(p99), 2),
        "max_ms": round(float(durations.max()), 2),
    }


def judgment_rate(recorder: Recorder, start: float, end: float) -> float | None:
    if end - start < 0.5:
        return None
    n = sum(1 for t, _status in recorder.acked.values() if start <= t < end)
    return round(n / (end - start), 1)


def fault_report(outcome: Outcome, invariants: dict[str, Any]) -> dict[str, Any] | None:
    fault, recorder, window = outcome.fault, outcome.recorder, outcome.window
    if fault is None:
        return None
    report: dict[str, Any] = {"kind": fault.kind, **fault.details}
    if fault.started is None or fault.ended is None:
        report["injected"] = False
        return report
    report.update(injected=True, at_s=round(fault.started, 2), until_s=round(fault.ended, 2))
    report["judgments_per_s_before"] = judgment_rate(recorder, 0.0, fault.started)
    report["judgments_per_s_after"] = judgment_rate(recorder, fault.ended, window)
    report["judgments_per_s_first_5s_after"] = judgment_rate(recorder, fault.ended, fault.ended + 5)
    # requests in flight at any time during the fault (and for one second after it)
    affected = [
        r for r in recorder.requests if r.ended >= fault.started and r.started <= fault.ended + 1
    ]
    statuses = Counter(str(r.status) if r.status is not None else r.error for r in affected)
    report["statuses_during"] = dict(sorted(statuses.items()))
    report["503_with_retry_after_during"] = sum(1 for r in affected if r.retry_after)
    report["500_during"] = sum(1 for r in affected if r.status == 500)
    first_ok = min((t for t, _ in recorder.acked.values() if t > fault.ended), default=None)
    report["recovered"] = first_ok is not None
    report["first_judgment_after_s"] = (
        round(first_ok - fault.ended, 2) if first_ok is not None else None
    )
    report["lost"] = invariants["lost"]
    return report


def _run_settings(config: LoadConfig, campaign: Campaign) -> dict[str, Any]:
    """The settings of the run, as the report's ``config`` names them."""
    return {
        "mode": config.mode,
        "db": config.db,
        "workers": config.workers,
        "shape": "ports-per-process" if config.ports_per_process else "workers",
        "processes": config.processes,
        "assessors": config.assessors,
        "duration": config.duration,
        "think_s": [config.think_min, config.think_max] if config.mode == "realistic" else 0,
        # realistic: the clips' length (None: a quarter of a second, the think time whole)
        "clip_seconds": config.clip_seconds,
        "judgments_per_pair": config.judgments_per_pair,
        "collection": campaign.source,
        "pool_pairs": campaign.pool_pairs,
        "fault": config.fault,
        "git_commit": git_commit(config.app_root),
        "app_root": str(config.app_root),
        "timeout_s": config.timeout,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def summarise(
    config: LoadConfig,
    campaign: Campaign,
    outcome: Outcome,
    invariants: dict[str, Any],
    load_before: float,
) -> dict[str, Any]:
    recorder, window = outcome.recorder, outcome.window
    settle = config.settle_after
    by_endpoint: dict[str, list[Request]] = {"next": [], "submit": [], "clip": []}
    for request in recorder.requests:
        by_endpoint[request.endpoint].append(request)
    status_counts = {
        endpoint: dict(sorted(Counter(str(r.status) for r in reqs if r.status is not None).items()))
        for endpoint, reqs in by_endpoint.items()
    }
    transport = Counter(f"{r.endpoint}:{r.error}" for r in recorder.requests if r.status is None)
    in_window = sum(1 for t, _ in recorder.acked.values() if t < window)
    created = sum(1 for t, status in recorder.acked.values() if t < window and status == 201)
    timeline = [0] * (int(window) + 1)
    for t, _status in recorder.acked.values():
        if t < window:
            timeline[int(t)] += 1
    return {
        "config": _run_settings(config, campaign),
        "machine": {
            "cpus": os.cpu_count(),
            # other work on the machine skews every figure: note how busy it was
            "load_average_1m_before": round(load_before, 2),
            "load_average_1m_after": round(os.getloadavg()[0], 2),
        },
        "elapsed_s": round(window, 2),
        "judgments": in_window,
        "judgments_per_s": round(in_window / window, 1) if window > 0 else 0.0,
        "judgments_created": created,
        "next": latency_figures(by_endpoint["next"]),
        "submit": latency_figures(by_endpoint["submit"]),
        "clip": latency_figures(by_endpoint["clip"]),
        # without the arrivals: requests started config.settle_after seconds or more into
        # the load
        "settled_after_s": settle,
        "next_settled": latency_figures([r for r in by_endpoint["next"] if r.started >= settle]),
        "submit_settled": latency_figures(
            [r for r in by_endpoint["submit"] if r.started >= settle]
        ),
        "status_counts": status_counts,
        "server_errors_5xx": sum(
            1 for r in recorder.requests if r.status is not None and r.status >= 500
        ),
        "transport_errors": sum(transport.values()),
        "transport_errors_by_kind": dict(sorted(transport.items())),
        "lost": invariants["lost"],
        "double_judged": invariants["double_judged"],
        "double_leased": invariants["double_leased"],
        "invariants": invariants,
        "assessors_done": recorder.done,
        "wait_answers": recorder.waits,
        # how often a new pair was of the query the assessor was on (a new query clip to
        # listen to otherwise)
        "later_pairs": recorder.later_pairs,
        "same_query_share": round(recorder.same_query_pairs / recorder.later_pairs, 4)
        if recorder.later_pairs
        else None,
        "clip_bytes": recorder.clip_bytes,
        "clip_bytes_per_judgment": round(recorder.clip_bytes / len(recorder.acked))
        if recorder.acked
        else None,
        "clips_from_cache": recorder.clips_from_cache,
        "judgments_per_second_timeline": timeline,
        "fault": fault_report(outcome, invariants),
        "dashboards": {
            "open": config.dashboards,
            "results_events": recorder.dashboard_events,
            "megabytes_received": round(recorder.dashboard_bytes / 1e6, 2),
            "errors": recorder.dashboard_errors,
        },
    }


def format_report(result: dict[str, Any]) -> str:
    config = result["config"]
    lines = [
        f"load benchmark: {config['mode']}, {config['assessors']} assessors, {config['db']}, "
        f"{config['processes']} process(es) x "
        f"{config['workers'] if config['shape'] == 'workers' else 1} worker(s) "
        f"[{config['shape']}], {config['duration']:g} s, commit {config['git_commit']}",
        f"  collection: {config['collection']}, {config['pool_pairs']} pool pairs, "
        f"{config['judgments_per_pair']} judgments per pair",
        f"  machine: {result['machine']['cpus']} CPUs, load average "
        f"{result['machine']['load_average_1m_before']} before, "
        f"{result['machine']['load_average_1m_after']} after",
        "",
        f"  {'':10s} {'count':>7s} {'p50 ms':>8s} {'p95 ms':>8s} {'p99 ms':>8s} {'max ms':>8s}",
    ]
    for endpoint in ("next", "submit", "clip", "next_settled", "submit_settled"):
        figures = result.get(endpoint)
        if figures is None:
            continue
        cells = [
            f"{figures[key]:8.1f}" if figures[key] is not None else f"{'-':>8s}"
            for key in ("p50_ms", "p95_ms", "p99_ms", "max_ms")
        ]
        label = endpoint.replace("_settled", f" >={result['settled_after_s']:g}s")
        lines.append(f"  {label:10s} {figures['count']:7d} " + " ".join(cells))
    counts = "; ".join(
        f"{endpoint} " + ", ".join(f"{status} x {n}" for status, n in statuses.items())
        for endpoint, statuses in result["status_counts"].items()
    )
    transport = ", ".join(f"{k} x {n}" for k, n in result["transport_errors_by_kind"].items())
    lines += [
        "",
        f"  judgments/s        {result['judgments_per_s']:.1f} "
        f"({result['judgments']} in {result['elapsed_s']:.1f} s)",
        f"  HTTP statuses      {counts}",
        f"  5xx                {result['server_errors_5xx']}",
        f"  transport errors   {result['transport_errors']}"
        + (f" ({transport})" if transport else ""),
        f"  lost               {result['lost']}",
        f"  double judged      {result['double_judged']}",
        f"  double leased      {result['double_leased']}",
    ]
    if result.get("clip_bytes_per_judgment") is not None:
        lines.append(
            f"  clip bytes         {result['clip_bytes_per_judgment']:,} per judgment "
            f"({result['clips_from_cache']:,} clips from the browsers' caches)"
        )
    if result.get("same_query_share") is not None:
        lines.append(
            f"  same query         {result['same_query_share']:.1%} of {result['later_pairs']} "
            "pairs after an assessor's first"
        )
    dashboards = result.get("dashboards") or {}
    if dashboards.get("open"):
        lines.append(
            f"  dashboards         {dashboards['open']} open: {dashboards['results_events']} "
            f"results events, {dashboards['megabytes_received']} MB, "
            f"{dashboards['errors']} errors"
        )
    fault = result.get("fault")
    if fault:
        lines.append(f"  fault {fault['kind']}:")
        for key, value in fault.items():
            if key != "kind":
                lines.append(f"    {key:30s} {value}")
    return "\n".join(lines)
