"""ALDRIFT result end to end on the quick preset, plus its benchmark."""

from __future__ import annotations

import numpy as np
import pytest

from jaxwb.sims import aldrift as sim
from jaxwb.sims.aldrift import pieces
from jaxwb.sims.core import harness
from jaxwb.sims.core.claims import format_claims
from jaxwb.sims.core.timing import format_bench
from tests.sims.expected import assert_config_refuses, assert_outputs


@pytest.mark.slow  # the quick preset's decisions (and `workbench all --quick`); default run: test_smoke.py
def test_quick_preset_end_to_end(tmp_path):
    outcome = harness.execute(sim, preset="quick", seed=0, out_dir=tmp_path, verbose=False)
    failed = [c.statement for c in outcome.claims if not c.as_expected]
    assert not failed, failed
    assert sum(c.expected == "fail" for c in outcome.claims) == 2  # ALDRIFT vs p_T in both settings (docs page)
    manifest = assert_outputs(tmp_path, sim.NAME)
    assert manifest["claims_as_expected"] and manifest["nonfinite_arrays"] == []
    # mechanism: ALDRIFT's fitted mean moves towards x* monotonically on the whole, TOPIFT's stalls early
    r = outcome.results["setting1"]
    d_al = np.linalg.norm(np.asarray(r["aldrift"]["mean"]), axis=-1).mean(0)
    d_top = np.linalg.norm(np.asarray(r["topift"]["mean"]), axis=-1).mean(0)
    assert d_al[-1] < 0.1 * d_al[0]
    n_rounds = len(d_top)
    assert abs(d_top[-1] - d_top[n_rounds // 2]) < 0.05 * d_top[0]  # no progress in the second half


def test_bench_reports_a_speedup():
    rows = sim.bench(quick=True)
    assert len(rows) == 2 and all(np.isfinite(r.speedup) and r.speedup > 0 for r in rows)
    # measured 29-35x on the shared 2-core box; the floor leaves room for load spikes (a timing test)
    assert rows[0].speedup >= 5, format_bench(rows)  # vs the per-chain, per-step NumPy loop


@pytest.mark.slow
def test_full_preset_claims():
    outcome = harness.execute(sim, preset="full", seed=0, write=False, verbose=False)
    # every expectation met at seed 0. E||fitted mean - x*||^2 at T over its 20 runs lies 1.4 half-widths high
    # (0.0460 +- 0.0043 vs 0.0402; 100 other runs give 0.04047 +- 0.0019: no bias): outside its 95% interval, inside
    # its family's (the result's "ci" claims are decided together at 1 - 0.0025/m), so a miss within chance
    failed = [c.statement for c in outcome.claims if not c.as_expected]
    assert not failed, format_claims(sim.NAME, outcome.claims)
    known = "pure quadratic: E||fitted mean - x*||^2 at T"
    assert [c.statement[: len(known)] for c in outcome.claims if c.chance_miss] == [known]


def test_config_validation():
    bad = [("m", 0), ("runs", 3), ("tau1", float("nan")), ("box", (0.5, 1.0)), ("cov_m_main", 7)]
    bad += [("eps_setting", 5), ("rs_eps_min", 1.0), ("cov_sd", 0.0), ("kish_reps", 0)]
    assert_config_refuses(sim.PRESETS["quick"], bad)


def test_intended_schedule_matches_theory():
    # the sim's independent schedule for the quadratic prediction equals theory.aldrift's on the clean code
    from jaxwb.theory import aldrift as al

    cfg = sim.PRESETS["quick"]
    taus = al.temperature_schedule("geometric", cfg.T, tau1=cfg.tau1, n=cfg.n)
    kmax = int(np.log(cfg.T / cfg.tau1) / np.log1p(1.0 / cfg.n)) + 2
    intended = np.minimum(cfg.tau1 * (1.0 + 1.0 / cfg.n) ** np.arange(kmax + 1), cfg.T)
    intended = intended[: int(np.argmax(intended >= cfg.T)) + 1]
    np.testing.assert_allclose(taus, intended, rtol=1e-12)
    assert len(taus) == 57  # the paper's schedule 0.1 -> 20 by (1 + 1/10)


def test_random_search_early_stop_matches_the_whole_stream():
    # the chunked, early-stopped random search counts = first hits on the concatenated stream of its chunks
    import jax
    import jax.numpy as jnp

    from jaxwb.theory import aldrift as al

    setting, n, lo, hi, chunk, budget = (1.0, 0.5, 4.0, 1.35, 2.0), 2, -1.1, 1.5, 64, 64 * 40
    eps = (1.0, 0.3, 0.1, 1e-9)  # the last is never reached: the run spends the whole budget on it
    keys = jax.random.split(jax.random.key(3), 4)
    got = pieces.eps_random(keys, setting=setting, n=n, lo=lo, hi=hi, budget=budget, chunk=chunk, eps=eps)
    cost, _ = pieces.problem(setting, n)
    for r, key in enumerate(keys):
        curve = jnp.concatenate(
            [
                al.random_search(cost, lo, hi, n=n, budget=chunk, key=jax.random.fold_in(key, i))
                for i in range(budget // chunk)
            ]
        )
        cnt, ok = al.evaluations_to_reach(jax.lax.cummin(curve), jnp.asarray(eps))
        np.testing.assert_array_equal(np.asarray(got["reached"][r]), np.asarray(ok))
        np.testing.assert_array_equal(np.asarray(got["count"][r]), np.asarray(cnt))
    assert not np.asarray(got["reached"][:, -1]).any() and (np.asarray(got["count"][:, -1]) == budget).all()


def test_doo_reference_matches_theory():
    # the claims' independent NumPy DOO and theory.aldrift.doo agree on a small instance (the claim compares their
    # first-hit counts on the full grid of eps)
    from jaxwb.theory import aldrift as al

    setting, n, lo, hi = (1.0, 0.5, 4.0, 1.35, 2.0), 3, -1.1, 1.5
    _, L_d = al.envelope_constants(*setting[:3])
    cost, _ = pieces.problem(setting, n)
    best, _, _ = al.doo(cost, lo, hi, n=n, L_d=L_d, expansions=60)
    ref = pieces.doo_reference(setting, n=n, lo=lo, hi=hi, L_d=L_d, expansions=60)
    assert ref.shape == (121,) and (np.diff(ref) <= 0).all()
    np.testing.assert_allclose(np.asarray(best), ref, rtol=2e-5, atol=1e-7)


def test_kish_reference():
    from jaxwb.theory import aldrift as al

    same = pieces.kish_reference(0, mean_p=0.3, var_p=2.0, mean_q=0.3, var_q=2.0, n=3, N=50, reps=3)
    np.testing.assert_allclose(same, 1.0, rtol=1e-12)  # proposal = target: every weight equal
    # many draws: the Kish fraction tends to the population value 1/E_q[(p/q)^2] (closed form in theory.aldrift)
    got = pieces.kish_reference(1, mean_p=0.5, var_p=1.0, mean_q=0.0, var_q=1.5, n=2, N=200_000, reps=2)
    pop = float(al.gaussian_importance_ess(0.5, 1.0, 0.0, 1.5, 2))
    np.testing.assert_allclose(got, pop, rtol=0.02)


def test_covered_temperatures():
    from jaxwb.sims.aldrift.measures import covered_temperatures

    # (mu0 + tau L_d) <= 2 (mu0 + tau mu_d)  <=>  tau <= mu0 / (L_d - 2 mu_d): setting 2 (L_d = 9): tau <= 2/7
    taus = np.array([0.1, 0.28, 0.29, 1.0])
    np.testing.assert_array_equal(covered_temperatures((1.0, 0.5, 4.0, 1.35, 2.0), taus), [True, True, False, False])
    assert not covered_temperatures((0.5, 2.0, 3.0, 6.0, 0.1), taus).any()  # setting 1: tau <= 0.0057


def test_random_search_probability():
    """The random-search slope claim's reference: P[d <= eps] for a uniform draw on the box, by quadrature."""
    import math

    setting, lo, hi = (1.0, 0.5, 4.0, 1.35, 2.0), -1.1, 1.5
    # pure quadratic (A = 0): the sublevel set is the ball of radius sqrt(2 eps / mu_d), exactly
    for n in (2, 4):
        eps = np.array([0.3, 0.05])
        got = pieces.random_search_probability((1.0, 0.0, 4.0, 0.0, 1.0), n=n, lo=lo, hi=hi, eps=eps)
        ball = math.pi ** (n / 2) / math.gamma(n / 2 + 1) * np.sqrt(2 * eps) ** n / (hi - lo) ** n
        np.testing.assert_allclose(got, ball, rtol=1e-9)
    # n = 2 with the ripple: the area {c(x1) + c(x2) <= eps} as a 1-D integral over x1 (NumPy root finding)
    from scipy.integrate import quad
    from scipy.optimize import brentq

    c = lambda z: 0.5 * z**2 + 0.5 * (1 - np.cos(4.0 * z))
    half = lambda v: brentq(lambda z: c(z) - v, 0.0, 0.9) if v > 0 else 0.0
    e = 0.3
    area = quad(lambda x: 2 * half(e - c(x)), -half(e), half(e), limit=200)[0]
    got = pieces.random_search_probability(setting, n=2, lo=lo, hi=hi, eps=[e])[0]
    np.testing.assert_allclose(got, area / (hi - lo) ** 2, rtol=1e-6)
    # n = 4: a Monte Carlo of uniform draws (4e6 draws, ~2300 hits at eps = 0.32: 2.1% standard error)
    rng = np.random.default_rng(0)
    x = rng.uniform(lo, hi, (4_000_000, 4))
    p_mc = np.mean(np.sum(0.5 * x**2 + 0.5 * (1 - np.cos(4.0 * x)), axis=1) <= 0.32)
    got = pieces.random_search_probability(setting, n=4, lo=lo, hi=hi, eps=[0.32])[0]
    assert abs(got - p_mc) < 4 * math.sqrt(p_mc / 4_000_000), (got, p_mc)
    # refused: odd n, and an eps whose sublevel set leaves the central interval of a coordinate
    with pytest.raises(ValueError, match="n must be even"):
        pieces.random_search_probability(setting, n=3, lo=lo, hi=hi, eps=[0.1])
    with pytest.raises(ValueError, match="eps must stay below"):
        pieces.random_search_probability(setting, n=4, lo=lo, hi=hi, eps=[1.3])


@pytest.mark.parametrize(
    ("mean_p", "var_p", "mean_q", "var_q", "n", "mean_var"),
    [(0.3, 1.0, 0.3, 1.0, 5, 0.0), (0.3, 0.5, 0.0, 1.0, 10, 0.0), (1.0, 0.3, 1.1, 0.7, 4, 0.01)],
)
def test_ess_quadrature_equals_the_gaussian_integral(mean_p, var_p, mean_q, var_q, n, mean_var):
    # per coordinate E_q[(p/q)^2] = var_q / sqrt(var_p D) exp(dm^2 / D), D = 2 var_q - var_p; a proposal mean with
    # N(0, mean_var) noise averages exp(-dm^2/D) to (1 + 2 mean_var/D)^(-1/2) exp(-dm^2/(D + 2 mean_var))
    D = 2 * var_q - var_p
    shift = np.exp(-((mean_p - mean_q) ** 2) / (D + 2 * mean_var)) / np.sqrt(1 + 2 * mean_var / D)
    want = (np.sqrt(var_p * D) / var_q * shift) ** n
    got = pieces.ess_quadrature(mean_p=mean_p, var_p=var_p, mean_q=mean_q, var_q=var_q, n=n, mean_var=mean_var)
    assert got == pytest.approx(want, rel=1e-10)
