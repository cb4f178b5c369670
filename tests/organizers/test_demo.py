"""The demo prints an organizer sign-in that works, and a new password at every run."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from mtcjudge.config import Settings
from mtcjudge.demo.setup import DEMO_ORGANIZER, ensure_demo
from mtcjudge.main import create_app
from tests.support import sign_in


@pytest.fixture(autouse=True)
def _no_environment_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DATABASE_URL", "MTCJUDGE_BASE_URL", "MTCJUDGE_ORGANIZER_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def test_the_demo_organizer_signs_in_with_the_printed_password(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'mtcjudge.sqlite3'}"
    first = ensure_demo(url, tmp_path)
    assert first.organizer_username == DEMO_ORGANIZER == "organizer"
    assert len(first.organizer_password) >= 16
    login_line = first.organizer_hint.splitlines()[0]
    assert login_line == (
        "Sign in at http://127.0.0.1:8000/login with username organizer and password "
        f"{first.organizer_password} (a new password at every run of the demo)."
    )
    settings = Settings(database_url=url, run_planner=False, login_failure_delay=0.0)
    with TestClient(create_app(settings)) as client:
        assert sign_in(client, DEMO_ORGANIZER, first.organizer_password).status_code == 303
        landing = client.get("/")
        assert "Demo: synthetic music similarity" in landing.text
        assert "mtcjudge demo" in landing.text  # the audit log names who created it

        second = ensure_demo(url, tmp_path)
        assert second.organizer_password != first.organizer_password
        # the new password ended the old sessions
        assert client.get("/api/campaigns").status_code == 401
        other = TestClient(create_app(settings))
        assert sign_in(other, DEMO_ORGANIZER, first.organizer_password).status_code == 401
        assert sign_in(other, DEMO_ORGANIZER, second.organizer_password).status_code == 303
