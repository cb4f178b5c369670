"""The templates, static files and migrations, wherever the package is installed.

The repository keeps them in its top-level folders ``templates/``, ``static/`` and
``migrations/``. ``setup.py`` maps each folder to a subpackage of this one
(``mtcjudge._resources.templates``, ``.static``, ``.migrations``; the ``__init__.py`` in each folder
is what makes it a package), so that a wheel carries them inside ``mtcjudge/`` and an editable
install finds them in the checkout: :func:`resource_dir` asks :mod:`importlib.resources`, which
answers for both.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Literal

__all__ = ["resource_dir"]

Resource = Literal["templates", "static", "migrations"]


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
