"""Worker processes for the concurrency tests: each has its own engine and connections, as a
server process would, and runs judging calls on command, released together by a barrier.

Processes rather than threads: a lock inside one process cannot make these tests pass.
"""

from __future__ import annotations

import importlib
import multiprocessing
import uuid
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Barrier
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope
from mtcjudge.errors import DomainError
from mtcjudge.judging import service
from mtcjudge.models import Lease

Factory = sessionmaker[Session]


def op_next(factory: Factory, token: str) -> int | None:
    with session_scope(factory) as session:
        result = service.next_pair(session, token)
        return result.lease.id if result.lease is not None else None


def op_submit(factory: Factory, token: str, lease_id: int, client_id: str | None = None) -> int:
    with session_scope(factory) as session:
        judgment, _ = service.submit_judgment(
            session,
            token,
            lease_id=lease_id,
            broad=1,
            fine=50.0,
            client_id=client_id or str(uuid.uuid4()),
        )
        return judgment.id


def op_pause(factory: Factory, token: str) -> None:
    with session_scope(factory) as session:
        service.pause(session, token)


def op_judge_loop(factory: Factory, token: str, rounds: int) -> tuple[int, int]:
    """next → submit until nothing is left; returns (judgments, most live leases seen on
    the pair just leased, counted right after the lease was committed). A quality trial's
    lease holds no pair."""
    done, most_held = 0, 0
    for _ in range(rounds):
        lease_id = op_next(factory, token)
        if lease_id is None:
            break
        with session_scope(factory) as session:
            pair_id = session.get_one(Lease, lease_id).pair_id
            held: int | None = 0
            if pair_id is not None:
                held = session.scalar(
                    select(func.count()).where(Lease.pair_id == pair_id, Lease.state == "live")
                )
        most_held = max(most_held, int(held or 0))
        op_submit(factory, token, lease_id)
        done += 1
    return done, most_held


OPS: dict[str, Callable[..., Any]] = {
    "next": op_next,
    "submit": op_submit,
    "pause": op_pause,
    "judge_loop": op_judge_loop,
}


def _serve(url: str, conn: Connection, barrier: Barrier, ops_module: str) -> None:
    ops: dict[str, Callable[..., Any]] = importlib.import_module(ops_module).OPS
    engine = make_database_engine(url)
    factory = make_sessionmaker(engine)
    try:
        while True:
            message = conn.recv()
            if message is None:
                return
            name, args = message
            barrier.wait()
            try:
                conn.send(("ok", ops[name](factory, *args)))
            except DomainError as exc:
                conn.send(("error", exc.status))
            except Exception as exc:  # reported to the test, which fails on it
                conn.send(("exception", repr(exc)))
    finally:
        engine.dispose()


def _context(ops_module: str) -> multiprocessing.context.ForkServerContext:
    """Fresh processes forked from a server process that imported the operations' module once
    (as a server process has its code loaded), rather than each importing the app again: the
    processes share nothing with the test process (no threads, engines or connections)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__, ops_module])
    return ctx


class Workers:
    """``n`` processes on one database; :meth:`run` gives each a call and starts them together.
    The calls are named in the ``OPS`` of ``ops_module`` (by default this module's)."""

    def __init__(self, url: str, n: int, ops_module: str = __name__) -> None:
        ctx = _context(ops_module)
        self.barrier = ctx.Barrier(n)
        self.conns: list[Connection] = []
        self.procs = []
        for _ in range(n):
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=_serve, args=(url, child, self.barrier, ops_module), daemon=True
            )
            proc.start()
            self.conns.append(parent)
            self.procs.append(proc)

    def run(self, calls: list[tuple[str, tuple[Any, ...]]]) -> list[tuple[str, Any]]:
        assert len(calls) == len(self.conns)
        for conn, call in zip(self.conns, calls, strict=True):
            conn.send(call)
        return [conn.recv() for conn in self.conns]

    def close(self) -> None:
        for conn in self.conns:
            conn.send(None)
        for proc in self.procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
