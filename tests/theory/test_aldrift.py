"""ALDRIFT theory: exact finite-space IMH bound, closed forms vs quadrature and samplers, KS tests, baselines."""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from hypothesis import given
from hypothesis import strategies as st

from jaxwb.theory import aldrift as al


@partial(jax.jit, static_argnames=("m", "M", "return_ess"))
def _imh_chains(cost, prior, tau, model, key, init=None, *, m, M, return_ess=False):
    """``al.imh_chains`` under one jit: one XLA compile per (shapes, m, M, return_ess, init given or not) that
    every test with those shapes shares; tau, the cost's and the model's parameters are traced arrays, so new
    values do not recompile (eager, each call re-traces the chain's scan and dispatches op by op)."""
    return al.imh_chains(cost, prior, tau, model, m=m, M=M, key=key, init=init, return_ess=return_ess)


# ---------------------------------------------------------------------------------------------------------
# Finite-space IMH: TV after M steps <= (1 - 1/W)^M, from every start, with the exact transition matrix
# ---------------------------------------------------------------------------------------------------------


@given(K=st.sampled_from([3, 6, 10]), seed=st.integers(0, 2**31 - 1), conc=st.floats(0.2, 5.0))
def test_imh_tv_bound_exact_transition_matrix(K, seed, conc, x64):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(K, conc))
    q = rng.dirichlet(np.full(K, conc))
    q = np.maximum(q, 1e-6)
    q /= q.sum()
    P = np.asarray(al.imh_transition_matrix(jnp.asarray(p), jnp.asarray(q)))
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-12)
    assert (P >= -1e-15).all()
    np.testing.assert_allclose(p @ P, p, atol=1e-12)  # p is stationary
    W = float(np.max(p / q))
    steps = np.arange(1, 41)
    bound = np.asarray(al.imh_tv_bound(jnp.full(steps.shape, W), jnp.asarray(steps, float)))  # one call, all M
    dist = np.eye(K)  # every start, one row each
    for M in steps:
        dist = dist @ P
        tv = 0.5 * np.abs(dist - p).sum(1).max()
        assert tv <= float(bound[M - 1]) + 1e-12, (M, tv, W)


def test_imh_tv_bound_is_attained_for_a_two_point_space(x64):
    # p = (1, 0) concentrated, q uniform: W = 2 and the chain from state 1 has TV exactly (1/2)^M
    p, q = jnp.array([1.0, 0.0]), jnp.array([0.5, 0.5])
    P = np.asarray(al.imh_transition_matrix(p, q))
    dist = np.array([0.0, 1.0])
    for M in range(1, 10):
        dist = dist @ P
        assert abs(0.5 * np.abs(dist - np.asarray(p)).sum() - float(al.imh_tv_bound(2.0, M))) < 1e-12


# ---------------------------------------------------------------------------------------------------------
# Envelope constants and the quadratic closed form
# ---------------------------------------------------------------------------------------------------------


@given(
    mu_d=st.floats(0.05, 5.0),
    A=st.floats(0.0, 5.0),
    w=st.floats(0.0, 8.0),
    seed=st.integers(0, 2**31 - 1),
    scale=st.floats(1e-3, 10.0),
)
def test_envelope_constant_L_d_is_mu_d_plus_A_w2(mu_d, A, w, seed, scale, x64):
    rng = np.random.default_rng(seed)
    x_star = rng.normal(size=4)
    x = x_star + scale * rng.normal(size=(64, 4))
    cost = al.rastrigin_envelope(mu_d, A, w, x_star)
    d = np.asarray(cost(jnp.asarray(x)))
    r2 = np.sum((x - x_star) ** 2, 1)
    lo, L_d = al.envelope_constants(mu_d, A, w)
    assert np.all(d >= 0.5 * lo * r2 * (1 - 1e-12))
    assert np.all(d <= 0.5 * L_d * r2 * (1 + 1e-12))
    # tight near x*: along an axis at tiny distance the ratio d / (|z|^2 / 2) tends to L_d
    z = np.zeros(4)
    z[0] = 1e-4
    assert abs(float(cost(jnp.asarray(x_star + z))) / (0.5 * 1e-8) - L_d) <= 1e-4 * L_d + 1e-9


