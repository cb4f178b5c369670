"""Which files go into the package; everything else is in pyproject.toml.

The repository keeps ``templates/``, ``static/`` and ``migrations/`` at its top level. Each is
mapped to a subpackage of ``app._resources`` (setuptools' ``package_dir``), so that a wheel
carries them inside ``app/`` and an editable install (``pip install -e .``) finds them in the
checkout under the same package names; ``app._resources.resource_dir`` locates them with
``importlib.resources`` in both cases. A mapping of subpackages cannot be written in
pyproject.toml next to automatic package discovery, hence this file.
"""

from setuptools import find_packages, setup

RESOURCES = {f"app._resources.{folder}": folder for folder in ("templates", "static", "migrations")}

setup(
    packages=[*find_packages(include=["app", "app.*"]), *RESOURCES],
    package_dir=RESOURCES,
    package_data={package: ["**/*"] for package in RESOURCES},
    exclude_package_data={package: ["*.pyc"] for package in RESOURCES},
)
