"""Projections of the judgments a campaign still needs, made off the planner's thread."""

from __future__ import annotations

import copy
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
from numpy.typing import NDArray

from mtcjudge.mtc.engine import MTCEngine
from mtcjudge.mtc.projection import Projection, project

__all__ = ["Projector"]


class Projector:
    """Projects the judgments still needed (:func:`mtcjudge.mtc.projection.project`) on a thread
    of its own, one campaign at a time, so that the planner's ticks never wait for it.

    It works on a copy of the engine taken by the planner's thread (:meth:`submit`), which
    goes on judging its own engine meanwhile. ``inline`` projects in the caller's thread
    instead (tests that want the projection in the next document)."""

    def __init__(
        self, *, runs: int = 16, max_seconds: float | None = 2.0, inline: bool = False
    ) -> None:
        self.runs = runs
        self.max_seconds = max_seconds
        self.inline = inline
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def submit(
        self,
        engine: MTCEngine,
        targets: list[float],
        seed: int,
        judgeable: NDArray[np.bool_] | None = None,
    ) -> Future[Projection]:
        # the collection and the relevance model are read-only: shared, not copied
        memo: dict[int, object] = {id(engine.collection): engine.collection}
        memo[id(engine.model)] = engine.model
        snapshot = copy.deepcopy(engine, memo)
        if self.inline:
            done: Future[Projection] = Future()
            done.set_result(self._project(snapshot, targets, seed, judgeable))
            return done
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="mtc-projection")
            return self._executor.submit(self._project, snapshot, targets, seed, judgeable)

    def _project(
        self,
        engine: MTCEngine,
        targets: list[float],
        seed: int,
        judgeable: NDArray[np.bool_] | None,
    ) -> Projection:
        return project(
            engine,
            targets,
            runs=self.runs,
            seed=seed,
            max_seconds=self.max_seconds,
            judgeable=judgeable,
        )

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None
