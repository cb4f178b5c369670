"""Campaign service: import of runs, metadata, judgments and audio; settings; invitations."""

from __future__ import annotations

import hashlib
import wave
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, aliased

from mtcjudge.campaigns.creation import create_campaign, slugify
from mtcjudge.campaigns.service import (
    assessor_link,
    get_campaign,
    invite_assessor,
    list_campaigns,
    reissue_link,
    revoke_link,
    update_campaign,
)
from mtcjudge.campaigns.spec import CampaignSpec
from mtcjudge.config import Settings
from mtcjudge.errors import CampaignNotFound, InvalidInput, UnplayableNotConfirmed
from mtcjudge.ingest.formats import Metadata, Runs, read_judgments, read_runs
from mtcjudge.ingest.loader import load_collection
from mtcjudge.models import Document, Judgment, Query, Result, System
from mtcjudge.mtc.synthetic import generate

# two systems, two queries (q2 has no metadata row), d9 only in the metadata
RUNS = Runs(
    lists={
        "S1": {"q1": ["d1", "d2", "d3"], "q2": ["d4", "d1"]},
        "S2": {"q1": ["d2", "d5"], "q2": ["d1", "q1"]},
    },
    format="tsv",
)
METADATA = Metadata(
    artist={"q1": "A1", "d1": "A2", "d2": "A1", "d3": None, "d4": "A3", "d5": "A4", "d9": "A5"},
    genre={"q1": "G1", "d1": "G1", "d2": "G2", "d3": "G2", "d4": None, "d5": "G1", "d9": "G3"},
)


def test_import_counts_and_rows(db_session: Session) -> None:
    campaign, report = create_campaign(
        db_session, CampaignSpec("AMS 2011", k=2), RUNS, METADATA, teams={"S1": "Team One"}
    )
    assert report.slug == campaign.slug == "ams-2011"
    assert (report.n_systems, report.n_queries, report.n_results) == (2, 2, 9)
    # d1..d5 from the runs, q1 and q2 (queries are clips), d9 from the metadata
    assert report.n_documents == 8
    assert report.n_judgments == 0
    assert report.n_pool_pairs == load_collection(RUNS, 2, METADATA).collection.n_pairs
    assert (report.audio_found, report.audio_missing, report.audio_unreadable) == (0, [], [])

    documents = {
        d.external_id: d
        for d in db_session.scalars(select(Document).where(Document.campaign_id == campaign.id))
    }
    assert sorted(documents) == ["d1", "d2", "d3", "d4", "d5", "d9", "q1", "q2"]
    assert (documents["d2"].artist, documents["d2"].genre) == ("A1", "G2")
    assert (documents["d4"].artist, documents["d4"].genre) == ("A3", None)
    assert (documents["q2"].artist, documents["q2"].audio_path) == (None, None)

    teams = dict(
        db_session.execute(
            select(System.name, System.team).where(System.campaign_id == campaign.id)
        ).all()
    )
    assert teams == {"S1": "Team One", "S2": None}

    query_docs = set(
        db_session.scalars(
            select(Document.external_id)
            .join(Query, Query.document_id == Document.id)
            .where(Query.campaign_id == campaign.id)
        )
    )
    assert query_docs == {"q1", "q2"}

    query_doc = aliased(Document)
    ranked = db_session.execute(
        select(System.name, query_doc.external_id, Result.rank, Document.external_id)
        .join(System, System.id == Result.system_id)
        .join(Query, Query.id == Result.query_id)
        .join(query_doc, query_doc.id == Query.document_id)
        .join(Document, Document.id == Result.document_id)
        .where(Result.campaign_id == campaign.id)
        .order_by(System.name, query_doc.external_id, Result.rank)
    ).all()
    lists: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for system, query, rank, doc in ranked:
        lists.setdefault((system, query), []).append((rank, doc))
    # full lists as given, the query itself included: the engine filters when it loads
    assert lists == {
        ("S1", "q1"): [(1, "d1"), (2, "d2"), (3, "d3")],
        ("S1", "q2"): [(1, "d4"), (2, "d1")],
        ("S2", "q1"): [(1, "d2"), (2, "d5")],
        ("S2", "q2"): [(1, "d1"), (2, "q1")],
    }