@given(
    x0=st.floats(-5, 5), mu0=st.floats(0.05, 5.0), xs=st.floats(-3, 3), mu_d=st.floats(0.1, 3.0), T=st.floats(0.0, 50.0)
)
def test_quadratic_tempered_matches_quadrature(x0, mu0, xs, mu_d, T, x64):
    mean, var = al.quadratic_tempered(jnp.array([x0]), mu0, jnp.array([xs]), mu_d, T)
    grid = jnp.linspace(-40.0, 40.0, 200001)
    qm, qd = al.separable_tempered_moments(lambda z: 0.5 * mu_d * (z - xs) ** 2, x0, mu0, T, grid)
    np.testing.assert_allclose(float(mean[0]), float(qm), atol=1e-6)
    np.testing.assert_allclose(
        float(al.quadratic_expected_cost(jnp.array([x0]), mu0, jnp.array([xs]), mu_d, T)),
        float(qd),
        rtol=1e-5,
        atol=1e-9,
    )
    assert float(var) == pytest.approx(1.0 / (mu0 + T * mu_d))


QUAD = dict(n=3, mu_d=1.0, mu0=0.5, x0=2.0, T=5.0)


@pytest.fixture(scope="module")
def quadratic_run():
    """One ALDRIFT run on a pure quadratic (A = 0), n = 3: shared by the closed-form and KS tests (one compile)."""
    n, mu_d, mu0, x0 = QUAD["n"], QUAD["mu_d"], QUAD["mu0"], QUAD["x0"]
    cost = al.rastrigin_envelope(mu_d, 0.0, 1.0, jnp.zeros(n))
    prior = al.gaussian_prior(jnp.full(n, x0), mu0)
    taus = al.temperature_schedule("geometric", QUAD["T"], tau1=0.1, n=n)
    hist, xs, _ = al.aldrift(cost, prior, taus, m=2000, M=20, mu_d=mu_d, key=jax.random.key(3))
    mean, var = al.quadratic_tempered(jnp.full(n, x0), mu0, jnp.zeros(n), mu_d, taus[-1])
    return dict(cost=cost, taus=taus, hist=hist, xs=np.asarray(xs), mean=np.asarray(mean), var=float(var))


def test_quadratic_expected_cost_vs_aldrift_sampler(quadratic_run):
    """ALDRIFT on a pure quadratic ends with samples whose mean cost matches E_{p_T}[d] (closed form)."""
    r = quadratic_run
    n = QUAD["n"]
    measured = float(jnp.mean(r["cost"](jnp.asarray(r["xs"]))))
    predicted = float(
        al.quadratic_expected_cost(jnp.full(n, QUAD["x0"]), QUAD["mu0"], jnp.zeros(n), QUAD["mu_d"], r["taus"][-1])
    )
    # d = mu_d/2 |x|^2 with x ~ p_T: relative sd of a 2000-sample mean ~ 2%; 4 sd
    assert measured == pytest.approx(predicted, rel=0.08)
    np.testing.assert_allclose(r["xs"].mean(0), r["mean"], atol=0.05)


# ---------------------------------------------------------------------------------------------------------
# KS tests: the chains' final states follow the tempered target (1-D tempered Gaussian)
# ---------------------------------------------------------------------------------------------------------


