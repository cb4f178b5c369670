"""A campaign created from its export bundle is the same campaign: export -> import -> export
gives the same bytes but the manifest's ``created_at``; a bundle that was changed, is not a
bundle or holds a bad row is refused whole (SQLite or Postgres, as the fixtures give)."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, func, select

from mtcjudge.campaigns import service as campaigns
from mtcjudge.config import Settings
from mtcjudge.errors import InvalidInput
from mtcjudge.exports import service
from mtcjudge.exports.bundle_read import open_bundle
from mtcjudge.exports.restore import restore_campaign
from mtcjudge.ingest.formats import InputError
from mtcjudge.main import create_app
from mtcjudge.models import Assessor, Campaign, Judgment, Lease, Pair, utcnow
from mtcjudge.mtc.factory import AUDIT_EVERY
from mtcjudge.planner.service import Planner
from tests.cli import run
from tests.factories import TEST_AUDIO, make_campaign
from tests.support import ORGANIZER_HEADERS as AUTH
from tests.support import ORGANIZER_TOKEN as TOKEN

T1 = datetime(2026, 11, 24, 9, 0, 0, tzinfo=UTC)
T2 = datetime(2026, 11, 25, 17, 30, 0, tzinfo=UTC)


def bundle_of(session, slug: str, *, now: datetime = T1) -> bytes:
    out = io.BytesIO()
    service.write_export(session, slug, service.ExportSpec("bundle"), out, now=now)
    return out.getvalue()


def judged_by_assessors(db_session, session_factory, *, scale: str) -> Campaign:
    """A partly judged campaign: imported judgments of 30 % of the pool on both scales, three
    assessors who judged through the judging API (one revised a judgment, one gave a pair
    back, one was revoked), and the planner's confidence curve."""
    campaign = make_campaign(
        db_session, share=0.3, scale=scale, judgments_per_pair=2, estimator="joint"
    ).campaign
    tokens = []
    for name in ("Ann", "Bo", "Cy"):
        assessor, token = campaigns.invite_assessor(db_session, campaign, name)
        assessor.consented_at = utcnow()
        tokens.append(token)
    db_session.commit()
    # the planner runs between rounds (each plan builds the engine: a test's time)
    client = TestClient(create_app(Settings(), session_factory=session_factory))
    planner = client.app.state.planner  # type: ignore[attr-defined]
    judged = []
    for round_ in range(3):
        planner.run_once(force=True)
        for n, token in enumerate(tokens):
            pair = client.get(f"/api/a/{token}/next").json()["pair"]
            response = client.post(
                f"/api/a/{token}/judgments",
                json={
                    "lease_id": pair["lease_id"],
                    "broad": (n + round_) % 3,
                    "fine": 10.0 + 17.5 * n + round_,
                    "client_id": f"c-{round_}-{n}",
                    "query_listen_ms": 1000 * (n + 1),
                    "candidate_listen_ms": 1500 + round_,
                },
            )
            assert response.status_code == 201, response.text
            judged.append((token, response.json()["judgment"]["id"]))
    token, judgment_id = judged[0]
    revised = client.put(f"/api/a/{token}/judgments/{judgment_id}", json={"broad": 2, "fine": 99.5})
    assert revised.status_code == 200, revised.text
    assert client.get(f"/api/a/{tokens[1]}/next").json()["pair"]
    assert client.post(f"/api/a/{tokens[1]}/pause").status_code == 204
    db_session.expire_all()
    third = db_session.scalars(
        select(Assessor).where(Assessor.campaign_id == campaign.id).order_by(Assessor.id)
    ).all()[2]
    campaigns.revoke_link(db_session, third)
    db_session.commit()
    planner.run_once(force=True)
    db_session.expire_all()
    return db_session.get(Campaign, campaign.id)


def drop(session, campaign: Campaign) -> None:
    session.execute(delete(Campaign).where(Campaign.id == campaign.id))
    session.commit()
    session.expire_all()


def members(data: bytes) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(data))
    return {name: archive.read(name) for name in archive.namelist()}


