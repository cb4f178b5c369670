"""What a stricter or looser stopping rule would have done, read from a calibration run's curves.

``bench/calibration.py --json`` keeps, for every replay, the curve of ranking confidence and
true accuracy against judgments (about 200 points). A rule that claims a target ``t`` only
once the engine's confidence reaches ``1 - m (1 - t)`` (a *margin* ``m`` below 1) stops later
on the same replay, so its stop can be read from the curve without replaying: this prints,
per estimator, target and margin, the pooled wrong pairs at the stop against the number
the claim allows, and the judgments against the uniform prior's with the plain rule (m = 1).
A margin above 1 reads a *looser* rule (1.2 claims 0.95 at 0.94): how much earlier the loop
could have stopped had its claims been that much more confident.

The curve is sampled, so a stop is read at the first sampled point past the threshold and
past the replay's minimum number of judgments (a little later than the loop would stop); a
replay whose curve never reaches the threshold counts at its last point. With margin 1 the
figures are therefore close to, not equal to, bench/calibration.py's exact ones. Run it on
a calibration JSON made with ``--to-complete`` to read margins at 0.99 (otherwise the
curves end at the 0.99 stop). docs/calibration.md ("Stopping margins") has the figures.

    python bench/stop_margins.py calibration.json --margin 0.8 --margin 0.6
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

if __package__ in (None, ""):  # run as ``python bench/stop_margins.py``: bench.* from the tree
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import TARGETS, run_benchmark
from mtcjudge.cli.common import UsageError


def stop(
    curve: Sequence[Sequence[float]], threshold: float, min_judgments: int = 0
) -> tuple[float, float]:
    """(judgments, accuracy) at the first point of ``curve`` with at least
    ``min_judgments`` judgments whose confidence reaches ``threshold``, or at its last
    point."""
    for judged, confidence, accuracy in curve:
        if judged >= min_judgments and confidence >= threshold:
            return judged, accuracy
    return curve[-1][0], curve[-1][2]


def margins_table(
    records: Sequence[dict[str, Any]], margins: Sequence[float]
) -> list[dict[str, Any]]:
    """One row per estimator, target and margin: wrong pairs (``sum (1 - accuracy) x
    pairs``), allowed (``sum (1 - target) x pairs``) and judgments over the uniform
    prior's judgments with the plain rule on the same replays."""
    # read from the curves like every margin's stop, so that margin 1 compares like with like
    uniform_judged = _uniform_stops(records, exact=False)
    rows = []
    for margin in (1.0, *margins):
        for target in TARGETS:
            totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
            for record in records:
                n = record["n_systems"]
                pairs = n * (n - 1) // 2
                judged, accuracy = stop(
                    record["curve"],
                    1 - margin * (1 - target),
                    record.get("min_judgments", 0),
                )
                total = totals[record["estimator"]]
                total[0] += (1 - accuracy) * pairs
                total[1] += (1 - target) * pairs
                total[2] += judged
            for estimator, (wrong, allowed, judged) in sorted(totals.items()):
                base = uniform_judged.get(target) or float("nan")
                rows.append(
                    {
                        "estimator": estimator,
                        "target": target,
                        "margin": margin,
                        "threshold": 1 - margin * (1 - target),
                        "wrong": wrong,
                        "allowed": allowed,
                        "honest": wrong <= allowed,
                        "effort_vs_uniform": judged / base,
                    }
                )
    return rows


def _uniform_stops(records: Sequence[dict[str, Any]], *, exact: bool = True) -> dict[float, float]:
    """Judgments of the uniform prior at its own stop, per target, summed over replays:
    with ``exact`` the stops the run recorded where it did, else (and without ``exact``)
    read from the curve."""
    judged: dict[float, float] = defaultdict(float)
    for record in records:
        if record["estimator"] != "uniform":
            continue
        recorded = record.get("stops", []) if exact else []
        stops = {s["target"]: s["judgments"] for s in recorded}
        for target in TARGETS:
            if target in stops:
                judged[target] += stops[target]
            else:
                judged[target] += stop(record["curve"], target, record.get("min_judgments", 0))[0]
    return judged


def _least_judgments(options: Sequence[dict[int, float]], budget: int) -> float:
    """The least total judgments over one choice per replay with at most ``budget`` wrong
    pairs in all (a knapsack by dynamic programming over the wrong count); ``options[i]``
    maps a wrong count of replay i to the fewest judgments that reach it. Infinite when
    no choice keeps within the budget."""
    best = np.full(budget + 1, np.inf)
    best[0] = 0.0
    for choice in options:
        after = np.full(budget + 1, np.inf)
        for wrong, judged in choice.items():
            if wrong <= budget:
                after[wrong:] = np.minimum(after[wrong:], best[: budget + 1 - wrong] + judged)
        best = after
    return float(best.min())


