"""The true scores of a synthetic collection's pairs (:mod:`mtcjudge.mtc.synthetic`): FINE
from the genres, the styles' closeness, the query's difficulty, judgment effects and noise;
BROAD cut from FINE plus assessor noise. The noise is a hash of the pair, so a pair's scores
depend on the seed only, never on which systems retrieved it."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.stats import t as student_t

__all__ = [
    "CLIP_STYLE_SD",
    "FINE_DIFFICULTY_SD",
    "FINE_NOISE_SD",
    "STYLE_DIM",
    "hash_normal",
    "hash_uniform",
    "hidden_component",
    "judgment_effects",
    "splitmix64",
    "true_scores",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

# The style space the clips' closeness is measured in.
STYLE_DIM = 8
CLIP_STYLE_SD = 0.5  # clip style = artist style (sd 1) + this much noise

# True FINE scores.
_FINE_BASE = {"same": 45.0, "related": 30.0, "other": 3.0}
_FINE_STYLE_WEIGHT = 35.0
FINE_DIFFICULTY_SD = 15.0
FINE_NOISE_SD = 18.0
_BROAD_CUTS = (34.0, 67.0)
_BROAD_NOISE_SD = 5.0


def true_scores(
    pair_query: IntArray,
    pair_doc: IntArray,
    doc_genre: IntArray,
    genre_family: IntArray,
    doc_style: FloatArray,
    doc_difficulty: FloatArray,
    key: NDArray[np.uint64],
    n_docs: int,
    *,
    noise_sd: float = FINE_NOISE_SD,
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
    closeness = 1.0 - distance / (2.0 * (1.0 + CLIP_STYLE_SD**2) * STYLE_DIM)
    codes = (pair_query * n_docs + pair_doc).astype(np.uint64)
    fine = base + _FINE_STYLE_WEIGHT * closeness + doc_difficulty[pair_query]
    if effect is not None:
        fine = fine + effect
    if noise_df is None:
        fine += noise_sd * hash_normal(codes, key[0], key[1])
    else:
        # the same uniform draws through the t quantile function, scaled to sd noise_sd
        uniform = hash_uniform(codes, key[0])
        t_scale = noise_sd * np.sqrt((noise_df - 2.0) / noise_df)
        fine += t_scale * student_t.ppf(uniform, noise_df)
    fine = np.clip(np.rint(fine), 0, 100)
    noisy = fine + _BROAD_NOISE_SD * hash_normal(codes, key[2], key[3])
    broad = np.digitize(noisy, _BROAD_CUTS)
    return fine.astype(np.intp), broad.astype(np.intp)


def judgment_effects(
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
        effect = effect + hidden_sd * hidden_component(pair_query, pair_doc, n_docs, hidden_key)
    return np.asarray(effect, dtype=np.float64)


def hidden_component(
    query: IntArray, doc: IntArray, n_docs: int, key: NDArray[np.uint64]
) -> NDArray[np.float32]:
    """``h(q, d) ~ N(0, 1)``: a hash of the pair, the same for the judges and the systems."""
    codes = (query.astype(np.uint64) * np.uint64(n_docs) + doc.astype(np.uint64)).astype(np.uint64)
    return hash_normal(codes, key[0], key[1]).astype(np.float32)


def hash_uniform(codes: NDArray[np.uint64], key: np.uint64) -> FloatArray:
    """Uniform draws in (0, 1) that depend only on each code and the key."""
    return ((splitmix64(codes ^ key) >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


def hash_normal(codes: NDArray[np.uint64], key1: np.uint64, key2: np.uint64) -> FloatArray:
    """Standard normal draws that depend only on each code and the keys (Box-Muller)."""
    first = splitmix64(codes ^ key1)
    second = splitmix64(first ^ key2)
    scale = 2.0**-53
    u1 = ((first >> np.uint64(11)).astype(np.float64) + 0.5) * scale
    u2 = ((second >> np.uint64(11)).astype(np.float64) + 0.5) * scale
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def splitmix64(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))
