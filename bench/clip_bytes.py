"""Clip bytes benchmark: what one volunteer's browser receives per judgment, before and after.

Usage::

    mtcjudge bench clip_bytes --app-root /path/to/older/checkout --json clip-bytes.json
    mtcjudge bench clip_bytes --track-seconds 3 --judgments 3     # this checkout only, quick

What it does, start to end:

1. makes a collection in a temporary folder: runs of ``--systems`` systems on ``--queries``
   queries, top ``--k`` each (the systems' lists overlap: system ``i`` returns documents
   ``2i .. 2i+k-1`` of its query's pool), and one MP3 "whole track" per query and document
   (``--track-seconds``, 240 by default, stereo 44.1 kHz, chords over a beat with noise).
   ``--tracks`` distinct tracks are encoded once (encoding is the slow part: about a second
   of a core per 30 s of audio) and copied to every ``<doc id>.mp3``;
2. for each side and round (``before, after, before, after`` with ``--app-root`` and
   ``--rounds 2``; ``after`` alone without it) starts a real ``mtcjudge serve`` on a fresh
   SQLite database and an empty rendition cache (``MTCJUDGE_CLIP_CACHE``): ``before`` runs
   the servers of ``--app-root`` (its import package first on ``PYTHONPATH``, its own
   ``.venv``), ``after`` those of this checkout. The campaign is made as an organizer makes
   one, through the API with the bearer token (``MTCJUDGE_ORGANIZER_TOKEN``): the runs and
   the audio folder, open, judgments per pair 1, the listening rule and the quality trials
   at the server's defaults (``--listen-seconds`` to choose), the clips cut as each version
   cuts them by default (the older one serves files whole; this one 30 s excerpts). One
   assessor is invited through the API and gives consent on the welcome page's form;
3. one volunteer judges ``--judgments`` pairs over HTTP (127.0.0.1 only), as the judging page
   does: ``next``, both clips fetched through a browser-like cache (by URL: a response with
   ``max-age`` is used without a request while it is fresh, a stale one with an ``ETag`` is
   revalidated with ``If-None-Match``), the listening the rule asks reported, the judgment
   submitted. Once, on the first pair, the query clip is asked for again with
   ``If-None-Match`` and its ``ETag``: a server with validators answers 304 without bytes;
4. records per judgment the bytes received (bodies and headers of ``next``, the clips and
   the submission), the requests made and those the cache saved; the latency of each clip
   request, a clip's first request (the server may make its rendition then) apart from the
   others; and checks the server's byte evidence: what each judgment's row says was sent of
   its query and candidate clips against what this client received of those URLs.

Figures are printed, never asserted. A version that refuses a submission stops its side
early and the benchmark exits with status 1, saying why.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if __package__ in (None, ""):  # run as ``python bench/clip_bytes.py``: bench.* from the tree
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import positive_int, run_benchmark

if TYPE_CHECKING:
    import httpx
    import numpy as np

__all__ = [
    "DESCRIPTION",
    "BrowserCache",
    "Settings",
    "add_arguments",
    "clip_bytes_benchmark",
    "main",
    "run_from_args",
]

DESCRIPTION = (
    "Bytes one volunteer's browser receives per judgment over their first judgments, with a "
    "browser-like cache, against real 'mtcjudge serve' processes: an older checkout "
    "(--app-root, 'before') and this one ('after'), on a collection of MP3 whole tracks."
)
#: the tracks' sample rate and channels (a CD's)
TRACK_RATE = 44_100
TRACK_CHANNELS = 2
#: the longest file the import accepts played whole (docs/audio.md): 15 minutes
LONGEST_TRACK_SECONDS = 900.0
#: how far apart the systems' lists of a query start in its pool of documents
LIST_SHIFT = 2
SIDES = ("before", "after")
_MAX_AGE = re.compile(r"max-age\s*=\s*(\d+)")


@dataclass(frozen=True)
class Settings:
    """One benchmark run; ``ValueError`` on settings that do not go together."""

    app_root: Path | None = None  # the "before" checkout; None: the "after" side only
    rounds: int = 2
    judgments: int = 30
    systems: int = 3
    queries: int = 4
    k: int = 5
    tracks: int = 4
    track_seconds: float = 240.0
    listen_seconds: float | None = None  # None: the server's default for a new campaign
    arrive_after: float = 0.0  # seconds between the campaign's opening and the first request
    timeout: float = 120.0
    seed: int = 0
    server_logs: Path | None = None

    def __post_init__(self) -> None:
        if not 1.0 <= self.track_seconds <= LONGEST_TRACK_SECONDS:
            raise ValueError(
                f"--track-seconds must be from 1 to {LONGEST_TRACK_SECONDS:g}, "
                f"not {self.track_seconds:g}"
            )
        if self.arrive_after < 0:
            raise ValueError(f"--arrive-after must be 0 or more, not {self.arrive_after:g}")
        if self.listen_seconds is not None and self.listen_seconds < 0:
            raise ValueError(f"--listen-seconds must be 0 or more, not {self.listen_seconds:g}")
        if self.judgments > self.pool_pairs:
            raise ValueError(
                f"--judgments {self.judgments} is more than the collection's "
                f"{self.pool_pairs} pairs ({self.systems} systems x {self.queries} queries, "
                f"top {self.k}): give more --queries"
            )
        if self.app_root is not None and not self.app_root.is_dir():
            raise ValueError(f"--app-root: no folder {self.app_root}")

    @property
    def pool_size(self) -> int:
        """Documents per query: the systems' lists, each shifted by :data:`LIST_SHIFT`."""
        return self.k + LIST_SHIFT * (self.systems - 1)

    @property
    def pool_pairs(self) -> int:
        return self.queries * self.pool_size

    @property
    def sides(self) -> list[str]:
        """The sides in the order they run: alternating, ``before`` first."""
        one = list(SIDES) if self.app_root is not None else ["after"]
        return one * self.rounds


