"""The listening rule: each clip played for at least the campaign's ``listen_seconds`` (or to
its end when shorter) before a score is taken, checked against what the page reports and
against what the server itself sent for the lease.

How the server's evidence is read (docs/web-architecture.md, "The listening rule"): the clip
route counts the bytes of each clip it sends for a lease (what it handed to the connection,
Range requests included). Every clip is served as a constant-bitrate MP3
(:mod:`mtcjudge.clips.rendition`), so playing the first ``s`` seconds of a clip of ``d``
seconds takes about ``size × s / d`` of its ``size`` bytes; the server asks for half of that
(:data:`EVIDENCE_SHARE`), because what is sent is counted when it has gone out and a browser
may start playing before the rest arrives. A clip of unknown duration cannot be converted
into bytes: some of it must have been sent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mtcjudge.clips.rendition import served_bytes_estimate
from mtcjudge.clips.sources import present
from mtcjudge.errors import ListeningRequired

__all__ = [
    "EVIDENCE_SHARE",
    "REPORT_TOLERANCE_MS",
    "ClipEvidence",
    "check_listening",
    "required_ms",
]

#: reported listening may fall this short of the requirement: the page's clock starts at
#: the media element's "playing" event and stops at "ended", and a clip's stored duration
#: comes from its header, which can differ from the decoded length by a frame or two
REPORT_TOLERANCE_MS = 250
#: the share of the bytes that the required seconds are of the file that must have been sent
EVIDENCE_SHARE = 0.5


@dataclass(frozen=True)
class ClipEvidence:
    """One clip of a lease: its file, its duration, and what the page and the server say."""

    name: str  # "query" or "candidate", as the volunteer knows it
    audio_path: str | None
    duration_seconds: float | None
    reported_ms: int | None
    served_bytes: int


def required_ms(listen_seconds: float, duration_seconds: float | None) -> int:
    """The listening a clip needs: ``min(listen_seconds, duration)`` (the rule's seconds
    when the duration is unknown), in milliseconds."""
    seconds = listen_seconds
    if duration_seconds is not None and duration_seconds > 0:
        seconds = min(seconds, duration_seconds)
    return math.ceil(seconds * 1000)


def _bytes_needed(need_ms: int, duration_seconds: float | None) -> int:
    if duration_seconds is None or duration_seconds <= 0:
        return 1  # some of the clip must have been sent
    share = min(1.0, need_ms / (duration_seconds * 1000))
    size = served_bytes_estimate(duration_seconds)
    return max(1, math.floor(EVIDENCE_SHARE * size * share))


def check_listening(listen_seconds: float, clips: tuple[ClipEvidence, ...]) -> None:
    """Refuse (422 :class:`ListeningRequired`) a judgment that breaks the rule: a clip with
    no audio, a reported listening missing or shorter than required, or a clip the server
    never sent enough of for this lease to have played that long."""
    if listen_seconds <= 0:
        return
    for clip in clips:
        if clip.audio_path is None:
            raise ListeningRequired(
                f"the {clip.name} clip has no audio, so it cannot be listened to: this pair "
                "cannot be judged (please tell the organizer)"
            )
        need = required_ms(listen_seconds, clip.duration_seconds)
        seconds = f"{need / 1000:g} s"
        if clip.reported_ms is None:
            raise ListeningRequired(
                f"this campaign asks for each clip to be played for at least {seconds} before "
                f"scoring, and no listening time of the {clip.name} was sent "
                f"({clip.name}_listen_ms)"
            )
        if clip.reported_ms < need - REPORT_TOLERANCE_MS:
            raise ListeningRequired(
                f"please listen to the {clip.name} for at least {seconds} before scoring "
                f"(played {clip.reported_ms / 1000:.1f} s so far)"
            )
        if not present(clip.audio_path):
            raise ListeningRequired(
                f"the {clip.name} clip's audio file is missing on the server, so it cannot "
                "be listened to (please tell the organizer)"
            )
        if clip.served_bytes < _bytes_needed(need, clip.duration_seconds):
            raise ListeningRequired(
                f"the server has not sent enough of the {clip.name} clip for this pair to "
                f"have played {seconds} of it: please play the {clip.name}, then submit"
            )
