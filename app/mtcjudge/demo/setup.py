"""The demo campaign: a small synthetic collection with real clips, ready for two volunteers.

:func:`ensure_demo` is idempotent: the first run creates the campaign ``demo`` and writes its
audio; later runs reuse the campaign and its assessors and only write the clips that are
missing (and point the documents at this data directory, should it have moved).
"""

from __future__ import annotations

import os
import secrets
import shlex
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select, update
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from mtcjudge import audit
from mtcjudge.assessors import repository as assessors_repository
from mtcjudge.campaigns import repository
from mtcjudge.campaigns.changes import record_campaign_created
from mtcjudge.campaigns.creation import create_campaign
from mtcjudge.campaigns.service import assessor_link, invite_assessor, reissue_link
from mtcjudge.campaigns.spec import CampaignSpec
from mtcjudge.config import Settings
from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.demo.audio import artist_style, genre_style, render_clip, write_wav
from mtcjudge.errors import InvalidInput
from mtcjudge.ingest.formats import Metadata, Runs
from mtcjudge.models import Campaign, Document
from mtcjudge.mtc.factory import DEFAULT_ESTIMATOR
from mtcjudge.mtc.synthetic import SyntheticCollection, generate
from mtcjudge.organizers import repository as organizers_repository
from mtcjudge.organizers import service as organizers

__all__ = ["DEMO_ORGANIZER", "DEMO_SLUG", "DemoInfo", "demo_collection", "ensure_demo"]

DEMO_SLUG = "demo"
#: the demo's organizer account; its password is new at every run, as the volunteers' links
DEMO_ORGANIZER = "organizer"
_DEMO_ACTOR = audit.Actor("mtcjudge demo")
DEMO_SEED = 2011
ASSESSOR_NAMES = ("Volunteer 1", "Volunteer 2")
CLIP_SECONDS = 8.0
SAMPLE_RATE = 22050

# 6 systems by 3 teams, 10 queries, top 5, over 4 genres (one instrument each) x 25 clips by
# 12 artists: about 80 clips to listen to and 175 pairs, artists with several clips each.
_SIZES = {"n_systems": 6, "n_queries": 10, "k": 5}
_COLLECTION = {"n_genres": 4, "docs_per_genre": 25, "n_artists": 12, "n_teams": 3}

_SPEC = CampaignSpec(
    name="Demo: synthetic music similarity",
    slug=DEMO_SLUG,
    description=(
        "Six systems from three teams answered ten queries with five clips each. The clips "
        "are synthesised: a genre is an instrument, a key and a tempo; an artist is a "
        "melody. Listen to the query, then the candidate, and say how similar they sound."
    ),
    scale="fine",
    k=_SIZES["k"],
    estimator=DEFAULT_ESTIMATOR,
    policy="confidence",
    target=0.95,
    seed=DEMO_SEED,
    status="open",
)


@dataclass(frozen=True)
class DemoInfo:
    """What the organizer needs to run the demo.

    Attributes
    ----------
    campaign_slug : str
    organizer_hint : str
        Several lines: how to sign in, the campaign, its organizer API and how to invite more
        assessors.
    assessor_links : list of str
        One personal judging link per assessor of the demo, in invitation order.
    assessor_names : list of str
        The assessors' names, aligned with ``assessor_links``.
    created : bool
        Whether this call created the campaign (False: it already existed).
    audio_written : int
        Clips written by this call (0 when every clip was already there).
    organizer_username, organizer_password : str
        The organizer sign-in of the demo (:data:`DEMO_ORGANIZER` and a password made by this
        call: only its hash is stored, so every run makes a new one).
    """

    campaign_slug: str
    organizer_hint: str
    assessor_links: list[str]
    assessor_names: list[str] = field(default_factory=list)
    created: bool = False
    audio_written: int = 0
    organizer_username: str = DEMO_ORGANIZER
    organizer_password: str = field(default="", repr=False)


@dataclass(frozen=True)
class _Clip:
    doc: str
    artist: str
    genre: str


