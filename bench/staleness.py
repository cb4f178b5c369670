"""What stale selection costs: MTC with a ticking planner and W concurrent assessors.

Usage::

    nice .venv/bin/python bench/staleness.py --data $MIREX2011 \\
        --synthetic-seeds 3 --jobs 2 --json staleness.json

For each collection (MIREX 2011 AMS FINE with ``--data``, plus ``--synthetic-seeds``
collections of :mod:`mtcjudge.mtc.synthetic`) and estimator, it runs the sequential
reference (:func:`bench.experiments.staleness.sequential`) and the discrete-event simulation
(:func:`bench.experiments.staleness.simulate`) for every W in ``--assessors`` and T in
``--ticks``, over ``--sim-seeds`` draws of the arrival and listening times, plus two
ensembles of jittered one-assessor runs (the sequential loop, and a planner whose plan
is always fresh) that measure how much the count moves by chance. It prints the
judgments to the stop against all three baselines and a pooled comparison. See
docs/staleness.md for the method and the results (about 21 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

if __package__ in (None, ""):  # run as ``python bench/staleness.py``: bench.* from the tree
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.experiments.staleness import RunResult, SimConfig, plan_size, sequential, simulate
from mtcjudge.ingest.formats import read_judgments, read_metadata, read_runs
from mtcjudge.ingest.loader import LoadedCollection, load_collection, load_synthetic
from mtcjudge.mtc.scales import get_scale
from mtcjudge.mtc.synthetic import generate

TARGET_EXTRA = 10.0  # per cent, the budget


JITTER = 1e-3  # relative weight jitter of the sequential ensemble


@dataclass(frozen=True)
class Job:
    """One run: a collection, an estimator and what to run.

    ``kind``: "seq" (the sequential reference), "seq-plain" (sequential without the
    locality rule), "seq-jitter" (sequential with weight jitter, seeded), "plan-jitter"
    (one assessor and a planner storing 64 pairs, re-planning after every judgment,
    with weight jitter) or "sim" (W assessors).
    """

    collection: str
    estimator: str
    kind: str
    setting: SimConfig | None = None
    seed: int = 0


_LOADED: dict[str, LoadedCollection] = {}


def load_mirex(directory: Path) -> LoadedCollection:
    runs = read_runs(directory / "runs.tsv")
    judgments = read_judgments(directory / "judgments-fine.tsv", "fine")
    metadata = read_metadata(directory / "metadata.tsv")
    return load_collection(runs, 5, metadata, judgments)


def collections(data: Path | None, seeds: int, queries: int) -> dict[str, LoadedCollection]:
    out: dict[str, LoadedCollection] = {}
    if data is not None:
        out["MIREX 2011"] = load_mirex(data)
    for s in range(seeds):
        out[f"synthetic {s}"] = load_synthetic(generate(n_queries=queries, seed=s))
    return out


def _init(loaded: dict[str, LoadedCollection]) -> None:
    _LOADED.update(loaded)


def run(job: Job) -> RunResult:
    loaded = _LOADED[job.collection]
    c, scale, truth = loaded.collection, get_scale("fine"), loaded.judged_values
    if job.setting is not None:
        return simulate(c, loaded.metadata, truth, scale, job.setting, job.estimator)
    return sequential(
        c,
        loaded.metadata,
        truth,
        scale,
        job.estimator,
        locality=job.kind != "seq-plain",
        jitter=JITTER if job.kind == "seq-jitter" else 0.0,
        seed=job.seed,
    )


def jobs(
    names: list[str],
    estimators: list[str],
    assessors: list[int],
    ticks: list[float],
    seeds: int,
    remedies: list[str],
    remedy_ticks: list[float],
    ensemble: int,
) -> list[Job]:
    out: list[Job] = []
    for name in names:
        for est in estimators:
            out.append(Job(name, est, "seq"))
            out.append(Job(name, est, "seq-plain"))
            out += [Job(name, est, "seq-jitter", seed=s) for s in range(ensemble)]
            # one assessor, plan always fresh: only the truncation to M pairs differs
            out += [
                Job(name, est, "plan-jitter", SimConfig(assessors=1, tick=0, jitter=JITTER, seed=s))
                for s in range(ensemble)
            ]
            for w in assessors:
                for t in ticks:
                    for s in range(seeds):
                        out.append(Job(name, est, "sim", SimConfig(assessors=w, tick=t, seed=s)))
                for remedy in remedies:
                    for t in remedy_ticks:
                        for s in range(seeds):
                            cfg = SimConfig(assessors=w, tick=t, seed=s, remedy=remedy)
                            out.append(Job(name, est, "sim", cfg))
    return out


def key(job: Job) -> tuple[Any, ...]:
    """Rows group the seeds of one setting."""
    s = job.setting
    if job.kind != "sim" or s is None:
        return (job.collection, job.estimator, job.kind, None, "none")
    return (job.collection, job.estimator, s.assessors, s.tick, s.remedy)


def _stats(results: list[RunResult], ref: float, ens: float, plan: float) -> dict[str, Any]:
    js = np.array([r.judgments for r in results], dtype=float)
    return {
        "runs": len(results),
        "judgments": float(js.mean()),
        "judgments_sd": float(js.std(ddof=1)) if js.size > 1 else 0.0,
        "judgments_min": int(js.min()),
        "judgments_max": int(js.max()),
        "extra_pct": float(100.0 * (js.mean() / ref - 1.0)),
        "extra_pct_worst": float(100.0 * (js.max() / ref - 1.0)),
        "extra_vs_ensemble_pct": float(100.0 * (js.mean() / ens - 1.0)),
        "extra_vs_planner_pct": float(100.0 * (js.mean() / plan - 1.0)),
        "abandoned": float(np.mean([r.abandoned for r in results])),
        "confidence": float(np.mean([r.confidence for r in results])),
        "accuracy": float(np.mean([r.accuracy for r in results])),
        "accuracy_min": float(np.min([r.accuracy for r in results])),
        "kendall_tau": float(np.mean([r.kendall_tau for r in results])),
        "hours": float(np.mean([r.hours for r in results])),
        "plans": float(np.mean([r.plans for r in results])),
        "fallbacks": int(sum(r.fallbacks for r in results)),
    }


def rows(done: list[tuple[Job, RunResult]]) -> list[dict[str, Any]]:
    groups: dict[tuple[Any, ...], list[tuple[Job, RunResult]]] = {}
    for job, res in done:
        groups.setdefault(key(job), []).append((job, res))
    ref: dict[tuple[str, str], float] = {}
    ens: dict[tuple[str, str], float] = {}
    plan: dict[tuple[str, str], float] = {}
    for k, g in groups.items():
        mean = float(np.mean([r.judgments for _, r in g]))
        {"seq": ref, "seq-jitter": ens, "plan-jitter": plan}.get(k[2], {})[k[0], k[1]] = mean
    out = []
    for k, g in groups.items():
        cell = (k[0], k[1])
        w = k[2]
        sim = isinstance(w, int)
        r0, e0 = ref[cell], ens.get(cell, ref[cell])
        out.append(
            {
                "collection": k[0],
                "estimator": k[1],
                "assessors": w,
                "tick": k[3],
                "remedy": k[4],
                "plan": plan_size(w) if sim else (plan_size(1) if w == "plan-jitter" else None),
                "sequential": r0,
                "sequential_ensemble": e0,
                "planner_ensemble": plan.get(cell, e0),
                **_stats([r for _, r in g], r0, e0, plan.get(cell, e0)),
                "runs_detail": [
                    {"seed": j.setting.seed if j.setting else j.seed, **r.summary()} for j, r in g
                ],
            }
        )
    return out


def _runs(sub: list[dict[str, Any]], which: str, field: str = "judgments") -> NDArray[np.float64]:
    return np.array(
        [
            d[field]
            for r in sub
            if (r["assessors"] == which)
            or (which == "sim" and isinstance(r["assessors"], int) and r["remedy"] == "none")
            for d in r["runs_detail"]
        ],
        dtype=float,
    )


def _versus(sim: NDArray[np.float64], base: NDArray[np.float64]) -> tuple[float, float]:
    """Extra % of the mean of ``sim`` over the mean of ``base``, and its standard error."""
    if base.size < 2 or sim.size < 2:
        return float(100.0 * (sim.mean() / base.mean() - 1.0)), 0.0
    se = np.sqrt(base.var(ddof=1) / base.size + sim.var(ddof=1) / sim.size)
    return float(100.0 * (sim.mean() / base.mean() - 1.0)), float(100.0 * se / base.mean())


def pooled(rows_: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every concurrent run without remedy of a cell, against the two sequential ensembles."""
    out = []
    cells = dict.fromkeys((r["collection"], r["estimator"]) for r in rows_)
    for cell in cells:
        sub = [r for r in rows_ if (r["collection"], r["estimator"]) == cell]
        ens, plan, sim = _runs(sub, "seq-jitter"), _runs(sub, "plan-jitter"), _runs(sub, "sim")
        if not ens.size or not plan.size or not sim.size:
            continue
        extra, se = _versus(sim, ens)
        extra_p, se_p = _versus(sim, plan)
        out.append(
            {
                "collection": cell[0],
                "estimator": cell[1],
                "sequential": sub[0]["sequential"],
                "ensemble_runs": int(ens.size),
                "ensemble_mean": float(ens.mean()),
                "ensemble_sd": float(ens.std(ddof=1)) if ens.size > 1 else 0.0,
                "planner_runs": int(plan.size),
                "planner_mean": float(plan.mean()),
                "planner_sd": float(plan.std(ddof=1)) if plan.size > 1 else 0.0,
                "concurrent_runs": int(sim.size),
                "concurrent_mean": float(sim.mean()),
                "concurrent_sd": float(sim.std(ddof=1)) if sim.size > 1 else 0.0,
                "extra_pct": extra,
                "extra_pct_se": se,
                "extra_vs_planner_pct": extra_p,
                "extra_vs_planner_pct_se": se_p,
                "accuracy_ensemble": float(_runs(sub, "seq-jitter", "accuracy").mean()),
                "accuracy_planner": float(_runs(sub, "plan-jitter", "accuracy").mean()),
                "accuracy_concurrent": float(_runs(sub, "sim", "accuracy").mean()),
            }
        )
    return out


