"""Clips cut from a start per document (``clip_cut`` ``offsets`` with ``clip_offsets``;
docs/audio.md, "Excerpts"): through the API (``POST /api/campaigns``: an object of starts or
the text of an offsets file), the new-campaign page's requests (an offsets file, checked by
the preview, then ``/api/campaigns/import``) and the command line (``--clip-offsets``). Every
bad entry is refused naming it (file or field, line), and nothing is saved."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.models import Campaign, Document
from tests.audio_files import write_clip
from tests.cli import run
from tests.support import ORGANIZER_HEADERS, session_csrf

SECONDS = 8.0  # every clip; excerpts of 3 s
RUNS = "".join(f"S{s}\tq\td{(s + r) % 3}\n" for s in range(2) for r in range(2))
DOCS = ("q", "d0", "d1", "d2")
# q from 1.5 s; d0 from 7 s, moved back to 5 s (the file ends at 8 s); d1, d2 not named
OFFSETS = {"q": 1.5, "d0": 7}
OFFSETS_TSV = "doc\tstart_seconds\nq\t1.5\nd0\t7\n"
STARTS = {"q": 1.5, "d0": 5.0, "d1": 0.3 * SECONDS, "d2": 0.3 * SECONDS}
NO_START = "clip_offsets: clip_cut is offsets, but no start was given: give each document's start"


@pytest.fixture(scope="module")
def audio_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("offsets-audio")
    for seed, doc in enumerate(DOCS):
        write_clip(folder / f"{doc}.flac", SECONDS, channels=1, rate=8000, seed=seed)
    return folder


@pytest.fixture
def api(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client(headers=ORGANIZER_HEADERS)


def create(api: TestClient, audio_dir: Path, **fields: Any) -> Any:
    body = {
        "name": "Offsets",
        "runs": RUNS,
        "audio_dir": str(audio_dir),
        "clip_cut": "offsets",
        "excerpt_seconds": 3,
        **fields,
    }
    return api.post("/api/campaigns", json=body)


def starts(session_factory: sessionmaker[Session], slug: str) -> dict[str, float | None]:
    """Each document's excerpt start as stored."""
    with session_factory() as session:
        campaign_id = session.scalars(select(Campaign.id).where(Campaign.slug == slug)).one()
        rows = session.scalars(select(Document).where(Document.campaign_id == campaign_id))
        return {row.external_id: row.excerpt_start for row in rows}


def assert_starts(stored: dict[str, float | None]) -> None:
    assert stored == {doc: pytest.approx(start) for doc, start in STARTS.items()}


# --------------------------------------------------------------------------- the JSON API


