"""Seeded synthetic MIREX-style Audio Music Similarity collections.

Used as small fixtures for the test suite (which must not depend on real data),
for large-scale benchmarks and for demo campaigns. The defaults mimic MIREX 2011
AMS (18 systems x 100 queries x top 5 over 10 genres x 700 clips, ~600 artists);
the statistics the model is tuned to reproduce are those of that edition.

Generative model
----------------
Collection
    ``n_genres * docs_per_genre`` clips. Genres are grouped into families of about
    three *related* genres (e.g. baroque / classical / romantic). Every genre has
    about ``n_artists / n_genres`` artists with log-normally skewed clip counts
    (many artists with a handful of clips, a few with dozens). A few clips (0.2 %)
    swap artists with a clip of a related genre, so artists belong to one genre
    *mostly* (about 2 % span two, as in MIREX 2011). Each artist has a latent
    *style* vector and each clip a style vector ``artist style + clip noise``.
    Queries are drawn stratified by genre.

True judgments
    For a query ``q`` and a candidate ``d`` the FINE score is ::

        fine = clip(round(base[relation(q, d)] + 35 * closeness(q, d)
                          + difficulty[q] + noise[q, d]), 0, 100)

    where ``relation`` is same genre / related genre / unrelated genre (bases
    45 / 30 / 3), ``closeness`` is the style closeness (0 for a random pair, up to
    1 for identical styles), ``difficulty ~ N(0, 15)`` is a per-query shift and
    ``noise ~ N(0, 18)`` a per-pair draw. Pooled pairs then average about 60 for
    the same genre, 45 for a related and 20 for an unrelated genre, about 15 % of
    the scores are below 10, and clips of one artist get correlated scores for a
    query. BROAD is FINE plus ``N(0, 5)`` assessor noise, cut at 34 and 67 into
    0 / 1 / 2. The noise is a hash of the pair, so a pair's scores depend only on
    the seed, never on which systems retrieved it.

Systems
    Systems belong to teams. A system sees every clip through a noisy *view*:
    the clip's features (genre one-hot, family one-hot, style) re-weighted by a
    team-specific emphasis, plus a small error common to all systems (they use
    similar audio features), plus Gaussian noise of which 80-98 % is shared by the
    systems of a team. A system's *quality* (spread evenly over teams, similar
    within a team) sets the level of that noise. For each query a system ranks all
    clips by cosine similarity of the views, so it favours same-genre clips and
    clips of the artists it already retrieves; it removes the query and every clip
    of the query's artist (MIREX filtering) and keeps the top ``k``.

At the defaults this reproduces MIREX 2011 closely: mean CG_l@5 of the systems
from about 0.30 to 0.60 (same-genre precision 0.2 to 0.7); systems of a team
share 20-75 % of their results and the best systems of different teams up to
15 %; the pool holds about 75 % of the retrieved results (MIREX 2011: 70 %);
pairs retrieved by more systems score higher.

Options for calibration studies
-------------------------------
Keyword options of :func:`generate` (all off by default) widen the model to what
other campaigns may show: heavier-tailed pair noise (Student-t), judgment effects
of artists and of genre pairs that no feature predicts, a hidden component of the
true scores that systems exploit with a team- and system-specific *skill* (so the
estimation errors of one system's results are correlated), weak systems, and
team qualities spread over a narrower interval than ``[0, 1]`` (systems closer
together). ``bench/experiments/synthetic_zoo.py`` draws these settings for the
calibration benchmark.

All work per system is one dense ``(queries, docs)`` similarity block from a
matrix product, cut with ``argpartition``; ``generate(100, 1000, 10)`` takes
about 4 s.

This module draws the clips and the queries and puts the collection together; the systems
are :mod:`mtcjudge.mtc.synthetic_systems`' and the true scores
:mod:`mtcjudge.mtc.synthetic_scores`'.

Examples
--------
>>> collection = generate(n_systems=4, n_queries=3, k=5, seed=1)
>>> len(collection.runs["S01"][collection.queries[0]])
5
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from mtcjudge.mtc.synthetic_scores import (
    CLIP_STYLE_SD,
    FINE_DIFFICULTY_SD,
    FINE_NOISE_SD,
    STYLE_DIM,
    judgment_effects,
    true_scores,
)
from mtcjudge.mtc.synthetic_systems import (
    VIEW_COMMON_BIAS_SD,
    clip_features,
    draw_systems,
    run_systems,
)

__all__ = ["SyntheticCollection", "generate"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

# Collection structure.
_GENRES_PER_FAMILY = 3
_ARTIST_SIZE_SIGMA = 1.0  # log-normal sigma of the artists' clip-count weights
_CROSS_GENRE_SHARE = 0.002  # share of clips that swap artists with a related genre


@dataclass(frozen=True)
class SyntheticCollection:
    """A synthetic AMS test collection with complete judgments.

    Attributes
    ----------
    systems : list of str
        System ids ``"S01"``, ``"S02"``, ...
    teams : dict of str to str
        System id to team id (``"T01"``, ...).
    queries : list of str
        Query ids; every query is also a document of the collection.
    runs : dict of str to dict of str to list of str
        ``runs[system][query]`` is the filtered top ``k`` in rank order: exactly
        ``k`` distinct documents, never the query nor a clip of its artist.
    fine : dict of (str, str) to float
        True FINE score (an integer in 0..100) of every pool pair (query, doc).
    broad : dict of (str, str) to int
        BROAD score (0, 1 or 2) of the same pairs, consistent with ``fine``.
    artist, genre : dict of str to str
        Metadata of every document, queries included.
    weak_systems : list of str
        Systems generated with the ``n_weak`` option (empty by default).
    """

    systems: list[str]
    teams: dict[str, str]
    queries: list[str]
    runs: dict[str, dict[str, list[str]]]
    fine: dict[tuple[str, str], float]
    broad: dict[tuple[str, str], int]
    artist: dict[str, str]
    genre: dict[str, str]
    weak_systems: list[str] = field(default_factory=list)

    def write(self, directory: str | Path) -> dict[str, Path]:
        """Write the collection as TAB-separated files without header.

        Files: ``runs.tsv`` (``system query doc``, lines of one list in rank
        order), ``judgments-fine.tsv`` and ``judgments-broad.tsv`` (``query doc
        score``) and ``metadata.tsv`` (``doc artist genre``).

        Parameters
        ----------
        directory : str or Path
            Created if missing.

        Returns
        -------
        dict of str to Path
            Paths by name: ``"runs"``, ``"judgments-fine"``, ``"judgments-broad"``,
            ``"metadata"``.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        paths = {
            name: directory / f"{name}.tsv"
            for name in ("runs", "judgments-fine", "judgments-broad", "metadata")
        }
        _write_lines(
            paths["runs"],
            (
                f"{system}\t{query}\t{doc}"
                for system in self.systems
                for query in self.queries
                for doc in self.runs[system][query]
            ),
        )
        pairs = sorted(self.fine)
        _write_lines(
            paths["judgments-fine"], (f"{q}\t{d}\t{round(self.fine[q, d])}" for q, d in pairs)
        )
        _write_lines(paths["judgments-broad"], (f"{q}\t{d}\t{self.broad[q, d]}" for q, d in pairs))
        _write_lines(
            paths["metadata"],
            (f"{doc}\t{self.artist[doc]}\t{self.genre[doc]}" for doc in sorted(self.artist)),
        )
        return paths


