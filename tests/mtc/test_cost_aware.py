"""Cost-aware selection (docs/method.md §12): what a pair costs a volunteer, and when their
own query's pair is worth staying for; and the simulated volunteers that measure it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from mtcjudge.ingest.formats import Judgments, Runs
from mtcjudge.ingest.formats import Metadata as MetadataFile
from mtcjudge.ingest.loader import LoadedCollection, load_collection
from mtcjudge.mtc.cost_aware import FORGONE, Pace, horizon, stays
from mtcjudge.mtc.engine import EngineConfig
from mtcjudge.mtc.factory import build_engine
from mtcjudge.mtc.listening_time import Defaults, Observation, fit
from mtcjudge.mtc.scales import FINE
from mtcjudge.mtc.synthetic import generate
from mtcjudge.mtc.volunteers import VolunteerSetup, simulate_volunteers


def test_the_default_pace_is_the_stated_defaults() -> None:
    pace = Pace.default()
    # 30 s clips: the query heard in full when it changes, not again when it does not
    assert pace.seconds_of(30.0, 30.0, changes=True) == pytest.approx(70.0)
    assert pace.seconds_of(30.0, 30.0, changes=False) == pytest.approx(40.0)
    # a clip of unknown duration counts as the default clip
    assert pace.seconds_of(None, math.nan, changes=True) == pytest.approx(70.0)
    assert pace.seconds_of(0.0, -3.0, changes=False) == pytest.approx(40.0)


def test_short_clips_cost_less_and_the_rule_floors_each_clip() -> None:
    pace = Pace.default()
    assert pace.seconds_of(5.0, 5.0, changes=True) < pace.seconds_of(30.0, 30.0, changes=True)
    ruled = Pace(query_same=0.0, rule=10.0)
    # the rule asks 10 s of each clip (or all of a shorter one), even of the query again
    assert ruled.seconds_of(30.0, 30.0, changes=False) == pytest.approx(10 + 30 + 10)
    assert ruled.seconds_of(4.0, 4.0, changes=False) == pytest.approx(4 + 4 + 10)


def test_the_pace_of_a_fitted_assessor() -> None:
    # an assessor who hears 60 % of each candidate and decides in 4 s, seen 200 times
    observations = [
        Observation(
            7,
            i // 10,
            submitted_at=100.0 * i + 4 + 18 + (30 if i % 10 == 0 else 0),
            leased_at=100.0 * i,
            query_seconds=30.0,
            candidate_seconds=30.0,
            query_listen_ms=30_000 if i % 10 == 0 else 0,
            candidate_listen_ms=18_000,
        )
        for i in range(200)
    ]
    model = fit(observations, Defaults())
    pace = Pace.for_assessor(model, 7)
    assert pace.candidate == pytest.approx(0.6, abs=0.05)
    assert pace.decision == pytest.approx(4.0, abs=1.0)
    # one never seen: the pool's
    assert Pace.for_assessor(model, 99) == Pace.of(model.pooled, model.defaults)


def test_a_volunteer_stays_while_their_pair_gains_as_much_per_second() -> None:
    """Stay while the own pair's gain per second is at least FORGONE (7/8) of the best's:
    for 30 s clips at the default pace (40 s to stay, 70 s to move) that is the earlier rule,
    half the best weight; it follows the clips' lengths and the volunteer's pace."""
    assert FORGONE == pytest.approx(7 / 8)
    pace = Pace.default()
    half_minute = (30.0, 30.0)
    assert stays(0.51, half_minute, 1.0, half_minute, pace)  # 0.51/40 >= 7/8 x 1/70
    assert not stays(0.49, half_minute, 1.0, half_minute, pace)
    # short clips make a new query cheap: with 2 s clips staying is worth it only for a pair
    # of at least 7/8 x 12/14 = 0.75 of the best
    short = (2.0, 2.0)
    assert not stays(0.74, short, 1.0, short, pace)
    assert stays(0.76, short, 1.0, short, pace)
    # whole songs make a new query dear: with 4-minute clips 7/8 x 250/490 = 0.45 will do
    song = (240.0, 240.0)
    assert stays(0.45, song, 1.0, song, pace)
    assert not stays(0.44, song, 1.0, song, pace)
    # a volunteer who replays the whole query on every pair saves nothing by staying
    replays = Pace(query_same=1.0)
    assert not stays(0.87, half_minute, 1.0, half_minute, replays)
    assert stays(0.88, half_minute, 1.0, half_minute, replays)
    # nothing to gain anywhere (an unplanned pair): staying is as good as moving
    assert stays(0.0, half_minute, 0.0, half_minute, pace)


def test_a_volunteer_stays_only_for_a_pair_the_campaign_still_needs() -> None:
    """Within a horizon of the judgments still needed, the own query's pair must rank below
    it (0 is the best free pair); its gain per second must still be enough."""
    pace, half_minute = Pace.default(), (30.0, 30.0)
    assert stays(0.9, half_minute, 1.0, half_minute, pace, own_rank=5, within=6)
    assert not stays(0.9, half_minute, 1.0, half_minute, pace, own_rank=6, within=6)
    assert not stays(0.4, half_minute, 1.0, half_minute, pace, own_rank=1, within=6)
    # no horizon, or a pair outside the plan: the per-second rule alone
    assert stays(0.9, half_minute, 1.0, half_minute, pace, own_rank=600, within=None)
    assert stays(0.9, half_minute, 1.0, half_minute, pace, own_rank=None, within=6)


def test_the_horizon_is_the_projections_high_end_less_the_judgments_since() -> None:
    assert horizon(120, 0) == 120
    assert horizon(120, 20) == 100
    # never below one pair (the best): past the projection the choice is the greedy one
    assert horizon(120, 500) == 1
    assert horizon(0, 0) == 1
    # no projection, or the target out of the pool's reach: no limit
    assert horizon(None, 3) is None


# ---------------------------------------------------------------------------- volunteers
@pytest.fixture(scope="module")
def collection() -> LoadedCollection:
    s = generate(n_systems=6, n_queries=12, k=5, seed=3)
    judgments = Judgments({pair: [float(v)] for pair, v in s.fine.items()}, "tsv")
    metadata = MetadataFile(dict(s.artist), dict(s.genre))
    return load_collection(Runs(s.runs, "tsv"), 5, metadata, judgments)


def _run(loaded: LoadedCollection, **setup: Any):
    engine, _ = build_engine(
        loaded.collection,
        loaded.metadata,
        FINE,
        "joint",
        EngineConfig(measure="cg", target=0.9),
        seed=0,
    )
    truth = loaded.judged_values
    return simulate_volunteers(
        engine, lambda _v, p: float(truth[p]), VolunteerSetup(**setup), trajectory_every=5
    )


@pytest.mark.parametrize("selection", ["greedy", "locality", "cost"])
def test_simulated_volunteers_reach_the_target_and_account_for_their_time(
    collection: LoadedCollection, selection: str
) -> None:
    run = _run(collection, volunteers=3, selection=selection, seed=1, trial_rate=0.1)
    assert run.stop_reason in ("confidence", "complete")
    assert 0 < run.judgments <= collection.collection.n_pairs
    assert sum(v.judgments for v in run.volunteers) == run.judgments
    # hours are the volunteers' seconds; listening is part of them; every volunteer hears a
    # query first, and no more queries than judgments (trials are made on their query)
    assert run.hours == pytest.approx(sum(v.seconds for v in run.volunteers) / 3600)
    assert 0 < run.listening_hours < run.hours
    assert 3 <= run.queries_heard <= run.judgments + 3
    # 30 s clips by default: every judgment costs at least a candidate's 30 s and the decision
    assert run.hours * 3600 >= run.judgments * 30
    # the trajectory's hours grow with the judgments
    hours = [p.hours for p in run.trajectory]
    assert hours == sorted(hours)


def test_greedy_changes_query_more_often_than_cost_aware(collection: LoadedCollection) -> None:
    greedy = _run(collection, volunteers=2, selection="greedy", seed=2)
    cost = _run(collection, volunteers=2, selection="cost", seed=2)
    assert cost.queries_heard / cost.judgments < greedy.queries_heard / greedy.judgments
    # hearing a query is what cost-aware saves: less time per judgment
    assert cost.hours / cost.judgments < greedy.hours / greedy.judgments


def test_short_clips_cost_less_time(collection: LoadedCollection) -> None:
    n = collection.collection.n_pairs
    long = _run(collection, volunteers=2, selection="cost", seed=4)
    engine, _ = build_engine(
        collection.collection,
        collection.metadata,
        FINE,
        "joint",
        EngineConfig(measure="cg", target=0.9),
    )
    truth = collection.judged_values
    short = simulate_volunteers(
        engine,
        lambda _v, p: float(truth[p]),
        VolunteerSetup(volunteers=2, selection="cost", seed=4),
        query_duration=np.full(n, 5.0),
        candidate_duration=np.full(n, 5.0),
    )
    assert short.hours / short.judgments < long.hours / long.judgments


def test_a_setup_says_what_is_wrong_with_it() -> None:
    with pytest.raises(ValueError, match="selection"):
        VolunteerSetup(selection="fastest")
    with pytest.raises(ValueError, match="volunteers"):
        VolunteerSetup(volunteers=0)
    with pytest.raises(ValueError, match="trial_rate"):
        VolunteerSetup(trial_rate=1.0)
    assert VolunteerSetup().assumptions()["decision_seconds"] == 10.0
