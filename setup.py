"""Which files go into the package; everything else is in pyproject.toml.

The import package is ``mtcjudge``; its source lives in ``app/mtcjudge/`` (``app/`` is the
repository's source folder, as ``src/`` is elsewhere), so a wheel adds exactly one top-level name,
``mtcjudge``, to site-packages.

The repository keeps ``templates/``, ``static/``, ``migrations/`` and ``docs/`` at its top level
(``docs/`` so that the pages ``--help`` points to are there in an installed copy too). Each is
mapped to a subpackage of ``mtcjudge._resources`` (setuptools' ``package_dir``), so that a wheel
carries them inside ``mtcjudge/`` and an editable install (``pip install -e .``) finds them in
the checkout under the same package names; ``mtcjudge._resources.resource_dir`` locates them
with ``importlib.resources`` in both cases. Their subfolders are listed as packages too, as
setuptools asks of data folders. A mapping of subpackages cannot be written in pyproject.toml
next to automatic package discovery, hence this file.
"""

from setuptools import find_namespace_packages, find_packages, setup

RESOURCES = {
    f"mtcjudge._resources.{folder}": folder
    for folder in ("templates", "static", "migrations", "docs")
}

resource_packages = [
    f"{package}{suffix}"
    for package, folder in RESOURCES.items()
    for suffix in [
        "",
        *(f".{sub}" for sub in find_namespace_packages(folder, exclude=["*__pycache__*"])),
    ]
]

setup(
    packages=[
        *find_packages(where="app", include=["mtcjudge", "mtcjudge.*"]),
        *resource_packages,
    ],
    package_dir={"": "app", **RESOURCES},
    package_data={package: ["*"] for package in resource_packages},
    exclude_package_data={package: ["*.pyc"] for package in resource_packages},
)
