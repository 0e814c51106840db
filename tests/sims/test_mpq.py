"""mpq result: Config validation, the quick preset end to end (slow: it uses the tiny_lm result's five trained
models, minutes to train on a cold cache) and, fast, the run without the tiny LM (``Config.with_lm=False``) end to
end and the LM branch on an untrained small model; the theory parts on a small config and the bench (slow), and
``quantize_model(..., method=...)`` writing layers the kernels run."""

from __future__ import annotations

import dataclasses
import importlib

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxwb.sims import mpq as sim
from jaxwb.sims.core import harness
from jaxwb.sims.mpq.claims import se_claims, tiny_claims
from jaxwb.sims.mpq.config import METHODS
from tests.sims.expected import assert_config_refuses

R = importlib.import_module("jaxwb.sims.mpq.run")


def test_config_validation():
    bad = [  # each refused with a ValueError naming the field
        {"lm_seeds": 3},
        {"tiny_d": 20},
        {"marg_betas": (0.1,)},
        {"diag_betas": (0.2, 0.1)},
        {"precision": "full"},
        {"mpq_start": "gptq"},
        {"anneal": 2.0},
        {"synth_d": 48},
        {"lm_blocks": (2,)},
        {"lm_blocks": (0, 0)},
    ]
    assert_config_refuses(sim.Config(), [(field, value) for kw in bad for field, value in kw.items()])
    assert sim.Config().quantizes("block1.mlp_out") and sim.Config().lm_scope == "every layer"
    quick = sim.PRESETS["quick"]
    assert quick.quantizes("block0.attn.qkv") and not quick.quantizes("block1.attn.qkv")


def test_one_coordinate_ratio():
    """>= 1 at the exact minimum (a coordinate-wise minimum), < 1 at the worst codeword (a change helps)."""
    from jaxwb.theory import mpq as M

    w, h, book = R.tiny_problem(sim.PRESETS["quick"], key=jax.random.key(0))
    combos, energy = M.codeword_energies(w[0], h, book.grid[0])
    assert R.one_coordinate_ratio(w[0], h, book.grid[0], combos[np.argmin(energy)]) >= 1.0
    assert R.one_coordinate_ratio(w[0], h, book.grid[0], combos[np.argmax(energy)]) < 1.0


@pytest.mark.slow
def test_theory_parts_small():
    """State evolution and the tiny problems on a small config: their claims hold (fast; the LM part is in the
    slow end-to-end test)."""
    cfg = dataclasses.replace(sim.PRESETS["quick"], se_d=150, se_draws=5, se_iters=3, tiny_d=5, tiny_problems=6)
    res = {"se": R.state_evolution_part(cfg, key=jax.random.key(0)), "tiny": R.tiny_part(cfg, key=jax.random.key(1))}
    out = se_claims(res, cfg) + tiny_claims(res, cfg)
    bounds = [c for c in out if c.kind == "bound"]
    assert len(bounds) == 2 and all(c.passed for c in bounds)  # coordinate-wise minimum x 2
    diag = next(c for c in out if c.statement.startswith("diagonal-precision VAMP"))
    assert diag.passed and diag.measured > 1.5, diag  # exact to first order (measured: second order)
    se = out[0]
    assert abs(se.measured) < 0.05, se


@pytest.mark.slow  # the tiny_lm result's five 800-step models: minutes to train on a cold cache, ~25 s warm
def test_quick_preset_end_to_end(tmp_path):
    """The quick preset (the tiny LM, block 0, 3 bits with the rotation): every claim passes, MPQ's two on the tiny
    LM among them (its layer objective below GPTQ + coordinate descent's, its perplexity below GPTQ's)."""
    outcome = harness.execute(sim, preset="quick", seed=0, out_dir=tmp_path, verbose=False)
    failed = [c.statement for c in outcome.claims if not c.as_expected]
    assert not failed, failed
    assert all(c.expected == "pass" for c in outcome.claims)
    lm = [c for c in outcome.claims if "tiny LM" in c.statement]  # the float model vs NumPy; RTN/GPTQ, GPTQ/MPQ x 2
    assert len(lm) == 5 and lm[0].statement.startswith("the float tiny LM"), [c.statement for c in lm]
    assert sum(c.statement.startswith("MPQ beats") for c in lm) == 2
    assert any("NumPy port" in c.statement and "synthetic" not in c.statement for c in outcome.claims)
    for fname in ("data.npz", "claims.json", "manifest.json", "state_evolution.png", "methods.png"):
        assert (tmp_path / fname).stat().st_size > 0, fname


