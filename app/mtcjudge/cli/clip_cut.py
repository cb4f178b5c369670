"""How clips are cut, on the command line: ``campaign create``'s options and the report's line
(docs/audio.md, "Excerpts")."""

from __future__ import annotations

import argparse
from pathlib import Path

from mtcjudge.cli.common import cut_number
from mtcjudge.clips.cut import CUT_MODES, Cut
from mtcjudge.models import Campaign

__all__ = ["add_cut_options", "cut_text"]


def add_cut_options(create: argparse.ArgumentParser) -> None:
    """How clips are cut from the files (docs/audio.md, "Excerpts")."""
    create.add_argument(
        "--clip-cut",
        choices=CUT_MODES,
        default=None,
        help="how clips are cut from the files: excerpt (--excerpt-seconds from "
        "--excerpt-start of the way in; shorter files whole), whole, or offsets (a start per "
        "file from --clip-offsets). Default: offsets with --clip-offsets, else excerpt",
    )
    create.add_argument(
        "--excerpt-seconds",
        type=cut_number("excerpt_seconds"),
        default=30.0,
        metavar="S",
        help="length of an excerpt in seconds (default %(default)s)",
    )
    create.add_argument(
        "--excerpt-start",
        type=cut_number("excerpt_start_fraction"),
        default=0.3,
        metavar="F",
        help="where an excerpt starts, as a share of the file (default %(default)s)",
    )
    create.add_argument(
        "--clip-offsets",
        type=Path,
        metavar="FILE",
        help="TSV doc<TAB>start_seconds: where each document's excerpt starts",
    )


def cut_text(campaign: Campaign) -> str:
    """How the campaign cuts its clips, in words (docs/audio.md, "Excerpts")."""
    return Cut(campaign.clip_cut, campaign.excerpt_seconds, campaign.excerpt_start_fraction).text()
