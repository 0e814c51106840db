"""River-valley momentum: closed forms vs simulation, vs an independent NumPy eigen-solver, and input checks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxwb.theory import river_valley as rv

lams = st.floats(0.1, 100.0)
betas = st.floats(0.0, 0.95)
# ratio = lr / threshold, kept away from the boundary (within 10% the test would need very long runs)
ratios = st.one_of(st.floats(0.05, 0.9), st.floats(1.1, 2.0))

STEPS = 3000


def _simulate_valley(lam, lr, beta, method):
    """|y_T| / |y_0| after STEPS steps of ``method`` on lam/2 y^2 (a valley with a frozen river)."""
    valley = rv.high_dim_valley(0.0, lam)
    traj, diverged = rv.optimize(valley, jnp.array([0.0, 1.0]), lr=lr, beta=beta, steps=STEPS, method=method)
    return float(jnp.abs(traj[-1, 1])), bool(diverged)


@given(lam=lams, beta=betas, ratio=ratios)
def test_heavy_ball_converges_iff_lr_lam_below_2_1_plus_beta(lam, beta, ratio):
    lr = ratio * 2 * (1 + beta) / lam
    final, diverged = _simulate_valley(lam, lr, beta, "hb")
    if ratio < 1:
        assert not diverged and final < 1e-3
    else:
        assert diverged


@given(lam=lams, beta=st.floats(0.05, 0.95), ratio=ratios)
def test_nesterov_threshold(lam, beta, ratio):
    lr = ratio * float(rv.nesterov_threshold(lam, beta))
    final, diverged = _simulate_valley(lam, lr, beta, "nesterov")
    if ratio < 1:
        assert not diverged and final < 1e-3
    else:
        assert diverged


@given(h=st.floats(0.01, 5.0), beta=st.floats(0.0, 0.99), method=st.sampled_from(rv.METHODS))
def test_spectral_radius_matches_numpy_companion_eigenvalues(h, beta, method, x64):
    c1, c0 = rv.char_coeffs(h, 1.0, beta, method)
    companion = np.array([[float(c1), -float(c0)], [1.0, 0.0]])
    expected = np.max(np.abs(np.linalg.eigvals(companion)))
    np.testing.assert_allclose(float(rv.spectral_radius(h, 1.0, beta, method)), expected, rtol=1e-9, atol=1e-12)


@given(beta=st.floats(0.01, 0.99), u=st.floats(0.0, 1.0))
def test_spectral_radius_is_sqrt_beta_in_complex_regime(beta, u, x64):
    lo, hi = (1 - np.sqrt(beta)) ** 2, (1 + np.sqrt(beta)) ** 2
    h = lo + u * (hi - lo)
    np.testing.assert_allclose(float(rv.spectral_radius(h, 1.0, beta)), np.sqrt(beta), rtol=1e-6)


@given(lr=st.floats(1e-3, 0.1), beta=st.floats(0.0, 0.98), g=st.floats(0.1, 10.0))
def test_exact_linear_river_transient(lr, beta, g, x64):
    steps = 200
    traj, _ = rv.optimize(rv.linear_river(g, 10.0), jnp.zeros(2), lr=lr, beta=beta, steps=steps)
    t = jnp.arange(steps + 1)
    np.testing.assert_allclose(
        np.asarray(traj[:, 0]), np.asarray(rv.linear_river_transient(t, 0.0, lr, g, beta)), rtol=1e-9, atol=1e-9
    )


@given(h=st.floats(0.01, 3.0), beta=st.floats(0.0, 0.95), method=st.sampled_from(rv.METHODS))
def test_quadratic_trajectory_matches_optimizer(h, beta, method, x64):
    lam = 4.0
    traj, _ = rv.optimize(
        rv.high_dim_valley(0.0, lam),
        jnp.array([0.0, 1.0]),
        lr=h / lam,
        beta=beta,
        steps=60,
        method=method,
        blowup=1e200,
    )  # unstable cases too: no freezing within 60 steps
    exact = rv.quadratic_trajectory(1.0, h / lam, lam, beta, 60, method)
    np.testing.assert_allclose(np.asarray(traj[:, 1]), np.asarray(exact), rtol=1e-9, atol=1e-12)


@given(h=st.floats(0.01, 3.0), beta=st.floats(0.0, 0.95), method=st.sampled_from(rv.METHODS))
def test_closed_form_matches_recursion(h, beta, method, x64):
    """The eigen-solution A r1^t + B r2^t (no recursion) against the iterated companion recursion."""
    lam, steps = 4.0, 60
    rec = np.asarray(rv.quadratic_trajectory(1.0, h / lam, lam, beta, steps, method))
    cf = np.asarray(rv.quadratic_closed_form(jnp.arange(steps + 1), 1.0, h / lam, lam, beta, method))
    np.testing.assert_allclose(cf, rec, rtol=1e-7, atol=1e-9 * np.max(np.abs(rec)))


@given(h=st.floats(0.01, 3.0), beta=st.floats(0.0, 0.95), method=st.sampled_from(rv.METHODS))
def test_closed_form_matches_numpy_matrix_power(h, beta, method, x64):
    """Independent reference: powers of the NumPy companion matrix applied to (x_0, x_{-1}) = (1, 1)."""
    c1, c0 = (float(c) for c in rv.char_coeffs(h, 1.0, beta, method))
    M = np.array([[c1, -c0], [1.0, 0.0]])
    t = 37
    expected = (np.linalg.matrix_power(M, t) @ np.array([1.0, 1.0]))[0]
    got = float(rv.quadratic_closed_form(t, 1.0, h, 1.0, beta, method))
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("kappa", [4.0, 100.0, 1e4])
def test_closed_form_double_root_at_polyak(kappa, x64):
    """At Polyak's parameters the mu and L modes are double roots: x_t = r^t (1 + (1 -+ r) t) exactly."""
    mu, L = 1.0, kappa
    lr, beta, r = (float(a) for a in rv.hb_optimal_params(mu, L))
    t = np.arange(200.0)
    np.testing.assert_allclose(
        np.asarray(rv.quadratic_closed_form(t, 1.0, lr, mu, beta)), r**t * (1 + (1 - r) * t), rtol=1e-6, atol=1e-300
    )
    np.testing.assert_allclose(
        np.abs(np.asarray(rv.quadratic_closed_form(t, 1.0, lr, L, beta))),
        r**t * (1 + (1 + r) * t),
        rtol=1e-6,
        atol=1e-300,
    )


