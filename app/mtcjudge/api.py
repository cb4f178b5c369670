"""The Python API of mtcjudge: Minimal Test Collections from a notebook or a script.

Everything here is re-exported by the package root (``import mtcjudge``). The usual session
(docs/api.md)::

    loaded = mtcjudge.load_files("runs.tsv", "judgments-fine.tsv", "metadata.tsv")
    engine = mtcjudge.make_engine(loaded)              # the engine a new campaign runs
    while engine.stop_reason() is None:
        pairs = engine.select(1)                       # the pair to judge next
        engine.judge(pairs, loaded.judged_values[pairs])   # keeps everything consistent
    mtcjudge.system_scores(engine, loaded)             # the estimated ranking
    mtcjudge.pair_confidences(engine, loaded)          # how sure each pairwise order is

:meth:`MTCEngine.judge` updates the estimates, the score distributions and whatever the
estimator learns from its judgments; no other call is needed between two judgments. On the
engine, properties are cheap reads of its state (``n_judged``, ``n_unjudged``, ``offsets``)
and methods compute (``evaluation()``, ``ranking_confidence()``, ``stop_reason()``) or act
(``select``, ``judge``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mtcjudge.ingest.formats import (
    ScoreOrderWarning,
    read_judgments,
    read_metadata,
    read_runs,
    score_order_warnings,
)
from mtcjudge.ingest.loader import DEFAULT_VARIOUS_ARTISTS, LoadedCollection, load_collection
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.factory import (
    CAMPAIGN_ESTIMATORS,
    DEFAULT_ESTIMATOR,
    ESTIMATOR_CHOICES,
    build_engine,
)
from mtcjudge.mtc.measures import Evaluation
from mtcjudge.mtc.replay import ReplayConfig, ReplayResult, replay
from mtcjudge.mtc.scales import get_scale

__all__ = [
    "CAMPAIGN_ESTIMATORS",
    "DEFAULT_ESTIMATOR",
    "ESTIMATOR_CHOICES",
    "EngineConfig",
    "Evaluation",
    "LoadedCollection",
    "MTCEngine",
    "PairConfidence",
    "ReplayResult",
    "ScoreOrderWarning",
    "SystemScore",
    "load_files",
    "make_engine",
    "pair_confidences",
    "replay_campaign",
    "system_scores",
]

PathLike = str | os.PathLike[str]


def load_files(
    runs: PathLike,
    judgments: PathLike | None = None,
    metadata: PathLike | None = None,
    *,
    k: int = 5,
    scale: str = "fine",
    filter_same_artist: bool = True,
    various_artists: Iterable[str] = DEFAULT_VARIOUS_ARTISTS,
    order_by: str = "rank",
) -> LoadedCollection:
    """Read a collection from files, as ``mtcjudge simulate`` and a campaign's import do.

    Parameters
    ----------
    runs : path
        A TREC run file, a folder of them, or a TSV ``system<TAB>query<TAB>doc``.
    judgments : path, optional
        TREC qrels or TSV ``query<TAB>doc<TAB>score`` on ``scale`` (several scores of a pair
        are averaged).
    metadata : path, optional
        TSV ``doc<TAB>artist<TAB>genre``: the ordinal models and the shared offsets of
        ``joint`` use it, and the MIREX filter leaves out clips by the query's artist.
    k : int
        Evaluation cut-off.
    scale : {"fine", "broad"}
        The scale of ``judgments`` (FINE 0..100, BROAD 0/1/2).
    filter_same_artist : bool
        Leave out the results by the query's artist (MIREX does).
    various_artists : iterable of str
        Artist ids that link nothing (compared in lower case).
    order_by : {"rank", "score"}
        How the lists of TREC runs are ordered: by the rank column, or as trec_eval,
        ir_measures and pytrec_eval order them (decreasing score, ties by decreasing docno).

    Returns
    -------
    LoadedCollection
        The collection, its metadata, the ids by engine index and ``judged_values``: the
        mean judgment of every pool pair (NaN where none was given).

    Raises
    ------
    mtcjudge.ingest.formats.InputError
        A file that cannot be read, naming the file and the line.

    Warns
    -----
    ScoreOrderWarning
        When the scores of some lists order them otherwise than their ranks: the first ten
        by file and line, and how many there are.
    """
    read = read_runs(runs, order_by=order_by)
    lines = score_order_warnings(
        read.score_conflicts,
        n_lists=read.n_lists,
        order_by=order_by,
        hint="load_files(..., order_by='score') orders them as those tools do.",
    )
    if lines:
        warnings.warn("\n  ".join(lines), ScoreOrderWarning, stacklevel=2)
    judged = read_judgments(judgments, scale) if judgments is not None else None
    meta = read_metadata(metadata) if metadata is not None else None
    return load_collection(
        read,
        k,
        meta,
        judged,
        filter_same_artist=filter_same_artist,
        various_artists=various_artists,
    )


def make_engine(
    loaded: LoadedCollection,
    estimator: str = DEFAULT_ESTIMATOR,
    *,
    scale: str = "fine",
    measure: str = "cg",
    policy: str = "confidence",
    target: float = 0.95,
    seed: int = 0,
    start_judged: bool = False,
) -> MTCEngine:
    """The engine a campaign with these settings runs (and ``mtcjudge simulate`` replays).

    Parameters
    ----------
    loaded : LoadedCollection
        From :func:`load_files`.
    estimator : str
        By name: ``"joint"`` (the default of a new campaign), ``"uniform"`` (the reference),
        or any of :data:`ESTIMATOR_CHOICES` for a study.
    scale : {"fine", "broad"}
        The scale the judgments are on.
    measure : {"cg", "dcg", "ndcg", "rbp"}
    policy : {"confidence", "static", "absolute", "random"}
        Which pair :meth:`MTCEngine.select` picks.
    target : float
        The ranking confidence at which :meth:`MTCEngine.stop_reason` says ``"confidence"``.
    seed : int
        Seed of the random policy.
    start_judged : bool
        Start from the judgments in ``loaded.judged_values`` (as a campaign that imported
        them); False: from none, the judgments being the truth a loop reads from.

    Returns
    -------
    MTCEngine
        ``select(n)`` gives the next pairs (pool pair indices), ``judge(pairs, values)``
        records their judgments and updates everything, ``stop_reason()`` says when the
        target is reached, ``evaluation()`` holds the score distributions.
    """
    engine, _ = build_engine(
        loaded.collection,
        loaded.metadata,
        get_scale(scale),
        estimator,
        EngineConfig(measure=measure, policy=policy, target=target),
        seed=seed,
        judged_values=loaded.judged_values if start_judged else None,
    )
    return engine


@dataclass(frozen=True)
class SystemScore:
    """One system's estimated score.

    Attributes
    ----------
    rank : int
        1 for the best expected score; systems tied with each other share a rank and the
        next rank skips (1, 1, 3).
    system : str
    mean, variance : float
        Expected score and its variance (the measure normalised to [0, 1]).
    ci_low, ci_high : float
        The 95 % confidence interval, within [0, 1].
    tied : bool
        The score is known to equal another system's (docs/method.md §3.5).
    """

    rank: int
    system: str
    mean: float
    variance: float
    ci_low: float
    ci_high: float
    tied: bool = False


def system_scores(engine: MTCEngine, loaded: LoadedCollection) -> list[SystemScore]:
    """The systems from best to worst by expected score, with their distributions.

    Parameters
    ----------
    engine : MTCEngine
    loaded : LoadedCollection
        The collection the engine was made from (for the system ids).

    Returns
    -------
    list of SystemScore
    """
    ev = engine.evaluation()
    ranks = ev.ranks()
    tied = ev.tied_systems
    return [
        SystemScore(
            int(ranks[i]),
            loaded.systems[i],
            float(ev.mean[i]),
            float(ev.var[i]),
            float(ev.ci_low[i]),
            float(ev.ci_high[i]),
            bool(tied[i]),
        )
        for i in ev.ranking().tolist()
    ]


@dataclass(frozen=True)
class PairConfidence:
    """How sure the engine is that ``better`` scores above ``worse``.

    Attributes
    ----------
    better, worse : str
        System ids, ``better`` with the higher expected score (in ranking order when tied).
    difference : float
        Expected score of ``better`` minus that of ``worse``.
    confidence : float
        Probability that the true difference has the sign of the expected one ([T] 8.20);
        for a tied pair, that the two are equal, which is known: 1.
    tied : bool
        The difference is known to be exactly 0: no order is claimed (docs/method.md §3.5).
    """

    better: str
    worse: str
    difference: float
    confidence: float
    tied: bool = False


def pair_confidences(engine: MTCEngine, loaded: LoadedCollection) -> list[PairConfidence]:
    """Every pair of systems in the estimated order, least sure first.

    The ranking confidence (:meth:`MTCEngine.ranking_confidence`) is the mean of these.

    Parameters
    ----------
    engine : MTCEngine
    loaded : LoadedCollection
        The collection the engine was made from (for the system ids).

    Returns
    -------
    list of PairConfidence
    """
    ev = engine.evaluation()
    order = ev.ranking().tolist()
    tied = ev.tied
    pairs = [
        PairConfidence(
            loaded.systems[a],
            loaded.systems[b],
            float(ev.diff_mean[a, b]),
            float(ev.pair_confidence[a, b]),
            bool(tied[a, b]),
        )
        for i, a in enumerate(order)
        for b in order[i + 1 :]
    ]
    return sorted(pairs, key=lambda p: p.confidence)


def replay_campaign(
    loaded: LoadedCollection,
    estimator: str = DEFAULT_ESTIMATOR,
    *,
    scale: str = "fine",
    measure: str = "cg",
    policy: str = "confidence",
    target: float = 0.95,
    batch: int = 1,
    seed: int = 0,
    max_judgments: int | None = None,
    progress: Callable[[int, float], None] | None = None,
) -> ReplayResult:
    """Replay a campaign on a fully judged collection: ``mtcjudge simulate`` in Python.

    The engine of :func:`make_engine` judges the pairs it asks for, reading the answers from
    ``loaded.judged_values``, until its stopping rule holds.

    Parameters
    ----------
    loaded : LoadedCollection
        Judged on every pool pair.
    estimator, scale, measure, policy, target, seed :
        As for :func:`make_engine`.
    batch : int
        Pairs judged between two selections (that many assessors at once).
    max_judgments : int, optional
        Give up after this many judgments.
    progress : callable, optional
        Called as ``progress(n_judged, ranking_confidence)`` after every batch.

    Returns
    -------
    ReplayResult
        ``judgments_to_target``, the accuracy reached against the complete judgments, the
        trajectory of the confidence and the calibration of the pair confidences.
    """
    config = ReplayConfig(
        engine=EngineConfig(measure=measure, policy=policy, target=target),
        estimator=estimator,
        batch=batch,
        seed=seed,
        max_judgments=max_judgments,
    )
    return replay(
        loaded.collection,
        loaded.metadata,
        loaded.judged_values,
        get_scale(scale),
        config,
        progress=progress,
    )
