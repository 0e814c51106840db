"""The four FP4 block formats' public ops in one table for the kernel tests (was copied in three files).

``FORMAT_OPS[name] = (quantize(x, **kw), dequantize(q, **kw), block)``; the RaZeR entries bind ``variant``.
"""

from __future__ import annotations

from jaxwb.pallas_kernels.quant import (
    mxfp4_dequantize,
    mxfp4_quantize,
    nvfp4_dequantize,
    nvfp4_quantize,
    razer_dequantize,
    razer_quantize,
)

FORMAT_OPS = {
    "nvfp4": (nvfp4_quantize, nvfp4_dequantize, 16),
    "mxfp4": (mxfp4_quantize, mxfp4_dequantize, 32),
    "razer_activation": (lambda x, **kw: razer_quantize(x, variant="activation", **kw), razer_dequantize, 16),
    "razer_weight": (lambda x, **kw: razer_quantize(x, variant="weight", **kw), razer_dequantize, 16),
}


def roundtrip(fmt: str, x):
    """``dequantize(quantize(x))`` with the default implementation."""
    quantize, dequantize, _ = FORMAT_OPS[fmt]
    return dequantize(quantize(x))
