"""Failed sign-ins, counted per client address: too many in a while and the address waits.

In memory, per server process (with N processes a client gets up to N times the limit): a
brake on guessing passwords, on top of the delay every failed sign-in already waits, not an
account lockout (which would let anyone lock an organizer out by failing on purpose).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

__all__ = ["LoginThrottle"]


class LoginThrottle:
    """At most ``limit`` failed sign-ins per client in ``window`` seconds.

    Used from the event loop only (no lock). The table of clients is bounded: past
    ``max_clients`` the clients with the oldest failures are forgotten.
    """

    def __init__(
        self,
        limit: int = 10,
        window: float = 900.0,
        *,
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window = window
        self.max_clients = max_clients
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}

    def _recent(self, client: str) -> deque[float]:
        failures = self._failures.get(client)
        if failures is None:
            return deque()
        horizon = self._clock() - self.window
        while failures and failures[0] <= horizon:
            failures.popleft()
        if not failures:
            del self._failures[client]
        return failures

    def retry_after(self, client: str) -> int:
        """Seconds this client must wait before trying again (0: it may try now)."""
        failures = self._recent(client)
        if len(failures) < self.limit:
            return 0
        return max(1, math.ceil(failures[0] + self.window - self._clock()))

    def failed(self, client: str) -> None:
        failures = self._recent(client)
        if client not in self._failures:
            if len(self._failures) >= self.max_clients:
                oldest = min(self._failures, key=lambda c: self._failures[c][-1])
                del self._failures[oldest]
            self._failures[client] = failures
        failures.append(self._clock())

    def succeeded(self, client: str) -> None:
        self._failures.pop(client, None)
