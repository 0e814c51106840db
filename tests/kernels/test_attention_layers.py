"""The flax.nnx and equinox attention layers run the ops: dense == block-sparse with a full list, and the
layer output equals the same maths written with jax.nn.dot_product_attention."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pallas_kernels.attention import mask_to_block_lists
from pallas_kernels.attention.layers import EqxSparseAttention, NnxSparseAttention

B, L, E, H, HKV, D = 2, 32, 24, 4, 2, 16


def _full_lists():
    return mask_to_block_lists(jnp.ones((B, H, L // 16, L // 16), bool))


def test_nnx_layer():
    from flax import nnx

    layer = NnxSparseAttention(E, H, num_kv_heads=HKV, head_dim=D, causal=True, rngs=nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(1), (B, L, E))
    dense = layer(x)
    sparse = layer(x, *_full_lists())
    q = layer.q(x).reshape(B, L, H, D)
    k = layer.k(x).reshape(B, L, HKV, D)
    v = layer.v(x).reshape(B, L, HKV, D)
    want = layer.o(jax.nn.dot_product_attention(q, k, v, is_causal=True).reshape(B, L, H * D))
    np.testing.assert_allclose(dense, want, atol=1e-5)
    np.testing.assert_allclose(sparse, want, atol=1e-5)


def test_equinox_layer():
    layer = EqxSparseAttention(E, H, num_kv_heads=HKV, head_dim=D, key=jax.random.key(0))
    x = jax.random.normal(jax.random.key(1), (B, L, E))
    cnt, idx = mask_to_block_lists(jnp.eye(L // 16, dtype=bool)[None, None].repeat(B, 0).repeat(H, 1))
    out = jax.jit(lambda m, x, c, i: m(x, c, i))(layer, x, cnt, idx)  # block-diagonal: attend within blocks
    q = (x @ layer.wq).reshape(B, L, H, D)
    k = (x @ layer.wk).reshape(B, L, HKV, D)
    v = (x @ layer.wv).reshape(B, L, HKV, D)
    seg = jnp.arange(L) // 16
    mask = (seg[:, None] == seg[None, :])[None, None]
    want = jax.nn.dot_product_attention(q, k, v, mask=mask).reshape(B, L, H * D) @ layer.wo
    np.testing.assert_allclose(out, want, atol=1e-5)