@pytest.mark.parametrize("scale", ["fine", "broad"])
def test_export_import_export_gives_the_same_bytes(db_session, session_factory, scale) -> None:
    campaign = judged_by_assessors(db_session, session_factory, scale=scale)
    slug = campaign.slug
    first = bundle_of(db_session, slug)
    manifest = json.loads(members(first)["manifest.json"])
    counts = manifest["counts"]
    assert manifest["format_version"] == 2
    assert counts["judgment_rows"] > counts["judged_pairs"] > 0
    assert manifest["complete"] is False
    state = members(first)
    assert state["state/leases.csv"].count(b"\n") == 1 + 10  # 9 judged, 1 given back
    assert b",1," in state["state/judgments.csv"]  # the revision
    assert state["state/trajectory.csv"].count(b"\n") >= 2
    drawn = state["state/audit.csv"].count(b"\n") - 1  # the joint estimator's audit
    assert drawn == counts["judged_pairs"] // AUDIT_EVERY + 1
    assessors = state["state/assessors.csv"].decode().splitlines()
    assert [line.split(",")[0] for line in assessors] == ["assessor", "A1", "A2", "A3"]
    assert assessors[3].split(",")[2]  # A3 revoked
    drop(db_session, campaign)

    bundle = open_bundle(io.BytesIO(first), "b.zip")
    # the bundle holds no audio: the same clips are given again, so the same pairs can be
    # played (the results say how many)
    restored, report = restore_campaign(db_session, bundle, audio_dir=TEST_AUDIO / "synthetic-5")
    db_session.commit()
    assert report.slug == slug
    assert report.n_judgments == counts["judgment_rows"]
    assert report.n_assessors == 3
    assert report.n_leases == 10

    assert (
        db_session.scalar(
            select(func.count()).where(Pair.campaign_id == restored.id, Pair.audit.is_(True))
        )
        == drawn
    )
    # the same bytes, the zip's member times included, when made at the same moment
    assert bundle_of(db_session, slug) == first
    # made later: only the manifest's created_at (and the zip's own member times) differ
    later = members(bundle_of(db_session, slug, now=T2))
    earlier = members(first)
    assert sorted(later) == sorted(earlier)
    for name in earlier:
        if name != "manifest.json":
            assert later[name] == earlier[name], name
    a, b = json.loads(earlier["manifest.json"]), json.loads(later["manifest.json"])
    assert (a.pop("created_at"), b.pop("created_at")) == (T1.isoformat(), T2.isoformat())
    assert a == b

    # the pool's counters are those the judging path keeps
    pairs = db_session.execute(
        select(Pair.query_id, Pair.document_id, Pair.judged, Pair.leased).where(
            Pair.campaign_id == restored.id
        )
    ).all()
    per_pair = dict(
        db_session.execute(
            select(Judgment.query_id.concat("-").concat(Judgment.document_id), func.count())
            .where(Judgment.campaign_id == restored.id)
            .group_by(Judgment.query_id, Judgment.document_id)
        ).all()
    )
    for q, d, judged, leased in pairs:
        assert judged == per_pair.get(f"{q}-{d}", 0)
        assert leased == 0
    assert (
        db_session.scalar(
            select(func.count()).where(Lease.campaign_id == restored.id, Lease.state == "released")
        )
        == 1
    )


def test_old_links_do_not_open_the_restored_campaign(db_session) -> None:
    campaign = make_campaign(db_session, share=0.3).campaign
    for name in ("Ann", "Bo", "Cy"):
        campaigns.invite_assessor(db_session, campaign, name, f"{name.lower()}@example.org")
    hashes = set(
        db_session.scalars(select(Assessor.token_hash).where(Assessor.campaign_id == campaign.id))
    )
    data = bundle_of(db_session, campaign.slug)
    restored, _ = restore_campaign(
        db_session, open_bundle(io.BytesIO(data), "b.zip"), slug="restored"
    )
    rows = db_session.execute(
        select(Assessor.name, Assessor.token_hash, Assessor.consented_at, Assessor.email).where(
            Assessor.campaign_id == restored.id
        )
    ).all()
    assert [r.name for r in rows] == ["A1", "A2", "A3"]  # pseudonyms, never names
    assert not hashes & {r.token_hash for r in rows}
    assert all(r.consented_at is None and r.email is None for r in rows)
    # the slug was given: the settings are the exported campaign's
    assert (restored.scale, restored.k, restored.target) == (
        campaign.scale,
        campaign.k,
        campaign.target,
    )
    with pytest.raises(InvalidInput, match="slug 'restored' is already taken"):
        restore_campaign(db_session, open_bundle(io.BytesIO(data), "b.zip"), slug="restored")


# ------------------------------------------------------------------ refused bundles


def rezip(data: bytes, change: dict[str, bytes | None], *, fix_manifest: bool = False) -> bytes:
    """The bundle with members replaced (None: removed); with ``fix_manifest``, the
    manifest's checksums follow, as a forger's would."""
    files = members(data)
    for name, content in change.items():
        if content is None:
            files.pop(name)
        else:
            files[name] = content
    if fix_manifest:
        manifest = json.loads(files["manifest.json"])
        for entry in manifest["files"]:
            content = files[entry["name"]]
            entry["sha256"] = hashlib.sha256(content).hexdigest()
            entry["bytes"] = len(content)
        files["manifest.json"] = json.dumps(manifest).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return out.getvalue()


