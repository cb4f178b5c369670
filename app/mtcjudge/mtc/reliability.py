"""How far each assessor's answers can be trusted (docs/quality.md).

Pure numpy/scipy: the planner turns an assessor's judgments and quality trials into
:class:`Answer` values, calls :func:`assess`, and stores the :class:`Reliability` it returns.

The flag rule
-------------
Two accounts of an assessor are weighed against each other:

* **careful**: the answers follow the music, with the spread careful volunteers show (the
  thesis puts the disagreement between AMS assessors at about 0.31 of the FINE range between
  two assessors, [T] 7.3), a personal offset, and honest listening;
* **careless**: the answers do not depend on the pair (random clicks, always the same score,
  scores given without listening), or the hidden checks are failed far more often than a
  careful assessor fails them.

Each kind of evidence gives a likelihood ratio of *careless* against *careful*, computed in
the order the answers came (each account's parameters, such as the careful offset, the
offset of the query and a campaign-wide bias of the expectation, or the careless level and
spread, are learnt from the answers before each one: a prequential plug-in), and mixed over
the careless account's unknown parameters. Repeats, coherence and listening are behaviours
a careless assessor may or may not show: their mixtures give half the prior weight to "no
difference", so that they count at most a factor 2 *for* such an assessor.
Under the careful account each ratio is a nonnegative martingale with mean 1, so by Ville's
inequality the probability that their product *ever* reaches ``1 / alpha`` is at most
``alpha``, however often it is looked at: a careful assessor is flagged with probability at
most :attr:`Thresholds.alpha` (5 %, the issue's allowance) over their whole session, as far
as the careful account describes them. That last condition is what
``mtcjudge bench assessors`` measures.

The evidence:

* **reference trials** (the query against itself) answered low (FINE under
  :attr:`Thresholds.reference_cut` or BROAD 0), **anchor trials** (a clearly dissimilar clip)
  answered high (FINE over :attr:`Thresholds.anchor_cut` or BROAD 2);
* **repeats**: the distance between a repeated pair's two scores;
* **pool answers** (and second opinions: a pool pair another assessor judged, handed out as
  a hidden trial) against what is expected of the pair (the mean of the other assessors'
  scores where there are some, else the estimator's expectation without this judgment):
  careful answers follow it up to learnt offsets and spread, careless ones are drawn from a
  distribution that ignores the pair (learnt: a normal around their running mean, or
  uniform), on FINE levels whose ends (0 and 100) take the tails;
* **BROAD/FINE coherence**: a BROAD grade two steps from the FINE score's band;
* **listening**: reported listening below half of what the campaign's rule asks.

An optional second flag (off by default: :attr:`Thresholds.offset_limit` None) says an
assessor is much **harsher or more lenient** than expected (the posterior of their offset
lies beyond the limit with probability :attr:`Thresholds.offset_credibility`), with the
offsets of the queries they judged allowed for. It is off because one assessor's answers
cannot tell their offset from the expectation's own bias, which is large early in a
campaign, before the engine has learnt its offsets (docs/quality.md); the offset is always
reported.

Expectations
------------
What a pool answer is weighed against, :attr:`Answer.expected`, is the estimator's expectation
of the pair without the assessor's judgments: :func:`expected_scores` and
:func:`expected_moments` of :mod:`mtcjudge.mtc.answer_expectations` (importable from here).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy.special import log_ndtr, logsumexp
from scipy.stats import norm

from mtcjudge.mtc.answer_expectations import expected_moments, expected_scores

__all__ = [
    "DEFAULT_THRESHOLDS",
    "KINDS",
    "POOL_KINDS",
    "Answer",
    "Reliability",
    "Thresholds",
    "assess",
    "expected_moments",
    "expected_scores",
]

FloatArray = NDArray[np.float64]
#: the kinds of answer (the judgment kinds of the product)
KINDS = ("pool", "reference", "anchor", "repeat", "second")
#: the kinds weighed as pool answers: a second opinion (a pool pair another assessor judged,
#: handed out as a hidden trial) is a pool answer that does not count in the ranking
POOL_KINDS = ("pool", "second")


@dataclass(frozen=True)
class Answer:
    """One answer of an assessor, in the order they were given.

    ``score`` is the FINE score over 100; ``broad`` the BROAD grade. ``expected``: for a pool
    answer, what the estimator expects for the pair without this assessor's judgment, in
    [0, 1] (:func:`expected_scores`); ``expected_var`` its variance (optional; a default
    spread is assumed without it). ``others``: the mean of the other assessors' scores of
    the pair. ``repeat_of``: for a repeat, the assessor's earlier score of the pair.
    ``listen_fraction``: reported listening over what the campaign's rule requires (the
    smaller of the two clips, capped at 1; None when unknown or when no rule applies).
    ``query``: the pair's query (any hashable id), so that an offset is not confused with
    one query's; None when unknown.
    """

    kind: str
    score: float | None
    broad: int | None = None
    expected: float | None = None
    others: float | None = None
    repeat_of: float | None = None
    listen_fraction: float | None = None
    seconds: float | None = None
    expected_var: float | None = None
    query: object = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown answer kind {self.kind!r}: expected one of {KINDS}")
        for name in ("score", "expected", "others", "repeat_of"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and 0.0 <= value <= 1.0):
                raise ValueError(f"{name} must be in [0, 1], found {value}")
        if self.broad is not None and self.broad not in (0, 1, 2):
            raise ValueError(f"broad must be 0, 1 or 2, found {self.broad}")
        if self.listen_fraction is not None and not (
            math.isfinite(self.listen_fraction) and self.listen_fraction >= 0
        ):
            raise ValueError(f"listen_fraction must be >= 0, found {self.listen_fraction}")
        if self.expected_var is not None and not (
            math.isfinite(self.expected_var) and self.expected_var >= 0
        ):
            raise ValueError(f"expected_var must be >= 0, found {self.expected_var}")


@dataclass(frozen=True)
class Reliability:
    """What the evidence says of one assessor.

    ``flagged``: the evidence says unreliable, for the ``reasons`` (plain sentences).
    ``failed_trials``: flagged, and the hidden quality trials alone weigh at least
    ``sqrt(1 / alpha)`` (4.5 to 1 at the default alpha) towards careless (a campaign's
    auto-pause acts on it).
    ``metrics``: the signals (docs/quality.md lists them).
    """

    flagged: bool
    reasons: tuple[str, ...]
    failed_trials: bool
    metrics: dict[str, float | int | None]


@dataclass(frozen=True)
class Thresholds:
    """The flag rule's settings (docs/quality.md says how each was chosen).

    Attributes
    ----------
    alpha : float
        Largest probability of ever flagging a careful assessor (Ville's inequality).
    reference_cut, anchor_cut : float
        A reference trial fails under this FINE score (or at BROAD 0); an anchor fails over
        it (or at BROAD 2).
    reference_fail, anchor_fail : float
        How often a careful assessor fails each at most (the careful account).
    careful_sd : float
        Spread of a careful assessor's scores around what the pair deserves ([0, 1] units).
    model_sd : float
        Spread of the estimator's expectation around what the pair deserves, when
        :attr:`Answer.expected_var` is not given.
    repeat_sd : float
        Standard deviation of the difference between a careful assessor's two scores of
        the same pair.
    incoherent : float
        How often a careful assessor gives a BROAD grade two steps from the FINE band.
    low_listen, careful_low_listen : float
        Listening below this fraction of the rule counts as not listened; how often a
        careful assessor does so at most.
    offset_prior_sd : float
        Prior spread of careful assessors' offsets (the offset's shrinkage).
    expectation_bias_sd : float
        How far the expectation may be off for all of a campaign's pairs alike (M_out before
        the engine learns its offsets): the careful account learns it with the offset.
    query_sd : float
        Spread of the queries' own offsets, not learnt when one assessor judges a query.
    offset_limit, offset_credibility : float or None
        The harsh/lenient flag: the offset lies beyond the limit with this probability
        (None: no such flag, the default).
    """

    alpha: float = 0.05
    reference_cut: float = 0.6
    anchor_cut: float = 0.4
    reference_fail: float = 0.1
    anchor_fail: float = 0.2
    careful_sd: float = 0.2
    model_sd: float = 0.25
    repeat_sd: float = 0.2
    incoherent: float = 0.05
    low_listen: float = 0.5
    careful_low_listen: float = 0.1
    offset_prior_sd: float = 0.1
    query_sd: float = 0.15
    expectation_bias_sd: float = 0.25
    offset_limit: float | None = None
    offset_credibility: float = 0.99

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), found {self.alpha}")
        for name in ("reference_fail", "anchor_fail", "incoherent", "careful_low_listen"):
            value = getattr(self, name)
            if not 0.0 < value < 1.0:
                raise ValueError(f"{name} must be in (0, 1), found {value}")
        for name in ("careful_sd", "model_sd", "repeat_sd", "offset_prior_sd"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if self.query_sd < 0 or self.expectation_bias_sd < 0:
            raise ValueError("query_sd and expectation_bias_sd must be >= 0")
        if self.offset_limit is not None and self.offset_limit < 0:
            raise ValueError("offset_limit must be >= 0")
        if not 0.5 <= self.offset_credibility < 1.0:
            raise ValueError("offset_credibility must be in [0.5, 1)")


DEFAULT_THRESHOLDS = Thresholds()

# the careless account's unknown parameters: a Bernoulli rate of the bad outcome (mixed over
# this grid), and the densities its content-free scores may follow
_RATES = (0.3, 0.5, 0.7, 0.9)
#: prior weight of "no difference" in every mixture: no evidence counts more than 2 to 1
#: for an assessor
_NULL_WEIGHT = 0.5
#: the careless account's running normal: prior pseudo-answers at 0.5, with the careful
#: account's starting spread
_CARELESS_PRIOR = 2.0
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
#: the width of one FINE level on [0, 1]
_LEVEL = 0.01
#: prior pseudo-answers of the careful spread factor learnt from an assessor's residuals
_SPREAD_PRIOR = 2.0


def _log_level(x: FloatArray, mean: FloatArray, sd: FloatArray) -> FloatArray:
    """Log probability of the FINE level ``x`` (a bin of width 0.01) under a normal censored
    at 0 and 1: a score of 0 or 100 takes the whole tail beyond it, as volunteers' scores
    pile up at the ends of the scale."""
    z = (x - mean) / sd
    interior = -0.5 * z * z - _LOG_SQRT_2PI - np.log(sd) + math.log(_LEVEL)
    low = log_ndtr((_LEVEL / 2 - mean) / sd)
    high = log_ndtr((mean - (1.0 - _LEVEL / 2)) / sd)
    out = np.where(x <= _LEVEL / 2, low, np.where(x >= 1.0 - _LEVEL / 2, high, interior))
    return np.asarray(out, dtype=np.float64)


def _bernoulli_evidence(
    bad: Sequence[bool], careful_rate: Sequence[float], null_weight: float = _NULL_WEIGHT
) -> float:
    """Log mixture likelihood ratio (careless against careful) of a run of outcomes.

    Outcome ``i`` is bad with probability ``careful_rate[i]`` at most under the careful
    account; the careless account makes it bad with an unknown rate in :data:`_RATES` (or
    no differently, with weight :data:`_NULL_WEIGHT`)."""
    if not bad:
        return 0.0
    b = np.asarray(bad, dtype=bool)
    q = np.asarray(careful_rate, dtype=np.float64)
    terms = [math.log(null_weight)] if null_weight > 0 else []
    w = math.log((1.0 - null_weight) / len(_RATES))
    for p in _RATES:
        ratio = np.where(b, np.log(p / q), np.log1p(-p) - np.log1p(-q))
        terms.append(w + float(ratio.sum()))
    return float(logsumexp(terms))


def _content_evidence(
    scores: FloatArray,
    centre: FloatArray,
    spread2: FloatArray,
    groups: list[object],
    th: Thresholds,
) -> tuple[float, float]:
    """Log mixture likelihood ratio of pool scores that ignore the pair, against careful
    scores that follow ``centre`` with variance ``spread2`` up to the assessor's offset
    (prior sd ``offset_prior_sd``), the offset of the pair's query (``query_sd``: one
    assessor often judges a whole query, whose own offset nobody else has taught the
    expectation) and a spread factor, all learnt from the answers before each one.

    Returns (log ratio, the spread factor learnt from every answer)."""
    n = scores.shape[0]
    r = scores - centre
    inv = 1.0 / spread2
    tau_a2 = th.offset_prior_sd**2 + th.expectation_bias_sd**2
    tau_q2 = th.query_sd**2
    # per query: sum of weights and of weighted residuals of the answers so far
    weight: dict[object, float] = {}
    total: dict[object, float] = {}
    mean = np.empty(n)
    extra = np.empty(n)
    for i in range(n):
        g = groups[i]
        # the assessor's offset from every query so far (each with its own offset)
        precision_a, weighted_a = 1.0 / tau_a2, 0.0
        for key, w in weight.items():
            v = 1.0 / w + (tau_q2 if key is not None else 0.0)
            precision_a += 1.0 / v
            weighted_a += total[key] / w / v
        a, var_a = weighted_a / precision_a, 1.0 / precision_a
        q, var_q = 0.0, 0.0
        if g is not None:
            w_g = weight.get(g, 0.0)
            var_q = 1.0 / (w_g + 1.0 / tau_q2)
            q = (total.get(g, 0.0) - a * w_g) * var_q
        mean[i], extra[i] = centre[i] + a + q, var_a + var_q
        key = g if g is not None else ("answer", i)
        weight[key] = weight.get(key, 0.0) + inv[i]
        total[key] = total.get(key, 0.0) + r[i] * inv[i]
    z2 = (scores - mean) ** 2 * inv
    z2_before = np.concatenate(([0.0], np.cumsum(z2)[:-1]))
    factor = (_SPREAD_PRIOR + z2_before) / (_SPREAD_PRIOR + np.arange(n))
    sd = np.sqrt(factor * spread2 + extra)
    total_careful = float(_log_level(scores, mean, sd).sum())
    # careless: scores drawn from one distribution whatever the pair, learnt the same way
    # from the answers before each one (a normal around their running mean, with a running
    # spread that starts where the careful account's does), or uniform. The careful account
    # wins only as far as the expectation helps to predict the scores: where it says
    # little, neither account gains.
    count = np.arange(n, dtype=np.float64)
    sums = np.concatenate(([0.0], np.cumsum(scores)[:-1]))
    squares = np.concatenate(([0.0], np.cumsum(scores**2)[:-1]))
    level = (_CARELESS_PRIOR * 0.5 + sums) / (_CARELESS_PRIOR + count)
    spread = np.sqrt(
        (_CARELESS_PRIOR * spread2 + np.maximum(squares - sums**2 / np.maximum(count, 1.0), 0.0))
        / (_CARELESS_PRIOR + count)
    )
    learnt = float(_log_level(scores, level, np.maximum(spread, 0.01)).sum())
    uniform = n * math.log(1.0 / 101.0)
    logs = [math.log(0.7) + learnt - total_careful, math.log(0.3) + uniform - total_careful]
    final = (_SPREAD_PRIOR + float(z2.sum())) / (_SPREAD_PRIOR + n)
    return float(logsumexp(logs)), final


def _offset_posterior(
    residual: FloatArray, spread2: FloatArray, groups: list[object], th: Thresholds
) -> tuple[float, float]:
    """Posterior mean and sd of an assessor's offset from their pool residuals, with the
    residuals of one query sharing that query's own offset (spread ``query_sd``)."""
    if residual.size == 0:
        return 0.0, th.offset_prior_sd
    keys: dict[object, list[int]] = {}
    for i, g in enumerate(groups):
        keys.setdefault(g if g is not None else ("answer", i), []).append(i)
    precision = 1.0 / th.offset_prior_sd**2
    weighted = 0.0
    for members in keys.values():
        idx = np.asarray(members)
        w = 1.0 / spread2[idx]
        mean = float((w * residual[idx]).sum() / w.sum())
        var = 1.0 / float(w.sum()) + (th.query_sd**2 if groups[members[0]] is not None else 0.0)
        precision += 1.0 / var
        weighted += mean / var
    return weighted / precision, math.sqrt(1.0 / precision)