def test_imh_chains_match_tempered_gaussian_ks():
    mu_d, mu0, x0, xs, tau = 2.0, 0.5, 3.0, -1.0, 4.0
    cost = al.rastrigin_envelope(mu_d, 0.0, 1.0, jnp.array([xs]))
    prior = al.gaussian_prior(jnp.array([x0]), mu0)
    mean, var = al.quadratic_tempered(jnp.array([x0]), mu0, jnp.array([xs]), mu_d, tau)
    # a proposal off-centre by one target sd and twice as wide: W = sqrt(2) e^{1/2} ~ 2.3, (1-1/W)^40 ~ 1e-10
    proposal = al.Gaussian.from_chol(mean + jnp.sqrt(var), jnp.sqrt(2.0 * var)[None, None])
    x, acc, _ = _imh_chains(cost, prior, tau, proposal, jax.random.key(0), m=3000, M=40)
    target = scipy.stats.norm(float(mean[0]), math.sqrt(float(var))).cdf
    stat = scipy.stats.kstest(np.asarray(x[:, 0]), target)
    assert stat.pvalue > 1e-3, stat
    assert 0.2 < float(acc) < 1.0
    # and a badly centred proposal would be visibly wrong without the correction
    raw = np.asarray(al.sample(proposal, (3000,), key=jax.random.key(1))[:, 0])
    assert scipy.stats.kstest(raw, target).pvalue < 1e-6


def test_aldrift_final_samples_match_tempered_gaussian_ks(quadratic_run):
    """Each coordinate of ALDRIFT's final samples is the 1-D tempered Gaussian N(mean_T,i, 1/(mu0 + T mu_d))."""
    r = quadratic_run
    for i in range(QUAD["n"]):
        stat = scipy.stats.kstest(r["xs"][:, i], scipy.stats.norm(r["mean"][i], math.sqrt(r["var"])).cdf)
        assert stat.pvalue > 1e-3 / QUAD["n"], (i, stat)


# ---------------------------------------------------------------------------------------------------------
# Schedules, models, coverage
# ---------------------------------------------------------------------------------------------------------


def test_paper_schedule_has_57_temperatures():
    taus = al.temperature_schedule("geometric", 20.0, tau1=0.1, n=10)
    assert len(taus) == al.num_temperatures("geometric", 20.0, tau1=0.1, n=10) == 57
    assert taus[0] == pytest.approx(0.1) and taus[-1] == pytest.approx(20.0)
    np.testing.assert_allclose(taus[1:-1] / taus[:-2], 1.1, rtol=1e-12)


@given(T=st.floats(0.1, 100.0), D=st.floats(0.1, 20.0))
def test_additive_schedule(T, D):
    taus = al.temperature_schedule("additive", T, D=D)
    assert len(taus) == math.ceil(T * D - 1e-9) or len(taus) == 1
    assert taus[-1] == pytest.approx(T) and np.all(np.diff(taus) > 0)
    assert np.all(np.diff(taus) <= 1.0 / D + 1e-12)


@given(m1=st.floats(-2, 2), s1=st.floats(0.3, 2.0), m2=st.floats(-2, 2), k=st.floats(1.1, 3.0))
def test_gaussian_sup_ratio_closed_form_vs_grid(m1, s1, m2, k, x64):
    s2 = k * s1
    xs = jnp.linspace(-60, 60, 400001)
    logp = jax.scipy.stats.norm.logpdf(xs, m1, s1)
    logL = al.log_prob(al.Gaussian.from_chol(jnp.array([m2]), jnp.array([[s2]])), xs[:, None])
    np.testing.assert_allclose(
        float(al.log_coverage_sup(logp, logL)), float(al.gaussian_log_sup_ratio(m1, s1, m2, s2)), atol=1e-6
    )


def test_gaussian_sup_ratio_infinite_when_model_too_narrow():
    assert np.isinf(float(al.gaussian_log_sup_ratio(0.0, 1.0, 0.0, 0.9)))
    assert float(al.gaussian_log_sup_ratio(0.5, 1.0, 0.5, 1.0)) == 0.0


