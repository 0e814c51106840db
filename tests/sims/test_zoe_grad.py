"""sims/zoe_grad/: Config validation, the independent hard quantizers, the quick preset end to end."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from jaxwb.sims import zoe_grad as sim
from jaxwb.sims.core import harness
from jaxwb.theory import zoe_grad as zg
from tests.sims.expected import assert_config_refuses, assert_outputs


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sigma", 0.0),
        ("sigma", float("nan")),
        ("mc_seeds", 3),
        ("toy_seeds", 2),
        ("qat_seeds", 4),
        ("int_bits", 1),
        ("kernel_points", 20),
        ("qat_format", "fp8"),
        ("qat_surrogates", ("gaussian",)),
        ("qat_surrogates", ("ste", "cauchy")),
        ("sweep_sigmas", (0.1, -1.0, 0.3)),
        ("d_model", 48),
        ("mc_samples", 0),
        ("qat", 1),
        ("qat_ste_bound", 0.0),
        ("qat_ste_bound", float("inf")),
    ],
)
def test_config_validation_names_the_field(field, value):
    assert_config_refuses(sim.PRESETS["quick"], [(field, value, field.split("_")[0])])


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


@pytest.mark.slow  # the quick preset's decisions (and `workbench all --quick`); default run: test_smoke.py
def test_quick_preset_end_to_end(tmp_path):
    outcome = harness.execute(sim, preset="quick", seed=0, out_dir=tmp_path, verbose=False)
    assert_outputs(tmp_path, sim.NAME)
    assert {c.kind for c in outcome.claims} == {"check", "bound", "paper"}
    # the quick preset runs part 5 (QAT) short: every arm beats float fine-tuning + PTQ; the continuous laws'
    # differences from STE are claimed as the bound the seeds support (Config.qat_ste_bound)
    assert sum("beats float fine-tuning" in c.statement for c in outcome.claims) == len(
        sim.PRESETS["quick"].qat_surrogates
    )
    vs_ste = [c for c in outcome.claims if "vs STE in QAT" in c.statement]
    assert len(vs_ste) == 3 and all(
        c.comparison == "abs" and c.tolerance == sim.PRESETS["quick"].qat_ste_bound for c in vs_ste
    )
    assert not any("beats STE" in c.statement for c in outcome.claims)
    failed = [c.statement for c in outcome.claims if not c.passed]
    assert not failed, failed
    assert all(np.isfinite(c.measured) for c in outcome.claims)


def _random_lm():
    import jax

    from jaxwb.models.tiny_lm import LMConfig, TinyLM

    return TinyLM(LMConfig(d_model=32, n_layers=2, n_heads=2, ctx=16), key=jax.random.key(3))


def test_qat_int_blocks_in_one_call_equal_per_weight_fake_quant():
    """QATModel quantizes all INT block weights in one fake_quant call: forward and surrogate gradient equal
    fake_quant applied weight by weight."""
    import jax

    from jaxwb.models.tiny_lm import linear_weights
    from jaxwb.pallas_kernels.quant.fake_quant import fake_quant

    cfg = sim.PRESETS["quick"]
    ws = {k: w for k, w in linear_weights(_random_lm()).items() if k != "embed"}
    m = sim.qat_wrap(_random_lm(), cfg, "triangular")
    kw = {"fmt": "int", "bits": cfg.qat_bits, "block_size": cfg.qat_block, "sigma": cfg.qat_sigma}

    @jax.jit
    def both(ws):
        one = lambda w: sum(jnp.sum(jnp.sin(v)) for v in m.quantized("triangular", w).values())
        each = lambda w: sum(jnp.sum(jnp.sin(fake_quant(v, surrogate="triangular", **kw))) for v in w.values())
        per = {k: fake_quant(w, surrogate="triangular", **kw) for k, w in ws.items()}
        return m.quantized("triangular", ws), per, jax.grad(one)(ws), jax.grad(each)(ws)

    a, b, g1, g2 = both(ws)
    for k in ws:
        np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]))
        np.testing.assert_allclose(np.asarray(g1[k]), np.asarray(g2[k]), rtol=1e-6, atol=1e-7)  # fusion order


def test_numpy_reference_matches_the_tiny_lm():
    """The NumPy forward of ``reference`` (the QAT check's independent evaluation) on a random 2-layer model."""
    import equinox as eqx

    from jaxwb.models import train as tr
    from jaxwb.sims.mpq.reference_np import float64_params
    from jaxwb.sims.zoe_grad import reference

    model = _random_lm()
    tokens = np.random.default_rng(0).integers(0, 256, 16 * 8 + 1)
    x, y = tr.eval_windows(tokens, 16, 8)
    arch = {"n_heads": model.config.n_heads, "rope_base": model.config.rope_base}
    got = reference.eval_loss_np(float64_params(model), tokens, 16, 8, **arch)
    np.testing.assert_allclose(got, float(eqx.filter_jit(tr.evaluate)(model, x, y)), rtol=2e-6)
    w = np.asarray(model.blocks[0].mlp_in.weight, np.float64)
    q = reference.int_absmax_np(w, 2, 16)
    assert set(np.unique(np.round(q / np.max(np.abs(w.reshape(-1, 16)), axis=1).repeat(16).reshape(w.shape)))) <= {
        -1.0,
        0.0,
        1.0,
    }
