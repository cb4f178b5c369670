"""mtcjudge.mtc.factory, the engine factory, and its deprecated old name
mtcjudge.mtc.calibration."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from mtcjudge.mtc import factory


def test_the_old_module_name_warns_and_gives_the_factorys_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "mtcjudge.mtc.calibration", raising=False)
    with pytest.warns(DeprecationWarning, match=r"import from mtcjudge\.mtc\.factory"):
        old = importlib.import_module("mtcjudge.mtc.calibration")
    # the old module's names, one of them as the factory called it then
    renamed = {"campaign_engine": "engine_for_settings"}
    assert sorted(renamed.get(name, name) for name in old.__all__) == sorted(factory.__all__)
    for name in old.__all__:
        assert getattr(old, name) is getattr(factory, renamed.get(name, name))


def test_nothing_in_the_package_imports_the_old_name() -> None:
    """The product, the benchmarks and the tests import the factory by its name."""
    root = Path(__file__).resolve().parents[2]
    old = re.compile(
        r"^\s*(from mtcjudge\.mtc\.calibration import|import mtcjudge\.mtc\.calibration)", re.M
    )
    users = [
        str(path.relative_to(root))
        for folder in ("app", "bench", "tests")
        for path in (root / folder).rglob("*.py")
        if old.search(path.read_text(encoding="utf-8"))
    ]
    assert users == []
