"""Authorization on every organizer route, found by walking the app's routes.

A route is the organizer's when ``require_organizer`` is among its dependencies (directly or
deeper); every route is either that or one of the few public and assessor routes listed here,
so a new route that forgets the dependency fails :func:`test_every_route_is_classified`. Each
organizer route then refuses: no credentials, an assessor's token (as a bearer token, as the
session cookie), a wrong bearer token, a disabled organizer's session, a bearer token sent to a
server that has none (401); and a signed-in change without the CSRF token (403).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from starlette.routing import Mount

from mtcjudge import audit
from mtcjudge.config import Settings
from mtcjudge.deps import require_organizer
from mtcjudge.organizers import service as organizers
from tests.factories import TINY_RUNS as RUNS
from tests.support import ORGANIZER_HEADERS, session_csrf, sign_in

PUBLIC = {("GET", "/"), ("GET", "/login"), ("POST", "/login"), ("POST", "/logout")}
PROBES = {("GET", "/healthz"), ("GET", "/readyz")}
ASSESSOR_PATHS = re.compile(r"^/(api/)?a/\{token\}")
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}
# a Server-Sent Events stream never ends: it is refused like the others, but not opened
STREAMS = re.compile(r"/events$")


def _walk(routes: list[Any], prefix: str = "", extra: tuple[Any, ...] = ()) -> Iterator[Any]:
    for route in routes:
        original = getattr(route, "original_router", None)
        if original is not None:  # an included router (FastAPI keeps it whole)
            context = route.include_context
            yield from _walk(
                original.routes, prefix + context.prefix, extra + tuple(context.dependencies)
            )
        else:
            yield prefix, extra, route


def _calls(dependant: Any) -> Iterator[Any]:
    for dependency in dependant.dependencies:
        yield dependency.call
        yield from _calls(dependency)


def app_routes(app: FastAPI) -> dict[tuple[str, str], bool]:
    """(method, path) -> whether the route requires an organizer."""
    found: dict[tuple[str, str], bool] = {}
    for prefix, extra, route in _walk(app.routes):
        if isinstance(route, Mount):
            assert route.path == "/static", route.path
            continue
        assert isinstance(route, APIRoute), route
        guarded = require_organizer in set(_calls(route.dependant)) or any(
            d.dependency is require_organizer for d in extra
        )
        for method in route.methods or ():
            found[(method, prefix + route.path)] = guarded
    return found


@pytest.fixture
def routes(client: TestClient) -> dict[tuple[str, str], bool]:
    return app_routes(client.app)  # type: ignore[arg-type]


@pytest.fixture
def organizer_routes(routes: dict[tuple[str, str], bool]) -> list[tuple[str, str]]:
    return sorted(key for key, guarded in routes.items() if guarded)


@pytest.fixture
def known(
    session_factory: sessionmaker[Session], make_client: Callable[..., TestClient]
) -> dict[str, str]:
    """A campaign and an assessor that exist, and a disabled organizer's signed-in cookie."""
    client = make_client()
    created = client.post(
        "/api/campaigns",
        json={
            "name": "Auth",
            "slug": "auth",
            "runs": RUNS,
            "status": "open",
            "confirm_unplayable": True,
        },
        headers=ORGANIZER_HEADERS,
    )
    assert created.status_code == 201, created.text
    invited = client.post(
        "/api/campaigns/auth/assessors", json={"name": "Ann"}, headers=ORGANIZER_HEADERS
    )
    assessor_token = invited.json()["token"]
    with session_factory() as session:
        organizers.create_organizer(session, "gone", "a long password", audit.Actor("test"))
        session.commit()
    assert sign_in(client, "gone", "a long password").status_code == 303
    disabled_cookie = client.cookies["mtcjudge_session"]
    with session_factory() as session:
        organizers.set_disabled(session, "gone", True, audit.Actor("test"))
        session.commit()
    return {"slug": "auth", "assessor_token": assessor_token, "disabled_cookie": disabled_cookie}


def concrete(path: str, known: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: known["slug"] if m.group(1) == "slug" else "1", path)


def call(client: TestClient, method: str, path: str, **kwargs: Any) -> Any:
    if method in UNSAFE:
        kwargs.setdefault("json", {})
    return client.request(method, path, follow_redirects=False, **kwargs)


def assert_refused(response: Any, method: str, path: str, status: int = 401) -> None:
    where = f"{method} {path}"
    assert response.status_code == status, f"{where}: {response.status_code} {response.text[:200]}"
    if path.startswith("/api/") or path == "/openapi.json" or method != "GET":
        code = "organizer_only" if status == 401 else "csrf_failed"
        if response.headers["content-type"].startswith("application/json"):
            assert response.json()["error"] == code, where
    else:
        assert "Sign in" in response.text, where  # the page offers the sign-in form