def test_imported_judgments_average_each_file(db_session: Session, tmp_path: Path) -> None:
    fine = tmp_path / "fine.tsv"
    fine.write_text("q1\td1\t70\nq1\td1\t80\nq1\td2\t10\nq9\td1\t50\nq1\tzz\t50\n")
    broad = tmp_path / "broad.tsv"
    broad.write_text("q1\td1\t2\nq1\td1\t1\nq2\td4\t0\n")
    campaign, report = create_campaign(
        db_session,
        CampaignSpec("judged"),
        RUNS,
        judgments_fine=read_judgments(fine, "fine"),
        judgments_broad=read_judgments(broad, "broad"),
    )
    assert report.n_judgments == 3
    assert report.n_judgments_ignored == 2  # query q9 and document zz are not in the runs
    rows = db_session.execute(
        select(Query.id, Document.external_id, Judgment)
        .join(Query, Query.id == Judgment.query_id)
        .join(Document, Document.id == Judgment.document_id)
        .where(Judgment.campaign_id == campaign.id)
    ).all()
    by_doc = {doc: judgment for _, doc, judgment in rows}
    assert by_doc["d1"].fine == pytest.approx(75.0)
    assert by_doc["d1"].broad == 2  # mean 1.5 of an integer column, rounded half up
    assert (by_doc["d2"].fine, by_doc["d2"].broad) == (pytest.approx(10.0), None)
    assert (by_doc["d4"].fine, by_doc["d4"].broad) == (None, 0)
    for judgment in by_doc.values():
        assert (judgment.source, judgment.assessor_id, judgment.revision) == ("import", None, 0)


def test_slugs_from_names_are_made_unique(db_session: Session) -> None:
    slugs = [create_campaign(db_session, CampaignSpec("MIREX 2011 — AMS!"), RUNS)[0].slug]
    slugs += [create_campaign(db_session, CampaignSpec("mirex 2011 ams"), RUNS)[0].slug]
    slugs += [create_campaign(db_session, CampaignSpec("Mirex-2011 AMS"), RUNS)[0].slug]
    assert slugs == ["mirex-2011-ams", "mirex-2011-ams-2", "mirex-2011-ams-3"]
    assert [c.slug for c in list_campaigns(db_session)] == slugs


def test_explicit_slug_is_kept_and_must_be_free(db_session: Session) -> None:
    campaign, _ = create_campaign(db_session, CampaignSpec("One", slug="ams"), RUNS)
    assert campaign.slug == "ams"
    with pytest.raises(InvalidInput, match="slug 'ams' is already taken"):
        create_campaign(db_session, CampaignSpec("Two", slug="ams"), RUNS)


@pytest.mark.parametrize(
    ("name", "slug"),
    [("Été à Paris", "ete-a-paris"), ("???", "campaign"), ("x" * 100, "x" * 60)],
)
def test_slugify(name: str, slug: str) -> None:
    assert slugify(name) == slug


def test_teams_must_name_systems_of_the_runs(db_session: Session) -> None:
    with pytest.raises(InvalidInput, match="system 'S3' is not in the runs"):
        create_campaign(db_session, CampaignSpec("x"), RUNS, teams={"S3": "T"})
    with pytest.raises(InvalidInput, match="team of system 'S1'"):
        create_campaign(db_session, CampaignSpec("x"), RUNS, teams={"S1": " "})
    assert list_campaigns(db_session) == []


def test_ids_longer_than_the_columns_are_refused(db_session: Session) -> None:
    runs = Runs({"S1": {"q1": ["d" * 201]}}, "tsv")
    with pytest.raises(InvalidInput, match="at most 200 are stored"):
        create_campaign(db_session, CampaignSpec("x"), runs)


