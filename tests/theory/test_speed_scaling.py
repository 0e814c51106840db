"""Tests of theory/speed_scaling.py: YDS against a pure-Python oracle and a convex program, feasibility and
work conservation of every algorithm, competitive bounds, AVR's lower-bound family, robustify, bad inputs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sims.bench import _speed_scaling_reference as ref
from theory import speed_scaling as ss

N_JOBS, HORIZON, SUB = 8, 20, 2
DT, N_SLOTS = 1.0 / SUB, HORIZON * SUB
seeds = st.integers(0, 2**31 - 1)


def _instance(seed, n=N_JOBS, horizon=HORIZON):
    return ss.random_instance(jax.random.key(seed), n, horizon, 1, 8, 10.0)


def _lists(*arrays):
    return [np.asarray(a, dtype=float).tolist() for a in arrays]


# ---------------------------------------------------------------------------------------------------------
# YDS
# ---------------------------------------------------------------------------------------------------------


@given(seeds, st.sampled_from([2.0, 3.0]))
def test_yds_matches_python_oracle(seed, alpha):
    r, d, w = _instance(seed)
    res = ss.yds(r, d, w)
    e_ref, rounds = ref.yds_python(*_lists(r, d, w))
    np.testing.assert_allclose(float(ss.energy(res.profile, alpha)), e_ref(alpha), rtol=2e-5)
    n_rounds = int(res.n_rounds)
    crit = np.asarray(res.critical)[:n_rounds]
    np.testing.assert_allclose(np.sort(crit)[::-1], np.sort([g for g, _, _ in rounds])[::-1], rtol=2e-5)
    # critical speeds are non-increasing in extraction order
    assert np.all(np.diff(crit) <= 1e-5 * crit[0])
    # every job runs at the speed of its round (oracle: job -> round density)
    job_speed_ref = np.zeros(N_JOBS)
    for g, _, jobs in rounds:
        job_speed_ref[jobs] = g
    np.testing.assert_allclose(np.asarray(res.job_speed), job_speed_ref, rtol=2e-5)


@given(seeds)
def test_yds_profile_is_feasible_and_integrates_to_the_work(seed):
    r, d, w = _instance(seed)
    prof = ss.yds(r, d, w).profile
    np.testing.assert_allclose(float(ss.total_work(prof)), float(jnp.sum(w)), rtol=1e-5)
    sched = ss.edf_schedule(r, d, w, ss.profile_on_grid(prof, N_SLOTS, DT), dt=DT)
    assert bool(sched.feasible)
    np.testing.assert_allclose(float(ss.total_work(sched.profile)), float(jnp.sum(w)), rtol=1e-5)


def test_yds_against_a_time_discretised_convex_program():
    """min sum_k (sum_j x_jk)^alpha dt  s.t. sum_k x_jk dt = w_j, x_jk = 0 outside the window, x >= 0
    (SLSQP)."""
    scipy_opt = pytest.importorskip("scipy.optimize")
    alpha = 3.0
    for seed in (0, 1):
        r, d, w = _instance(seed)
        r, d, w = (np.asarray(a, float) for a in (r, d, w))
        T, n = HORIZON, N_JOBS
        mask = np.array([[r[j] <= k < d[j] for k in range(T)] for j in range(n)], float)
        x0 = (mask * (w / mask.sum(1))[:, None]).ravel()

        def f(x, mask=mask, T=T, n=n):
            return np.sum((x.reshape(n, T) * mask).sum(0) ** alpha)

        def c(x, j, mask=mask, w=w, T=T, n=n):
            return (x.reshape(n, T)[j] * mask[j]).sum() - w[j]

        def grad(x, mask=mask, T=T, n=n):
            s = (x.reshape(n, T) * mask).sum(0)
            return (alpha * s ** (alpha - 1) * mask).ravel()

        def c_jac(x, j, mask=mask):
            g = np.zeros_like(mask)
            g[j] = mask[j]
            return g.ravel()

        cons = [{"type": "eq", "fun": c, "jac": c_jac, "args": (j,)} for j in range(n)]
        sol = scipy_opt.minimize(f, x0, jac=grad, method="SLSQP", bounds=[(0, None)] * x0.size,
                                 constraints=cons, options={"ftol": 1e-12, "maxiter": 500})
        e_yds = float(ss.energy(ss.yds(r, d, w).profile, alpha))
        assert e_yds <= sol.fun * (1 + 1e-6)  # YDS is optimal
        np.testing.assert_allclose(e_yds, sol.fun, rtol=1e-3)  # and the grid program reaches it


# ---------------------------------------------------------------------------------------------------------
# Online algorithms: feasibility, work, E >= OPT, competitive bounds
# ---------------------------------------------------------------------------------------------------------


def _all_schedules(r, d, w, alpha, key):
    s_opt = ss.profile_on_grid(ss.yds(r, d, w).profile, N_SLOTS, DT)
    s_hat = ss.predict_speed(key, s_opt, "noisy", 0.5)
    w_hat = ss.predict_work(key, w, "accurate", 0.5)
    return {
        "avr": ss.avr(r, d, w, n_slots=N_SLOTS, dt=DT),
        "oa": ss.oa(r, d, w, n_slots=N_SLOTS, dt=DT),
        "qoa": ss.qoa(r, d, w, alpha=alpha, n_slots=N_SLOTS, dt=DT),
        "bkp": ss.bkp(r, d, w, n_slots=N_SLOTS, dt=DT),
        "las": ss.las(r, d, w, w_hat, eps=0.5, alpha=alpha, n_slots=N_SLOTS, dt=DT),
        **{f"sp_{m}": ss.speed_prediction_schedule(r, d, w, s_hat, eps=0.5, alpha=alpha, mode=m, dt=DT)
           for m in ss.SP_MODES},
    }


@given(seeds, st.sampled_from([2.0, 3.0]))
def test_every_schedule_is_feasible_conserves_work_and_costs_at_least_opt(seed, alpha):
    r, d, w = _instance(seed)
    opt = float(ss.energy(ss.yds(r, d, w).profile, alpha))
    total = float(jnp.sum(w))
    for name, sched in _all_schedules(r, d, w, alpha, jax.random.key(seed + 1)).items():
        assert bool(sched.feasible), name
        np.testing.assert_allclose(float(ss.total_work(sched.profile)), total, rtol=1e-5, err_msg=name)
        e = float(ss.energy(sched.profile, alpha))
        assert e >= opt * (1 - 1e-5), name
        if name != "bkp":  # the guard is a safety net only BKP's slot discretisation may need
            assert float(sched.guard_work) <= 1e-5 * total, name
        if name == "avr":
            assert e <= ss.avr_bound(alpha) * opt
        if name == "oa":
            assert e <= ss.oa_bound(alpha) * opt
        if name == "bkp":
            assert e <= ss.bkp_bound(alpha) * opt


@given(seeds)
def test_avr_and_oa_match_the_pure_python_reference(seed):
    r, d, w = _instance(seed)
    lists = _lists(r, d, w)
    np.testing.assert_allclose(np.asarray(ss.avr(r, d, w, n_slots=N_SLOTS, dt=DT).profile.speed),
                               ref.avr_python(*lists, N_SLOTS, DT), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(ss.oa(r, d, w, n_slots=N_SLOTS, dt=DT).profile.speed),
                               ref.oa_python(*lists, N_SLOTS, DT), rtol=1e-4, atol=1e-4)
    # the exact AVR profile and the grid AVR have the same energy (times are on the grid)
    np.testing.assert_allclose(float(ss.energy(ss.avr_profile(r, d, w), 3.0)),
                               float(ss.energy(ss.avr(r, d, w, n_slots=N_SLOTS, dt=DT).profile, 3.0)),
                               rtol=1e-4)


def test_edf_reports_an_infeasible_profile():
    r, d, w = _instance(7)
    opt = ss.profile_on_grid(ss.yds(r, d, w).profile, N_SLOTS, DT)
    sched = ss.edf_schedule(r, d, w, 0.5 * opt, dt=DT)  # half the optimal speed: cannot finish everything
    assert not bool(sched.feasible)
    assert float(jnp.sum(sched.unfinished)) >= 0.5 * float(jnp.sum(w)) * (1 - 1e-5)
    guarded = ss.edf_schedule(r, d, w, 0.5 * opt, dt=DT, guard=True)
    assert bool(guarded.feasible) and float(guarded.guard_work) > 0


# ---------------------------------------------------------------------------------------------------------
# AVR lower-bound family
# ---------------------------------------------------------------------------------------------------------


def test_avr_lower_bound_continuum_tends_to_four_at_alpha_two():
    kappas = [0.4, 0.2, 0.1, 0.01, 0.001]
    vals = [ss.avr_lower_bound_ratio(2.0, k) for k in kappas]
    assert np.all(np.diff(vals) > 0) and vals[-1] < 4.0
    assert vals[-1] == pytest.approx(4.0, rel=2e-3)
    # closed form at alpha = 2: (1/g^2) [1 - (1 - 2g)(1 + g)/(1 - g)], g = (1 - kappa)/2
    g = (1 - 0.2) / 2
    assert vals[1] == pytest.approx((1 - (1 - 2 * g) * (1 + g) / (1 - g)) / g**2, rel=1e-4)


def test_avr_on_the_lower_bound_family_converges_to_the_continuum(x64):
    """Measured AVR / YDS approaches the continuum ratio at first order in the log-spacing (error halves)."""
    kappa = 0.4
    target = ss.avr_lower_bound_ratio(2.0, kappa)
    errs = []
    for n in (40, 80):
        r, d, w = ss.avr_lower_bound_instance(n, 2.0, kappa)
        ratio = float(ss.energy(ss.avr_profile(r, d, w), 2.0) / ss.energy(ss.yds(r, d, w).profile, 2.0))
        assert 1.0 < ratio < target
        errs.append(target - ratio)
    assert 1.6 < errs[0] / errs[1] < 2.5


# ---------------------------------------------------------------------------------------------------------
# Robustify, predictions, LAS/SP guarantees
# ---------------------------------------------------------------------------------------------------------


@given(seeds, st.sampled_from([1.5, 2.0, 3.0]))
def test_robustify_never_increases_energy_and_keeps_the_work(seed, alpha):
    k1, k2 = jax.random.split(jax.random.key(seed))
    alloc = jax.random.exponential(k1, (30, 5)) * (jax.random.uniform(k2, (30, 5)) < 0.4)
    alloc = alloc.at[-6:].set(0.0)  # room after the last allocation
    width = jnp.array([0, 1, 2, 3, 6])
    out = ss.robustify(alloc, width)
    e_in = float(jnp.sum(jnp.sum(alloc, 1) ** alpha))
    e_out = float(jnp.sum(jnp.sum(out, 1) ** alpha))
    assert e_out <= e_in * (1 + 1e-6)
    np.testing.assert_allclose(np.asarray(out.sum(0)), np.asarray(alloc.sum(0)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(out[:, :2]), np.asarray(alloc[:, :2]))  # width 0 and 1: unchanged


def test_las_and_sp_are_consistent_and_robust_on_the_las_model():
    alpha, eps, n, D = 3.0, 0.5, N_JOBS, HORIZON - N_JOBS  # same shapes as the other tests: no new compile
    dt, n_slots = DT, N_SLOTS
    r, d, w = ss.las_instance(jax.random.key(0), n, D)
    res = ss.yds(r, d, w)
    opt = float(ss.energy(res.profile, alpha))
    s_opt = ss.profile_on_grid(res.profile, n_slots, dt)
    las = ss.las(r, d, w, w, eps=eps, alpha=alpha, n_slots=n_slots, dt=dt)
    assert float(ss.energy(las.profile, alpha)) / opt <= 1 + eps
    _, delta_eff = ss.shrink_slots(r, d, eps, alpha, dt)
    bound = float(ss.sp_robustness_bound(alpha, jnp.min(delta_eff)))
    for mode in ss.SP_MODES:
        exact = ss.speed_prediction_schedule(r, d, w, s_opt, eps=eps, alpha=alpha, mode=mode, dt=dt)
        assert float(ss.energy(exact.profile, alpha)) / opt <= 1 + eps
        for kind, kw in (("zero", {}), ("scaled", {"scale": 10.0}), ("reversed", {}),
                         ("spikes", {"period": 2 * D})):
            s_hat = ss.predict_speed(jax.random.key(1), s_opt, kind, **kw)
            sched = ss.speed_prediction_schedule(r, d, w, s_hat, eps=eps, alpha=alpha, mode=mode, dt=dt)
            assert bool(sched.feasible)
            assert float(ss.energy(sched.profile, alpha)) / opt <= bound


def test_prediction_generators():
    key = jax.random.key(0)
    s = jnp.arange(1.0, 41.0)
    assert float(ss.prediction_error(ss.predict_speed(key, s, "accurate"), s, 3.0)) == 0.0
    exact = ss.predict_speed(key, s, "noisy", 0.0)
    assert float(ss.prediction_error(exact, s, 3.0)) == pytest.approx(0.0, abs=1e-6)
    assert float(ss.prediction_error(ss.predict_speed(key, s, "noisy", 1.0), s, 3.0)) > 0.3
    np.testing.assert_allclose(float(ss.predict_speed(key, s, "spikes", period=10).sum()), float(s.sum()))
    np.testing.assert_allclose(float(ss.predict_speed(key, s, "uniform").sum()), float(s.sum()), rtol=1e-6)
    w = jnp.array([20.0, 50.0, 80.0])
    np.testing.assert_allclose(np.asarray(ss.predict_work(key, w, "misleading")), [80.0, 50.0, 20.0])
    rnd = ss.predict_work(key, w, "random")
    assert bool(jnp.all((rnd >= 20) & (rnd <= 80)))


def test_eps_to_delta_solves_its_equation():
    for eps, alpha in ((0.1, 3.0), (2.0, 2.0)):
        dlt = ss.eps_to_delta(eps, alpha)
        assert ((1 + dlt) / (1 - dlt)) ** alpha == pytest.approx(1 + eps)


# ---------------------------------------------------------------------------------------------------------
# Bad inputs
# ---------------------------------------------------------------------------------------------------------


def test_bad_instances_raise_value_error():
    r, d, w = jnp.array([0.0, 1.0]), jnp.array([2.0, 3.0]), jnp.array([1.0, 1.0])
    with pytest.raises(ValueError, match="deadline"):
        ss.yds(r, jnp.array([2.0, 1.0]), w)
    with pytest.raises(ValueError, match="deadline"):
        ss.avr(r, jnp.array([0.0, 3.0]), w, n_slots=4)
    with pytest.raises(ValueError, match="work"):
        ss.oa(r, d, jnp.array([1.0, -1.0]), n_slots=4)
    with pytest.raises(ValueError, match="alpha"):
        ss.energy(ss.Profile(jnp.array([0.0, 1.0]), jnp.array([1.0])), 1.0)
    with pytest.raises(ValueError, match="alpha"):
        ss.qoa(r, d, w, alpha=0.5, n_slots=4)
    with pytest.raises(ValueError, match="alpha"):
        ss.las(r, d, w, w, eps=0.1, alpha=1.0, n_slots=4)
    with pytest.raises(ValueError, match="eps"):
        ss.speed_prediction_schedule(r, d, w, jnp.ones(4), eps=-0.1, alpha=3.0)
    with pytest.raises(ValueError, match="mode"):
        ss.speed_prediction_schedule(r, d, w, jnp.ones(4), eps=0.1, alpha=3.0, mode="psychic")
    with pytest.raises(ValueError, match="n_slots"):
        ss.bkp(r, d, w, n_slots=0)
    with pytest.raises(ValueError, match="shape"):
        ss.yds(r, d, jnp.ones(3))