def test_every_route_is_classified(routes: dict[tuple[str, str], bool]) -> None:
    unclassified = [
        key
        for key, guarded in routes.items()
        if not guarded and key not in PUBLIC | PROBES and not ASSESSOR_PATHS.match(key[1])
    ]
    assert unclassified == [], "routes open to anyone: add CurrentOrganizer, or list them here"
    # the organizer API, its documentation and no assessor route
    for (method, path), guarded in routes.items():
        if path.startswith("/api/campaigns") or path in ("/docs", "/redoc", "/openapi.json"):
            assert guarded, f"{method} {path}"
        if ASSESSOR_PATHS.match(path):
            assert not guarded, f"{method} {path}"
    assert len([key for key, guarded in routes.items() if guarded]) >= 8


def test_no_credentials_is_401_everywhere(
    client: TestClient, organizer_routes: list[tuple[str, str]], known: dict[str, str]
) -> None:
    for method, path in organizer_routes:
        url = concrete(path, known)
        assert_refused(call(client, method, url), method, url)


def test_an_assessor_token_opens_no_organizer_route(
    make_client: Callable[..., TestClient],
    organizer_routes: list[tuple[str, str]],
    known: dict[str, str],
) -> None:
    token = known["assessor_token"]
    as_bearer = make_client(headers={"Authorization": f"Bearer {token}"})
    as_cookie = make_client(cookies={"mtcjudge_session": token})
    for method, path in organizer_routes:
        url = concrete(path, known)
        assert_refused(call(as_bearer, method, url), method, url)
        assert_refused(call(as_cookie, method, url, headers={"X-CSRF-Token": token}), method, url)


@pytest.mark.parametrize(
    "authorization",
    ["Bearer wrong", "Bearer ", "bearer test-organizer-tokenx", "test-organizer-token", "Basic x"],
)
def test_a_wrong_bearer_token_is_401_everywhere(
    make_client: Callable[..., TestClient],
    organizer_routes: list[tuple[str, str]],
    known: dict[str, str],
    authorization: str,
) -> None:
    wrong = make_client(headers={"Authorization": authorization})
    for method, path in organizer_routes:
        url = concrete(path, known)
        assert_refused(call(wrong, method, url), method, url)


def test_a_wrong_bearer_token_is_refused_even_with_a_session(
    signed_in: TestClient, organizer_routes: list[tuple[str, str]], known: dict[str, str]
) -> None:
    for method, path in organizer_routes:
        url = concrete(path, known)
        response = call(signed_in, method, url, headers={"Authorization": "Bearer wrong"})
        assert_refused(response, method, url)


def test_a_disabled_organizers_session_is_401_everywhere(
    make_client: Callable[..., TestClient],
    organizer_routes: list[tuple[str, str]],
    known: dict[str, str],
) -> None:
    disabled = make_client(cookies={"mtcjudge_session": known["disabled_cookie"]})
    for method, path in organizer_routes:
        url = concrete(path, known)
        assert_refused(call(disabled, method, url), method, url)


def test_without_a_configured_token_no_bearer_token_is_accepted(
    make_client: Callable[..., TestClient],
    app_settings: Settings,
    organizer_routes: list[tuple[str, str]],
    known: dict[str, str],
) -> None:
    """The old rule let this machine in without a token; now nobody is, without a session."""
    tokenless = replace(app_settings, organizer_token=None)
    for headers in ({}, ORGANIZER_HEADERS, {"Authorization": "Bearer "}):
        client = make_client(tokenless, headers=headers)
        for method, path in organizer_routes:
            url = concrete(path, known)
            assert_refused(call(client, method, url), method, url)


def test_a_signed_in_change_without_the_csrf_token_is_403_everywhere(
    signed_in: TestClient, organizer_routes: list[tuple[str, str]], known: dict[str, str]
) -> None:
    changes = [(m, p) for m, p in organizer_routes if m in UNSAFE]
    assert changes
    for method, path in changes:
        url = concrete(path, known)
        for headers in ({}, {"X-CSRF-Token": "forged"}):
            response = call(signed_in, method, url, headers=headers)
            assert_refused(response, method, url, status=403)


def test_the_right_credentials_get_past_the_guard(
    make_client: Callable[..., TestClient],
    signed_in: TestClient,
    organizer_routes: list[tuple[str, str]],
    known: dict[str, str],
) -> None:
    """The refusals above are the guard's: the same requests with the bearer token, or with
    a session (and its CSRF token on changes), are not refused."""
    bearer = make_client(headers=ORGANIZER_HEADERS)
    csrf = session_csrf(signed_in)
    for method, path in organizer_routes:
        if STREAMS.search(path):
            continue
        url = concrete(path, known)
        for client, headers in ((bearer, {}), (signed_in, {"X-CSRF-Token": csrf})):
            response = call(client, method, url, headers=headers)
            assert response.status_code not in (401, 403), f"{method} {url}: {response.text[:200]}"
