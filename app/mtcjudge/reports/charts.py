"""The report's charts as inline SVG, drawn on the server from the report document.

No script, no font or image from elsewhere: the SVG is part of the HTML file, so the report
reads offline and prints as it shows. Every chart has a title and a text alternative; the
report's tables carry the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup, escape

__all__ = ["curve", "forest", "heatmap", "nice_ticks", "pool_bar", "rank_label"]

_INK = "#1d2733"
_MUTED = "#66707c"
_GRID = "#d9dee4"
_ACCENT = "#1f5f8b"
_LOW = (247, 244, 232)  # confidence 0.5: a coin toss
_HIGH = (31, 95, 139)  # confidence 1
_TIED = "#d9dee4"  # a tied pair: no order, so no colour of the confidence scale


def _f(value: float) -> str:
    """A coordinate, short."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values from ``low`` to ``high`` (about ``count`` of them).

    >>> nice_ticks(0.12, 0.58)
    [0.2, 0.3, 0.4, 0.5]
    """
    span = high - low
    if not math.isfinite(span) or span <= 0:
        return [low]
    raw = span / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = first
    while value <= high + 1e-9 * step:
        ticks.append(round(value, 12))
        value += step
    return ticks


def _label(value: float) -> str:
    return f"{value:.3g}"


def rank_label(system: dict[str, Any]) -> str:
    """``3. S01``, or ``3= S01`` for a system tied with another (they share the rank)."""
    return f"{system['rank']}{'=' if system.get('tied') else '.'} {system['name']}"


def _svg(width: float, height: float, label: str, body: list[str]) -> Markup:
    return Markup(
        f'<svg class="chart" viewBox="0 0 {_f(width)} {_f(height)}" width="{_f(width)}" '
        f'height="{_f(height)}" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>{''.join(body)}</svg>"
    )


def forest(section: dict[str, Any]) -> Markup:
    """Each system's estimate (dot) and interval (bar), best first, on one axis."""
    systems: Sequence[dict[str, Any]] = section["systems"]
    exact = bool(section.get("exact"))  # every score exact: intervals of no width, not shown
    label = (
        f"{section['name']}: score of each system (exact: every pair it depends on is judged), "
        "best first"
        if exact
        else f"{section['name']}: estimated score and interval of each system, best first"
    )
    if not systems:
        return _svg(640, 30, label, [_text(10, 20, "no system")])
    row, top, left, right, width = 20.0, 8.0, 170.0, 470.0, 640.0
    lows = [float(min(s["ci_low"], s["mean"])) for s in systems]
    highs = [float(max(s["ci_high"], s["mean"])) for s in systems]
    low, high = min(lows), max(highs)
    pad = (high - low) * 0.05 or 0.05
    low, high = low - pad, high + pad

    def x(value: float) -> float:
        return left + (value - low) / (high - low) * (right - left)

    height = top + row * len(systems) + 34
    body: list[str] = []
    axis_y = top + row * len(systems) + 4
    for tick in nice_ticks(low, high):
        tx = x(tick)
        body.append(
            f'<line x1="{_f(tx)}" y1="{_f(top)}" x2="{_f(tx)}" y2="{_f(axis_y)}" '
            f'stroke="{_GRID}" stroke-width="1"/>'
        )
        body.append(_text(tx, axis_y + 14, _label(tick), anchor="middle", size=11))
    body.append(
        _text(
            (left + right) / 2,
            axis_y + 28,
            f"{section['name']}, k = {section['k']}",
            anchor="middle",
            size=11,
            fill=_MUTED,
        )
    )
    for i, s in enumerate(systems):
        cy = top + row * i + row / 2
        if i % 2 == 0:
            body.append(
                f'<rect x="0" y="{_f(cy - row / 2)}" width="{_f(width)}" height="{_f(row)}" '
                f'fill="#f4f6f8"/>'
            )
        body.append(_text(left - 8, cy + 4, rank_label(s), anchor="end", clip=22))
        body.append(
            f'<line x1="{_f(x(s["ci_low"]))}" y1="{_f(cy)}" x2="{_f(x(s["ci_high"]))}" '
            f'y2="{_f(cy)}" stroke="{_ACCENT}" stroke-width="3" stroke-linecap="round"/>'
        )
        body.append(
            f'<circle cx="{_f(x(s["mean"]))}" cy="{_f(cy)}" r="4.5" fill="{_INK}">'
            f"<title>{escape(s['name'])}: {s['mean']:.4f}"
            + ("" if exact else f" [{s['ci_low']:.4f}, {s['ci_high']:.4f}]")
            + "</title></circle>"
        )
        body.append(
            _text(
                right + 12,
                cy + 4,
                f"{s['mean']:.4f}"
                if exact
                else f"{s['mean']:.4f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}]",
                size=11,
                fill=_MUTED,
            )
        )
    return _svg(width, height, label, body)