@pytest.mark.parametrize("family", ["gauss", "kde"])
def test_log_prob_and_sample_agree_with_scipy(family, x64):
    key = jax.random.key(0)
    pts = jax.random.normal(key, (7, 2))
    if family == "gauss":
        model = al.fit_gaussian_empirical(pts * jnp.array([1.0, 3.0]) + 1.0)
        cov = np.asarray(model.chol @ model.chol.T)
        ref = scipy.stats.multivariate_normal(np.asarray(model.mean), cov)
        x = np.random.default_rng(0).normal(size=(5, 2))
        np.testing.assert_allclose(np.asarray(al.log_prob(model, jnp.asarray(x))), ref.logpdf(x), rtol=1e-10)
        np.testing.assert_allclose(np.asarray(al.log_prob_fn(model)(jnp.asarray(x))), ref.logpdf(x), rtol=1e-10)
    else:
        model = al.fit_kde(pts, 1.5)
        x = np.random.default_rng(0).normal(size=(5, 2))
        dens = np.mean(
            [scipy.stats.multivariate_normal(c, float(model.h) ** 2 * np.eye(2)).pdf(x) for c in np.asarray(pts)],
            axis=0,
        )
        np.testing.assert_allclose(np.asarray(al.log_prob(model, jnp.asarray(x))), np.log(dens), rtol=1e-10)
        assert float(model.h) == pytest.approx(1.5 * float(al.pooled_std(pts)))
    draws = al.sample(model, (40000,), key=jax.random.key(1))
    np.testing.assert_allclose(
        np.asarray(jnp.mean(draws, 0)), np.asarray(jnp.mean(pts, 0) if family == "kde" else model.mean), atol=0.05
    )


def test_coverage_tail_mass_of_a_too_narrow_gaussian():
    xs = jnp.linspace(-20, 20, 40001)
    dx = float(xs[1] - xs[0])
    logp = jax.scipy.stats.norm.logpdf(xs)
    logL = jax.scipy.stats.norm.logpdf(xs, 0.0, 0.5)
    # p/L = 0.5 exp(3 x^2 / 2) > K iff |x| > sqrt(2/3 ln(2K)); Pr = 2 (1 - Phi(.))
    K = 10.0
    thr = math.sqrt(2.0 / 3.0 * math.log(2 * K))
    np.testing.assert_allclose(float(al.coverage_tail_mass(logp, logL, dx, K)), 2 * scipy.stats.norm.sf(thr), rtol=2e-3)


# ---------------------------------------------------------------------------------------------------------
# ALDRIFT / TOPIFT behaviour, compilation, baselines
# ---------------------------------------------------------------------------------------------------------


def test_aldrift_no_recompile_for_new_cost_parameters():
    n = 2
    taus = al.temperature_schedule("geometric", 5.0, tau1=0.1, n=n)  # the other n = 2 runs' shapes: one compile
    prior = al.gaussian_prior(jnp.ones(n), 1.0)
    for A in (0.5, 1.5):
        cost = al.rastrigin_envelope(1.0, A, 3.0, jnp.zeros(n))
        hist, xs, _ = al.aldrift(cost, prior, taus, m=16, M=4, mu_d=1.0, key=jax.random.key(0))
        if A == 0.5:
            size = al.aldrift_jit._cache_size()
    assert al.aldrift_jit._cache_size() == size
    assert xs.shape == (16, n) and hist.mean.shape == (len(taus), n)
    assert np.all(np.diff(np.asarray(hist.evals)) == 16 * 5)
    assert np.all(np.diff(np.asarray(hist.best)) <= 0)
    assert np.all((np.asarray(hist.acceptance) >= 0) & (np.asarray(hist.acceptance) <= 1))


@pytest.mark.parametrize("family", ["empirical", "kde"])
def test_aldrift_other_families_run_and_stay_finite(family):
    n = 2
    cost = al.rastrigin_envelope(1.0, 0.5, 4.0, jnp.zeros(n))
    prior = al.gaussian_prior(jnp.full(n, 1.35), 2.0)
    taus = al.temperature_schedule("geometric", 5.0, tau1=0.1, n=n)
    hist, xs, _ = al.aldrift(cost, prior, taus, m=16, M=4, family=family, key=jax.random.key(0))
    assert np.all(np.isfinite(np.asarray(xs))) and np.all(np.isfinite(np.asarray(hist.sample_cost)))


