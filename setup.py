"""Which files go into the package; everything else is in pyproject.toml.

The repository keeps ``templates/``, ``static/`` and ``migrations/`` at its top level. Each is
mapped to a subpackage of ``app._resources`` (setuptools' ``package_dir``), so that a wheel
carries them inside ``app/`` and an editable install (``pip install -e .``) finds them in the
checkout under the same package names; ``app._resources.resource_dir`` locates them with
``importlib.resources`` in both cases. Their subfolders are listed as packages too, as
setuptools asks of data folders. A mapping of subpackages cannot be written in pyproject.toml
next to automatic package discovery, hence this file.
"""

from setuptools import find_namespace_packages, find_packages, setup

RESOURCES = {f"app._resources.{folder}": folder for folder in ("templates", "static", "migrations")}

resource_packages = [
    f"{package}{suffix}"
    for package, folder in RESOURCES.items()
    for suffix in [
        "",
        *(f".{sub}" for sub in find_namespace_packages(folder, exclude=["*__pycache__*"])),
    ]
]

setup(
    packages=[*find_packages(include=["app", "app.*"]), *resource_packages],
    package_dir=RESOURCES,
    package_data={package: ["*"] for package in resource_packages},
    exclude_package_data={package: ["*.pyc"] for package in resource_packages},
)
