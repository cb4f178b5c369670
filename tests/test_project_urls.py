"""The installed distribution's metadata carries the project's addresses (Project-URL)."""

from __future__ import annotations

import tomllib
from importlib.metadata import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

EXPECTED = {
    "Homepage": "https://github.com/mtcjudge/mtcjudge",
    "Documentation": "https://github.com/mtcjudge/mtcjudge/tree/main/docs",
    "Source": "https://github.com/mtcjudge/mtcjudge",
    "Issues": "https://github.com/mtcjudge/mtcjudge/issues",
}


def installed_project_urls() -> dict[str, str]:
    """The Project-URL fields of the installed ``mtcjudge``, as label -> address."""
    fields = metadata("mtcjudge").get_all("Project-URL") or []
    urls: dict[str, str] = {}
    for field in fields:
        label, _, url = field.partition(",")
        urls[label.strip()] = url.strip()
    return urls


def test_the_installed_metadata_carries_the_project_urls() -> None:
    # an editable install made before a change to pyproject.toml has the old metadata:
    # `pip install -e .` again
    assert installed_project_urls() == EXPECTED


def test_pyproject_declares_the_same_urls() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["urls"] == EXPECTED


def test_the_documentation_address_names_the_docs_folder_of_main() -> None:
    docs = EXPECTED["Documentation"]
    assert docs.startswith(EXPECTED["Source"] + "/tree/main/")
    assert (ROOT / docs.rsplit("/tree/main/", 1)[1]).is_dir()
