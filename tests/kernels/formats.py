"""The four FP4 block formats' public ops in one table for the kernel tests (was copied in three files).

``FORMAT_OPS[name] = (quantize(x, **kw), dequantize(q, **kw), block)``; the RaZeR entries bind ``variant``.
``quantized_spec(name, shape)`` is the abstract quantized tensor (``jax.eval_shape`` of the reference quantizer)
that the lowering tests feed to a dequantize or matmul kernel.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxwb.pallas_kernels import quant
from jaxwb.pallas_kernels.quant import reference as ref

FORMAT_OPS = {
    "nvfp4": (quant.nvfp4_quantize, quant.nvfp4_dequantize, 16),
    "mxfp4": (quant.mxfp4_quantize, quant.mxfp4_dequantize, 32),
    "razer_activation": (functools.partial(quant.razer_quantize, variant="activation"), quant.razer_dequantize, 16),
    "razer_weight": (functools.partial(quant.razer_quantize, variant="weight"), quant.razer_dequantize, 16),
}

REFERENCE_QUANTIZE = {
    "nvfp4": ref.nvfp4_quantize,
    "mxfp4": ref.mxfp4_quantize,
    "razer_activation": lambda x: ref.razer_quantize(x, "activation"),
    "razer_weight": lambda x: ref.razer_quantize(x, "weight"),
}


def roundtrip(fmt: str, x):
    """``dequantize(quantize(x))`` with the default implementation."""
    quantize, dequantize, _ = FORMAT_OPS[fmt]
    return dequantize(quantize(x))


def quantized_spec(fmt: str, shape: tuple[int, ...]):
    """The shapes and dtypes of ``fmt``'s quantized form of a float32 array of ``shape`` (nothing is computed)."""
    return jax.eval_shape(REFERENCE_QUANTIZE[fmt], jax.ShapeDtypeStruct(shape, jnp.float32))
