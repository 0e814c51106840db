"""Block-quantized FP4 formats (NVFP4, MXFP4, RaZeR), the fused W4A16 matmul, the fast Walsh-Hadamard
transform with the dithered randomized-Hadamard quantizer, and InQuant KV-cache packing.

Every op is a pure-jnp reference (``reference.py``, the spec and the XLA fallback) plus a Pallas kernel,
behind one public function with ``implementation=None | "xla" | "triton" | "mosaic_tpu" | "interpret"``
(``jaxwb.pallas_kernels.dispatch``; the attention ops add ``"mosaic_gpu"``).

Drop-in layers (``layers.py``, needs equinox and flax; imported on first use, so ``import
jaxwb.pallas_kernels.quant`` does not load them): :class:`QuantizedLinear` (``QuantizedLinear.from_linear``),
:func:`quantize_model`, :func:`quantize_weight` and the layer classes ``EqxQuantizedLinear``,
``NnxQuantizedLinear``, ``EqxQATLinear``, ``NnxQATLinear``, ``QuantizedWeight``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from jaxwb.pallas_kernels.quant.blockwise import QuantBlockSizes
from jaxwb.pallas_kernels.quant.fake_quant import fake_quant
from jaxwb.pallas_kernels.quant.fp4 import QuantizedArray
from jaxwb.pallas_kernels.quant.hadamard import HadamardBlockSizes, fwht
from jaxwb.pallas_kernels.quant.inquant import InQuantPacked, inquant_pack, inquant_unpack
from jaxwb.pallas_kernels.quant.matmul import MatmulBlockSizes, fp4_matmul
from jaxwb.pallas_kernels.quant.mxfp4 import mxfp4_dequantize, mxfp4_quantize
from jaxwb.pallas_kernels.quant.nvfp4 import nvfp4_dequantize, nvfp4_quantize
from jaxwb.pallas_kernels.quant.razer import razer_dequantize, razer_quantize
from jaxwb.pallas_kernels.quant.rht import RHTQuantized, rht_dequantize, rht_quantize

if TYPE_CHECKING:
    from jaxwb.pallas_kernels.quant.layers import (
        EqxQATLinear,
        EqxQuantizedLinear,
        NnxQATLinear,
        NnxQuantizedLinear,
        QuantizedLinear,
        QuantizedWeight,
        quantize_model,
        quantize_weight,
    )

LAYER_NAMES = (
    "EqxQATLinear",
    "EqxQuantizedLinear",
    "NnxQATLinear",
    "NnxQuantizedLinear",
    "QuantizedLinear",
    "QuantizedWeight",
    "quantize_model",
    "quantize_weight",
)


def __getattr__(name: str) -> Any:
    """The drop-in layers (``layers.py``: equinox and flax), imported on first access."""
    if name in LAYER_NAMES:
        return getattr(importlib.import_module("jaxwb.pallas_kernels.quant.layers"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EqxQATLinear",
    "EqxQuantizedLinear",
    "NnxQATLinear",
    "NnxQuantizedLinear",
    "QuantizedLinear",
    "QuantizedWeight",
    "fake_quant",
    "quantize_model",
    "quantize_weight",
    "HadamardBlockSizes",
    "InQuantPacked",
    "MatmulBlockSizes",
    "QuantBlockSizes",
    "QuantizedArray",
    "RHTQuantized",
    "fp4_matmul",
    "fwht",
    "inquant_pack",
    "inquant_unpack",
    "mxfp4_dequantize",
    "mxfp4_quantize",
    "nvfp4_dequantize",
    "nvfp4_quantize",
    "razer_dequantize",
    "razer_quantize",
    "rht_dequantize",
    "rht_quantize",
]
