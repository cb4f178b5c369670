"""bench/import_audio.py: ``mtcjudge bench import_audio`` makes the clips, analyses every one as
the import does and writes its figures (a few short clips here: seconds, not minutes)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli import run


def test_the_benchmark_analyses_every_clip_and_writes_its_figures(tmp_path: Path) -> None:
    report = tmp_path / "import.json"
    code, out, err = run(
        "bench", "import_audio", "--clips", "4", "--distinct", "2", "--seconds", "5",
        "--workers", "2", "--workdir", tmp_path, "--json", report,
    )  # fmt: skip
    assert code == 0, err
    assert "import_audio: 4 clips of 5 s, stereo 44.1 kHz MP3" in out
    assert "2 distinct encodings copied to 4 files" in out
    assert "analysed in " in out
    assert "target: 2000 clips in 120 s" in out
    figures = json.loads(report.read_text())
    assert figures["benchmark"] == "import_audio"
    assert (figures["clips"], figures["distinct_encodings"], figures["workers"]) == (4, 2, 2)
    assert (figures["target_clips"], figures["target_seconds"]) == (2000, 120)
    assert figures["cut"] == {"mode": "excerpt", "seconds": 30.0, "start_fraction": 0.3}
    assert figures["seconds"] > 0
    assert figures["clips_per_second"] > 0
    assert figures["seconds_per_clip"] > 0
    assert isinstance(figures["met"], bool)
    assert figures["met"] == (figures["projected_seconds_for_target_clips"] <= 120)
    assert list(tmp_path.iterdir()) == [report]  # the clips' folder is gone


def test_a_bad_length_is_refused_with_status_2() -> None:
    code, out, err = run("bench", "import_audio", "--clips", "1", "--seconds", "0.5")
    assert (code, out) == (2, "")
    assert "--seconds must be from 1 to 600, not 0.5" in err
