"""A zoo of synthetic AMS collections for calibration studies.

:func:`mtcjudge.mtc.synthetic.generate` at its defaults mimics one campaign, MIREX 2011.
An estimator whose claimed confidence is to mean something on campaigns the project
has never seen must be checked on collections that differ the way real campaigns
differ: in size, in how systems cluster, in how far the judgments depart from what
the metadata predicts, and in how good the metadata is. This module draws such
collection *settings* from fixed, documented ranges (:data:`RANGES`; the reasons are
in docs/calibration.md) and generates them.

Nothing here looks at any estimator: the ranges were fixed before any benchmark
result, bracket the MIREX 2011-like defaults from "none" to about their double, and
are drawn independently of each other.

Examples
--------
>>> settings = suite_settings(2, seed=0)
>>> [s.measure for s in settings]
['cg', 'dcg']
>>> zoo = generate_zoo(settings[0])
>>> zoo.collection.systems == [f"S{i:02d}" for i in range(1, settings[0].n_systems + 1)]
True
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace

import numpy as np

from mtcjudge.mtc.measures import MEASURES
from mtcjudge.mtc.synthetic import SyntheticCollection, generate

__all__ = [
    "RANGES",
    "SCALES",
    "ZooCollection",
    "ZooSettings",
    "calibration_suite",
    "draw_settings",
    "generate_zoo",
    "suite_settings",
]

SCALES = ("fine", "broad")

#: the ranges settings are drawn from (docs/calibration.md says why); "log" ranges are
#: drawn uniformly on the log scale, "int" ranges uniformly over the integers inclusive
RANGES: dict[str, tuple[str, float, float]] = {
    "n_systems": ("log", 5, 50),
    "n_queries": ("log", 20, 200),
    "k": ("int", 5, 10),
    "team_share": ("uniform", 0.4, 1.0),  # teams per system (MIREX 2011: 10-11 / 18)
    "n_weak": ("int", 0, 3),  # capped at a quarter of the systems
    "n_genres": ("int", 5, 12),
    "docs_per_genre": ("int", 300, 700),
    "clips_per_artist": ("uniform", 8.0, 16.0),  # MIREX 2011: 7,000 / 603 = 11.6
    "difficulty_sd": ("uniform", 7.5, 22.5),  # 0.5x to 1.5x the default 15
    "noise_sd": ("uniform", 9.0, 27.0),  # 0.5x to 1.5x the default 18
    "heavy_tail_probability": ("uniform", 0.5, 0.5),  # share of collections with t noise
    "noise_df": ("uniform", 3.0, 10.0),
    "artist_effect_sd": ("uniform", 0.0, 10.0),
    "genre_effect_sd": ("uniform", 0.0, 10.0),
    "hidden_sd": ("uniform", 0.0, 10.0),
    "skill_sd": ("uniform", 0.0, 0.1),
    "metadata_missing": ("uniform", 0.0, 0.2),
    "metadata_wrong_genre": ("uniform", 0.0, 0.05),
    "metadata_wrong_artist": ("uniform", 0.0, 0.05),
}


@dataclass(frozen=True)
class ZooSettings:
    """Everything that defines one zoo collection (see :func:`generate` for the model).

    ``measure`` and ``scale`` are what the collection is evaluated with; the
    ``metadata_*`` shares are the clips whose metadata row is dropped, whose genre is
    replaced by another genre, and whose artist is replaced by another artist, in the
    metadata the estimators see (the systems and the true scores use the real one).
    """

    index: int
    seed: int
    n_systems: int
    n_queries: int
    k: int
    n_teams: int
    n_weak: int
    n_genres: int
    docs_per_genre: int
    n_artists: int
    difficulty_sd: float
    noise_sd: float
    noise_df: float | None
    artist_effect_sd: float
    genre_effect_sd: float
    hidden_sd: float
    skill_sd: float
    metadata_missing: float
    metadata_wrong_genre: float
    metadata_wrong_artist: float
    measure: str
    scale: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    @property
    def name(self) -> str:
        return (
            f"zoo-{self.index:02d} ({self.n_systems}x{self.n_queries}x{self.k}, "
            f"{self.scale}, {self.measure})"
        )


@dataclass(frozen=True)
class ZooCollection:
    """A generated zoo collection: its settings and the collection with observed metadata."""

    settings: ZooSettings
    collection: SyntheticCollection


def _draw(rng: np.random.Generator, name: str) -> float:
    kind, low, high = RANGES[name]
    if kind == "log":
        return float(np.exp(rng.uniform(np.log(low), np.log(high))))
    if kind == "int":
        return float(rng.integers(int(low), int(high) + 1))
    return float(rng.uniform(low, high))


def draw_settings(rng: np.random.Generator, index: int) -> ZooSettings:
    """One collection's settings from :data:`RANGES`; measure and scale cycle with ``index``.

    ``measure`` is ``MEASURES[index % 4]`` and ``scale`` is ``SCALES[(index // 4) % 2]``:
    every 8 consecutive collections cover each measure on each scale once.
    """
    n_systems = round(_draw(rng, "n_systems"))
    n_queries = round(_draw(rng, "n_queries"))
    k = round(_draw(rng, "k"))
    n_teams = max(1, min(n_systems, round(_draw(rng, "team_share") * n_systems)))
    n_weak = min(round(_draw(rng, "n_weak")), n_systems // 4)
    n_genres = round(_draw(rng, "n_genres"))
    docs_per_genre = round(_draw(rng, "docs_per_genre"))
    n_docs = n_genres * docs_per_genre
    n_artists = max(n_genres, round(n_docs / _draw(rng, "clips_per_artist")))
    difficulty_sd = _draw(rng, "difficulty_sd")
    noise_sd = _draw(rng, "noise_sd")
    heavy = rng.uniform() < RANGES["heavy_tail_probability"][1]
    df = _draw(rng, "noise_df")
    return ZooSettings(
        index=index,
        seed=int(rng.integers(0, 2**31 - 1)),
        n_systems=n_systems,
        n_queries=n_queries,
        k=k,
        n_teams=n_teams,
        n_weak=n_weak,
        n_genres=n_genres,
        docs_per_genre=docs_per_genre,
        n_artists=n_artists,
        difficulty_sd=difficulty_sd,
        noise_sd=noise_sd,
        noise_df=df if heavy else None,
        artist_effect_sd=_draw(rng, "artist_effect_sd"),
        genre_effect_sd=_draw(rng, "genre_effect_sd"),
        hidden_sd=_draw(rng, "hidden_sd"),
        skill_sd=_draw(rng, "skill_sd"),
        metadata_missing=_draw(rng, "metadata_missing"),
        metadata_wrong_genre=_draw(rng, "metadata_wrong_genre"),
        metadata_wrong_artist=_draw(rng, "metadata_wrong_artist"),
        measure=MEASURES[index % len(MEASURES)],
        scale=SCALES[(index // len(MEASURES)) % len(SCALES)],
    )


def suite_settings(n: int, seed: int = 0) -> list[ZooSettings]:
    """The settings of a suite of ``n`` collections, reproducible from ``seed``.

    The first ``m`` settings of a suite are the same for every ``n >= m``.
    """
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x200]))
    return [draw_settings(rng, i) for i in range(n)]


def generate_zoo(settings: ZooSettings) -> ZooCollection:
    """Generate the collection ``settings`` describe, with its metadata corrupted as they say."""
    collection = generate(
        settings.n_systems,
        settings.n_queries,
        settings.k,
        n_genres=settings.n_genres,
        docs_per_genre=settings.docs_per_genre,
        n_artists=settings.n_artists,
        n_teams=settings.n_teams,
        seed=settings.seed,
        difficulty_sd=settings.difficulty_sd,
        noise_sd=settings.noise_sd,
        noise_df=settings.noise_df,
        artist_effect_sd=settings.artist_effect_sd,
        genre_effect_sd=settings.genre_effect_sd,
        hidden_sd=settings.hidden_sd,
        skill_sd=settings.skill_sd,
        n_weak=settings.n_weak,
    )
    artist, genre = _observed_metadata(collection, settings)
    return ZooCollection(settings, replace(collection, artist=artist, genre=genre))


def calibration_suite(n: int, seed: int = 0) -> Iterator[ZooCollection]:
    """``n`` zoo collections drawn with :func:`suite_settings`, generated one at a time."""
    for settings in suite_settings(n, seed):
        yield generate_zoo(settings)


def _observed_metadata(
    collection: SyntheticCollection, settings: ZooSettings
) -> tuple[dict[str, str], dict[str, str]]:
    """The metadata the estimators see: some rows dropped, some genres and artists wrong."""
    rng = np.random.default_rng(np.random.SeedSequence([settings.seed, 0x3E7A]))
    docs = sorted(collection.artist)
    n = len(docs)
    order = rng.permutation(n)
    n_missing = round(settings.metadata_missing * n)
    n_genre = round(settings.metadata_wrong_genre * n)
    n_artist = round(settings.metadata_wrong_artist * n)
    missing = {docs[i] for i in order[:n_missing].tolist()}
    # wrong genres and wrong artists are drawn independently among the rows kept
    kept = order[n_missing:]
    wrong_genre = {docs[i] for i in rng.choice(kept, size=min(n_genre, kept.size), replace=False)}
    wrong_artist = {docs[i] for i in rng.choice(kept, size=min(n_artist, kept.size), replace=False)}
    genres = sorted(set(collection.genre.values()))
    artists = sorted(set(collection.artist.values()))
    artist: dict[str, str] = {}
    genre: dict[str, str] = {}
    for doc in docs:
        if doc in missing:
            continue
        g, a = collection.genre[doc], collection.artist[doc]
        if doc in wrong_genre and len(genres) > 1:
            g = _other(rng, genres, g)
        if doc in wrong_artist and len(artists) > 1:
            a = _other(rng, artists, a)
        artist[doc], genre[doc] = a, g
    return artist, genre


def _other(rng: np.random.Generator, values: list[str], current: str) -> str:
    """A value of ``values`` other than ``current``, uniformly."""
    pick = int(rng.integers(0, len(values) - 1))
    index = values.index(current)
    return values[pick + 1 if pick >= index else pick]
