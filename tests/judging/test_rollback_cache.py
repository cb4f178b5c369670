"""A transaction that rolls back drops the engines it synced (they may hold its judgments)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from app.deps import get_session
from app.judging.engine_cache import SYNCED_CAMPAIGNS


class RecordingCache:
    def __init__(self) -> None:
        self.forgotten: list[int] = []

    def forget(self, campaign_id: int) -> None:
        self.forgotten.append(campaign_id)


def fake_request(session_factory, cache):
    return SimpleNamespace(
        app=SimpleNamespace(
            state=SimpleNamespace(session_factory=session_factory, engine_cache=cache)
        )
    )


def test_a_failed_request_forgets_the_engines_it_synced(session_factory) -> None:
    cache = RecordingCache()
    dependency = get_session(fake_request(session_factory, cache))
    session = next(dependency)
    session.info[SYNCED_CAMPAIGNS].add(7)
    with pytest.raises(RuntimeError):
        dependency.throw(RuntimeError("commit failed"))
    assert cache.forgotten == [7]


def test_a_successful_request_keeps_them(session_factory) -> None:
    cache = RecordingCache()
    dependency = get_session(fake_request(session_factory, cache))
    session = next(dependency)
    session.info[SYNCED_CAMPAIGNS].add(7)
    with pytest.raises(StopIteration):
        next(dependency)
    assert cache.forgotten == []