# ---------------------------------------------------------------------------------------------
# the collection


def music(seconds: float, seed: int) -> np.ndarray:
    """``seconds`` of stereo music-like sound at :data:`TRACK_RATE`: a chord progression of
    three notes with harmonics panned apart, a kick on every beat, noise on the off-beats;
    key and tempo change with ``seed``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = round(seconds * TRACK_RATE)
    out = np.zeros((n, TRACK_CHANNELS), dtype=np.float32)
    beat = 60.0 / (84 + 9 * (seed % 7))
    key = 110.0 * 2 ** ((seed * 5 % 12) / 12)
    progression = (0, 5, 7, 3, 8, 10, 2, 7)
    chord = 4 * beat
    bar = round(chord * TRACK_RATE)
    pan = np.array([[0.8, 0.2], [0.5, 0.5], [0.2, 0.8]], dtype=np.float32)
    for index, start in enumerate(range(0, n, bar)):
        end = min(n, start + bar)
        t = np.arange(end - start, dtype=np.float32) / TRACK_RATE
        root = progression[(index + seed) % len(progression)]
        decay = np.exp(-t / (1.5 * chord)).astype(np.float32)
        for voice, interval in enumerate((root, root + 4 - (index % 2), root + 7)):
            pitch = key * 2 ** (interval / 12) * (2 if voice == 2 else 1)
            tone = sum(
                np.sin(2 * np.pi * pitch * h * t + rng.uniform(0, 6.3)) / h**1.5 for h in (1, 2, 3)
            )
            out[start:end] += 0.12 * (tone * decay)[:, None] * pan[voice]
        for hit in np.arange(0.0, chord, beat):
            a = start + round(hit * TRACK_RATE)
            b = min(end, a + round(0.25 * TRACK_RATE))
            if a >= b:
                continue
            s = np.arange(b - a, dtype=np.float32) / TRACK_RATE
            kick = np.sin(2 * np.pi * (50 + 80 * np.exp(-s / 0.03)) * s) * np.exp(-s / 0.08)
            out[a:b] += 0.35 * kick[:, None]
            h0 = a + round(beat / 2 * TRACK_RATE)
            h1 = min(end, h0 + round(0.06 * TRACK_RATE))
            if h0 < h1:
                noise = rng.standard_normal((h1 - h0, TRACK_CHANNELS)).astype(np.float32)
                envelope = np.exp(-np.arange(h1 - h0) / (0.015 * TRACK_RATE))[:, None]
                out[h0:h1] += 0.08 * np.diff(noise, axis=0, prepend=0) * envelope
    out += 0.01 * rng.standard_normal(out.shape).astype(np.float32)
    peak = float(np.max(np.abs(out))) or 1.0
    return out * np.float32(0.7 / peak)


def write_track(path: Path, seconds: float, seed: int) -> Path:
    """One MP3 track (libsndfile's default MP3 encoding: LAME, variable bitrate)."""
    import soundfile

    soundfile.write(path, music(seconds, seed), TRACK_RATE, format="MP3", subtype="MPEG_LAYER_III")
    return path


def write_tracks(folder: Path, count: int, seconds: float, seed: int) -> list[Path]:
    """``count`` distinct tracks, encoded two at a time (libsndfile lets go of the GIL)."""
    folder.mkdir(parents=True, exist_ok=True)
    workers = max(1, min(count, os.cpu_count() or 1, 2))
    with ThreadPoolExecutor(workers) as pool:
        jobs = [
            pool.submit(write_track, folder / f"track{i + 1:02d}.mp3", seconds, seed * 1000 + i)
            for i in range(count)
        ]
        return [job.result() for job in jobs]


@dataclass(frozen=True)
class Collection:
    runs: str
    audio_dir: Path
    files: int
    pool_pairs: int
    track_bytes: list[int]
    make_seconds: float


def make_collection(settings: Settings, folder: Path) -> Collection:
    """The runs (TSV: system, query, document, in rank order) and the audio folder."""
    started = time.perf_counter()
    tracks = write_tracks(folder / "tracks", settings.tracks, settings.track_seconds, settings.seed)
    lines = []
    ids: list[str] = []
    for q in range(1, settings.queries + 1):
        query = f"Q{q:02d}"
        pool = [f"D{q:02d}{j + 1:02d}" for j in range(settings.pool_size)]
        ids += [query, *pool]
        for s in range(settings.systems):
            listed = pool[LIST_SHIFT * s : LIST_SHIFT * s + settings.k]
            lines += [f"S{s + 1:02d}\t{query}\t{doc}" for doc in listed]
    audio = folder / "audio"
    audio.mkdir()
    for i, doc in enumerate(ids):
        shutil.copyfile(tracks[i % len(tracks)], audio / f"{doc}.mp3")
    return Collection(
        "\n".join(lines) + "\n",
        audio,
        len(ids),
        settings.pool_pairs,
        [track.stat().st_size for track in tracks],
        time.perf_counter() - started,
    )


# ---------------------------------------------------------------------------------------------
# the volunteer's browser


@dataclass
class Cached:
    etag: str | None
    stored: float
    max_age: float


class BrowserCache:
    """A browser's HTTP cache as the judging page meets it, by URL: a response that may be
    stored (``Cache-Control`` without ``no-store``) is used without a request while younger
    than its ``max-age`` (``no-cache``, or no ``max-age``: never); a stale one with an
    ``ETag`` is asked for with ``If-None-Match``."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.entries: dict[str, Cached] = {}
        self.clock = clock

    def fresh(self, url: str) -> bool:
        entry = self.entries.get(url)
        return entry is not None and self.clock() - entry.stored < entry.max_age

    def validator(self, url: str) -> str | None:
        entry = self.entries.get(url)
        return entry.etag if entry is not None else None

    def store(self, url: str, status: int, headers: Any) -> None:
        """Keep (200) or refresh (304) what a response says of ``url``."""
        control = (headers.get("cache-control") or "").lower()
        if status == 304 and url in self.entries:
            self.entries[url].stored = self.clock()
            return
        if status != 200 or "no-store" in control:
            return
        found = _MAX_AGE.search(control)
        max_age = 0.0 if "no-cache" in control or found is None else float(found.group(1))
        self.entries[url] = Cached(headers.get("etag"), self.clock(), max_age)


@dataclass
class Exchange:
    """One request and what came back."""

    kind: str  # next, clip, submit, check
    url: str
    status: int
    body_bytes: int
    header_bytes: int
    seconds: float
    content: str | None = None  # a clip's body, hashed: which rendition or file it was

    @property
    def bytes(self) -> int:
        return self.body_bytes + self.header_bytes


@dataclass
class Judgment:
    number: int
    lease_id: int
    same_query_as_previous: bool
    exchanges: list[Exchange] = field(default_factory=list)
    clips_from_cache: int = 0
    submit_status: int = 0
    # what this client had received of the pair's clip URLs when it submitted
    query_bytes_received: int = 0
    candidate_bytes_received: int = 0

    @property
    def bytes(self) -> int:
        return sum(e.bytes for e in self.exchanges)

    @property
    def clip_bytes(self) -> int:
        return sum(e.bytes for e in self.exchanges if e.kind == "clip")

    @property
    def clip_requests(self) -> int:
        return sum(e.kind == "clip" for e in self.exchanges)

    def row(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "lease_id": self.lease_id,
            "same_query_as_previous": self.same_query_as_previous,
            "bytes": self.bytes,
            "clip_bytes": self.clip_bytes,
            "requests": len(self.exchanges),
            "clip_requests": self.clip_requests,
            "clips_from_cache": self.clips_from_cache,
            "submit_status": self.submit_status,
        }


def header_bytes(response: httpx.Response) -> int:
    """The bytes of a response's status line and headers (HTTP/1.1, as sent)."""
    status = len(f"HTTP/1.1 {response.status_code} {response.reason_phrase}\r\n")
    return status + sum(len(k) + len(v) + 4 for k, v in response.headers.raw) + 2


def exchange(
    client: httpx.Client, kind: str, method: str, url: str, **kwargs: Any
) -> tuple[Exchange, httpx.Response]:
    started = time.perf_counter()
    response = client.request(method, url, **kwargs)
    seconds = time.perf_counter() - started
    content = hashlib.sha256(response.content).hexdigest()[:16] if kind == "clip" else None
    return (
        Exchange(
            kind,
            url,
            response.status_code,
            response.num_bytes_downloaded,
            header_bytes(response),
            seconds,
            content if response.status_code == 200 else None,
        ),
        response,
    )


def played_ms(clip: dict[str, Any], listen_seconds: float) -> int:
    """The listening the page reports of a clip played as the rule asks (to its end when
    shorter than the rule); the same as the load benchmark's simulated assessors."""
    duration = clip.get("duration_seconds") or 0.0
    seconds = min(listen_seconds, duration) if duration > 0 else listen_seconds
    return max(1000, math.ceil(seconds * 1000))


@dataclass
class Volunteer:
    """One assessor's session: their judgments, the clips' bytes received by URL, the
    conditional request's answer, and why they stopped early (None: they did not)."""

    judgments: list[Judgment] = field(default_factory=list)
    received: dict[str, int] = field(default_factory=dict)
    conditional: dict[str, Any] = field(default_factory=dict)
    stopped: str | None = None
    waits: int = 0


def judge(client: httpx.Client, token: str, wanted: int) -> Volunteer:
    """``wanted`` judgments as the judging page makes them, through a browser-like cache."""
    cache = BrowserCache()
    volunteer = Volunteer()
    while len(volunteer.judgments) < wanted:
        step, response = exchange(client, "next", "GET", f"/api/a/{token}/next")
        body = response.json() if response.status_code == 200 else {}
        if body.get("status") == "wait" and volunteer.waits < 50:
            volunteer.waits += 1
            time.sleep(0.2)
            continue
        if body.get("status") != "pair":
            volunteer.stopped = f"next answered {response.status_code}: {response.text[:300]}"
            break
        pair = body["pair"]
        judgment = Judgment(
            len(volunteer.judgments) + 1,
            int(pair["lease_id"]),
            bool(pair.get("same_query_as_previous")),
            [step],
        )
        urls = {}
        for which in ("query", "candidate"):
            url = pair[which].get("audio_url")
            if not url:
                continue
            urls[which] = url
            if cache.fresh(url):
                judgment.clips_from_cache += 1
                continue
            etag = cache.validator(url)
            headers = {"If-None-Match": etag} if etag else {}
            fetched, reply = exchange(client, "clip", "GET", url, headers=headers)
            judgment.exchanges.append(fetched)
            volunteer.received[url] = volunteer.received.get(url, 0) + fetched.body_bytes
            cache.store(url, reply.status_code, reply.headers)
        if judgment.number == 1 and "query" in urls:
            volunteer.conditional = conditional_get(client, cache, urls["query"], volunteer)
        listen = float(pair.get("listen_seconds") or 0.0)
        payload = {
            "lease_id": judgment.lease_id,
            "broad": judgment.number % 3,
            "fine": float(37 * judgment.number % 101),
            "client_id": str(uuid.uuid4()),
            "query_listen_ms": played_ms(pair["query"], listen),
            "candidate_listen_ms": played_ms(pair["candidate"], listen),
        }
        judgment.query_bytes_received = volunteer.received.get(urls.get("query", ""), 0)
        judgment.candidate_bytes_received = volunteer.received.get(urls.get("candidate", ""), 0)
        sent, reply = exchange(client, "submit", "POST", f"/api/a/{token}/judgments", json=payload)
        judgment.exchanges.append(sent)
        judgment.submit_status = reply.status_code
        volunteer.judgments.append(judgment)
        if reply.status_code >= 300:
            volunteer.stopped = (
                f"judgment {judgment.number} refused: {reply.status_code} {reply.text[:300]}"
            )
            break
    return volunteer


def conditional_get(
    client: httpx.Client, cache: BrowserCache, url: str, volunteer: Volunteer
) -> dict[str, Any]:
    """The clip asked for again with its ``ETag`` in ``If-None-Match``; its bytes count
    towards the URL's total (the server's evidence) but towards no judgment."""
    etag = cache.validator(url)
    if etag is None:
        return {"etag": None, "status": None, "body_bytes": None, "note": "no ETag to send"}
    check, reply = exchange(client, "check", "GET", url, headers={"If-None-Match": etag})
    volunteer.received[url] = volunteer.received.get(url, 0) + check.body_bytes
    return {
        "etag": etag,
        "status": check.status,
        "body_bytes": check.body_bytes,
        "header_bytes": check.header_bytes,
        "cache_control": reply.headers.get("cache-control"),
    }


# ---------------------------------------------------------------------------------------------
# one side, one round


def run_round(
    side: str,
    number: int,
    settings: Settings,
    collection: Collection,
    workdir: Path,
    log_dir: Path,
) -> dict[str, Any]:
    """Start the side's server on a fresh database, set up the campaign, judge, stop."""
    import httpx

    from bench._load.config import REPO_ROOT
    from bench._load.report import git_commit
    from bench._load.servers import server_program
    from bench._serve import start_server, stop_servers

    root = (settings.app_root if side == "before" else REPO_ROOT) or REPO_ROOT
    program = server_program(root, sys.executable)
    scratch = workdir / f"{side}-{number}"
    scratch.mkdir()
    database = f"sqlite:///{scratch / 'bench.sqlite3'}"
    organizer = secrets.token_urlsafe(24)
    env = dict(os.environ)
    env.pop("MTCJUDGE_BASE_URL", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(program.source), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    env["DATABASE_URL"] = database
    env["MTCJUDGE_ORGANIZER_TOKEN"] = organizer
    env["MTCJUDGE_CLIP_CACHE"] = str(scratch / "renditions")  # empty: first requests encode
    server = start_server(
        database,
        log_dir / f"server-{side}-{number}.log",
        program=[program.python, "-m", program.module],
        env=env,
        cwd=root,
        die_with_parent=True,
    )
    try:
        server.wait_ready(timeout=120)
        headers = {"Authorization": f"Bearer {organizer}"}
        with httpx.Client(base_url=server.url, timeout=settings.timeout) as client:
            started = time.perf_counter()
            token = setup_campaign(client, headers, settings, collection)
            import_seconds = time.perf_counter() - started
            time.sleep(settings.arrive_after)  # a server may make renditions ahead meanwhile
            volunteer = judge(client, token, settings.judgments)
        evidence = check_evidence(scratch / "bench.sqlite3", volunteer)
    except Exception:
        sys.stderr.write(f"--- {server.log.name}\n{server.tail()}\n")
        raise
    finally:
        stop_servers([server])
    result = summarise_round(volunteer, settings)
    result.update(
        side=side,
        round=number,
        app_root=str(root),
        git_commit=git_commit(root),
        import_seconds=round(import_seconds, 2),
        evidence=evidence,
    )
    return result


def setup_campaign(
    client: httpx.Client, headers: dict[str, str], settings: Settings, collection: Collection
) -> str:
    """The campaign, open, and one consenting assessor; their token. The body holds only
    fields every version since the organizer API has taken (no cut: each version's own)."""
    body: dict[str, Any] = {
        "name": "Clip bytes benchmark",
        "slug": f"clip-bytes-{secrets.token_hex(3)}",
        "runs": collection.runs,
        "audio_dir": str(collection.audio_dir),
        "k": settings.k,
        "status": "open",
        "keep_collecting": True,
        "judgments_per_pair": 1,
        "seed": settings.seed,
    }
    if settings.listen_seconds is not None:
        body["listen_seconds"] = settings.listen_seconds
    reply = client.post("/api/campaigns", json=body, headers=headers, timeout=600)
    if reply.status_code != 201:
        raise RuntimeError(f"creating the campaign: {reply.status_code} {reply.text[:500]}")
    invited = client.post(
        f"/api/campaigns/{body['slug']}/assessors", json={"name": "Volunteer"}, headers=headers
    )
    if invited.status_code != 201:
        raise RuntimeError(f"inviting the assessor: {invited.status_code} {invited.text[:500]}")
    token = str(invited.json()["token"])
    consent = client.post(f"/a/{token}/consent", data={"consent": "yes"})
    if consent.status_code not in (200, 303):
        raise RuntimeError(f"giving consent: {consent.status_code} {consent.text[:300]}")
    return token


def check_evidence(database: Path, volunteer: Volunteer) -> dict[str, Any]:
    """Each judgment's ``served_query_bytes`` and ``served_candidate_bytes`` (what the server
    counts as sent of the clips for it) against what this client had received of the two
    URLs when it submitted."""
    import sqlite3

    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        rows = {
            lease: (query, candidate)
            for lease, query, candidate in conn.execute(
                "SELECT lease_id, served_query_bytes, served_candidate_bytes FROM judgment"
            )
        }
    mismatches = []
    checked = 0
    for judgment in volunteer.judgments:
        if judgment.lease_id not in rows:
            continue
        checked += 1
        received = (judgment.query_bytes_received, judgment.candidate_bytes_received)
        if tuple(rows[judgment.lease_id]) != received:
            mismatches.append(
                {"judgment": judgment.number, "server": rows[judgment.lease_id], "client": received}
            )
    return {"checked": checked, "matched": checked - len(mismatches), "mismatches": mismatches}


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 2) if values else None


def _median_ms(values: Sequence[float]) -> float | None:
    return round(statistics.median(values) * 1000, 1) if values else None


def summarise_round(volunteer: Volunteer, settings: Settings) -> dict[str, Any]:
    judgments = volunteer.judgments
    clips = [e for j in judgments for e in j.exchanges if e.kind == "clip" and e.content]
    seen: set[str] = set()
    cold: list[float] = []
    warm: list[float] = []
    for clip in clips:
        (warm if clip.content in seen else cold).append(clip.seconds)
        seen.add(clip.content or "")
    later = judgments[1:]
    return {
        "judgments": len(judgments),
        "completed": volunteer.stopped is None and len(judgments) == settings.judgments,
        "stopped": volunteer.stopped,
        "bytes_per_judgment": _mean([j.bytes for j in judgments]),
        "clip_bytes_per_judgment": _mean([j.clip_bytes for j in judgments]),
        "first_judgment_bytes": judgments[0].bytes if judgments else None,
        "later_judgments_bytes": _mean([j.bytes for j in later]),
        "same_query_judgments_bytes": _mean([j.bytes for j in later if j.same_query_as_previous]),
        "new_query_judgments_bytes": _mean(
            [j.bytes for j in judgments if not j.same_query_as_previous]
        ),
        "same_query_judgments": sum(j.same_query_as_previous for j in later),
        "requests_per_judgment": _mean([len(j.exchanges) for j in judgments]),
        "clip_requests_per_judgment": _mean([j.clip_requests for j in judgments]),
        "clips_from_cache_per_judgment": _mean([j.clips_from_cache for j in judgments]),
        "total_bytes": sum(j.bytes for j in judgments),
        "clip_statuses": sorted(
            {e.status for j in judgments for e in j.exchanges if e.kind == "clip"}
        ),
        "submissions_refused": sum(j.submit_status >= 300 for j in judgments),
        "conditional_get": volunteer.conditional,
        "latency_ms": {
            "first_clip": _median_ms([clips[0].seconds]) if clips else None,
            "first_request_of_a_clip_median": _median_ms(cold),
            "first_request_of_a_clip_max": _median_ms([max(cold)]) if cold else None,
            "first_requests": len(cold),
            "later_requests_median": _median_ms(warm),
            "later_requests": len(warm),
        },
        "per_judgment": [j.row() for j in judgments],
    }


# ---------------------------------------------------------------------------------------------
# the benchmark


_AVERAGED = (
    "bytes_per_judgment",
    "clip_bytes_per_judgment",
    "first_judgment_bytes",
    "later_judgments_bytes",
    "same_query_judgments_bytes",
    "new_query_judgments_bytes",
    "requests_per_judgment",
    "clip_requests_per_judgment",
    "clips_from_cache_per_judgment",
    "import_seconds",
)


def side_summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The rounds of one side, averaged."""
    summary: dict[str, Any] = {"rounds": len(rounds)}
    for key in _AVERAGED:
        summary[key] = _mean([r[key] for r in rounds if r[key] is not None])
    for key in ("first_clip", "first_request_of_a_clip_median", "later_requests_median"):
        summary[f"{key}_ms"] = _mean(
            [r["latency_ms"][key] for r in rounds if r["latency_ms"][key] is not None]
        )
    summary["conditional_get_statuses"] = [r["conditional_get"].get("status") for r in rounds]
    summary["submissions_refused"] = sum(r["submissions_refused"] for r in rounds)
    summary["evidence_matched"] = sum(r["evidence"]["matched"] for r in rounds)
    summary["evidence_checked"] = sum(r["evidence"]["checked"] for r in rounds)
    summary["completed"] = all(r["completed"] for r in rounds)
    summary["git_commit"] = rounds[0]["git_commit"]
    return summary


def clip_bytes_benchmark(settings: Settings, out: TextIO | None = None) -> dict[str, Any]:
    """Make the collection, run every side and round, and return the figures (also printed
    to ``out``)."""
    out = out or sys.stdout
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mtcjudge-clip-bytes-") as tmp:
        workdir = Path(tmp)
        log_dir = settings.server_logs or workdir
        log_dir.mkdir(parents=True, exist_ok=True)
        collection = make_collection(settings, workdir)
        mean_track = statistics.fmean(collection.track_bytes)
        out.write(
            f"clip_bytes: {settings.systems} systems x {settings.queries} queries, top "
            f"{settings.k}: {collection.pool_pairs} pairs; {settings.tracks} tracks of "
            f"{settings.track_seconds:g} s (stereo {TRACK_RATE / 1000:g} kHz MP3, "
            f"{mean_track / 1e6:.2f} MB, {mean_track * 8 / settings.track_seconds / 1000:.0f} "
            f"kbit/s) copied to {collection.files} files in {collection.make_seconds:.1f} s; "
            f"one volunteer, {settings.judgments} judgments, arriving "
            f"{settings.arrive_after:g} s after the campaign opens\n"
        )
        rounds: list[dict[str, Any]] = []
        counts = dict.fromkeys(SIDES, 0)
        for side in settings.sides:
            counts[side] += 1
            result = run_round(side, counts[side], settings, collection, workdir, log_dir)
            rounds.append(result)
            out.write(format_round(result) + "\n")
    sides = {
        side: side_summary([r for r in rounds if r["side"] == side])
        for side in SIDES
        if any(r["side"] == side for r in rounds)
    }
    figures: dict[str, Any] = {
        "benchmark": "clip_bytes",
        "config": {
            **{k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(settings).items()},
            "pool_pairs": collection.pool_pairs,
            "files": collection.files,
            "track_bytes": collection.track_bytes,
            "cores": os.cpu_count(),
            "load_average_before": round(load, 2),
        },
        "sides": sides,
        "rounds": rounds,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if "before" in sides and sides["after"]["bytes_per_judgment"]:
        figures["ratio_before_to_after"] = {
            key: round(sides["before"][key] / sides["after"][key], 2)
            for key in ("bytes_per_judgment", "clip_bytes_per_judgment", "requests_per_judgment")
            if sides["before"][key] and sides["after"][key]
        }
    out.write(format_summary(figures) + "\n")
    return figures


def _kb(value: float | None) -> str:
    return "-" if value is None else f"{value / 1000:,.0f} kB"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} ms"


def format_round(r: dict[str, Any]) -> str:
    latency = r["latency_ms"]
    check = r["conditional_get"]
    evidence = r["evidence"]
    lines = [
        f"  {r['side']} {r['round']} (commit {r['git_commit']}): {r['judgments']} judgments, "
        f"{_kb(r['bytes_per_judgment'])} per judgment ({_kb(r['clip_bytes_per_judgment'])} "
        f"of clips); first {_kb(r['first_judgment_bytes'])}, later "
        f"{_kb(r['later_judgments_bytes'])} ({_kb(r['same_query_judgments_bytes'])} on the "
        f"query before, {r['same_query_judgments']} of them); "
        f"{r['requests_per_judgment']} requests per judgment ({r['clip_requests_per_judgment']} "
        f"clips, {r['clips_from_cache_per_judgment']} clips from the cache)",
        f"    If-None-Match: {check.get('status')} ({check.get('body_bytes')} bytes); clip "
        f"latency: first {_ms(latency['first_clip'])}, a clip's first request "
        f"{_ms(latency['first_request_of_a_clip_median'])} (median of "
        f"{latency['first_requests']}), later requests {_ms(latency['later_requests_median'])}"
        f" (median of {latency['later_requests']}); import {r['import_seconds']:.1f} s; byte "
        f"evidence matched {evidence['matched']}/{evidence['checked']}; refused "
        f"{r['submissions_refused']}",
    ]
    if r["stopped"]:
        lines.append(f"    STOPPED: {r['stopped']}")
    return "\n".join(lines)


def format_summary(figures: dict[str, Any]) -> str:
    rows: list[tuple[str, str, Callable[[Any], str]]] = [
        ("bytes per judgment", "bytes_per_judgment", _kb),
        ("  of which clips", "clip_bytes_per_judgment", _kb),
        ("first judgment", "first_judgment_bytes", _kb),
        ("later judgments", "later_judgments_bytes", _kb),
        ("  on the query before", "same_query_judgments_bytes", _kb),
        ("  on a new query", "new_query_judgments_bytes", _kb),
        ("requests per judgment", "requests_per_judgment", str),
        ("clip requests", "clip_requests_per_judgment", str),
        ("clips from the cache", "clips_from_cache_per_judgment", str),
        ("first clip request", "first_clip_ms", _ms),
        ("a clip's first request", "first_request_of_a_clip_median_ms", _ms),
        ("later clip requests", "later_requests_median_ms", _ms),
        ("campaign creation", "import_seconds", lambda v: f"{v:.1f} s"),
        ("If-None-Match answered", "conditional_get_statuses", lambda v: ", ".join(map(str, v))),
    ]
    sides = figures["sides"]
    names = list(sides)
    lines = [f"  {'mean of the rounds':<26}" + "".join(f"{n:>18}" for n in names)]
    for label, key, show in rows:
        cells = "".join(
            f"{show(sides[n][key]) if sides[n][key] is not None else '-':>18}" for n in names
        )
        lines.append(f"  {label:<26}{cells}")
    ratio = figures.get("ratio_before_to_after")
    if ratio:
        lines.append(
            f"  before / after: {ratio.get('bytes_per_judgment')}x the bytes per judgment, "
            f"{ratio.get('requests_per_judgment')}x the requests"
        )
    lines.append(f"  {figures['seconds']:.0f} s in all")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the figures here")
    parser.add_argument(
        "--app-root",
        type=Path,
        metavar="DIR",
        help="the 'before' checkout (its own .venv if it has one); without it, only this "
        "checkout ('after') runs",
    )
    parser.add_argument(
        "--rounds",
        type=positive_int,
        default=2,
        metavar="N",
        help="rounds of each side, alternating (before, after, before, after...)",
    )
    parser.add_argument(
        "--judgments", type=positive_int, default=30, metavar="N", help="the volunteer's judgments"
    )
    parser.add_argument("--systems", type=positive_int, default=3, metavar="N", help="systems")
    parser.add_argument("--queries", type=positive_int, default=4, metavar="N", help="queries")
    parser.add_argument("--k", type=positive_int, default=5, metavar="K", help="evaluation cut-off")
    parser.add_argument(
        "--tracks",
        type=positive_int,
        default=4,
        metavar="N",
        help="distinct tracks encoded, then copied to every query's and document's file",
    )
    parser.add_argument(
        "--track-seconds",
        type=float,
        default=240.0,
        metavar="S",
        help="length of each track (a whole track: the collection's file)",
    )
    parser.add_argument(
        "--listen-seconds",
        type=float,
        metavar="S",
        help="the campaign's listening rule (0: none; default: the server's for a new campaign)",
    )
    parser.add_argument(
        "--arrive-after",
        type=float,
        default=0.0,
        metavar="S",
        help="seconds between the campaign's opening and the volunteer's first request (a "
        "server may make clips ahead meanwhile; 0: the volunteer arrives at once)",
    )
    parser.add_argument(
        "--timeout", type=float, default=120.0, metavar="S", help="per request, seconds"
    )
    parser.add_argument("--seed", type=int, default=0, help="of the tracks and the campaign")
    parser.add_argument("--server-logs", type=Path, metavar="DIR", help="keep server logs here")


def settings_from_args(args: argparse.Namespace) -> Settings:
    return Settings(
        app_root=args.app_root.resolve() if args.app_root is not None else None,
        rounds=args.rounds,
        judgments=args.judgments,
        systems=args.systems,
        queries=args.queries,
        k=args.k,
        tracks=args.tracks,
        track_seconds=args.track_seconds,
        listen_seconds=args.listen_seconds,
        arrive_after=args.arrive_after,
        timeout=args.timeout,
        seed=args.seed,
        server_logs=args.server_logs,
    )


def run_from_args(args: argparse.Namespace, out: TextIO) -> int:
    figures = clip_bytes_benchmark(settings_from_args(args), out)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    stopped = [r for r in figures["rounds"] if not r["completed"]]
    for r in stopped:
        sys.stderr.write(f"clip_bytes: {r['side']} {r['round']} stopped early: {r['stopped']}\n")
    return 1 if stopped else 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_benchmark(argv, DESCRIPTION, add_arguments, run_from_args, name="clip_bytes")


if __name__ == "__main__":
    raise SystemExit(main())
