"""The systems of a synthetic collection (:mod:`mtcjudge.mtc.synthetic`): teams, their
qualities, and each system's filtered top k by the cosine similarity of its noisy view of the
clips (the module docstring of :mod:`mtcjudge.mtc.synthetic` has the model)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mtcjudge.mtc.synthetic_scores import hidden_component

__all__ = [
    "VIEW_COMMON_BIAS_SD",
    "WEAK_QUALITY",
    "clip_features",
    "draw_systems",
    "draw_teams",
    "run_systems",
    "top_k",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

# Systems' views.
_VIEW_GENRE_WEIGHT = 1.5
_VIEW_FAMILY_WEIGHT = 1.2
VIEW_COMMON_BIAS_SD = 0.3  # per-dimension sd of a view error common to all systems
_VIEW_EMPHASIS_SD = 0.3  # log-normal sd of a team's per-feature emphasis
_VIEW_NOISE_BEST = 0.3  # per-dimension noise sd of a system of quality 1
_VIEW_NOISE_WORST = 1.9  # ... and of quality 0
_QUALITY_WITHIN_TEAM_SD = 0.06
_TEAM_SHARED_NOISE = (0.8, 0.98)  # range of the share of noise variance common to a team
WEAK_QUALITY = (-0.8, -0.2)  # quality range of the n_weak option's systems
_BLOCK_ELEMENTS = 1 << 22  # similarity entries computed at once


def draw_systems(
    system_seq: np.random.SeedSequence,
    weak_seq: np.random.SeedSequence,
    skill_seq: np.random.SeedSequence,
    n_systems: int,
    n_teams: int,
    n_weak: int,
    quality_range: tuple[float, float] | None,
    skill_sd: float,
) -> tuple[IntArray, FloatArray, IntArray, FloatArray | None]:
    """Every system's team and quality (:func:`draw_teams`), the weak systems (``n_weak``
    of them, with a quality drawn from :data:`WEAK_QUALITY`) and every system's skill at the
    hidden component (None with ``skill_sd`` 0), each from its own random stream."""
    system_team, quality = draw_teams(
        np.random.default_rng(system_seq), n_systems, n_teams, quality_range
    )
    weak = np.empty(0, dtype=np.intp)
    if n_weak:
        weak_rng = np.random.default_rng(weak_seq)
        weak = np.sort(weak_rng.choice(n_systems, size=n_weak, replace=False))
        quality = quality.copy()
        quality[weak] = weak_rng.uniform(*WEAK_QUALITY, size=n_weak)
    skill: FloatArray | None = None
    if skill_sd > 0:
        skill_rng = np.random.default_rng(skill_seq)
        team_skill = skill_sd * skill_rng.standard_normal(n_teams)
        skill = team_skill[system_team] + 0.5 * skill_sd * skill_rng.standard_normal(n_systems)
    return system_team, quality, weak, skill


def draw_teams(
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


def clip_features(doc_genre: IntArray, genre_family: IntArray, doc_style: FloatArray) -> FloatArray:
    """Noise-free clip features, shape (n_docs, n_genres + n_families + style dim)."""
    n_genres = genre_family.size
    n_families = int(genre_family.max()) + 1
    genre_part = _VIEW_GENRE_WEIGHT * np.eye(n_genres)[doc_genre]
    family_part = _VIEW_FAMILY_WEIGHT * np.eye(n_families)[genre_family[doc_genre]]
    return np.hstack([genre_part, family_part, doc_style])


def run_systems(
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
    common_view_sd: float = VIEW_COMMON_BIAS_SD,
) -> IntArray:
    """Filtered top k of every system, shape (n_systems, n_queries, k), as doc indices.

    Every team and system draws from its own child seed sequence, so a system's
    runs do not depend on the order in which systems are computed. With ``skill``
    (one per system) and ``hidden_key``, system ``s`` adds ``skill[s] * h(q, d)`` to its
    cosine similarities, ``h`` the hidden component of the true scores.
    """
    hidden: NDArray[np.float32] | None = None
    if skill is not None and hidden_key is not None:
        hidden = hidden_component(
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
            top[system] = top_k(
                view.astype(np.float32), query_doc, excluded_rows, excluded_docs, k, bonus
            )
    return top


def top_k(
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