# 132 lines, 80 of them the signature and the docstring of its 19 options
def generate(
    n_systems: int = 18,
    n_queries: int = 100,
    k: int = 5,
    *,
    n_genres: int = 10,
    docs_per_genre: int = 700,
    n_artists: int = 600,
    n_teams: int | None = None,
    seed: int = 0,
    difficulty_sd: float = FINE_DIFFICULTY_SD,
    noise_sd: float = FINE_NOISE_SD,
    noise_df: float | None = None,
    artist_effect_sd: float = 0.0,
    genre_effect_sd: float = 0.0,
    hidden_sd: float = 0.0,
    skill_sd: float = 0.0,
    n_weak: int = 0,
    quality_low: float = 0.0,
    quality_high: float = 1.0,
    common_view_sd: float = VIEW_COMMON_BIAS_SD,
) -> SyntheticCollection:
    """Generate a synthetic AMS collection (see the module docstring for the model).

    Parameters
    ----------
    n_systems, n_queries, k : int
        Number of systems, of queries and the length of every result list.
    n_genres, docs_per_genre : int
        The collection has ``n_genres * docs_per_genre`` clips, balanced by genre.
    n_artists : int
        Number of artists, at least ``n_genres`` and at most the number of clips;
        every artist has at least one clip when ``docs_per_genre`` allows it.
    n_teams : int, optional
        Number of teams (between 1 and ``n_systems``); by default
        ``round(0.6 * n_systems)``, as in MIREX 2011 (18 systems by 10-11 teams).
    seed : int
        Seed of everything. The clips, metadata, queries and the true score of a
        given (query, doc) pair do not depend on ``n_systems``, ``n_teams`` or ``k``.
    difficulty_sd, noise_sd : float
        Standard deviations (FINE points) of the per-query shift and of the per-pair
        noise of the true scores (defaults 15 and 18).
    noise_df : float, optional
        Degrees of freedom (> 2) of Student-t per-pair noise, scaled to the standard
        deviation ``noise_sd`` (heavy tails); None (default) for normal noise.
    artist_effect_sd, genre_effect_sd : float
        Judgment effects no feature predicts: every artist gets an offset
        ``N(0, artist_effect_sd)`` added to the scores of its clips as candidates, every
        (query genre, candidate genre) cell an offset ``N(0, genre_effect_sd)``
        (default 0: none).
    hidden_sd, skill_sd : float
        A hidden per-pair component ``hidden_sd * h(q, d)`` with ``h ~ N(0, 1)`` is added
        to the true scores, and system ``s`` ranks by ``cosine + skill_s * h(q, d)`` with
        ``skill_s = team offset + own offset``, ``N(0, skill_sd)`` and
        ``N(0, skill_sd / 2)``: systems (and teams) that find better or worse clips than
        the metadata suggest, so that estimation errors are correlated within systems
        (default 0: none).
    n_weak : int
        This many systems, chosen at random, get a quality drawn uniformly from
        [-0.8, -0.2] instead of their team's (below 0 is noisier than any regular
        system: near-random within a genre).
    quality_low, quality_high : float
        The interval the teams' qualities are spread over (default [0, 1]).
    common_view_sd : float
        Per-dimension standard deviation of the view error common to every system (default
        0.3): larger values make systems of different teams retrieve more of the same clips.

    Every option at its default leaves the collection of a seed exactly as before the
    options existed; the options draw from random streams of their own.

    Returns
    -------
    SyntheticCollection

    Raises
    ------
    ValueError
        If a size is out of range, or some query's artist leaves fewer than ``k``
        candidates.
    """
    n_docs = _checked_sizes(n_systems, n_queries, k, n_genres, docs_per_genre, n_artists)
    _check_effects(
        difficulty_sd=difficulty_sd,
        noise_sd=noise_sd,
        artist_effect_sd=artist_effect_sd,
        genre_effect_sd=genre_effect_sd,
        hidden_sd=hidden_sd,
        skill_sd=skill_sd,
    )
    if not (np.isfinite(common_view_sd) and common_view_sd >= 0):
        raise ValueError(f"common_view_sd must be non-negative, got {common_view_sd}")
    if noise_df is not None and not noise_df > 2.0:
        raise ValueError(f"noise_df must be above 2 (finite variance), got {noise_df}")
    n_teams, quality_range = _checked_teams(n_systems, n_teams, n_weak, quality_low, quality_high)

    root = np.random.SeedSequence(seed)
    collection_seq, query_seq, system_seq, judgment_seq = root.spawn(4)
    # the options' streams come after the four above, so the defaults draw nothing new
    effect_seq, weak_seq, skill_seq = root.spawn(3)
    clips = _draw_clips(
        np.random.default_rng(collection_seq), n_genres, docs_per_genre, n_artists, difficulty_sd
    )
    query_doc = _draw_queries(np.random.default_rng(query_seq), clips.genre, n_queries)
    excluded_rows, excluded_docs = _same_artist(query_doc, clips.artist)
    fewest = n_docs - np.bincount(excluded_rows, minlength=n_queries).max()
    if fewest < k:
        raise ValueError(
            f"k={k} is larger than the {fewest} candidates left for some query after "
            "removing its artist's clips; use a larger collection"
        )
    system_team, quality, weak, skill = draw_systems(
        system_seq, weak_seq, skill_seq, n_systems, n_teams, n_weak, quality_range, skill_sd
    )
    hidden_key = effect_seq.generate_state(2, dtype=np.uint64).astype(np.uint64)
    top = run_systems(
        system_seq,
        clip_features(clips.genre, clips.genre_family, clips.style),
        system_team,
        quality,
        query_doc,
        excluded_rows,
        excluded_docs,
        k,
        skill=skill,
        hidden_key=hidden_key,
        common_view_sd=common_view_sd,
    )
    codes = np.unique(query_doc[None, :, None] * n_docs + top)
    pairs = np.divmod(codes, n_docs)
    effects = _Effects(artist_effect_sd, genre_effect_sd, hidden_sd, hidden_key)
    scores = _pool_scores(clips, pairs, judgment_seq, effect_seq, effects, noise_sd, noise_df)
    return _collection(clips, n_artists, n_teams, system_team, weak, query_doc, top, pairs, scores)


