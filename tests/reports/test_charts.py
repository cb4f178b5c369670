"""The report's SVG charts: escaped names, axes that cover the data, one mark per value."""

from __future__ import annotations

import re

from mtcjudge.reports import charts


def _ranking(names: list[str]) -> dict:
    n = len(names)
    systems = [
        {"name": name, "rank": i + 1, "mean": 0.6 - 0.05 * i, "var": 0.0,
         "ci_low": 0.55 - 0.05 * i, "ci_high": 0.65 - 0.05 * i}
        for i, name in enumerate(names)
    ]  # fmt: skip
    matrix = [[None if i == j else 0.5 + 0.5 * abs(i - j) / n for j in range(n)] for i in range(n)]
    return {
        "name": "CG@k",
        "k": 5,
        "target": 0.95,
        "systems": systems,
        "confidence_matrix": {"systems": names, "confidence": matrix},
    }


def test_names_are_escaped_in_every_chart():
    section = _ranking(["A<script>&", "B"])
    for svg in (charts.forest(section), charts.heatmap(section)):
        assert "<script>" not in svg
        assert "A&lt;script&gt;&amp;" in svg


def test_forest_has_a_dot_and_a_bar_per_system_on_ticks_that_cover_them():
    section = _ranking(["S1", "S2", "S3"])
    svg = str(charts.forest(section))
    assert svg.count("<circle") == 3
    assert "1. S1" in svg
    assert "0.6000 [0.550, 0.650]" in svg
    assert charts.nice_ticks(0.12, 0.58) == [0.2, 0.3, 0.4, 0.5]
    assert charts.nice_ticks(0.0, 6335.0) == [0, 2000, 4000, 6000]
    assert charts.nice_ticks(0.5, 0.5) == [0.5]


def test_heatmap_shows_values_only_while_they_fit():
    small = str(charts.heatmap(_ranking([f"S{i}" for i in range(4)])))
    assert small.count("</rect>") == 4 * 3  # one titled cell per ordered pair
    assert re.search(r">\.\d\d</text>", small)
    large = str(charts.heatmap(_ranking([f"S{i}" for i in range(30)])))
    assert large.count("</rect>") == 30 * 29
    assert not re.search(r">\.\d\d</text>", large)


def test_curve_spans_the_pool_or_is_absent():
    trajectory = {
        "target": 0.95,
        "points": [
            {"judgments": 0, "ranking_confidence": 0.3, "settled": 0},
            {"judgments": 40, "ranking_confidence": 0.97, "settled": 3},
        ],
    }
    svg = str(charts.curve(trajectory, 100))
    assert "0.9700 after 40 of 100 pool pairs" in svg
    assert ">100</text>" in svg  # the x axis reaches the pool
    # the y axis goes down to the lowest point (0.3): the curve starts at its bottom left
    assert '<polyline points="50,210 ' in svg
    assert ">0.4</text>" in svg
    assert charts.curve({"target": 0.95, "points": []}, 100) is None