@pytest.mark.slow  # the quick preset's decisions (and `workbench all --quick`); default run: test_smoke.py
def test_without_lm_end_to_end(tmp_path):
    """The run without the tiny LM (synthetic layers in place of its layers): every claim as expected."""
    cfg = dataclasses.replace(sim.PRESETS["quick"], with_lm=False, bits=(4,), rht=(False,))
    outcome = harness.execute(sim, preset="quick", cfg=cfg, seed=0, out_dir=tmp_path, verbose=False)
    failed = [c.statement for c in outcome.claims if not c.as_expected]
    assert not failed, failed
    assert not any("tiny LM" in c.statement for c in outcome.claims)
    assert any(c.statement.startswith("RTN >= GPTQ") and "synthetic" in c.statement for c in outcome.claims)
    assert not (tmp_path / "methods.png").exists()


def test_lm_seed_untrained_small_model():
    """The LM branch (layer inputs, the rotation, RTN / GPTQ / MPQ per layer, GPTQ vs the NumPy port, perplexity)
    on an untrained 1-block d = 32 model: shapes, finite values, GPTQ = the NumPy port, RTN >= GPTQ on average."""
    from jaxwb.models.tiny_lm import LMConfig, TinyLM

    model = TinyLM(LMConfig(d_model=32, n_layers=1, n_heads=2, ctx=16), key=jax.random.key(0))
    cfg = dataclasses.replace(sim.PRESETS["quick"], bits=(4,), rht=(True,), lm_blocks=(0,), vamp_iters=5)
    tok = jax.random.randint(jax.random.key(1), (24, 16), 0, 256)
    x_ev = jax.random.randint(jax.random.key(2), (4, 16), 0, 256)
    out = R.lm_seed(model, cfg, tok, x_ev, jnp.roll(x_ev, -1, axis=1), key=jax.random.key(3))
    obj = out["obj"]["4bit_rht"]
    assert set(obj) == set(METHODS) and set(obj["rtn"]) == {
        "block0.attn.qkv", "block0.attn.out", "block0.mlp_in", "block0.mlp_out"
    }  # fmt: skip
    assert obj["gptq"]["block0.attn.qkv"].shape == (96,)
    assert all(np.isfinite(v) and v > 1 for v in [out["fp"], *out["ppl"]["4bit_rht"].values()])
    assert max(out["ref"]["4bit"].values()) == 0.0
    rtn, gptq = (np.mean([float(np.mean(v)) for v in obj[m].values()]) for m in ("rtn", "gptq"))
    assert gptq < rtn


@pytest.mark.slow
def test_bench_quick_runs():
    rows = sim.bench(quick=True)
    assert len(rows) == 2 and all(r.ours_s > 0 and r.baseline_s > 0 for r in rows)


def _mlp_and_calibration():
    from jaxwb.pallas_kernels import quantize_model  # noqa: F401  (the layers module imports flax)

    k1, k2 = jax.random.split(jax.random.key(0))
    mlp = eqx.nn.MLP(32, 16, 64, depth=1, key=k1)
    x = jax.random.normal(k2, (128, 32))
    hid = jax.vmap(lambda v: jax.nn.relu(mlp.layers[0](v)))(x)
    return mlp, x, {".layers[0]": x, ".layers[1]": hid}


@pytest.mark.slow
def test_quantize_model_default_is_unchanged_and_solvers_write_kernel_layers():
    from jaxwb.pallas_kernels import quantize_model
    from jaxwb.pallas_kernels.quant import nvfp4_dequantize
    from jaxwb.theory import mpq as M

    mlp, x, calib = _mlp_and_calibration()
    base = quantize_model(mlp, "nvfp4")
    same = quantize_model(mlp, "nvfp4", method="rtn")
    for a, b in zip(jax.tree.leaves(base), jax.tree.leaves(same), strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b))
    y0 = jax.vmap(mlp)(x)
    for method in ("gptq", "mpq"):
        q = quantize_model(mlp, "nvfp4", method=method, calibration=calib)
        assert type(q.layers[0]).__name__ == "EqxQuantizedLinear"
        y = jax.vmap(q)(x)  # the kernels' fused W4A16 matmul
        assert bool(jnp.all(jnp.isfinite(y)))
        h = M.proxy_hessian(x)
        err = lambda layer, h=h: float(M.objective(mlp.layers[0].weight, nvfp4_dequantize(layer.weight), h).mean())
        assert err(q.layers[0]) <= err(base.layers[0]) * 1.001, method  # the layer objective improves on RTN
        assert float(jnp.mean((y - y0) ** 2)) < float(jnp.mean((jax.vmap(base)(x) - y0) ** 2)) * 1.5


