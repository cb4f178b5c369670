"""Results benchmark: the server time of a campaign's results document.

Usage::

    .venv/bin/python bench/results.py --json results.json [--repeat N] [--skip-large]
        [--runs R --judgments J --metadata M]

Two costs are timed, at MIREX 2011 scale (18 systems x 100 queries x k=5; the real collection
with ``--runs``) and at 100 systems x 1,000 queries x k=10 (4,950 system pairs), on the
calibrated engine a campaign runs, with a share of the pairs judged:

* ``document``: what the planner does after new judgments, from its live engine to the JSON
  text it stores (:func:`mtcjudge.results.document.engine_results` and ``stored_json``): the
  evaluation (recomputed, as after a judgment), the [U12] significance rules of every system
  pair, the systems and pairs, the JSON;
* ``request``: what ``GET /api/campaigns/{slug}/results`` does with the stored text besides
  its few SQL reads: parse it, assemble the document, serialise it.

The projection of the judgments still needed runs apart (on the planner's projection
thread, at most every 10 s), and is timed once for information at MIREX scale (at the large
scale only with ``--large-projection``: two runs at least, 15 s here). Figures are printed,
never asserted; the target (issue 9) is a document in at most 200 ms at the large scale.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

if __package__ in (None, ""):  # run as ``python bench/results.py``: bench.* from the tree
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import mirex_or_synthetic, run_benchmark
from mtcjudge.campaign_engine import document as engine_document
from mtcjudge.campaign_engine.build import CampaignEngine
from mtcjudge.campaign_engine.listening import ListeningInput, listening_facts, listening_section
from mtcjudge.campaign_engine.repository import PoolClips
from mtcjudge.ingest.loader import LoadedCollection, load_synthetic
from mtcjudge.models import Campaign, utcnow
from mtcjudge.mtc.engine import MTCEngine
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.factory import CALIBRATED, engine_for_settings
from mtcjudge.mtc.listening_time import Defaults
from mtcjudge.mtc.projection import Projection, TargetProjection, project
from mtcjudge.mtc.scales import FINE
from mtcjudge.mtc.significance import significance_verdicts
from mtcjudge.mtc.synthetic import generate
from mtcjudge.results import document as results
from mtcjudge.results import read

__all__ = ["DESCRIPTION", "add_arguments", "main", "results_benchmark", "run_from_args"]

DESCRIPTION = (
    "Server time of a campaign's results document (the planner's build and the API's read) at "
    "MIREX 2011 scale and at 100 systems x 1,000 queries x k=10."
)
TARGET_MS = 200.0


def _times(work: Callable[[], object], repeat: int) -> list[float]:
    work()  # warm up (imports, caches)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(1e3 * (time.perf_counter() - started))
    return times


def _summary(times: list[float]) -> dict[str, float]:
    return {
        "median_ms": statistics.median(times),
        "p90_ms": float(np.percentile(times, 90)),
        "min_ms": min(times),
    }


def _case(
    loaded: LoadedCollection,
    judged_share: float,
    repeat: int,
    out: TextIO,
    name: str,
    *,
    with_projection: bool = True,
) -> dict[str, Any]:
    c = loaded.collection
    rng = np.random.default_rng(0)
    judged = rng.random(c.n_pairs) < judged_share
    values = np.where(judged, loaded.judged_values, np.nan)
    started = time.perf_counter()
    engine, model = engine_for_settings(c, loaded.metadata, FINE, CALIBRATED, judged_values=values)
    build_s = time.perf_counter() - started
    campaign, state = _campaign(loaded, engine, model)
    targets = engine_document.projection_targets(0.95)
    projection_s: float | None = None
    if with_projection:
        started = time.perf_counter()
        projection = project(engine, targets, runs=16, max_seconds=2.0)
        projection_s = time.perf_counter() - started
    else:  # a stand-in of the same size: the document's cost does not depend on its numbers
        projection = Projection(
            targets=tuple(TargetProjection(t, False, 100, 50, 200, 16) for t in targets),
            runs=16,
            method="not run (bench/results.py --large-projection runs it)",
            judged=int(judged.sum()),
        )

    # the listening section's size does not depend on the judgments' times: the defaults'
    clips = PoolClips(c.n_queries, 0, 0.0, c.n_pairs, 0, 0.0)
    listening = listening_facts(ListeningInput([], clips, Defaults(), 1, 0.0))

    def document() -> str:
        engine._evaluation = None  # as after a judgment
        part = engine_document.engine_results(state, campaign, projection=projection)
        section = listening_section(listening, part.projections)
        return engine_document.stored_json(part, "bench", section)

    def significance_matrices() -> object:
        # the rules on the (n_pairs, n_queries) bound matrices, as before the per-system path
        a, b = np.triu_indices(c.n_systems, 1)
        upper, lower = engine.agk_bounds()
        return significance_verdicts(upper, lower, engine.evaluation().diff_mean[a, b])

    stored = document()
    snapshot = read.ResultsSnapshot(
        campaign=campaign, measure="cg", scale="fine", driving=True, version=1,
        computed_at=utcnow(), stored=None, judgment_rows=int(judged.sum()),
        judgments_changed_at=utcnow(), unplayable_clips=[], trajectory=[], assessors=[],
        listening=read.ListeningSource(),
    )  # fmt: skip

    def request() -> str:
        parts = engine_document.parse_stored_parts(stored, "bench")
        assert parts.results is not None
        ready = read.ResultsSnapshot(
            **{
                **snapshot.__dict__,
                "stored": parts.results,
                "listening": read.ListeningSource(stored=parts.listening),
            }
        )
        return results.results_json(read.complete(ready, _no_rows))

    doc = _summary(_times(document, repeat))
    sig = _summary(_times(engine.significance, repeat))
    matrices = _summary(_times(significance_matrices, repeat))
    req = _summary(_times(request, repeat))
    size = len(stored.encode())
    figures: dict[str, Any] = {
        "systems": c.n_systems,
        "queries": c.n_queries,
        "k": c.k,
        "pool_pairs": c.n_pairs,
        "system_pairs": c.n_systems * (c.n_systems - 1) // 2,
        "judged_pairs": int(judged.sum()),
        "engine_build_s": build_s,
        "document": doc,
        "significance": sig,
        "significance_bound_matrices": matrices,
        "request": req,
        "document_bytes": size,
        "projection_s": projection_s,
        "projection_runs": projection.runs if with_projection else None,
    }
    out.write(_line(name, figures))
    out.flush()
    return figures


def _campaign(
    loaded: LoadedCollection, engine: MTCEngine, model: RelevanceModel
) -> tuple[Campaign, CampaignEngine]:
    """A campaign row and the planner's engine state around ``engine``, as the results
    document reads them."""
    c = loaded.collection
    campaign = Campaign(
        id=1, slug="bench", status="open", scale="fine", k=c.k, measure="cg",
        estimator="calibrated", policy="confidence", target=0.95, seed=0,
        keep_collecting=False,
    )  # fmt: skip
    state = CampaignEngine(
        campaign_id=1,
        settings_key="bench",
        engine=engine,
        model=model,
        pair_ids=[(int(q), int(d)) for q, d in zip(c.pair_query, c.pair_doc, strict=True)],
        pair_index={},
        query_index={},
        system_names=list(loaded.systems),
        playable=np.ones(c.n_pairs, dtype=bool),
    )
    return campaign, state


def _line(name: str, figures: dict[str, Any]) -> str:
    """One collection's figures in a line."""
    ns, nq = figures["systems"], figures["queries"]
    doc, sig, req = figures["document"], figures["significance"], figures["request"]
    matrices = figures["significance_bound_matrices"]
    projection_s = figures["projection_s"]
    return (
        f"{name:10s} {ns:4d} x {nq:5d} x k={figures['k']:<3d} "
        f"({figures['system_pairs']:5d} system pairs, {figures['judged_pairs']} judged): "
        f"document median {doc['median_ms']:7.1f} ms (p90 {doc['p90_ms']:.1f}; significance "
        f"{sig['median_ms']:.1f}, on bound matrices {matrices['median_ms']:.1f}), "
        f"request {req['median_ms']:6.1f} ms, "
        f"{figures['document_bytes'] / 1024:.0f} KiB; "
        + (
            f"projection {projection_s:.2f} s ({figures['projection_runs']} runs)\n"
            if projection_s is not None
            else "projection not run\n"
        )
    )


