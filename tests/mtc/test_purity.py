"""The engine is a functional core: importing it pulls in no web or database layer."""

import json
import subprocess
import sys

FORBIDDEN = ("fastapi", "starlette", "sqlalchemy", "pydantic")

SCRIPT = f"""
import importlib, json, pkgutil, sys
import mtcjudge.mtc
modules = [m.name for m in pkgutil.iter_modules(mtcjudge.mtc.__path__, "mtcjudge.mtc.")]
for name in modules:
    importlib.import_module(name)
print(json.dumps({{
    "modules": modules,
    "loaded": sorted(m for m in {FORBIDDEN!r} if m in sys.modules),
}}))
"""


def test_importing_every_engine_module_loads_no_web_or_orm_package() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=120
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    # the walk really covered the engine
    assert {"mtcjudge.mtc.engine", "mtcjudge.mtc.measures", "mtcjudge.mtc.estimators"} <= set(
        report["modules"]
    )
    assert report["loaded"] == []
