"""The templates, static files, migrations and documentation, wherever the package is installed.

The repository keeps them in its top-level folders ``templates/``, ``static/``,
``migrations/`` and ``docs/``. ``setup.py`` maps each folder to a subpackage of this one
(``mtcjudge._resources.templates``, ``.static``, ``.migrations``, ``.docs``; the ``__init__.py``
in each folder is what makes it a package), so that a wheel carries them inside ``mtcjudge/`` and
an editable install finds them in the checkout: :func:`resource_dir` asks
:mod:`importlib.resources`, which answers for both.

A page of the documentation is ``docs/NAME.md`` in the repository: :func:`doc_path` is where
this copy of the package holds it, :func:`doc_url` where it is online.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Literal

__all__ = ["DOCS_ONLINE", "SOURCE_REPOSITORY", "doc_names", "doc_path", "doc_url", "resource_dir"]

Resource = Literal["templates", "static", "migrations", "docs"]

#: the project's home: its source repository
SOURCE_REPOSITORY = "https://github.com/mtcjudge/mtcjudge"
#: the documentation as the repository's main branch shows it
DOCS_ONLINE = f"{SOURCE_REPOSITORY}/blob/main/docs"


def resource_dir(name: Resource) -> Path:
    """The folder holding ``name``: in the checkout (editable install) or in site-packages."""
    directory = files(f"{__name__}.{name}")
    # Jinja2's loader, Starlette's StaticFiles and Alembic all read a real folder
    if not isinstance(directory, Path):
        raise RuntimeError(
            f"mtcjudge's {name} are not a folder on disk ({directory!r}): install the package "
            "unpacked (pip, pipx), not as a zip archive"
        )
    return directory


def doc_path(name: str) -> Path:
    """The installed copy of the page ``docs/NAME.md`` (``name`` may hold a subfolder,
    ``experiments/...``); it may not exist, when ``name`` is not a page."""
    return resource_dir("docs") / f"{name}.md"


def doc_url(name: str) -> str:
    """The address of the page ``docs/NAME.md`` online."""
    return f"{DOCS_ONLINE}/{name}.md"


def doc_names() -> list[str]:
    """Every page of the documentation, by name (``reuse``, ``experiments/...``), sorted."""
    docs = resource_dir("docs")
    return sorted(path.relative_to(docs).with_suffix("").as_posix() for path in docs.rglob("*.md"))
