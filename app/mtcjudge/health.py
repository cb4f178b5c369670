"""Is the database there? Readiness probes, and which errors mean "unavailable, retry later"."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading

from sqlalchemy import exc as sa_exc
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

__all__ = ["RETRY_AFTER_SECONDS", "DatabaseProbe", "database_unavailable"]

logger = logging.getLogger(__name__)

#: what a 503 asks clients to wait before they try again
RETRY_AFTER_SECONDS = 5


def database_unavailable(error: BaseException) -> bool:
    """Whether ``error`` means the database cannot be used right now (rather than a bug).

    Connection failures, a dropped connection, an exhausted pool and SQLite's "database is
    locked" are all ``OperationalError``/``InterfaceError`` or an invalidated connection.
    """
    if isinstance(error, sa_exc.OperationalError | sa_exc.InterfaceError | sa_exc.TimeoutError):
        return True
    return isinstance(error, sa_exc.DBAPIError) and error.connection_invalidated


class DatabaseProbe:
    """``SELECT 1`` within a deadline, for ``/readyz``.

    The query runs in a daemon thread of its own, and at most one at a time: a database
    that hangs (a firewall dropping packets) makes the probe answer "not ready" after
    ``timeout`` seconds without piling up threads or holding the server's thread pool.
    """

    def __init__(self, session_factory: sessionmaker[Session], timeout: float = 2.0) -> None:
        self.session_factory = session_factory
        self.timeout = timeout
        self._lock = threading.Lock()
        self._pending: concurrent.futures.Future[bool] | None = None

    async def ready(self) -> bool:
        with self._lock:
            if self._pending is None or self._pending.done():
                self._pending = concurrent.futures.Future()
                threading.Thread(
                    target=self._select_one,
                    args=(self._pending,),
                    name="mtcjudge-readiness",
                    daemon=True,
                ).start()
            pending = self._pending
        try:
            return await asyncio.wait_for(
                asyncio.shield(asyncio.wrap_future(pending)), self.timeout
            )
        except TimeoutError:
            logger.warning("readiness: the database did not answer within %.1f s", self.timeout)
            return False

    def _select_one(self, result: concurrent.futures.Future[bool]) -> None:
        try:
            with self.session_factory() as session:
                session.execute(text("SELECT 1"))
        except Exception as error:  # any failure means "not ready"; say why in the log
            logger.warning(
                "readiness: database unavailable: %s", getattr(error, "orig", None) or error
            )
            result.set_result(False)
        else:
            result.set_result(True)