def test_audio_is_attached_and_problems_reported(db_session: Session, tmp_path: Path) -> None:
    with wave.open(str(tmp_path / "d1.wav"), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(8000)
        wav.writeframes(b"\x00\x00" * 4000)
    (tmp_path / "q1.mp3").write_bytes(b"")
    (tmp_path / "d9.wav").write_bytes(b"")  # metadata-only document: never scanned
    campaign, report = create_campaign(
        db_session, CampaignSpec("audio"), RUNS, METADATA, audio_dir=tmp_path
    )
    assert report.audio_found == 1
    assert report.audio_missing == ["d2", "d3", "d4", "d5", "q2"]
    assert report.audio_unreadable == [("q1", "q1.mp3: empty file")]
    d1 = db_session.scalars(
        select(Document).where(Document.campaign_id == campaign.id, Document.external_id == "d1")
    ).one()
    assert d1.audio_path == str((tmp_path / "d1.wav").resolve())
    assert d1.audio_type == "audio/wav"
    assert d1.duration_seconds == pytest.approx(0.5)


def test_missing_audio_directory_is_invalid_input(db_session: Session, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"audio directory: .*no such directory"):
        create_campaign(db_session, CampaignSpec("x"), RUNS, audio_dir=tmp_path / "nope")


def test_mirex_scale_import(db_session: Session, tmp_path: Path) -> None:
    paths = generate(18, 100, 5, seed=0).write(tmp_path)
    runs = read_runs(paths["runs"])
    fine = read_judgments(paths["judgments-fine"], "fine")
    _, report = create_campaign(db_session, CampaignSpec("MIREX", k=5), runs, judgments_fine=fine)
    assert (report.n_systems, report.n_queries, report.n_results) == (18, 100, 9000)
    assert report.n_judgments == len(fine.scores)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"name": " "}, "name must be a non-empty text"),
        ({"slug": "Not A Slug"}, "slug must be lowercase"),
        ({"slug": "a--b"}, "slug must be lowercase"),
        ({"scale": "coarse"}, "scale must be one of broad, fine"),
        ({"k": 0}, "k must be an integer from 1 to 1000, found 0"),
        ({"k": 1001}, "k must be an integer from 1 to 1000, found 1001"),
        ({"k": True}, "k must be an integer"),
        ({"measure": "map"}, "measure must be one of"),
        ({"estimator": "magic"}, "estimator must be one of"),
        ({"policy": "greedy"}, "policy must be one of"),
        ({"target": 0.4}, "target must be a confidence between 0.5 and 1"),
        ({"target": 1.5}, "target must be a confidence"),
        ({"lease_minutes": 0}, "lease_minutes must be an integer from 1 to 10080"),
        ({"lease_minutes": 10081}, "lease_minutes must be an integer from 1 to 10080"),
        ({"judgments_per_pair": 0}, "judgments_per_pair must be"),
        ({"judgments_per_pair": 101}, "judgments_per_pair must be an integer from 1 to 100"),
        ({"seed": -1}, "seed must be an integer from 0 to 2147483647, found -1"),
        ({"seed": 2**31}, "seed must be an integer from 0 to 2147483647, found 2147483648"),
        ({"name": "a\x00b"}, "name contains a NUL character"),
        ({"description": "\ud800"}, "description contains an unpaired surrogate"),
        ({"keep_collecting": "yes"}, "keep_collecting must be true or false"),
        ({"status": "running"}, "status must be one of draft, open, closed"),
        ({"description": None}, "description must be a text"),
    ],
)
def test_spec_validation(changes: dict[str, object], message: str) -> None:
    values: dict[str, object] = {"name": "ok", **changes}
    with pytest.raises(ValueError, match=message):
        CampaignSpec(**values)  # type: ignore[arg-type]


def test_spec_target_becomes_a_float() -> None:
    assert CampaignSpec("x", target=1).target == 1.0
    assert isinstance(CampaignSpec("x", target=1).target, float)


def test_get_campaign(db_session: Session) -> None:
    campaign, _ = create_campaign(db_session, CampaignSpec("x"), RUNS)
    assert get_campaign(db_session, "x") is campaign
    with pytest.raises(CampaignNotFound, match="no campaign 'y'"):
        get_campaign(db_session, "y")