def _repeat_evidence(diffs: Sequence[float], th: Thresholds) -> float:
    """Log mixture likelihood ratio of repeat distances: careless draws twice at random
    (triangular distance), careful differs by a half-normal with ``repeat_sd``."""
    if not diffs:
        return 0.0
    d = np.clip(np.asarray(diffs, dtype=np.float64), 0.0, 1.0)
    sd = th.repeat_sd
    # half-normal on [0, 1], renormalised
    log_careful = (
        math.log(2.0)
        - 0.5 * (d / sd) ** 2
        - _LOG_SQRT_2PI
        - math.log(sd)
        - math.log(math.erf(1.0 / (sd * math.sqrt(2.0))))
    )
    log_careless = np.log(np.maximum(2.0 * (1.0 - d), 1e-12))
    return float(
        logsumexp(
            [
                math.log(_NULL_WEIGHT),
                math.log(1 - _NULL_WEIGHT) + float((log_careless - log_careful).sum()),
            ]
        )
    )


def _band(score: float) -> int:
    """The BROAD grade a FINE score's band suggests (cut points 34 and 67, docs/method.md)."""
    return 0 if score < 0.34 else (1 if score < 0.67 else 2)


def _fraction(passed: list[bool]) -> float | None:
    return sum(passed) / len(passed) if passed else None