def _no_rows(*_: object) -> Any:
    raise AssertionError("the stored document needs no engine")


def results_benchmark(
    repeat: int = 15,
    judged_share: float = 0.05,
    runs: Path | None = None,
    metadata: Path | None = None,
    judgments: Path | None = None,
    large: bool = True,
    large_projection: bool = False,
    out: TextIO | None = None,
) -> dict[str, Any]:
    """Run the benchmark and return its figures (also printed to ``out``)."""
    out = out or sys.stdout
    mirex, source = mirex_or_synthetic(
        runs, metadata, judgments, judgments_for="the values of the judged share"
    )
    figures: dict[str, Any] = {
        "mirex2011_scale": {
            **_case(mirex, judged_share, repeat, out, "mirex2011"),
            "source": source,
        }
    }
    if large:
        del mirex
        gc.collect()
        big = load_synthetic(generate(100, 1000, 10, seed=0))
        figures["large_scale"] = {
            **_case(
                big,
                judged_share,
                max(5, repeat // 2),
                out,
                "large",
                with_projection=large_projection,
            ),
            "source": "synthetic 100x1000x10",
        }
    figures["target_document_ms"] = TARGET_MS
    return figures


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the figures here")
    parser.add_argument(
        "--repeat", type=int, default=15, metavar="N", help="timed repetitions (half at large)"
    )
    parser.add_argument(
        "--judged", type=float, default=0.05, metavar="SHARE", help="share of pairs judged"
    )
    parser.add_argument("--runs", type=Path, metavar="PATH", help="real runs (MIREX scale)")
    parser.add_argument("--metadata", type=Path, metavar="FILE", help="metadata of --runs")
    parser.add_argument("--judgments", type=Path, metavar="FILE", help="FINE judgments of --runs")
    parser.add_argument("--skip-large", action="store_true", help="only the MIREX-scale case")
    parser.add_argument(
        "--large-projection",
        action="store_true",
        help="time the projection at the large scale too (two simulated runs at least: seconds)",
    )


def run_from_args(args: argparse.Namespace, out: TextIO) -> int:
    figures = results_benchmark(
        repeat=args.repeat,
        judged_share=args.judged,
        runs=args.runs,
        metadata=args.metadata,
        judgments=args.judgments,
        large=not args.skip_large,
        large_projection=args.large_projection,
        out=out,
    )
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_benchmark(argv, DESCRIPTION, add_arguments, run_from_args, name="results")


if __name__ == "__main__":
    raise SystemExit(main())
