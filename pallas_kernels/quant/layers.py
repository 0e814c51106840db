"""Thin quantized-linear layers for users' models, over :func:`pallas_kernels.quant.fp4_matmul`.

* :class:`EqxQuantizedLinear` (equinox): ``weight`` is a :class:`QuantizedArray` of shape (out, in).
* :class:`NnxQuantizedLinear` (flax.nnx): the packed codes / scales / global scale live in non-trainable
  ``QuantizedWeight`` variables (so ``nnx.state(model, nnx.Param)`` leaves them out of optimizers).

Both compute ``y = x @ dequantize(W).T + b`` with bfloat16 activations and float32 accumulation (see
``matmul.py``); ``format`` is one of "nvfp4", "mxfp4", "razer" (RaZeR weight variant) or "razer_activation".
Build them from a float layer with ``from_linear`` (equinox ``eqx.nn.Linear`` / flax ``nnx.Linear``).
The layers are inference adapters: the weight is frozen (no gradient flows into the codes).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from flax import nnx

from pallas_kernels.quant.fp4 import QuantizedArray
from pallas_kernels.quant.matmul import fp4_matmul
from pallas_kernels.quant.mxfp4 import mxfp4_quantize
from pallas_kernels.quant.nvfp4 import nvfp4_quantize
from pallas_kernels.quant.razer import razer_quantize

__all__ = ["EqxQuantizedLinear", "NnxQuantizedLinear", "QuantizedWeight", "quantize_weight"]

WEIGHT_FORMATS = ("nvfp4", "mxfp4", "razer", "razer_activation")


def quantize_weight(w, format: str = "nvfp4", *, implementation=None) -> QuantizedArray:
    """Quantize a float weight of shape (out, in) (blocks along ``in``) to ``format``."""
    if format == "nvfp4":
        return nvfp4_quantize(w, implementation=implementation)
    if format == "mxfp4":
        return mxfp4_quantize(w, implementation=implementation)
    if format == "razer":
        return razer_quantize(w, variant="weight", implementation=implementation)
    if format == "razer_activation":
        return razer_quantize(w, variant="activation", implementation=implementation)
    raise ValueError(f"format must be one of {WEIGHT_FORMATS}, got {format!r}")


class EqxQuantizedLinear(eqx.Module):
    """Equinox quantized linear: ``weight`` (out, in), FP4 blocks along ``in``; optional ``bias`` (out,)."""

    weight: QuantizedArray
    bias: jax.Array | None
    implementation: str | None = eqx.field(static=True, default=None)

    @classmethod
    def from_linear(cls, linear: eqx.nn.Linear, format: str = "nvfp4", implementation=None):
        return cls(weight=quantize_weight(linear.weight, format), bias=linear.bias, implementation=implementation)

    def __call__(self, x):
        y = fp4_matmul(x, self.weight, implementation=self.implementation)
        return y if self.bias is None else y + self.bias.astype(y.dtype)


class QuantizedWeight(nnx.Variable):
    """A frozen packed-weight array (codes, scales or the global scale): not an ``nnx.Param``."""


class NnxQuantizedLinear(nnx.Module):
    """flax.nnx quantized linear: ``y = x @ W.T + b`` with W (out, in) stored packed (FP4 codes + scales)."""

    def __init__(self, weight: QuantizedArray, bias=None, *, implementation=None):
        self.codes = QuantizedWeight(weight.codes)
        self.scales = QuantizedWeight(weight.scales)
        self.global_scale = QuantizedWeight(weight.global_scale)
        self.shape, self.format, self.block_size = weight.shape, weight.format, weight.block_size
        self.bias = None if bias is None else nnx.Param(jnp.asarray(bias))
        self.implementation = implementation

    @classmethod
    def from_linear(cls, linear: nnx.Linear, format: str = "nvfp4", implementation=None):
        """nnx.Linear keeps its kernel as (in, out): it is transposed to (out, in) before quantizing."""
        bias = None if linear.bias is None else linear.bias[...]
        return cls(quantize_weight(linear.kernel[...].T, format), bias, implementation=implementation)

    @property
    def weight(self) -> QuantizedArray:
        return QuantizedArray(
            codes=self.codes[...],
            scales=self.scales[...],
            global_scale=self.global_scale[...],
            shape=self.shape,
            format=self.format,
            block_size=self.block_size,
        )

    def __call__(self, x):
        y = fp4_matmul(x, self.weight, implementation=self.implementation)
        return y if self.bias is None else y + self.bias[...].astype(y.dtype)
