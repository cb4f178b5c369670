"""The random-effects statistics (mtcjudge.mtc.effects): DerSimonian-Laird, Paule-Mandel, the
system effect and the sources' variance factors."""

import numpy as np
import pytest

from mtcjudge.mtc.effects import dersimonian_laird, estimate_system_effect, paule_mandel


# ------------------------------------------------------------------ the math
def test_dersimonian_laird_by_hand() -> None:
    # w = 1; m_w = 2; Q = 4 + 0 + 4 = 8; denominator 3 - 3/3 = 2 -> tau^2 = (8 - 2)/2 = 3
    tau2, mu = dersimonian_laird([0.0, 2.0, 4.0], [1.0, 1.0, 1.0])
    assert tau2 == pytest.approx(3.0)
    assert mu == pytest.approx(2.0)


def test_dersimonian_laird_unequal_variances() -> None:
    m = np.array([1.0, -1.0, 3.0])
    s2 = np.array([0.5, 1.0, 2.0])
    w = 1 / s2
    mw = (w * m).sum() / w.sum()
    q = (w * (m - mw) ** 2).sum()
    expected = (q - 2) / (w.sum() - (w**2).sum() / w.sum())
    tau2, mu = dersimonian_laird(m, s2)
    assert tau2 == pytest.approx(expected)
    wr = 1 / (s2 + expected)
    assert mu == pytest.approx((wr * m).sum() / wr.sum())


def test_dersimonian_laird_homogeneous_and_degenerate() -> None:
    assert dersimonian_laird([0.1, -0.1, 0.0], [1.0, 1.0, 1.0])[0] == 0.0
    assert dersimonian_laird([5.0], [1.0]) == (0.0, 5.0)
    assert dersimonian_laird([], []) == (0.0, 0.0)
    # infinite variance (a system without data) is ignored
    assert dersimonian_laird([0.0, 2.0, 4.0, 9.0], [1, 1, 1, np.inf])[0] == pytest.approx(3.0)


def test_dersimonian_laird_is_statsmodels_combine_effects() -> None:
    """The moment step is called alone for speed; its results must stay those of the
    public ``combine_effects(method_re="dl")`` (truncated at 0)."""
    from statsmodels.stats.meta_analysis import combine_effects

    rng = np.random.default_rng(7)
    for k in (2, 3, 18, 200):
        for spread in (0.1, 1.0, 5.0):
            m = rng.normal(0.0, spread, k)
            s2 = rng.uniform(0.2, 3.0, k)
            with np.errstate(invalid="ignore"):  # its intervals when tau^2 < 0
                ref = combine_effects(m, s2, method_re="dl")
            tau2, mu = dersimonian_laird(m, s2)
            if ref.tau2 > 0:
                assert tau2 == pytest.approx(ref.tau2, rel=1e-12)
                assert mu == pytest.approx(ref.mean_effect_re, rel=1e-12, abs=1e-15)
            else:
                assert tau2 == 0.0
                assert mu == pytest.approx(ref.mean_effect_fe, rel=1e-12, abs=1e-15)


def generalised_q(m: np.ndarray, s2: np.ndarray, tau2: float) -> float:
    """``sum_i w_i (m_i - m_w)^2`` with ``w_i = 1 / (s_i^2 + tau^2)`` (Cochran's Q at 0)."""
    w = 1.0 / (s2 + tau2)
    mw = (w * m).sum() / w.sum()
    return float((w * (m - mw) ** 2).sum())


