"""Random-feature score model, GD dynamics, consistency distillation and sampling: closed forms against independent
NumPy float64 references (Gauss-Hermite quadrature, iterated recursions, brute force), and bad calls."""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxwb.theory import distillation as dm

D, P = 2, 6  # small enough for tensor-product quadrature over the noise (d = 2)
times = st.floats(0.02, 2.0)
seeds = st.integers(0, 2**16)


def _rf(seed, d=D, p=P):
    return dm.init_features(d, p, key=jax.random.key(seed))


def _np(rf):
    return np.asarray(rf.W, np.float64), np.asarray(rf.b, np.float64)


def _gauss_hermite_2d(order=40):
    """Nodes (m, 2) and weights (m,) for E[f(g)], g ~ N(0, I_2)."""
    x, w = np.polynomial.hermite_e.hermegauss(order)
    w = w / np.sqrt(2 * np.pi)
    nodes = np.array(list(itertools.product(x, x)))
    weights = np.array([a * b for a, b in itertools.product(w, w)])
    return nodes, weights


def _phi_np(x, W, b):
    return np.sqrt(2.0) * np.sin(x @ W.T / np.sqrt(W.shape[1]) + b)


def _quadrature_moments(rf, t, x0s, x0_weights, order):
    """U = E[phi(x_t) phi(x_t)^T], V = E[phi(x_t) xi^T] with x_t = alpha x_0 + sqrt(Delta) xi: the weighted sum over
    the data points x_0 of Gauss-Hermite quadrature (of ``order``) over the noise xi ~ N(0, I_2)."""
    W, b = _np(rf)
    alpha, delta = math.exp(-t), -math.expm1(-2 * t)
    nodes, wts = _gauss_hermite_2d(order)
    U = np.zeros((P, P))
    V = np.zeros((P, D))
    for x0, w0 in zip(x0s, x0_weights, strict=True):
        phi = _phi_np(alpha * x0 + math.sqrt(delta) * nodes, W, b)
        U += w0 * (phi * wts[:, None]).T @ phi
        V += w0 * (phi * wts[:, None]).T @ nodes
    return U, V


def test_features_and_score_match_numpy(x64):
    rf = _rf(0, d=3, p=5)
    W, b = _np(rf)
    x = np.random.default_rng(0).standard_normal((4, 3))
    A = np.random.default_rng(1).standard_normal((3, 5))
    np.testing.assert_allclose(np.asarray(dm.features(rf, x)), _phi_np(x, W, b), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(dm.score(A, rf, x)), _phi_np(x, W, b) @ A.T / np.sqrt(5), rtol=1e-12)


@given(t=times, seed=seeds)
def test_train_moments_match_quadrature_over_the_noise(t, seed, x64):
    rf = _rf(seed)
    X = np.random.default_rng(seed).standard_normal((3, D))
    U, V = _quadrature_moments(rf, t, X, np.full(len(X), 1 / len(X)), order=40)
    Uc, Vc = dm.train_moments(rf, X, t)
    np.testing.assert_allclose(np.asarray(Uc), U, atol=1e-10)
    np.testing.assert_allclose(np.asarray(Vc), V, atol=1e-10)


@given(t=times, seed=seeds)
def test_population_moments_match_quadrature_over_data_and_noise(t, seed, x64):
    """x_t = alpha x_0 + sqrt(Delta) xi with x_0, xi ~ N(0, I_2): quadrature over (x_0, xi) in 4 dimensions."""
    rf = _rf(seed)
    U, V = _quadrature_moments(rf, t, *_gauss_hermite_2d(24), order=24)
    Uc, Vc = dm.population_moments(rf, t)
    np.testing.assert_allclose(np.asarray(Uc), U, atol=1e-9)
    np.testing.assert_allclose(np.asarray(Vc), V, atol=1e-9)


@given(t=times, seed=seeds)
def test_dsm_loss_matches_quadrature(t, seed, x64):
    rf = _rf(seed)
    W, b = _np(rf)
    X = np.random.default_rng(seed).standard_normal((2, D))
    A = np.random.default_rng(seed + 1).standard_normal((D, P))
    alpha, delta = math.exp(-t), -math.expm1(-2 * t)
    nodes, wts = _gauss_hermite_2d()
    ref = 0.0
    for x0 in X:
        xt = alpha * x0 + math.sqrt(delta) * nodes
        s = _phi_np(xt, W, b) @ A.T / np.sqrt(P)
        ref += np.sum(wts * np.sum((math.sqrt(delta) * s + nodes) ** 2, 1)) / D / len(X)
    U, V = dm.train_moments(rf, X, t)
    np.testing.assert_allclose(float(dm.dsm_loss(A, U, V, t)), ref, rtol=1e-10)


