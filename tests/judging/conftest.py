"""Apps bound to the test's transaction, planning before every request (the campaigns come
from :func:`tests.factories.build_campaign`)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.config import Settings
from mtcjudge.main import create_app
from tests.factories import PlanningClient


@pytest.fixture
def make_client(session_factory: sessionmaker[Session]):
    """Build a client; each call is a separate app (a separate process, with its planner)."""

    def make() -> PlanningClient:
        return PlanningClient(create_app(Settings(), session_factory=session_factory))

    return make


@pytest.fixture
def client(make_client) -> TestClient:
    return make_client()