def test_topift_keeps_the_cheapest_and_collapses():
    """On a plain quadratic TOPIFT's elite cost falls each round, and its fitted covariance collapses (mode
    collapse: it shrinks faster than the mean moves, so it stalls short of x*)."""
    n = 2
    cost = al.rastrigin_envelope(1.0, 0.0, 1.0, jnp.zeros(n))
    prior = al.gaussian_prior(jnp.full(n, 2.0), 1.0)
    hist, model = al.topift(cost, prior, m=20, M=10, rounds=15, key=jax.random.key(0))
    assert np.all(np.diff(np.asarray(hist.sample_cost)) <= 1e-3)  # elite costs fall round after round
    assert float(hist.sample_cost[-1]) < 0.1 * float(hist.sample_cost[0])
    assert float(jnp.max(jnp.abs(model.chol))) < 0.05  # sd collapsed from 1 to a few hundredths
    assert np.asarray(hist.evals)[-1] == 15 * 20 * 10


def test_evaluations_to_reach_flags_unreached():
    curve = jnp.array([5.0, 3.0, 3.0, 0.5, 0.1])
    cnt, ok = al.evaluations_to_reach(curve, jnp.array([4.0, 0.5, 0.01]))
    assert np.asarray(cnt).tolist() == [2.0, 4.0, 5.0] and np.asarray(ok).tolist() == [True, True, False]


def test_random_search_matches_ball_probability():
    # pure quadratic: the sublevel set is exactly the ball; P = pi r^2 / 16 on [-2, 2]^2, count ~ Geometric(P)
    n, L_d, eps = 2, 2.0, 0.02
    cost = al.rastrigin_envelope(L_d, 0.0, 1.0, jnp.full(n, 0.3))
    keys = jax.random.split(jax.random.key(0), 400)
    curves = jax.vmap(lambda k: al.random_search(cost, -2.0, 2.0, n=n, budget=4000, key=k))(keys)
    cnt, ok = jax.vmap(lambda c: al.evaluations_to_reach(c, jnp.array([eps])))(curves)
    assert bool(ok.all())
    expected = float(al.random_search_expected_evals(eps, L_d, -2.0, 2.0, n))
    assert expected == pytest.approx(16 / (math.pi * 2 * eps / L_d))
    assert float(cnt.mean()) == pytest.approx(expected, rel=0.15)  # 400 geometric draws: sd ~ 5%


def test_doo_cells_tile_the_box_and_reach_high_precision():
    n = 2
    cost = al.rastrigin_envelope(1.0, 0.5, 4.0, jnp.array([0.3, -0.7]))
    best, centers, half = al.doo(cost, -3.7, 6.3, n=n, L_d=al.envelope_constants(1.0, 0.5, 4.0)[1], expansions=200)
    vol = np.prod(2 * np.asarray(half), axis=1)
    assert vol.sum() == pytest.approx(100.0, rel=1e-5)
    assert np.all(np.diff(np.asarray(best)) <= 0)
    assert float(best[-1]) < 1e-5


def test_aldrift_evals_per_efold():
    assert al.aldrift_evals_per_efold(100, 20, 2) == pytest.approx(2100 / math.log(1.5))


# ---------------------------------------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------------------------------------


