"""Build a campaign's MTC engine straight from its database rows.

The engine works on integer indices (:mod:`mtcjudge.mtc.collection`); this module is the one place
that maps database ids to them. Systems are numbered by name, queries and documents by their
external id, as :func:`mtcjudge.ingest.loader.load_collection` numbers files, so a campaign and a
replay of the same files break ties between equal pairs the same way.

Reading (:func:`load_rows`, one short transaction) and building (:func:`engine_from_rows`,
seconds of CPU on a large campaign) are separate, so a caller can build without holding a
connection; :func:`load_campaign_engine` does both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Row
from sqlalchemy.orm import Session

from mtcjudge.campaign_engine import repository as engine_repository
from mtcjudge.ingest.loader import DEFAULT_VARIOUS_ARTISTS
from mtcjudge.models import Campaign
from mtcjudge.mtc.assessor_offsets import AssessorOffsets, JudgmentShares, apply_judged_noise
from mtcjudge.mtc.collection import Collection, Metadata, build_collection
from mtcjudge.mtc.disagreement import Disagreement, disagreement_from_sums
from mtcjudge.mtc.engine import MTCEngine
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.factory import engine_for_settings
from mtcjudge.mtc.scales import get_scale

__all__ = [
    "CampaignEngine",
    "CampaignRows",
    "apply_disagreement",
    "engine_from_rows",
    "load_campaign_engine",
    "load_rows",
    "playable_mask",
    "pool_pairs",
    "settings_key",
]


@dataclass(eq=False)
class CampaignEngine:
    """A campaign's engine and the maps between database ids and engine indices."""

    campaign_id: int
    settings_key: str
    engine: MTCEngine
    model: RelevanceModel
    pair_ids: list[tuple[int, int]]  # pool pair -> (query_id, document_id)
    pair_index: dict[tuple[int, int], int]
    query_index: dict[int, int]  # query_id -> engine query index
    system_names: list[str]  # by engine system index
    playable: NDArray[np.bool_]
    #: the assessor disagreement the judged pairs' variances hold (apply_disagreement)
    disagreement: Disagreement = field(default_factory=Disagreement)
    #: the assessors' offsets the judged pairs share (apply_disagreement; None: not measured)
    assessor_offsets: AssessorOffsets | None = None

    @property
    def n_pairs(self) -> int:
        return len(self.pair_ids)

    def apply(self, values: dict[tuple[int, int], float]) -> None:
        """Feed (query_id, document_id) -> mean judgment into the engine."""
        pairs = [self.pair_index[key] for key in values if key in self.pair_index]
        if pairs:
            self.engine.judge(pairs, [values[self.pair_ids[p]] for p in pairs])


def settings_key(campaign: Campaign) -> str:
    """The settings an engine depends on: when one changes, the engine is rebuilt. The
    collection's version is one of them: systems added to the campaign change it."""
    return "|".join(
        str(v)
        for v in (
            campaign.scale,
            campaign.k,
            campaign.measure,
            campaign.estimator,
            campaign.policy,
            campaign.target,
            campaign.seed,
            campaign.collection_version or 0,
        )
    )


@dataclass(frozen=True, eq=False)
class CampaignRows:
    """What an engine is built from, read in one go: the collection, the mean judgment of
    each judged (query_id, document_id) on ``scale``, the documents with audio, the stored
    pool pairs that cannot be played (a clip's file went missing or unreadable since the
    import: :func:`mtcjudge.pool.service.refresh_playable`), and the pairs ``joint``'s audit
    drew (:meth:`SystemEffectEngine.draw_audit`), and the pairs judged more than once
    (:func:`repository.disagreement_rows`: the assessor disagreement) and who made each
    counted judgment (the assessors' offsets)."""

    campaign_id: int
    scale: str
    documents: Sequence[Row[int, str, str | None, str | None]]
    queries: Sequence[Row[int, int]]
    systems: Sequence[Row[int, str]]
    results: Sequence[Row[int, int, int, int]]
    judged: dict[tuple[int, int], float]
    with_audio: set[int]
    audit: set[tuple[int, int]]
    unplayable: frozenset[tuple[int, int]] = frozenset()
    disagreement: Sequence[Any] = ()
    #: every counted judgment and its assessor (:func:`repository.counted_judgment_rows`)
    judgments: Sequence[Any] = ()


