"""A small campaign built directly with the ORM, and apps bound to the test's transaction."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.config import Settings
from mtcjudge.main import create_app
from mtcjudge.models import Assessor, Campaign, Document, Query, Result, System, utcnow
from mtcjudge.planner.pool import ensure_pool
from mtcjudge.security import hash_token


@dataclass
class CampaignFixture:
    campaign: Campaign
    systems: list[System]
    queries: list[Query]
    documents: dict[str, Document]
    tokens: list[str] = field(default_factory=list)

    @property
    def external_ids(self) -> set[str]:
        return set(self.documents)


def build_campaign(
    session: Session,
    *,
    n_systems: int = 3,
    n_queries: int = 2,
    k: int = 3,
    n_assessors: int = 2,
    audio_dir: Path | None = Path("/srv/mtcjudge-test-audio"),
    consented: bool = True,
    **settings: object,
) -> CampaignFixture:
    """Systems S0.. retrieve overlapping lists of clips; every clip has artist and genre."""
    values: dict[str, object] = {
        "slug": f"c-{secrets.token_hex(4)}",
        "name": "Test campaign",
        "status": "open",
        "scale": "fine",
        "k": k,
        "estimator": "uniform",
        "policy": "confidence",
        "target": 0.95,
        "lease_minutes": 10,
        "judgments_per_pair": 1,
    }
    values.update(settings)
    campaign = Campaign(**values)
    session.add(campaign)
    session.flush()
    documents: dict[str, Document] = {}

    def doc(ext: str, genre: str) -> Document:
        if ext not in documents:
            d = Document(
                campaign_id=campaign.id, external_id=ext, artist=f"artist-{ext[-1]}", genre=genre
            )
            if audio_dir is not None:
                d.audio_path = str(audio_dir / f"{ext}.wav")
                d.audio_type = "audio/wav"
                d.duration_seconds = 1.0
            session.add(d)
            documents[ext] = d
        return documents[ext]

    queries = []
    for qi in range(n_queries):
        qdoc = doc(f"query{qi}", f"g{qi % 2}")
        session.flush()
        query = Query(campaign_id=campaign.id, document_id=qdoc.id)
        session.add(query)
        queries.append(query)
    systems = [
        System(campaign_id=campaign.id, name=f"SYS-{i}", team=f"T{i // 2}")
        for i in range(n_systems)
    ]
    session.add_all(systems)
    session.flush()
    for si, system in enumerate(systems):
        for qi, query in enumerate(queries):
            for rank in range(1, k + 1):
                d = doc(f"cand{qi}-{(si + rank) % (k + 2)}", f"g{(si + rank) % 2}")
                session.flush()
                session.add(
                    Result(
                        campaign_id=campaign.id,
                        system_id=system.id,
                        query_id=query.id,
                        rank=rank,
                        document_id=d.id,
                    )
                )
    tokens = []
    for i in range(n_assessors):
        token = secrets.token_urlsafe(16)
        session.add(
            Assessor(
                campaign_id=campaign.id,
                name=f"Volunteer {i + 1}",
                token_hash=hash_token(token),
                consented_at=utcnow() if consented else None,
            )
        )
        tokens.append(token)
    session.flush()
    ensure_pool(session, campaign)
    return CampaignFixture(campaign, systems, queries, documents, tokens)


class PlanningClient(TestClient):
    """A client whose app plans before every request, as a planner with no lag would: the
    API tests see exactly the pairs the MTC loop picks after each judgment."""

    def request(self, method: str, url: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        self.plan()
        return super().request(method, url, *args, **kwargs)

    def plan(self) -> None:
        self.app.state.planner.run_once(force=True)  # type: ignore[attr-defined]


@pytest.fixture
def make_client(session_factory: sessionmaker[Session]):
    """Build a client; each call is a separate app (a separate process, with its planner)."""

    def make() -> PlanningClient:
        return PlanningClient(create_app(Settings(), session_factory=session_factory))

    return make


@pytest.fixture
def client(make_client) -> TestClient:
    return make_client()