def oracle_table(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per estimator and target, the least effort with which *any* stopping rule could
    have stopped that estimator's replays and kept the pooled wrong pairs within the
    allowance: an oracle that knows the true accuracy at every recorded point of each
    curve and picks one point per replay (at or after its minimum of judgments) so that
    the judgments summed over the replays are fewest.

    The selection does not depend on the target (the confidence weights settle pairs at
    a fixed level), so the curve is the same whatever rule stops it; what no stopping
    rule can do on an estimator's curves, only another selection or other estimates
    can. The curves are sampled (about 200 points), so the oracle reads a little late:
    its figure is the bound to within one sampling step per replay."""
    uniform = _uniform_stops(records)
    rows = []
    for target in TARGETS:
        per: dict[str, tuple[list[dict[int, float]], float]] = {}
        for record in records:
            n = record["n_systems"]
            pairs = n * (n - 1) // 2
            options: dict[int, float] = {}
            for judged, _, accuracy in record["curve"]:
                if judged < record.get("min_judgments", 0):
                    continue
                wrong = round((1 - accuracy) * pairs)
                options[wrong] = min(options.get(wrong, np.inf), judged)
            choices, allowed = per.get(record["estimator"], ([], 0.0))
            choices.append(options)
            per[record["estimator"]] = (choices, allowed + (1 - target) * pairs)
        for estimator, (choices, allowed) in sorted(per.items()):
            least = _least_judgments(choices, int(np.floor(allowed + 1e-9)))
            base = uniform.get(target) or float("nan")
            rows.append(
                {
                    "estimator": estimator,
                    "target": target,
                    "allowed": allowed,
                    "least_judgments": least,
                    "effort_vs_uniform": least / base,
                }
            )
    return rows


DESCRIPTION = (
    "What a stricter or looser stopping rule would have done, read from a calibration run's curves."
)


def _margin(text: str) -> float:
    value = float(text)
    # below 5 every target's threshold stays above 0.5 (0.90 turns into 0.5 at 5)
    if not 0 < value < 5:
        raise argparse.ArgumentTypeError(f"a margin is in (0, 5), got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("json", type=Path, help="output of bench/calibration.py --json")
    parser.add_argument(
        "--margin",
        type=_margin,
        action="append",
        default=[],
        help="claim t once confidence >= 1 - margin (1 - t); repeatable (default 0.8, 0.6)",
    )
    parser.add_argument("--mirex", action="store_true", help="the MIREX replays only")
    parser.add_argument(
        "--oracle",
        action="store_true",
        help="also the least effort any stopping rule could have had and stayed honest",
    )


def run_from_args(args: argparse.Namespace, out: TextIO) -> int:
    try:
        records = json.loads(args.json.read_text())["records"]
    except (OSError, ValueError, KeyError) as exc:
        raise UsageError(f"{args.json}: not a calibration JSON ({exc})") from exc
    records = [r for r in records if (r["kind"] == "mirex") == args.mirex]
    if not any(r["estimator"] == "uniform" for r in records):
        raise UsageError(f"{args.json}: no uniform-prior replays to compare effort with")
    out.write("estimator    target  margin  threshold   wrong/allowed  effort vs uniform\n")
    for row in margins_table(records, args.margin or [0.8, 0.6]):
        flag = "" if row["honest"] else "  over"
        out.write(
            f"{row['estimator']:<12} {row['target']:.2f}    {row['margin']:.2f}    "
            f"{row['threshold']:.4f}  {row['wrong']:6.0f}/{row['allowed']:<6.0f}  "
            f"{row['effort_vs_uniform']:.2f}{flag}\n"
        )
    if args.oracle:
        out.write(
            "\nthe least judgments any stopping rule needed on these curves to keep the pooled\n"
            "wrong pairs within the allowance (an oracle that knows the truth):\n"
            "estimator    target  allowed  least judgments  effort vs uniform\n"
        )
        for row in oracle_table(records):
            least = row["least_judgments"]
            shown = (
                f"{least:15.0f}  {row['effort_vs_uniform']:.2f}"
                if np.isfinite(least)
                else (f"{'never':>15}  -")
            )
            out.write(
                f"{row['estimator']:<12} {row['target']:.2f}    {row['allowed']:7.1f}  {shown}\n"
            )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_benchmark(argv, DESCRIPTION, add_arguments, run_from_args)


if __name__ == "__main__":
    raise SystemExit(main())
