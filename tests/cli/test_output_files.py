"""Files written by ``export``, ``report`` and ``evaluate --out`` get the umask's mode.

They are written to a private temporary file (mode 0600) and renamed into place; the file
then gets the mode a plain ``open(path, "w")`` would give it, or keeps the mode of the file
it replaces.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from mtcjudge.cli.common import write_atomically
from tests.cli import run


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A small synthetic collection and a database holding it as the campaign ``t``."""
    folder = tmp_path_factory.mktemp("collection")
    code, _, err = run("synthetic", str(folder), "--systems", "3", "--queries", "4")
    assert code == 0, err
    database = f"sqlite:///{folder / 'db.sqlite3'}"
    code, _, err = run(
        "campaign", "create", "--name", "T", "--slug", "t",
        "--runs", str(folder / "runs.tsv"), "--metadata", str(folder / "metadata.tsv"),
        "--judgments", str(folder / "judgments-fine.tsv"), "--database-url", database,
    )  # fmt: skip
    assert code == 0, err
    return folder, database


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("umask")
def test_export_report_and_evaluate_files_get_the_umask_mode(
    collection: tuple[Path, str], tmp_path: Path
) -> None:
    folder, database = collection
    commands = {
        "qrels.txt": ["export", "t", "--what", "qrels", "--database-url", database],
        "bundle.zip": ["export", "t", "--what", "bundle", "--database-url", database],
        "report.html": ["report", "t", "--database-url", database],
        "scores.csv": [
            "evaluate", "--runs", str(folder / "runs.tsv"),
            "--judgments", str(folder / "judgments-fine.tsv"), "--mirex",
        ],
    }  # fmt: skip
    for name, argv in commands.items():
        code, _, err = run(*argv, "--out", str(tmp_path / name))
        assert code == 0, err
    written = sorted(path.name for path in tmp_path.iterdir())
    # evaluate's CSV has its MIREX analysis beside it
    assert written == ["bundle.zip", "qrels.txt", "report.html", "scores-mirex.csv", "scores.csv"]
    for path in tmp_path.iterdir():
        assert _mode(path) == 0o640, path  # rw-rw-rw- less the umask 027


def test_a_new_file_follows_the_umask_and_a_replaced_file_keeps_its_mode(
    tmp_path: Path,
) -> None:
    path = tmp_path / "out.txt"
    for mask, expected in ((0o022, 0o644), (0o077, 0o600), (0o002, 0o664)):
        path.unlink(missing_ok=True)
        old = os.umask(mask)
        try:
            write_atomically(path, lambda target: target.write(b"text"))
        finally:
            os.umask(old)
        assert _mode(path) == expected, oct(mask)
    path.chmod(0o604)
    write_atomically(path, lambda target: target.write(b"again"))
    assert path.read_bytes() == b"again"
    assert _mode(path) == 0o604
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temporary file left
