"""Readers for run, judgment and metadata files, with format detection and strict validation:
one module a kind of file (:mod:`.runs`, :mod:`.judgments`, :mod:`.metadata`, :mod:`.offsets`)
over what they share (:mod:`.lines`).

The format of a file is recognised from its first data line, never from its name. Every problem
raises :class:`InputError` naming the file, the 1-based line and the field, so the CLI and the web
import can tell users exactly what to fix. This package is where the rest of mtcjudge, the
benchmarks and researchers' scripts import the readers from (``load_files`` of the Python API
raises its :class:`InputError`).
"""

from mtcjudge.ingest.formats.judgments import Judgments, check_judgments_cover_runs, read_judgments
from mtcjudge.ingest.formats.lines import InputError, data_lines
from mtcjudge.ingest.formats.metadata import Metadata, read_metadata
from mtcjudge.ingest.formats.offsets import ClipOffsets, read_clip_offsets
from mtcjudge.ingest.formats.runs import (
    RUN_ORDERS,
    SCORE_CONFLICTS_SHOWN,
    Runs,
    ScoreConflict,
    ScoreOrderWarning,
    read_runs,
    score_order_warnings,
    trec_eval_order,
)

__all__ = [
    "RUN_ORDERS",
    "SCORE_CONFLICTS_SHOWN",
    "ClipOffsets",
    "InputError",
    "Judgments",
    "Metadata",
    "Runs",
    "ScoreConflict",
    "ScoreOrderWarning",
    "check_judgments_cover_runs",
    "data_lines",
    "read_clip_offsets",
    "read_judgments",
    "read_metadata",
    "read_runs",
    "score_order_warnings",
    "trec_eval_order",
]