def demo_collection() -> SyntheticCollection:
    """The seeded synthetic collection behind the demo campaign."""
    return generate(**_SIZES, **_COLLECTION, seed=DEMO_SEED)


def ensure_demo(
    database_url: str, data_dir: str | os.PathLike[str], *, settings: Settings | None = None
) -> DemoInfo:
    """Migrate the database, then create the demo campaign or reuse the one already there.

    Parameters
    ----------
    database_url : str
        Where the campaign lives (SQLite or Postgres).
    data_dir : str or os.PathLike
        Clips go to ``data_dir/audio/<doc>.wav``: one per query and per document of the runs.
    settings : Settings, optional
        For the links (``base_url``); defaults to :meth:`Settings.from_env` on ``database_url``.

    Returns
    -------
    DemoInfo

    Raises
    ------
    InvalidInput
        If the database holds a campaign ``demo`` that is not the demo (another seed).
    """
    settings = settings or Settings.from_env(database_url=database_url)
    audio_dir = Path(data_dir).expanduser().resolve() / "audio"
    audio_dir.mkdir(parents=True, exist_ok=True)
    upgrade_database(database_url)
    engine = make_database_engine(database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            campaign = repository.campaign_by_slug(session, DEMO_SLUG)
            created = campaign is None
            if campaign is None:
                collection = demo_collection()
                clips = _collection_clips(collection)
                written = _write_missing_audio(audio_dir, clips)
                campaign, report = create_campaign(
                    session,
                    _SPEC,
                    Runs(collection.runs, "tsv"),
                    Metadata({c.doc: c.artist for c in clips}, {c.doc: c.genre for c in clips}),
                    audio_dir=audio_dir,
                    teams=collection.teams,
                )
                record_campaign_created(session, campaign, _DEMO_ACTOR, report)
            else:
                if campaign.seed != DEMO_SEED:
                    # someone's real campaign: never rewrite its audio paths
                    raise InvalidInput(
                        f"campaign {DEMO_SLUG!r} in this database is not the demo; use "
                        "another --data-dir (or DATABASE_URL) for the demo"
                    )
                stored = _stored_documents(session, campaign)
                written = _write_missing_audio(audio_dir, [clip for clip, _path in stored])
                _point_documents_at(session, campaign, audio_dir, stored)
            # only token hashes are stored: a second run gives the demo's volunteers new
            # links (the old ones stop working) and keeps their judgments
            invited = [
                (assessor, reissue_link(session, assessor))
                for assessor in assessors_repository.assessors_of(session, campaign.id)
            ]
            present = {assessor.name for assessor, _ in invited}
            invited += [
                invite_assessor(session, campaign, name)
                for name in ASSESSOR_NAMES
                if name not in present
            ]
            password = _demo_organizer(session)
            hint = _organizer_hint(session, campaign, settings, database_url, password)
            return DemoInfo(
                campaign_slug=campaign.slug,
                organizer_hint=hint,
                assessor_links=[assessor_link(settings, token) for _, token in invited],
                assessor_names=[a.name for a, _ in invited],
                created=created,
                audio_written=written,
                organizer_password=password,
            )
    finally:
        engine.dispose()


def _demo_organizer(session: Session) -> str:
    """Create the demo's organizer, or give it a new password (and enable it again):
    returns the password, which only this run knows."""
    password = secrets.token_urlsafe(12)
    if organizers_repository.organizer_by_username(session, DEMO_ORGANIZER) is None:
        organizers.create_organizer(session, DEMO_ORGANIZER, password, _DEMO_ACTOR)
    else:
        organizers.set_password(session, DEMO_ORGANIZER, password, _DEMO_ACTOR)
        organizers.set_disabled(session, DEMO_ORGANIZER, False, _DEMO_ACTOR)
    return password


def _collection_clips(collection: SyntheticCollection) -> list[_Clip]:
    """The queries and every document the runs return: the clips someone may listen to."""
    docs = set(collection.queries)
    for per_query in collection.runs.values():
        for ranked in per_query.values():
            docs.update(ranked)
    return [_Clip(d, collection.artist[d], collection.genre[d]) for d in sorted(docs)]


def _write_missing_audio(audio_dir: Path, clips: Iterable[_Clip]) -> int:
    """Render the clips whose file is missing; the others are left untouched."""
    clips = list(clips)
    # Genres take the instruments in sorted order, so four genres get four instruments.
    genre_index = {genre: i for i, genre in enumerate(sorted({c.genre for c in clips}))}
    written = 0
    for clip in clips:
        path = audio_dir / f"{clip.doc}.wav"
        if path.exists():
            continue
        samples = render_clip(
            genre_style(genre_index[clip.genre]),
            artist_style(_stable_seed(clip.artist)),
            seed=_stable_seed(clip.doc),
            seconds=CLIP_SECONDS,
            rate=SAMPLE_RATE,
        )
        write_wav(path, samples, SAMPLE_RATE)
        written += 1
    return written


def _stable_seed(name: str) -> int:
    # hash() is salted per process; CRC-32 gives every run the same clip for a document
    return zlib.crc32(f"{DEMO_SEED}:{name}".encode())


# The demo's own documents, read and repaired here rather than in the campaigns repository:
# nothing else needs these two statements.
def _stored_documents(session: Session, campaign: Campaign) -> list[tuple[_Clip, str | None]]:
    """Each document's clip and the audio path recorded for it."""
    rows = session.execute(
        select(Document.external_id, Document.artist, Document.genre, Document.audio_path)
        .where(Document.campaign_id == campaign.id)
        .order_by(Document.external_id)
    ).all()
    return [(_Clip(doc, artist or doc, genre or ""), path) for doc, artist, genre, path in rows]


def _point_documents_at(
    session: Session,
    campaign: Campaign,
    audio_dir: Path,
    stored: Iterable[tuple[_Clip, str | None]],
) -> None:
    """Repair audio paths recorded under another data directory (the demo was moved)."""
    for clip, recorded in stored:
        path = str((audio_dir / f"{clip.doc}.wav").resolve())
        if recorded != path:
            session.execute(
                update(Document)
                .where(Document.campaign_id == campaign.id, Document.external_id == clip.doc)
                .values(audio_path=path, audio_type="audio/wav", duration_seconds=CLIP_SECONDS)
            )
    session.flush()


def _organizer_hint(
    session: Session, campaign: Campaign, settings: Settings, database_url: str, password: str
) -> str:
    counts = repository.campaign_counts(session, campaign.id)
    where = ""
    if os.environ.get("DATABASE_URL") != database_url:
        # the assessor command defaults to $DATABASE_URL: point it at the demo's database
        shown = make_url(database_url).render_as_string(hide_password=False)
        where = f" --database-url {shlex.quote(shown)}"
    if os.environ.get("MTCJUDGE_BASE_URL", "").rstrip("/") != settings.base_url:
        # nor can it see where this server listens: give it the links' address
        where += f" --base-url {shlex.quote(settings.base_url)}"
    return "\n".join(
        [
            f"Sign in at {settings.base_url}/login with username {DEMO_ORGANIZER} and "
            f"password {password} (a new password at every run of the demo).",
            f"Campaign {campaign.slug!r} ({campaign.status}): {counts.systems} systems, "
            f"{counts.queries} queries, top {campaign.k}, {counts.documents} clips; "
            f"{campaign.scale.upper()} scale, {campaign.estimator} estimator, "
            f"{campaign.policy} policy, target {campaign.target:.2f}; "
            f"{counts.judgments} judgments so far.",
            f"Organizer API: {settings.base_url}/api/campaigns/{campaign.slug} "
            + (
                "(signed in, or Authorization: Bearer $MTCJUDGE_ORGANIZER_TOKEN)"
                if settings.organizer_token
                else "(signed in; set MTCJUDGE_ORGANIZER_TOKEN for scripts)"
            ),
            "Invite more assessors: "
            f'mtcjudge assessor invite {campaign.slug} --name "Volunteer 3"{where}',
        ]
    )
