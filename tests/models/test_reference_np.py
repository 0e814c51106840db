"""The float64 NumPy reference of the tiny LM (``jaxwb.models.reference_np``): its logits against ``TinyLM``, its
hand-written gradient against central finite differences and against ``jax.grad`` of the training loss, its windows
against the corpus shifted by one."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import numpy as np
import pytest

from jaxwb.models import reference_np as ref
from jaxwb.models import train as tr
from jaxwb.models.tiny_lm import LMConfig, TinyLM

CFG = LMConfig(d_model=16, n_layers=2, n_heads=2, ctx=8)


def _perturbed(params, rng, scale=0.1):
    """Off the initialisation (norm scales != 1, larger weights): every term of the backward pass matters."""
    return {k: v + scale * rng.normal(size=v.shape) for k, v in params.items()}


@pytest.fixture(scope="module")
def model():
    return TinyLM(CFG, key=jax.random.key(0))


def test_logits_match_the_model_and_a_wrong_attention_scale_shows(model):
    tokens = np.asarray(jax.random.randint(jax.random.key(1), (CFG.ctx,), 0, CFG.vocab))
    p = ref.float64_params(model)
    z = np.asarray(eqx.filter_jit(lambda m, t: m(t))(model, tokens), np.float64)
    z_np = ref.logits(p, tokens, n_heads=CFG.n_heads, rope_base=CFG.rope_base)
    assert np.max(np.abs(z - z_np)) < 1e-5 * np.max(np.abs(z_np))
    # the attention scale 1/sqrt(d h) instead of 1/sqrt(d/h): queries scaled by 1/h
    bad = dict(p)
    for i in range(CFG.n_layers):
        w = p[f"block{i}.attn.qkv"].copy()
        w[: CFG.d_model] /= CFG.n_heads
        bad[f"block{i}.attn.qkv"] = w
    z_bad = ref.logits(bad, tokens, n_heads=CFG.n_heads, rope_base=CFG.rope_base)
    assert np.max(np.abs(z_bad - z_np)) > 100 * np.max(np.abs(z - z_np))


def test_batched_logits_equal_one_window_at_a_time(model):
    rng = np.random.default_rng(0)
    x = rng.integers(0, CFG.vocab, (3, CFG.ctx))
    p = ref.float64_params(model)
    zb = ref.logits(p, x, n_heads=CFG.n_heads, rope_base=CFG.rope_base)
    for i in range(3):
        np.testing.assert_array_equal(zb[i], ref.logits(p, x[i], n_heads=CFG.n_heads, rope_base=CFG.rope_base))


def test_loss_is_the_mean_cross_entropy_over_positions(model):
    """Against a plain log-softmax over every (window, position), and against the model's training loss."""
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, CFG.vocab, (4, CFG.ctx)), rng.integers(0, CFG.vocab, (4, CFG.ctx))
    p = ref.float64_params(model)
    kw = {"n_heads": CFG.n_heads, "rope_base": CFG.rope_base}
    z = ref.logits(p, x, **kw)
    logp = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    by_hand = -np.mean([logp[b, t, y[b, t]] for b in range(4) for t in range(CFG.ctx)])
    loss, _ = ref.loss_and_grad(p, x, y, **kw)
    assert ref.cross_entropy(p, x, y, **kw) == pytest.approx(by_hand, rel=1e-13)
    assert loss == pytest.approx(by_hand, rel=1e-13)
    assert float(tr.loss_fn(model, x, y)) == pytest.approx(by_hand, rel=1e-5)


def test_gradient_matches_central_differences(model):
    rng = np.random.default_rng(2)
    p = _perturbed(ref.float64_params(model), rng)
    x, y = rng.integers(0, CFG.vocab, (3, CFG.ctx)), rng.integers(0, CFG.vocab, (3, CFG.ctx))
    kw = {"n_heads": CFG.n_heads, "rope_base": CFG.rope_base}
    _, g = ref.loss_and_grad(p, x, y, **kw)
    h = 1e-5
    for name in p:
        for _ in range(4):
            idx = tuple(int(rng.integers(0, s)) for s in p[name].shape)
            if name == "embed":  # a row the batch uses, so the input path counts too
                idx = (int(x[0, 1]), idx[1])
            plus, minus = dict(p), dict(p)
            plus[name], minus[name] = p[name].copy(), p[name].copy()
            plus[name][idx] += h
            minus[name][idx] -= h
            fd = (ref.cross_entropy(plus, x, y, **kw) - ref.cross_entropy(minus, x, y, **kw)) / (2 * h)
            assert g[name][idx] == pytest.approx(fd, abs=1e-8), (name, idx)


def test_gradient_matches_jax_grad_of_the_training_loss(model):
    rng = np.random.default_rng(3)
    x, y = rng.integers(0, CFG.vocab, (4, CFG.ctx)), rng.integers(0, CFG.vocab, (4, CFG.ctx))
    _, g = ref.loss_and_grad(ref.float64_params(model), x, y, n_heads=CFG.n_heads, rope_base=CFG.rope_base)
    gj = ref.float64_params(eqx.filter_grad(tr.loss_fn)(model, x, y))
    for name in g:
        scale = np.max(np.abs(g[name]))
        assert np.max(np.abs(g[name] - gj[name])) <= 1e-4 * scale + 1e-9, name


def test_windows_are_the_stream_shifted_by_one():
    tok = np.arange(100) * 7 % 256
    x, y = ref.windows(tok, np.array([0, 5, 90]), 8)
    np.testing.assert_array_equal(x[1], tok[5:13])
    np.testing.assert_array_equal(y[1], tok[6:14])
    np.testing.assert_array_equal(y[:, :-1], x[:, 1:])
    assert x.shape == y.shape == (3, 8) and math.isclose(float(y[2, -1]), float(tok[98]))