@given(mu=st.floats(1e-3, 1.0), kappa=st.floats(1.5, 1e4))
def test_optimal_heavy_ball_rate(mu, kappa, x64):
    L = mu * kappa
    lr, beta, rate = rv.hb_optimal_params(mu, L)
    sk = np.sqrt(kappa)
    np.testing.assert_allclose(float(rate), (sk - 1) / (sk + 1), rtol=1e-10)
    # the rate is the spectral radius on every curvature in [mu, L] (all in the complex regime)
    curvatures = jnp.geomspace(mu, L, 64)
    radii = rv.spectral_radius(lr, curvatures, beta)
    np.testing.assert_allclose(np.asarray(radii), float(rate), rtol=1e-6)


def test_optimal_rate_is_achieved_by_simulation(x64):
    mu, L = 0.01, 100.0
    lr, beta, rate = rv.hb_optimal_params(mu, L)
    traj, _ = rv.optimize(rv.straight_valley(mu, L), jnp.array([1.0, 1.0]), lr=lr, beta=beta, steps=2000)
    n = jnp.linalg.norm(traj, axis=-1)
    measured = float((n[2000] / n[1000]) ** (1 / 1000))
    # double roots at the spectrum's ends give t * rate^t: the measured rate carries a factor 2^(1/1000)
    np.testing.assert_allclose(measured, float(rate) * 2 ** (1 / 1000), rtol=2e-4)


@given(lr=st.floats(1e-3, 0.1), beta=st.floats(0.0, 0.9))
def test_slow_river_root_first_order(lr, beta, x64):
    mu = 1e-6
    exact = float(rv.spectral_radius(lr, mu, beta))
    np.testing.assert_allclose(1 - exact, float(lr * mu / (1 - beta)), rtol=1e-3)


@given(beta=st.floats(0.0, 0.99))
def test_river_speed_gain(beta):
    lam = 50.0
    gain = float(rv.max_stable_river_speed(lam, beta) / rv.max_stable_river_speed(lam, 0.0))
    np.testing.assert_allclose(gain, (1 + beta) / (1 - beta), rtol=1e-5)
    np.testing.assert_allclose(float(rv.river_speed_gain(beta)), (1 + beta) / (1 - beta), rtol=1e-6)


