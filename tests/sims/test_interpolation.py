"""End-to-end test of sims/interpolation.py on the quick preset, plus the bench's NumPy baseline."""

from __future__ import annotations

import json

import numpy as np

from sims import interpolation as sim
from sims.core.harness import execute


def test_quick_preset_end_to_end(tmp_path):
    outcome = execute(sim, preset="quick", out_dir=tmp_path, verbose=False)
    failed = [c.statement for c in outcome.claims if not c.passed]
    assert not failed, failed
    assert len(outcome.claims) >= 10
    for name in ("iterations_vs_batch", "speedup", "rate_check", "momentum_rule", "kaczmarz_cd"):
        assert (tmp_path / f"{name}.png").exists()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["nonfinite_arrays"] == []
    assert manifest["claims_passed"] == manifest["claims_total"]
    assert np.all(np.asarray(outcome.results["mc"]["diverged_fraction"]) == 0)


def test_numpy_baseline_agrees_with_theory():
    """The bench's NumPy loop is an honest baseline: its mean error follows the exact recursion (15%, 200
    seeds)."""
    import jax
    import jax.numpy as jnp

    from theory import interpolation as ip

    with jax.enable_x64(True):
        pr = ip.random_problem(30, 4, cond=20.0, sampling="norm", key=jax.random.key(0))
        exact = np.asarray(
            ip.expected_sq_error(ip.noise_kernel(pr), -pr.x_star, lr=0.5, beta=0.5, batch_size=2, steps=20)
        )
    npp = [np.asarray(a, np.float64) for a in (pr.A, pr.b, pr.x_star, pr.probs, pr.weights)]
    mc = sim._numpy_mc(*npp, 0.5, 0.5, 2, 20, 400, np.random.default_rng(0)).mean(0)
    np.testing.assert_allclose(mc[::5], exact[::5], rtol=0.15)
    del jnp