class _Effects(NamedTuple):
    """:func:`generate`'s judgment effects no feature predicts (FINE points) and the key of
    the hidden component's hash."""

    artist_sd: float
    genre_sd: float
    hidden_sd: float
    hidden_key: NDArray[np.uint64]


def _pool_scores(
    clips: _Clips,
    pairs: tuple[IntArray, IntArray],
    judgment_seq: np.random.SeedSequence,
    effect_seq: np.random.SeedSequence,
    effects: _Effects,
    noise_sd: float,
    noise_df: float | None,
) -> tuple[IntArray, IntArray]:
    """True FINE and BROAD scores of the pool ``pairs`` (query and doc indices), with the
    judgment ``effects`` drawn from ``effect_seq`` and the noise keyed by ``judgment_seq``."""
    pair_query, pair_doc = pairs
    n_docs = clips.genre.shape[0]
    return true_scores(
        pair_query,
        pair_doc,
        clips.genre,
        clips.genre_family,
        clips.style,
        clips.difficulty,
        judgment_seq.generate_state(4, dtype=np.uint64).astype(np.uint64),
        n_docs,
        noise_sd=noise_sd,
        noise_df=noise_df,
        effect=judgment_effects(
            np.random.default_rng(effect_seq),
            pair_query,
            pair_doc,
            clips.genre,
            clips.artist,
            n_docs,
            effects.hidden_key,
            artist_effect_sd=effects.artist_sd,
            genre_effect_sd=effects.genre_sd,
            hidden_sd=effects.hidden_sd,
        ),
    )