def _text(
    x: float,
    y: float,
    content: str,
    *,
    anchor: str = "start",
    size: int = 12,
    fill: str = _INK,
    clip: int | None = None,
    weight: str | None = None,
) -> str:
    shown = content if clip is None or len(content) <= clip else content[: clip - 1] + "…"
    extra = f' font-weight="{weight}"' if weight else ""
    return (
        f'<text x="{_f(x)}" y="{_f(y)}" text-anchor="{anchor}" font-size="{size}" '
        f'fill="{fill}"{extra}>{escape(shown)}</text>'
    )


def _colour(confidence: float) -> tuple[str, float]:
    """The cell's fill for a confidence from 0.5 to 1, and how dark it is (0 to 1)."""
    t = min(1.0, max(0.0, (confidence - 0.5) / 0.5))
    r, g, b = (round(lo + (hi - lo) * t) for lo, hi in zip(_LOW, _HIGH, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}", t


def _rank_numbers(
    systems: Sequence[dict[str, Any]], n: int, cell: float, left: float, top: float
) -> list[str]:
    """The heatmap's ``n`` column heads: each system's rank (as many as there is room for)."""
    heads = []
    for j in range(n):
        if cell >= 14 or j % max(1, round(14 / cell)) == 0:
            rank = systems[j]
            heads.append(
                _text(
                    left + cell * j + cell / 2,
                    top - 8,
                    f"{rank['rank']}{'=' if rank.get('tied') else ''}",
                    anchor="middle",
                    size=10,
                    fill=_MUTED,
                )
            )
    return heads


def _heatmap_cell(
    x: float, y: float, cell: float, pair: tuple[str, str], value: float | None, tied: bool
) -> list[str]:
    """One cell of the heatmap: blank (the diagonal), a tied pair, or the pair's confidence
    (written in the cell when it is large enough)."""
    box = f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(cell)}" height="{_f(cell)}" '
    if value is None:
        return [box + f'fill="#ffffff" stroke="{_GRID}" stroke-width="0.5"/>']
    names = f"{escape(pair[0])} and {escape(pair[1])}"
    if tied:
        drawn = [
            box + f'fill="{_TIED}" stroke="#ffffff" stroke-width="0.5"><title>'
            f"{names}: tied (known to be equal; no order is claimed)</title></rect>"
        ]
        if cell >= 10:
            drawn.append(_text(x + cell / 2, y + cell / 2 + 4, "=", anchor="middle", size=11))
        return drawn
    fill, darkness = _colour(value)
    drawn = [
        box + f'fill="{fill}" stroke="#ffffff" stroke-width="0.5"><title>'
        f"{names}: {value:.4f}</title></rect>"
    ]
    if cell >= 28:
        shown = f"{value:.2f}".removeprefix("0")  # .97; 1.00 stays
        drawn.append(
            _text(
                x + cell / 2,
                y + cell / 2 + 4,
                shown,
                anchor="middle",
                size=10,
                fill="#ffffff" if darkness > 0.55 else _INK,
            )
        )
    return drawn


def heatmap(section: dict[str, Any]) -> Markup:
    """The confidence of every system pair, systems in ranking order on both axes (rows are
    named, columns numbered by rank); the diagonal is blank, a tied pair marked ``=``."""
    matrix = section["confidence_matrix"]
    names: Sequence[str] = matrix["systems"]
    values: Sequence[Sequence[float | None]] = matrix["confidence"]
    tied: Sequence[Sequence[bool]] = matrix.get("tied") or [[False] * len(names) for _ in names]
    systems: Sequence[dict[str, Any]] = section["systems"]
    n = len(names)
    label = (
        f"{section['name']}: confidence that each pair of systems is ordered as estimated, "
        "systems in ranking order"
        + ("; = marks a tied pair (known to be equal)" if any(map(any, tied)) else "")
    )
    if n < 2:
        return _svg(640, 30, label, [_text(10, 20, "fewer than two systems")])
    cell = max(6.0, min(34.0, 520.0 / n))
    left, top = 170.0, 26.0
    body = _rank_numbers(systems, n, cell, left, top)
    for i, name in enumerate(names):
        y = top + cell * i
        if cell >= 12 or i % max(1, round(12 / cell)) == 0:
            body.append(
                _text(
                    left - 8,
                    y + cell / 2 + 4,
                    rank_label(systems[i]),
                    anchor="end",
                    size=11,
                    clip=22,
                )
            )
        for j in range(n):
            pair = (name, names[j])
            body += _heatmap_cell(left + cell * j, y, cell, pair, values[i][j], tied[i][j])
    legend_y = top + cell * n + 18
    ties = any(map(any, tied))
    body += _legend(left, legend_y, float(section["target"]), ties)
    return _svg(max(640.0, left + cell * n + 20), legend_y + (48 if ties else 34), label, body)


