"""Signing in and out through the pages: the cookie, CSRF, throttling, sessions in the database."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.audit import Actor
from mtcjudge.auth import principal as principal
from mtcjudge.auth.principal import hash_session_token
from mtcjudge.config import Settings
from mtcjudge.db import make_sessionmaker, upgrade_database
from mtcjudge.main import create_app
from mtcjudge.models import OrganizerSession, utcnow
from mtcjudge.organizers import service as organizers
from mtcjudge.organizers.routes import safe_next
from tests.factories import TINY_RUNS as RUNS
from tests.support import ORGANIZER_HEADERS, PASSWORD, csrf_field, session_csrf, sign_in


def cookie_header(response, name: str) -> str:
    headers = [h for h in response.headers.get_list("set-cookie") if h.startswith(f"{name}=")]
    assert len(headers) == 1, response.headers.get_list("set-cookie")
    return headers[0]


def attributes(set_cookie: str) -> dict[str, str]:
    parts = [p.strip() for p in set_cookie.split(";")[1:]]
    return {p.split("=", 1)[0].lower(): ([*p.split("=", 1), ""])[1] for p in parts}


# ---------------------------------------------------------------- signing in


def test_the_sign_in_page_is_an_accessible_form(client: TestClient) -> None:
    page = client.get("/login")
    assert page.status_code == 200
    assert page.headers["cache-control"] == "no-store"
    assert "default-src 'self'" in page.headers["content-security-policy"]
    html = page.text
    assert '<label class="form__label" for="username">Username</label>' in html
    assert '<label class="form__label" for="password">Password</label>' in html
    assert 'autocomplete="current-password"' in html
    assert "<script" not in html
    assert "style=" not in html
    login_cookie = attributes(cookie_header(page, "mtcjudge_login"))
    assert "httponly" in login_cookie
    assert login_cookie["samesite"].lower() == "strict"
    assert login_cookie["path"] == "/login"


def test_sign_in_sets_a_session_cookie_and_goes_on(client: TestClient, organizer: str) -> None:
    answer = sign_in(client, "Ada", next="/docs")  # usernames are not case-sensitive
    assert answer.status_code == 303
    assert answer.headers["location"] == "/docs"
    cookie = cookie_header(answer, "mtcjudge_session")
    flags = attributes(cookie)
    assert "httponly" in flags
    assert flags["samesite"].lower() == "lax"
    assert flags["path"] == "/"
    assert flags["max-age"] == str(12 * 3600)
    assert "secure" not in flags  # plain http, and an http public address
    assert client.get("/docs").status_code == 200
    landing = client.get("/")
    assert "Signed in as <strong>ada</strong>" in landing.text
    assert landing.headers["cache-control"] == "no-store"


def test_the_cookie_is_secure_over_https_or_with_an_https_address(
    make_client: Callable[..., TestClient], app_settings: Settings, organizer: str
) -> None:
    over_https = make_client(base_url="https://testserver")
    answer = sign_in(over_https, organizer)
    assert "secure" in attributes(cookie_header(answer, "mtcjudge_session"))
    public_https = make_client(replace(app_settings, base_url="https://judge.example.org"))
    page = public_https.get("/login")
    assert "secure" in attributes(cookie_header(page, "mtcjudge_login"))


def test_the_session_row_holds_a_hash_of_the_cookie(
    client: TestClient, organizer: str, db_session: Session
) -> None:
    answer = sign_in(client, organizer)
    token = answer.cookies["mtcjudge_session"]
    row = db_session.scalars(select(OrganizerSession)).one()
    assert row.token_hash == hash_session_token(token)
    assert token not in (row.token_hash, row.csrf_token)
    lifetime = row.expires_at - row.created_at
    assert lifetime == timedelta(hours=12)


@pytest.mark.parametrize(
    ("username", "password"),
    [("ada", "wrong password"), ("nobody", PASSWORD), ("", ""), ("ada", "")],
)
def test_a_failed_sign_in_says_so_and_sets_no_session(
    client: TestClient, organizer: str, username: str, password: str
) -> None:
    answer = sign_in(client, username, password)
    assert answer.status_code == 401
    assert "The username or the password is not right." in answer.text
    assert "mtcjudge_session" not in answer.cookies
    assert client.get("/api/campaigns").status_code == 401


def test_a_disabled_organizer_cannot_sign_in(
    client: TestClient, organizer: str, session_factory: sessionmaker[Session]
) -> None:
    with session_factory() as session:
        organizers.set_disabled(session, organizer, True, Actor("test"))
        session.commit()
    assert sign_in(client, organizer).status_code == 401


def test_a_failed_sign_in_waits(
    make_client: Callable[..., TestClient], app_settings: Settings, organizer: str
) -> None:
    import time

    slow = make_client(replace(app_settings, login_failure_delay=0.3))
    started = time.monotonic()
    assert sign_in(slow, organizer, "wrong password").status_code == 401
    assert time.monotonic() - started >= 0.3


def test_too_many_failures_from_one_address_are_throttled(
    client: TestClient, organizer: str
) -> None:
    for _ in range(10):
        assert sign_in(client, organizer, "wrong password").status_code == 401
    answer = sign_in(client, organizer)  # even the right password waits now
    assert answer.status_code == 429
    assert int(answer.headers["retry-after"]) > 0
    assert "Too many failed sign-ins" in answer.text
    assert "mtcjudge_session" not in answer.cookies


def test_the_sign_in_form_needs_its_own_token(client: TestClient, organizer: str) -> None:
    client.get("/login")
    data = {"username": organizer, "password": PASSWORD}
    missing = client.post("/login", data=data, follow_redirects=False)
    assert missing.status_code == 403
    assert "sign-in form had expired" in missing.text
    wrong = client.post("/login", data={**data, "csrf_token": "forged"}, follow_redirects=False)
    assert wrong.status_code == 403
    # a cross-site form has the right field but not the cookie
    token = csrf_field(client.get("/login").text)
    client.cookies.delete("mtcjudge_login", path="/login")
    cross_site = client.post("/login", data={**data, "csrf_token": token}, follow_redirects=False)
    assert cross_site.status_code == 403
    assert "mtcjudge_session" not in cross_site.cookies


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/campaigns/ams?x=1", "/campaigns/ams?x=1"),
        ("/docs", "/docs"),
        ("https://evil.example", "/"),
        ("//evil.example/x", "/"),
        ("/\\evil.example", "/"),
        ("/a\\b", "/"),
        ("/login", "/"),
        ("/logout?x", "/"),
        ("/x\r\nSet-Cookie: a=b", "/"),
        ("", "/"),
        (None, "/"),
    ],
)
def test_only_paths_of_this_site_are_followed_after_signing_in(
    target: str | None, expected: str
) -> None:
    assert safe_next(target) == expected


def test_an_open_redirect_is_not_offered(client: TestClient, organizer: str) -> None:
    answer = sign_in(client, organizer, next="//evil.example")
    assert answer.headers["location"] == "/"


def test_the_sign_in_page_of_a_signed_in_organizer_goes_on(signed_in: TestClient) -> None:
    answer = signed_in.get("/login?next=/docs", follow_redirects=False)
    assert (answer.status_code, answer.headers["location"]) == (303, "/docs")


def test_signing_in_again_replaces_the_session(
    make_client: Callable[..., TestClient], organizer: str, db_session: Session
) -> None:
    browser = make_client()
    form = browser.get("/login")  # opened before the first sign-in, sent after it
    sign_in(browser, organizer)
    first = browser.cookies["mtcjudge_session"]
    data = {"username": organizer, "password": PASSWORD, "csrf_token": csrf_field(form.text)}
    browser.cookies.set("mtcjudge_login", form.cookies["mtcjudge_login"], path="/login")
    assert browser.post("/login", data=data, follow_redirects=False).status_code == 303
    assert browser.cookies["mtcjudge_session"] != first
    assert principal.principal_for_session(db_session, first) is None
    assert len(db_session.scalars(select(OrganizerSession)).all()) == 1


# ---------------------------------------------------------------- organizer pages


def test_an_organizer_page_without_a_session_is_the_sign_in_form(client: TestClient) -> None:
    page = client.get("/docs?x=1")
    assert page.status_code == 401
    assert "Sign in to see this page." in page.text
    assert 'name="next" value="/docs?x=1"' in page.text
    assert client.get("/openapi.json").json()["error"] == "organizer_only"


def test_the_landing_page_tells_visitors_where_to_go(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert "personal link" in page.text
    assert 'href="/login"' in page.text
    assert "Signed in as" not in page.text
    assert page.headers["x-frame-options"] == "DENY"


def test_the_landing_page_lists_campaigns_to_organizers(signed_in: TestClient) -> None:
    csrf = session_csrf(signed_in)
    created = signed_in.post(
        "/api/campaigns",
        # no audio: opened on purpose (no pair can be played)
        json={
            "name": "AMS <2011>",
            "slug": "ams",
            "runs": RUNS,
            "status": "open",
            "confirm_unplayable": True,
        },
        headers={"X-CSRF-Token": csrf},
    )
    assert created.status_code == 201, created.text
    page = signed_in.get("/").text
    assert "AMS &lt;2011&gt;" in page
    assert 'href="/campaigns/ams"' in page  # the dashboard
    assert 'href="/api/campaigns/ams/results"' in page
    assert "status--open" in page
    assert "2 × 1" in page  # systems x queries
    assert "<strong>ada</strong> created the campaign: open; 2 systems × 1 queries" in page


# ---------------------------------------------------------------- CSRF


def test_changes_with_the_cookie_need_the_csrf_token(signed_in: TestClient) -> None:
    body = {"name": "AMS", "slug": "ams", "runs": RUNS}
    missing = signed_in.post("/api/campaigns", json=body)
    assert missing.status_code == 403
    assert missing.json()["error"] == "csrf_failed"
    wrong = signed_in.post("/api/campaigns", json=body, headers={"X-CSRF-Token": "forged"})
    assert wrong.status_code == 403
    assert wrong.json()["error"] == "csrf_failed"
    assert signed_in.get("/api/campaigns").json() == []  # reading needs no token
    csrf = session_csrf(signed_in)
    assert (
        signed_in.post("/api/campaigns", json=body, headers={"X-CSRF-Token": csrf}).status_code
        == 201
    )
    patch = signed_in.patch("/api/campaigns/ams", json={"status": "open"})
    assert patch.status_code == 403
    invite = signed_in.post("/api/campaigns/ams/assessors", json={"name": "Ann"})
    assert invite.status_code == 403
    assert signed_in.get("/api/campaigns/ams").json()["status"] == "draft"


def test_the_bearer_token_needs_no_csrf_token(client: TestClient) -> None:
    body = {"name": "AMS", "slug": "ams", "runs": RUNS}
    assert client.post("/api/campaigns", json=body, headers=ORGANIZER_HEADERS).status_code == 201


def test_another_sessions_csrf_token_is_refused(
    make_client: Callable[..., TestClient], organizer: str
) -> None:
    first, second = make_client(), make_client()
    sign_in(first, organizer)
    sign_in(second, organizer)
    body = {"name": "AMS", "runs": RUNS}
    response = first.post(
        "/api/campaigns", json=body, headers={"X-CSRF-Token": session_csrf(second)}
    )
    assert response.status_code == 403


def test_the_sign_out_form_needs_the_csrf_token(signed_in: TestClient) -> None:
    for data in ({}, {"csrf_token": "forged"}):
        refused = signed_in.post("/logout", data=data, follow_redirects=False)
        assert refused.status_code == 403
        assert "CSRF" in refused.text
    assert signed_in.get("/api/campaigns").status_code == 200  # still signed in


# ---------------------------------------------------------------- signing out


def test_sign_out_ends_the_session(signed_in: TestClient) -> None:
    token = signed_in.cookies["mtcjudge_session"]
    answer = signed_in.post(
        "/logout", data={"csrf_token": session_csrf(signed_in)}, follow_redirects=False
    )
    assert (answer.status_code, answer.headers["location"]) == (303, "/login?signed_out=1")
    assert attributes(cookie_header(answer, "mtcjudge_session"))["max-age"] == "0"
    assert "You are signed out." in signed_in.get("/login?signed_out=1").text
    assert signed_in.get("/api/campaigns").status_code == 401
    # a copy of the cookie is worth nothing either
    signed_in.cookies.set("mtcjudge_session", token)
    assert signed_in.get("/api/campaigns").status_code == 401


def test_sign_out_without_a_session_just_goes_to_the_sign_in_page(client: TestClient) -> None:
    answer = client.post("/logout", follow_redirects=False)
    assert (answer.status_code, answer.headers["location"]) == (303, "/login?signed_out=1")


def test_an_expired_session_is_signed_out(
    signed_in: TestClient, session_factory: sessionmaker[Session]
) -> None:
    with session_factory() as session:
        session.execute(update(OrganizerSession).values(expires_at=utcnow() - timedelta(seconds=1)))
        session.commit()
    assert signed_in.get("/api/campaigns").status_code == 401
    assert "Signed in as" not in signed_in.get("/").text


def test_signing_out_in_one_process_ends_the_session_in_another(
    empty_database_url: str, app_settings: Settings
) -> None:
    """Two apps with their own engines (two server processes): nothing but the database is
    shared, so a sign-out, a new password or a disabled account is seen by both at once."""
    upgrade_database(empty_database_url)
    settings = replace(app_settings, database_url=empty_database_url)
    with TestClient(create_app(settings)) as one, TestClient(create_app(settings)) as two:
        factory = one.app.state.session_factory  # type: ignore[attr-defined]
        with factory() as session:
            organizers.create_organizer(session, "ada", PASSWORD, Actor("test"))
            session.commit()
        assert sign_in(one, "ada").status_code == 303
        two.cookies.set("mtcjudge_session", one.cookies["mtcjudge_session"])
        assert two.get("/api/campaigns").status_code == 200
        csrf = session_csrf(one)
        assert (
            one.post("/logout", data={"csrf_token": csrf}, follow_redirects=False).status_code
            == 303
        )
        assert two.get("/api/campaigns").status_code == 401

        assert sign_in(one, "ada").status_code == 303
        two.cookies.set("mtcjudge_session", one.cookies["mtcjudge_session"])
        assert two.get("/api/campaigns").status_code == 200
        with make_sessionmaker(factory.kw["bind"])() as session:
            organizers.set_disabled(session, "ada", True, Actor("test"))
            session.commit()
        assert two.get("/api/campaigns").status_code == 401
        assert one.get("/api/campaigns").status_code == 401
        one.app.state.session_factory.kw["bind"].dispose()  # type: ignore[attr-defined]


# ---------------------------------------------------------------- the first account


def test_the_first_account_from_the_environment_signs_in(
    session_factory: sessionmaker[Session], app_settings: Settings
) -> None:
    settings = replace(app_settings, admin_username="admin", admin_password=PASSWORD)
    with TestClient(create_app(settings, session_factory=session_factory)) as client:
        assert sign_in(client, "admin").status_code == 303
    with TestClient(create_app(settings, session_factory=session_factory)) as again:
        assert sign_in(again, "admin").status_code == 303  # started again: still one account
    with session_factory() as session:
        assert [a.username for a in organizers.list_organizers(session)] == ["admin"]


def test_the_environment_account_is_not_made_when_organizers_exist(
    session_factory: sessionmaker[Session], app_settings: Settings, organizer: str
) -> None:
    settings = replace(app_settings, admin_username="admin", admin_password=PASSWORD)
    with TestClient(create_app(settings, session_factory=session_factory)) as client:
        assert sign_in(client, "admin").status_code == 401