class _Clips(NamedTuple):
    """The clips of a collection, by doc index: genre, artist, style, difficulty as a query;
    and every genre's family."""

    genre_family: IntArray
    genre: IntArray
    artist: IntArray
    style: FloatArray
    difficulty: FloatArray


def _draw_clips(
    rng: np.random.Generator,
    n_genres: int,
    docs_per_genre: int,
    n_artists: int,
    difficulty_sd: float,
) -> _Clips:
    """Genres, artists and styles of the clips, and their difficulty as queries."""
    n_docs = n_genres * docs_per_genre
    genre_family = _genre_families(n_genres)
    doc_genre = rng.permutation(np.repeat(np.arange(n_genres), docs_per_genre))
    doc_artist = _assign_artists(rng, doc_genre, genre_family, n_artists)
    artist_style = rng.standard_normal((n_artists, STYLE_DIM))
    doc_style = artist_style[doc_artist] + CLIP_STYLE_SD * rng.standard_normal((n_docs, STYLE_DIM))
    doc_difficulty = difficulty_sd * rng.standard_normal(n_docs)
    return _Clips(genre_family, doc_genre, doc_artist, doc_style, doc_difficulty)


def _collection(
    clips: _Clips,
    n_artists: int,
    n_teams: int,
    system_team: IntArray,
    weak: IntArray,
    query_doc: IntArray,
    top: IntArray,
    pairs: tuple[IntArray, IntArray],
    scores: tuple[IntArray, IntArray],
) -> SyntheticCollection:
    """The :class:`SyntheticCollection` of the drawn indices (the pool ``pairs`` as query and
    doc indices, their FINE and BROAD ``scores``), with ids for everything."""
    n_docs, n_systems = clips.genre.shape[0], system_team.shape[0]
    pair_query, pair_doc = pairs
    fine_scores, broad_scores = scores
    doc_ids = _ids("D", n_docs)
    artist_ids = _ids("A", n_artists)
    genre_ids = _ids("G", clips.genre_family.shape[0])
    system_ids = _ids("S", n_systems)
    team_ids = _ids("T", n_teams)
    query_ids = [doc_ids[doc] for doc in query_doc.tolist()]
    pair_keys = [
        (doc_ids[q], doc_ids[d])
        for q, d in zip(pair_query.tolist(), pair_doc.tolist(), strict=True)
    ]
    return SyntheticCollection(
        systems=system_ids,
        teams={system_ids[s]: team_ids[t] for s, t in enumerate(system_team.tolist())},
        queries=query_ids,
        runs={
            system_ids[s]: {
                query_ids[q]: [doc_ids[d] for d in row] for q, row in enumerate(top[s].tolist())
            }
            for s in range(n_systems)
        },
        fine=dict(zip(pair_keys, fine_scores.astype(np.float64).tolist(), strict=True)),
        broad=dict(zip(pair_keys, broad_scores.tolist(), strict=True)),
        artist={doc_ids[i]: artist_ids[a] for i, a in enumerate(clips.artist.tolist())},
        genre={doc_ids[i]: genre_ids[g] for i, g in enumerate(clips.genre.tolist())},
        weak_systems=[system_ids[s] for s in weak.tolist()],
    )


