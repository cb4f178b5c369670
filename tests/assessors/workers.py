"""Worker processes for the concurrency tests of setting assessors aside: each has its own
engine and connections, as a server process would, and runs organizer or judging calls on
command, released together by a barrier (processes: a lock inside one process cannot make
these tests pass)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from mtcjudge import audit
from mtcjudge.assessors import actions
from mtcjudge.db import session_scope
from mtcjudge.errors import DomainError
from mtcjudge.judging import service
from mtcjudge.models import Campaign
from tests.judging import workers

Factory = sessionmaker[Session]


def op_set_aside(factory: Factory, campaign_id: int, assessor_id: int) -> tuple[int, int]:
    with session_scope(factory) as session:
        campaign = session.get_one(Campaign, campaign_id)
        report = actions.set_aside(session, campaign, assessor_id, audit.Actor("worker"))
        return report.set_aside, report.already


def op_bring_back(factory: Factory, campaign_id: int, assessor_id: int) -> tuple[int, int]:
    with session_scope(factory) as session:
        campaign = session.get_one(Campaign, campaign_id)
        report = actions.bring_back(session, campaign, assessor_id, audit.Actor("worker"))
        return report.brought_back, report.stayed_aside


def op_submit(factory: Factory, token: str, lease_id: int) -> int:
    with session_scope(factory) as session:
        judgment, _ = service.submit_judgment(
            session, token, lease_id=lease_id, broad=1, fine=50.0, client_id=str(uuid.uuid4())
        )
        return int(judgment.id)


def op_judge_loop(factory: Factory, token: str, rounds: int) -> int:
    """next → submit up to ``rounds`` times; the judgments stored."""
    done = 0
    for _ in range(rounds):
        with session_scope(factory) as session:
            result = service.next_pair(session, token)
            lease_id = None if result.lease is None else result.lease.id
        if lease_id is None:
            break
        try:
            op_submit(factory, token, lease_id)
            done += 1
        except DomainError:
            continue
    return done


OPS: dict[str, Callable[..., Any]] = {
    "set_aside": op_set_aside,
    "bring_back": op_bring_back,
    "submit": op_submit,
    "judge_loop": op_judge_loop,
}


class Workers(workers.Workers):
    """``n`` processes on one database running the calls of :data:`OPS`
    (:class:`tests.judging.workers.Workers`)."""

    def __init__(self, url: str, n: int) -> None:
        super().__init__(url, n, ops_module=__name__)
