"""How a campaign cuts its clips out of the collection's files (docs/audio.md, "Excerpts").

* ``whole``: the whole file is the clip (up to :data:`MAX_WHOLE_SECONDS`);
* ``excerpt``: ``seconds`` from ``start_fraction`` of the way in (MIREX: 30 s from 30 %),
  moved earlier when the file ends first, the whole file when it is shorter than that;
* ``offsets``: ``seconds`` from a start given per file (an offsets file: document id and
  start in seconds), ``excerpt``'s start for the files it does not name.

:func:`other_window` gives the stretch a reference trial plays as its candidate: another
excerpt of the same recording, of the same length (:mod:`mtcjudge.clips.rendition`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CUT_MODES",
    "MAX_WHOLE_SECONDS",
    "Cut",
    "Window",
    "other_window",
]

CUT_MODES = ("whole", "excerpt", "offsets")
#: a whole-file clip longer than this is refused (a volunteer cannot be asked to hear it)
MAX_WHOLE_SECONDS = 15 * 60.0
#: an excerpt is at least this long and at most this long
MIN_EXCERPT_SECONDS = 3.0
MAX_EXCERPT_SECONDS = 10 * 60.0


@dataclass(frozen=True)
class Window:
    """The stretch of a file a clip plays: from ``start`` for ``seconds`` (both in seconds)."""

    start: float
    seconds: float


@dataclass(frozen=True)
class Cut:
    """A campaign's choice of how clips are cut."""

    mode: str = "whole"
    seconds: float = 30.0
    start_fraction: float = 0.3

    def __post_init__(self) -> None:
        if self.mode not in CUT_MODES:
            raise ValueError(f"clip_cut must be one of {', '.join(CUT_MODES)}; found {self.mode!r}")
        if not MIN_EXCERPT_SECONDS <= self.seconds <= MAX_EXCERPT_SECONDS:
            raise ValueError(
                f"excerpt_seconds: an excerpt must last {MIN_EXCERPT_SECONDS:g} to "
                f"{MAX_EXCERPT_SECONDS:g} seconds, found {self.seconds:g}"
            )
        if not 0.0 <= self.start_fraction < 1.0:
            raise ValueError(
                "excerpt_start_fraction: the excerpt's start must be a share of the file "
                f"from 0 to below 1, found {self.start_fraction:g}"
            )

    def text(self) -> str:
        """How clips are cut, in words ("30 s excerpts from 30% of the way in (shorter
        files whole)"): the command line's report and the new-campaign preview say it."""
        if self.mode == "whole":
            return "whole files"
        seconds = f"{self.seconds:g} s"
        start = f"{self.start_fraction:.0%} of the way in"
        if self.mode == "offsets":
            return f"{seconds} excerpts from each file's start in the offsets (else {start})"
        return f"{seconds} excerpts from {start} (shorter files whole)"

    def window(self, source_seconds: float, offset: float | None = None) -> Window:
        """The stretch of a file of ``source_seconds`` that is the clip.

        Raises
        ------
        ValueError
            A whole file longer than :data:`MAX_WHOLE_SECONDS`.
        """
        if self.mode == "whole" or source_seconds <= self.seconds:
            if source_seconds > MAX_WHOLE_SECONDS:
                raise ValueError(
                    f"{source_seconds / 60:.0f} minutes long: whole files are clips up to "
                    f"{MAX_WHOLE_SECONDS / 60:.0f} minutes; cut excerpts instead"
                )
            return Window(0.0, source_seconds)
        start = self.start_fraction * source_seconds
        if self.mode == "offsets" and offset is not None:
            start = offset
        start = max(0.0, min(start, source_seconds - self.seconds))
        return Window(start, self.seconds)


def other_window(window: Window, source_seconds: float) -> Window | None:
    """Another excerpt of the same length from a file of ``source_seconds``, overlapping
    ``window`` as little as the file allows; None when every other stretch of that length
    would be mostly the clip again (the trial rotates the clip instead)."""
    room = source_seconds - window.seconds
    if room < window.seconds / 2:
        return None  # the other stretch would be mostly the clip again
    # as far from the clip as the file allows: after it when there is more room after
    after = source_seconds - (window.start + window.seconds)
    start = room if after >= window.start else 0.0
    return Window(start, window.seconds)
