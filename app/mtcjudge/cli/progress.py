"""Progress of a replay on stderr: a bar redrawn in place on a terminal, plain lines elsewhere."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["ProgressBar"]

#: seconds between two redraws of the bar on a terminal, and between two lines in a log
TTY_INTERVAL = 0.1
LOG_INTERVAL = 5.0
_BAR_WIDTH = 30


class ProgressBar:
    """Called as ``progress(n_judged, ranking_confidence)`` after every batch of a replay.

    On a terminal the bar is redrawn in place; when stderr is a file or a pipe a plain line is
    written every ``LOG_INTERVAL`` seconds, and :meth:`close` writes the final state, so a log
    always ends with where the replay stopped.
    """

    def __init__(
        self,
        stream: TextIO,
        total: int,
        target: float,
        *,
        enabled: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.total = total
        self.target = target
        self.enabled = enabled
        self.clock = clock
        self.tty = stream.isatty()
        self.interval = TTY_INTERVAL if self.tty else LOG_INTERVAL
        self.started = clock()
        # a terminal shows the bar at once; a log waits for something worth a line
        self.last_shown = float("-inf") if self.tty else self.started
        self.judged = 0
        self.confidence = float("nan")
        self.shown_judged = 0

    def __call__(self, judged: int, confidence: float) -> None:
        self.judged, self.confidence = judged, confidence
        if not self.enabled:
            return
        now = self.clock()
        if now - self.last_shown >= self.interval:
            self.last_shown = now
            self._show(now)

    def close(self) -> None:
        """Show the final state (a log gets its last line, a terminal its line ended)."""
        if not self.enabled or self.judged == 0:
            return
        if self.judged != self.shown_judged or self.tty:
            self._show(self.clock())
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()

    def _show(self, now: float) -> None:
        self.shown_judged = self.judged
        elapsed = now - self.started
        if self.tty:
            done = (self.confidence - 0.5) / max(self.target - 0.5, 1e-9)
            filled = int(min(1.0, max(0.0, done)) * _BAR_WIDTH)
            bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
            self.stream.write(
                f"\r[{bar}] confidence {self.confidence:.4f}/{self.target:.2f}  "
                f"judged {self.judged}/{self.total}  {elapsed:.1f}s"
            )
        else:
            self.stream.write(
                f"simulate: judged {self.judged} of {self.total} pairs, confidence "
                f"{self.confidence:.4f} (target {self.target:.2f}), {elapsed:.1f} s\n"
            )
        self.stream.flush()
