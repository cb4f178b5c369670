"""The exports of what the campaign's engine estimates: the unjudged pairs' expected
relevance (estimates), what it expects of every system's result (entries), and the offsets
and variance factors the results' variances need (offsets)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from mtcjudge.campaign_engine.build import CampaignEngine, load_campaign_engine
from mtcjudge.exports import repository
from mtcjudge.ingest.loader import DEFAULT_VARIOUS_ARTISTS
from mtcjudge.models import Campaign
from mtcjudge.mtc.engine import MTCEngine
from mtcjudge.mtc.estimators import SOURCE_JUDGED, SOURCE_M_JUD, SOURCE_M_OUT, SOURCE_PRIOR
from mtcjudge.mtc.scales import get_scale

ESTIMATE_COLUMNS = (
    "query",
    "document",
    "scale",
    "expected_relevance",
    "variance",
    "estimator",
    "source",
)
#: every entry the engine scores (a result of one system): what the engine expects of it
ENTRY_COLUMNS = (
    "system",
    "query",
    "document",
    "rank",
    "scale",
    "judged",
    "expected_relevance",
    "pair_expected_relevance",
    "offset",
    "variance",
    "group",
    "artist",
    "query_genre",
    "genre",
    "stratum",
    "estimator",
    "source",
)
#: the columns of the entries export that name the level of each factor of offsets
_FACTOR_COLUMNS: dict[str, tuple[str, ...]] = {
    "system": ("system",),
    "result group": ("system", "group"),
    "query": ("query",),
    "artist": ("artist",),
    "genre pair": ("query_genre", "genre"),
    "estimate stratum": ("stratum",),
}


_SOURCE_NAMES = {SOURCE_PRIOR: "prior", SOURCE_M_OUT: "m_out", SOURCE_M_JUD: "m_jud"}
_ENTRY_SOURCES = {**_SOURCE_NAMES, SOURCE_JUDGED: "judged"}


def estimate_records(
    session: Session, campaign: Campaign, scale: str, state: CampaignEngine | None = None
) -> Iterator[dict[str, Any]]:
    """E[R] and Var[R] (on the scale's levels) of every unjudged pool pair, as the engine
    estimates them now, with the campaign's estimator and the part of it that made the
    estimate (``prior``, ``m_out``, ``m_jud``). ``state``: the campaign's engine on ``scale``
    if already built."""
    state = state or load_campaign_engine(session, campaign, scale=scale)
    engine = state.engine
    labels = _pair_labels(session, campaign, state)
    mean, var, source, judged = _pair_figures(engine)
    for p, label in enumerate(labels):
        if judged[p]:
            continue
        yield {
            "query": label.query,
            "document": label.document,
            "scale": scale,
            "expected_relevance": mean[p],
            "variance": var[p],
            "estimator": campaign.estimator,
            "source": _SOURCE_NAMES.get(source[p], str(source[p])),
        }


def _pair_figures(
    engine: MTCEngine,
) -> tuple[list[float], list[float], list[int], list[bool]]:
    """Every pool pair's estimate, its variance, its source and whether it is judged."""
    return (
        engine.mean.tolist(),
        engine.var.tolist(),
        engine.source.tolist(),
        engine.judged.tolist(),
    )


@dataclass(frozen=True)
class _PairLabel:
    """A pool pair's external ids and the metadata its offsets are grouped by, as the engine
    sees them (an artist of "various artists" is none)."""

    query: str
    document: str
    artist: str | None
    query_genre: str | None
    genre: str | None


def _pair_labels(session: Session, campaign: Campaign, state: CampaignEngine) -> list[_PairLabel]:
    """Every pool pair's :class:`_PairLabel`, in engine order."""
    docs = repository.documents(session, campaign.id)
    query_doc = repository.query_documents(session, campaign.id)
    various = {a.lower() for a in DEFAULT_VARIOUS_ARTISTS}
    labels = []
    for query_id, document_id in state.pair_ids:
        query_external, _, query_genre = docs[query_doc[query_id]]
        external, artist, genre = docs[document_id]
        if artist is not None and artist.lower() in various:
            artist = None
        labels.append(_PairLabel(query_external, external, artist, query_genre, genre))
    return labels


def entry_records(
    session: Session, campaign: Campaign, scale: str, state: CampaignEngine | None = None
) -> Iterator[dict[str, Any]]:
    """Every entry the engine scores (a result of one system in its top k after the MIREX
    filtering) as a record of :data:`ENTRY_COLUMNS`: what the engine expects of it
    (``expected_relevance``: the pair's estimate or judged value plus the offsets the
    estimator learnt for the entry), by query, document and system."""
    state = state or load_campaign_engine(session, campaign, scale=scale)
    engine = state.engine
    c = engine.collection
    labels = _pair_labels(session, campaign, state)
    offsets = engine.entry_offsets()
    mean, var, source, judged = _pair_figures(engine)
    offset = offsets.offset.tolist()
    pair, system, rank = c.entry_pair.tolist(), c.entry_system.tolist(), c.entry_rank.tolist()
    shared = (c.n_retrieving > 1).tolist()
    strata = _strata(engine)
    names = state.system_names
    for e in np.lexsort((c.entry_system, c.entry_pair)).tolist():
        p = pair[e]
        label = labels[p]
        yield {
            "system": names[system[e]],
            "query": label.query,
            "document": label.document,
            "rank": rank[e],
            "scale": scale,
            "judged": 1 if judged[p] else 0,
            "expected_relevance": mean[p] + offset[e],
            "pair_expected_relevance": mean[p],
            "offset": offset[e],
            "variance": var[p],
            "group": "shared" if shared[p] else "unshared",
            "artist": label.artist,
            "query_genre": label.query_genre,
            "genre": label.genre,
            "stratum": strata[p],
            "estimator": campaign.estimator,
            "source": _ENTRY_SOURCES.get(source[p], str(source[p])),
        }


def _strata(engine: MTCEngine) -> list[str | None]:
    """Every pool pair's variance stratum (``joint``, docs/method.md §8.2) as a label, "1" for
    the estimates the model is surest of; None for an engine without strata."""
    stratum = engine.variance_stratum
    if stratum is None:
        return [None] * engine.collection.n_pairs
    return [str(int(s) + 1) for s in stratum.tolist()]


def offsets_document(
    session: Session, campaign: Campaign, scale: str, state: CampaignEngine | None = None
) -> dict[str, Any]:
    """What the score variances need beyond the entries: the engine's variance factor and
    the posterior of every offset level an entry is at, each level named by the values of
    the entries file's columns that say which entries share it (docs/exports.md)."""
    state = state or load_campaign_engine(session, campaign, scale=scale)
    engine = state.engine
    c = engine.collection
    labels = _pair_labels(session, campaign, state)
    offsets = engine.entry_offsets()
    names = state.system_names
    shared = c.n_retrieving > 1
    strata = _strata(engine)
    factors = []
    for factor in offsets.factors:
        columns = _FACTOR_COLUMNS.get(factor.name)
        if columns is None:  # an engine with a factor the exports cannot name yet
            raise RuntimeError(f"the offsets of {factor.name!r} have no columns to name them")
        at = np.flatnonzero(factor.level >= 0)
        levels, first = np.unique(factor.level[at], return_index=True)
        rows = []
        for level, e in zip(levels.tolist(), at[first].tolist(), strict=True):
            p = int(c.entry_pair[e])
            label = labels[p]
            values = {
                "system": names[int(c.entry_system[e])],
                "group": "shared" if shared[p] else "unshared",
                "query": label.query,
                "artist": label.artist,
                "query_genre": label.query_genre,
                "genre": label.genre,
                "stratum": strata[p],
            }
            rows.append(
                {
                    **{column: values[column] for column in columns},
                    "mean": float(factor.mean[level]),
                    "variance": float(factor.variance[level]),
                }
            )
        factors.append({"name": factor.name, "columns": list(columns), "levels": rows})
    return {
        "campaign": campaign.slug,
        "scale": scale,
        "estimator": campaign.estimator,
        "k": c.k,
        "queries": c.n_queries,
        "max": round(get_scale(scale).lmax),
        "rbp_p": engine.config.rbp_p,
        "variance_scale": offsets.variance_scale,
        "variance_factors": _stratum_factors(engine),
        "factors": factors,
        "assessor_offsets": _assessor_offsets(state, labels),
    }


def _assessor_offsets(state: CampaignEngine, labels: list[_PairLabel]) -> dict[str, Any]:
    """The assessors' offsets the scores hold (docs/method.md §10.1): their ``variance``
    (0 when not measured) and who made each counted judgment of a judged pair, with its
    ``share`` of the pair's value; assessors are numbered from 1 in the order of their first
    judgment, nobody named."""
    offsets = state.assessor_offsets
    if offsets is None:
        return {"variance": 0.0, "judgments": []}
    shares, judged = offsets.shares, state.engine.judged
    return {
        "variance": offsets.variance,
        "judgments": [
            {
                "query": labels[p].query,
                "document": labels[p].document,
                "assessor": a + 1,
                "share": w,
            }
            for p, a, w in zip(
                shares.pair.tolist(), shares.assessor.tolist(), shares.weight.tolist(), strict=True
            )
            if judged[p]
        ],
    }


def _stratum_factors(engine: MTCEngine) -> list[dict[str, Any]]:
    """``joint``'s variance factor of every stratum (docs/method.md §8.2), already in the
    entries' ``variance``; empty for an engine without strata."""
    stratum = engine.variance_stratum
    if stratum is None:
        return []
    factor = engine.var_factor if engine.var_factor is not None else np.ones(stratum.shape[0])
    levels, first = np.unique(stratum, return_index=True)
    return [
        {"stratum": str(int(s) + 1), "factor": float(factor[p])}
        for s, p in zip(levels.tolist(), first.tolist(), strict=True)
    ]
