"""Thin ``flax.nnx`` and ``equinox`` multi-head attention layers over the functional ops.

Both take ``x [B, L, E]`` and optional FlexAttention-style block lists (``kv_num_blocks [B, H, Qb]``,
``kv_indices [B, H, Qb, cap]``): with lists the layer runs ``block_sparse_attention``, without it runs
``flash_attention``. GQA via ``num_kv_heads``. Not imported by ``pallas_kernels.attention`` (keeps the
package on jax alone); import from ``pallas_kernels.attention.layers``.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from flax import nnx

from pallas_kernels.attention.ops import block_sparse_attention, flash_attention


def _attend(q, k, v, kv_num_blocks, kv_indices, *, causal, block_q, block_k, implementation):
    if kv_indices is None:
        from pallas_kernels.attention.kernel import BlockSizes

        return flash_attention(
            q, k, v, causal=causal, implementation=implementation, block_sizes=BlockSizes(block_q, block_k)
        )
    return block_sparse_attention(
        q,
        k,
        v,
        kv_num_blocks,
        kv_indices,
        block_q=block_q,
        block_k=block_k,
        causal=causal,
        implementation=implementation,
    )


class NnxSparseAttention(nnx.Module):
    """``flax.nnx`` attention: ``out = W_o attn(W_q x, W_k x, W_v x)`` (dense or block-sparse)."""

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        *,
        num_kv_heads: int | None = None,
        head_dim: int = 16,
        block_q: int = 16,
        block_k: int = 16,
        causal: bool = False,
        implementation: str | None = None,
        rngs: nnx.Rngs,
    ):
        self.h, self.hkv, self.d = num_heads, num_kv_heads or num_heads, head_dim
        if self.h % self.hkv:
            raise ValueError(f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({self.hkv})")
        self.q = nnx.Linear(embed_dim, self.h * head_dim, use_bias=False, rngs=rngs)
        self.k = nnx.Linear(embed_dim, self.hkv * head_dim, use_bias=False, rngs=rngs)
        self.v = nnx.Linear(embed_dim, self.hkv * head_dim, use_bias=False, rngs=rngs)
        self.o = nnx.Linear(self.h * head_dim, embed_dim, use_bias=False, rngs=rngs)
        self.block_q, self.block_k, self.causal, self.implementation = (
            block_q,
            block_k,
            causal,
            implementation,
        )

    def __call__(self, x, kv_num_blocks=None, kv_indices=None):
        B, L, _ = x.shape
        q = self.q(x).reshape(B, L, self.h, self.d)
        k = self.k(x).reshape(B, L, self.hkv, self.d)
        v = self.v(x).reshape(B, L, self.hkv, self.d)
        o = _attend(
            q,
            k,
            v,
            kv_num_blocks,
            kv_indices,
            causal=self.causal,
            block_q=self.block_q,
            block_k=self.block_k,
            implementation=self.implementation,
        )
        return self.o(o.reshape(B, L, self.h * self.d))


class EqxSparseAttention(eqx.Module):
    """``equinox`` attention with the same maths as ``NnxSparseAttention`` (weights as plain arrays)."""

    wq: jax.Array
    wk: jax.Array
    wv: jax.Array
    wo: jax.Array
    num_heads: int = eqx.field(static=True)
    num_kv_heads: int = eqx.field(static=True)
    head_dim: int = eqx.field(static=True)
    block_q: int = eqx.field(static=True)
    block_k: int = eqx.field(static=True)
    causal: bool = eqx.field(static=True)
    implementation: str | None = eqx.field(static=True)

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        *,
        num_kv_heads: int | None = None,
        head_dim: int = 16,
        block_q: int = 16,
        block_k: int = 16,
        causal: bool = False,
        implementation: str | None = None,
        key: jax.Array,
    ):
        hkv = num_kv_heads or num_heads
        if num_heads % hkv:
            raise ValueError(f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({hkv})")
        kq, kk, kv, ko = jax.random.split(key, 4)
        init = lambda k, i, o: jax.random.normal(k, (i, o)) / jnp.sqrt(i)
        self.wq = init(kq, embed_dim, num_heads * head_dim)
        self.wk = init(kk, embed_dim, hkv * head_dim)
        self.wv = init(kv, embed_dim, hkv * head_dim)
        self.wo = init(ko, num_heads * head_dim, embed_dim)
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, hkv, head_dim
        self.block_q, self.block_k, self.causal, self.implementation = (
            block_q,
            block_k,
            causal,
            implementation,
        )

    def __call__(self, x, kv_num_blocks=None, kv_indices=None):
        B, L, _ = x.shape
        q = (x @ self.wq).reshape(B, L, self.num_heads, self.head_dim)
        k = (x @ self.wk).reshape(B, L, self.num_kv_heads, self.head_dim)
        v = (x @ self.wv).reshape(B, L, self.num_kv_heads, self.head_dim)
        o = _attend(
            q,
            k,
            v,
            kv_num_blocks,
            kv_indices,
            causal=self.causal,
            block_q=self.block_q,
            block_k=self.block_k,
            implementation=self.implementation,
        )
        return o.reshape(B, L, -1) @ self.wo
