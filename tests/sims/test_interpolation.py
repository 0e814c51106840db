"""End-to-end test of sims/interpolation/ on the quick preset, its helpers, Config validation and the bench's
NumPy baseline."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from jaxwb.sims import interpolation as sim
from jaxwb.sims.core.harness import execute
from jaxwb.sims.interpolation import statistics
from jaxwb.sims.interpolation.bench import numpy_mc
from tests.sims.expected import assert_config_refuses, assert_outputs


@pytest.mark.slow  # the quick preset's decisions (and `workbench all --quick`); default run: test_smoke.py
def test_quick_preset_end_to_end(tmp_path):
    outcome = execute(sim, preset="quick", out_dir=tmp_path, verbose=False)
    # Every quick claim meets its expectation on a clean run (seed 0), and none is expected to fail: the paper's
    # "speedup directly proportional to B" is decided on the heavy-ball rule (exact slope 1.003-1.007 over the
    # problems of seeds 0-19), the grid optimum's sub-linear slope by its check against the exact recursion.
    failed = [c.statement for c in outcome.claims if not c.as_expected]
    assert not failed, failed
    assert not [c.statement for c in outcome.claims if c.expected == "fail"]
    # the Kaczmarz / coordinate-descent configurations that need them run 4x the seeds (config: the power table)
    seeds = {
        k: outcome.results[p][c]["seeds"]
        for p in ("kaczmarz", "cd")
        for c in ("single", "block", "block_hb")
        for k in [f"{p}/{c}"]
    }
    assert seeds["cd/single"] == seeds["cd/block_hb"] == seeds["kaczmarz/block_hb"] == 4 * seeds["cd/block"]
    assert len(outcome.claims) >= 10
    assert {c.kind for c in outcome.claims} <= {"check", "bound", "paper"}
    # every Monte-Carlo claim is decided on an interval over >= 5 seeds
    # (the divergence claim is a count, the largest diverged fraction, compared with 0)
    mc_claims = [c for c in outcome.claims if "Monte-Carlo" in c.statement and "diverges" not in c.statement]
    assert all(c.n_seeds >= 5 and c.ci > 0 for c in mc_claims)
    manifest = assert_outputs(tmp_path, sim.NAME)
    assert manifest["claims_passed"] == manifest["claims_total"]
    assert np.all(np.asarray(outcome.results["mc"]["diverged_fraction"]) == 0)


def test_hits_interpolates_in_log_and_handles_edges():
    t = np.arange(5.0) * 10
    curves = np.array(
        [
            [1.0, 0.1, 0.01, 0.001, 1e-4],  # crosses 1e-2.5 between t=20 and t=30
            [1.0, 1.0, 1.0, 1.0, 1.0],  # never
            [1.0, 1e-5, 1e-5, 1e-5, 1e-5],
        ]
    )  # at once after t=0
    hits = statistics.hits(curves, t, 10**-2.5)
    np.testing.assert_allclose(hits[0], 25.0)
    assert hits[1] == np.inf
    assert 0 < hits[2] <= 10


def test_fits_recovers_a_geometric_rate():
    t = np.arange(100.0)
    curves = np.stack([0.9**t, 3.0 * 0.99**t])
    np.testing.assert_allclose(statistics.fits(curves, t, 10, 80), [0.9, 0.99], rtol=1e-12)


def test_bootstrap_halfwidth_of_a_known_mean():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, 1))
    boots = statistics.boot_means(x, 400, rng)[:, 0]
    half = sim.boot_halfwidth(float(x.mean()), boots)
    np.testing.assert_allclose(half, 1.96 / np.sqrt(4000), rtol=0.2)
    assert sim.boot_halfwidth(0.0, np.array([0.0, np.inf])) == np.inf


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("n", 3, "n must be"),
        ("cond", 0.5, "cond"),
        ("sampling", "rows", "sampling"),
        ("batch_sizes", (2, 4, 8), "batch_sizes"),
        ("batch_sizes", (1, 8, 4), "batch_sizes"),
        ("rate_check_batches", (3,), "rate_check_batches"),
        ("eps", 2.0, "eps"),
        ("min_seeds", 3, "min_seeds"),
        ("n_boot", 10, "n_boot"),
        ("fit_efolds", float("nan"), "fit_efolds"),
        ("seed_scale", (("sgd", 3, 2.0),), "seed_scale"),
        ("seed_scale", (("sgd", 2, 2.0),), "seed_scale"),  # quick: common random numbers, one seed set per B
        ("aux_seed_scale", (("cd", "double", 2.0),), "aux_seed_scale"),
        ("aux_seed_scale", (("sgd", "single", 2.0),), "aux_seed_scale"),
        ("problem_seed", -1, "problem_seed"),
        ("tail_bounds", (("hb", 2, "decay", 1.5),), "tail_bounds"),
        ("unclaimed", (("hb", 3, "decay"),), "unclaimed"),
    ],
)
def test_config_validation_names_the_field(field, value, match):
    assert_config_refuses(sim.PRESETS["quick"], [(field, value, match)])


def test_heavy_tail_marks_are_exclusive():
    full = sim.PRESETS["full"]
    with pytest.raises(ValueError, match="only one of"):
        dataclasses.replace(full, unclaimed=(("sgd", 16, "decay"),))  # already a tail bound


def test_seed_counts_per_configuration():
    """Common random numbers (quick preset): one seed count per B; independent streams (full preset): each
    (method, B) runs its B's seed count x its seed_scale factor (2x where a claim reads it, 1x figure-only)."""
    quick, full = sim.PRESETS["quick"], sim.PRESETS["full"]
    assert quick.common_random_numbers and not quick.seed_scale
    assert not full.common_random_numbers and full.seeds_of("hb", 1) == 2 * 4096 and full.seeds_of("sgd", 2) == 4096
    base = dataclasses.replace(full, seed_scale=())
    assert base.seeds_of("hb", 32) == 512  # max(min_seeds, min(n_seeds, seed_budget // B))
    ind = dataclasses.replace(base, seed_scale=(("nesterov", 1, 16.0), ("sgd", 64, 0.25)))
    assert ind.seeds_of("nesterov", 1) == 16 * 4096 and ind.seeds_of("sgd", 64) == 64 and ind.seeds_of("hb", 1) == 4096


