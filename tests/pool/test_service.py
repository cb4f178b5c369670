"""The pool of pairs a campaign judges (mtcjudge.pool.service)."""

from __future__ import annotations

from sqlalchemy import func, select

from mtcjudge.models import Pair
from mtcjudge.pool.service import ensure_pool
from tests.factories import build_campaign


def test_the_pool_is_stored_once(db_session) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=2, k=2)
    n = db_session.scalar(select(func.count()).select_from(Pair))
    assert ensure_pool(db_session, fx.campaign) == n
    assert db_session.scalar(select(func.count()).select_from(Pair)) == n
