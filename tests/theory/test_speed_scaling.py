"""Tests of theory/speed_scaling/: YDS against a pure-Python oracle and a convex program, feasibility and
work conservation of every algorithm, competitive bounds, AVR's lower-bound family, robustify, bad inputs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxwb.sims.speed_scaling import reference as ref
from jaxwb.theory import speed_scaling as ss

N_JOBS, HORIZON, SUB = 8, 20, 2
DT, N_SLOTS = 1.0 / SUB, HORIZON * SUB
seeds = st.integers(0, 2**31 - 1)


def _instance(seed, n=N_JOBS, horizon=HORIZON):
    return ss.random_instance(n, horizon, 1, 8, 10.0, key=jax.random.key(seed))


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
        sol = scipy_opt.minimize(
            f,
            x0,
            jac=grad,
            method="SLSQP",
            bounds=[(0, None)] * x0.size,
            constraints=cons,
            options={"ftol": 1e-12, "maxiter": 500},
        )
        e_yds = float(ss.energy(ss.yds(r, d, w).profile, alpha))
        assert e_yds <= sol.fun * (1 + 1e-6)  # YDS is optimal
        np.testing.assert_allclose(e_yds, sol.fun, rtol=1e-3)  # and the grid program reaches it


# ---------------------------------------------------------------------------------------------------------
# Online algorithms: feasibility, work, E >= OPT, competitive bounds
# ---------------------------------------------------------------------------------------------------------


def _all_schedules(r, d, w, alpha, key):
    s_opt = ss.profile_on_grid(ss.yds(r, d, w).profile, N_SLOTS, DT)
    s_hat = ss.predict_speed(s_opt, "noisy", 0.5, key=key)
    w_hat = ss.predict_work(w, "accurate", 0.5, key=key)
    return {
        "avr": ss.avr(r, d, w, n_slots=N_SLOTS, dt=DT),
        "oa": ss.oa(r, d, w, n_slots=N_SLOTS, dt=DT),
        "qoa": ss.qoa(r, d, w, alpha=alpha, n_slots=N_SLOTS, dt=DT),
        "bkp": ss.bkp(r, d, w, n_slots=N_SLOTS, dt=DT),
        "las": ss.las(r, d, w, w_hat, eps=0.5, alpha=alpha, n_slots=N_SLOTS, dt=DT),
        **{f"sp_{m}": ss.speed_prediction_schedule(r, d, w, s_hat, alpha=alpha, mode=m, dt=DT) for m in ss.SP_MODES},
    }


@given(seeds, st.sampled_from([2.0, 3.0]))
def test_every_schedule_is_feasible_conserves_work_and_costs_at_least_opt(seed, alpha):
    r, d, w = _instance(seed)
    opt = float(ss.energy(ss.yds(r, d, w).profile, alpha))
    total = float(jnp.sum(w))
    for name, sched in _all_schedules(r, d, w, alpha, jax.random.key(seed + 1)).items():
        assert bool(sched.feasible), name
        done = float(jnp.sum(sched.work_rate) * DT)
        np.testing.assert_allclose(done, total, rtol=1e-5, err_msg=name)
        # the machine runs (and pays for) the commanded speed, never less than the work it does
        assert bool(jnp.all(sched.profile.speed >= sched.work_rate - 1e-5 * (1 + sched.work_rate))), name
        if name not in ("bkp", "qoa"):  # only BKP and qOA command more than the pending work
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
    np.testing.assert_allclose(
        np.asarray(ss.avr(r, d, w, n_slots=N_SLOTS, dt=DT).profile.speed),
        ref.avr_python(*lists, N_SLOTS, DT),
        rtol=1e-4,
        atol=1e-4,
    )
    np.testing.assert_allclose(
        np.asarray(ss.oa(r, d, w, n_slots=N_SLOTS, dt=DT).profile.speed),
        ref.oa_python(*lists, N_SLOTS, DT),
        rtol=1e-4,
        atol=1e-4,
    )
    # the exact AVR profile and the grid AVR have the same energy (times are on the grid)
    np.testing.assert_allclose(
        float(ss.energy(ss.avr_profile(r, d, w), 3.0)),
        float(ss.energy(ss.avr(r, d, w, n_slots=N_SLOTS, dt=DT).profile, 3.0)),
        rtol=1e-4,
    )


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


def _robustify_case(seed, widths):
    k1, k2 = jax.random.split(jax.random.key(seed))
    n = len(widths)
    alloc = jax.random.exponential(k1, (30, n)) * (jax.random.uniform(k2, (30, n)) < 0.4)
    return alloc.at[-7:].set(0.0), jnp.asarray(widths)  # room after the last allocation


def _grid_energy(alloc, alpha):
    return float(jnp.sum(jnp.sum(alloc, 1) ** alpha))


@given(seeds, st.sampled_from([1.5, 2.0, 3.0]), st.integers(1, 6))
def test_robustify_with_equal_widths_never_increases_energy(seed, alpha, m):
    """LAS's setting (uniform windows): every job smoothed over the same width m. Jensen applies."""
    alloc, width = _robustify_case(seed, [m] * 5)
    out = ss.robustify(alloc, width)
    assert _grid_energy(out, alpha) <= _grid_energy(alloc, alpha) * (1 + 1e-5)
    np.testing.assert_allclose(np.asarray(out.sum(0)), np.asarray(alloc.sum(0)), rtol=1e-5)
    assert float(ss.robustify_energy_bound(width, alpha)) == 1.0


