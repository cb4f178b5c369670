"""The campaign under load: created through the organizer API, its assessors invited and
their consent recorded.

Every clip of the collection gets a silent WAV file (a quarter of a second, or
``--clip-seconds``), so the campaign is made as organizers make one (with audio), its pairs
can be played, and the simulated assessors fetch both clips of every pair they are handed,
as the judging page does, under the campaign's default listening rule and quality trials.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
from sqlalchemy import DateTime, bindparam, text

from bench._common import write_silent_clips
from bench._load.config import ORGANIZER_TOKEN, LoadConfig
from bench._load.database import plain_engine
from bench._load.servers import Servers
from mtcjudge.ingest.formats import read_runs
from mtcjudge.mtc.synthetic import generate


def collection_texts(config: LoadConfig, workdir: Path) -> tuple[str, str | None, str]:
    """Runs and metadata texts, and a label of where they come from."""
    if config.data is not None:
        data = Path(config.data)
        metadata = data / "metadata.tsv"
        return (
            (data / "runs.tsv").read_text(),
            metadata.read_text() if metadata.is_file() else None,
            f"runs of {data}",
        )
    collection = generate(
        config.systems,
        config.queries,
        config.k,
        n_genres=config.genres,
        docs_per_genre=config.docs_per_genre,
        n_artists=config.artists,
        seed=config.seed,
    )
    paths = collection.write(workdir / "collection")
    label = f"synthetic {config.systems} systems x {config.queries} queries (seed {config.seed})"
    return paths["runs"].read_text(), paths["metadata"].read_text(), label


def write_clips(runs: str, workdir: Path, seconds: float | None = None) -> Path:
    """One silent WAV per query and document of the runs (a quarter of a second, or
    ``seconds``); the folder."""
    runs_path = workdir / "clips-runs.tsv"
    runs_path.write_text(runs)
    return write_silent_clips(read_runs(runs_path), workdir / "audio", seconds)


@dataclass
class Campaign:
    id: int
    slug: str
    tokens: list[str]
    pool_pairs: int
    source: str


async def setup_campaign(
    config: LoadConfig, base_url: str, database_url: str, workdir: Path
) -> Campaign:
    runs, metadata, source = collection_texts(config, workdir)
    audio_dir = write_clips(runs, workdir, config.clip_seconds)
    slug = f"load-{secrets.token_hex(4)}"
    headers = {"Authorization": f"Bearer {ORGANIZER_TOKEN}"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=300) as client:
        response = await client.post(
            "/api/campaigns",
            json={
                "name": "Load benchmark",
                "slug": slug,
                "runs": runs,
                "metadata": metadata,
                "audio_dir": str(audio_dir),
                "k": config.k,
                "status": "open",
                "keep_collecting": True,
                "judgments_per_pair": config.judgments_per_pair,
                "seed": config.seed,
            },
        )
        if response.status_code != 201:
            raise RuntimeError(f"creating the campaign: {response.status_code} {response.text}")
        pool_pairs = int(response.json()["report"]["n_pool_pairs"])
        limit = asyncio.Semaphore(8)

        async def invite(index: int) -> str:
            async with limit:
                reply = await client.post(
                    f"/api/campaigns/{slug}/assessors", json={"name": f"Assessor {index:04d}"}
                )
            if reply.status_code != 201:
                raise RuntimeError(f"inviting an assessor: {reply.status_code} {reply.text}")
            return str(reply.json()["token"])

        assert config.assessors is not None
        tokens = await asyncio.gather(*(invite(i) for i in range(config.assessors)))
    engine = plain_engine(database_url)
    try:
        with engine.begin() as conn:
            campaign_id = int(
                conn.execute(
                    text("SELECT id FROM campaign WHERE slug = :s"), {"s": slug}
                ).scalar_one()
            )
            # consent as the welcome page records it; the form would need a browser session
            consent = text(
                "UPDATE assessor SET consented_at = :at WHERE campaign_id = :c"
            ).bindparams(bindparam("at", type_=DateTime(timezone=True)))
            conn.execute(consent, {"at": datetime.now(UTC), "c": campaign_id})
    finally:
        engine.dispose()
    return Campaign(campaign_id, slug, list(tokens), pool_pairs, source)


async def warm_up(servers: Servers, config: LoadConfig, token: str) -> None:
    """A few requests per process, so no measured request pays for a cold start."""
    async with httpx.AsyncClient(timeout=120) as client:
        for _ in range(2):
            await asyncio.gather(
                *(
                    client.get(f"{base}/api/a/{token}/progress")
                    for base in servers.base_urls
                    for _ in range(2 * config.workers)
                ),
                return_exceptions=True,
            )
