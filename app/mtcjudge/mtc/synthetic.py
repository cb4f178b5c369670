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

import numpy as np
from numpy.typing import NDArray
from scipy.stats import t as student_t

__all__ = ["SyntheticCollection", "generate"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

# Collection structure.
_GENRES_PER_FAMILY = 3
_STYLE_DIM = 8
_CLIP_STYLE_SD = 0.5  # clip style = artist style (sd 1) + this much noise
_ARTIST_SIZE_SIGMA = 1.0  # log-normal sigma of the artists' clip-count weights
_CROSS_GENRE_SHARE = 0.002  # share of clips that swap artists with a related genre

# True FINE scores.
_FINE_BASE = {"same": 45.0, "related": 30.0, "other": 3.0}
_FINE_STYLE_WEIGHT = 35.0
_FINE_DIFFICULTY_SD = 15.0
_FINE_NOISE_SD = 18.0
_BROAD_CUTS = (34.0, 67.0)
_BROAD_NOISE_SD = 5.0

# Systems' views.
_VIEW_GENRE_WEIGHT = 1.5
_VIEW_FAMILY_WEIGHT = 1.2
_VIEW_COMMON_BIAS_SD = 0.3  # per-dimension sd of a view error common to all systems
_VIEW_EMPHASIS_SD = 0.3  # log-normal sd of a team's per-feature emphasis
_VIEW_NOISE_BEST = 0.3  # per-dimension noise sd of a system of quality 1
_VIEW_NOISE_WORST = 1.9  # ... and of quality 0
_QUALITY_WITHIN_TEAM_SD = 0.06
_TEAM_SHARED_NOISE = (0.8, 0.98)  # range of the share of noise variance common to a team
_WEAK_QUALITY = (-0.8, -0.2)  # quality range of the n_weak option's systems
_BLOCK_ELEMENTS = 1 << 22  # similarity entries computed at once


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
    difficulty_sd: float = _FINE_DIFFICULTY_SD,
    noise_sd: float = _FINE_NOISE_SD,
    noise_df: float | None = None,
    artist_effect_sd: float = 0.0,
    genre_effect_sd: float = 0.0,
    hidden_sd: float = 0.0,
    skill_sd: float = 0.0,
    n_weak: int = 0,
    quality_low: float = 0.0,
    quality_high: float = 1.0,
    common_view_sd: float = _VIEW_COMMON_BIAS_SD,
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

    root = np.random.SeedSequence(seed)
    collection_seq, query_seq, system_seq, judgment_seq = root.spawn(4)
    # the options' streams come after the four above, so the defaults draw nothing new
    effect_seq, weak_seq, skill_seq = root.spawn(3)
    collection_rng = np.random.default_rng(collection_seq)
    genre_family = _genre_families(n_genres)
    doc_genre = collection_rng.permutation(np.repeat(np.arange(n_genres), docs_per_genre))
    doc_artist = _assign_artists(collection_rng, doc_genre, genre_family, n_artists)
    artist_style = collection_rng.standard_normal((n_artists, _STYLE_DIM))
    doc_style = artist_style[doc_artist] + _CLIP_STYLE_SD * collection_rng.standard_normal(
        (n_docs, _STYLE_DIM)
    )
    doc_difficulty = difficulty_sd * collection_rng.standard_normal(n_docs)

    query_doc = _draw_queries(np.random.default_rng(query_seq), doc_genre, n_queries)
    excluded_rows, excluded_docs = _same_artist(query_doc, doc_artist)
    fewest = n_docs - np.bincount(excluded_rows, minlength=n_queries).max()
    if fewest < k:
        raise ValueError(
            f"k={k} is larger than the {fewest} candidates left for some query after "
            "removing its artist's clips; use a larger collection"
        )

    system_team, quality = _teams(
        np.random.default_rng(system_seq), n_systems, n_teams, quality_range
    )
    weak = np.empty(0, dtype=np.intp)
    if n_weak:
        weak_rng = np.random.default_rng(weak_seq)
        weak = np.sort(weak_rng.choice(n_systems, size=n_weak, replace=False))
        quality = quality.copy()
        quality[weak] = weak_rng.uniform(*_WEAK_QUALITY, size=n_weak)
    hidden_key = effect_seq.generate_state(2, dtype=np.uint64).astype(np.uint64)
    skill: FloatArray | None = None
    if skill_sd > 0:
        skill_rng = np.random.default_rng(skill_seq)
        team_skill = skill_sd * skill_rng.standard_normal(n_teams)
        skill = team_skill[system_team] + 0.5 * skill_sd * skill_rng.standard_normal(n_systems)
    top = _run_systems(
        system_seq,
        _features(doc_genre, genre_family, doc_style),
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
    pair_query, pair_doc = np.divmod(codes, n_docs)
    fine_scores, broad_scores = _judge(
        pair_query,
        pair_doc,
        doc_genre,
        genre_family,
        doc_style,
        doc_difficulty,
        judgment_seq.generate_state(4, dtype=np.uint64).astype(np.uint64),
        n_docs,
        noise_sd=noise_sd,
        noise_df=noise_df,
        effect=_judgment_effects(
            np.random.default_rng(effect_seq),
            pair_query,
            pair_doc,
            doc_genre,
            doc_artist,
            n_docs,
            hidden_key,
            artist_effect_sd=artist_effect_sd,
            genre_effect_sd=genre_effect_sd,
            hidden_sd=hidden_sd,
        ),
    )

    doc_ids = _ids("D", n_docs)
    artist_ids = _ids("A", n_artists)
    genre_ids = _ids("G", n_genres)
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
        artist={doc_ids[i]: artist_ids[a] for i, a in enumerate(doc_artist.tolist())},
        genre={doc_ids[i]: genre_ids[g] for i, g in enumerate(doc_genre.tolist())},
        weak_systems=[system_ids[s] for s in weak.tolist()],
    )


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


def _teams(
    rng: np.random.Generator,
    n_systems: int,
    n_teams: int,
    quality_range: tuple[float, float] | None = None,
) -> tuple[IntArray, FloatArray]:
    """Team of each system and its quality in [0, 1], spread evenly over teams.

    With ``quality_range`` the teams' qualities are spread over that interval instead
    (the same draws, mapped linearly, so the option costs no random numbers).
    """
    extra = rng.integers(0, n_teams, size=n_systems - n_teams)
    system_team = rng.permutation(np.concatenate([np.arange(n_teams), extra]))
    # Number teams by first appearance so that S01 is in T01.
    _, first = np.unique(system_team, return_index=True)
    relabel = np.empty(n_teams, dtype=np.intp)
    relabel[np.argsort(first)] = np.arange(n_teams)
    system_team = relabel[system_team]
    team_quality = (rng.permutation(n_teams) + rng.uniform(size=n_teams)) / n_teams
    if quality_range is not None:
        low, high = quality_range
        team_quality = low + (high - low) * team_quality
    jitter = _QUALITY_WITHIN_TEAM_SD * rng.standard_normal(n_systems)
    quality = np.clip(team_quality[system_team] + jitter, 0.0, 1.0)
    return system_team.astype(np.intp), quality


def _features(doc_genre: IntArray, genre_family: IntArray, doc_style: FloatArray) -> FloatArray:
    """Noise-free clip features, shape (n_docs, n_genres + n_families + style dim)."""
    n_genres = genre_family.size
    n_families = int(genre_family.max()) + 1
    genre_part = _VIEW_GENRE_WEIGHT * np.eye(n_genres)[doc_genre]
    family_part = _VIEW_FAMILY_WEIGHT * np.eye(n_families)[genre_family[doc_genre]]
    return np.hstack([genre_part, family_part, doc_style])


def _run_systems(
    seed_sequence: np.random.SeedSequence,
    features: FloatArray,
    system_team: IntArray,
    quality: FloatArray,
    query_doc: IntArray,
    excluded_rows: IntArray,
    excluded_docs: IntArray,
    k: int,
    *,
    skill: FloatArray | None = None,
    hidden_key: NDArray[np.uint64] | None = None,
    common_view_sd: float = _VIEW_COMMON_BIAS_SD,
) -> IntArray:
    """Filtered top k of every system, shape (n_systems, n_queries, k), as doc indices.

    Every team and system draws from its own child seed sequence, so a system's
    runs do not depend on the order in which systems are computed. With ``skill``
    (one per system) and ``hidden_key``, system ``s`` adds ``skill[s] * h(q, d)`` to its
    cosine similarities, ``h`` the hidden component of the true scores.
    """
    hidden: NDArray[np.float32] | None = None
    if skill is not None and hidden_key is not None:
        hidden = _hidden_component(
            np.repeat(query_doc, features.shape[0]),
            np.tile(np.arange(features.shape[0]), query_doc.size),
            features.shape[0],
            hidden_key,
        ).reshape(query_doc.size, features.shape[0])
    n_systems, n_teams = system_team.size, int(system_team.max()) + 1
    children = seed_sequence.spawn(n_teams + n_systems + 1)
    common_bias = common_view_sd * np.random.default_rng(children[-1]).standard_normal(
        features.shape
    )
    top = np.empty((n_systems, query_doc.size, k), dtype=np.intp)
    for team in range(n_teams):
        team_rng = np.random.default_rng(children[team])
        emphasis = np.exp(_VIEW_EMPHASIS_SD * team_rng.standard_normal(features.shape[1]))
        signal = features * emphasis + common_bias
        shared_share = team_rng.uniform(*_TEAM_SHARED_NOISE)
        shared_noise = np.sqrt(shared_share) * team_rng.standard_normal(features.shape)
        for system in np.flatnonzero(system_team == team).tolist():
            own_noise = np.random.default_rng(children[n_teams + system]).standard_normal(
                features.shape
            )
            noise_sd = _VIEW_NOISE_WORST * (_VIEW_NOISE_BEST / _VIEW_NOISE_WORST) ** quality[system]
            view = signal + noise_sd * (shared_noise + np.sqrt(1.0 - shared_share) * own_noise)
            view /= np.linalg.norm(view, axis=1, keepdims=True)
            bonus = None if hidden is None or skill is None else hidden * np.float32(skill[system])
            top[system] = _top_k(
                view.astype(np.float32), query_doc, excluded_rows, excluded_docs, k, bonus
            )
    return top


def _top_k(
    view: NDArray[np.float32],
    query_doc: IntArray,
    excluded_rows: IntArray,
    excluded_docs: IntArray,
    k: int,
    bonus: NDArray[np.float32] | None = None,
) -> IntArray:
    """Filtered top k of every query by cosine similarity (plus ``bonus``, shape
    (n_queries, n_docs), when given), shape (n_queries, k)."""
    n_queries, n_docs = query_doc.size, view.shape[0]
    block = max(1, _BLOCK_ELEMENTS // n_docs)
    top = np.empty((n_queries, k), dtype=np.intp)
    for start in range(0, n_queries, block):
        stop = min(start + block, n_queries)
        scores = view[query_doc[start:stop]] @ view.T
        if bonus is not None:
            scores += bonus[start:stop]
        lo, hi = np.searchsorted(excluded_rows, [start, stop])
        scores[excluded_rows[lo:hi] - start, excluded_docs[lo:hi]] = -np.inf
        best = np.argpartition(scores, n_docs - k, axis=1)[:, n_docs - k :]
        order = np.argsort(-np.take_along_axis(scores, best, axis=1), axis=1, kind="stable")
        top[start:stop] = np.take_along_axis(best, order, axis=1)
    return top


def _judge(
    pair_query: IntArray,
    pair_doc: IntArray,
    doc_genre: IntArray,
    genre_family: IntArray,
    doc_style: FloatArray,
    doc_difficulty: FloatArray,
    key: NDArray[np.uint64],
    n_docs: int,
    *,
    noise_sd: float = _FINE_NOISE_SD,
    noise_df: float | None = None,
    effect: FloatArray | None = None,
) -> tuple[IntArray, IntArray]:
    """True FINE (0..100) and BROAD (0..2) scores of pairs given as doc indices.

    ``effect`` (one per pair, FINE points) is added before the noise; ``noise_df``
    makes the per-pair noise Student-t with that many degrees of freedom and standard
    deviation ``noise_sd``.
    """
    query_genre, doc_genre_ = doc_genre[pair_query], doc_genre[pair_doc]
    related = genre_family[query_genre] == genre_family[doc_genre_]
    base = np.where(
        query_genre == doc_genre_,
        _FINE_BASE["same"],
        np.where(related, _FINE_BASE["related"], _FINE_BASE["other"]),
    )
    distance = np.sum((doc_style[pair_query] - doc_style[pair_doc]) ** 2, axis=1)
    closeness = 1.0 - distance / (2.0 * (1.0 + _CLIP_STYLE_SD**2) * _STYLE_DIM)
    codes = (pair_query * n_docs + pair_doc).astype(np.uint64)
    fine = base + _FINE_STYLE_WEIGHT * closeness + doc_difficulty[pair_query]
    if effect is not None:
        fine = fine + effect
    if noise_df is None:
        fine += noise_sd * _hash_normal(codes, key[0], key[1])
    else:
        # the same uniform draws through the t quantile function, scaled to sd noise_sd
        uniform = _hash_uniform(codes, key[0])
        t_scale = noise_sd * np.sqrt((noise_df - 2.0) / noise_df)
        fine += t_scale * student_t.ppf(uniform, noise_df)
    fine = np.clip(np.rint(fine), 0, 100)
    noisy = fine + _BROAD_NOISE_SD * _hash_normal(codes, key[2], key[3])
    broad = np.digitize(noisy, _BROAD_CUTS)
    return fine.astype(np.intp), broad.astype(np.intp)


def _judgment_effects(
    rng: np.random.Generator,
    pair_query: IntArray,
    pair_doc: IntArray,
    doc_genre: IntArray,
    doc_artist: IntArray,
    n_docs: int,
    hidden_key: NDArray[np.uint64],
    *,
    artist_effect_sd: float,
    genre_effect_sd: float,
    hidden_sd: float,
) -> FloatArray | None:
    """Per-pair judgment effects no feature predicts (FINE points), or None when all are 0."""
    if artist_effect_sd == 0 and genre_effect_sd == 0 and hidden_sd == 0:
        return None
    n_genres = int(doc_genre.max()) + 1
    artist_effect = artist_effect_sd * rng.standard_normal(int(doc_artist.max()) + 1)
    genre_effect = genre_effect_sd * rng.standard_normal((n_genres, n_genres))
    effect = artist_effect[doc_artist[pair_doc]]
    effect = effect + genre_effect[doc_genre[pair_query], doc_genre[pair_doc]]
    if hidden_sd > 0:
        effect = effect + hidden_sd * _hidden_component(pair_query, pair_doc, n_docs, hidden_key)
    return np.asarray(effect, dtype=np.float64)


def _hidden_component(
    query: IntArray, doc: IntArray, n_docs: int, key: NDArray[np.uint64]
) -> NDArray[np.float32]:
    """``h(q, d) ~ N(0, 1)``: a hash of the pair, the same for the judges and the systems."""
    codes = (query.astype(np.uint64) * np.uint64(n_docs) + doc.astype(np.uint64)).astype(np.uint64)
    return _hash_normal(codes, key[0], key[1]).astype(np.float32)


def _hash_uniform(codes: NDArray[np.uint64], key: np.uint64) -> FloatArray:
    """Uniform draws in (0, 1) that depend only on each code and the key."""
    return ((_splitmix64(codes ^ key) >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


def _hash_normal(codes: NDArray[np.uint64], key1: np.uint64, key2: np.uint64) -> FloatArray:
    """Standard normal draws that depend only on each code and the keys (Box-Muller)."""
    first = _splitmix64(codes ^ key1)
    second = _splitmix64(first ^ key2)
    scale = 2.0**-53
    u1 = ((first >> np.uint64(11)).astype(np.float64) + 0.5) * scale
    u2 = ((second >> np.uint64(11)).astype(np.float64) + 0.5) * scale
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def _splitmix64(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _write_lines(path: Path, lines: Iterable[str]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for line in lines:
            handle.write(line)
            handle.write("\n")
