"""sims/zoe_grad/: Config validation, the independent hard quantizers, the quick preset end to end."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest

from jaxwb.sims import zoe_grad as sim
from jaxwb.sims.core import harness
from jaxwb.theory import zoe_grad as zg


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sigma", 0.0),
        ("sigma", float("nan")),
        ("mc_seeds", 3),
        ("toy_seeds", 2),
        ("qat_seeds", 2),
        ("int_bits", 1),
        ("kernel_points", 20),
        ("qat_format", "fp8"),
        ("qat_surrogates", ("gaussian",)),
        ("qat_surrogates", ("ste", "cauchy")),
        ("sweep_sigmas", (0.1, -1.0, 0.3)),
        ("d_model", 48),
        ("mc_samples", 0),
        ("qat", 1),
    ],
)
def test_config_validation_names_the_field(field, value):
    with pytest.raises(ValueError, match=field.split("_")[0]):
        dataclasses.replace(sim.PRESETS["quick"], **{field: value})


def test_hard_quantizers_agree_with_theory_levels():
    for grid in sim.GRIDS:
        z = sim.x_grid(grid, 3, 1001) + 1e-3
        np.testing.assert_array_equal(
            np.asarray(sim.hard_quantizer(grid, 3)(z)), np.asarray(zg.quantize(z, sim.grid_levels(grid, 3)))
        )


def test_kernel_blocks_pin_the_scale():
    from jaxwb.pallas_kernels.quant.fake_quant import quantize_with_scale

    _, scale, _ = quantize_with_scale(sim.kernel_blocks(30), fmt="nvfp4")
    np.testing.assert_allclose(np.asarray(scale), sim.KERNEL_ANCHOR_SCALE, rtol=1e-3)


def test_quick_preset_end_to_end(tmp_path):
    outcome = harness.execute(sim, preset="quick", seed=0, out_dir=tmp_path, verbose=False)
    for fname in (
        "estimators.png",
        "sigma_sweep.png",
        "kernel_check.png",
        "convergence.png",
        "claims.json",
        "data.npz",
    ):
        assert (tmp_path / fname).stat().st_size > 0, fname
    # the quick preset skips part 5 (QAT: its paper claims are decided on the full preset only; see
    # test_qat_smoke for its code path)
    assert not (tmp_path / "qat.png").exists()
    assert {c.kind for c in outcome.claims} == {"check", "bound", "paper"}
    failed = [c.statement for c in outcome.claims if not c.passed]
    assert not failed, failed
    assert all(np.isfinite(c.measured) for c in outcome.claims)


@pytest.mark.slow
def test_qat_smoke():
    """Part 5 at the old quick size (3 seeds x 20 steps, STE and Gaussian): runs and stays finite. A smoke
    run: the paper claims are too noisy to decide here."""
    import jax

    cfg = dataclasses.replace(sim.PRESETS["quick"], qat=True)
    q = sim.run_qat(cfg, jax.random.key(0))
    assert not bool(jnp.any(q["diverged"]))
    for arm in ("fp", "ptq", "fp_ptq", *cfg.qat_surrogates):
        assert np.all(np.isfinite(np.asarray(q[arm]))), arm