@given(seeds, st.sampled_from([1.5, 2.0, 3.0]))
def test_robustify_with_different_widths_obeys_the_width_ratio_bound(seed, alpha):
    alloc, width = _robustify_case(seed, [0, 1, 2, 3, 6])
    out = ss.robustify(alloc, width)
    bound = float(ss.robustify_energy_bound(width, alpha))
    assert bound == pytest.approx(6.0**alpha)
    assert _grid_energy(out, alpha) <= bound * _grid_energy(alloc, alpha) * (1 + 1e-5)
    np.testing.assert_allclose(np.asarray(out.sum(0)), np.asarray(alloc.sum(0)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(out[:, :2]), np.asarray(alloc[:, :2]))  # width 0 and 1: unchanged
    # the per-job cap LAS's robustness needs: a job's smoothed work per slot <= its total work / m_j
    m = np.maximum(np.asarray(width), 1)
    assert np.all(np.asarray(out) <= np.asarray(alloc.sum(0)) / m * (1 + 1e-5) + 1e-7)


def test_robustify_can_increase_energy_when_widths_differ():
    """The old statement "by Jensen, robustify never increases energy" is false when widths differ: job 1
    (width 2) does 2 units in slot 0 and is smoothed to 1 + 1 over slots 0-1, on top of job 0 (width 1), which
    keeps slot 1 busy with 2 units: (2^3 + 2^3) = 16 -> (1^3 + 3^3) = 28 at alpha = 3."""
    alloc = jnp.array([[0.0, 2.0], [2.0, 0.0], [0.0, 0.0]])
    width = jnp.array([1, 2])
    out = ss.robustify(alloc, width)
    np.testing.assert_allclose(np.asarray(out), [[0.0, 1.0], [2.0, 1.0], [0.0, 0.0]])
    e_in, e_out = _grid_energy(alloc, 3.0), _grid_energy(out, 3.0)
    assert (e_in, e_out) == (16.0, 28.0)
    assert e_out <= float(ss.robustify_energy_bound(width, 3.0)) * e_in  # 28 <= 2^3 x 16


def _exact_prediction(r, d, w, n_slots, dt):
    return ss.profile_on_grid(ss.yds(r, d, w).profile, n_slots, dt)


@given(seeds, st.sampled_from([(1, 3), (1, 12), (6, 12)]), st.sampled_from([1, 2]), st.sampled_from(ss.SP_MODES))
def test_pure_prediction_following_is_exactly_consistent_on_every_instance(seed, windows, sub, mode):
    """s_hat = OPT's speed: following it with the OA reserve costs exactly OPT, short windows (1-3 time units,
    1-6 slots) and long ones alike: no shrink, so no discretisation floor (theory docstring: OA_own <= OPT)."""
    r, d, w = ss.random_instance(N_JOBS, HORIZON, *windows, 10.0, key=jax.random.key(seed))
    dt, n_slots = 1.0 / sub, HORIZON * sub
    opt = float(ss.energy(ss.yds(r, d, w).profile, 3.0))
    s_hat = _exact_prediction(r, d, w, n_slots, dt)
    sched = ss.speed_prediction_schedule(r, d, w, s_hat, alpha=3.0, mode=mode, robust=False, dt=dt)
    assert bool(sched.feasible)
    assert float(ss.energy(sched.profile, 3.0)) == pytest.approx(opt, rel=1e-4)


ADVERSARIES = (
    ("zero", {}),
    ("scaled", {"scale": 10.0}),
    ("scaled", {"scale": 0.1}),
    ("shifted", {"shift": 7}),
    ("shifted", {"shift": -7}),
    ("reversed", {}),
    ("spikes", {"period": 10}),
    ("noisy", {"noise": 2.0}),
)


@given(seeds, st.sampled_from(ADVERSARIES), st.sampled_from([1.0, 2.0, 6.0]), st.sampled_from([2.0, 3.0]))
def test_sp_is_feasible_and_robust_for_every_prediction(seed, adversary, kappa, alpha):
    """s <= kappa AVR(t) in every slot, so E(SP) <= kappa^alpha E(AVR) <= C OPT whatever the prediction
    (``jaxwb.theory.speed_scaling.sp``)."""
    r, d, w = _instance(seed)
    kind, kw = adversary
    s_hat = ss.predict_speed(_exact_prediction(r, d, w, N_SLOTS, DT), kind, **kw, key=jax.random.key(seed + 1))
    avr_speed = ss.avr(r, d, w, n_slots=N_SLOTS, dt=DT).profile.speed
    e_avr = float(ss.energy(ss.avr_profile(r, d, w), alpha))
    opt = float(ss.energy(ss.yds(r, d, w).profile, alpha))
    both, env = ss.speed_prediction_schedules(r, d, w, s_hat, alpha=alpha, kappa=kappa, dt=DT)
    np.testing.assert_allclose(np.asarray(env), kappa * np.asarray(avr_speed), rtol=1e-5, atol=1e-6)
    for mode, sched in both.items():
        assert bool(sched.feasible), mode
        assert bool(jnp.all(sched.profile.speed <= env * (1 + 1e-5) + 1e-6)), mode  # pointwise s <= kappa AVR
        e = float(ss.energy(sched.profile, alpha))
        assert opt * (1 - 1e-5) <= e <= kappa**alpha * e_avr * (1 + 1e-4), mode
        assert e <= float(ss.sp_robustness_bound(alpha, kappa)) * opt


@settings(max_examples=25, deadline=None)
@given(seeds, st.sampled_from([0.1, 0.5, 2.0]), st.sampled_from([1, 2]), st.sampled_from([2.0, 3.0]))
def test_sp_instance_bound_holds_on_las_instances_for_the_sims_adversarial_family(seed, eps, sub, alpha):
    """E(SP) <= kappa^alpha E(AVR) on LAS-model instances for every prediction of the sim's adversarial family
    (``sims.speed_scaling.run._adversarial_predictions``: zero, 10x, 0.1x, shifted by D/2 either way, reversed,
    uniform, spikes, very noisy), both modes, kappa = sp_kappa(eps, alpha). It holds by the per-slot clip
    s <= kappa AVR(t) whatever the prediction logic does, so it is this unit test and not one of the sim's claims
    (they claim what pure following does against the bound and where the clip binds)."""
    import dataclasses
    import importlib

    from jaxwb.sims.speed_scaling.config import ADVERSARIAL, PRESETS

    sim_run = importlib.import_module("jaxwb.sims.speed_scaling.run")  # the module (the package exports run())
    cfg = dataclasses.replace(PRESETS["quick"], n_jobs=16, window=6, substeps=sub, alpha=alpha, bkp_check_jobs=8)
    dt, n_slots = 1.0 / sub, (cfg.n_jobs + cfg.window) * sub
    k_inst, k_adv = jax.random.split(jax.random.key(seed))
    r, d, w = ss.las_instance(cfg.n_jobs, cfg.window, step=cfg.walk_step, key=k_inst)
    s_opt = _exact_prediction(r, d, w, n_slots, dt)
    adv = sim_run._adversarial_predictions(k_adv, s_opt, cfg)
    assert set(adv) == set(ADVERSARIAL)
    kappa = ss.sp_kappa(eps, alpha)
    bound = kappa**alpha * float(ss.energy(ss.avr_profile(r, d, w), alpha))
    for name, s_hat in adv.items():
        both, env = ss.speed_prediction_schedules(r, d, w, s_hat, alpha=alpha, kappa=kappa, dt=dt)
        for mode, sched in both.items():
            assert bool(sched.feasible), (name, mode)
            assert bool(jnp.all(sched.profile.speed <= env * (1 + 1e-5) + 1e-6)), (name, mode)
            assert float(ss.energy(sched.profile, alpha)) <= bound * (1 + 1e-4), (name, mode)


def _sp_consistency(seed, n, horizon, windows, sub, eps, alpha):
    r, d, w = ss.random_instance(n, horizon, *windows, 10.0, key=jax.random.key(seed))
    dt, n_slots = 1.0 / sub, horizon * sub
    opt = float(ss.energy(ss.yds(r, d, w).profile, alpha))
    s_hat = _exact_prediction(r, d, w, n_slots, dt)
    both, _ = ss.speed_prediction_schedules(r, d, w, s_hat, alpha=alpha, eps=eps, dt=dt)
    for mode, sched in both.items():
        assert bool(sched.feasible), mode
        ratio = float(ss.energy(sched.profile, alpha)) / opt
        assert ratio <= 1 + eps, (mode, ratio)


CONSISTENCY_FAMILIES = st.sampled_from(  # one shape (24 jobs, horizon 60): windows short to long
    [(24, 60, (1, 3)), (24, 60, (1, 30)), (24, 60, (20, 50)), (24, 60, (1, 50))]
)


@settings(max_examples=6)
@given(
    seeds, CONSISTENCY_FAMILIES, st.sampled_from([1, 2]), st.sampled_from([0.1, 0.5, 2.0]), st.sampled_from([2.0, 3.0])
)
def test_robust_sp_is_consistent_with_exact_predictions(seed, family, sub, eps, alpha):
    """s_hat = OPT's speed: the robust SP with kappa = sp_kappa(eps, alpha) costs <= (1 + eps) OPT, in both
    modes, on instances with short windows (1-3 time units: 1-6 slots) and long ones (up to 50 units, 100 slots).
    Measured evidence for the first-order argument of ``jaxwb.theory.speed_scaling.sp`` (not a proof)."""
    n, horizon, windows = family
    _sp_consistency(seed, n, horizon, windows, sub, eps, alpha)


@pytest.mark.slow
@settings(max_examples=150)
@given(
    seeds,
    CONSISTENCY_FAMILIES,
    st.sampled_from([1, 2]),
    st.sampled_from([0.05, 0.1, 0.5, 2.0]),
    st.sampled_from([1.5, 2.0, 3.0]),
)
def test_robust_sp_is_consistent_with_exact_predictions_many(seed, family, sub, eps, alpha):
    n, horizon, windows = family
    _sp_consistency(seed, n, horizon, windows, sub, eps, alpha)


def test_exact_following_is_not_robust_on_the_ramp_family():
    """The lower-bound argument of ``jaxwb.theory.speed_scaling.sp``: s_hat = 1 is OPT's speed for unit jobs released
    at t = 0 .. N - 1, all due at N; if only job 0 arrives, following it costs N^(alpha - 1) OPT, while the
    robust SP stays below kappa^alpha E(AVR); on the full ramp the robust SP stays within 1 + eps."""
    n, alpha, eps = 40, 3.0, 0.1
    s_hat = jnp.ones(n)
    r, d, w = jnp.zeros(1), jnp.full(1, float(n)), jnp.ones(1)
    opt1 = float(ss.energy(ss.yds(r, d, w).profile, alpha))
    follow = ss.speed_prediction_schedule(r, d, w, s_hat, alpha=alpha, robust=False)
    robust = ss.speed_prediction_schedule(r, d, w, s_hat, alpha=alpha, eps=eps)
    assert float(ss.energy(follow.profile, alpha)) / opt1 == pytest.approx(n ** (alpha - 1), rel=1e-4)
    kappa = ss.sp_kappa(eps, alpha)
    assert float(ss.energy(robust.profile, alpha)) <= kappa**alpha * float(ss.energy(ss.avr_profile(r, d, w), alpha))
    r, d, w = jnp.arange(n, dtype=float), jnp.full(n, float(n)), jnp.ones(n)
    opt = float(ss.energy(ss.yds(r, d, w).profile, alpha))
    assert opt == pytest.approx(n, rel=1e-5)
    ramp = ss.speed_prediction_schedule(r, d, w, s_hat, alpha=alpha, eps=eps)
    ratio = float(ss.energy(ramp.profile, alpha)) / opt
    assert 1.0 < ratio <= 1 + eps  # the cap binds at the start (some deviation is unavoidable), cheaply


def test_las_is_consistent_on_the_las_model():
    r, d, w = ss.las_instance(N_JOBS, HORIZON - N_JOBS, key=jax.random.key(0))
    opt = float(ss.energy(ss.yds(r, d, w).profile, 3.0))
    for eps in (0.5, 2.0):
        las = ss.las(r, d, w, w, eps=eps, alpha=3.0, n_slots=N_SLOTS, dt=DT)
        assert bool(las.feasible) and float(ss.energy(las.profile, 3.0)) / opt <= 1 + eps


def test_bkp_matches_the_pure_python_reference_and_pays_for_its_commanded_speed():
    r, d, w = _instance(5)
    sched = ss.bkp(r, d, w, n_slots=N_SLOTS, dt=DT)
    ref_speed = ref.bkp_python(*_lists(r, d, w), N_SLOTS, DT)
    np.testing.assert_allclose(np.asarray(sched.profile.speed), ref_speed, rtol=1e-4, atol=1e-4)
    assert float(ss.energy(sched.profile, 3.0)) > float(ss.energy(ss.grid_profile(sched.work_rate, DT), 3.0))


def test_bkp_idles_once_nothing_is_pending():
    """After the last job finishes BKP's speed is 0, so its energy does not depend on the grid's length
    (one job of work 1 on [0, 1) at alpha = 2 cost 1.0 / 3.95 / 5.85 with 1 / 2 / 1024 slots before)."""
    for n_slots in (1, 2, 8, 64):
        assert float(ss.energy(ss.bkp([0.0], [1.0], [1.0], n_slots=n_slots, dt=1.0).profile, 2.0)) == pytest.approx(1.0)
    r, d, w = _instance(5)
    e = [float(ss.energy(ss.bkp(r, d, w, n_slots=n, dt=DT).profile, 3.0)) for n in (N_SLOTS, 2 * N_SLOTS)]
    assert e[1] == pytest.approx(e[0], rel=1e-6)


def test_prediction_generators():
    key = jax.random.key(0)
    s = jnp.arange(1.0, 41.0)
    assert float(ss.prediction_error(ss.predict_speed(s, "accurate", key=key), s, 3.0)) == 0.0
    exact = ss.predict_speed(s, "noisy", 0.0, key=key)
    assert float(ss.prediction_error(exact, s, 3.0)) == pytest.approx(0.0, abs=1e-6)
    assert float(ss.prediction_error(ss.predict_speed(s, "noisy", 1.0, key=key), s, 3.0)) > 0.3
    np.testing.assert_allclose(float(ss.predict_speed(s, "spikes", period=10, key=key).sum()), float(s.sum()))
    np.testing.assert_allclose(float(ss.predict_speed(s, "uniform", key=key).sum()), float(s.sum()), rtol=1e-6)
    w = jnp.array([20.0, 50.0, 80.0])
    np.testing.assert_allclose(np.asarray(ss.predict_work(w, "misleading", key=key)), [80.0, 50.0, 20.0])
    rnd = ss.predict_work(w, "random", key=key)
    assert bool(jnp.all((rnd >= 20) & (rnd <= 80)))


def test_las_instance_is_a_reflected_random_walk():
    """LAS's workload model: every step |w_{i+1} - w_i| <= step (a reflection at a wall keeps it so) and every
    workload in [low, high]; a narrow band makes the walk hit both walls many times."""
    _, _, w = ss.las_instance(400, 20, low=20.0, high=30.0, step=5.0, key=jax.random.key(3))
    w = np.asarray(w)
    assert w.min() >= 20.0 and w.max() <= 30.0
    assert np.max(np.abs(np.diff(w))) <= 5.0 + 1e-4
    assert (w < 21).any() and (w > 29).any()  # both walls reached


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
    with pytest.raises(ValueError, match="kappa"):
        ss.speed_prediction_schedule(r, d, w, jnp.ones(4), alpha=3.0, kappa=0.5)
    with pytest.raises(ValueError, match="eps"):
        ss.speed_prediction_schedules(r, d, w, jnp.ones(4), alpha=3.0, eps=0.0)
    with pytest.raises(ValueError, match="mode"):
        ss.speed_prediction_schedule(r, d, w, jnp.ones(4), alpha=3.0, mode="psychic")
    with pytest.raises(ValueError, match="n_slots"):
        ss.bkp(r, d, w, n_slots=0)
    with pytest.raises(ValueError, match="shape"):
        ss.yds(r, d, jnp.ones(3))


def test_one_n_slots_convention():
    """Every grid function takes ``n_slots`` the same way: inferred (from the grid array, else the deadlines) or
    given; an explicit value that matches gives the same schedule."""
    r, d, w = ss.las_instance(12, 4, key=jax.random.key(0))
    last = int(np.max(np.asarray(d)))
    assert ss.resolve_n_slots(d, None, 1.0) == last
    assert ss.resolve_n_slots(d, None, 0.5) == 2 * last
    inferred, given = ss.las(r, d, w, w, eps=0.5, alpha=3.0), ss.las(r, d, w, w, eps=0.5, alpha=3.0, n_slots=last)
    np.testing.assert_array_equal(np.asarray(inferred.profile.speed), np.asarray(given.profile.speed))
    assert ss.oa(r, d, w).profile.speed.shape == (last,)
    s_opt = ss.profile_on_grid(ss.yds(r, d, w).profile, last + 3, 1.0)
    sp = ss.speed_prediction_schedule(r, d, w, s_opt, alpha=3.0)
    np.testing.assert_array_equal(
        np.asarray(sp.profile.speed),
        np.asarray(ss.speed_prediction_schedule(r, d, w, s_opt, alpha=3.0, n_slots=last + 3).profile.speed),
    )
    with pytest.raises(ValueError, match="n_slots must equal the length of predicted_speed"):
        ss.speed_prediction_schedule(r, d, w, s_opt, alpha=3.0, n_slots=last)
    with pytest.raises(ValueError, match="n_slots must cover every deadline"):
        ss.avr(r, d, w, n_slots=last - 1)
    with pytest.raises(ValueError, match="n_slots must be given when deadline or dt is traced"):
        jax.jit(lambda dd: ss.avr(r, dd, w).profile.speed)(d)


# ---------------------------------------------------------------------------------------------------------
# published constants and the instance generator: what no claim can resolve (a loosened bound, a shifted support
# end; docs/papers/speed_scaling.md) is pinned here against numbers written out by hand


def test_published_competitive_ratios_are_the_papers_numbers():
    # AVR: 2^(a-1) a^a (Yao, Demers, Shenker 1995); OA: a^a (Bansal, Kimbrel, Pruhs 2007); BKP: 2 (a/(a-1))^a e^a
    assert ss.avr_bound(2.0) == pytest.approx(8.0, rel=1e-12)
    assert ss.avr_bound(3.0) == pytest.approx(108.0, rel=1e-12)
    assert ss.oa_bound(3.0) == pytest.approx(27.0, rel=1e-12)
    assert ss.bkp_bound(2.0) == pytest.approx(8.0 * np.exp(2.0), rel=1e-12)  # 2 * 2^2 * e^2 = 59.11
    assert ss.bkp_bound(3.0) == pytest.approx(6.75 * np.exp(3.0), rel=1e-12)  # 2 * 1.5^3 * e^3 = 135.57
    assert ss.qoa_q(3.0) == pytest.approx(5.0 / 3.0, rel=1e-12)


def test_random_instance_draws_the_documented_distribution():
    """Works U(0.1, max_work), integer releases U{0 .. horizon - max_window}, integer windows U{min .. max}: the
    support ends are reached (a minimum work shifted by 0.005 would leave the sample minimum above it with
    probability 1 - e^-50 at this size), and a KS test of the works against U(0.1, max_work)."""
    from scipy import stats

    n, horizon, lo_w, hi_w, max_work = 100_000, 30, 2, 7, 10.0
    r, d, w = (
        np.asarray(a, np.float64) for a in ss.random_instance(n, horizon, lo_w, hi_w, max_work, key=jax.random.key(0))
    )
    assert 0.1 <= w.min() < 0.105 and max_work - 0.005 < w.max() <= max_work
    assert stats.kstest(w, stats.uniform(0.1, max_work - 0.1).cdf).pvalue > 1e-4
    assert set(np.unique(r)) == set(range(horizon - hi_w + 1))
    assert set(np.unique(d - r)) == set(range(lo_w, hi_w + 1))
