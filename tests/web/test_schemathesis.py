"""The API against its own OpenAPI schema: generated requests, in-process, on the test database.

Schemathesis generates requests for every operation (boundary values of each documented
range, then random ones) and checks each answer: never a server error, and every response
(errors included) as documented. Kept small: the run is a guard, not a soak.
"""

from __future__ import annotations

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.config import Settings
from mtcjudge.main import create_app
from tests.factories import TINY_RUNS as RUNS
from tests.support import FORM_HEADERS as FORM
from tests.support import ORGANIZER_HEADERS, ORGANIZER_TOKEN


@pytest.fixture
def api_schema(session_factory: sessionmaker[Session]) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_asgi(
        "/openapi.json",
        create_app(Settings(organizer_token=ORGANIZER_TOKEN), session_factory=session_factory),
        headers=ORGANIZER_HEADERS,
    )


@pytest.fixture
def known(api_schema: schemathesis.BaseSchema) -> dict[str, str]:
    """A campaign and an assessor that exist, so requests get past the lookups."""
    client = TestClient(api_schema.app, headers=ORGANIZER_HEADERS)
    client.post("/api/campaigns", json={"name": "Fuzz", "slug": "fuzz", "runs": RUNS})
    token = client.post("/api/campaigns/fuzz/assessors", json={"name": "Ann"}).json()["token"]
    client.post(f"/a/{token}/consent", content="consent=yes", headers=FORM)
    return {"slug": "fuzz", "token": token}


CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_the_api_keeps_its_contract(
    api_schema: schemathesis.BaseSchema, known: dict[str, str], mode: GenerationMode
) -> None:
    results = list(api_schema.get_all_operations())
    assert all(isinstance(result, Ok) for result in results), results
    # a Server-Sent Events stream never ends: tests/results/test_events.py covers it
    operations = [
        result.ok()
        for result in results
        if isinstance(result, Ok) and not result.ok().path.endswith("/events")
    ]
    assert len(operations) >= 10
    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=12,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def call(case: schemathesis.Case) -> None:
            if mode is GenerationMode.POSITIVE and case.path_parameters:
                # the form of tokens and slugs has its own tests: go deeper, into the services
                case.path_parameters.update(
                    {name: value for name, value in known.items() if name in case.path_parameters}
                )
            case.call_and_validate(checks=CHECKS, headers=ORGANIZER_HEADERS)

        try:
            call()
        except Unsatisfiable:
            # an operation without parameters or body has nothing to make invalid
            assert mode is GenerationMode.NEGATIVE, operation.label