def test_bad_parameters_raise_value_errors_naming_them():
    cost = al.rastrigin_envelope(1.0, 0.5, 4.0, jnp.zeros(2))
    prior = al.gaussian_prior(jnp.zeros(2), 1.0)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="mu_d"):
        al.rastrigin_envelope(-1.0, 0.5, 4.0, jnp.zeros(2))
    with pytest.raises(ValueError, match="mu0"):
        al.gaussian_prior(jnp.zeros(2), 0.0)
    with pytest.raises(ValueError, match="family"):
        al.aldrift(cost, prior, [1.0], m=4, M=2, family="gmm", key=key)
    with pytest.raises(ValueError, match="mu_d"):
        al.aldrift(cost, prior, [1.0], m=4, M=2, key=key)
    with pytest.raises(ValueError, match="^m must"):
        al.aldrift(cost, prior, [1.0], m=0, M=2, mu_d=1.0, key=key)
    with pytest.raises(ValueError, match="taus"):
        al.aldrift(cost, prior, [-1.0], m=4, M=2, mu_d=1.0, key=key)
    with pytest.raises(ValueError, match="schedule"):
        al.num_temperatures("cosine", 1.0)
    with pytest.raises(ValueError, match="tau1"):
        al.num_temperatures("geometric", 1.0, n=2)
    with pytest.raises(ValueError, match="hi"):
        al.random_search(cost, 1.0, 0.0, n=2, budget=10, key=key)
    with pytest.raises(ValueError, match="rounds"):
        al.topift(cost, prior, m=4, M=2, rounds=0, key=key)
    with pytest.raises(ValueError, match="c must"):
        al.fit_kde(jnp.zeros((3, 1)), 0.0)


def test_importance_ess_fraction():
    assert float(al.importance_ess(jnp.zeros(100))) == pytest.approx(1.0)  # equal weights
    lw = jnp.log(jnp.array([1.0, 0.0, 0.0, 0.0]) + 1e-30)
    assert float(al.importance_ess(lw)) == pytest.approx(0.25, rel=1e-6)  # one weight carries everything
    w = np.array([1.0, 2.0, 3.0, 4.0])
    assert float(al.importance_ess(jnp.log(jnp.asarray(w)))) == pytest.approx(
        w.sum() ** 2 / (4 * (w**2).sum()), rel=1e-6
    )


def test_imh_chains_ess_is_one_when_the_proposal_is_the_target():
    # pure quadratic: p_tau = N((mu0 x0)/(mu0 + tau mu_d), 1/(mu0 + tau mu_d)); propose exactly that
    n, mu_d, mu0, tau = 3, 1.0, 0.5, 2.0
    cost = al.rastrigin_envelope(mu_d, 0.0, 1.0, jnp.zeros(n))
    prior = al.gaussian_prior(jnp.ones(n), mu0)
    mu = mu0 + tau * mu_d
    model = al.Gaussian.from_cov(jnp.full(n, mu0 / mu), jnp.eye(n) / mu)
    _, acc, _, ess = _imh_chains(cost, prior, tau, model, jax.random.key(0), m=64, M=8, return_ess=True)
    assert float(ess) == pytest.approx(1.0, abs=1e-4)
    assert float(acc) == pytest.approx(1.0, abs=1e-6)
    # without return_ess the public call returns three outputs (traced only: eval_shape compiles nothing)
    assert len(jax.eval_shape(lambda: al.imh_chains(cost, prior, tau, model, m=4, M=2, key=jax.random.key(0)))) == 3


def test_history_records_ess_in_unit_interval():
    n = 2
    cost = al.rastrigin_envelope(1.0, 0.5, 4.0, jnp.zeros(n))
    prior = al.gaussian_prior(jnp.full(n, 1.35), 2.0)
    taus = al.temperature_schedule("geometric", 5.0, tau1=0.1, n=n)
    hist, _, _ = al.aldrift(cost, prior, taus, m=16, M=4, mu_d=1.0, key=jax.random.key(0))
    ess = np.asarray(hist.ess)
    assert ess.shape == (len(taus),) and np.all((ess > 0) & (ess <= 1 + 1e-6))
    ht, _ = al.topift(cost, prior, m=16, M=4, rounds=3, key=jax.random.key(0))
    np.testing.assert_array_equal(np.asarray(ht.ess), 1.0)


# ---------------------------------------------------------------------------------------------------------
# Gaussian importance ESS (eq. ESS): quadrature, Monte Carlo Kish estimates and the IMH chains themselves
# ---------------------------------------------------------------------------------------------------------