def test_guidance_is_stable_and_beats_gd():
    lam, mu = 100.0, 0.01
    g = rv.hb_guidance(lam, mu)
    assert float(g.valley_radius) < 1
    assert float(g.lr) < float(rv.hb_threshold(lam, float(g.beta)))
    assert float(g.river_rate) > 5 * float(g.gd_river_rate)
    # the best river rate sits at critical damping of the river mode: lr mu = (1 - sqrt beta)^2
    np.testing.assert_allclose(float(g.lr) * mu, (1 - np.sqrt(float(g.beta))) ** 2, rtol=0.1)


def test_divergence_is_flagged_without_nan():
    traj, diverged = rv.optimize(rv.straight_valley(0.01, 100.0), jnp.array([1.0, 1.0]), lr=0.05, beta=0.0, steps=500)
    assert bool(diverged)
    assert bool(jnp.all(jnp.isfinite(traj)))


def test_vmap_over_lr_and_beta_matches_loop():
    valley = rv.straight_valley(0.01, 100.0)
    lrs, bs = jnp.array([0.01, 0.02, 0.03]), jnp.array([0.0, 0.5, 0.9])
    batched, _ = jax.vmap(lambda a, b: rv.optimize(valley, jnp.ones(2), lr=a, beta=b, steps=50))(lrs, bs)
    for i in range(3):
        single, _ = rv.optimize(valley, jnp.ones(2), lr=float(lrs[i]), beta=float(bs[i]), steps=50)
        np.testing.assert_allclose(np.asarray(batched[i]), np.asarray(single), rtol=1e-6)


def test_no_recompilation_on_second_call():
    valley = rv.straight_valley(0.01, 100.0)
    rv.optimize(valley, jnp.ones(2), lr=0.01, beta=0.5, steps=77)
    size = rv._optimize._cache_size()
    rv.optimize(valley, jnp.ones(2), lr=0.02, beta=0.7, steps=77)
    rv.optimize(rv.straight_valley(0.02, 50.0), jnp.ones(2), lr=0.02, beta=0.7, steps=77)
    assert rv._optimize._cache_size() == size


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: rv.hb_threshold(100.0, 1.0), "beta"),
        (lambda: rv.hb_threshold(100.0, -0.1), "beta"),
        (lambda: rv.hb_threshold(-1.0, 0.5), "lam"),
        (lambda: rv.optimize(rv.straight_valley(0.1, 1.0), jnp.ones(2), lr=-0.1, steps=5), "lr"),
        (lambda: rv.optimize(rv.straight_valley(0.1, 1.0), jnp.ones(2), lr=0.1, beta=1.2, steps=5), "beta"),
        (lambda: rv.optimize(rv.straight_valley(0.1, 1.0), jnp.ones(3), lr=0.1, steps=5), "theta0"),
        (lambda: rv.optimize(rv.straight_valley(0.1, 1.0), jnp.ones(2), lr=0.1, steps=5, method="adam"), "method"),
        (lambda: rv.optimize(rv.straight_valley(0.1, 1.0), jnp.ones(2), lr=0.1, steps=0), "steps"),
        (lambda: rv.optimize(rv.straight_valley(0.1, 1.0), jnp.ones(2), lr=float("nan"), steps=5), "lr"),
        (lambda: rv.straight_valley(0.1, 0.0), "lam"),
        (lambda: rv.hb_optimal_params(1.0, 0.5), "L"),
        (lambda: rv.hb_guidance(1.0, 2.0), "mu_river"),
    ],
)
def test_bad_input_raises_value_error_naming_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_curved_river_speed_closed_form():
    """Straight floor (a = 0): the effective lr times the slope; the geometry divides by the period mean of
    1 + a^2 k^2 cos^2(kx); a float64 gradient-flow integration along the floor agrees."""
    assert float(rv.curved_river_speed(0.01, 2.0, 0.9, 0.0, 0.3)) == pytest.approx(0.2)
    a, k = 1.0, 0.7
    x = np.linspace(0.0, 2 * np.pi / k, 200_001)
    mean_dt = np.trapezoid(1.0 + (a * k * np.cos(k * x)) ** 2, x) / x[-1]  # time per unit x on the floor
    assert float(rv.curved_river_speed(0.01, 1.0, 0.5, a, k)) == pytest.approx(0.02 / mean_dt, rel=1e-9)
    with pytest.raises(ValueError, match="beta"):
        rv.curved_river_speed(0.01, 1.0, 1.0, a, k)
    with pytest.raises(ValueError, match="g must be >= 0"):
        rv.curved_river_speed(0.01, -1.0, 0.5, a, k)
    assert float(rv.valley_loss(jnp.array([2.0, a * np.sin(k * 2.0)]), rv.curved_river(3.0, 10.0, a, k))) == (
        pytest.approx(6.0)
    )
