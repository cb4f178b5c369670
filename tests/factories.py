"""Builders of test data shared by every test folder: campaigns, collections, assessors.

Conftest files hold fixtures only; a test (or a fixture) that needs a campaign builds it with
one of these.

Every campaign they make has the listening rule and the hidden quality trials OFF
(``listen_seconds=0``, ``quality_rate=0``), unlike a new campaign (the model's defaults, 5 s
and 0.1): the tests of other features judge without playing clips and count every hand-out
as a pool pair. The tests of the rule and of the trials opt in with ``listen_seconds=...``
and ``quality_rate=...``.

- :func:`build_campaign`: a small campaign written directly with the ORM (3 systems x 2
  queries x k = 3 by default, a short WAV clip per document in :data:`TEST_AUDIO`), for the
  judging, planning and results tests;
- :func:`make_campaign`: a synthetic collection (5 systems, 6 queries, k = 5) through the
  campaign service, with imported FINE and BROAD judgments of a share of the pool, for the
  exports and reports;
- :func:`add_assessors`: assessors who judged the same pairs, on top of :func:`make_campaign`;
- :class:`PlanningClient`: a test client whose app plans before every request;
- :func:`seed_judged_campaign`, :func:`seed_open_campaign`: the same committed to a database
  URL (the first judged, the second open with consented assessors and audio), for tests
  that run the command line or real server processes on a database of their own.
- :func:`partly_judged_campaign`: :func:`make_campaign` under any estimator with a random
  share of its pool judged (some pairs by two assessors who disagree), planned, and the
  audit's pairs judged with a noisy hand, for the exports that rebuild the results.

Only pairs whose two clips exist and can be read are handed out, so a campaign meant to be
judged gets real (short) audio files: :func:`write_clips`.
"""

from __future__ import annotations

import atexit
import secrets
import shutil
import tempfile
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from fastapi.testclient import TestClient
from sqlalchemy import insert, select
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.campaigns.creation import create_campaign
from mtcjudge.campaigns.service import invite_assessor
from mtcjudge.campaigns.spec import CampaignSpec
from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.exports.repository import recount_pairs
from mtcjudge.ingest.formats import Judgments, Metadata, Runs
from mtcjudge.judging import service as judging
from mtcjudge.models import (
    Assessor,
    Campaign,
    Document,
    Judgment,
    Lease,
    Pair,
    Query,
    Result,
    System,
    utcnow,
)
from mtcjudge.mtc.synthetic import SyntheticCollection, generate
from mtcjudge.planner.service import plan_in_session
from mtcjudge.pool.service import ensure_pool
from mtcjudge.security import hash_token
from tests.support import write_tone

#: a runs file (TSV) for the API and the forms: two systems, one query, two clips
TINY_RUNS = "system\tquery\tdoc\nS1\tq1\td1\nS1\tq1\td2\nS2\tq1\td2\nS2\tq1\td1\n"


def trec_run(system: str, shift: int, *, backwards: bool = False) -> bytes:
    """A TREC run file of ``system`` for the new-campaign form: queries q0..q3, four documents
    each out of d0..d11 (``shift`` moves them), scores decreasing with rank, or increasing (a
    score that is a distance) with ``backwards``."""
    lines = [
        f"q{q} Q0 d{(q * 3 + shift + r) % 12} {r + 1} {(r + 1 if backwards else 10 - r)}.0 {system}"
        for q in range(4)
        for r in range(4)
    ]
    return ("\n".join(lines) + "\n").encode()


#: this process's folder of test clips (removed when the process ends)
TEST_AUDIO = Path(tempfile.mkdtemp(prefix="mtcjudge-test-audio-"))
atexit.register(shutil.rmtree, TEST_AUDIO, True)


def write_clips(directory: Path, doc_ids: Iterable[str], seconds: float = 1.0) -> Path:
    """A short WAV clip ``<doc>.wav`` in ``directory`` for each document that has none yet."""
    directory.mkdir(parents=True, exist_ok=True)
    for doc in doc_ids:
        path = directory / f"{doc}.wav"
        if not path.exists():
            write_tone(path, 440.0, seconds=seconds, rate=8000)
    return directory