def load_rows(session: Session, campaign: Campaign, *, scale: str | None = None) -> CampaignRows:
    """Read what :func:`engine_from_rows` needs (judgments on ``scale``, by default the
    campaign's)."""
    scale = scale or campaign.scale
    documents, queries, systems, results = engine_repository.collection_rows(session, campaign.id)
    return CampaignRows(
        campaign_id=campaign.id,
        scale=scale,
        documents=documents,
        queries=queries,
        systems=systems,
        results=results,
        judged=engine_repository.pair_means(session, campaign.id, scale),
        with_audio=engine_repository.documents_with_audio(session, campaign.id),
        audit=engine_repository.audit_draws(session, campaign.id),
        unplayable=frozenset(engine_repository.unplayable_pairs(session, campaign.id)),
        disagreement=engine_repository.disagreement_rows(session, campaign.id, scale),
        judgments=engine_repository.counted_judgment_rows(session, campaign.id, scale),
    )


def _collection(
    k: int,
    documents: Sequence[Row[int, str, str | None, str | None]],
    queries: Sequence[Row[int, int]],
    systems: Sequence[Row[int, str]],
    results: Sequence[Row[int, int, int, int]],
) -> tuple[Collection, Metadata | None, list[int], list[str], list[int], list[int]]:
    """(collection, metadata, query ids, system names, document ids, query document ids)."""
    various = {a.lower() for a in DEFAULT_VARIOUS_ARTISTS}
    external = {d.id: d.external_id for d in documents}
    artist = {
        d.id: None if d.artist is None or d.artist.lower() in various else d.artist
        for d in documents
    }
    doc_ids = sorted(external, key=lambda i: external[i])
    doc_index = {d: i for i, d in enumerate(doc_ids)}
    query_rows = sorted(queries, key=lambda q: external[q.document_id])
    query_ids = [q.id for q in query_rows]
    query_doc = {q.id: q.document_id for q in query_rows}
    q_index = {q: i for i, q in enumerate(query_ids)}
    system_rows = sorted(systems, key=lambda s: s.name)
    s_index = {s.id: i for i, s in enumerate(system_rows)}
    arr = np.full((len(system_rows), len(query_ids), k), -1, dtype=np.intp)
    filled = np.zeros((len(system_rows), len(query_ids)), dtype=np.intp)
    # results come ordered by system, query, rank: the MIREX filtering (the query clip itself,
    # clips by the query's artist) applies before the cut-off at k
    for system_id, query_id, _rank, document_id in results:
        si, qi = s_index[system_id], q_index[query_id]
        qdoc = query_doc[query_id]
        if document_id == qdoc:
            continue
        q_artist = artist[qdoc]
        if q_artist is not None and artist[document_id] == q_artist:
            continue
        n = filled[si, qi]
        if n < k:
            arr[si, qi, n] = doc_index[document_id]
            filled[si, qi] = n + 1
    collection = build_collection(arr, k)
    metadata = None
    if any(d.artist or d.genre for d in documents):
        by_id = {d.id: d for d in documents}
        artists = sorted({a for d in doc_ids if (a := artist[d]) is not None})
        genres = sorted({d.genre for d in documents if d.genre is not None})
        a_idx = {a: i for i, a in enumerate(artists)}
        g_idx = {g: i for i, g in enumerate(genres)}
        doc_artist = np.array([a_idx.get(artist[d] or "", -1) for d in doc_ids], dtype=np.intp)
        doc_genre = np.array([g_idx.get(by_id[d].genre or "", -1) for d in doc_ids], dtype=np.intp)
        query_genre = doc_genre[[doc_index[query_doc[q]] for q in query_ids]]
        metadata = Metadata.from_arrays(doc_artist, doc_genre, query_genre)
    return (
        collection,
        metadata,
        query_ids,
        [s.name for s in system_rows],
        doc_ids,
        [query_doc[q] for q in query_ids],
    )


def pool_pairs(session: Session, campaign: Campaign) -> list[tuple[int, int]]:
    """The (query_id, document_id) of every pool pair, in engine order."""
    collection, _, query_ids, _, doc_ids, _ = _collection(
        campaign.k, *engine_repository.collection_rows(session, campaign.id)
    )
    return _pair_ids(collection, query_ids, doc_ids)


def _pair_ids(
    collection: Collection, query_ids: list[int], doc_ids: list[int]
) -> list[tuple[int, int]]:
    return [
        (query_ids[int(collection.pair_query[p])], doc_ids[int(collection.pair_doc[p])])
        for p in range(collection.n_pairs)
    ]


