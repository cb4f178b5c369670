"""The browser code in ``static/js``: ES modules sharing one library, every file in use.

The pages load their scripts with ``<script type="module" src=...>`` (the Content-Security-Policy,
``default-src 'self'``, allows no inline script); each page script imports ``lib.js``, the one
place that calls ``fetch``. A page script may import modules of a subfolder (``judge/``, the
judging page's), by relative paths that stay inside ``static/js``. Biome lints the files and
``npm test`` tests the pure modules (``tests/js``) in ``.ci/run``; the browser tests run them.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge._resources import resource_dir
from mtcjudge.config import Settings
from mtcjudge.main import create_app

STATIC_JS = resource_dir("static") / "js"
TEMPLATES = resource_dir("templates")
LIBRARY = "lib.js"

SCRIPT = re.compile(r"<script\b(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.S | re.I)
SCRIPT_SRC = re.compile(r"\bsrc=\"\{\{ url_for\('static', path='js/(?P<name>[\w./-]+)'\)[^\"]*\"")
# import x from "./y.js"; import { a, b } from "./y.js"; import "./y.js";
IMPORT = re.compile(r"""^import\s+(?:[^;]*?\bfrom\s+)?["'](?P<spec>[^"']+)["']""", re.M)


def scripts() -> dict[str, str]:
    """Every script, by its path in static/js (``judge.js``, ``judge/player.js``)."""
    return {
        path.relative_to(STATIC_JS).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(STATIC_JS.rglob("*.js"))
    }


def imports(source: str) -> list[str]:
    return [match["spec"] for match in IMPORT.finditer(source)]


def imported(name: str, source: str) -> list[str]:
    """The scripts that ``name`` imports, by their paths in static/js."""
    paths = []
    for spec in imports(source):
        assert re.fullmatch(r"\.\.?/[\w./-]+\.js", spec), f"{name}: import {spec!r}"
        target = posixpath.normpath(posixpath.join(posixpath.dirname(name), spec))
        assert not target.startswith("../"), f"{name} imports {spec}, outside static/js"
        paths.append(target)
    return paths


def page_scripts() -> dict[str, set[str]]:
    """Each script a template loads, with the templates that load it."""
    loaded: dict[str, set[str]] = {}
    for template in sorted(TEMPLATES.rglob("*.html")):
        for tag in SCRIPT.finditer(template.read_text(encoding="utf-8")):
            src = SCRIPT_SRC.search(tag["attrs"])
            assert src is not None, f"{template.name}: a script that is not a file of static/js"
            loaded.setdefault(src["name"], set()).add(template.name)
    return loaded


def test_templates_load_every_script_as_a_module_from_a_file() -> None:
    loaded = page_scripts()
    assert {"judge.js", "dashboard.js", "manage.js", "reuse.js"} <= set(loaded)
    for template in sorted(TEMPLATES.rglob("*.html")):
        for tag in SCRIPT.finditer(template.read_text(encoding="utf-8")):
            assert 'type="module"' in tag["attrs"], f"{template.name}: {tag.group(0)}"
            assert tag["body"].strip() == "", f"{template.name}: an inline script"
            assert "defer" not in tag["attrs"], f"{template.name}: modules are deferred already"
    for name in loaded:
        assert (STATIC_JS / name).is_file(), name


def test_every_script_is_used_and_its_imports_resolve() -> None:
    sources = scripts()
    entries = set(page_scripts())
    reached: set[str] = set()
    todo = sorted(entries)
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        for target in imported(name, sources[name]):
            assert target in sources, f"{name} imports {target}, which is not in static/js"
            todo.append(target)
    assert reached == set(sources), f"not loaded by any page: {sorted(set(sources) - reached)}"


def test_every_page_script_uses_the_library_and_only_it_fetches() -> None:
    sources = scripts()
    assert LIBRARY in sources
    assert LIBRARY not in page_scripts(), "the library is imported, not loaded by a page"
    for name in page_scripts():
        assert LIBRARY in imported(name, sources[name]), f"{name} does not import {LIBRARY}"
    for name, source in sources.items():
        if name != LIBRARY:
            assert not re.search(r"\bfetch\(", source), f"{name} calls fetch itself"
            assert '"X-CSRF-Token"' not in source, f"{name} sets the CSRF header itself"
    assert '"X-CSRF-Token"' in sources[LIBRARY]


def test_scripts_are_served_as_javascript(session_factory: sessionmaker[Session]) -> None:
    # browsers refuse a module script served with any other type
    client = TestClient(create_app(Settings(), session_factory=session_factory))
    served = sorted(STATIC_JS.rglob("*.js"))
    assert any(path.parent != STATIC_JS for path in served), "the judging page's modules (judge/)"
    for path in served:
        name = path.relative_to(STATIC_JS).as_posix()
        response = client.get(f"/static/js/{name}")
        assert response.status_code == 200, name
        assert "javascript" in response.headers["content-type"], name
        assert response.text == Path(path).read_text(encoding="utf-8")