def clips_for(synthetic: SyntheticCollection, directory: Path) -> Path:
    """:func:`write_clips` for every document and query of a synthetic collection."""
    docs = {
        d for lists in synthetic.runs.values() for per_query in lists.values() for d in per_query
    }
    return write_clips(directory, docs | set(synthetic.queries))


# ---------------------------------------------------------------- a small campaign, by the ORM
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
    audio_dir: Path | None = TEST_AUDIO,
    consented: bool = True,
    **settings: object,
) -> CampaignFixture:
    """Systems S0.. retrieve overlapping lists of clips; every clip has artist and genre and,
    unless ``audio_dir`` is None, a readable one-second WAV file there (without audio no
    pair can be played)."""
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
        # the rule and the trials are off unless the test asks (see the module's docstring)
        "listen_seconds": 0.0,
        "quality_rate": 0.0,
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
                write_clips(audio_dir, [ext])
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


# ---------------------------------------------------------------- a synthetic, judged campaign
@dataclass
class Judged:
    campaign: Campaign
    synthetic: SyntheticCollection
    judged: set[tuple[str, str]]


def make_campaign(
    session,
    *,
    share: float = 1.0,
    seed: int = 5,
    estimator: str = "uniform",
    listen_seconds: float = 0.0,
    quality_rate: float = 0.0,
    twin: str | None = None,
    **settings,
) -> Judged:
    """The campaign, with a clip for every document and imported FINE and BROAD judgments of
    the first ``share`` of the pool pairs (in sorted order); the listening rule and the trials
    off unless asked. ``twin``: the name of a sixth system whose run is S02's (a tie)."""
    synthetic = generate(5, 6, 5, n_genres=3, docs_per_genre=30, n_artists=15, seed=seed)
    if twin is not None:
        synthetic.systems.append(twin)
        synthetic.runs[twin] = {q: list(docs) for q, docs in synthetic.runs["S02"].items()}
        synthetic.teams[twin] = synthetic.teams["S02"]
    pairs = sorted(synthetic.fine)
    judged = set(pairs[: round(share * len(pairs))])
    fine = Judgments({p: [float(synthetic.fine[p])] for p in judged}, "tsv") if judged else None
    broad = Judgments({p: [float(synthetic.broad[p])] for p in judged}, "tsv") if judged else None
    campaign, _ = create_campaign(
        session,
        CampaignSpec(name="Exported", status="open", estimator=estimator, **settings),
        Runs(synthetic.runs, "tsv"),
        Metadata(dict(synthetic.artist), dict(synthetic.genre)),
        judgments_fine=fine,
        judgments_broad=broad,
        audio_dir=clips_for(synthetic, TEST_AUDIO / f"synthetic-{seed}"),
    )
    campaign.listen_seconds = listen_seconds
    campaign.quality_rate = quality_rate
    session.flush()
    return Judged(campaign, synthetic, judged)


# ---------------------------------------------------------------- assessors who judged
#: (broad, fine) given by A1 and A2 to the first pool pairs (by query and document id)
ASSESSED = [
    ((2, 90.0), (2, 80.0)),
    ((1, 50.0), (2, 70.0)),
    ((0, 10.0), (0, 0.0)),
    ((1, 40.0), (0, 30.0)),
]
#: A1 took 10 s per judgment and listened 6 s + 8 s; A2 took 20 s and listened 9 s + 11 s
SECONDS = {"A1": 10.0, "A2": 20.0}
LISTEN_MS = {"A1": (6000, 8000), "A2": (9000, 11000)}


@dataclass
class Assessed:
    judged: Judged
    #: the external (query, document) ids of the assessed pairs, in ASSESSED's order
    pairs: list[tuple[str, str]]


