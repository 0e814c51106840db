"""fp4_matmul (W4A16): reference vs float64 dense math, Pallas (interpret) vs reference, argument errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxwb.pallas_kernels.quant import fp4_matmul, nvfp4_quantize
from tests.kernels.formats import FORMAT_OPS

# (lead shape of x, N, K): ragged M and N (padding), K not a multiple of the K chunk, a 3-D activation
SHAPES = [((1,), 16, 32), ((5,), 48, 96), ((2, 3), 40, 160), ((32,), 64, 512)]


def _operands(lead, n, k, fmt, seed=0):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.standard_normal((*lead, k)), jnp.bfloat16)
    w = rng.standard_normal((n, k)).astype(np.float32) * 0.05
    quantize, dequantize, _ = FORMAT_OPS[fmt]
    q = quantize(w)
    return x, q, dequantize(q)


def _tolerance(x, w_deq):
    # float32 accumulation of exact products: |error| <= K * 2^-24 * sum |x||w| (a loose standard bound)
    k = x.shape[-1]
    mag = np.abs(np.asarray(x, np.float64)) @ np.abs(np.asarray(w_deq, np.float64)).T
    return k * 2.0**-24 * mag + 1e-30


@pytest.mark.parametrize("fmt", list(FORMAT_OPS))
def test_reference_equals_dense_float64(fmt):
    x, q, w_deq = _operands((5,), 48, 96, fmt)
    y = np.asarray(fp4_matmul(x, q, implementation="xla"), np.float64)
    exact = np.asarray(x, np.float64) @ np.asarray(w_deq, np.float64).T
    # + the bfloat16 output rounding (x is bfloat16, so is y)
    assert np.all(np.abs(y - exact) <= _tolerance(x, w_deq) + 2.0**-8 * np.abs(exact))


@settings(max_examples=5)
@given(case=st.sampled_from(SHAPES), fmt=st.sampled_from(list(FORMAT_OPS)), seed=st.integers(0, 3))
def test_pallas_interpret_matches_reference(case, fmt, seed):
    lead, n, k = case
    if fmt == "mxfp4" and k % 32:
        k *= 2
    x, q, w_deq = _operands(lead, n, k, fmt, seed)
    x = x.astype(jnp.float32)  # float32 input: the op rounds it to bfloat16 in both implementations
    a = np.asarray(fp4_matmul(x, q, implementation="xla"), np.float64)
    b = np.asarray(fp4_matmul(x, q, implementation="interpret"), np.float64)
    assert b.shape == (*lead, n)
    # same exact products, different float32 summation order (chunks of 128 along K vs one dot)
    assert np.all(np.abs(a - b) <= 2 * _tolerance(x.astype(jnp.bfloat16), w_deq))


def test_out_dtype_and_peer_agreement():
    x, q, w_deq = _operands((8,), 32, 64, "nvfp4")
    y = fp4_matmul(x, q, out_dtype=jnp.float32)
    assert y.dtype == jnp.float32
    assert fp4_matmul(x, q).dtype == jnp.bfloat16
    dense = jnp.dot(x, jnp.asarray(w_deq, jnp.bfloat16).T, preferred_element_type=jnp.float32)
    np.testing.assert_allclose(np.asarray(y), np.asarray(dense), rtol=2e-2, atol=1e-2)  # the bf16 peer


def test_argument_errors():
    x, q, _ = _operands((4,), 16, 32, "nvfp4")
    with pytest.raises(ValueError, match="x.shape"):
        fp4_matmul(jnp.ones((4, 48)), q)
    with pytest.raises(ValueError, match="2-D"):
        fp4_matmul(jnp.ones((2, 32)), nvfp4_quantize(np.ones((2, 2, 32), np.float32)))
    with pytest.raises(ValueError, match="QuantizedArray"):
        fp4_matmul(x, jnp.ones((16, 32)))
    with pytest.raises(ValueError, match="floating"):
        fp4_matmul(jnp.ones((4, 32), jnp.int32), q)


def test_no_recompilation_on_second_call():
    x, q, _ = _operands((4,), 16, 32, "nvfp4")
    f = jax.jit(lambda x, q: fp4_matmul(x, q, implementation="interpret"))
    f(x, q)
    with jax.log_compiles():
        n0 = f._cache_size()
        f(x + 1, q)
        assert f._cache_size() == n0


def test_reference_rounds_x_with_reduce_precision():
    """The W4A16 reference rounds x to bfloat16 with a reduce_precision, which XLA keeps (an H200 elided the
    bfloat16 round trip of the float32 values: 2e-3 off, 2026-12-04): present in the program lowered for CUDA,
    and equal to the bfloat16 cast on this host, subnormals, ties and overflow included."""
    from jaxwb.pallas_kernels.quant import reference as ref
    from tests.kernels.lowering import lower_text

    w = ref.nvfp4_quantize(jax.random.normal(jax.random.key(0), (32, 64)))
    x = jax.ShapeDtypeStruct((4, 64), jnp.float32)
    assert "reduce_precision" in lower_text(lambda x: ref.fp4_matmul(x, w), x, platform="cuda")
    bits = np.random.default_rng(0).integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32)
    v = bits.view(np.float32)
    v = np.concatenate([v[np.isfinite(v)], np.float32([1 + 2**-8, 1 + 3 * 2**-8, 3.4e38, 1e-40, -1e-45])])
    got = np.asarray(jax.lax.reduce_precision(jnp.asarray(v), exponent_bits=8, mantissa_bits=7))
    np.testing.assert_array_equal(
        got.view(np.uint32), np.asarray(jnp.asarray(v).astype(jnp.bfloat16).astype(jnp.float32)).view(np.uint32)
    )
