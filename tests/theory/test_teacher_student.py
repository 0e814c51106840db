"""Teacher-student decoupled fixed point (our reconstruction): properties, closed forms, an independent SciPy
reference (closed-form branches + root finding on Delta_eff + global potential), Monte Carlo for Nishimori."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from jaxwb.theory import teacher_student as ts

K = 40  # one feature count for every solver test, so jit compiles once per dtype
GRID = np.geomspace(0.5, 1e6, 48)
betas = st.sampled_from([0.75, 1.0, 1.5, 2.0])
deltas = st.sampled_from([0.05, 0.3, 1.0, 5.0])


# ---------------------------------------------------------------------------------------------------------
# Amplitudes, kernels, closed forms
# ---------------------------------------------------------------------------------------------------------


@given(beta=st.floats(0.55, 3.0), k=st.sampled_from([1, 7, 100]))
def test_amplitudes_normalised_and_decreasing(beta, k, x64):
    a2 = np.asarray(ts.amplitudes(k, beta))
    assert a2.shape == (k,) and abs(a2.sum() - 1) < 1e-12
    assert np.all(np.diff(a2) < 0)
    np.testing.assert_allclose(a2 * float(ts.normaliser(k, beta)), np.arange(1, k + 1) ** (-2 * beta), rtol=1e-12)


@given(m=st.floats(0.0, 0.999), mu=st.lists(st.floats(-2, 2), min_size=1, max_size=5))
def test_kernel_from_hermite_coefficients(m, mu, x64):
    mu = np.array(mu)
    if np.sum(mu**2) < 1e-6:
        return
    kern = ts.hermite_kernel(mu)
    ls = np.arange(1, len(mu) + 1)
    expected = np.sum(mu**2 * m**ls) / np.sum(mu**2)
    np.testing.assert_allclose(float(ts.g(m, kern)), expected, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(
        float(ts.g_prime(m, kern)), np.sum(ls * mu**2 * m ** (ls - 1)) / np.sum(mu**2), rtol=1e-10, atol=1e-14
    )
    s = m / (1 - m)
    np.testing.assert_allclose(float(ts.one_minus_g_from_s(s, kern)), 1 - expected, rtol=1e-9, atol=1e-13)


def test_one_minus_g_is_accurate_deep_in_refinement():
    # float32: 1 - m^3 at s = 1e9 must be 3e-9, not the 0 that 1 - g(m) would give
    val = float(ts.one_minus_g_from_s(jnp.float32(1e9)))
    np.testing.assert_allclose(val, 3e-9, rtol=1e-5)


def test_information_threshold_matches_scipy():
    def f_plus(c):  # per-feature potential on the non-trivial branch, Delta_eff frozen
        m = 0.5 * (1 + np.sqrt(1 - 4 / (3 * c)))
        return m + np.log1p(-m) + c * m**3

    c_it = optimize.brentq(f_plus, 4 / 3 + 1e-12, 5.0, xtol=1e-14)
    assert abs(ts.C_IT - c_it) < 1e-10
    assert abs(ts.C_IT - 1.4558) < 1e-4 and abs(ts.M_JUMP - 0.645) < 1e-3  # the notes' numbers
    assert abs(float(ts.m_plus(4 / 3)) - 0.5) < 1e-7  # spinodal
    assert float(ts.m_plus(1.3)) == 0.0


@given(c=st.floats(4 / 3, 1e4))
def test_m_plus_is_a_fixed_point_and_the_maximum_of_f(c, x64):
    m = float(ts.m_plus(c))
    s = 3 * c * m**2
    np.testing.assert_allclose(m, s / (1 + s), rtol=1e-9)
    grid = np.linspace(0.0, 0.999999, 20001)
    f = np.asarray(ts.feature_potential(grid, c))
    # the learned branch is the global maximum of f exactly when c >= c_IT
    best = grid[np.argmax(f)]
    if c > ts.C_IT * 1.001:
        assert abs(best - m) < 1e-3
    elif c < ts.C_IT * 0.999:
        assert best == 0.0


# ---------------------------------------------------------------------------------------------------------
# The solver returns the global maximiser: property test against an independent float64 reference
# ---------------------------------------------------------------------------------------------------------


def phi64(m, alpha, a2, delta):
    """Phi = sum_i (m_i + log(1 - m_i))/2 - (alpha/2) log(Delta + sum_i a2_i (1 - m_i^3)), NumPy float64."""
    m, a2 = np.asarray(m, np.float64), np.asarray(a2, np.float64)
    return float(np.sum(0.5 * (m + np.log1p(-m))) - 0.5 * alpha * np.log(delta + np.sum(a2 * (1 - m**3))))


def check_global_maximiser(k, beta, delta, log_alpha):
    from jaxwb.sims.teacher_student.reference import reference_solve  # NumPy: dense starts, no branch selection

    a2 = ts.amplitudes(k, beta)
    alpha = float(np.exp(log_alpha))
    sol = ts.solve(alpha, a2, delta)
    ref = reference_solve(alpha, np.asarray(a2, np.float64), delta)
    assert ref["n_converged"] > 0
    phi_sol = phi64(sol.m, alpha, a2, delta)
    # no converged point of the independent method has a larger potential than the solver's point
    assert ref["phi"] <= phi_sol + 1e-11 * (1 + alpha), (ref["phi"] - phi_sol, ref["eps"], float(sol.eps_bo))
    # and the solver's point is self-consistent (eqs. D/FP) in float64
    m = np.asarray(sol.m, np.float64)
    d = delta + np.sum(np.asarray(a2) * (1 - m**3))
    np.testing.assert_allclose(float(sol.delta_eff), d, rtol=1e-9)
    s = 3 * alpha * np.asarray(a2) * m**2 / d
    np.testing.assert_allclose(m, s / (1 + s), atol=1e-9)


KS = st.sampled_from([3, 12, 40])


@given(k=KS, beta=betas, delta=deltas, log_alpha=st.floats(-1.0, 14.0))
@settings(max_examples=12, deadline=None)
def test_solver_is_the_global_maximiser(k, beta, delta, log_alpha, x64):
    check_global_maximiser(k, beta, delta, log_alpha)


@pytest.mark.slow
@given(k=KS, beta=st.floats(0.55, 2.5), delta=st.floats(0.02, 10.0), log_alpha=st.floats(-1.0, 14.0))
@settings(max_examples=220, deadline=None)
def test_solver_is_the_global_maximiser_many(k, beta, delta, log_alpha, x64):
    check_global_maximiser(k, beta, delta, log_alpha)


def test_near_a_threshold_several_points_coexist_and_the_larger_phi_is_kept(x64):
    # first feature with small noise: learning it lowers Delta_eff a lot, so both configurations are
    # self-consistent on an alpha window around the jump; the solver must see both and keep the larger Phi
    from jaxwb.sims.teacher_student.reference import reference_solve

    a2 = ts.amplitudes(12, 1.0)
    alphas = np.geomspace(1.0, 10.0, 60)
    sol = ts.solve_grid(alphas, a2, 0.25)
    assert np.max(np.asarray(sol.n_candidates)) >= 2
    both = np.asarray(sol.n_candidates) >= 2
    assert np.all(np.asarray(sol.dphi)[both] >= 0)
    for a in alphas[both][:6]:
        ref = reference_solve(float(a), np.asarray(a2), 0.25)
        assert ref["n_distinct"] >= 2
        np.testing.assert_allclose(float(ts.solve(a, a2, 0.25).eps_bo), ref["eps"], rtol=1e-8)


def test_prefix_forms_equal_the_closed_forms(x64):
    # the loops' eps_j = (2D/(3 alpha)) sum_{i<j} (t/4 + 1/2 + 1/t) + tail[j] is sum_i a2_i (1 - m_i^3) with the
    # first j features on the learned branch m+(alpha a2_i / D); the overlaps and Phi's feature sum likewise
    a2 = np.asarray(ts.amplitudes(37, 1.0))  # 37: not a multiple of the lane width (padding exercised)
    alpha, delta = 300.0, 0.3
    w, d_thr, tail = ts.fast_terms(alpha, jnp.asarray(a2), delta)
    for x in (1e-4, 0.02, 0.2, 0.9):
        d = delta + x
        for j in (0, 1, int(np.sum(d <= np.asarray(d_thr))), 37):
            c = alpha * a2 / d
            m = np.where(np.arange(37) < j, 0.5 * (1 + np.sqrt(np.maximum(1 - 4 / (3 * c), 0))), 0.0)
            on = np.arange(37) < j
            if np.any(c[on] < 4 / 3):  # no learned branch there: not a state the solver evaluates
                continue
            np.testing.assert_allclose(
                float(ts.prefix_eps(x, j, w, alpha, delta, tail)), np.sum(a2 * (1 - m**3)), rtol=1e-12
            )
            e, t = ts.prefix_sums(x, j, w, alpha, delta, tail)
            np.testing.assert_allclose(float(e), np.sum(a2 * (1 - m**3)), rtol=1e-12)
            np.testing.assert_allclose(float(t), np.sum(0.5 * (m + np.log1p(-m))), rtol=1e-12, atol=1e-14)
            mm, uu = (np.asarray(v)[:37] for v in ts.prefix_overlaps(x, j, w, delta))
            np.testing.assert_allclose(mm, m, rtol=1e-12)
            np.testing.assert_allclose(uu, 1 - m, rtol=1e-9)


def test_first_crossing():
    y = jnp.array([[0.0, 0.1, 0.7, 0.9], [0.0, 0.0, 0.0, 0.2]])
    np.testing.assert_array_equal(np.asarray(ts.first_crossing(y, 0.5)), [2, 4])


# ---------------------------------------------------------------------------------------------------------
# Properties on alpha grids (vmapped solver)
# ---------------------------------------------------------------------------------------------------------


@given(beta=betas, delta=deltas)
@settings(max_examples=5)
def test_grid_properties_and_closed_forms(beta, delta, x64):
    a2 = ts.amplitudes(K, beta)
    # the static-shape solve (one compiled program for every example; the learnable-heads path, whose bucket
    # shapes change with beta and Delta and so recompile per example, equals it: tested below)
    sol = ts.solve_grid(GRID, a2, delta, heads=False)
    eps, m, de = np.asarray(sol.eps_bo), np.asarray(sol.m), np.asarray(sol.delta_eff)
    # monotonicity and ordering (unlearned overlaps are numerically 0: < 1e-10 remnants of the 1e-6 seed)
    assert np.all(np.diff(eps) <= 1e-12), "eps_BO must be non-increasing in alpha"
    assert np.all(np.diff(m, axis=0) >= -1e-9), "each m_i must be non-decreasing in alpha"
    assert np.all(np.diff(m, axis=1) <= 1e-9), "m_i >= m_{i+1}"
    assert np.all(np.diff(np.asarray(sol.k_c)) >= 0)
    # Gibbs = 2 x Bayes (Nishimori), and eps_BO = Delta_eff - Delta
    np.testing.assert_allclose(np.asarray(ts.gibbs_error(sol.m, a2)), 2 * eps, rtol=1e-9)
    np.testing.assert_allclose(de, delta + eps, rtol=1e-8)  # converged to tol = 1e-10 (relative, in D)
    # closed forms: learned <=> c = alpha a2/Delta_eff >= c_IT, and then m = m+(c) >= m+(c_IT); else m = 0
    c = GRID[:, None] * np.asarray(a2)[None] / de[:, None]
    learned = m > 0.5
    assert np.array_equal(learned, c >= ts.C_IT)
    np.testing.assert_allclose(m[learned], np.asarray(ts.m_plus(c[learned])), atol=1e-8)
    assert np.all(m[~learned] < 1e-9)
    assert np.all(m[learned] >= ts.M_JUMP - 1e-9)
    # k_c is the integer part of (alpha / (c_IT Delta_eff Z))^(1/(2 beta)), capped at k
    kcf = np.asarray(ts.k_c_closed_form(GRID, beta, K, de))
    np.testing.assert_array_equal(np.asarray(sol.k_c), np.minimum(np.floor(kcf + 1e-9), K))


@pytest.mark.parametrize("beta", [1.0, 1.5])
def test_jumps_at_thresholds_and_exponent_2beta(beta, x64):
    # Delta >> tail: Delta_eff ~ Delta, so the thresholds follow c_IT Delta Z i^(2 beta) (notes: small Delta bends)
    delta = 200.0
    a2 = ts.amplitudes(K, beta)
    idx = jnp.array([3, 7, 15, 31])
    thr = np.asarray(ts.thresholds(idx, a2, delta))
    local = np.diff(np.log(thr)) / np.diff(np.log(np.asarray(idx) + 1.0))
    assert np.all(np.abs(local - 2 * beta) < 0.02), local
    np.testing.assert_allclose(
        thr, np.asarray(ts.threshold_closed_form(np.asarray(idx) + 1, beta, K, delta)), rtol=0.01
    )
    left = ts.solve_grid(thr * (1 - 1e-7), a2, delta)
    right = ts.solve_grid(thr * (1 + 1e-7), a2, delta)
    rows = np.arange(len(idx))
    m_left, m_right = np.asarray(left.m)[rows, idx], np.asarray(right.m)[rows, idx]
    assert np.all(m_left < 1e-9)
    assert np.all(m_right >= ts.M_JUMP - 1e-9)  # jump >= m+(c_IT)
    c_left = thr * np.asarray(a2)[idx] / np.asarray(left.delta_eff)
    c_right = thr * np.asarray(a2)[idx] / np.asarray(right.delta_eff)
    assert np.all(c_left <= ts.C_IT * (1 + 1e-6)) and np.all(c_right >= ts.C_IT * (1 - 1e-6))


def test_first_jump_with_small_noise_is_larger_than_0645(x64):
    # feature 1 carries a large share of the signal: learning it lowers Delta_eff, so it lands above m+(c_IT)
    a2 = ts.amplitudes(K, 1.0)
    thr = float(ts.thresholds(jnp.array([0]), a2, 0.1)[0])
    m = float(ts.solve(thr * (1 + 1e-7), a2, 0.1).m[0])
    assert m > ts.M_JUMP + 0.05


def test_fixed_point_is_stationary_point_of_potential(x64):
    a2 = ts.amplitudes(K, 1.0)
    for alpha in (10.0, 300.0, 3e5):
        sol = ts.solve(alpha, a2, 0.5)
        grad = np.asarray(jax.grad(ts.potential)(sol.m, alpha, a2, 0.5))
        # dPhi/dm_i = (alpha a2_i g'(m_i)/D - s_i)/2 with s_i = m_i/(1 - m_i): zero relative to s_i/2
        s = np.asarray(sol.m) / (1 - np.asarray(sol.m))
        learned = np.asarray(sol.m) > 0.5
        assert learned.any()
        assert np.max(np.abs(grad[learned]) / (0.5 * s[learned])) < 1e-8
        np.testing.assert_allclose(
            float(ts.potential(sol.m, alpha, a2, 0.5)),
            float(ts.potential_notes_form(sol.m, alpha, a2, 0.5)),
            rtol=1e-10,
        )
        # and it beats the all-uninformed fixed point (m = 0)
        assert float(ts.potential(sol.m, alpha, a2, 0.5)) >= float(ts.potential(0 * sol.m, alpha, a2, 0.5)) - 1e-9


def test_refinement_law_and_float32_precision():
    a2 = ts.amplitudes(K, 1.0)
    alphas = np.geomspace(1e7, 1e11, 9)
    sol = ts.solve_grid(alphas, a2, 1.0)  # float32
    assert np.all(np.asarray(sol.k_c) == K)
    slope = np.polyfit(np.log(alphas), np.log(np.asarray(sol.eps_bo)), 1)[0]
    assert abs(slope + 1) < 1e-3
    np.testing.assert_allclose(np.asarray(sol.eps_bo) * alphas / np.asarray(sol.delta_eff), K, rtol=2e-3)


def test_general_kernel_continuous_transition(x64):
    # g = m^2 (activation He_2/sqrt 2): continuous (BBP-like) transition m = 1 - 1/(2c) for c > 1/2
    kern = ts.hermite_kernel([0.0, 1.0])
    a2 = jnp.ones(1)
    for alpha in (0.5, 2.0, 5.0, 50.0):
        sol = ts.solve(alpha, a2, 1.0, kernel=kern)
        c = alpha / float(sol.delta_eff)
        np.testing.assert_allclose(float(sol.m[0]), max(0.0, 1 - 1 / (2 * c)), atol=1e-6)


def test_gibbs_is_twice_bayes_monte_carlo():
    # the Gaussian-prior scalar channel y = sqrt(s) w + z behind m = s/(1+s): Bayes MSE 1 - m, Gibbs MSE 2(1 - m)
    rng = np.random.default_rng(0)
    n, s = 400_000, 2.0
    w, z = rng.standard_normal(n), rng.standard_normal(n)
    y = np.sqrt(s) * w + z
    mean, var = np.sqrt(s) * y / (1 + s), 1 / (1 + s)
    sample = mean + np.sqrt(var) * rng.standard_normal(n)
    m = s / (1 + s)
    np.testing.assert_allclose(np.mean(w * mean), m, rtol=0.01)  # overlap with the teacher = m
    bayes, gibbs = np.mean((w - mean) ** 2), np.mean((w - sample) ** 2)
    np.testing.assert_allclose(bayes, 1 - m, rtol=0.01)
    np.testing.assert_allclose(gibbs / bayes, 2.0, rtol=0.02)
    np.testing.assert_allclose(
        float(ts.gibbs_error(jnp.array([m ** (1 / 3)]), jnp.ones(1))),
        2 * float(ts.bayes_error(jnp.array([m ** (1 / 3)]), jnp.ones(1))),
        rtol=1e-6,
    )


# ---------------------------------------------------------------------------------------------------------
# jit / vmap, convergence errors, input checks
# ---------------------------------------------------------------------------------------------------------


def test_vmapped_grid_equals_single_solves_and_no_recompile(x64):
    a2 = ts.amplitudes(K, 1.0)
    alphas = np.geomspace(1.0, 1e4, len(GRID))
    grid = ts.solve_grid(alphas, a2, 1.0)
    single = np.array([float(ts.solve(a, a2, 1.0).eps_bo) for a in alphas])
    np.testing.assert_allclose(np.asarray(grid.eps_bo), single, rtol=1e-9)
    before = ts.solve_fixed_point_grid._cache_size()
    ts.solve_grid(alphas * 2, a2, 0.7)
    assert ts.solve_fixed_point_grid._cache_size() == before


def test_not_converged_raises(x64):
    # cubic kernel: one monotone step leaves more learned counts between the extremes than N_CANDIDATES
    # (small noise, many features near threshold); the bisection itself lands on an exact float fixed point
    # (residual 0), so it is the "complete" flag that must refuse to guess
    with pytest.raises(ts.NotConvergedError, match="did not converge"):
        ts.solve(4.5, ts.amplitudes(K, 1.0), 0.01, max_iter=1)
    kern = ts.hermite_kernel([0.0, 1.0])
    with pytest.raises(ts.NotConvergedError, match="did not converge"):
        ts.solve(2.0, jnp.ones(1), 1.0, kernel=kern, max_iter=2)
    sol = ts.solve(4.5, ts.amplitudes(K, 1.0), 0.01, max_iter=1, check=False)
    assert not bool(sol.converged) and not bool(sol.complete)
    assert bool(ts.solve(4.5, ts.amplitudes(K, 1.0), 0.01).converged)  # with the default extremes it does


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: ts.amplitudes(10, 0.5), "beta"),
        (lambda: ts.amplitudes(0, 1.0), "k"),
        (lambda: ts.solve(-1.0, ts.amplitudes(5, 1.0), 1.0), "alpha"),
        (lambda: ts.solve(1.0, ts.amplitudes(5, 1.0), 0.0), "delta"),
        (lambda: ts.solve(1.0, ts.amplitudes(5, 1.0)[::-1], 1.0), "a2"),
        (lambda: ts.solve(1.0, ts.amplitudes(5, 1.0), 1.0, max_iter=0), "max_iter"),
        (lambda: ts.solve_grid(np.ones((2, 2)), ts.amplitudes(5, 1.0), 1.0), "alphas"),
        (lambda: ts.hermite_kernel([0.0, 0.0]), "mu"),
        (lambda: ts.thresholds([7], ts.amplitudes(5, 1.0), 1.0), "idx"),
    ],
)
def test_bad_parameters_raise_value_error_naming_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_solve_grid_on_learnable_heads_is_the_full_solve():
    # each alpha solved on its learnable head of features (bucketed shapes) = the full static-shape solve
    a2 = ts.amplitudes(32, 1.0)  # heads of 16 and 32 features (two solves in the compiled program: cheap)
    alphas = np.geomspace(0.5, 3e5, 8)
    assert len(np.unique(ts.learnable_heads(alphas, a2, 1.0))) == 2
    fast, full = ts.solve_grid(alphas, a2, 1.0), ts.solve_grid(alphas, a2, 1.0, heads=False)
    np.testing.assert_array_equal(np.asarray(fast.k_c), np.asarray(full.k_c))
    np.testing.assert_allclose(np.asarray(fast.eps_bo), np.asarray(full.eps_bo), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(fast.m), np.asarray(full.m), atol=1e-6)
    # unlearned overlaps are exactly 0 (not a tiny positive number), on both paths
    for sol in (fast, full):
        m = np.asarray(sol.m)
        assert np.all((m == 0.0) | (m > 0.5)) and np.all(np.asarray(sol.s)[m == 0.0] == 0.0)


def test_count_down_is_the_exact_count_and_k_c_counts_overlaps_above_half():
    # the solver's binary-search counts equal the plain comparisons on non-increasing vectors (ties, zeros)
    v = np.array([5.0, 3.0, 3.0, 2.0, 0.5, 0.5, 0.0, 0.0], np.float32)
    for level in (6.0, 5.0, 3.0, 2.5, 0.5, 0.25, 0.0, -1.0):
        assert int(ts.count_down(v, level)) == int(np.sum(level <= v))
        assert int(ts.count_down(v, level, strict=True)) == int(np.sum(level < v))
    sol = ts.solve_grid(GRID, ts.amplitudes(K, 1.0), 0.3)
    np.testing.assert_array_equal(np.asarray(sol.k_c), np.sum(np.asarray(sol.m) > 0.5, axis=1))
    # the potential's sums are computed only where two or more points are valid; _prefix_sums is its parts
    w, _, tail = ts.fast_terms(3.0, ts.amplitudes(K, 1.0), 0.3)
    e, t = ts.prefix_sums(0.2, 5, w, 3.0, 0.3, tail)
    assert float(e) == float(ts.prefix_err(0.2, 5, w, 3.0, 0.3, tail)) and float(t) == float(
        ts.prefix_phi(0.2, 5, w, 0.3)
    )


def test_cached_cubic_kernel_first_built_inside_jit_is_concrete():
    """The default kernel is cached per dtype: built first inside a trace, the cache must still hold an array
    (a cached tracer leaked into every later call: UnexpectedTracerError in the suite)."""
    from jaxwb.theory.teacher_student import kernel as tk

    tk._cubic_kernel.cache_clear()
    jax.jit(lambda x: x * tk.cubic_kernel().c2[3])(1.0)
    assert not isinstance(tk.cubic_kernel().c2, jax.core.Tracer)
    np.testing.assert_array_equal(np.asarray(tk.cubic_kernel().c2), [0.0, 0.0, 0.0, 1.0])