def add_assessors(session, judged: Judged) -> Assessed:
    """Invite A1 ("Ada"), A2 ("Bo") and A3 ("Cy", who judges nothing); A1 and A2 judge the
    first pool pairs with leases handed out SECONDS before each judgment."""
    campaign = judged.campaign
    people = [
        Assessor(campaign_id=campaign.id, name=name, token_hash=name[0] * 64)
        for name in ("Ada", "Bo", "Cy")
    ]
    session.add_all(people)
    session.flush()
    external = dict(session.execute(select(Document.id, Document.external_id)).all())
    query_doc = dict(session.execute(select(Query.id, Query.document_id)).all())
    pool = session.execute(
        select(Pair.id, Pair.query_id, Pair.document_id).where(Pair.campaign_id == campaign.id)
    ).all()
    rows = sorted(pool, key=lambda r: (external[query_doc[r.query_id]], external[r.document_id]))
    pairs = []
    now = utcnow()
    for (pair_id, query_id, document_id), given in zip(rows, ASSESSED, strict=False):
        pairs.append((external[query_doc[query_id]], external[document_id]))
        for assessor, pseudonym, (broad, fine) in zip(people, ("A1", "A2"), given, strict=False):
            leased = now - timedelta(seconds=SECONDS[pseudonym])
            lease = Lease(
                campaign_id=campaign.id,
                pair_id=pair_id,
                query_id=query_id,
                document_id=document_id,
                assessor_id=assessor.id,
                state="done",
                leased_at=leased,
                expires_at=now + timedelta(minutes=5),
            )
            session.add(lease)
            session.flush()
            query_ms, candidate_ms = LISTEN_MS[pseudonym]
            session.add(
                Judgment(
                    campaign_id=campaign.id,
                    query_id=query_id,
                    document_id=document_id,
                    assessor_id=assessor.id,
                    broad=broad,
                    fine=fine,
                    lease_id=lease.id,
                    created_at=now,
                    updated_at=now,
                    query_listen_ms=query_ms,
                    candidate_listen_ms=candidate_ms,
                )
            )
    session.flush()
    return Assessed(judged, pairs)


# ---------------------------------------------------------------- for server processes
@dataclass
class SeededCampaign:
    id: int
    slug: str
    tokens: list[str]


def judge_in_turn(
    factory: sessionmaker[Session], token: str, n: int, *, broad: int, fine: float
) -> None:
    """The assessor of ``token`` judges ``n`` pairs through the judging service, each hand-out
    and its judgment in a transaction of their own, as a volunteer's requests are."""
    for _ in range(n):
        with session_scope(factory) as session:
            lease = judging.next_pair(session, token).lease
            assert lease is not None
            judging.submit_judgment(
                session,
                token,
                lease_id=lease.id,
                broad=broad,
                fine=fine,
                client_id=str(uuid.uuid4()),
            )


def seed_judged_campaign(url: str, *, share: float) -> str:
    """Migrate the database at ``url`` and commit :func:`make_campaign` (imported judgments of
    ``share`` of the pool) there; returns the campaign's slug."""
    upgrade_database(url)
    engine = make_database_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            return make_campaign(session, share=share).campaign.slug
    finally:
        engine.dispose()


def seed_open_campaign(
    url: str,
    *,
    name: str,
    seed: int,
    n_assessors: int,
    listen_seconds: float = 0.0,
    quality_rate: float = 0.0,
) -> SeededCampaign:
    """Migrate the database at ``url`` and commit an open campaign over a synthetic collection
    (5 systems, 8 queries, k = 4) with a clip for every document (every pair can be handed
    out), with ``n_assessors`` consented assessors V0, V1, ...; the listening rule and the
    trials off unless asked."""
    upgrade_database(url)
    synthetic = generate(5, 8, 4, n_genres=3, docs_per_genre=30, n_artists=15, seed=seed)
    docs = {
        d for lists in synthetic.runs.values() for per_query in lists.values() for d in per_query
    }
    audio = write_clips(TEST_AUDIO / f"seed-{seed}", docs | set(synthetic.queries))
    engine = make_database_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            campaign, _ = create_campaign(
                session,
                CampaignSpec(name=name, target=1.0, status="open"),
                Runs(synthetic.runs, "tsv"),
                Metadata(dict(synthetic.artist), dict(synthetic.genre)),
                audio_dir=audio,
            )
            campaign.listen_seconds = listen_seconds
            campaign.quality_rate = quality_rate
            tokens = []
            for i in range(n_assessors):
                assessor, token = invite_assessor(session, campaign, f"V{i}")
                assessor.consented_at = utcnow()
                tokens.append(token)
            return SeededCampaign(campaign.id, campaign.slug, tokens)
    finally:
        engine.dispose()