@given(t=times)
def test_bayes_loss_is_the_loss_of_the_true_score(t, x64):
    """For N(0, I) data the score is -x: E||-sqrt(Delta) x_t + xi||^2 / d by quadrature over (x_0, xi)."""
    alpha, delta = math.exp(-t), -math.expm1(-2 * t)
    x, w = np.polynomial.hermite_e.hermegauss(20)
    w = w / np.sqrt(2 * np.pi)
    x0, xi = np.meshgrid(x, x, indexing="ij")
    ww = np.outer(w, w)
    val = np.sum(ww * (-math.sqrt(delta) * (alpha * x0 + math.sqrt(delta) * xi) + xi) ** 2)
    np.testing.assert_allclose(float(dm.bayes_loss(t)), val, rtol=1e-12)


def _numpy_gd(U, V, t, steps, lr):
    delta = -math.expm1(-2 * t)
    p, d = V.shape
    A = np.zeros((d, p))
    for _ in range(steps):
        A = A - lr * (A @ U + np.sqrt(p / delta) * V.T)
    return A


@pytest.mark.parametrize("steps", [1, 7, 60])
def test_gd_closed_form_equals_numpy_iteration(steps, x64):
    rf = _rf(3, d=3, p=12)
    X = np.random.default_rng(3).standard_normal((5, 3))
    t, lr = 0.4, 1.0 / 12
    U, V = dm.train_moments(rf, X, t)
    ref = _numpy_gd(np.asarray(U), np.asarray(V), t, steps, lr)
    np.testing.assert_allclose(np.asarray(dm.gd_solution(U, V, t, steps=steps, lr=lr)), ref, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(np.asarray(dm.gd_iterate(U, V, t, steps=steps, lr=lr)), ref, rtol=1e-12, atol=1e-13)


def test_gd_long_time_limit_is_the_minimiser(x64):
    """k -> inf: A* = -sqrt(p/Delta) V^T U^{-1} (numpy solve), on a well-conditioned Gram (n >> p)."""
    rf = _rf(4, d=2, p=5)
    X = np.random.default_rng(4).standard_normal((400, 2))
    t = 0.7
    U, V = dm.train_moments(rf, X, t)
    delta = -math.expm1(-2 * t)
    star = -np.sqrt(5 / delta) * np.linalg.solve(np.asarray(U), np.asarray(V)).T
    A = dm.gd_solution(U, V, t, steps=jnp.inf, lr=0.2)
    np.testing.assert_allclose(np.asarray(A), star, rtol=1e-8)
    # and the gradient of the loss vanishes there
    grad = jax.grad(lambda a: dm.dsm_loss(a, U, V, t))(A)
    assert float(jnp.max(jnp.abs(grad))) < 1e-9


def test_gd_filter_limits(x64):
    lam = jnp.array([0.0, 1e-14, 0.5, 3.0])
    g = np.asarray(dm.gd_filter(lam, jnp.array([0.0, 10.0]), 0.1))
    assert np.all(g[0] == 0.0)
    np.testing.assert_allclose(g[1, :2], [1.0, 1.0], rtol=1e-9)  # k lr at lam -> 0
    np.testing.assert_allclose(g[1, 2:], (1 - (1 - 0.1 * np.array([0.5, 3.0])) ** 10) / np.array([0.5, 3.0]))


def test_relaxation_steps(x64):
    np.testing.assert_allclose(np.asarray(dm.relaxation_steps(jnp.array([2.0, 0.0]), 0.25)), [2.0, np.inf])


@given(t=st.floats(0.01, 3.0))
def test_gaussian_equivalent_constants_match_quadrature(t, x64):
    """Averages over the phase b (uniform grid, exact for trigonometric polynomials) and a unit-variance
    preactivation split as alpha u + sqrt(Delta) v (Gauss-Hermite), for sigma = sqrt(2) sin(. + b)."""
    alpha, delta = math.exp(-t), -math.expm1(-2 * t)
    x, w = np.polynomial.hermite_e.hermegauss(40)
    w = w / np.sqrt(2 * np.pi)
    bs = np.linspace(0, 2 * np.pi, 64, endpoint=False)
    sig = lambda h: np.sqrt(2) * np.sin(h)
    mu0 = a = first = total = b_noise = 0.0
    for b in bs:
        u, v = np.meshgrid(x, x, indexing="ij")
        ww = np.outer(w, w)
        h = alpha * u + math.sqrt(delta) * v + b
        mu0 += np.sum(ww * sig(h)) ** 2 / len(bs)
        a += np.sum(w * np.sqrt(2) * np.cos(x + b)) ** 2 / len(bs)  # E sigma'(z), z ~ N(0, 1)
        mean_v = np.sum(sig(h) * w[None, :], axis=1)  # E_v sigma, as a function of u
        first += np.sum(w * mean_v**2) / len(bs)
        total += np.sum(ww * sig(h) ** 2) / len(bs)
        b_noise += np.sum(ww * v * sig(h)) ** 2 / len(bs)
    ge = {k: float(val) for k, val in dm.gaussian_equivalent(t).items()}
    np.testing.assert_allclose(ge["mu0_sq"], mu0, rtol=1e-10)
    np.testing.assert_allclose(ge["a_sq"], a, rtol=1e-10)
    np.testing.assert_allclose(ge["b_sq"], b_noise, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(ge["v_sq"], first - mu0 - a * alpha**2, rtol=1e-8, atol=1e-14)
    np.testing.assert_allclose(ge["s_sq"], total - first - b_noise, rtol=1e-8, atol=1e-14)


def test_predicted_timescales_scale_with_n_and_not_n(x64):
    ns = np.array([4.0, 8.0, 16.0])
    tg, tm = (np.asarray(a) for a in dm.predicted_timescales(ns, 10_000, 8, 0.3, 1e-4))
    ge = dm.gaussian_equivalent(0.3)
    assert np.all(tg == tg[0])
    np.testing.assert_allclose(tg[0], 8 / (1e-4 * float(ge["a_sq"]) * 10_000))
    # n << p v^2/s^2: tau_mem ~ n / (lr p v^2)
    np.testing.assert_allclose(tm, ns / (1e-4 * 10_000 * float(ge["v_sq"])), rtol=2e-2)


def test_direction_classes(x64):
    lam = jnp.array([100.0, 10.0, 1.0, 0.01])
    cls = np.asarray(dm.direction_classes(lam, 0.01, 10.0, 1000.0))
    np.testing.assert_array_equal(cls, [0, 0, 1, 2])


@given(level=st.floats(0.05, 3.9))
def test_crossing_time_interpolates_in_log_steps(level):
    steps = np.logspace(0, 4, 9)
    curve = np.log10(steps)  # reaches `level` at 10^level exactly (linear in log step)
    np.testing.assert_allclose(float(dm.crossing_time(steps, curve, level)), 10**level, rtol=1e-5)
    assert np.isnan(float(dm.crossing_time(steps, curve, 5.0)))


def test_consistency_loss_is_half_the_readout_distance_and_its_gradient(x64):
    rf = _rf(5, d=3, p=7)
    rng = np.random.default_rng(5)
    A_s, A_t = rng.standard_normal((3, 7)), rng.standard_normal((3, 7))
    x = rng.standard_normal((11, 3))
    phi = np.asarray(dm.features(rf, x))
    loss = float(dm.consistency_distillation_loss(A_s, A_t, rf, x, 0.9, 0.7))
    np.testing.assert_allclose(loss, 0.5 * np.mean(np.sum(((A_s - A_t) @ phi.T) ** 2, 0)), rtol=1e-10)
    grad = jax.grad(dm.consistency_distillation_loss)(jnp.asarray(A_s), A_t, rf, x, 0.9, 0.7)
    np.testing.assert_allclose(np.asarray(grad), (A_s - A_t) @ phi.T @ phi / 11, rtol=1e-9)


@given(steps=st.integers(0, 300), seed=seeds)
def test_distill_solution_is_the_expected_gd_iterate(steps, seed, x64):
    """E[A_S(K)] under A <- A - lr (A - A_T) U, iterated in NumPy, and eq. retention along each eigen-direction."""
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((6, 6))
    U = M @ M.T / 6
    A_t = rng.standard_normal((2, 6))
    lr = 0.5 / np.linalg.eigvalsh(U).max()
    A = np.zeros_like(A_t)
    for _ in range(steps):
        A = A - lr * (A - A_t) @ U
    np.testing.assert_allclose(np.asarray(dm.distill_solution(A_t, U, steps=steps, lr=lr)), A, rtol=1e-9, atol=1e-12)
    lam, Q = np.linalg.eigh(U)
    r = np.asarray(dm.predicted_retention(jnp.asarray(lam), steps=steps, lr=lr))
    np.testing.assert_allclose(r, 1 - (1 - lr * lam) ** steps, atol=1e-12)
    for j in range(6):
        mask = np.arange(6) == j
        np.testing.assert_allclose(float(dm.retention(A, A_t, Q, mask)), r[j], rtol=1e-7, atol=1e-10)
        np.testing.assert_allclose(
            float(dm.predicted_group_retention(A_t, Q, jnp.asarray(lam), mask, steps=steps, lr=lr)), r[j], atol=1e-12
        )


def test_retention_endpoints(x64):
    rng = np.random.default_rng(6)
    A_t = rng.standard_normal((2, 5))
    Q = np.linalg.qr(rng.standard_normal((5, 5)))[0]
    mask = np.array([True, True, False, True, False])
    assert float(dm.retention(A_t, A_t, Q, mask)) == pytest.approx(1.0)
    assert float(dm.retention(np.zeros_like(A_t), A_t, Q, mask)) == 0.0
    assert np.isnan(float(dm.retention(A_t, A_t, Q, np.zeros(5, bool))))
    # a ratio: the same at any scale of the readouts, however small the teacher's weight on the class (the random
    # audit's survivor 'den > 0 -> den > 1' left every run unchanged: the runs' teachers weigh more than 1)
    half = 0.5 * A_t
    for scale in (1e-4, 1.0, 1e4):
        assert float(dm.retention(scale * half, scale * A_t, Q, mask)) == pytest.approx(0.5)


def _numpy_sampler(As, W, b, thetas, z):
    x = z.copy()
    p = W.shape[0]
    for k in range(len(thetas) - 1, 0, -1):
        s = _phi_np(x, W, b) @ As[k].T / np.sqrt(p)
        x = x + (thetas[k] - thetas[k - 1]) * np.tan(thetas[k]) * (x + s)
    s = _phi_np(x, W, b) @ As[0].T / np.sqrt(p)
    return (x + np.sin(thetas[0]) ** 2 * s) / np.cos(thetas[0])


def test_pf_ode_sample_matches_numpy_euler(x64):
    rf = _rf(7, d=3, p=9)
    W, b = _np(rf)
    rng = np.random.default_rng(7)
    thetas = np.linspace(0.1, 1.2, 6)
    As = 0.3 * rng.standard_normal((6, 3, 9))
    z = rng.standard_normal((10, 3))
    np.testing.assert_allclose(
        np.asarray(dm.pf_ode_sample(As, rf, thetas, z)), _numpy_sampler(As, W, b, thetas, z), rtol=1e-10
    )
    zero = np.asarray(dm.pf_ode_sample(np.zeros_like(As), rf, thetas, z))
    gain = np.prod(1 + np.diff(thetas) * np.tan(thetas[1:])) / np.cos(thetas[0])
    np.testing.assert_allclose(zero, gain * z, rtol=1e-12)


def test_pf_step_keeps_the_true_score_fixed(x64):
    """A readout whose score is exactly -x does not exist in the model, but the step's algebra does: with
    x + s = 0 the step is the identity (the drift of the N(0, I) probability flow vanishes)."""
    rf = _rf(8, d=2, p=4)
    x = np.array([[0.3, -1.0]])
    A = np.zeros((2, 4))
    step = np.asarray(dm.pf_step(x, A, rf, 1.0, 0.8))
    np.testing.assert_allclose(step, x * (1 + 0.2 * np.tan(1.0)))


@given(seed=seeds)
def test_nearest_two_and_copy_fraction_match_brute_force(seed, x64):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((7, 3))
    s = np.concatenate([X[:3] + 0.01 * rng.standard_normal((3, 3)), rng.standard_normal((9, 3))])
    dist = np.sort(np.linalg.norm(s[:, None] - X[None], axis=-1), axis=1)
    d1, d2 = (np.asarray(a) for a in dm.nearest_two(s, X))
    np.testing.assert_allclose(d1, dist[:, 0], rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(d2, dist[:, 1], rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(float(dm.copy_fraction(s, X)), np.mean(dist[:, 0] < dist[:, 1] / 3))
    assert float(dm.copy_fraction(s, X)) >= 3 / 12


def test_energy_distance_matches_numpy_and_is_unbiased(x64):
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((30, 2)), rng.standard_normal((40, 2)) + 0.5

    def mp(u, v, same):
        dd = np.linalg.norm(u[:, None] - v[None], axis=-1)
        return (dd.sum() - np.trace(dd)) / (len(u) * (len(u) - 1)) if same else dd.mean()

    ref = 2 * mp(a, b, False) - mp(a, a, True) - mp(b, b, True)
    np.testing.assert_allclose(float(dm.energy_distance(a, b)), ref, rtol=1e-10)
    # unbiased: over many pairs of samples of one law the mean is 0 within its standard error
    vals = [float(dm.energy_distance(rng.standard_normal((20, 2)), rng.standard_normal((20, 2)))) for _ in range(400)]
    assert abs(np.mean(vals)) < 3 * np.std(vals) / np.sqrt(len(vals))


def test_time_of_angle_and_schedule(x64):
    th = jnp.array([0.1, 0.7, 1.4])
    t = dm.time_of_angle(th)
    alpha, delta = dm.schedule(t)
    np.testing.assert_allclose(np.asarray(alpha), np.cos(th), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(delta), np.sin(th) ** 2, rtol=1e-12)


# ---------------------------------------------------------------------------------------------------------
# Bad calls: ValueError naming the parameter
# ---------------------------------------------------------------------------------------------------------

_RF = None


def _ns():
    rf = dm.init_features(2, 4, key=jax.random.key(0))
    U, V = dm.train_moments(rf, jnp.ones((3, 2)), 0.5)
    return {"dm": dm, "jnp": jnp, "np": np, "rf": rf, "U": U, "V": V, "k": jax.random.key(0), "nan": math.nan}


BAD_CALLS = [
    ("dm.init_features(0, 4, key=k)", "d must be a positive integer"),
    ("dm.init_features(2, 4.5, key=k)", "p must be a positive integer"),
    ("dm.init_features(2, 4, key=None)", "key must be a PRNG key"),
    ("dm.features(rf, jnp.ones((3, 5)))", "x must have last axis d = 2"),
    ("dm.features(rf, jnp.array([[nan, 1.0]]))", "x must be finite"),
    ("dm.features(dm.RandomFeatures(jnp.ones((4, 2)), jnp.ones(3)), jnp.ones((1, 2)))", "rf.b must have shape"),
    ("dm.features((1, 2), jnp.ones((1, 2)))", "rf must be a RandomFeatures"),
    ("dm.score(jnp.ones((2, 5)), rf, jnp.ones((1, 2)))", "A must have shape (d, p)"),
    ("dm.schedule(-1.0)", "t must be > 0"),
    ("dm.schedule(nan)", "t must be > 0"),
    ("dm.time_of_angle(2.0)", "theta must be in (0, pi/2)"),
    ("dm.bayes_loss(0.0)", "t must be > 0"),
    ("dm.train_moments(rf, jnp.ones(2), 0.5)", "X must have rank 2"),
    ("dm.train_moments(rf, jnp.ones((3, 2)), 0.0)", "t must be > 0"),
    ("dm.population_moments(rf, -0.1)", "t must be > 0"),
    ("dm.dsm_loss(jnp.ones((2, 3)), U, V, 0.5)", "A must have last axes (d, p)"),
    ("dm.dsm_loss(jnp.ones((2, 4)), U[:3], V, 0.5)", "U must be square"),
    ("dm.dsm_loss(jnp.ones((2, 4)), U, V[:3], 0.5)", "V must have shape (p, d)"),
    ("dm.gd_solution(U, V, 0.5, steps=-1.0, lr=0.1)", "steps must be >= 0"),
    ("dm.gd_solution(U, V, 0.5, steps=3, lr=0.0)", "lr must be > 0"),
    ("dm.gd_iterate(U, V, 0.5, steps=0, lr=0.1)", "steps must be a positive integer"),
    ("dm.gd_filter(jnp.array([-1.0]), 3, 0.1)", "lam must be >= 0"),
    ("dm.gd_filter(jnp.ones((2, 2)), 3, 0.1)", "lam must have rank 1"),
    ("dm.relaxation_steps(jnp.array([1.0]), -0.1)", "lr must be > 0"),
    ("dm.gaussian_equivalent(0.0)", "t must be > 0"),
    ("dm.predicted_timescales(0.0, 10, 2, 0.3, 0.1)", "n must be > 0"),
    ("dm.predicted_timescales(4.0, 0, 2, 0.3, 0.1)", "p must be a positive integer"),
    ("dm.direction_classes(jnp.ones(3), 0.1, 10.0, 5.0)", "tau_train must be >= tau_gen"),
    ("dm.direction_classes(jnp.ones(3), 0.1, -1.0, 5.0)", "tau_gen must be > 0"),
    ("dm.crossing_time(jnp.array([1.0, 2.0]), jnp.ones(3), 0.5)", "curve must have last axis len(steps)"),
    ("dm.crossing_time(jnp.array([0.0, 2.0]), jnp.ones(2), 0.5)", "steps must be > 0"),
    ("dm.predicted_retention(jnp.ones(3), steps=-1, lr=0.1)", "steps must be a non-negative integer"),
    ("dm.predicted_retention(jnp.array([-1.0]), steps=2, lr=0.1)", "lam must be >= 0"),
    ("dm.distill_solution(jnp.ones((2, 4)), jnp.ones((3, 3)), steps=2, lr=0.1)", "U must have shape (p, p)"),
    (
        "dm.retention(jnp.ones((2, 4)), jnp.ones((2, 3)), jnp.eye(4), jnp.ones(4, bool))",
        "A_student must have the shape",
    ),
    (
        "dm.consistency_distillation_loss(jnp.ones((2, 4)), jnp.ones((2, 4)), rf, jnp.ones((3, 2)), 0.5, 0.7)",
        "theta must be in (theta_next, pi/2)",
    ),
    ("dm.pf_step(jnp.ones((1, 2)), jnp.ones((2, 4)), rf, 0.5, -0.1)", "theta_next must be > 0"),
    ("dm.pf_ode_sample(jnp.ones((3, 2, 4)), rf, jnp.array([0.1, 0.5]), jnp.ones((5, 2)))", "As must have one readout"),
    ("dm.pf_ode_sample(jnp.ones((2, 2, 4)), rf, jnp.array([0.5, 0.1]), jnp.ones((5, 2)))", "thetas must be strictly"),
    (
        "dm.pf_ode_sample(jnp.ones((2, 2, 4)), rf, jnp.array([0.1, 1.6]), jnp.ones((5, 2)))",
        "thetas must be in (0, pi/2)",
    ),
    ("dm.nearest_two(jnp.ones((5, 2)), jnp.ones((1, 2)))", "X must hold at least 2 training points"),
    ("dm.nearest_two(jnp.ones((5, 3)), jnp.ones((4, 2)))", "samples must have last axis d = 2"),
    ("dm.copy_fraction(jnp.ones((5, 2)), jnp.ones((4, 2)), threshold=1.5)", "threshold must be in (0, 1]"),
    ("dm.energy_distance(jnp.ones((1, 2)), jnp.ones((4, 2)))", "a and b must be (m, d) and (r, d)"),
]


@pytest.mark.parametrize("call, message", BAD_CALLS, ids=[c for c, _ in BAD_CALLS])
def test_bad_call_names_the_parameter(call, message):
    with pytest.raises(ValueError) as err:
        eval(call, _ns())
    assert message in str(err.value), str(err.value)


def test_checked_raises_the_same_error_under_jit():
    from jaxwb import theory

    f = jax.jit(lambda t: dm.schedule(t)[1])
    assert np.isfinite(float(f(-1.0)))  # plain jit: value checks are skipped
    with pytest.raises(ValueError, match="t must be > 0"):
        theory.checked(f)(-1.0)