@pytest.fixture
def exported(db_session, session_factory) -> bytes:
    """The bundle of a campaign half judged, with the joint estimator's audit drawn."""
    campaign = make_campaign(db_session, share=0.5, estimator="joint").campaign
    db_session.commit()
    Planner(session_factory).run_once()
    return bundle_of(db_session, campaign.slug)


def refused(data: bytes) -> str:
    with pytest.raises(InputError) as caught:
        open_bundle(io.BytesIO(data), "b.zip")
    return str(caught.value)


def test_a_changed_or_foreign_zip_is_refused(exported) -> None:
    lists = members(exported)["state/lists.csv"]
    tampered = rezip(exported, {"state/lists.csv": lists.replace(b",1,", b",9,", 1)})
    assert refused(tampered) == (
        "b.zip/state/lists.csv: its SHA-256 is not the one manifest.json gives: the file was "
        "changed or damaged after the bundle was made"
    )
    assert "not listed in manifest.json" in refused(rezip(exported, {"extra.txt": b"x"}))
    assert refused(rezip(exported, {"state/leases.csv": None})).startswith(
        "b.zip: state/leases.csv is missing"
    )
    assert refused(b"PK not really") == (
        "b.zip: not a zip file: an export bundle is the zip 'mtcjudge export SLUG --what "
        "bundle' writes"
    )
    foreign = io.BytesIO()
    with zipfile.ZipFile(foreign, "w") as archive:
        archive.writestr("manifest.json", '{"format": "something else"}')
    assert "not an mtcjudge bundle" in refused(foreign.getvalue())
    manifest = json.loads(members(exported)["manifest.json"])
    manifest["format_version"] = 1
    old = rezip(exported, {"manifest.json": json.dumps(manifest).encode()})
    assert "format_version is 1" in refused(old)
    assert "export the campaign again" in refused(old)
    assert "not JSON" in refused(rezip(exported, {"manifest.json": b"{"}))


def test_a_bundle_from_before_the_audit_was_stored_restores_without_one(
    db_session, exported
) -> None:
    """``state/audit.csv`` came later than format 2: a bundle without it restores, with no
    pair marked as drawn (the campaign's audit draws afresh)."""
    assert members(exported)["state/audit.csv"].count(b"\n") > 1  # it had draws
    manifest = json.loads(members(exported)["manifest.json"])
    manifest["files"] = [e for e in manifest["files"] if e["name"] != "state/audit.csv"]
    older = rezip(
        exported, {"state/audit.csv": None, "manifest.json": json.dumps(manifest).encode()}
    )
    restored, _ = restore_campaign(
        db_session, open_bundle(io.BytesIO(older), "b.zip"), slug="restored"
    )
    assert db_session.scalar(select(func.count()).where(Pair.campaign_id == restored.id)) > 0
    assert not db_session.scalar(
        select(func.count()).where(Pair.campaign_id == restored.id, Pair.audit.is_(True))
    )
    # a pair outside the pool is refused by line and field
    bad = rezip(
        exported,
        {"state/audit.csv": members(exported)["state/audit.csv"] + b"nosuchquery,x\n"},
        fix_manifest=True,
    )
    with pytest.raises(InputError, match=r"state/audit.csv:\d+: query: "):
        restore_campaign(db_session, open_bundle(io.BytesIO(bad), "b.zip"), slug="other")


def test_a_bad_row_names_its_member_line_and_field_and_nothing_is_kept(
    db_session, exported
) -> None:
    judgments = members(exported)["state/judgments.csv"].decode().splitlines()
    fields = judgments[3].split(",")
    fields[5] = "150.0"  # fine
    judgments[3] = ",".join(fields)
    forged = rezip(
        exported,
        {"state/judgments.csv": ("\n".join(judgments) + "\n").encode()},
        fix_manifest=True,
    )
    before = db_session.scalar(select(func.count()).select_from(Campaign))
    with pytest.raises(InputError) as caught:
        with db_session.begin_nested():
            restore_campaign(db_session, open_bundle(io.BytesIO(forged), "b.zip"), slug="x")
    assert str(caught.value) == (
        "b.zip/state/judgments.csv:4: fine: must be a number from 0 to 100, found '150.0'"
    )
    assert caught.value.field == "fine"
    assert db_session.scalar(select(func.count()).select_from(Campaign)) == before
    lists = members(exported)["state/lists.csv"].decode().replace(",D", ",NOPE", 1)
    forged = rezip(exported, {"state/lists.csv": lists.encode()}, fix_manifest=True)
    with pytest.raises(
        InputError, match=r"state/lists.csv:2: query: 'NOPE06' is not a query of the bundle"
    ):
        with db_session.begin_nested():
            restore_campaign(db_session, open_bundle(io.BytesIO(forged), "b.zip"), slug="x")


