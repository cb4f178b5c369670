"""Cost-aware selection: the most ranking confidence per second of the volunteer's listening
(docs/method.md §12).

The selection weights (:mod:`mtcjudge.mtc.selection`) say how much a pair's judgment is
worth to the ranking; a :class:`Pace` says how many seconds it costs one volunteer: the
query when it changes (a new query is heard first, in full by default), a replay of it when
it does not, the candidate, and the decision. Listening is a share of each clip's duration,
so short clips cost less than long ones; a clip of unknown duration counts as the default
clip, and no clip less than the campaign's listening rule asks of it.

A volunteer on query ``q`` is handed ``q``'s best pair when it gains at least as much per
second *of theirs* as the best pair elsewhere, which costs them the new query too::

    stay  <=>  w_own / seconds(own, same query)  >=  w_best / seconds(best, new query)

The cheaper pair is worth taking only if the campaign would judge it before it stops: the
volunteer stays only while their query's best pair ranks among the judgments still needed
(the *horizon*: the high end of the projection of the judgments to the campaign's target,
less those made since). Near the end of a campaign, and in a campaign of a few dozen
judgments, the rule is the greedy one.

The plan itself is ranked by weight per second of a volunteer who starts afresh (the pooled
pace, the query heard anew). Only the order changes: the stop rule and the confidence do
not depend on it.

Pure: numpy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mtcjudge.mtc.listening_time import Defaults, ListeningModel, Speeds

__all__ = ["FORGONE", "Pace", "horizon", "stays"]

FloatArray = NDArray[np.float64]

#: the share of the best pair's gain per second that a volunteer who stays forgoes: less than
#: all of it, since another volunteer who moves anyway takes that pair; 7/8 makes the rule the
#: product's earlier one (stay while the query's best pair weighs half the best) for 30 s clips
#: at the stated default pace (docs/method.md §12.2)
FORGONE = 7 / 8


@dataclass(frozen=True)
class Pace:
    """What one judgment costs a volunteer: shares of each clip heard and decision seconds.

    ``rule``: the campaign's listening rule (each clip at least this long, or to its end);
    ``clip``: the duration a clip of unknown duration counts as. The defaults are those of
    :class:`mtcjudge.mtc.listening_time.Defaults`."""

    query_new: float = 1.0
    query_same: float = 0.0
    candidate: float = 1.0
    decision: float = 10.0
    rule: float = 0.0
    clip: float = 30.0

    @classmethod
    def default(cls, defaults: Defaults | None = None) -> Pace:
        d = defaults or Defaults()
        return cls(
            d.query_new_share,
            d.query_same_share,
            d.candidate_share,
            d.decision_seconds,
            d.listen_rule_seconds,
            d.clip_seconds,
        )

    @classmethod
    def of(cls, speeds: Speeds, defaults: Defaults) -> Pace:
        """The pace of a fitted assessor (or of the pool)."""
        return cls(
            max(0.0, speeds.query_new.value),
            max(0.0, speeds.query_same.value),
            max(0.0, speeds.candidate.value),
            max(0.0, speeds.decision.value),
            defaults.listen_rule_seconds,
            defaults.clip_seconds,
        )

    @classmethod
    def for_assessor(cls, model: ListeningModel, assessor: int | None) -> Pace:
        """The assessor's fitted pace (the pool's for one not seen yet)."""
        return cls.of(model.speeds(assessor), model.defaults)

    def durations(self, seconds: ArrayLike) -> FloatArray:
        """Clip durations, unknown ones (NaN, 0, negative) as the default clip."""
        d = np.asarray(seconds, dtype=np.float64)
        return np.where(np.isfinite(d) & (d > 0), d, self.clip)

    def listening(self, share: float, duration: ArrayLike) -> FloatArray:
        """Seconds of clips of ``duration`` heard at ``share``, never less than the rule asks."""
        d = self.durations(duration)
        return np.maximum(share * d, np.minimum(self.rule, d))

    def pair_seconds(
        self, query_duration: ArrayLike, candidate_duration: ArrayLike, *, changes: bool
    ) -> FloatArray:
        """Expected seconds of pairs: the query (by whether it changes), candidate, decision.
        Always positive (the decision's floor is a tenth of a second)."""
        seconds = (
            self.listening(self.query_new if changes else self.query_same, query_duration)
            + self.listening(self.candidate, candidate_duration)
            + self.decision
        )
        return np.maximum(seconds, 0.1)

    def seconds_of(
        self, query_duration: float | None, candidate_duration: float | None, *, changes: bool
    ) -> float:
        """:meth:`pair_seconds` of one pair (None: unknown duration)."""
        q = math.nan if query_duration is None else query_duration
        c = math.nan if candidate_duration is None else candidate_duration
        return float(self.pair_seconds([q], [c], changes=changes)[0])


def horizon(high: int | None, judged_since: int) -> int | None:
    """The judgments a campaign still needs, by the high end (90th percentile) of its last
    projection to its target less the ``judged_since`` judgments made after it; at least 1.
    None (no limit) when there is no projection or most of its runs did not reach the target
    within the pool."""
    if high is None:
        return None
    return max(int(high) - max(int(judged_since), 0), 1)


def stays(
    own_weight: float,
    own_durations: tuple[float | None, float | None],
    best_weight: float,
    best_durations: tuple[float | None, float | None],
    pace: Pace,
    *,
    own_rank: int | None = None,
    within: int | None = None,
) -> bool:
    """Whether the volunteer's own query's best pair (``own_weight``, its clips' durations)
    gains at least as much per second of theirs as the best pair elsewhere, whose query they
    would hear anew; and, with a horizon ``within`` (:func:`horizon`), whether it is among the
    pairs the campaign would judge before it stops: its rank among the free pairs (0: the
    best) below the horizon."""
    if within is not None and own_rank is not None and own_rank >= within:
        return False
    own = max(own_weight, 0.0) / pace.seconds_of(*own_durations, changes=False)
    best = max(best_weight, 0.0) / pace.seconds_of(*best_durations, changes=True)
    return own >= FORGONE * best