def playable_mask(
    session: Session, campaign_id: int, pair_ids: list[tuple[int, int]]
) -> NDArray[np.bool_]:
    """Pairs an assessor can listen to: the query clip and the candidate clip both have
    audio. A campaign without any audio has no playable pair: nothing is handed out."""
    with_audio = engine_repository.documents_with_audio(session, campaign_id)
    return _playable(with_audio, engine_repository.query_documents(session, campaign_id), pair_ids)


def _playable(
    with_audio: set[int], query_doc: dict[int, int], pair_ids: list[tuple[int, int]]
) -> NDArray[np.bool_]:
    return np.array(
        [query_doc[q] in with_audio and d in with_audio for q, d in pair_ids], dtype=bool
    ).reshape(len(pair_ids))


def load_campaign_engine(
    session: Session, campaign: Campaign, *, measure: str | None = None, scale: str | None = None
) -> CampaignEngine:
    """Load a campaign's collection and judgments and build its engine (on the campaign's
    measure and scale unless others are given)."""
    return engine_from_rows(load_rows(session, campaign, scale=scale), campaign, measure=measure)


def engine_from_rows(
    rows: CampaignRows, campaign: Campaign, *, measure: str | None = None
) -> CampaignEngine:
    """Build the engine of ``campaign`` from rows read by :func:`load_rows`, on their scale
    and on ``measure`` (by default the campaign's); reads nothing from the database."""
    measure = measure or campaign.measure
    collection, metadata, query_ids, system_names, doc_ids, query_docs = _collection(
        campaign.k, rows.documents, rows.queries, rows.systems, rows.results
    )
    pair_ids = _pair_ids(collection, query_ids, doc_ids)
    pair_index = {ids: p for p, ids in enumerate(pair_ids)}
    judged_values = np.full(collection.n_pairs, np.nan)
    for ids, value in rows.judged.items():
        p = pair_index.get(ids)
        if p is not None:
            judged_values[p] = value
    audit = np.zeros(collection.n_pairs, dtype=bool)
    audit[[pair_index[ids] for ids in rows.audit if ids in pair_index]] = True
    query_doc = dict(zip(query_ids, query_docs, strict=True))
    # a pair is played only when both clips have audio, and its stored row (when the pool
    # is stored) does not say a clip has gone missing or unreadable since
    playable = _playable(rows.with_audio, query_doc, pair_ids)
    if rows.unplayable:
        playable &= np.array([ids not in rows.unplayable for ids in pair_ids], dtype=bool)
    engine, model = engine_for_settings(
        collection,
        metadata,
        get_scale(rows.scale),
        campaign.estimator,
        measure=measure,
        policy=campaign.policy,
        target=campaign.target,
        seed=campaign.seed,
        judged_values=judged_values,
        audit_drawn=audit,
        audit_allowed=playable,
    )
    state = CampaignEngine(
        campaign_id=campaign.id,
        settings_key=settings_key(campaign),
        engine=engine,
        model=model,
        pair_ids=pair_ids,
        pair_index=pair_index,
        query_index={q: i for i, q in enumerate(query_ids)},
        system_names=system_names,
        playable=playable,
    )
    apply_disagreement(state, rows.disagreement, rows.judgments)
    return state


def apply_disagreement(
    state: CampaignEngine, rows: Sequence[Any], judgments: Sequence[Any] = ()
) -> None:
    """Measure the assessor disagreement from :func:`repository.disagreement_rows` and let
    every judged pair keep it (``sigma^2 / m`` for a pair whose value is the mean of ``m``
    counted judgments: docs/method.md §10), the part its assessors' offsets share with
    their other judgments, measured from ``judgments``
    (:func:`repository.counted_judgment_rows`), as such (§10.1)."""
    measured = disagreement_from_sums(
        [int(r.n) for r in rows], [float(r.total) for r in rows], [float(r.squares) for r in rows]
    )
    counts = np.ones(state.n_pairs)
    for r in rows:
        p = state.pair_index.get((int(r.query_id), int(r.document_id)))
        if p is not None and int(r.counted) > 1:
            counts[p] = int(r.counted)
    state.disagreement = measured
    known = [
        (p, r.assessor_id, float(r.value))
        for r in judgments
        if (p := state.pair_index.get((int(r.query_id), int(r.document_id)))) is not None
    ]
    pairs, assessors, values = zip(*known, strict=True) if known else ((), (), ())
    shares = JudgmentShares.of(pairs, assessors, values) if known else None
    state.assessor_offsets = apply_judged_noise(state.engine, measured, counts, shares)