def test_update_campaign(db_session: Session) -> None:
    campaign, _ = create_campaign(db_session, CampaignSpec("x"), RUNS)
    # no audio: no pair can be played, and opening needs the organizer's confirmation
    with pytest.raises(UnplayableNotConfirmed, match=r"none of the \d+ pool pairs can be judged"):
        update_campaign(db_session, campaign, status="open", target=0.9, keep_collecting=True)
    assert (campaign.status, campaign.target, campaign.keep_collecting) == ("draft", 0.95, False)
    update_campaign(
        db_session,
        campaign,
        status="open",
        target=0.9,
        keep_collecting=True,
        listen_seconds=0,
        quality_rate=0.3,
        auto_pause=True,
        confirm_unplayable=True,
    )
    assert (campaign.status, campaign.target, campaign.keep_collecting) == ("open", 0.9, True)
    assert (campaign.listen_seconds, campaign.quality_rate, campaign.auto_pause) == (0.0, 0.3, True)
    update_campaign(db_session, campaign, name="renamed", description="d", lease_minutes=5)
    update_campaign(db_session, campaign, judgments_per_pair=3, status="closed")
    assert (campaign.name, campaign.lease_minutes, campaign.judgments_per_pair) == ("renamed", 5, 3)
    assert campaign.status == "closed"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"status": "paused"}, "status must be one of"),
        ({"target": 0.2}, "target must be a confidence"),
        ({"lease_minutes": 0}, "lease_minutes must be"),
        ({"keep_collecting": None}, "keep_collecting must be true or false"),
        (
            {"listen_seconds": -1},
            r"listen_seconds must be a number from 0 to 120 \(0 turns it off\)",
        ),
        ({"listen_seconds": 121}, "listen_seconds must be a number from 0 to 120"),
        ({"listen_seconds": float("nan")}, "listen_seconds must be a number"),
        ({"listen_seconds": "5"}, "listen_seconds must be a number"),
        ({"quality_rate": 0.31}, "quality_rate must be a number from 0 to 0.3"),
        ({"quality_rate": True}, "quality_rate must be a number"),
        ({"auto_pause": "yes"}, "auto_pause must be true or false"),
        ({"name": ""}, "name must be a non-empty text"),
        ({"k": 10}, "cannot change k of a campaign"),
        ({"scale": "broad", "slug": "b"}, "cannot change scale, slug"),
    ],
)
def test_update_campaign_validates(
    db_session: Session, changes: dict[str, Any], message: str
) -> None:
    campaign, _ = create_campaign(db_session, CampaignSpec("x"), RUNS)
    with pytest.raises(InvalidInput, match=message):
        update_campaign(db_session, campaign, **changes)
    assert (campaign.status, campaign.target, campaign.k) == ("draft", 0.95, 5)


def test_invite_assessor(db_session: Session) -> None:
    campaign, _ = create_campaign(db_session, CampaignSpec("x"), RUNS)
    alice, alice_token = invite_assessor(db_session, campaign, " Alice ", "alice@example.org")
    bob, bob_token = invite_assessor(db_session, campaign, "Bob")
    assert (alice.name, alice.email, alice.campaign_id) == (
        "Alice",
        "alice@example.org",
        campaign.id,
    )
    assert alice.id is not None
    assert bob.email is None
    assert len(alice_token) == 32
    assert alice_token != bob_token
    # only a hash of the token is stored
    assert alice.token_hash == hashlib.sha256(alice_token.encode()).hexdigest()
    assert alice_token not in {alice.token_hash, bob.token_hash}
    settings = Settings(base_url="https://judge.example.org")
    assert assessor_link(settings, alice_token) == f"https://judge.example.org/a/{alice_token}"


def test_a_reissued_or_revoked_link_stops_working(db_session: Session) -> None:
    from mtcjudge.judging.repository.context import assessor_by_token

    campaign, _ = create_campaign(db_session, CampaignSpec("x"), RUNS)
    alice, old = invite_assessor(db_session, campaign, "Alice")
    assert assessor_by_token(db_session, old) is alice
    new = reissue_link(db_session, alice)
    assert assessor_by_token(db_session, old) is None
    assert assessor_by_token(db_session, new) is alice
    revoke_link(db_session, alice)
    assert assessor_by_token(db_session, new) is None


@pytest.mark.parametrize(
    ("name", "email", "message"),
    [
        ("", None, "assessor name must be"),
        ("A" * 201, None, "assessor name must be"),
        ("Ann", "not-an-address", "is not an e-mail address"),
    ],
)
def test_invite_assessor_validates(
    db_session: Session, name: str, email: str | None, message: str
) -> None:
    campaign, _ = create_campaign(db_session, CampaignSpec("x"), RUNS)
    with pytest.raises(InvalidInput, match=message):
        invite_assessor(db_session, campaign, name, email)
