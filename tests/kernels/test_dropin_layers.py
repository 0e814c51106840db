"""Drop-in layers: an equinox and a flax.nnx model swap in the quantized linear and the kernels' attention
with no change to the model's code (``quantize_model`` + ``swap_attention``), and each adapter behaves like
the layer it replaces (call signature, ``key=None``, features attributes, ``eqx.nn.Sequential``, ``vmap``)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxwb.pallas_kernels.attention import AttentionBlockSizes, mask_to_block_lists
from jaxwb.pallas_kernels.attention.layers import (
    EqxSparseAttention,
    NnxSparseAttention,
    make_attention_fn,
    swap_attention,
)
from jaxwb.pallas_kernels.quant import nvfp4_dequantize
from jaxwb.pallas_kernels.quant.layers import EqxQuantizedLinear, NnxQuantizedLinear, QuantizedLinear, quantize_model

L, E, H = 32, 32, 2


class EqxBlock(eqx.Module):
    """A user's equinox model: unbatched, calls its layers the equinox way."""

    attn: eqx.nn.MultiheadAttention
    mlp: eqx.nn.Sequential

    def __init__(self, *, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.attn = eqx.nn.MultiheadAttention(H, E, key=k1)
        self.mlp = eqx.nn.Sequential(
            [eqx.nn.Linear(E, 64, key=k2), eqx.nn.Lambda(jax.nn.gelu), eqx.nn.Linear(64, E, key=k3)]
        )

    def __call__(self, x):  # x [L, E]
        x = x + self.attn(x, x, x)
        return x + jax.vmap(self.mlp)(x)


class NnxBlock(nnx.Module):
    """A user's flax.nnx model: batched, nnx.MultiHeadAttention and nnx.Linear."""

    def __init__(self, *, rngs):
        self.attn = nnx.MultiHeadAttention(H, E, decode=False, rngs=rngs)
        self.up = nnx.Linear(E, 64, rngs=rngs)
        self.down = nnx.Linear(64, E, rngs=rngs)

    def __call__(self, x):  # x [B, L, E]
        x = x + self.attn(x, is_causal=True)
        return x + self.down(jax.nn.gelu(self.up(x)))


def _rel(a, b):
    return float(jnp.linalg.norm(a - b) / jnp.linalg.norm(b))


def test_equinox_model_swaps_with_no_code_change():
    model = EqxBlock(key=jax.random.key(0))
    x = jax.random.normal(jax.random.key(1), (3, L, E))
    want = jax.vmap(model)(x)
    fast = swap_attention(model)  # attention on the kernels, float weights: same function
    assert isinstance(fast.attn, EqxSparseAttention)
    np.testing.assert_allclose(jax.vmap(fast)(x), want, atol=2e-5)
    quant = quantize_model(fast, "nvfp4")
    assert all(isinstance(m, EqxQuantizedLinear) for m in (quant.mlp.layers[0], quant.mlp.layers[2]))
    assert isinstance(quant.attn.query_proj, EqxQuantizedLinear)
    got = eqx.filter_jit(lambda m, x: jax.vmap(m)(x))(quant, x)
    assert got.shape == want.shape and _rel(got, want) < 0.1
    only_mlp = quantize_model(model, "razer", filter=lambda path, lin: ".mlp" in path)
    assert isinstance(only_mlp.attn.query_proj, eqx.nn.Linear)
    assert isinstance(only_mlp.mlp.layers[0], EqxQuantizedLinear)


def test_nnx_model_swaps_with_no_code_change():
    model = NnxBlock(rngs=nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(1), (2, L, E))
    want = model(x)
    swap_attention(model)
    assert model.attn.attention_fn.__qualname__.startswith(make_attention_fn.__name__)  # the kernels' op now
    np.testing.assert_allclose(model(x), want, atol=2e-5)
    quantize_model(model, "nvfp4")
    assert isinstance(model.up, NnxQuantizedLinear) and isinstance(model.attn.query, nnx.LinearGeneral)
    got = nnx.jit(lambda m, x: m(x))(model, x)
    assert _rel(got, want) < 0.1


def test_equinox_quantized_linear_is_a_drop_in():
    lin = eqx.nn.Linear(64, 24, key=jax.random.key(0))
    q = QuantizedLinear.from_linear(lin, "nvfp4")
    assert isinstance(q, EqxQuantizedLinear) and (q.in_features, q.out_features, q.use_bias) == (64, 24, True)
    x = jax.random.normal(jax.random.key(1), (5, 64))
    y = jax.vmap(q)(x)  # unbatched call under vmap
    xb = np.asarray(x.astype(jnp.bfloat16).astype(jnp.float32), np.float64)
    want = xb @ np.asarray(nvfp4_dequantize(q.weight), np.float64).T + np.asarray(lin.bias)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(q(x[0], key=jax.random.key(2)), y[0], rtol=1e-6)
    seq = eqx.nn.Sequential([q, eqx.nn.Lambda(jnp.tanh)])  # Sequential passes key=
    assert seq(x[0]).shape == (24,)


def test_nnx_quantized_linear_is_a_drop_in():
    lin = nnx.Linear(64, 24, rngs=nnx.Rngs(0))
    q = QuantizedLinear.from_linear(lin, "razer")
    assert isinstance(q, NnxQuantizedLinear) and (q.in_features, q.out_features) == (64, 24)
    x = jax.random.normal(jax.random.key(2), (3, 7, 64))
    seq = nnx.Sequential(q, jnp.tanh)
    assert seq(x).shape == (3, 7, 24)
    assert len(jax.tree_util.tree_leaves(nnx.state(q, nnx.Param))) == 1  # only the bias is trainable
    with pytest.raises(TypeError):
        QuantizedLinear()


def test_equinox_attention_from_mha_is_unbatched_and_sparse():
    mha = eqx.nn.MultiheadAttention(H, E, key=jax.random.key(0))
    layer = EqxSparseAttention.from_mha(mha, block_sizes=AttentionBlockSizes(16, 16))
    x = jax.random.normal(jax.random.key(1), (L, E))
    np.testing.assert_allclose(layer(x, x, x), mha(x, x, x), atol=2e-5)
    mask = jnp.tril(jnp.ones((L, L), bool))
    np.testing.assert_allclose(layer(x, x, x, mask), mha(x, x, x, mask), atol=2e-5)
    cnt, idx = mask_to_block_lists(jnp.eye(2, dtype=bool)[None].repeat(H, 0))  # unbatched [H, Qb, cap]
    seg = jnp.arange(L) // 16
    block_diag = seg[:, None] == seg[None, :]
    np.testing.assert_allclose(layer(x, x, x, kv_num_blocks=cnt, kv_indices=idx), mha(x, x, x, block_diag), atol=2e-5)
    own = EqxSparseAttention(H, E, num_kv_heads=1, is_causal=True, key=jax.random.key(3))
    assert jax.vmap(lambda t: own(t, t, t))(jnp.stack([x, x])).shape == (2, L, E)


def test_nnx_attention_fn_dense_and_block_sparse():
    x = jax.random.normal(jax.random.key(1), (2, L, E))
    ref = nnx.MultiHeadAttention(H, E, decode=False, rngs=nnx.Rngs(0))
    dense = nnx.MultiHeadAttention(H, E, decode=False, attention_fn=make_attention_fn(), rngs=nnx.Rngs(0))
    np.testing.assert_allclose(dense(x, is_causal=True), ref(x, is_causal=True), atol=2e-5)
    cnt, idx = mask_to_block_lists(jnp.eye(2, dtype=bool)[None, None].repeat(2, 0).repeat(H, 1))
    sparse = NnxSparseAttention(
        H, E, block_sizes=AttentionBlockSizes(16, 16), kv_num_blocks=cnt, kv_indices=idx, decode=False, rngs=nnx.Rngs(0)
    )
    seg = jnp.arange(L) // 16
    np.testing.assert_allclose(sparse(x), ref(x, mask=(seg[:, None] == seg[None, :])[None, None]), atol=2e-5)
    with pytest.raises(ValueError, match="dropout"):
        make_attention_fn()(x[..., None], x[..., None], x[..., None], dropout_rate=0.1)
