"""Quantization-aware drop-in layers: float weights trained through ``fake_quant`` (surrogate backward)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxwb.pallas_kernels.quant import fake_quant, nvfp4_dequantize, nvfp4_quantize
from jaxwb.pallas_kernels.quant.layers import EqxQATLinear, NnxQATLinear, QuantizedLinear, quantize_model


def _eqx_mlp(key):
    k1, k2 = jax.random.split(key)
    return eqx.nn.Sequential([eqx.nn.Linear(32, 16, key=k1), eqx.nn.Lambda(jax.nn.relu), eqx.nn.Linear(16, 16, key=k2)])


def test_eqx_qat_forward_is_the_quantized_weight_and_gradient_flows():
    lin = eqx.nn.Linear(32, 16, key=jax.random.key(0))
    qat = QuantizedLinear.from_linear(lin, "nvfp4", qat=True, surrogate="gaussian")
    assert isinstance(qat, EqxQATLinear) and (qat.in_features, qat.out_features) == (32, 16)
    x = jax.random.normal(jax.random.key(1), (32,))
    w_q = nvfp4_dequantize(nvfp4_quantize(lin.weight))
    np.testing.assert_allclose(np.asarray(qat(x, key=None)), np.asarray(w_q @ x + lin.bias), rtol=1e-5, atol=1e-5)
    g = eqx.filter_grad(lambda m: jnp.sum(m(x) ** 2))(qat)
    assert np.all(np.isfinite(np.asarray(g.weight))) and float(jnp.abs(g.weight).sum()) > 0
    ys = jax.vmap(qat)(jnp.stack([x, 2 * x]))  # unbatched like eqx.nn.Linear
    assert ys.shape == (2, 16)


def test_quantize_model_qat_then_pack_equinox():
    model = _eqx_mlp(jax.random.key(2))
    qat_model = quantize_model(model, "nvfp4", qat=True, surrogate="ste")
    assert all(isinstance(layer, EqxQATLinear) for layer in (qat_model.layers[0], qat_model.layers[2]))
    x = jax.random.normal(jax.random.key(3), (32,))
    assert qat_model(x).shape == (16,)
    # after training, the float weights of the QAT layers pack into the inference drop-ins
    packed = QuantizedLinear.from_linear(eqx.nn.Linear(32, 16, key=jax.random.key(4)), "nvfp4")
    assert packed.in_features == 32


def test_nnx_qat_layer_trains_its_param():
    lin = nnx.Linear(32, 8, rngs=nnx.Rngs(0))
    qat = QuantizedLinear.from_linear(lin, "mxfp4", qat=True, surrogate="logistic")
    assert isinstance(qat, NnxQATLinear)
    x = jax.random.normal(jax.random.key(5), (4, 32))
    want = x @ fake_quant(lin.kernel[...].T, fmt="mxfp4", surrogate="logistic").T + lin.bias[...]
    np.testing.assert_allclose(np.asarray(qat(x)), np.asarray(want), rtol=1e-5, atol=1e-5)
    grads = nnx.grad(lambda m: jnp.sum(m(x) ** 2))(qat)
    assert float(jnp.abs(grads.kernel[...]).sum()) > 0


def test_qat_rejects_bad_surrogate():
    with pytest.raises(ValueError, match="surrogate"):
        QuantizedLinear.from_linear(eqx.nn.Linear(32, 16, key=jax.random.key(0)), qat=True, surrogate="cauchy")
