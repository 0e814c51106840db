"""Block-sparse flash attention: kernel (interpret) and gathering XLA path equal dense attention under the
same block mask; empty rows give 0, never NaN."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxwb.pallas_kernels.attention import (
    AttentionBlockSizes,
    attention_reference,
    block_lists_to_mask,
    block_sparse_attention,
    expand_block_mask,
    mask_to_block_lists,
)

# (B, L, H, Hkv, D, block_q, block_k, causal)
CONFIGS = [(1, 64, 4, 2, 16, 16, 16, True), (2, 64, 2, 1, 16, 32, 16, False)]


@functools.cache
def _op(impl, causal, bq, bk):
    return jax.jit(
        functools.partial(
            block_sparse_attention, block_sizes=AttentionBlockSizes(bq, bk), is_causal=causal, implementation=impl
        )
    )


@functools.partial(jax.jit, static_argnums=0)
def _case(cfg, seed, density):
    """Everything of one example in one compiled program: inputs, lists, both paths, the dense spec."""
    B, L, H, Hkv, D, bq, bk, causal = cfg
    kq, kk, kv, km = jax.random.split(jax.random.key(seed, impl="unsafe_rbg"), 4)
    q = jax.random.normal(kq, (B, L, H, D))
    k = jax.random.normal(kk, (B, L, Hkv, D))
    v = jax.random.normal(kv, (B, L, Hkv, D))
    nq, nk = L // bq, L // bk
    bm = jax.random.bernoulli(km, density, (B, H, nq, nk))
    bm = bm.at[0, 0, 0].set(False)  # always at least one empty row
    cnt, idx = mask_to_block_lists(bm)
    # list the blocks in reverse order: the result must not depend on the order of a row's list
    j = jnp.arange(nk)
    idx = jnp.where(j < cnt[..., None], jnp.take_along_axis(idx, jnp.maximum(cnt[..., None] - 1 - j, 0), -1), idx)
    want = attention_reference(q, k, v, is_causal=causal, mask=expand_block_mask(bm, bq, bk))
    got = {impl: _op(impl, causal, bq, bk)(q, k, v, cnt, idx) for impl in ("interpret", "xla")}
    return bm, block_lists_to_mask(cnt, idx, nk), got, want


@given(cfg=st.sampled_from(CONFIGS), seed=st.integers(0, 2**16), density=st.sampled_from([0.0, 0.3, 0.7, 1.0]))
def test_block_sparse_equals_masked_dense(cfg, seed, density):
    bq = cfg[5]
    bm, bm_roundtrip, got, want = _case(cfg, seed, density)
    np.testing.assert_array_equal(bm_roundtrip, bm)
    for impl, out in got.items():
        out = np.asarray(out)
        assert np.all(np.isfinite(out)), impl
        np.testing.assert_allclose(out, np.asarray(want), atol=2e-5, rtol=2e-5, err_msg=impl)
        np.testing.assert_array_equal(out[0, :bq, 0], 0.0)  # the empty row is defined: zero


def test_xla_path_uses_capacity_not_length():
    """The XLA path gathers cap blocks: its largest intermediate scales with cap, not with Lk."""
    B, L, H, D, b = 1, 256, 1, 16, 16
    q = k = v = jnp.ones((B, L, H, D))
    n = L // b

    def biggest(cap):
        cnt = jnp.full((B, H, n), cap, jnp.int32)
        idx = jnp.broadcast_to(jnp.arange(cap), (B, H, n, cap)).astype(jnp.int32)
        f = functools.partial(block_sparse_attention, block_sizes=AttentionBlockSizes(b, b), implementation="xla")
        jaxpr = jax.make_jaxpr(f)(q, k, v, cnt, idx)
        return max(int(np.prod(var.aval.shape)) for eqn in jaxpr.eqns for var in eqn.outvars)

    assert biggest(2) * 4 == biggest(8)


@pytest.mark.parametrize(
    "bad,match",
    [
        ("count", "kv_num_blocks must lie"),
        ("index", "kv_indices must lie"),
        ("shape", "kv_num_blocks must have shape"),
    ],
)
def test_bad_lists_raise(bad, match):
    q = k = v = jnp.ones((1, 32, 2, 16))
    cnt = jnp.ones((1, 2, 2), jnp.int32)
    idx = jnp.zeros((1, 2, 2, 2), jnp.int32)
    if bad == "count":
        cnt = cnt.at[0, 0, 0].set(3)
    elif bad == "index":
        idx = idx.at[0, 0, 0, 0].set(2)
    else:
        cnt = cnt[:, :1]
    with pytest.raises(ValueError, match=match):
        block_sparse_attention(q, k, v, cnt, idx, block_sizes=AttentionBlockSizes(16, 16))
