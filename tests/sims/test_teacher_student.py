"""Teacher-student result end to end on the quick preset, Config validation, the bench and its NumPy port."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from jaxwb.sims import teacher_student as sim
from jaxwb.sims.core import harness
from jaxwb.sims.core.claims import format_claims
from jaxwb.sims.teacher_student.bench import numpy_solve
from jaxwb.sims.teacher_student.config import SMALL_GAP
from jaxwb.sims.teacher_student.measures import measurements
from jaxwb.sims.teacher_student.reference import C_IT_REF, asymptotic_eps
from jaxwb.sims.teacher_student.run import alpha_grid
from jaxwb.theory import teacher_student as ts
from tests.sims.expected import assert_config_refuses, assert_outputs


def test_quick_preset_end_to_end(tmp_path):
    outcome = harness.execute(sim, preset="quick", seed=0, out_dir=tmp_path, verbose=False)
    # Every claim passes except, possibly, the paper's "small gap" claim for the Adam student, which our small-d
    # students do not reproduce (gap ~4x; see the module docstring). For it we check only that it is sane.
    gap = [c for c in outcome.claims if c.statement.startswith(SMALL_GAP)]
    assert len(gap) == 1 and np.isfinite(gap[0].measured) and gap[0].measured >= 1.0
    assert gap[0].expected == "fail" and gap[0].reason
    failed = [c.statement for c in outcome.claims if not c.as_expected]
    assert not failed, failed
    kinds = [c.kind for c in outcome.claims]
    assert kinds.count("check") >= 3 and "unclassified" not in kinds
    assert assert_outputs(tmp_path, sim.NAME)["nonfinite_arrays"] == []
    # refinement (k_c = k, alpha >= 10x the all-learned point): eps_BO ~ n^-1 holds by construction of the law
    # (every feature learned, each error (Delta_eff/alpha)(1 + O(1/c^2))), so it is a unit test, not a claim
    meas = measurements(outcome.results, sim.PRESETS["quick"])
    assert np.allclose(meas["slope_ref"], -1.0, atol=2e-3), meas["slope_ref"]
    # the thresholds the claims use come from scipy on the potential, not from the solver's constant
    assert abs(C_IT_REF - ts.C_IT) < 1e-9
    # the staircase is a staircase: each shown feature switches on once, later features later
    m = np.asarray(outcome.results["staircase"]["m"])
    on = np.argmax(m > 0.5, axis=0)
    assert np.all(m[-1] > 0.5) and np.all(np.diff(on) > 0)


def test_bench_and_its_numpy_port():
    rows = sim.bench(quick=True)
    assert rows and all(np.isfinite(r.speedup) and r.speedup > 0 for r in rows)
    # the NumPy baseline runs the same algorithm (the bench's quick grid: its compiled program is reused)
    a2 = ts.amplitudes(400, 1.0)
    alphas = alpha_grid(dataclasses.replace(sim.PRESETS["quick"], n_alpha=32), 1.0)
    sol = ts.solve_grid(alphas, a2, 1.0)
    for j in (2, 9, 16, 31):
        for dynamic in (False, True):
            m_np, eps_np = numpy_solve(alphas[j], np.asarray(a2), 1.0, dynamic=dynamic)
            np.testing.assert_allclose(float(sol.eps_bo[j]), eps_np, rtol=1e-4)
            np.testing.assert_allclose(np.asarray(sol.m[j]), m_np, atol=1e-4)


def test_asymptotic_formula_is_the_solver_at_large_k():
    # the continuum formula behind the slope predictions tracks the solver within a few % in the window
    k, beta = 4000, 1.0
    alphas = np.geomspace(200.0, 3000.0, 5)
    sol = ts.solve_grid(alphas, ts.amplitudes(k, beta), 1.0)
    np.testing.assert_allclose(asymptotic_eps(alphas, beta, k, 1.0), np.asarray(sol.eps_bo), rtol=0.1)


@pytest.mark.parametrize(
    "field, value",
    [
        ("k", 0),
        ("delta", -1.0),
        ("betas", (0.4, 1.0)),
        ("betas", (1.5,)),
        ("stair_alpha", (3.0, 1.0)),
        ("jump_features", (1, 2)),
        ("amp_cs", (3.0, 1.0, 5.0, 10.0)),
        ("amp_m0", 1.0),
        ("st_seeds", 3),
        ("st_ds", (24,)),
        ("st_lr", float("nan")),
    ],
)
def test_config_validates_itself(field, value):
    assert_config_refuses(sim.PRESETS["quick"], [(field, value)])


@pytest.mark.slow
def test_full_preset_claims():
    outcome = harness.execute(sim, preset="full", seed=0, write=False, verbose=False)
    failed = [c for c in outcome.claims if not c.passed and not c.statement.startswith(SMALL_GAP)]
    assert not failed, format_claims(sim.NAME, outcome.claims)


def test_model_keys_are_keyword_only():
    import inspect

    from jaxwb.models import teacher_student as mts

    for fn in (mts.make_teacher, mts.init_student, mts.sample, mts.prior_teacher, mts.symmetric_noise):
        assert inspect.signature(fn).parameters["key"].kind is inspect.Parameter.KEYWORD_ONLY, fn.__name__
    for name in ("data_key", "init_key"):
        for fn in (mts.train_student, mts.train_map):
            assert inspect.signature(fn).parameters[name].kind is inspect.Parameter.KEYWORD_ONLY


def test_hermite_sq_distance_matches_monte_carlo():
    """The closed form behind the students' initial-error claim against a NumPy Monte Carlo (float64)."""
    from jaxwb.sims.teacher_student.reference import hermite_sq_distance

    rng = np.random.default_rng(0)
    d = 4
    wf, vf, wg, vg = rng.normal(size=(2, d)), rng.normal(size=2), rng.normal(size=(3, d)), rng.normal(size=3)
    x = rng.normal(size=(400_000, d))

    def f(w, v):
        u = x @ w.T / np.sqrt(d)
        return ((u**3 - 3 * u) / np.sqrt(6)) @ v

    diff2 = (f(wf, vf) - f(wg, vg)) ** 2
    exact = hermite_sq_distance(wf, vf, wg, vg)
    assert abs(diff2.mean() - exact) < 4 * diff2.std() / np.sqrt(x.shape[0]), (diff2.mean(), exact)