@pytest.mark.parametrize("offsets", [OFFSETS, OFFSETS_TSV], ids=["object", "file-text"])
def test_the_api_cuts_each_clip_from_its_start(
    api: TestClient, audio_dir: Path, session_factory: sessionmaker[Session], offsets: Any
) -> None:
    response = create(api, audio_dir, clip_offsets=offsets)
    assert response.status_code == 201, response.text
    data = response.json()
    assert (data["clip_cut"], data["excerpt_seconds"]) == ("offsets", 3.0)
    assert data["report"]["audio_found"] == len(DOCS)
    assert_starts(starts(session_factory, data["slug"]))
    with session_factory() as session:
        durations = session.scalars(select(Document.duration_seconds)).all()
    assert durations == [pytest.approx(3.0)] * len(DOCS)


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        # the cut offsets without offsets: refused, not cut as ordinary excerpts
        ({}, NO_START),
        ({"clip_offsets": None}, NO_START),
        ({"clip_offsets": {}}, NO_START),
        # offsets with another cut would be ignored
        (
            {"clip_cut": "excerpt", "clip_offsets": OFFSETS},
            "clip_offsets: the starts are used only when clips are cut by offsets, not with "
            "clip_cut excerpt",
        ),
        # each bad entry of an object, by its document
        (
            {"clip_offsets": {"q": 1, "nope": 2, "also": 3}},
            "clip_offsets: doc 'nope' is not a document or query of the runs (and 1 more entries)",
        ),
        (
            {"clip_offsets": {"d0": -1}},
            "clip_offsets: doc 'd0': start_seconds: must be a number of seconds from 0, found -1",
        ),
        (
            {"clip_offsets": {"d0": "soon"}},
            "clip_offsets: doc 'd0': start_seconds: must be a number of seconds from 0, "
            "found 'soon'",
        ),
        (
            {"clip_offsets": {"d0": True}},
            "clip_offsets: doc 'd0': start_seconds: must be a number of seconds from 0, found True",
        ),
        (
            {"clip_offsets": {"d0": None}},
            "clip_offsets: doc 'd0': start_seconds: must be a number of seconds from 0, found None",
        ),
        (
            {"clip_offsets": {"q": 1, "d1": 8}},
            "clip_offsets: doc 'd1': start_seconds: 8 s is at or past the end of its file, "
            "which lasts 8.0 s",
        ),
        # the text of an offsets file, by line
        (
            {"clip_offsets": "q\t1.5\nd0\tsoon\n"},
            "clip_offsets: line 2: start_seconds: must be a number of seconds from 0, found 'soon'",
        ),
        (
            {"clip_offsets": "q\t1.5\nq\t2\n"},
            "clip_offsets: line 2: doc q is listed twice (first at line 1)",
        ),
        ({"clip_offsets": "q 1.5\n"}, "clip_offsets: line 1: expected 2 tab-separated fields"),
        ({"clip_offsets": "# nothing\n"}, "clip_offsets: empty file (no data lines)"),
        (
            {"clip_offsets": "doc\tstart_seconds\nq\t1\nd9\t2\n"},
            "clip_offsets: line 3: doc 'd9' is not a document or query of the runs",
        ),
        (
            {"clip_offsets": "q\t1\nd2\t120\n"},
            "clip_offsets: line 2: doc 'd2': start_seconds: 120 s is at or past the end of its "
            "file, which lasts 8.0 s",
        ),
    ],
)
def test_bad_offsets_are_400_naming_the_entry_and_nothing_is_saved(
    api: TestClient, audio_dir: Path, fields: dict[str, Any], detail: str
) -> None:
    response = create(api, audio_dir, **fields)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"] == "invalid_input"
    assert body["detail"].startswith(detail), body["detail"]
    assert "mtcjudge-import-" not in body["detail"]  # never the temporary path
    assert api.get("/api/campaigns").json() == []  # nothing saved
    assert create(api, audio_dir, clip_offsets=OFFSETS).status_code == 201  # the slug is free


def test_a_huge_entry_is_named_not_repeated_whole(api: TestClient, audio_dir: Path) -> None:
    response = create(api, audio_dir, clip_offsets={"d0": "s" * 100_000})
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail.startswith("clip_offsets: doc 'd0': start_seconds: must be a number of seconds")
    assert detail.endswith("found 'sssss" + "s" * 53 + "…")
    response = create(api, audio_dir, clip_offsets={"x" * 100_000: 1})
    assert response.status_code == 400
    assert len(response.json()["detail"]) < 200


@pytest.mark.parametrize("offsets", [["q", 1.5], 3, [{"doc": "q", "start_seconds": 1}]])
def test_offsets_of_another_shape_are_a_malformed_request(
    api: TestClient, audio_dir: Path, offsets: Any
) -> None:
    response = create(api, audio_dir, clip_offsets=offsets)
    assert response.status_code == 422
    assert response.json()["error"] == "malformed_request"
    assert "clip_offsets" in response.json()["detail"]
    assert api.get("/api/campaigns").json() == []


