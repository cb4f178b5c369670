"""Organizer JSON API: /api/campaigns."""

from __future__ import annotations

import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.config import Settings
from mtcjudge.main import create_app
from mtcjudge.mtc.factory import DEFAULT_ESTIMATOR
from tests.support import ORGANIZER_HEADERS, ORGANIZER_TOKEN

RUNS = "system\tquery\tdoc\nS1\tq1\td1\nS1\tq1\td2\nS1\tq2\td3\nS2\tq1\td2\nS2\tq2\td1\n"
METADATA = "q1\tA1\tG1\nd1\tA2\tG1\nd2\tA3\tG2\nd3\tA4\tG2\n"
FINE = "q1\td1\t40\nq1\td1\t60\nq1\td2\t10\n"
BROAD = "q1 0 d1 1\nq2 0 d3 2\n"
BASE_URL = "https://judge.example.org"


def make_client(
    session_factory: sessionmaker[Session], organizer_token: str | None = ORGANIZER_TOKEN
) -> TestClient:
    """A client of an app whose organizer token is ``organizer_token``; with the default
    token every request carries it."""
    settings = Settings(
        database_url="sqlite://", base_url=BASE_URL, organizer_token=organizer_token
    )
    headers = ORGANIZER_HEADERS if organizer_token == ORGANIZER_TOKEN else None
    return TestClient(create_app(settings, session_factory=session_factory), headers=headers)


@pytest.fixture
def client(session_factory: sessionmaker[Session]) -> Iterator[TestClient]:
    with make_client(session_factory) as test_client:
        yield test_client


def create(client: TestClient, **fields: Any) -> Any:
    body = {"name": "AMS 2011", "runs": RUNS, **fields}
    return client.post("/api/campaigns", json=body)


def test_create_campaign_returns_it_with_the_import_report(
    client: TestClient, tmp_path: Path
) -> None:
    with wave.open(str(tmp_path / "d1.wav"), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(8000)
        wav.writeframes(b"\x00\x00" * 800)
    (tmp_path / "d2.mp3").write_bytes(b"")
    fields: dict[str, Any] = {
        "k": 2,
        "target": 0.9,
        "status": "open",
        "metadata": METADATA,
        "judgments_fine": FINE,
        "judgments_broad": BROAD,
        "audio_dir": str(tmp_path),
        "teams": {"S1": "Team One"},
    }
    # no query clip is found: created open, no pair could be played; refused unless confirmed
    refused = create(client, **fields)
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"] == "unplayable_pairs"
    assert "none of the 4 pool pairs can be judged" in refused.json()["detail"]
    assert client.get("/api/campaigns").json() == []
    response = create(client, **fields, confirm_unplayable=True)
    assert response.status_code == 201, response.text
    data = response.json()
    assert (data["slug"], data["name"], data["status"]) == ("ams-2011", "AMS 2011", "open")
    assert (data["k"], data["target"], data["scale"], data["estimator"]) == (
        2,
        0.9,
        "fine",
        DEFAULT_ESTIMATOR,  # the default
    )
    report = data["report"]
    assert (report["n_systems"], report["n_queries"], report["n_results"]) == (2, 2, 5)
    assert report["n_documents"] == 5  # q1, q2 (no metadata row: still a clip), d1, d2, d3
    assert report["n_judgments"] == 3  # (q1, d1) fine and broad in one row, (q1, d2), (q2, d3)
    assert report["audio_found"] == 1
    assert report["audio_missing"] == ["d3", "q1", "q2"]
    assert report["audio_unreadable"] == [{"doc": "d2", "reason": "d2.mp3: empty file"}]
    assert report["n_unplayable_pairs"] == report["n_pool_pairs"] == 4

    detail = client.get("/api/campaigns/ams-2011").json()
    assert detail["counts"] == {
        "systems": 2,
        "queries": 2,
        "documents": 5,
        "results": 5,
        "assessors": 0,
        "judgments": 0,
        "imported_judgments": 3,
    }


def test_list_and_get_campaigns(client: TestClient) -> None:
    assert client.get("/api/campaigns").json() == []
    assert create(client).status_code == 201
    assert create(client, slug="second", description="again").status_code == 201
    listed = client.get("/api/campaigns").json()
    assert [c["slug"] for c in listed] == ["ams-2011", "second"]
    detail = client.get("/api/campaigns/second").json()
    assert (detail["description"], detail["counts"]["systems"]) == ("again", 2)


def test_single_judgments_field_is_on_the_campaign_scale(client: TestClient) -> None:
    response = create(client, scale="broad", judgments=BROAD)
    assert response.status_code == 201, response.text
    assert response.json()["report"]["n_judgments"] == 2
    both = create(client, judgments=FINE, judgments_fine=FINE)
    assert both.status_code == 400
    assert "judgments or judgments_fine" in both.json()["detail"]


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        ({"runs": "S1\tq1\td1\nS1\tq1\n"}, "runs: line 2: expected 3 tab-separated fields"),
        ({"runs": "# only a comment\n"}, "runs: empty file (no data lines)"),
        (
            {"runs": "q1 Q0 d1 1 0.5 S1\nq1 Q0 d2 x 0.4 S1\n"},
            "runs: line 2: rank must be an integer, found 'x'",
        ),
        ({"metadata": "d1\tA1\tG1\nd1\tA1\tG1\n"}, "metadata: line 2: doc d1 is listed twice"),
        (
            {"judgments_fine": "q1\td1\t50\n\nq1\td2\t150\n"},
            "judgments_fine: line 3: FINE scores must be between 0 and 100, found 150",
        ),
        ({"judgments_broad": "q1\td1\t5\n"}, "judgments_broad: line 1: BROAD scores must be"),
        ({"judgments": "q1\td1\tx\n"}, "judgments: line 1: score 'x' is not a number"),
        ({"name": "AMS\x00 2011"}, "name contains a NUL character (U+0000)"),
        ({"teams": {"S1": "T\x00"}}, "teams: the team of system 'S1' contains a NUL"),
        ({"runs": RUNS + "S2\tq3\td\x009\n"}, "runs: line 7: contains a NUL character"),
        ({"target": 0.3}, "target must be a confidence between 0.5 and 1"),
        ({"slug": "Bad Slug"}, "slug must be lowercase"),
        ({"measure": "map"}, "measure must be one of"),
        ({"teams": {"S9": "T"}}, "teams: system 'S9' is not in the runs"),
        ({"audio_dir": "/no/such/dir"}, "audio directory: /no/such/dir: no such directory"),
    ],
)
def test_bad_input_is_400_naming_field_and_line(
    client: TestClient, fields: dict[str, Any], detail: str
) -> None:
    response = create(client, **fields)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"] == "invalid_input"
    assert body["detail"].startswith(detail), body["detail"]
    assert "mtcjudge-import-" not in body["detail"]  # never the temporary path
    assert client.get("/api/campaigns").json() == []  # nothing saved


