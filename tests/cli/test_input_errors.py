"""Bad input files: one line naming the file and the line to fix (exit status 2)."""

from __future__ import annotations

from pathlib import Path

from tests.cli import run


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_typo_in_a_system_name_is_reported_on_its_own_line(tmp_path: Path) -> None:
    lines = [f"S{s}\tq{q}\td{q}{r}" for s in (1, 2) for q in (1, 2) for r in range(5)]
    assert lines[6] == "S1\tq2\td21"
    lines[6] = "Sl\tq2\td21"  # line 7: "Sl" for "S1"
    runs = write(tmp_path / "runs.tsv", "\n".join(lines) + "\n")
    judgments = write(tmp_path / "judgments.tsv", "q1\td10\t50\n")
    code, _, err = run("simulate", "--runs", str(runs), "--judgments", str(judgments), "--quiet")
    assert code == 2
    assert err.startswith(f"mtcjudge: error: {runs}:7: system Sl query q2 (line 7) splits")
    assert "is system Sl a typo of S1?" in err


def test_a_typo_in_a_query_id_is_reported_on_its_own_line(tmp_path: Path) -> None:
    lines = [f"S{s}\tq{q}\td{q}{r}" for s in (1, 2) for q in (1, 2) for r in range(5)]
    lines[6] = "S1\tqZ\td21"
    runs = write(tmp_path / "runs.tsv", "\n".join(lines) + "\n")
    judgments = write(tmp_path / "judgments.tsv", "q1\td10\t50\n")
    code, _, err = run("simulate", "--runs", str(runs), "--judgments", str(judgments), "--quiet")
    assert code == 2
    assert err.startswith(f"mtcjudge: error: {runs}:7: system S1 query qZ (line 7) splits")
    assert "is query qZ a typo of q2?" in err


def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    """``mtcjudge ... | head``: when the reader goes away the command stops without an error
    message, with the status a shell gives a tool stopped by SIGPIPE."""
    import io
    import json

    from mtcjudge.cli import main

    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    curve = [[0, 0.5, 0.5], [10, 0.99, 1.0]]
    record = {"estimator": "uniform", "kind": "suite", "n_systems": 3, "curve": curve}
    path = write(tmp_path / "calibration.json", json.dumps({"records": [record]}))
    err = io.StringIO()
    assert main(["bench", "stop_margins", str(path)], ClosedPipe(), err) == 141
    assert err.getvalue() == ""