@given(a=st.floats(-1.5, 1.5), s1=st.floats(0.3, 2.0), b=st.floats(-1.5, 1.5), k=st.floats(0.75, 3.0))
def test_gaussian_importance_ess_vs_quadrature(a, s1, b, k, x64):
    # 1-D: 1 / int p^2/q dx on a fine grid; k = s2/s1 > 1/sqrt(2) keeps the integral finite
    s2 = k * s1
    xs = np.linspace(-40.0, 40.0, 400001)
    log_ratio2 = 2 * scipy.stats.norm.logpdf(xs, a, s1) - scipy.stats.norm.logpdf(xs, b, s2)
    integral = np.sum(np.exp(log_ratio2)) * (xs[1] - xs[0])
    assert float(al.gaussian_importance_ess(a, s1**2, b, s2**2, 1)) == pytest.approx(1 / integral, rel=1e-6)


def test_gaussian_importance_ess_product_form_and_edge_cases(x64):
    # n coordinates multiply; a (..., 1) or scalar mean stands for every coordinate; q too narrow -> 0
    one = float(al.gaussian_importance_ess(0.3, 0.5, 0.0, 1.1, 1))
    assert float(al.gaussian_importance_ess(0.3, 0.5, 0.0, 1.1, 4)) == pytest.approx(one**4, rel=1e-12)
    vec = al.gaussian_importance_ess(jnp.full((2, 4), 0.3), 0.5, jnp.zeros((2, 4)), 1.1, 4)
    np.testing.assert_allclose(np.asarray(vec), one**4, rtol=1e-12)
    col = al.gaussian_importance_ess(jnp.array([[0.3], [0.0]]), 0.5, 0.0, 1.1, 4)
    assert float(col[0]) == pytest.approx(one**4, rel=1e-12) and float(col[1]) > float(col[0])
    assert float(al.gaussian_importance_ess(0.0, 1.0, 0.0, 1.0, 7)) == pytest.approx(1.0, rel=1e-12)
    assert float(al.gaussian_importance_ess(0.0, 1.0, 0.0, 0.5, 3)) == 0.0
    with pytest.raises(ValueError, match="var_q"):
        al.gaussian_importance_ess(0.0, 1.0, 0.0, -1.0, 3)
    with pytest.raises(ValueError, match="mean_var"):
        al.gaussian_importance_ess(0.0, 1.0, 0.0, 1.0, 3, mean_var=-0.1)


def test_gaussian_importance_ess_vs_monte_carlo_kish_and_random_mean(x64):
    rng = np.random.default_rng(0)
    n, vp, vq = 10, 0.1, 0.22  # the paper's inflation at a step tau -> 1.1 tau: var_q / var_p = 2.2
    a = 0.1 * rng.normal(size=n)
    y = math.sqrt(vq) * rng.standard_normal((400_000, n))
    lw = (scipy.stats.norm.logpdf(y, a, math.sqrt(vp)) - scipy.stats.norm.logpdf(y, 0.0, math.sqrt(vq))).sum(1)
    pred = float(al.gaussian_importance_ess(jnp.asarray(a), vp, jnp.zeros(n), vq, n))
    assert float(al.importance_ess(jnp.asarray(lw))) == pytest.approx(pred, rel=0.02)
    # averaging over a proposal mean drawn from N(0, mean_var I): Monte Carlo over the mean vs the closed form
    mv = 0.01
    means = math.sqrt(mv) * rng.standard_normal((20_000, n))
    mc = np.mean(np.asarray(al.gaussian_importance_ess(jnp.asarray(a), vp, jnp.asarray(means), vq, n)))
    assert float(al.gaussian_importance_ess(jnp.asarray(a), vp, jnp.zeros(n), vq, n, mean_var=mv)) == pytest.approx(
        mc, rel=0.01
    )