# ------------------------------------------------------------------ API


# ------------------------------------------------------------------ command line


def test_cli_imports_a_bundle_and_refuses_a_changed_one(empty_database_url, tmp_path) -> None:
    from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope, upgrade_database

    url = empty_database_url
    upgrade_database(url)
    engine = make_database_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            campaign = make_campaign(session, share=0.5).campaign
            campaigns.invite_assessor(session, campaign, "Ann")
            slug = campaign.slug
    finally:
        engine.dispose()
    path = tmp_path / "b.zip"
    status, _, err = run("export", slug, "--what", "bundle", "--out", str(path),
                         "--database-url", url)  # fmt: skip
    assert status == 0, err
    status, _, err = run("campaign", "import-bundle", str(path), "--database-url", url)
    assert status == 2
    assert err == (
        f"mtcjudge: error: slug '{slug}' is already taken by another campaign: give the "
        "restored campaign another one (--slug)\n"
    )
    status, out, err = run("campaign", "import-bundle", str(path), "--slug", "copy",
                           "--database-url", url)  # fmt: skip
    assert status == 0, err
    assert out.startswith(f"created campaign copy (open) from {path}: Exported\n")
    assert "assessors           1: A1..A1, without working links" in out
    # restored without its audio folder: no pair can be played, and the output says so
    assert "audio               none (no --audio directory)" in out
    assert "cannot be judged    none of the" in out
    status, out, err = run("assessor", "relink", "copy", "--name", "A1",
                           "--database-url", url)  # fmt: skip
    assert status == 0, err
    copied = tmp_path / "copy.zip"
    status, _, err = run("export", "copy", "--what", "bundle", "--out", str(copied),
                         "--database-url", url)  # fmt: skip
    assert status == 0, err
    a, b = members(path.read_bytes()), members(copied.read_bytes())
    # the same files but for the slug, which the results and the manifest name
    assert a["state/judgments.csv"] == b["state/judgments.csv"]
    assert a["judgments.csv"] == b["judgments.csv"]
    assert a["qrels-fine.txt"] == b["qrels-fine.txt"]
    assert a["estimates-broad.csv"] == b["estimates-broad.csv"]

    damaged = tmp_path / "damaged.zip"
    damaged.write_bytes(
        rezip(path.read_bytes(), {"judgments.csv": a["judgments.csv"].replace(b"4", b"5")})
    )
    status, _, err = run("campaign", "import-bundle", str(damaged), "--slug", "other",
                         "--database-url", url)  # fmt: skip
    assert status == 2
    assert err == (
        f"mtcjudge: error: {damaged}/judgments.csv: its SHA-256 is not the one manifest.json "
        "gives: the file was changed or damaged after the bundle was made\n"
    )
    status, out, _ = run("campaign", "list", "--database-url", url)
    assert "other" not in out


@pytest.fixture
def organizer_client(session_factory):
    return TestClient(create_app(Settings(organizer_token=TOKEN), session_factory=session_factory))


def test_api_imports_a_bundle_in_one_transaction(db_session, organizer_client, exported) -> None:
    url = "/api/campaigns/import-bundle"
    zipped = {**AUTH, "Content-Type": "application/zip"}
    assert organizer_client.post(url, content=exported).status_code == 401
    response = organizer_client.post(
        url, content=exported, headers=zipped, params={"slug": "from-api"}
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["slug"] == "from-api"
    assert body["source_slug"] == "exported"
    assert (
        body["judgments"]
        == json.loads(members(exported)["manifest.json"])["counts"]["judgment_rows"]
    )
    again = organizer_client.post(
        url, content=exported, headers=zipped, params={"slug": "from-api"}
    )
    assert again.status_code == 400
    assert again.json()["error"] == "invalid_input"
    assert "already taken" in again.json()["detail"]
    lists = members(exported)["state/lists.csv"]
    tampered = rezip(exported, {"state/lists.csv": lists + b"S01,D06,99,D07\n"})
    response = organizer_client.post(
        url, content=tampered, headers=zipped, params={"slug": "tampered", "name": "t.zip"}
    )
    assert response.status_code == 400
    assert response.json()["detail"].startswith("t.zip/state/lists.csv: its SHA-256 is not")
    response = organizer_client.post(url, content=b"nonsense", headers=zipped)
    assert response.status_code == 400
    assert "not a zip file" in response.json()["detail"]
    response = organizer_client.post(
        url, content=exported, headers=zipped, params={"slug": "Not A Slug"}
    )
    assert response.status_code == 422
    slugs = set(db_session.scalars(select(Campaign.slug)))
    assert "from-api" in slugs
    assert "tampered" not in slugs