@pytest.mark.parametrize("estimator", ["ordinal", "calibrated", "historical"])
def test_a_new_campaign_refuses_the_estimators_it_does_not_offer(
    client: TestClient, estimator: str
) -> None:
    response = create(client, estimator=estimator)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_input"
    assert response.json()["detail"].startswith(
        f"estimator {estimator!r} is not offered for a new campaign: choose joint or uniform"
    )
    assert client.get("/api/campaigns").json() == []  # nothing saved
    assert create(client, estimator="uniform").status_code == 201


def test_duplicate_explicit_slug_is_400(client: TestClient) -> None:
    assert create(client, slug="ams").status_code == 201
    response = create(client, slug="ams")
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_input",
        "detail": "slug 'ams' is already taken by another campaign",
    }
    assert len(client.get("/api/campaigns").json()) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"name": "no runs"},
        {"runs": RUNS},
        {"name": "x", "runs": RUNS, "k": "five"},
        {"name": "x", "runs": RUNS, "colour": "blue"},
        {"name": "x", "runs": RUNS, "teams": ["S1"]},
        {"name": "x", "runs": RUNS, "k": 0},
        {"name": "x", "runs": RUNS, "k": 1001},
        {"name": "x", "runs": RUNS, "seed": 2**31},
        {"name": "x", "runs": RUNS, "seed": -1},
        {"name": "x", "runs": RUNS, "lease_minutes": 7 * 24 * 60 + 1},
        {"name": "x", "runs": RUNS, "judgments_per_pair": 101},
        {"name": "x", "runs": RUNS, "k": 10**40},
        {"name": "x", "runs": RUNS, "audio_dir": "/srv/\x00"},
    ],
)
def test_malformed_body_is_422(client: TestClient, body: dict[str, Any]) -> None:
    response = client.post("/api/campaigns", json=body)
    assert response.status_code == 422
    assert response.json()["error"] == "malformed_request"
    assert client.get("/api/campaigns").json() == []


def test_unknown_slug_is_404(client: TestClient) -> None:
    for response in (
        client.get("/api/campaigns/nope"),
        client.patch("/api/campaigns/nope", json={"status": "open"}),
        client.post("/api/campaigns/nope/assessors", json={"name": "Ann"}),
    ):
        assert response.status_code == 404
        assert response.json() == {"error": "campaign_not_found", "detail": "no campaign 'nope'"}


