"""Draw docs/layers.svg from pyproject's import contracts, so the picture says what is checked.

``python -m tests.layers_picture`` rewrites it; tests/test_layers.py fails when it is stale.
Left: the "features" contract (whole packages; a box imports only boxes below it, never one
beside it). Right: the "layers" contract (modules; a row imports only rows below it).
"""

from __future__ import annotations

import textwrap
import tomllib
from html import escape
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
PICTURE = ROOT / "docs" / "layers.svg"

#: the name of each row of the "layers" contract, by the first module it lists
LAYER_NAMES = {
    "mtcjudge.__main__": "python -m",
    "mtcjudge.cli": "command line",
    "mtcjudge.main": "app",
    "mtcjudge.campaigns.routes": "HTTP",
    "mtcjudge.deps": "requests",
    "mtcjudge.api": "features",
    "mtcjudge.assessors.actions": "shared rooms",
    "mtcjudge.campaigns.repository": "queries",
    "mtcjudge.config": "core",
    "mtcjudge.mtc": "engine, tables",
}
COLOURS = [
    "#ede9fe",
    "#f3e8ff",
    "#fae8ff",
    "#dbeafe",
    "#e0f2fe",
    "#dcfce7",
    "#fef9c3",
    "#ffedd5",
    "#f1f5f9",
    "#fee2e2",
]
FEATURE_ROW, ROW_GAP, LINE = 46, 10, 16
#: the first of the features contract's layers that are shared rooms, not features
SHARED_ROOMS = "mtcjudge.assessors"


def contracts() -> dict[str, list[str]]:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    return {c["id"]: c["layers"] for c in config["contracts"] if c["type"] == "layers"}


def _split(layer: str, separator: str) -> list[str]:
    return [" ".join(part.split()) for part in layer.split(separator)]


def _short(module: str) -> str:
    return module.removeprefix("mtcjudge.")


def _features(layers: list[str], x: int, width: int) -> tuple[list[str], int]:
    out = [f'<text x="{x}" y="62" class="h">features contract: packages</text>']
    y = 76
    for index, layer in enumerate(layers):
        boxes = _split(layer, "|")
        if boxes[0] == SHARED_ROOMS:
            out.append(
                f'<line x1="{x}" y1="{y - 3}" x2="{x + width}" y2="{y - 3}" stroke="#64748b" '
                'stroke-dasharray="5 4"/>'
            )
            out.append(
                f'<text x="{x + width}" y="{y + 10}" class="n" text-anchor="end">'
                "shared rooms</text>"
            )
            y += 14
        box_width = (width - 8 * (len(boxes) - 1)) / len(boxes)
        for position, box in enumerate(boxes):
            left = x + position * (box_width + 8)
            out.append(
                f'<rect x="{left:.0f}" y="{y}" width="{box_width:.0f}" height="{FEATURE_ROW - 10}" '
                f'rx="5" fill="{COLOURS[(index + 4) % len(COLOURS)]}" stroke="#64748b"/>'
            )
            out.append(
                f'<text x="{left + box_width / 2:.0f}" y="{y + 23}" class="m" '
                f'text-anchor="middle">{escape(_short(box))}/</text>'
            )
        y += FEATURE_ROW
    return out, y


def _modules(layers: list[str], x: int, width: int) -> tuple[list[str], int]:
    out = [f'<text x="{x}" y="62" class="h">layers contract: modules</text>']
    y = 76
    chars = int((width - 130) / 7.1)
    for index, layer in enumerate(layers):
        independent = "|" in layer
        names = [_short(m) for m in _split(layer.replace("|", ":"), ":")]
        joiner = "  |  " if independent else "  ·  "
        lines = textwrap.wrap(joiner.join(names), chars, break_on_hyphens=False) or [""]
        height = 14 + LINE * len(lines)
        label = LAYER_NAMES.get(f"mtcjudge.{names[0]}", f"layer {index + 1}")
        out.append(
            f'<rect x="{x}" y="{y}" width="{width}" height="{height}" rx="5" '
            f'fill="{COLOURS[index % len(COLOURS)]}" stroke="#64748b"/>'
        )
        out.append(f'<text x="{x + 8}" y="{y + 20}" class="b">{escape(label)}</text>')
        for row, line in enumerate(lines):
            out.append(
                f'<text x="{x + 122}" y="{y + 20 + row * LINE}" class="s">{escape(line)}</text>'
            )
        y += height + ROW_GAP
    return out, y


def picture() -> str:
    found = contracts()
    left, left_bottom = _features(found["features"], 20, 420)
    right, right_bottom = _modules(found["layers"], 470, 970)
    height = max(left_bottom, right_bottom) + 40
    note = (
        "A box or row imports only what is below it; boxes side by side (|) never import each "
        "other, modules joined by · may. Drawn from pyproject.toml by tests/layers_picture.py."
    )
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="1460" height="{height}" '
            f'viewBox="0 0 1460 {height}" role="img" aria-label="mtcjudge package layers">',
            "<style>",
            "text { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; "
            "fill: #0f172a; }",
            ".t { font-size: 16px; font-weight: bold; } .h { font-size: 13px; font-weight: bold;"
            " fill: #334155; } .b { font-size: 12.5px; font-weight: bold; }",
            ".m { font-size: 13px; } .s { font-size: 11.5px; fill: #1e293b; }",
            ".n { font-size: 11.5px; fill: #475569; }",
            "</style>",
            '<rect width="100%" height="100%" fill="#ffffff"/>',
            '<text x="20" y="30" class="t">mtcjudge: the import contracts of the package</text>',
            *left,
            *right,
            f'<text x="20" y="{height - 16}" class="n">{escape(note)}</text>',
            "</svg>",
            "",
        ]
    )


if __name__ == "__main__":
    PICTURE.write_text(picture(), encoding="utf-8")