def test_the_api_documents_the_offsets(api: TestClient) -> None:
    schema = api.get("/openapi.json").json()["components"]["schemas"]
    created = schema["CampaignCreate"]["properties"]["clip_offsets"]
    shapes = [shape.get("type") for shape in created["anyOf"]]
    assert shapes == ["object", "string", "null"]
    assert created["anyOf"][0]["additionalProperties"] == {"type": "number", "minimum": 0}
    upload = schema["CampaignUpload"]["properties"]
    assert upload["clip_cut"]["enum"] == ["whole", "excerpt", "offsets"]
    assert "clip_offsets" in upload


# --------------------------------------------------------------------------- the page's requests


@pytest.fixture
def page(signed_in: TestClient) -> Callable[..., Any]:
    """POST to the page's API routes (preview, import) as its script does."""
    headers = {"X-CSRF-Token": session_csrf(signed_in)}

    def post(route: str, audio_dir: Path, offsets: str | None, **fields: Any) -> Any:
        body: dict[str, Any] = {
            "name": "Offsets page",
            "runs": [{"name": "runs.tsv", "text": RUNS}],
            "audio_dir": str(audio_dir),
            "clip_cut": "offsets",
            "excerpt_seconds": 3,
            **fields,
        }
        if offsets is not None:
            body["clip_offsets"] = {"name": "offsets.tsv", "text": offsets}
        return signed_in.post(f"/api/campaigns/{route}", json=body, headers=headers)

    return post


def test_the_page_s_offsets_file_is_previewed_then_used(
    page: Callable[..., Any], audio_dir: Path, session_factory: sessionmaker[Session]
) -> None:
    answer = page("preview", audio_dir, OFFSETS_TSV)
    assert answer.status_code == 200, answer.text
    preview = answer.json()
    assert preview["ok"] is True
    assert preview["clip_cut"] == "offsets"
    assert preview["cut"] == (
        "3 s excerpts from each file's start in the offsets (else 30% of the way in)"
    )
    assert preview["clip_offsets"] == 2
    assert preview["audio"]["found"] == len(DOCS)
    # the hours are of 3 s clips, wherever each starts
    assert preview["projection"]["hours"]["durations"] == "audio"
    pool = preview["projection"]["hours"]["pool"]
    assert pool["candidate_seconds"] == pytest.approx(3.0)

    created = page("import", audio_dir, OFFSETS_TSV)
    assert created.status_code == 201, created.text
    assert created.json()["clip_cut"] == "offsets"
    assert_starts(starts(session_factory, created.json()["slug"]))


@pytest.mark.parametrize(
    ("offsets", "problem"),
    [
        (
            "q\t1.5\nd0\tsoon\n",
            {
                "input": "clip_offsets",
                "file": "offsets.tsv",
                "line": 2,
                "field": "start_seconds",
                "message": "start_seconds: must be a number of seconds from 0, found 'soon'",
            },
        ),
        (
            "q\t1.5\nd7\t2\n",
            {
                "input": "clip_offsets",
                "file": "offsets.tsv",
                "line": 2,
                "field": "doc",
                "message": "doc 'd7' is not a document or query of the runs",
            },
        ),
        (
            "q\t1.5\nd0\t9\n",  # read from the file's header
            {
                "input": "clip_offsets",
                "file": "offsets.tsv",
                "line": 2,
                "field": "start_seconds",
                "message": "doc 'd0': start_seconds: 9 s is at or past the end of its file, "
                "which lasts 8.0 s",
            },
        ),
        (
            None,
            {
                "input": "clip_offsets",
                "file": None,
                "line": None,
                "field": "clip_offsets",
                "message": NO_START.removeprefix("clip_offsets: "),
            },
        ),
    ],
    ids=["not-a-number", "unknown-doc", "past-the-end", "no-file"],
)
def test_a_bad_offsets_file_is_a_problem_naming_its_line(
    page: Callable[..., Any], audio_dir: Path, offsets: str | None, problem: dict[str, Any]
) -> None:
    answer = page("preview", audio_dir, offsets)
    assert answer.status_code == 400, answer.text
    problems = answer.json()["preview"]["problems"]
    assert len(problems) == 1
    assert problems[0] == {**problem, "message": problems[0]["message"]}
    assert problems[0]["message"].startswith(problem["message"])
    assert "mtcjudge-preview" not in answer.text  # no temporary paths

    refused = page("import", audio_dir, offsets)
    assert refused.status_code == 400
    detail = refused.json()["detail"]
    assert problem["message"] in detail
    where = "offsets.tsv, line 2: " if offsets is not None else "clip_offsets: "
    assert where in detail, detail