def test_configured_organizer_token_is_required(session_factory: sessionmaker[Session]) -> None:
    with make_client(session_factory, organizer_token="s3cret") as client:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            for response in (
                client.get("/api/campaigns", headers=headers),
                client.get("/api/campaigns/x", headers=headers),
                client.post("/api/campaigns", json={"bad": "body"}, headers=headers),
                client.patch("/api/campaigns/x", json={}, headers=headers),
                client.post("/api/campaigns/x/assessors", json={"name": "A"}, headers=headers),
            ):
                assert response.status_code == 401, response.text
                assert response.json()["error"] == "organizer_only"
        good = {"Authorization": "Bearer s3cret"}
        assert client.get("/api/campaigns", headers=good).status_code == 200
        created = client.post("/api/campaigns", json={"name": "x", "runs": RUNS}, headers=good)
        assert created.status_code == 201


def test_patch_changes_settings(client: TestClient) -> None:
    create(client)
    changes = {"status": "open", "keep_collecting": True, "target": 0.99, "lease_minutes": 3}
    # without audio no pair can be played: opening is refused until confirmed, nothing changes
    refused = client.patch("/api/campaigns/ams-2011", json=changes)
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"] == "unplayable_pairs"
    assert '"confirm_unplayable": true' in refused.json()["detail"]
    unchanged = client.get("/api/campaigns/ams-2011").json()
    assert (unchanged["status"], unchanged["target"]) == ("draft", 0.95)
    response = client.patch("/api/campaigns/ams-2011", json={**changes, "confirm_unplayable": True})
    assert response.status_code == 200, response.text
    data = response.json()
    assert (data["status"], data["keep_collecting"], data["target"]) == ("open", True, 0.99)
    assert (data["lease_minutes"], data["judgments_per_pair"]) == (3, 1)
    again = client.patch(
        "/api/campaigns/ams-2011", json={"judgments_per_pair": 2, "name": "New", "description": "d"}
    ).json()
    assert (again["judgments_per_pair"], again["name"], again["status"]) == (2, "New", "open")
    assert client.get("/api/campaigns/ams-2011").json()["description"] == "d"


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        ({"status": "paused"}, 400, "status must be one of draft, open, closed"),
        ({"target": 1.2}, 400, "target must be a confidence between 0.5 and 1"),
        ({"lease_minutes": 0}, 422, "lease_minutes: Input should be greater than or equal to 1"),
        ({"lease_minutes": 10081}, 422, "lease_minutes: Input should be less than or equal to"),
        ({"judgments_per_pair": 2**31}, 422, "judgments_per_pair: Input should be less than"),
        ({"description": "a\nb\x00"}, 400, "description contains a NUL character (U+0000) on"),
        ({"target": None}, 400, "target must be a confidence"),
        ({"name": ""}, 400, "name must be a non-empty text"),
        ({"k": 3}, 422, "k: Extra inputs are not permitted"),
        ({"lease_minutes": "long"}, 422, "lease_minutes:"),
    ],
)
def test_patch_validation(
    client: TestClient, body: dict[str, Any], status: int, detail: str
) -> None:
    create(client)
    response = client.patch("/api/campaigns/ams-2011", json=body)
    assert response.status_code == status
    assert detail in response.json()["detail"]
    unchanged = client.get("/api/campaigns/ams-2011").json()
    assert (unchanged["status"], unchanged["target"], unchanged["lease_minutes"]) == (
        "draft",
        0.95,
        10,
    )


def test_invite_assessor_returns_the_personal_link(client: TestClient) -> None:
    create(client)
    response = client.post(
        "/api/campaigns/ams-2011/assessors", json={"name": "Ann", "email": "ann@example.org"}
    )
    assert response.status_code == 201, response.text
    data = response.json()
    assert set(data) == {"id", "name", "token", "link"}
    assert data["name"] == "Ann"
    assert data["link"] == f"{BASE_URL}/a/{data['token']}"
    second = client.post("/api/campaigns/ams-2011/assessors", json={"name": "Bob"}).json()
    assert second["token"] != data["token"]
    assert client.get("/api/campaigns/ams-2011").json()["counts"]["assessors"] == 2


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"name": " "}, 400),
        ({"name": "A", "email": "nope"}, 400),
        ({"name": "A\x00"}, 400),
        ({"name": "A", "email": "a\x00@example.org"}, 400),
        ({}, 422),
        ({"nom": "A"}, 422),
    ],
)
def test_invite_validation(client: TestClient, body: dict[str, Any], status: int) -> None:
    create(client)
    response = client.post("/api/campaigns/ams-2011/assessors", json=body)
    assert response.status_code == status
    assert client.get("/api/campaigns/ams-2011").json()["counts"]["assessors"] == 0


def test_a_failure_after_rows_were_written_saves_nothing(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mtcjudge.campaigns import creation
    from mtcjudge.errors import InvalidInput

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise InvalidInput("judgments: broken on purpose")

    monkeypatch.setattr(creation, "_judgment_rows", fail)  # after campaign, documents, results
    response = create(client, judgments_fine=FINE)
    assert response.status_code == 400
    monkeypatch.undo()
    assert client.get("/api/campaigns").json() == []
    assert create(client).json()["slug"] == "ams-2011"  # the slug was not taken either
