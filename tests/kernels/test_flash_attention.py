"""Dense flash attention: the Pallas kernel (interpret mode on CPU) and the XLA path vs jax.nn attention."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxwb.pallas_kernels.attention import AttentionBlockSizes, attention_reference, flash_attention

# (B, L, H, Hkv, D, block_q, block_k, causal, dtype): a small fixed set so jit compiles each once
CONFIGS = [
    (1, 64, 4, 2, 16, 16, 32, True, jnp.float32),  # GQA, causal, unequal tiles
    (2, 32, 2, 2, 32, 16, 16, False, jnp.bfloat16),  # MHA, bidirectional, bf16
]
TOL = {jnp.float32: 2e-5, jnp.bfloat16: 3e-2}


@functools.cache
def _op(impl, causal, bq, bk):
    return jax.jit(
        functools.partial(
            flash_attention, is_causal=causal, implementation=impl, block_sizes=AttentionBlockSizes(bq, bk)
        )
    )


def _qkv(seed, B, L, H, Hkv, D, dtype, scale=1.0):
    ks = jax.random.split(jax.random.key(seed, impl="unsafe_rbg"), 3)
    return [(scale * jax.random.normal(k, (B, L, h, D))).astype(dtype) for k, h in zip(ks, (H, Hkv, Hkv), strict=True)]


@functools.partial(jax.jit, static_argnums=0)
def _case(cfg, seed, amp):
    B, L, H, Hkv, D, bq, bk, causal, dtype = cfg
    q, k, v = _qkv(seed, B, L, H, Hkv, D, dtype, amp)
    want = jax.nn.dot_product_attention(
        q.astype(jnp.float32), k.astype(jnp.float32), v.astype(jnp.float32), is_causal=causal
    )
    return {impl: _op(impl, causal, bq, bk)(q, k, v) for impl in ("interpret", "xla")}, want


@given(cfg=st.sampled_from(CONFIGS), seed=st.integers(0, 2**16), amp=st.sampled_from([0.1, 1.0, 4.0]))
def test_flash_matches_jax_nn(cfg, seed, amp):
    dtype = cfg[-1]
    got, want = _case(cfg, seed, amp)
    for impl, out in got.items():
        assert out.shape == want.shape and out.dtype == dtype
        np.testing.assert_allclose(
            np.asarray(out, np.float32),
            np.asarray(want),
            atol=TOL[dtype] * max(1, amp),
            rtol=TOL[dtype],
            err_msg=impl,
        )


def test_reference_against_numpy_float64():
    """The spec itself against an independent numpy float64 softmax (GQA head mapping h -> h // group)."""
    B, L, H, Hkv, D = 1, 16, 4, 2, 8
    q, k, v = _qkv(3, B, L, H, Hkv, D, jnp.float32)
    got = np.asarray(jax.jit(functools.partial(attention_reference, is_causal=True))(q, k, v))
    qn, kn, vn = (np.asarray(x, np.float64) for x in (q, k, v))
    want = np.zeros_like(qn)
    for h in range(H):
        s = qn[0, :, h] @ kn[0, :, h // 2].T / np.sqrt(D)
        s[np.triu_indices(L, 1)] = -np.inf
        p = np.exp(s - s.max(1, keepdims=True))
        want[0, :, h] = (p / p.sum(1, keepdims=True)) @ vn[0, :, h // 2]
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="on a GPU or TPU the default is the Pallas kernel")
def test_default_implementation_on_cpu_is_xla():
    q, k, v = _qkv(0, 1, 16, 2, 2, 16, jnp.float32)
    default = jax.jit(flash_attention)(q, k, v)
    np.testing.assert_array_equal(default, _op("xla", False, 16, 16)(q, k, v))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(implementation="cuda"), "implementation"),
        (dict(implementation="triton", backend="cpu"), "interpret"),
        (dict(implementation="interpret", block_sizes=AttentionBlockSizes(24, 16)), "block_q"),
        (dict(implementation="interpret", block_sizes=AttentionBlockSizes(16, 8)), "block_k"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    q, k, v = _qkv(0, 1, 48, 2, 2, 16, jnp.float32)
    with pytest.raises(ValueError, match=match):
        flash_attention(q, k, v, **kwargs)


def test_bad_shapes_raise():
    q, k, v = _qkv(0, 1, 16, 3, 2, 16, jnp.float32)
    with pytest.raises(ValueError, match="multiple of kv heads"):
        flash_attention(q, k, v)
