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

A second set of ranges, :data:`ISSUE23_RANGES` (the *third suite*), was fixed for
issue 23 before any run on it: MIREX-sized collections whose systems are closer
together, whose metadata predicts the judgments less well and whose judgment noise
has heavier tails than the first two suites'. A third, :data:`PACKED_RANGES` (the
*fourth suite*), was fixed before any run on it too: MIREX 2011's sizes with systems
packed within hundredths of each other, metadata that predicts little and results shared
across teams. :data:`RANGE_SETS` names them all; ``suite_settings(n, seed,
ranges="issue23")`` draws from the third.

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
    "ISSUE23_RANGES",
    "PACKED_RANGES",
    "RANGES",
    "RANGE_SETS",
    "SCALES",
    "ZooCollection",
    "ZooSettings",
    "calibration_suite",
    "draw_settings",
    "generate_zoo",
    "smoke_sized",
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

#: the third suite's ranges (issue 23), fixed before any run on them; docs/calibration.md
#: ("The third suite") gives the reason for each. The two "quality_*" entries spread the
#: teams' qualities over [centre - width / 2, centre + width / 2] instead of [0, 1]
ISSUE23_RANGES: dict[str, tuple[str, float, float]] = {
    "n_systems": ("log", 10, 30),  # MIREX-sized: MIREX 2011 had 18
    "n_queries": ("log", 30, 120),  # MIREX: 100; fewer queries, fewer degrees of freedom
    "k": ("int", 5, 8),
    "team_share": ("uniform", 0.25, 0.7),  # more teams of near-identical variants
    "n_weak": ("int", 0, 2),  # capped at a quarter of the systems
    "n_genres": ("int", 5, 12),
    "docs_per_genre": ("int", 300, 700),
    "clips_per_artist": ("uniform", 4.0, 16.0),
    "difficulty_sd": ("uniform", 7.5, 22.5),
    "noise_sd": ("uniform", 12.0, 30.0),
    "heavy_tail_probability": ("uniform", 0.75, 0.75),
    "noise_df": ("uniform", 2.5, 6.0),
    "artist_effect_sd": ("uniform", 3.0, 15.0),
    "genre_effect_sd": ("uniform", 3.0, 15.0),
    "hidden_sd": ("uniform", 5.0, 20.0),
    "skill_sd": ("uniform", 0.0, 0.15),
    "metadata_missing": ("uniform", 0.05, 0.35),
    "metadata_wrong_genre": ("uniform", 0.02, 0.10),
    "metadata_wrong_artist": ("uniform", 0.02, 0.10),
    "quality_width": ("uniform", 0.15, 0.6),  # closer systems: [0, 1] is 1.0
    "quality_centre": ("uniform", 0.3, 0.7),
}

#: the fourth suite's ranges (issue 23, the collections the third suite did not reproduce),
#: fixed before any run on them; docs/calibration.md ("The fourth suite") gives the reason
#: for each. MIREX 2011's sizes exactly, systems packed within hundredths of each other's
#: scores, metadata that predicts little, and results shared across teams
#: ("common_view_sd": the view error every system shares, 0.3 in the other suites)
PACKED_RANGES: dict[str, tuple[str, float, float]] = {
    "n_systems": ("int", 18, 18),  # MIREX 2011
    "n_queries": ("int", 100, 100),  # MIREX 2011
    "k": ("int", 5, 5),  # MIREX 2011
    "team_share": ("uniform", 0.5, 0.65),  # MIREX 2011: 10-11 teams for 18 systems
    "n_weak": ("int", 0, 0),  # packed: no system far below the others
    "n_genres": ("int", 8, 12),  # MIREX 2011: 10
    "docs_per_genre": ("int", 500, 700),  # MIREX 2011: 700
    "clips_per_artist": ("uniform", 6.0, 16.0),
    "difficulty_sd": ("uniform", 7.5, 22.5),
    "noise_sd": ("uniform", 12.0, 30.0),
    "heavy_tail_probability": ("uniform", 0.5, 0.5),
    "noise_df": ("uniform", 2.5, 6.0),
    "artist_effect_sd": ("uniform", 10.0, 20.0),  # metadata that predicts little: large
    "genre_effect_sd": ("uniform", 10.0, 20.0),  # judgment effects no feature sees ...
    "hidden_sd": ("uniform", 15.0, 30.0),  # ... and a large hidden component
    "skill_sd": ("uniform", 0.0, 0.01),  # that systems exploit a little unequally
    "metadata_missing": ("uniform", 0.2, 0.5),
    "metadata_wrong_genre": ("uniform", 0.05, 0.15),
    "metadata_wrong_artist": ("uniform", 0.05, 0.15),
    "quality_width": ("uniform", 0.0, 0.08),  # packed: the third suite's was 0.15-0.6
    "quality_centre": ("uniform", 0.4, 0.6),
    "common_view_sd": ("uniform", 0.6, 1.2),  # results shared across teams
}