def test_problem_seed_fixes_the_problem():
    """The full preset's problem is the run's with seed 0 at every seed (its expected failures are properties of that
    problem's grid optima); the quick preset draws one per seed."""
    import jax

    from jaxwb.sims.interpolation.run import problem_key, run_keys

    quick, full = sim.PRESETS["quick"], sim.PRESETS["full"]
    assert quick.problem_seed is None and full.problem_seed == 0
    k0, k1 = run_keys(jax.random.key(0))[0], run_keys(jax.random.key(1))[0]
    same = lambda a, b: bool((jax.random.key_data(a) == jax.random.key_data(b)).all())
    assert same(problem_key(full, jax.random.key(1)), k0) and same(problem_key(full, jax.random.key(0)), k0)
    assert same(problem_key(quick, jax.random.key(1)), k1) and not same(k0, k1)
    assert full.aux_seeds_of("cd", "single") == full.aux_seeds
    assert quick.aux_seeds_of("cd", "single") == 4 * quick.aux_seeds == quick.aux_seeds_of("kaczmarz", "block_hb")


def test_numpy_baseline_agrees_with_theory():
    """The bench's NumPy loop is an honest baseline: its mean error follows the exact recursion (15%, 200
    seeds)."""
    import jax

    from jaxwb.theory import interpolation as ip

    with jax.enable_x64(True):
        pr = ip.random_problem(30, 4, cond=20.0, sampling="norm", key=jax.random.key(0))
        exact = np.asarray(ip.expected_sq_error(pr, -pr.x_star, lr=0.5, beta=0.5, batch_size=2, steps=20))
    npp = [np.asarray(a, np.float64) for a in (pr.A, pr.b, pr.x_star, pr.probs, pr.weights)]
    mc = numpy_mc(*npp, 0.5, 0.5, 2, 20, 400, np.random.default_rng(0)).mean(0)
    np.testing.assert_allclose(mc[::5], exact[::5], rtol=0.15)


def test_coverage_study_refuses_bad_input():
    from jaxwb.sims.interpolation import coverage

    with pytest.raises(ValueError, match="method"):
        coverage.coverage("adam", 1, 64, 3)
    with pytest.raises(ValueError, match="batch_size"):
        coverage.coverage("sgd", 3, 64, 3)
    with pytest.raises(ValueError, match="replicates"):
        coverage.coverage("sgd", 1, 64, 1)


@pytest.mark.slow  # the full preset's exact curves (~1 min)
def test_coverage_study_reproduces_the_documented_replicate():
    """SGD at B = 256 with 128 seeds, replicate 0 (docs/papers/interpolation.md, "Intervals"): the heavy tail puts
    iterations to eps at 1343 +- 28 against the exact 1717."""
    from jaxwb.sims.interpolation import coverage
    from jaxwb.sims.interpolation.config import PRESETS

    cfg = PRESETS["full"]
    th = coverage.committed_theory(cfg)
    r = coverage.replicate(th, cfg, "sgd", 256, 128, 0)
    assert abs(r["hits"][0] - 1343.4) < 0.1 and abs(r["exact"]["hits"] - 1717.5) < 0.1
    assert abs(r["hits"][0] - r["exact"]["hits"]) > r["hits"][1]  # not covered


@pytest.mark.parametrize("method", ["sgd", "hb", "nesterov"])
def test_dense_operator_is_the_theory_operator(method):
    import jax

    from jaxwb.sims.interpolation.run import dense_operator
    from jaxwb.theory import interpolation as ip

    with jax.enable_x64(True):
        pr = ip.random_problem(12, 3, cond=10.0, key=jax.random.key(3))
        want = np.asarray(ip.operator_matrix(pr, lr=0.3, beta=0.6, batch_size=2.0, method=method))
    got = dense_operator(pr.A, pr.probs, pr.weights, 0.3, 0.6, 2.0, method)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
