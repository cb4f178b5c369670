"""The package's import graph: no circle, every module in a layer, the contracts kept.

grimp (import-linter's graph) records every import of a module: at its top, inside a
function, under ``TYPE_CHECKING``. So an import moved into a function does not hide a circle
from these tests. The contracts themselves are in pyproject.toml (``[tool.importlinter]``);
.ci/run checks them with ``lint-imports``, and so does the last test here.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

import grimp
import pytest
from importlinter.cli import lint_imports

from tests.layers_picture import PICTURE, picture

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


@cache
def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("mtcjudge", cache_dir=None)


def _imports(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def circles(imports: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without
    recursion), each sorted: every module of one imports, directly or not, every other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(imports):
        if root in index:
            continue
        work = [(root, iter(sorted(imports.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(imports.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_circles_finds_the_knot_the_package_had() -> None:
    # the shapes of the old knot: audit <-> campaigns.service, and
    # planner.service -> campaigns.results -> campaigns.service -> planner.service
    old = {
        "audit": {"models", "campaigns.service"},  # under TYPE_CHECKING
        "campaigns.service": {"audit", "planner.service"},
        "planner.service": {"campaigns.results"},
        "campaigns.results": {"campaigns.service", "planner.repository"},
        "planner.repository": {"models"},
    }
    assert circles(old) == [["audit", "campaigns.results", "campaigns.service", "planner.service"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert circles({"a": {"a"}}) == []  # a module importing itself is no circle of modules


def test_no_circle_in_the_import_graph() -> None:
    graph = _graph()
    assert {"mtcjudge.results.read", "mtcjudge.planner.service", "mtcjudge.cli"} <= graph.modules
    internal = {
        module: {m for m in imported if m.startswith("mtcjudge")}
        for module, imported in _imports(graph).items()
    }
    assert circles(internal) == []


#: the feature packages and the shared rooms below them (pyproject's "features" contract)
FEATURES = (
    "assessors",
    "auth",
    "campaign_engine",
    "campaigns",
    "clips",
    "evaluation",
    "exports",
    "judging",
    "organizers",
    "planner",
    "pool",
    "reports",
    "results",
)


def two_way(imports: Mapping[str, Iterable[str]], packages: Iterable[str]) -> list[tuple[str, str]]:
    """The pairs of packages that import each other (a module of each imports a module of the
    other), each pair sorted; ``imports`` maps a dotted module to the modules it imports."""
    names = set(packages)

    def package(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 2 and parts[1] in names else None

    edges = {
        (a, b)
        for module, imported in imports.items()
        for target in imported
        if (a := package(module)) and (b := package(target)) and a != b
    }
    return sorted((a, b) for a, b in edges if a < b and (b, a) in edges)


def test_two_way_finds_the_knot_of_features_the_package_had() -> None:
    # five of the two-way pairs found in the package before the shared rooms (issue 29)
    old = {
        "mtcjudge.planner.service": {"mtcjudge.results.document"},
        "mtcjudge.results.read": {"mtcjudge.planner.build", "mtcjudge.models"},
        "mtcjudge.planner.pool": {"mtcjudge.campaigns.audio"},
        "mtcjudge.campaigns.service": {"mtcjudge.planner.pool"},
        "mtcjudge.campaigns.reuse": {"mtcjudge.exports.restore"},
        "mtcjudge.exports.restore": {"mtcjudge.campaigns.service"},
        "mtcjudge.campaigns.manage": {"mtcjudge.organizers.service"},
        "mtcjudge.organizers.routes": {"mtcjudge.campaigns.service"},
        "mtcjudge.judging.service": {"mtcjudge.assessors.actions"},
    }
    assert two_way(old, FEATURES) == [
        ("campaigns", "exports"),
        ("campaigns", "organizers"),
        ("campaigns", "planner"),
        ("planner", "results"),
    ]
    assert two_way({"mtcjudge.a.x": {"mtcjudge.b.y"}}, ["a", "b"]) == []


def test_no_two_features_import_each_other() -> None:
    graph = _graph()
    packages = {m.split(".")[1] for m in graph.modules if m.count(".") >= 2}
    assert set(FEATURES) <= packages
    assert two_way(_imports(graph), FEATURES) == []


def _contract_modules() -> set[str]:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["id"] == "layers"]
    modules: set[str] = set()
    for layer in layers["layers"]:
        for name in layer.replace("|", ":").split(":"):
            modules.add(name.strip().strip("()"))
    return modules


def test_every_module_has_a_layer() -> None:
    """A new module goes into a layer of pyproject's contract: outside every layer, nothing
    would check what it imports or who imports it."""
    placed = _contract_modules()
    graph = _graph()
    modules = {m for m in graph.modules if m.startswith("mtcjudge")}
    assert placed <= modules, f"layers name modules that do not exist: {placed - modules}"

    def in_a_layer(module: str) -> bool:
        return any(module == p or module.startswith(p + ".") for p in placed)

    def holds_a_layer(module: str) -> bool:  # a package whose modules sit in layers
        return any(p.startswith(module + ".") for p in placed)

    outside = sorted(m for m in modules if not in_a_layer(m) and not holds_a_layer(m))
    assert outside == []
    # and the feature packages whose modules sit in layers import nothing themselves (the
    # package root is left out: it may be the public API)
    imports = _imports(graph)
    holders = sorted(
        m for m in modules if holds_a_layer(m) and not in_a_layer(m) and m != "mtcjudge"
    )
    assert "mtcjudge.campaigns" in holders
    assert {m: sorted(imports[m]) for m in holders if imports[m]} == {}


def test_the_import_contracts_are_kept(capsys: pytest.CaptureFixture[str]) -> None:
    code = lint_imports(config_filename=str(PYPROJECT), no_cache=True)
    report = capsys.readouterr().out
    assert code == 0, report
    assert "3 kept, 0 broken" in report


def test_the_picture_of_the_layers_is_drawn_from_the_contracts() -> None:
    """docs/layers.svg shows what the contracts check: redraw it with
    ``python -m tests.layers_picture`` after changing them."""
    assert PICTURE.read_text(encoding="utf-8") == picture()
    drawn = picture()
    assert "campaign_engine/" in drawn
    assert "shared rooms" in drawn
