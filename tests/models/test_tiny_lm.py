"""The tiny LM: tokenizer round trip, shipped corpus, shapes, causal mask, RoPE, dtype casting, training."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxwb.models import corpus, tokenizer
from jaxwb.models import train as tr
from jaxwb.models.tiny_lm import (
    LMConfig,
    TinyLM,
    cast,
    linear_weights,
    num_params,
    replace_linear_weights,
    rope,
    sample,
)

CFG = LMConfig(d_model=32, n_layers=1, n_heads=2, ctx=16)
fwd = eqx.filter_jit(lambda m, t: m(t))  # eager dispatch of every small op is slow on a busy machine


@pytest.fixture(scope="module")
def model():
    return TinyLM(CFG, key=jax.random.key(0))


@given(st.text(max_size=200))
def test_tokenizer_round_trips(text):
    toks = tokenizer.encode(text)
    assert toks.dtype == np.int32 and toks.min(initial=0) >= 0 and toks.max(initial=0) < tokenizer.VOCAB_SIZE
    assert tokenizer.decode(toks) == text


def test_tokenizer_rejects_bad_input():
    with pytest.raises(ValueError, match="tokens"):
        tokenizer.decode([300])
    with pytest.raises(ValueError, match="text"):
        tokenizer.encode(b"bytes")


def test_corpus_is_shipped_and_deterministic():
    text = corpus.load_text()
    assert len(text) > 1_000_000 and text.isascii() and text.startswith("# ---- module textwrap")
    assert corpus.CORPUS_FILE.stat().st_size < 2_000_000
    train, val = corpus.load_corpus(max_bytes=50_000)
    assert len(train) + len(val) == 50_000 and len(val) == 5_000
    assert 2.0 < corpus.unigram_entropy(train, val) < np.log(256)


def test_config_validation():
    with pytest.raises(ValueError, match="d_model"):
        LMConfig(d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="ctx"):
        LMConfig(ctx=0)


def test_shapes_dtypes_and_params(model):
    logits = fwd(model, jnp.arange(10, dtype=jnp.int32))
    assert logits.shape == (10, 256) and logits.dtype == jnp.float32
    assert eqx.filter_jit(jax.vmap(model))(jnp.zeros((3, CFG.ctx), jnp.int32)).shape == (3, CFG.ctx, 256)
    d = CFG.d_model
    assert num_params(model) == 256 * d + CFG.n_layers * (12 * d * d + 2 * d) + d
    with pytest.raises(ValueError, match="ctx"):
        model(jnp.zeros(CFG.ctx + 1, jnp.int32))
    b = cast(model, jnp.bfloat16)
    lb = fwd(b, jnp.arange(8))
    assert b.embed.dtype == jnp.bfloat16 and lb.dtype == jnp.float32
    np.testing.assert_allclose(lb, fwd(model, jnp.arange(8)), atol=0.1)


def test_causal_mask(model):
    """Changing token j changes no logit at positions < j, and does change position j."""
    toks = jax.random.randint(jax.random.key(1), (CFG.ctx,), 0, 256)
    base = fwd(model, toks)
    for j in (0, 5, CFG.ctx - 1):
        other = fwd(model, toks.at[j].set((toks[j] + 7) % 256))
        np.testing.assert_array_equal(other[:j], base[:j])
        assert np.abs(np.asarray(other[j] - base[j])).max() > 1e-4


def test_rope_is_a_rotation_with_relative_phase():
    x = jax.random.normal(jax.random.key(2), (6, 2, 8))
    y = rope(x, 10000.0)
    np.testing.assert_allclose(jnp.linalg.norm(y, axis=-1), jnp.linalg.norm(x, axis=-1), rtol=1e-5)
    q = jnp.broadcast_to(x[:1], x.shape)  # the same vector at every position
    r = rope(q, 10000.0)
    # <R_s q, R_t q> depends on t - s only
    dots = jnp.einsum("thd,shd->hts", r, r)
    np.testing.assert_allclose(dots[:, 1, 0], dots[:, 4, 3], rtol=1e-4)


def test_linear_weights_round_trip(model):
    w = linear_weights(model)
    assert set(w) == {"embed", "block0.attn.qkv", "block0.attn.out", "block0.mlp_in", "block0.mlp_out"}
    m2 = replace_linear_weights(model, {k: 2 * a for k, a in w.items()})
    for k, a in linear_weights(m2).items():
        np.testing.assert_array_equal(a, 2 * w[k])
    with pytest.raises(ValueError, match="unknown"):
        replace_linear_weights(model, {"nope": w["embed"]})


def test_model_learns_below_unigram_baseline(tmp_path, monkeypatch):
    """A few hundred AdamW steps beat the unigram model on held-out text; the cache returns the same weights."""
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    mc = LMConfig(d_model=32, n_layers=1, n_heads=2, ctx=32)
    tc = tr.TrainConfig(steps=150, batch_size=16, lr=1e-2, warmup=10, corpus_bytes=200_000)
    m, losses = tr.trained_model(mc, tc)
    train, val = corpus.load_corpus(max_bytes=tc.corpus_bytes)
    x, y = tr.eval_windows(val, mc.ctx, 64)
    val_loss = float(tr.evaluate(m, x, y))
    assert val_loss < corpus.unigram_entropy(train, val) - 0.1
    assert losses.shape == (150,) and float(losses[-20:].mean()) < float(losses[:5].mean()) - 1.0
    m2, _ = tr.trained_model(mc, tc)  # from the cache
    assert float(tr.evaluate(m2, x, y)) == val_loss
    out = sample(m, tokenizer.encode("def "), 20, key=jax.random.key(0))
    assert out.shape == (24,) and tokenizer.decode(out).startswith("def ")


def test_divergence_is_flagged_not_propagated(model):
    data = jnp.asarray(corpus.load_corpus(max_bytes=20_000)[0])
    run = eqx.filter_jit(lambda m: tr.train_scan(m, optax.sgd(1e4), data, key=jax.random.key(0), steps=8, batch_size=4))
    state, losses = run(model)
    assert bool(state[2]) and np.isnan(np.asarray(losses[-1]))
    assert all(np.isfinite(np.asarray(a)).all() for a in jax.tree.leaves(state[0]) if hasattr(a, "dtype"))