def _checked_sizes(
    n_systems: int, n_queries: int, k: int, n_genres: int, docs_per_genre: int, n_artists: int
) -> int:
    """:func:`generate`'s sizes checked; returned: the number of clips."""
    _check_positive(n_systems=n_systems, n_queries=n_queries, k=k)
    _check_positive(n_genres=n_genres, docs_per_genre=docs_per_genre, n_artists=n_artists)
    n_docs = n_genres * docs_per_genre
    if not n_genres <= n_artists <= n_docs:
        raise ValueError(
            f"n_artists must be between n_genres ({n_genres}) and the number of docs "
            f"({n_docs}), got {n_artists}"
        )
    if n_queries > n_docs:
        raise ValueError(
            f"n_queries must be at most the number of docs ({n_docs}), got {n_queries}"
        )
    return n_docs


def _checked_teams(
    n_systems: int, n_teams: int | None, n_weak: int, quality_low: float, quality_high: float
) -> tuple[int, tuple[float, float] | None]:
    """:func:`generate`'s team options checked: the number of teams (its default filled in)
    and the interval of the teams' qualities (None for the whole of [0, 1])."""
    if not 0 <= n_weak <= n_systems:
        raise ValueError(f"n_weak must be between 0 and n_systems ({n_systems}), got {n_weak}")
    if not (
        np.isfinite(quality_low)
        and np.isfinite(quality_high)
        and 0 <= quality_low <= quality_high <= 1
    ):
        raise ValueError(
            "quality_low and quality_high must satisfy 0 <= quality_low <= quality_high <= 1, "
            f"got {quality_low} and {quality_high}"
        )
    quality_range = (
        None if (quality_low, quality_high) == (0.0, 1.0) else (quality_low, quality_high)
    )
    if n_teams is None:
        n_teams = max(1, round(0.6 * n_systems))
    elif not 1 <= n_teams <= n_systems:
        raise ValueError(f"n_teams must be between 1 and n_systems ({n_systems}), got {n_teams}")
    return n_teams, quality_range


