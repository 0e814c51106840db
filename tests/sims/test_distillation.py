"""Consistency distillation and memorisation: the quick preset end to end, what holds by construction, Config
validation."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxwb.sims import distillation as sim
from jaxwb.sims.core import harness
from jaxwb.sims.distillation.run import checkpoint_steps, distill_time, generation_configs, grid_angles, timescale_seed
from jaxwb.theory import distillation as dm
from tests.sims.expected import assert_as_expected, assert_config_refuses, assert_outputs


@pytest.mark.slow  # the quick preset's decisions (and `workbench all --quick`); default run: test_smoke.py
def test_quick_preset_end_to_end(tmp_path):
    outcome = harness.execute(sim, preset="quick", seed=0, out_dir=tmp_path, verbose=False)
    assert_as_expected(sim.NAME, outcome.claims)
    assert {c.kind for c in outcome.claims} == {"check", "bound", "paper"}
    assert any(c.expected == "fail" for c in outcome.claims)
    assert assert_outputs(tmp_path, sim.NAME)["nonfinite_arrays"] == []
    g = outcome.results["generation"]
    # the mechanism at a glance: the memorising teacher copies, its distilled student far less
    assert g["small_n"]["teacher"]["copy"][:, -1].mean() > 5 * g["small_n"]["student"]["copy"].mean()


def test_generation_configs_and_grids():
    cfg = sim.PRESETS["quick"]
    assert generation_configs(cfg) == {
        "small_n": (cfg.n_gen[0], cfg.p),
        "large_n": (cfg.n_gen[-1], cfg.p),
        "small_p": (cfg.n_gen[0], cfg.p_small),
    }
    th = grid_angles(cfg)
    assert th.shape == (cfg.n_theta,) and np.all(np.diff(th) > 0)
    steps = checkpoint_steps(cfg)
    assert steps[0] == 1.0 and np.isclose(steps[-1], 10**cfg.log10_steps_max)


def test_stochastic_distillation_is_unbiased_for_the_expected_student(x64):
    """E[A_S(K)] = A_T (I - (I - lr U_n)^K): the SGD student averaged over many independent runs (vmapped) lies
    within its Monte Carlo error of ``dm.distill_solution`` (the reconstruction's eq. student)."""
    rf = dm.init_features(3, 16, key=jax.random.key(0))
    X = jax.random.normal(jax.random.key(1), (5, 3))
    theta = 0.9
    A_T = jax.random.normal(jax.random.key(2), (3, 16))
    fn = functools.partial(distill_time, rf=rf, X=X, steps=40, batch=8, lr=1.0 / 16)
    runs = jax.vmap(lambda k: fn(A_T, theta, 0.8, k))(jax.random.split(jax.random.key(3), 400))
    U, _ = dm.train_moments(rf, X, dm.time_of_angle(theta))
    expected = np.asarray(dm.distill_solution(A_T, U, steps=40, lr=1.0 / 16))
    mean, se = np.asarray(runs.mean(0)), np.asarray(runs.std(0)) / np.sqrt(400)
    assert np.max(np.abs(mean - expected) / (se + 1e-12)) < 5.0


def test_timescale_n_matches_a_training_set_without_padding(x64):
    """Padding with zero weights changes nothing: the first n rows of X with weights = U, V of those n rows."""
    rf = dm.init_features(4, 12, key=jax.random.key(0))
    X = jax.random.normal(jax.random.key(1), (9, 4))
    w = (jnp.arange(9) < 5).astype(X.dtype)
    U1, V1 = dm.train_moments(rf, X, 0.3, w)
    U2, V2 = dm.train_moments(rf, X[:5], 0.3)
    np.testing.assert_allclose(np.asarray(U1), np.asarray(U2), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(V1), np.asarray(V2), rtol=1e-12, atol=1e-14)


def test_seed_changes_the_draws():
    cfg = sim.PRESETS["quick"]
    with jax.enable_x64(True):
        a = timescale_seed(jax.random.key(0), p=cfg.p_grid[0], cfg=cfg)
        b = timescale_seed(jax.random.key(1), p=cfg.p_grid[0], cfg=cfg)
    assert not np.allclose(np.asarray(a["lam_pop"]), np.asarray(b["lam_pop"]))


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("d", 0, "d must be a positive integer"),
        ("n_seeds", 3, "n_seeds must be >= 5"),
        ("timescale_seeds", 4, "timescale_seeds must be >= 5"),
        ("lr_times_p", 1.5, "lr_times_p must be <= 1"),
        ("t_fixed", -0.1, "t_fixed must be > 0"),
        ("n_grid", (16, 8), "n_grid must be strictly increasing"),
        ("p_grid", (64,), "p_grid must hold at least two"),
        ("p_small", 10_000, "p_small must be < p"),
        ("gen_level", 1.5, "gen_level must be in"),
        ("theta_range", (1.0, 0.5), "theta_range must be"),
        ("n_theta", 2, "n_theta must be >= 3"),
        ("tau_gen", 7.0, "tau_gen must be one of teacher_checkpoints"),
        ("distill_steps", 0, "distill_steps must be a positive integer"),
        ("teacher_checkpoints", (10.0, 5.0, 100.0), "teacher_checkpoints must be"),
        ("n_samples", 8, "n_samples must be >= 16"),
    ],
)
def test_config_validation_names_the_field(field, value, match):
    assert_config_refuses(sim.PRESETS["quick"], [(field, value, match)])


@pytest.mark.slow
def test_full_preset_claims():
    assert_as_expected(sim.NAME, harness.execute(sim, preset="full", seed=0, write=False, verbose=False).claims)