def _legend(left: float, y: float, target: float, ties: bool = False) -> list[str]:
    """The colour scale from 0.5 to 1, with the target marked (and the tied pairs' cell)."""
    width, steps = 240.0, 10
    parts = [_text(left, y - 4, "confidence", size=11, fill=_MUTED)]
    for s in range(steps):
        fill, _ = _colour(0.5 + 0.5 * (s + 0.5) / steps)
        parts.append(
            f'<rect x="{_f(left + width * s / steps)}" y="{_f(y)}" width="{_f(width / steps)}" '
            f'height="10" fill="{fill}"/>'
        )
    for value in (0.5, 0.75, 1.0):
        parts.append(
            _text(
                left + width * (value - 0.5) / 0.5,
                y + 24,
                f"{value:g}",
                anchor="middle",
                size=10,
                fill=_MUTED,
            )
        )
    tx = left + width * min(1.0, max(0.0, (target - 0.5) / 0.5))
    parts.append(
        f'<line x1="{_f(tx)}" y1="{_f(y - 3)}" x2="{_f(tx)}" y2="{_f(y + 13)}" '
        f'stroke="{_INK}" stroke-width="2"/>'
    )
    parts.append(
        _text(left + width + 10, y + 9, f"target {target:g} (black mark)", size=10, fill=_MUTED)
    )
    if ties:
        parts.append(
            f'<rect x="{_f(left)}" y="{_f(y + 32)}" width="10" height="10" fill="{_TIED}"/>'
        )
        parts.append(
            _text(
                left + 14,
                y + 41,
                "= tied: known to be equal, no order claimed",
                size=10,
                fill=_MUTED,
            )
        )
    return parts


def curve(trajectory: dict[str, Any], pool_pairs: int) -> Markup | None:
    """Ranking confidence against judged pairs, over the whole pool on the x axis, with the
    target dashed; None when there is no point to draw."""
    points: Sequence[dict[str, Any]] = trajectory["points"]
    if not points:
        return None
    width, height = 640.0, 260.0
    left, right, top, bottom = 50.0, 620.0, 14.0, 210.0
    x_max = float(max(pool_pairs, points[-1]["judgments"], 1))
    lowest = float(min(p["ranking_confidence"] for p in points))
    y_low = min(0.5, math.floor(lowest * 10) / 10)

    def x(value: float) -> float:
        return left + value / x_max * (right - left)

    def y(value: float) -> float:
        return bottom - (value - y_low) / (1.0 - y_low) * (bottom - top)

    body: list[str] = []
    for tick in nice_ticks(y_low, 1.0):
        body.append(
            f'<line x1="{_f(left)}" y1="{_f(y(tick))}" x2="{_f(right)}" y2="{_f(y(tick))}" '
            f'stroke="{_GRID}"/>'
        )
        body.append(_text(left - 6, y(tick) + 4, f"{tick:g}", anchor="end", size=11))
    for tick in nice_ticks(0.0, x_max):
        body.append(_text(x(tick), bottom + 16, f"{tick:g}", anchor="middle", size=11))
    body.append(
        f'<line x1="{_f(left)}" y1="{_f(bottom)}" x2="{_f(right)}" y2="{_f(bottom)}" '
        f'stroke="{_INK}"/>'
    )
    target = float(trajectory["target"])
    body.append(
        f'<line x1="{_f(left)}" y1="{_f(y(target))}" x2="{_f(right)}" y2="{_f(y(target))}" '
        f'stroke="{_INK}" stroke-dasharray="6 4"/>'
    )
    body.append(_text(right, y(target) - 5, f"target {target:g}", anchor="end", size=11))
    line = " ".join(f"{_f(x(p['judgments']))},{_f(y(p['ranking_confidence']))}" for p in points)
    body.append(
        f'<polyline points="{line}" fill="none" stroke="{_ACCENT}" stroke-width="2" '
        f'stroke-linejoin="round"/>'
    )
    last = points[-1]
    body.append(
        f'<circle cx="{_f(x(last["judgments"]))}" cy="{_f(y(last["ranking_confidence"]))}" '
        f'r="4" fill="{_ACCENT}"/>'
    )
    body.append(
        _text(
            (left + right) / 2,
            height - 14,
            f"judged pool pairs (the axis ends at the pool: {pool_pairs} pairs)",
            anchor="middle",
            size=11,
            fill=_MUTED,
        )
    )
    label = (
        f"Ranking confidence against judged pairs: {last['ranking_confidence']:.4f} after "
        f"{last['judgments']} of {pool_pairs} pool pairs; target {target:g}"
    )
    return _svg(width, height, label, body)


def pool_bar(judgments: dict[str, Any]) -> Markup:
    """Judged pool pairs on the report's scale against the whole pool."""
    pool = int(judgments["pool_pairs"])
    judged = int(judgments["judged_pool_pairs_on_scale"])
    share = judged / pool if pool else 0.0
    width, left, right = 640.0, 10.0, 630.0
    filled = left + (right - left) * share
    label = (
        f"{judged} of {pool} pool pairs judged on {judgments['scale'].upper()} "
        f"({100 * share:.1f} %)"
    )
    body = [
        f'<rect x="{_f(left)}" y="8" width="{_f(right - left)}" height="18" fill="#e6eaee" '
        f'rx="3"/>',
        f'<rect x="{_f(left)}" y="8" width="{_f(filled - left)}" height="18" fill="{_ACCENT}" '
        f'rx="3"/>',
        _text(left, 44, label, size=12),
    ]
    return _svg(width, 52, label, body)
