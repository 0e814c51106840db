"""Tiny LM under 4-bit weights: the fake-quantizers, the quick preset end to end."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxwb.sims import tiny_lm as sim
from jaxwb.sims.core import harness
from jaxwb.sims.tiny_lm.config import FORMATS
from jaxwb.sims.tiny_lm.quant import bits_per_weight, fake_quantize
from jaxwb.sims.tiny_lm.tables import layer_table, summary
from tests.sims.expected import assert_as_expected, assert_outputs


@pytest.fixture(scope="module")
def weights():
    return jax.random.normal(jax.random.key(0), (64, 128)) * 0.05


def test_fake_quantize_errors_are_ordered(weights):
    err = {
        f: float(
            np.sum((np.asarray(fake_quantize(weights, f, key=jax.random.key(1))) - weights) ** 2)
            / np.sum(np.asarray(weights) ** 2)
        )
        for f in FORMATS
    }
    assert all(0 < e < 0.05 for e in err.values()), err
    assert err["razer"] < err["nvfp4"] < err["mxfp4"], err  # RaZeR's extra values, MXFP4's coarse scales
    with pytest.raises(ValueError, match="fmt"):
        fake_quantize(weights, "int4", key=jax.random.key(0))
    assert bits_per_weight("rht4", 32) == 5.0 and bits_per_weight("rht4", 128) == 4.5


def test_config_validation():
    with pytest.raises(ValueError, match="rht_group"):
        sim.Config(rht_group=48)
    with pytest.raises(ValueError, match="d_models"):
        sim.Config(d_models=(48,), lrs=(1e-2,), n_heads=4)
    with pytest.raises(ValueError, match="lrs"):
        sim.Config(d_models=(64, 128), lrs=(1e-2,))
    with pytest.raises(ValueError, match="seeds"):
        sim.Config(seeds=1)


def test_outlier_channels_keep_the_float_model_and_w4a4_quantizes_activations():
    """x8 columns / 8 gains is exact in float32 (powers of two); W4A4 differs from W4A16; RaZeR's activation
    quantizer is used for RaZeR."""
    from jaxwb.models.tiny_lm import LMConfig, TinyLM
    from jaxwb.sims.tiny_lm import quant

    m = TinyLM(LMConfig(d_model=32, n_layers=1, n_heads=2, ctx=16), key=jax.random.key(0))
    t = jnp.arange(12)
    ch = quant.outlier_channels(32, 4, key=jax.random.key(1))
    mo = quant.with_outlier_channels(m, ch, 8.0)
    np.testing.assert_array_equal(np.asarray(mo(t)), np.asarray(m(t)))
    col = np.abs(np.asarray(mo.blocks[0].mlp_in.weight)).max(axis=0)
    assert set(np.argsort(col)[-4:]) == set(np.asarray(ch).tolist())
    w = quant.quantized_model(m, "razer", key=jax.random.key(0))
    wa = quant.quantized_model(m, "razer", key=jax.random.key(0), activations=True)
    assert wa.blocks[0].mlp_in.fmt == "razer_activation"
    assert float(jnp.abs(wa(t) - w(t)).max()) > 0
    with pytest.raises(ValueError, match="activations"):
        quant.quantized_model(m, "rht4", key=jax.random.key(0), activations=True)


@pytest.mark.slow  # five 800-step trainings on a cold model cache (docs/papers/tiny_lm.md, "Presets")
def test_quick_preset_end_to_end(tmp_path):
    outcome = harness.execute(sim, preset="quick", seed=0, out_dir=tmp_path, verbose=False)
    assert_outputs(tmp_path, sim.NAME)
    cfg = sim.PRESETS["quick"]
    # the clean quick run decides every claim as the full preset does: passes, and known disagreements fail
    assert_as_expected(sim.NAME, outcome.claims)
    per_layer = lambda c: c.statement.startswith("weight error")  # an interval over layers, not seeds
    assert all(c.n_seeds >= 5 for c in outcome.claims if c.ci > 0 and not per_layer(c))
    assert all(np.isfinite(c.measured) for c in outcome.claims)
    assert all(c.kind in ("check", "bound", "paper") for c in outcome.claims)
    # identity (was a claim): the float32 engine against itself has TV exactly 0 under the logit estimator
    assert float(outcome.results["engines"]["float32"]["tv"]) == 0.0
    r = outcome.results
    fp = np.asarray(r["fp_ppl"])
    assert fp.shape == (len(cfg.d_models), cfg.seeds)
    for f in FORMATS:
        p = np.asarray(r["ppl"][f])
        assert np.isfinite(p).all() and (0.95 * fp < p).all() and (p < 1.3 * fp).all(), (f, fp, p)
    for f in FORMATS:  # RaZeR's weight error is the smallest in every layer
        if f != "razer":
            assert (np.asarray(r["layer_rel_mse"]["razer"]) < np.asarray(r["layer_rel_mse"][f])).all()
    assert "layer" in layer_table(r) and "RaZeR fraction" in summary(r, cfg)


def test_bootstrap_ci_is_scipy_percentile_and_matches_the_hand_written_one():
    """claims.bootstrap_ci is scipy.stats.bootstrap (percentile, seed 0); on 10 reductions it agrees with the
    earlier hand-written percentile bootstrap (same seed, 2000 resamples) to within resampling noise."""
    from scipy import stats

    from jaxwb.sims.core.claims import bootstrap_ci

    r = np.array([0.62, 0.31, 0.55, 0.48, 0.29, 0.51, 0.44, 0.39, 0.58, 0.52])
    est, half, n = bootstrap_ci(r)
    ci = stats.bootstrap(
        (np.arange(10),), lambda i: np.mean(r[i]), vectorized=False, n_resamples=2000, method="percentile",
        random_state=np.random.default_rng(0),
    ).confidence_interval  # fmt: skip
    assert (est, n) == (pytest.approx(r.mean()), 10) and half == pytest.approx(max(est - ci.low, ci.high - est))
    idx = np.random.default_rng(0).integers(0, 10, size=(2000, 10))
    lo, hi = np.quantile(r[idx].mean(axis=1), [0.025, 0.975])
    assert half == pytest.approx(max(est - lo, hi - est), rel=0.1)


def test_training_loop_lowers_the_loss():
    """The real AdamW loop (``models.train.trained_model`` without the cache) on a small model: the training loss
    falls (the end-to-end quick run, which trains the study's models, is ``slow``)."""
    from jaxwb.models import train as tr
    from jaxwb.models.tiny_lm import LMConfig

    mc = LMConfig(d_model=32, n_layers=1, n_heads=2, ctx=16)
    tc = tr.TrainConfig(steps=40, batch_size=8, lr=1e-2, warmup=5, corpus_bytes=50_000)
    _, losses = tr.trained_model(mc, tc, use_cache=False)
    losses = np.asarray(losses)
    assert losses.shape == (40,) and np.isfinite(losses).all()
    assert losses[-5:].mean() < losses[:5].mean() - 0.5


def test_rht_numpy_reference_matches_the_kernel_and_sees_a_wrong_cell():
    """The float64 NumPy RHT reference (sims.tiny_lm.reference) against the kernel's XLA path on random groups,
    and a decoder that puts the top cell's midpoint above 1 is visible in it."""
    from jaxwb.pallas_kernels.quant.rht import rht_dequantize, rht_quantize
    from jaxwb.sims.tiny_lm import reference

    w = jax.random.normal(jax.random.PRNGKey(3), (48, 64)) * 0.05
    key = jax.random.PRNGKey(7)
    wh = rht_dequantize(rht_quantize(w.reshape(48, 1, 64), key=key, bits=4, scaling="mse")).reshape(w.shape)
    kernel = float(np.sum((np.asarray(wh) - np.asarray(w)) ** 2) / np.sum(np.asarray(w) ** 2))
    ref = reference.rht_rel_mse_reference(w, key, group=64)
    assert abs(kernel / ref - 1.0) < 1e-5
    assert 0.005 < ref < 0.02  # about (pi sqrt 3 / 2) 4^-4 (N/(N-1))^2 = 0.012 for Gaussian weights


def test_code_mismatches_is_zero_for_the_fast_paths_and_refuses_an_unknown_format():
    from jaxwb.sims.tiny_lm import reference

    x = jax.random.normal(jax.random.PRNGKey(0), (8, 64))
    for fmt in reference.BLOCK_FORMATS:
        assert reference.code_mismatches(x, fmt, per_row=fmt.endswith("activation")) == 0
    with pytest.raises(ValueError, match="fmt"):
        reference.code_mismatches(x, "int4")


def test_numpy_forward_reproduces_every_variant_and_sees_a_wrong_block():
    """The float64 NumPy forward of ``reference.variant_loss_np`` against the study's models (float, W4A16 drop-in
    layers, W4A4) on a random small model: within the claim's tolerance; a weight round trip off in one block per
    row moves it far outside."""
    from jaxwb.models import train as tr
    from jaxwb.models.tiny_lm import LMConfig, TinyLM
    from jaxwb.sims.tiny_lm import quant, reference
    from jaxwb.sims.tiny_lm.claims import LOSS_REFERENCE_RTOL
    from jaxwb.theory.quantization import fp4_formats

    m = TinyLM(LMConfig(d_model=32, n_layers=1, n_heads=2, ctx=16), key=jax.random.key(0))
    x = jax.random.randint(jax.random.key(1), (4, 16), 0, 256)
    y = jnp.roll(x, -1, axis=1)
    for v in reference.VARIANTS:
        fmt = v.removeprefix("wa_")
        mv = m if v == "fp" else quant.quantized_model(m, fmt, key=jax.random.key(0), activations=v.startswith("wa_"))
        got, ref = float(tr.loss_fn(mv, x, y)), reference.variant_loss_np(m, v, np.asarray(x), np.asarray(y))
        assert abs(got / ref - 1) < LOSS_REFERENCE_RTOL, (v, got, ref)
    with pytest.raises(ValueError, match="variant"):
        reference.variant_loss_np(m, "rht4", np.asarray(x), np.asarray(y))
    rt = fp4_formats.nvfp4_roundtrip
    try:  # the reference's NVFP4 round trip with the last block of every row scaled by 1.5
        fp4_formats.nvfp4_roundtrip = lambda w: rt(w) * np.repeat(np.r_[np.ones(w.shape[-1] // 16 - 1), 1.5], 16)
        off = reference.variant_loss_np(m, "nvfp4", np.asarray(x), np.asarray(y))
    finally:
        fp4_formats.nvfp4_roundtrip = rt
    got = float(tr.loss_fn(quant.quantized_model(m, "nvfp4", key=jax.random.key(0)), x, y))
    assert abs(got / off - 1) > 10 * LOSS_REFERENCE_RTOL


def test_rht_group_errors_leave_out_level_ties_only():
    """``reference.rht_group_errors``: the kernel's RHT-4 against the float64 reference group by group is at float32
    rounding away from level ties; a decoder one level off in one group is seen; ties are a small fraction."""
    from jaxwb.sims.tiny_lm import quant, reference

    w = jax.random.normal(jax.random.key(3), (96, 128)) * 0.05
    key = jax.random.key(7)
    w_hat = quant.fake_quantize(w, "rht4", key=key, rht_group=64)
    err, ties, groups = reference.rht_group_errors(w, w_hat, key, group=64)
    assert groups == 192 and ties <= 3 and err < 1e-5
    bad = np.asarray(w_hat).copy()
    bad[5, :64] *= 1.02  # one group's scale 2% off
    assert reference.rht_group_errors(w, bad, key, group=64)[0] > 1e-2


def test_outlier_channels_per_input_keep_the_float_model():
    """One independent draw of outlier channels per normed layer input: the float model is unchanged, each
    input's weight columns carry its own channels."""
    from jaxwb.models.tiny_lm import LMConfig, TinyLM
    from jaxwb.sims.tiny_lm import quant

    m = TinyLM(LMConfig(d_model=32, n_layers=2, n_heads=2, ctx=16), key=jax.random.key(0))
    ch = quant.outlier_channels(32, 4, key=jax.random.key(1), inputs=4)
    assert ch.shape == (4, 4) and all(len(set(np.asarray(r).tolist())) == 4 for r in ch)
    mo = quant.with_outlier_channels(m, ch, 8.0)
    t = jnp.arange(12)
    np.testing.assert_array_equal(np.asarray(mo(t)), np.asarray(m(t)))
    for i, b in enumerate(mo.blocks):
        for row, lin in ((2 * i, b.attn.qkv), (2 * i + 1, b.mlp_in)):
            col = np.abs(np.asarray(lin.weight)).max(axis=0)
            assert set(np.argsort(col)[-4:]) == set(np.asarray(ch[row]).tolist())
    with pytest.raises(ValueError, match="channels"):
        quant.with_outlier_channels(m, ch[:3], 8.0)