def random_groups(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """2 to 29 group means and their variances, with no, some or much spread between them."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 30))
    s2 = rng.uniform(0.01, 2.0, k)
    m = rng.normal(0.0, rng.choice([0.0, 0.3, 3.0]), k) + rng.normal(0.0, np.sqrt(s2))
    return m, s2


def dersimonian_laird_by_hand(m: np.ndarray, s2: np.ndarray) -> tuple[float, float]:
    """Oracle: the moment estimate written out (DerSimonian & Laird 1986), truncated at 0."""
    w = 1.0 / s2
    q = generalised_q(m, s2, 0.0)
    tau2 = max(0.0, (q - (m.shape[0] - 1)) / (w.sum() - (w**2).sum() / w.sum()))
    wr = 1.0 / (s2 + tau2)
    return tau2, (wr * m).sum() / wr.sum()


@pytest.mark.parametrize("seed", range(20))
def test_dersimonian_laird_matches_the_formulas_by_hand(seed: int) -> None:
    m, s2 = random_groups(seed)
    tau2, mu = dersimonian_laird(m, s2)
    expected_tau2, expected_mu = dersimonian_laird_by_hand(m, s2)
    assert tau2 == pytest.approx(expected_tau2, rel=1e-9, abs=1e-12)
    assert mu == pytest.approx(expected_mu, rel=1e-9, abs=1e-12)


def test_dersimonian_laird_with_weights_too_unequal_to_estimate() -> None:
    # sum w - sum w^2 / sum w rounds to 0: no tau^2 can be told, the groups are pooled as equal
    tau2, mu = dersimonian_laird([0.0, 5.0], [1e-20, 1.0])
    assert (tau2, mu) == (0.0, pytest.approx(0.0))


def test_paule_mandel_by_hand() -> None:
    # equal variances: Q(tau^2) = 8 / (1 + tau^2) = K - 1 = 2 at tau^2 = 3, DerSimonian-Laird's too
    assert paule_mandel([0.0, 2.0, 4.0], [1.0, 1.0, 1.0]) == pytest.approx(3.0)
    # two groups: Q(tau^2) = (m1 - m2)^2 / (s1^2 + s2^2 + 2 tau^2) = 1 at (16 - 1 - 3) / 2 = 6
    assert paule_mandel([0.0, 4.0], [1.0, 3.0]) == pytest.approx(6.0)
    # one precise group among vaguer ones: the moment step weighs by 1/s^2 and finds less
    m, s2 = np.array([0.0, 3.0, -3.0, 3.0]), np.array([0.01, 1.0, 1.0, 1.0])
    tau2 = paule_mandel(m, s2)
    assert generalised_q(m, s2, tau2) == pytest.approx(3.0)
    assert tau2 == pytest.approx(7.2746, rel=1e-4)
    assert dersimonian_laird(m, s2)[0] == pytest.approx(4.0644, rel=1e-4)


def test_paule_mandel_bounds_and_degenerate() -> None:
    assert paule_mandel([0.1, -0.1, 0.0], [1.0, 1.0, 1.0]) == 0.0  # Q(0) <= K - 1
    assert paule_mandel([0.0, 2.0, 4.0], [1.0, 1.0, 1.0], upper=2.0) == 2.0  # held at the bound
    assert paule_mandel([0.0, 2.0, 4.0], [1.0, 1.0, 1.0], upper=5.0) == pytest.approx(3.0)
    assert paule_mandel([0.0, 2.0, 4.0], [1.0, 1.0, 1.0], upper=0.0) == 0.0
    assert paule_mandel([5.0], [1.0]) == 0.0
    assert paule_mandel([], []) == 0.0
    # infinite variance (an assessor without data) is ignored
    assert paule_mandel([0.0, 2.0, 4.0, 9.0], [1, 1, 1, np.inf]) == pytest.approx(3.0)


@pytest.mark.parametrize("seed", range(20))
def test_paule_mandel_solves_its_equation_as_statsmodels_does(seed: int) -> None:
    from statsmodels.stats.meta_analysis import _fit_tau_iterative

    m, s2 = random_groups(seed)
    k = m.shape[0]
    tau2 = paule_mandel(m, s2)
    if generalised_q(m, s2, 0.0) <= k - 1:
        assert tau2 == 0.0
        return
    assert generalised_q(m, s2, tau2) == pytest.approx(k - 1, rel=1e-8)
    reference, converged = _fit_tau_iterative(m, s2, atol=1e-12, maxiter=10_000)
    if converged:
        assert tau2 == pytest.approx(reference, rel=1e-6, abs=1e-12)


def test_system_effect_by_hand() -> None:
    # system 0: residuals 4, 4 with V = 2 -> m = 4, s^2 = 1; system 1: -4, -4 -> m = -4, s^2 = 1
    # DL: m_w = 0, Q = 32, denominator 2 - 2/2 = 1 -> tau^2 = 31; mu = 0
    eff = estimate_system_effect([0, 0, 1, 1], [4.0, 4.0, -4.0, -4.0], [2.0] * 4, 3)
    assert eff.tau2 == pytest.approx(31.0)
    assert eff.mu == pytest.approx(0.0)
    assert eff.bias[:2] == pytest.approx([4 * 31 / 32, -4 * 31 / 32])
    assert eff.post_var[:2] == pytest.approx([31 / 32, 31 / 32])
    # system 2 has no judged entry: prior mean and the full tau^2
    assert eff.bias[2] == pytest.approx(0.0)
    assert eff.post_var[2] == pytest.approx(31.0)
    assert list(eff.n_entries) == [2, 2, 0]


def test_system_effect_prior_pooling() -> None:
    empty = estimate_system_effect([], [], [], 4, tau2_prior=5.0, prior_weight=2.0)
    assert empty.tau2 == pytest.approx(5.0)
    assert empty.post_var == pytest.approx([5.0] * 4)
    assert empty.bias == pytest.approx([0.0] * 4)
    # data with tau^2_DL = 31 from K = 2 systems (K - 1 = 1) pooled with a prior worth 3
    eff = estimate_system_effect(
        [0, 0, 1, 1], [4.0, 4.0, -4.0, -4.0], [2.0] * 4, 2, tau2_prior=3.0, prior_weight=3.0
    )
    assert eff.tau2_data == pytest.approx(31.0)
    assert eff.tau2 == pytest.approx((3 * 3.0 + 1 * 31.0) / 4)
    no_effect = estimate_system_effect([0, 1], [0.0, 0.0], [1.0, 1.0], 2)
    assert no_effect.tau2 == 0.0
    assert no_effect.post_var == pytest.approx([0.0, 0.0])


def test_system_effect_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="same shape"):
        estimate_system_effect([0, 1], [1.0], [1.0], 2)
    with pytest.raises(ValueError, match="non-negative"):
        estimate_system_effect([0], [1.0], [1.0], 1, tau2_prior=-1.0)