@pytest.mark.parametrize("inflation", [1.0, 2.0])
def test_imh_chains_ess_matches_the_closed_form(inflation):
    # the sampler's recorded ESS (proposals are iid from the model whatever the chain does) vs eq. ESS
    n, mu_d, mu0, tau = 10, 0.5, 0.1, 10.0
    cost = al.rastrigin_envelope(mu_d, 0.0, 3.0, jnp.zeros(n))
    prior = al.gaussian_prior(jnp.full(n, 6.0), mu0)
    mu, mu_prev = mu0 + tau * mu_d, mu0 + tau / 1.1 * mu_d
    model = al.Gaussian.from_chol(jnp.full(n, mu0 * 6.0 / mu_prev), math.sqrt(inflation / mu_prev) * jnp.eye(n))
    # both inflations share one compiled program (same shapes; tau and the model are traced)
    _, _, _, ess = _imh_chains(cost, prior, tau, model, jax.random.key(1), m=400, M=50, return_ess=True)
    pred = float(al.gaussian_importance_ess(mu0 * 6.0 / mu, 1 / mu, mu0 * 6.0 / mu_prev, inflation / mu_prev, n))
    assert float(ess) == pytest.approx(pred, rel=0.1), (inflation, float(ess), pred)  # Kish sd ~2.5% at N=2e4


# ---------------------------------------------------------------------------------------------------------
# API: Gaussian.from_cov / from_chol, chains from given initial states
# ---------------------------------------------------------------------------------------------------------


def test_gaussian_from_cov_and_from_chol_describe_the_same_law():
    cov = jnp.array([[2.0, 0.6], [0.6, 1.0]])
    g_cov = al.Gaussian.from_cov(jnp.ones(2), cov)
    g_chol = al.Gaussian.from_chol(jnp.ones(2), jnp.linalg.cholesky(cov))
    np.testing.assert_allclose(np.asarray(g_cov.cov), np.asarray(cov), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(g_chol.chol), np.asarray(g_cov.chol), rtol=1e-6)
    x = jnp.array([[0.3, -1.0], [2.0, 1.5]])
    ref = scipy.stats.multivariate_normal(np.ones(2), np.asarray(cov)).logpdf(np.asarray(x))
    np.testing.assert_allclose(np.asarray(al.log_prob(g_cov, x)), ref, rtol=1e-5)
    # the trap the named constructors remove: a covariance taken as a Cholesky factor has the wrong spread
    wrong = al.Gaussian(jnp.zeros(1), jnp.array([[4.0]]))
    assert float(wrong.cov[0, 0]) == 16.0 and float(al.Gaussian.from_cov(jnp.zeros(1), [[4.0]]).cov[0, 0]) == 4.0


def test_imh_chains_start_from_given_states():
    from jaxwb.theory.aldrift.models import draw_noise, from_noise

    cost = al.rastrigin_envelope(1.0, 0.5, 2.0, jnp.zeros(2))
    prior = al.gaussian_prior(jnp.full(2, 1.0), 0.5)
    model = al.Gaussian.from_cov(jnp.zeros(2), 2.0 * jnp.eye(2))
    key, m, M = jax.random.key(7), 5, 6
    # the default start is each chain's first proposal draw: passing those states reproduces the run exactly
    starts = jax.vmap(lambda k: from_noise(model, *draw_noise(model, jax.random.split(k)[0], (M + 1,)))[0])(
        jax.random.split(key, m)
    )
    default = al.imh_chains(cost, prior, 3.0, model, m=m, M=M, key=key)
    given_ = al.imh_chains(cost, prior, 3.0, model, m=m, M=M, key=key, init=starts)
    for a, b in zip(default, given_, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
    # started at the minimiser with a very cold target, chains reject every proposal and stay where they began
    init = jnp.zeros((m, 2))
    xs, acc, _ = al.imh_chains(cost, prior, 1e6, model, m=m, M=M, key=key, init=init)
    assert float(acc) == 0.0
    np.testing.assert_array_equal(np.asarray(xs), np.asarray(init))
