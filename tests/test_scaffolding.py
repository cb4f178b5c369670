"""The shared scaffolding stays shared: one launcher of ``mtcjudge serve`` (``bench._serve``, which
the tests take from ``tests.servers``), test data built by ``tests.factories`` (no test imports a
conftest or another test module), and one definition of the scale names and of every other
constant."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mtcjudge.campaigns import spec as campaigns
from mtcjudge.exports import service as exports
from mtcjudge.mtc import scales
from mtcjudge.reports import service as reports
from mtcjudge.results import read as results_read

ROOT = Path(__file__).resolve().parent.parent


def python_files(*folders: str) -> list[Path]:
    return sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py"))


def imported_modules(tree: ast.Module) -> set[str]:
    """Every module an ``import`` or ``from ... import`` of this tree names, anywhere."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("path", python_files("tests"), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_test_imports_a_conftest_or_another_test_module(path: Path) -> None:
    modules = imported_modules(ast.parse(path.read_text()))
    wrong = {
        module
        for module in modules
        if module.split(".")[0] == "tests"
        and module.split(".")[-1].startswith(("conftest", "test_"))
    }
    assert not wrong, f"import builders from tests.factories or tests.support instead: {wrong}"


def starts_a_server(tree: ast.Module) -> bool:
    """A ``Popen`` call in a module that also names the ``serve`` command."""
    popen = any(
        isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "Popen")
            or (isinstance(node.func, ast.Name) and node.func.id == "Popen")
        )
        for node in ast.walk(tree)
    )
    serve = any(isinstance(node, ast.Constant) and node.value == "serve" for node in ast.walk(tree))
    return popen and serve


def test_only_bench_serve_starts_mtcjudge_serve() -> None:
    starters = [
        str(path.relative_to(ROOT))
        for path in python_files("tests", "bench")
        if starts_a_server(ast.parse(path.read_text()))
    ]
    assert starters == ["bench/_serve.py"]
    # the tests take it from tests/servers.py (bench/ never imports the tests)
    importers = [
        str(path.relative_to(ROOT))
        for path in python_files("tests")
        if "bench._serve" in imported_modules(ast.parse(path.read_text()))
    ]
    assert importers == ["tests/servers.py"]


def test_the_scale_names_are_the_engine_s() -> None:
    assert vars(campaigns)["SCALES"] is scales.SCALES  # imported, not exported
    assert exports.SCALES is scales.SCALES
    assert reports.SCALES is scales.SCALES
    assert vars(results_read)["SCALES"] is scales.SCALES


def module_constants(path: Path) -> dict[str, str]:
    """The module's UPPER_CASE names assigned at its top level (a leading ``_`` dropped),
    each with the source of its value."""
    constants: dict[str, str] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        # a path made from the module's own place is not a shared constant
        if (
            isinstance(target, ast.Name)
            and target.id.lstrip("_").isupper()
            and "__file__" not in ast.unparse(value)
        ):
            constants[target.id.lstrip("_")] = ast.unparse(value)
    return constants


def test_no_constant_is_defined_twice() -> None:
    seen: dict[tuple[str, str], str] = {}
    twice = []
    for path in python_files("app/mtcjudge", "bench"):
        where = str(path.relative_to(ROOT))
        for name, value in module_constants(path).items():
            if (name, value) in seen:
                twice.append(f"{name} in {seen[name, value]} and {where}")
            seen.setdefault((name, value), where)
    assert twice == []
