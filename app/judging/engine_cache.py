"""One MTC engine per campaign per process, kept in step with the database.

The engine is built from the campaign's rows once, then updated judgment by judgment. Every
judgment write bumps ``campaign.judgment_version`` and stamps the judgment with it, so a
process that finds the campaign ahead of its cached engine reloads only the pairs written
since: several app processes sharing one Postgres each stay right.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.ingest.formats import Judgments, Metadata, Runs
from app.ingest.loader import LoadedCollection, load_collection
from app.judging import repository
from app.models import Campaign
from app.mtc.calibration import CALIBRATED, SystemEffectEngine, recalibrate
from app.mtc.engine import EngineConfig, MTCEngine
from app.mtc.estimators import RelevanceModel
from app.mtc.scales import get_scale

__all__ = ["SYNCED_CAMPAIGNS", "CampaignEngine", "EngineCache", "build_engine"]

#: ``session.info`` key: campaigns whose cached engine read rows in this session's transaction
SYNCED_CAMPAIGNS = "mtcjudge_synced_campaigns"


@dataclass(eq=False)
class CampaignEngine:
    """A campaign's engine and the maps between database ids and engine indices."""

    campaign_id: int
    settings_key: tuple[object, ...]
    version: int
    loaded: LoadedCollection
    engine: MTCEngine
    pair_index: dict[tuple[int, int], int]  # (query_id, document_id) -> pool pair
    model: RelevanceModel
    pair_ids: list[tuple[int, int]]  # pool pair -> (query_id, document_id)
    query_index: dict[int, int]  # query_id -> engine query index
    # pairs whose two clips have audio; all pairs when the campaign has no audio at all
    playable: NDArray[np.bool_]
    lock: threading.RLock = field(default_factory=threading.RLock)

    @property
    def n_pairs(self) -> int:
        return len(self.pair_ids)

    def apply(self, values: dict[tuple[int, int], float]) -> None:
        """Feed (query_id, document_id) -> mean judgment into the engine."""
        pairs = [self.pair_index[k] for k in values if k in self.pair_index]
        if pairs:
            self.engine.judge(pairs, [values[self.pair_ids[p]] for p in pairs])
            if isinstance(self.engine, SystemEffectEngine):
                recalibrate(self.engine, self.model)


def _settings_key(campaign: Campaign) -> tuple[object, ...]:
    return (
        campaign.scale,
        campaign.k,
        campaign.measure,
        campaign.estimator,
        campaign.policy,
        campaign.target,
        campaign.seed,
    )


def build_engine(session: Session, campaign: Campaign) -> CampaignEngine:
    """Load a campaign's collection and judgments and build its engine."""
    documents, queries, systems, results = repository.collection_rows(session, campaign.id)
    doc_ext = {d.id: d.external_id for d in documents}
    query_doc = {q.id: q.document_id for q in queries}
    system_name = {s.id: s.name for s in systems}
    lists: dict[str, dict[str, list[str]]] = {s.name: {} for s in systems}
    for system_id, query_id, _rank, document_id in results:
        lists[system_name[system_id]].setdefault(doc_ext[query_doc[query_id]], []).append(
            doc_ext[document_id]
        )
    metadata = Metadata(
        artist={d.external_id: d.artist for d in documents},
        genre={d.external_id: d.genre for d in documents},
    )
    means = repository.pair_means(session, campaign.id, campaign.scale)
    scores = {(doc_ext[query_doc[q]], doc_ext[d]): [v] for (q, d), v in means.items()}
    has_metadata = any(d.genre or d.artist for d in documents)
    loaded = load_collection(
        Runs(lists, "db"),
        campaign.k,
        metadata if has_metadata else None,
        Judgments(scores, "db"),
    )
    ext_query = {doc_ext[d]: q for q, d in query_doc.items()}
    ext_doc = {e: i for i, e in doc_ext.items()}
    c = loaded.collection
    pair_ids = [
        (ext_query[loaded.queries[int(c.pair_query[p])]], ext_doc[loaded.docs[int(c.pair_doc[p])]])
        for p in range(c.n_pairs)
    ]
    scale = get_scale(campaign.scale)
    rng = np.random.default_rng(campaign.seed)
    engine: MTCEngine
    if campaign.estimator == CALIBRATED:
        # M_out plus per-system error offsets learnt from the judgments (docs/replay-mirex2011.md)
        model = RelevanceModel(c, scale, "ordinal", loaded.metadata, use_m_jud=False)
        config = EngineConfig(
            measure=campaign.measure,
            policy=campaign.policy,
            target=campaign.target,
            min_judgments=2 * c.n_systems,
        )
        engine = SystemEffectEngine(c, model, config, judged_values=loaded.judged_values, rng=rng)
        recalibrate(engine, model)
    else:
        model = RelevanceModel(c, scale, campaign.estimator, loaded.metadata)
        config = EngineConfig(
            measure=campaign.measure, policy=campaign.policy, target=campaign.target
        )
        engine = MTCEngine(c, model, config, judged_values=loaded.judged_values, rng=rng)
    return CampaignEngine(
        campaign_id=campaign.id,
        settings_key=_settings_key(campaign),
        version=campaign.judgment_version,
        loaded=loaded,
        engine=engine,
        model=model,
        pair_index={ids: p for p, ids in enumerate(pair_ids)},
        pair_ids=pair_ids,
        query_index={ext_query[q]: i for i, q in enumerate(loaded.queries)},
        playable=_playable(session, campaign.id, pair_ids, query_doc),
    )


def _playable(
    session: Session, campaign_id: int, pair_ids: list[tuple[int, int]], query_doc: dict[int, int]
) -> NDArray[np.bool_]:
    """Pairs an assessor can listen to: query and candidate clips both have audio."""
    with_audio = repository.documents_with_audio(session, campaign_id)
    playable = np.array(
        [query_doc[q] in with_audio and d in with_audio for q, d in pair_ids], dtype=bool
    )
    return playable if playable.any() else np.ones(len(pair_ids), dtype=bool)


class EngineCache:
    """Per-process cache of campaign engines, checked against the database on every use."""

    def __init__(self) -> None:
        self._engines: dict[int, CampaignEngine] = {}
        self._lock = threading.Lock()

    def get(self, session: Session, campaign: Campaign) -> CampaignEngine:
        """The campaign's engine, brought up to ``campaign.judgment_version``.

        The caller should hold ``result.lock`` while it uses the engine. The campaign is
        noted in ``session.info[SYNCED_CAMPAIGNS]`` so that a rollback can drop the engine.
        """
        session.info.setdefault(SYNCED_CAMPAIGNS, set()).add(campaign.id)
        with self._lock:
            state = self._engines.get(campaign.id)
            stale = (
                state is None
                or state.settings_key != _settings_key(campaign)
                or state.version > campaign.judgment_version  # the database went back
            )
            if stale:
                state = build_engine(session, campaign)
                self._engines[campaign.id] = state
        assert state is not None
        with state.lock:
            if state.version < campaign.judgment_version:
                changed = repository.judgments_since(session, campaign.id, state.version)
                state.apply(repository.pair_means(session, campaign.id, campaign.scale, changed))
                state.version = campaign.judgment_version
        return state

    def forget(self, campaign_id: int) -> None:
        with self._lock:
            self._engines.pop(campaign_id, None)