def _check_effects(**sds: float) -> None:
    for name, value in sds.items():
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite non-negative number, got {value}")


def _check_positive(**sizes: int) -> None:
    for name, value in sizes.items():
        if value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value}")


def _ids(prefix: str, n: int) -> list[str]:
    width = max(2, len(str(n)))
    return [f"{prefix}{i:0{width}d}" for i in range(1, n + 1)]


def _genre_families(n_genres: int) -> IntArray:
    """Family index of each genre: contiguous groups of about three genres."""
    n_families = max(1, round(n_genres / _GENRES_PER_FAMILY))
    family = np.empty(n_genres, dtype=np.intp)
    for index, genres in enumerate(np.array_split(np.arange(n_genres), n_families)):
        family[genres] = index
    return family


def _assign_artists(
    rng: np.random.Generator, doc_genre: IntArray, genre_family: IntArray, n_artists: int
) -> IntArray:
    """Artist of each clip: skewed clip counts within a genre, a few cross-genre swaps."""
    n_genres = genre_family.size
    artist_genre = rng.permutation(np.arange(n_artists) % n_genres)
    doc_artist = np.empty(doc_genre.size, dtype=np.intp)
    for genre in range(n_genres):
        docs = rng.permutation(np.flatnonzero(doc_genre == genre))
        artists = np.flatnonzero(artist_genre == genre)
        weights = rng.lognormal(0.0, _ARTIST_SIZE_SIGMA, artists.size)
        weights /= weights.sum()
        guaranteed = 1 if docs.size >= artists.size else 0
        counts = guaranteed + rng.multinomial(docs.size - guaranteed * artists.size, weights)
        doc_artist[docs] = np.repeat(artists, counts)
    # Swapping the artists of two clips keeps every artist's clip count and every
    # genre's size while letting a few artists span related genres.
    n_swaps = round(_CROSS_GENRE_SHARE * doc_genre.size / 2)
    for doc in rng.choice(doc_genre.size, size=n_swaps, replace=False).tolist():
        genre = doc_genre[doc]
        related = (genre_family[doc_genre] == genre_family[genre]) & (doc_genre != genre)
        candidates = np.flatnonzero(related)
        if candidates.size:
            other = rng.choice(candidates)
            doc_artist[[doc, other]] = doc_artist[[other, doc]]
    return doc_artist


def _draw_queries(rng: np.random.Generator, doc_genre: IntArray, n_queries: int) -> IntArray:
    """Query clips stratified by genre (MIREX: 10 per genre), sorted by doc index."""
    n_genres = int(doc_genre.max()) + 1
    per_genre = np.full(n_genres, n_queries // n_genres)
    per_genre[rng.choice(n_genres, size=n_queries % n_genres, replace=False)] += 1
    chosen = [
        rng.choice(np.flatnonzero(doc_genre == genre), size=count, replace=False)
        for genre, count in enumerate(per_genre.tolist())
    ]
    return np.sort(np.concatenate(chosen)).astype(np.intp)


def _same_artist(query_doc: IntArray, doc_artist: IntArray) -> tuple[IntArray, IntArray]:
    """(query row, doc) of every clip by a query's artist, the query itself included."""
    order = np.argsort(doc_artist, kind="stable")
    bounds = np.searchsorted(doc_artist[order], np.arange(int(doc_artist.max()) + 2))
    artists = doc_artist[query_doc]
    sizes = bounds[artists + 1] - bounds[artists]
    rows = np.repeat(np.arange(query_doc.size), sizes)
    offsets = np.arange(rows.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    docs = order[np.repeat(bounds[artists], sizes) + offsets]
    return rows.astype(np.intp), docs.astype(np.intp)


def _write_lines(path: Path, lines: Iterable[str]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for line in lines:
            handle.write(line)
            handle.write("\n")