LABEL = {
    "seq": "1, sequential (reference)",
    "seq-plain": "1, sequential, no locality",
    "seq-jitter": f"1, sequential ensemble (jitter {JITTER:g})",
    "plan-jitter": f"1, planner M={plan_size(1)} ensemble (jitter {JITTER:g})",
}


def fmt(rows_: list[dict[str, Any]]) -> str:
    lines = [
        "| collection | estimator | W | T (s) | remedy | judgments mean (min-max) | extra % "
        "vs ref. (worst run) | vs seq. ens. | vs planner ens. | confidence | accuracy (min) "
        "| tau | hours |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows_:
        w = r["assessors"]
        sim = isinstance(w, int)
        label = str(w) if sim else LABEL[w]
        tick = f"{r['tick']:g}" if sim else ("0" if w == "plan-jitter" else "-")
        if r["runs"] > 1:
            judg = f"{r['judgments']:,.0f} ({r['judgments_min']:,}-{r['judgments_max']:,})"
            extra = f"{r['extra_pct']:+.1f} ({r['extra_pct_worst']:+.1f})"
            acc = f"{r['accuracy']:.3f} ({r['accuracy_min']:.3f})"
        else:
            judg = f"{r['judgments']:,.0f}"
            extra = f"{r['extra_pct']:+.1f}"
            acc = f"{r['accuracy']:.3f}"
        if r["extra_pct"] > TARGET_EXTRA:
            extra = f"**{extra}**"
        if w == "seq":
            extra = "ref."
        ens = f"{r['extra_vs_ensemble_pct']:+.1f}"
        plan = f"{r['extra_vs_planner_pct']:+.1f}"
        hours = f"{r['hours']:.2f}" if sim else "-"
        lines.append(
            f"| {r['collection']} | {r['estimator']} | {label} | {tick} | {r['remedy']} | "
            f"{judg} | {extra} | {ens} | {plan} | {r['confidence']:.4f} | {acc} | "
            f"{r['kendall_tau']:.3f} | {hours} |"
        )
    return "\n".join(lines)


def fmt_pooled(pool: list[dict[str, Any]]) -> str:
    lines = [
        "| collection | estimator | sequential ref. | sequential ensemble mean (sd, runs) "
        "| planner ensemble mean (sd, runs) | concurrent mean (sd, runs) "
        "| extra % vs seq. ensemble (+- 1 se) | extra % vs planner ensemble (+- 1 se) "
        "| accuracy: seq. ens. / planner ens. / concurrent |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for p in pool:
        cols = []
        for name in ("extra_pct", "extra_vs_planner_pct"):
            text = f"{p[name]:+.1f} +- {p[name + '_se']:.1f}"
            cols.append(f"**{text}**" if p[name] > TARGET_EXTRA else text)
        lines.append(
            f"| {p['collection']} | {p['estimator']} | {p['sequential']:,.0f} | "
            f"{p['ensemble_mean']:,.0f} ({p['ensemble_sd']:.0f}, {p['ensemble_runs']}) | "
            f"{p['planner_mean']:,.0f} ({p['planner_sd']:.0f}, {p['planner_runs']}) | "
            f"{p['concurrent_mean']:,.0f} ({p['concurrent_sd']:.0f}, {p['concurrent_runs']}) | "
            f"{cols[0]} | {cols[1]} | {p['accuracy_ensemble']:.3f} / "
            f"{p['accuracy_planner']:.3f} / {p['accuracy_concurrent']:.3f} |"
        )
    return "\n".join(lines)


def _progress(done: int, total: int, started: float) -> None:
    if done % 50 == 0 or done == total:
        print(f"  {done}/{total} runs, {time.perf_counter() - started:.0f} s", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, help="MIREX 2011 AMS directory (FINE judgments)")
    ap.add_argument("--synthetic-seeds", type=int, default=3, help="synthetic collections")
    ap.add_argument("--synthetic-queries", type=int, default=50)
    ap.add_argument("--sim-seeds", type=int, default=8, help="draws of the listening times")
    ap.add_argument(
        "--ensemble-runs", type=int, default=48, help="sequential runs with weight jitter"
    )
    ap.add_argument("--estimators", nargs="+", default=["calibrated", "uniform"])
    ap.add_argument("--assessors", nargs="+", type=int, default=[10, 50])
    ap.add_argument("--ticks", nargs="+", type=float, default=[0.5, 2.0, 10.0])
    ap.add_argument(
        "--remedies", nargs="*", default=["inflight", "spread"], help="extra rows (none: skip)"
    )
    ap.add_argument("--remedy-ticks", nargs="+", type=float, default=[10.0])
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--json", type=Path, help="write every figure here")
    args = ap.parse_args(argv)
    if args.data is None and args.synthetic_seeds == 0:
        ap.error("nothing to run: give --data and/or --synthetic-seeds")
    started = time.perf_counter()
    loaded = collections(args.data, args.synthetic_seeds, args.synthetic_queries)
    todo = jobs(
        list(loaded),
        args.estimators,
        args.assessors,
        args.ticks,
        args.sim_seeds,
        [r for r in args.remedies if r != "none"],
        args.remedy_ticks,
        args.ensemble_runs,
    )
    print(f"{len(todo)} runs on {', '.join(loaded)}", flush=True)
    results: list[RunResult] = []
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs, initializer=_init, initargs=(loaded,)) as executor:
            for res in executor.map(run, todo, chunksize=2):
                results.append(res)
                _progress(len(results), len(todo), started)
    else:
        _init(loaded)
        for job in todo:
            results.append(run(job))
            _progress(len(results), len(todo), started)
    table = rows(list(zip(todo, results, strict=True)))
    pool = pooled(table)
    print(fmt(table))
    print()
    print(fmt_pooled(pool))
    seconds = time.perf_counter() - started
    print(f"{len(todo)} runs in {seconds:.0f} s")
    if args.json:
        payload = {
            "arguments": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "pool_sizes": {n: lc.collection.n_pairs for n, lc in loaded.items()},
            "seconds": seconds,
            "jitter": JITTER,
            "pooled": pool,
            "rows": table,
        }
        args.json.write_text(json.dumps(payload, indent=1))


if __name__ == "__main__":
    main()
