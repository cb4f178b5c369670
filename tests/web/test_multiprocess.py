"""Two server processes on one database hand out pairs and rank systems consistently.

Runs ``mtcjudge serve`` twice on the same database (a SQLite file, or a fresh Postgres schema
when ``TEST_DATABASE_URL`` is set) and has assessors judge through both at the same time.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from mtcjudge.db import make_database_engine
from mtcjudge.models import Judgment, Lease
from tests.factories import seed_open_campaign
from tests.servers import running_servers


@pytest.fixture
def shared_url(empty_database_url: str) -> str:
    return empty_database_url


@pytest.fixture
def servers(shared_url: str, tmp_path: Path) -> Iterator[tuple[str, list[str], list[str]]]:
    tokens = seed_open_campaign(shared_url, name="Shared", seed=21, n_assessors=4).tokens
    env = {**os.environ, "DATABASE_URL": shared_url}
    logs = [tmp_path / f"serve{i}.log" for i in range(2)]
    with running_servers(shared_url, logs, env=env, timeout=30) as started:
        yield shared_url, [server.url for server in started], tokens


def judge_loop(base: str, token: str, rounds: int, errors: list[str]) -> None:
    with httpx.Client(base_url=base, timeout=20) as client:
        for _ in range(rounds):
            body = client.get(f"/api/a/{token}/next")
            if body.status_code != 200:
                errors.append(f"next {body.status_code}: {body.text}")
                return
            data = body.json()
            if data["status"] != "pair":
                return
            response = client.post(
                f"/api/a/{token}/judgments",
                json={
                    "lease_id": data["pair"]["lease_id"],
                    "broad": 1,
                    "fine": 50.0,
                    "client_id": str(uuid.uuid4()),
                },
            )
            if response.status_code not in (201, 409, 410):
                errors.append(f"submit {response.status_code}: {response.text}")
                return


def test_two_processes_share_the_work_without_overlap(servers) -> None:
    url, bases, tokens = servers
    errors: list[str] = []
    threads = [
        threading.Thread(target=judge_loop, args=(bases[i % 2], token, 8, errors))
        for i, token in enumerate(tokens)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    engine = make_database_engine(url)
    try:
        with engine.connect() as conn:
            n_judgments = conn.scalar(select(func.count()).select_from(Judgment))
            n_pairs = conn.scalar(
                select(func.count()).select_from(
                    select(Judgment.query_id, Judgment.document_id).distinct().subquery()
                )
            )
            active = conn.execute(
                select(Lease.query_id, Lease.document_id, func.count())
                .where(Lease.state == "live", Lease.expires_at > func.now())
                .group_by(Lease.query_id, Lease.document_id)
            ).all()
    finally:
        engine.dispose()
    assert n_judgments == 32  # 4 assessors x 8 rounds
    assert n_pairs == n_judgments  # one judgment per pair: no pair was handed out twice
    assert all(count == 1 for *_, count in active)
    # both processes show the one planner's figures
    deadline = time.monotonic() + 10
    while True:
        progress = [httpx.get(f"{b}/api/a/{tokens[0]}/progress").json() for b in bases]
        if progress[0] == progress[1] and progress[0]["system_pairs"] > 0:
            break
        assert time.monotonic() < deadline, progress
        time.sleep(0.2)
    assert progress[0]["campaign_judged"] == 32