#: the named range sets a suite is drawn from: "issue11" (suites 0 and 1 of
#: docs/calibration.md, the default), "issue23" (the third suite) and "packed" (the fourth)
RANGE_SETS: dict[str, dict[str, tuple[str, float, float]]] = {
    "issue11": RANGES,
    "issue23": ISSUE23_RANGES,
    "packed": PACKED_RANGES,
}

# the entropy that seeds a suite of each range set, with the suite's seed before it
_SUITE_KEYS = {"issue11": 0x200, "issue23": 0x223, "packed": 0x224}


@dataclass(frozen=True)
class ZooSettings:
    """Everything that defines one zoo collection (see :func:`generate` for the model).

    ``measure`` and ``scale`` are what the collection is evaluated with; the
    ``metadata_*`` shares are the clips whose metadata row is dropped, whose genre is
    replaced by another genre, and whose artist is replaced by another artist, in the
    metadata the estimators see (the systems and the true scores use the real one).
    ``quality_low`` and ``quality_high`` are the interval the teams' qualities are
    spread over (:func:`generate`'s options of those names); None for the whole of [0, 1],
    as in the first two suites, whose settings (and their dictionaries) are unchanged.
    ``common_view_sd`` is :func:`generate`'s option of that name (the view error every
    system shares); None for its default, as in the first three suites.
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
    quality_low: float | None = None
    quality_high: float | None = None
    common_view_sd: float | None = None

    def as_dict(self) -> dict[str, object]:
        """The settings as a dictionary; the quality interval and the common view error
        only where they are set."""
        d = asdict(self)
        if self.quality_low is None and self.quality_high is None:
            del d["quality_low"], d["quality_high"]
        if self.common_view_sd is None:
            del d["common_view_sd"]
        return d

    @property
    def quality_range(self) -> tuple[float, float] | None:
        if self.quality_low is None or self.quality_high is None:
            return None
        return (self.quality_low, self.quality_high)

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


def _draw(
    rng: np.random.Generator, name: str, ranges: dict[str, tuple[str, float, float]] = RANGES
) -> float:
    kind, low, high = ranges[name]
    if kind == "log":
        return float(np.exp(rng.uniform(np.log(low), np.log(high))))
    if kind == "int":
        return float(rng.integers(int(low), int(high) + 1))
    return float(rng.uniform(low, high))


def draw_settings(
    rng: np.random.Generator,
    index: int,
    ranges: dict[str, tuple[str, float, float]] = RANGES,
) -> ZooSettings:
    """One collection's settings from ``ranges``; measure and scale cycle with ``index``.

    ``measure`` is ``MEASURES[index % 4]`` and ``scale`` is ``SCALES[(index // 4) % 2]``:
    every 8 consecutive collections cover each measure on each scale once. Ranges with
    ``quality_width`` and ``quality_centre`` (the third suite's) draw them last, so a
    range set without them draws exactly what it drew before they existed.
    """

    def draw(name: str) -> float:
        return _draw(rng, name, ranges)

    n_systems = round(draw("n_systems"))
    n_queries = round(draw("n_queries"))
    k = round(draw("k"))
    n_teams = max(1, min(n_systems, round(draw("team_share") * n_systems)))
    n_weak = min(round(draw("n_weak")), n_systems // 4)
    n_genres = round(draw("n_genres"))
    docs_per_genre = round(draw("docs_per_genre"))
    n_docs = n_genres * docs_per_genre
    n_artists = max(n_genres, round(n_docs / draw("clips_per_artist")))
    difficulty_sd = draw("difficulty_sd")
    noise_sd = draw("noise_sd")
    heavy = rng.uniform() < ranges["heavy_tail_probability"][1]
    df = draw("noise_df")
    settings = ZooSettings(
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
        artist_effect_sd=draw("artist_effect_sd"),
        genre_effect_sd=draw("genre_effect_sd"),
        hidden_sd=draw("hidden_sd"),
        skill_sd=draw("skill_sd"),
        metadata_missing=draw("metadata_missing"),
        metadata_wrong_genre=draw("metadata_wrong_genre"),
        metadata_wrong_artist=draw("metadata_wrong_artist"),
        measure=MEASURES[index % len(MEASURES)],
        scale=SCALES[(index // len(MEASURES)) % len(SCALES)],
    )
    if "quality_width" in ranges:
        width = draw("quality_width")
        centre = draw("quality_centre")
        low, high = max(0.0, centre - width / 2), min(1.0, centre + width / 2)
        settings = replace(settings, quality_low=low, quality_high=high)
    if "common_view_sd" in ranges:
        settings = replace(settings, common_view_sd=draw("common_view_sd"))
    return settings


def suite_settings(n: int, seed: int = 0, ranges: str = "issue11") -> list[ZooSettings]:
    """The settings of a suite of ``n`` collections, reproducible from ``seed``.

    ``ranges`` names the range set (:data:`RANGE_SETS`): "issue11" for suites 0 and 1 of
    docs/calibration.md, "issue23" for the third suite. The first ``m`` settings of a
    suite are the same for every ``n >= m``.
    """
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    if ranges not in RANGE_SETS:
        raise ValueError(f"ranges must be one of {', '.join(RANGE_SETS)}, got {ranges!r}")
    rng = np.random.default_rng(np.random.SeedSequence([seed, _SUITE_KEYS[ranges]]))
    return [draw_settings(rng, i, RANGE_SETS[ranges]) for i in range(n)]


def smoke_sized(settings: ZooSettings, n_systems: int, n_queries: int) -> ZooSettings:
    """``settings`` cut down for a smoke run (a benchmark's ``--quick``): at most ``n_systems``
    systems x ``n_queries`` queries, 6 teams and 1 weak system, 5 genres of 150 documents by
    60 artists."""
    return replace(
        settings,
        n_systems=min(settings.n_systems, n_systems),
        n_queries=min(settings.n_queries, n_queries),
        n_teams=min(settings.n_teams, 6),
        n_weak=min(settings.n_weak, 1),
        n_genres=5,
        docs_per_genre=150,
        n_artists=60,
    )


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
        **_quality_options(settings),
    )
    artist, genre = _observed_metadata(collection, settings)
    return ZooCollection(settings, replace(collection, artist=artist, genre=genre))


def _quality_options(settings: ZooSettings) -> dict[str, float]:
    """:func:`generate`'s quality interval options for ``settings`` (none by default)."""
    options: dict[str, float] = {}
    if settings.quality_range is not None:
        options["quality_low"], options["quality_high"] = settings.quality_range
    if settings.common_view_sd is not None:
        options["common_view_sd"] = settings.common_view_sd
    return options


def calibration_suite(n: int, seed: int = 0, ranges: str = "issue11") -> Iterator[ZooCollection]:
    """``n`` zoo collections drawn with :func:`suite_settings`, generated one at a time."""
    for settings in suite_settings(n, seed, ranges):
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