def assess(answers: Sequence[Answer], thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Reliability:
    """Reliability of one assessor from their answers, in the order given (module docstring).

    Never raises on few answers: with none, nothing is flagged and the metrics are None.
    """
    th = thresholds
    trials = _trials(answers, th)
    # a careless assessor cannot tell the hidden trials from pool pairs: they fail them at
    # some rate above the careful one (no "no difference" weight here)
    ev_trials = _bernoulli_evidence(trials.bad, trials.rate, null_weight=0.0)
    ev_repeats = _repeat_evidence(trials.repeat_diffs, th)
    pool = _pool_answers(answers, th)
    # ---- coherence and listening over every answer
    incoherent = [
        abs(_band(a.score) - a.broad) >= 2
        for a in answers
        if a.score is not None and a.broad is not None
    ]
    ev_coherence = _bernoulli_evidence(incoherent, [th.incoherent] * len(incoherent))
    listened = [a.listen_fraction for a in answers if a.listen_fraction is not None]
    low = [f < th.low_listen for f in listened]
    ev_listen = _bernoulli_evidence(low, [th.careful_low_listen] * len(low))
    evidence = {
        "trials": ev_trials,
        "repeats": ev_repeats,
        "content": pool.evidence,
        "coherence": ev_coherence,
        "listening": ev_listen,
    }
    total = sum(evidence.values())
    threshold = math.log(1.0 / th.alpha)
    careless = total >= threshold
    # ---- harsh or lenient
    z = float(_norm_ppf(th.offset_credibility))
    off_flag = (
        th.offset_limit is not None
        and pool.offset is not None
        and pool.offset_sd is not None
        and abs(pool.offset) - z * pool.offset_sd > th.offset_limit
    )
    reasons: list[str] = []
    if careless:
        reasons.extend(_reasons(evidence, trials, incoherent, low, pool.n_content, th))
    if off_flag:
        assert pool.offset is not None
        word = "lower" if pool.offset < 0 else "higher"
        kind = "harsher" if pool.offset < 0 else "more lenient"
        reasons.append(
            f"Scores run about {abs(pool.offset) * 100:.0f} points {word} than expected for the "
            f"same pairs over {pool.n_content} pairs, well beyond the spread of careful "
            f"assessors ({kind} than the others)."
        )
    metrics = _metrics(answers, trials, pool, incoherent, listened, low, evidence, total)
    return Reliability(
        flagged=careless or off_flag,
        reasons=tuple(reasons),
        failed_trials=careless and ev_trials + ev_repeats >= 0.5 * threshold,
        metrics=metrics,
    )


class _Trials(NamedTuple):
    """An assessor's hidden quality trials and repeats (:func:`_trials`)."""

    #: every reference and anchor trial: failed, and how often a careful assessor fails it
    bad: list[bool]
    rate: list[float]
    #: the reference trials passed, and the anchor trials
    ref_ok: list[bool]
    anchor_ok: list[bool]
    #: the FINE scores of the failed reference trials, and of the failed anchor trials
    low_refs: list[float]
    high_anchors: list[float]
    #: the distance between each repeat's two scores
    repeat_diffs: list[float]


def _trials(answers: Sequence[Answer], th: Thresholds) -> _Trials:
    """The outcomes of the reference and anchor trials and the repeats, in answer order."""
    trials = _Trials([], [], [], [], [], [], [])
    for a in answers:
        if a.kind == "reference":
            bad = (a.score is not None and a.score < th.reference_cut) or a.broad == 0
            if a.score is None and a.broad is None:
                continue
            trials.ref_ok.append(not bad)
            trials.bad.append(bad)
            trials.rate.append(th.reference_fail)
            if bad and a.score is not None:
                trials.low_refs.append(a.score)
        elif a.kind == "anchor":
            bad = (a.score is not None and a.score > th.anchor_cut) or a.broad == 2
            if a.score is None and a.broad is None:
                continue
            trials.anchor_ok.append(not bad)
            trials.bad.append(bad)
            trials.rate.append(th.anchor_fail)
            if bad and a.score is not None:
                trials.high_anchors.append(a.score)
        elif a.kind == "repeat" and a.score is not None and a.repeat_of is not None:
            trials.repeat_diffs.append(abs(a.score - a.repeat_of))
    return trials


class _Pool(NamedTuple):
    """An assessor's pool answers against what is expected of them (:func:`_pool_answers`)."""

    #: every pool answer (second opinions included)
    answers: list[Answer]
    #: those with a score and something to compare it with
    n_content: int
    #: their scores less what is expected
    residual: FloatArray
    #: the log likelihood ratio of careless against careful (:func:`_content_evidence`)
    evidence: float
    #: the assessor's offset (posterior mean and sd) and spread factor; None without answers
    offset: float | None
    offset_sd: float | None
    spread_factor: float | None


def _pool_answers(answers: Sequence[Answer], th: Thresholds) -> _Pool:
    """The pool answers weighed against the other assessors' mean score of the pair where
    there is one, else the estimator's expectation (module docstring)."""
    pool = [a for a in answers if a.kind in POOL_KINDS]
    with_centre = [
        a for a in pool if a.score is not None and (a.others is not None or a.expected is not None)
    ]
    scores = np.array([a.score for a in with_centre], dtype=np.float64)
    centre = np.array(
        [a.others if a.others is not None else a.expected for a in with_centre], dtype=np.float64
    )
    spread2 = np.array(
        [
            2 * th.careful_sd**2
            if a.others is not None
            else th.careful_sd**2
            + (a.expected_var if a.expected_var is not None else th.model_sd**2)
            for a in with_centre
        ],
        dtype=np.float64,
    )
    groups = [a.query for a in with_centre]
    if not with_centre:
        return _Pool(pool, 0, scores - centre, 0.0, None, None, None)
    evidence, spread_factor = _content_evidence(scores, centre, spread2, groups, th)
    offset, offset_sd = _offset_posterior(scores - centre, spread2, groups, th)
    return _Pool(
        pool, len(with_centre), scores - centre, evidence, offset, offset_sd, spread_factor
    )


def _metrics(
    answers: Sequence[Answer],
    trials: _Trials,
    pool: _Pool,
    incoherent: list[bool],
    listened: list[float],
    low: list[bool],
    evidence: dict[str, float],
    total: float,
) -> dict[str, float | int | None]:
    """The signals :class:`Reliability` reports (docs/quality.md lists them)."""
    residual = pool.residual
    # ---- drift: later answers against earlier ones
    drift = None
    if residual.size >= 8:
        half = residual.size // 2
        drift = float(np.mean(np.abs(residual[half:])) - np.mean(np.abs(residual[:half])))
    return {
        "n_answers": len(answers),
        "n_pool": len(pool.answers),
        "n_trials": len(answers) - len(pool.answers),
        "reference_accuracy": _fraction(trials.ref_ok),
        "anchor_accuracy": _fraction(trials.anchor_ok),
        "n_repeats": len(trials.repeat_diffs),
        "repeat_consistency": float(np.mean(trials.repeat_diffs)) if trials.repeat_diffs else None,
        "agreement": _agreement(pool.answers),
        "offset": pool.offset,
        "offset_sd": pool.offset_sd,
        "spread": float(np.sqrt(np.mean((residual - (pool.offset or 0.0)) ** 2)))
        if residual.size
        else None,
        "spread_factor": pool.spread_factor,
        "incoherent_share": _fraction(incoherent),
        "median_listen_fraction": float(np.median(listened)) if listened else None,
        "low_listen_share": _fraction(low),
        "median_seconds": _median([a.seconds for a in answers]),
        "drift": drift,
        "evidence": total / math.log(10.0),
        **{f"evidence_{k}": v / math.log(10.0) for k, v in evidence.items()},
    }


def _norm_ppf(p: float) -> float:
    return float(norm.ppf(p))


def _median(values: Sequence[float | None]) -> float | None:
    v = [x for x in values if x is not None]
    return float(np.median(v)) if v else None


def _agreement(pool: Sequence[Answer]) -> float | None:
    """Mean absolute distance to the other assessors' mean score, over 100 (None: none)."""
    d = [abs(a.score - a.others) for a in pool if a.score is not None and a.others is not None]
    return float(np.mean(d)) if d else None


def _reasons(
    evidence: dict[str, float],
    trials: _Trials,
    incoherent: list[bool],
    low_listen: list[bool],
    n_content: int,
    th: Thresholds,
) -> list[str]:
    """Plain sentences for the evidence that weighs towards careless (at least 3 to 1)."""
    ref_ok, anchor_ok, repeat_diffs = trials.ref_ok, trials.anchor_ok, trials.repeat_diffs
    low_refs, high_anchors = trials.low_refs, trials.high_anchors
    strong = math.log(3.0)
    out: list[str] = []
    if evidence["listening"] >= strong:
        out.append(
            f"Listened to less than {th.low_listen:.0%} of the required time on "
            f"{sum(low_listen)} of {len(low_listen)} pairs."
        )
    if evidence["trials"] >= strong:
        parts = []
        if ref_ok and not all(ref_ok):
            parts.append(
                f"scored {ref_ok.count(False)} of {len(ref_ok)} hidden checks where a clip "
                "was compared with itself as not similar"
                + (f" (e.g. {min(low_refs) * 100:.0f}/100)" if low_refs else "")
            )
        if anchor_ok and not all(anchor_ok):
            parts.append(
                f"scored {anchor_ok.count(False)} of {len(anchor_ok)} hidden checks with a "
                "clearly different clip as similar"
                + (f" (e.g. {max(high_anchors) * 100:.0f}/100)" if high_anchors else "")
            )
        if parts:
            out.append(_sentence("; ".join(parts)))
    if evidence["repeats"] >= strong:
        out.append(
            f"Scored pairs that came back a second time very differently (by "
            f"{np.mean(repeat_diffs) * 100:.0f} points on average over {len(repeat_diffs)})."
        )
    if evidence["content"] >= strong:
        out.append(
            f"Scores do not follow the music: over {n_content} pairs they match what other "
            "assessors and the estimator expect no better than scores that ignore the pair."
        )
    if evidence["coherence"] >= strong:
        out.append(
            f"The BROAD grade contradicts the FINE score (two steps apart) on "
            f"{sum(incoherent)} of {len(incoherent)} pairs."
        )
    if not out:
        out.append(
            "Several weak signs together (hidden checks, repeats, agreement, listening) "
            "make careless answers far more likely than careful ones."
        )
    return out


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:] + "."