def test_an_offsets_file_with_another_cut_is_a_problem(
    page: Callable[..., Any], audio_dir: Path
) -> None:
    answer = page("preview", audio_dir, OFFSETS_TSV, clip_cut="whole")
    problems = answer.json()["preview"]["problems"]
    assert [(p["input"], p["message"][:45]) for p in problems] == [
        ("clip_offsets", "the starts are used only when clips are cut b")
    ]


def test_the_import_names_a_start_past_the_end_the_preview_could_not_see(
    page: Callable[..., Any],
    audio_dir: Path,
    session_factory: sessionmaker[Session],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Uploaded audio is read when the campaign is created: its ends are checked then."""
    from mtcjudge.ingest.formats import ClipOffsets

    monkeypatch.setattr(ClipOffsets, "check_ends", lambda self, seconds: None, raising=True)
    assert page("preview", audio_dir, "q\t1\nd1\t30\n").status_code == 200
    monkeypatch.undo()
    refused = page("import", audio_dir, "q\t1\nd1\t30\n")
    assert refused.status_code == 400
    assert refused.json()["detail"] == (
        "clip_offsets: offsets.tsv, line 2: doc 'd1': start_seconds: 30 s is at or past the "
        "end of its file, which lasts 8.0 s"
    )
    with session_factory() as session:
        assert session.scalars(select(Campaign)).all() == []


# --------------------------------------------------------------------------- the command line


@pytest.fixture
def cli_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, audio_dir: Path) -> dict[str, Path]:
    monkeypatch.setenv("MTCJUDGE_BASE_URL", "https://judge.example.org")
    monkeypatch.delenv("DATABASE_URL", raising=False)
    runs = tmp_path / "runs.tsv"
    runs.write_text(RUNS, encoding="utf-8")
    offsets = tmp_path / "offsets.tsv"
    return {"runs": runs, "dir": tmp_path, "offsets": offsets}


@pytest.mark.parametrize(
    ("offsets", "options", "message"),
    [
        (None, ("--clip-cut", "offsets"), NO_START),
        (
            OFFSETS_TSV,
            ("--clip-cut", "excerpt"),
            "clip_offsets: the starts are used only when clips are cut by offsets",
        ),
        ("q\t1\nnope\t2\n", (), "{offsets}:2: doc 'nope' is not a document or query of the runs"),
        (
            "d0\t8\n",
            (),
            "{offsets}:1: doc 'd0': start_seconds: 8 s is at or past the end of its file, which "
            "lasts 8.0 s",
        ),
    ],
)
def test_the_command_line_refuses_offsets_as_the_api_does(
    cli_files: dict[str, Path],
    audio_dir: Path,
    offsets: str | None,
    options: tuple[str, ...],
    message: str,
    read_session: sessionmaker[Session],
    empty_database_url: str,
) -> None:
    given: tuple[object, ...] = ()
    if offsets is not None:
        cli_files["offsets"].write_text(offsets, encoding="utf-8")
        given = ("--clip-offsets", cli_files["offsets"])
    code, out, err = run(
        "campaign", "create", "--name", "Cut", "--runs", cli_files["runs"], "--audio", audio_dir,
        "--excerpt-seconds", "3", "--database-url", empty_database_url, *options, *given,
    )  # fmt: skip
    assert (code, out) == (2, "")
    assert message.format(offsets=cli_files["offsets"]) in err
    with read_session() as session:
        assert session.scalars(select(Campaign)).all() == []
