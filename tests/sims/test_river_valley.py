"""River-valley result end to end on the quick preset, plus its benchmark and Config validation."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxwb.sims import river_valley as sim
from jaxwb.sims.core import harness
from jaxwb.sims.core.claims import format_claims
from jaxwb.sims.core.timing import format_bench
from jaxwb.sims.river_valley.run import curved_starts
from tests.sims.expected import assert_config_refuses, assert_outputs


def test_quick_preset_end_to_end(tmp_path):
    outcome = harness.execute(sim, preset="quick", seed=0, out_dir=tmp_path, verbose=False)
    failed = [c.statement for c in outcome.claims if not c.passed]
    assert not failed, failed
    assert {c.kind for c in outcome.claims} == {"check", "bound", "paper"}
    manifest = assert_outputs(tmp_path, sim.NAME)
    assert manifest["claims_passed"] == manifest["claims_total"]
    assert manifest["nonfinite_arrays"] == []
    # the phase diagram shows the mechanism: HB near beta=0.9 at lr > 2/lam stays stable, GD there diverges
    ph = outcome.results["phase"]
    lr, div = np.asarray(ph["lr"]), np.asarray(ph["diverged"])
    above_gd = lr > 2.2 / sim.PRESETS["quick"].lam
    assert div[above_gd, 0].all()
    assert (~div[above_gd & (lr < 3.0 / sim.PRESETS["quick"].lam), -2]).all()
    # the seed matters: another key draws other curved-valley starts (claims are fractions over them)
    cfg = sim.PRESETS["quick"]
    a = np.asarray(curved_starts(cfg, jax.random.split(jax.random.key(0))[1]))
    b = np.asarray(curved_starts(cfg, jax.random.split(jax.random.key(1))[1]))
    assert not np.allclose(a, b)
    np.testing.assert_array_equal(np.asarray(outcome.results["trajectories"]["starts"]), a)


def test_bench_meets_target():
    rows = sim.bench(quick=True)
    assert rows and all(np.isfinite(r.speedup) for r in rows)
    assert rows[0].speedup >= 20, format_bench(rows)


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("lam", -1.0, "lam"),
        ("mu", 200.0, "mu"),
        ("lr_range", (0.1, 0.01), "lr_range"),
        ("boundary_betas", (0.0, 1.2), "boundary_betas"),
        ("n_seeds", 3, "n_seeds"),
        ("speed_steps", 50, "speed_steps"),
        ("curved_a", float("nan"), "curved_a"),
        ("x0", 0.0, "x0"),
        ("start_x_range", (1.0, 0.0), "start_x_range"),
        ("hd_lam_min", 1e3, "hd_lam_min"),
    ],
)
def test_config_validation_names_the_field(field, value, match):
    assert_config_refuses(sim.PRESETS["quick"], [(field, value, match)])


@pytest.mark.slow
def test_full_preset_claims():
    outcome = harness.execute(sim, preset="full", seed=0, write=False, verbose=False)
    assert outcome.passed, format_claims(sim.NAME, outcome.claims)


def test_steady_tolerance_is_one_ulp_of_the_final_position_per_step_over_1_minus_beta():
    import doctest
    import importlib

    claims = importlib.import_module("jaxwb.sims.river_valley.claims")
    assert doctest.testmod(claims).failed == 0
    # |x_T| = 0.361 x 2000 = 722 lies in [512, 1024), where float32's spacing is 2^-14
    assert claims.steady_tolerance(0.361, 0.9, 2000) == pytest.approx(2.0**-14 / (0.361 * 0.1))
    assert claims.steady_tolerance(-0.361, 0.9, 2000) == claims.steady_tolerance(0.361, 0.9, 2000)