def test_threshold_counts_see_a_shifted_learned_set():
    """The count claims' measurement: 0 on a consistent learned set, > 0 when one feature too many is learned."""
    from jaxwb.sims.teacher_student.reference import C_IT_REF, amplitudes_np, learned_by_threshold

    a2 = amplitudes_np(50, 1.0)
    alpha = np.geomspace(5, 500, 20)
    de = np.full(20, 1.3)
    rule = learned_by_threshold(alpha, a2, de)
    kc = np.sum(alpha[:, None] * a2[None] / de[:, None] >= C_IT_REF, axis=1)
    assert np.array_equal(rule.sum(1), kc)
    assert np.array_equal(learned_by_threshold(alpha, a2, de / 1.05).sum(1) >= kc, np.ones(20, bool))
    assert np.any(learned_by_threshold(alpha, a2, de / 1.05).sum(1) > kc)


def test_map_objective_grad_matches_finite_differences():
    """The hand-written gradient of the independent MAP/Adam reference against central differences of the
    negative log posterior [sum (y - f)^2 / (2 Delta) + |w|^2 / 2] / n (float64)."""
    from jaxwb.sims.teacher_student.reference import map_objective_grad

    rng = np.random.default_rng(1)
    n, d, h, delta = 30, 5, 3, 0.3
    x, y, w, v = rng.normal(size=(n, d)), rng.normal(size=n), rng.normal(size=(h, d)), rng.normal(size=h)

    def obj(w, v):
        u = x @ w.T / np.sqrt(d)
        return (np.sum((((u**3 - 3 * u) / np.sqrt(6)) @ v - y) ** 2) / (2 * delta) + 0.5 * np.sum(w * w)) / n

    gw, gv = map_objective_grad(w, v, x, y, delta)
    e = 1e-6
    for i, j in [(0, 0), (1, 3), (2, 4)]:
        dw = np.zeros_like(w)
        dw[i, j] = e
        assert abs((obj(w + dw, v) - obj(w - dw, v)) / (2 * e) - gw[i, j]) < 1e-6 * (1 + abs(gw[i, j]))
    for i in range(h):
        dv = np.zeros_like(v)
        dv[i] = e
        assert abs((obj(w, v + dv) - obj(w, v - dv)) / (2 * e) - gv[i]) < 1e-6 * (1 + abs(gv[i]))
