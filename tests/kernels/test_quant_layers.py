"""The equinox and flax.nnx quantized-linear adapters over fp4_matmul (one test each)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from pallas_kernels.quant import nvfp4_dequantize, razer_dequantize
from pallas_kernels.quant.layers import EqxQuantizedLinear, NnxQuantizedLinear


def _dense_ref(x, w_deq, b):
    xb = np.asarray(jnp.asarray(x).astype(jnp.bfloat16).astype(jnp.float32), np.float64)
    return xb @ np.asarray(w_deq, np.float64).T + np.asarray(b, np.float64)


def test_equinox_quantized_linear():
    lin = eqx.nn.Linear(64, 24, key=jax.random.key(0))
    layer = EqxQuantizedLinear.from_linear(lin, "nvfp4")
    x = jax.random.normal(jax.random.key(1), (5, 64))
    y = eqx.filter_jit(layer)(x)
    assert y.shape == (5, 24) and y.dtype == jnp.float32
    w_deq = nvfp4_dequantize(layer.weight)
    np.testing.assert_allclose(np.asarray(y), _dense_ref(x, w_deq, lin.bias), rtol=1e-5, atol=1e-5)
    # the quantized layer stays close to the float one (4.5-bit weights: ~10% relative output error at most)
    y_float = np.asarray(jax.vmap(lin)(x))
    rel = np.linalg.norm(np.asarray(y) - y_float) / np.linalg.norm(y_float)
    assert rel < 0.15
    assert layer.weight.codes.dtype == jnp.uint8 and layer.weight.codes.shape == (24, 32)


def test_nnx_quantized_linear():
    lin = nnx.Linear(64, 24, rngs=nnx.Rngs(0))
    layer = NnxQuantizedLinear.from_linear(lin, "razer")
    x = jax.random.normal(jax.random.key(2), (3, 7, 64))
    y = nnx.jit(lambda m, x: m(x))(layer, x)
    assert y.shape == (3, 7, 24)
    w_deq = razer_dequantize(layer.weight)
    np.testing.assert_allclose(np.asarray(y), _dense_ref(x, w_deq, lin.bias[...]), rtol=1e-5, atol=1e-5)
    assert len(jax.tree_util.tree_leaves(nnx.state(layer, nnx.Param))) == 1  # only the bias is trainable