# ---------------------------------------------------------------- partly judged, any estimator
def _pool_by_ids(session, campaign: Campaign) -> list[tuple[str, str, int, int]]:
    """(query, document, query_id, document_id) of every pool pair, by external ids."""
    external = dict(
        session.execute(
            select(Document.id, Document.external_id).where(Document.campaign_id == campaign.id)
        ).all()
    )
    query_doc = dict(session.execute(select(Query.id, Query.document_id)).all())
    rows = session.execute(
        select(Pair.query_id, Pair.document_id).where(Pair.campaign_id == campaign.id)
    ).all()
    return sorted((external[query_doc[q]], external[d], q, d) for q, d in rows)


def _insert_judgments(session, campaign: Campaign, rows: list[dict[str, Any]]) -> None:
    now = utcnow()
    session.execute(
        insert(Judgment),
        [
            {
                "campaign_id": campaign.id,
                "revision": 0,
                "created_at": now,
                "updated_at": now,
                **row,
            }
            for row in rows
        ],
    )
    recount_pairs(session, campaign.id)
    session.flush()


def partly_judged_campaign(session, estimator: str, seed: int = 11) -> Judged:
    """The exports' synthetic campaign under ``estimator``: a random 35 % of its pool judged
    (imported), eight pairs of them by two assessors who disagree (a fractional FINE mean,
    BROAD 1 and 2), planned (``joint`` draws its audit), then the audit's pairs judged with
    a noisy hand (so that ``joint`` learns a variance factor above 1) and planned again:
    the results document of the campaign's measure and scale is the planner's."""
    made = make_campaign(session, share=0.0)
    campaign = made.campaign
    campaign.estimator = estimator  # a stored campaign may hold any estimator
    session.flush()
    truth_fine, truth_broad = made.synthetic.fine, made.synthetic.broad
    pairs = _pool_by_ids(session, campaign)
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(pairs), size=round(0.35 * len(pairs)), replace=False)
    people = [
        Assessor(campaign_id=campaign.id, name=name, token_hash=f"{campaign.id:08x}{i:056x}")
        for i, name in enumerate(("Ann", "Ben"))
    ]
    session.add_all(people)
    session.flush()
    rows = []
    for n, i in enumerate(chosen.tolist()):
        q, d, query_id, document_id = pairs[i]
        key = {"query_id": query_id, "document_id": document_id}
        fine, broad = float(truth_fine[q, d]), int(truth_broad[q, d])
        if n < 8:  # two assessors who disagree
            rows.append({**key, "assessor_id": people[0].id, "fine": fine, "broad": 1})
            rows.append(
                {**key, "assessor_id": people[1].id, "fine": min(fine + 3.0, 100.0), "broad": 2}
            )
        else:
            rows.append({**key, "fine": fine, "broad": broad, "source": "import"})
    _insert_judgments(session, campaign, rows)
    plan_in_session(session, campaign)
    drawn = set(
        session.execute(
            select(Pair.query_id, Pair.document_id).where(
                Pair.campaign_id == campaign.id, Pair.audit.is_(True), Pair.judged == 0
            )
        ).all()
    )
    noisy = []
    for q, d, query_id, document_id in pairs:
        if (query_id, document_id) in drawn:
            value = float(np.clip(truth_fine[q, d] + rng.choice([-45.0, 45.0]), 0, 100))
            noisy.append(
                {
                    "query_id": query_id,
                    "document_id": document_id,
                    "fine": value,
                    "broad": 2 - int(truth_broad[q, d]),
                    "source": "import",
                }
            )
    if noisy:
        _insert_judgments(session, campaign, noisy)
    plan_in_session(session, campaign)
    judged = {pairs[i][:2] for i in chosen.tolist()}
    return Judged(campaign, made.synthetic, judged)