def test_quantize_model_nnx_and_bad_calls():
    from flax import nnx

    from jaxwb.pallas_kernels import quantize_model

    class Net(nnx.Module):
        def __init__(self):
            self.fc = nnx.Linear(32, 16, rngs=nnx.Rngs(0))

        def __call__(self, v):
            return self.fc(v)

    x = jax.random.normal(jax.random.key(1), (64, 32))
    net = quantize_model(Net(), "mxfp4", method="gptq", calibration={"fc": x})
    assert type(net.fc).__name__ == "NnxQuantizedLinear" and net(x).shape == (64, 16)
    mlp, _, calib = _mlp_and_calibration()
    with pytest.raises(ValueError, match="calibration"):
        quantize_model(mlp, "nvfp4", method="gptq")
    with pytest.raises(ValueError, match="fmt"):
        quantize_model(mlp, "razer", method="gptq", calibration=calib)
    with pytest.raises(ValueError, match="method"):
        quantize_model(mlp, "nvfp4", method="adaround")
    with pytest.raises(ValueError, match="calibration has no inputs"):
        quantize_model(mlp, "nvfp4", method="mpq", calibration={".layers[0]": calib[".layers[0]"]})


def test_numpy_forward_pass_matches_the_tiny_lm():
    """The float64 NumPy forward pass (``reference_np.lm_logits_np``) against ``models.tiny_lm.TinyLM`` on a random
    model: the same logits up to float32 rounding, and a wrong attention scale would be visible."""
    import jax

    from jaxwb.models.tiny_lm import LMConfig, TinyLM
    from jaxwb.sims.mpq.reference_np import float64_params, lm_logits_np

    cfg = LMConfig(d_model=32, n_layers=2, n_heads=4, ctx=16)
    model = TinyLM(cfg, key=jax.random.key(0))
    tokens = np.asarray(jax.random.randint(jax.random.key(1), (16,), 0, cfg.vocab))
    z = np.asarray(model(tokens), np.float64)
    z_np = lm_logits_np(float64_params(model), tokens, n_heads=cfg.n_heads, rope_base=cfg.rope_base)
    assert np.max(np.abs(z - z_np)) < 1e-4 * np.max(np.abs(z_np))


def test_incoherence_in_the_lm_branch_keeps_the_layer_objective():
    """prepared_layer / solve_layer with the two-sided rotation: the dequantized weight is returned in the layer's
    own basis and the per-row objectives (of the rotated layer) sum to the layer's own objective."""
    from jaxwb.theory import mpq as M

    cfg = dataclasses.replace(sim.PRESETS["quick"], vamp_iters=5)
    k1, k2 = jax.random.split(jax.random.key(0))
    w = jax.random.normal(k1, (96, 32))
    x = jax.random.normal(k2, (128, 32)) * jnp.exp(jax.random.normal(k1, (32,)))
    wr, hr, rot = R.prepared_layer(w, x, cfg, key=jax.random.key(3))
    out = R.solve_layer(wr, hr, rot, 3, ("rtn", "gptq", "gptq_bcd", "mpq"), cfg)
    h = M.proxy_hessian(x, damping=cfg.damping)
    for m, (q, o) in out.items():
        assert q.shape == w.shape
        assert float(jnp.sum(o)) == pytest.approx(float(jnp.sum(M.objective(w, q, h))), rel=1e-3), m
    total = {m: float(jnp.sum(o)) for m, (_, o) in out.items()}
    assert total["mpq"] <= total["gptq"] * (1 + 1e-5) and total["gptq_bcd"] <= total["gptq"] * (1 + 1e-5)
