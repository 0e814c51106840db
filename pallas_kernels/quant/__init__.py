"""Block-quantized FP4 formats (NVFP4, MXFP4, RaZeR), the fused W4A16 matmul, the fast Walsh-Hadamard
transform with the dithered randomized-Hadamard quantizer, and InQuant KV-cache packing.

Every op is a pure-jnp reference (``reference.py``, the spec and the XLA fallback) plus a Pallas kernel,
behind one public function with ``implementation=None | "xla" | "pallas" | "interpret"``.
"""

from jaxwb.pallas_kernels.quant.blockwise import BlockSizes, QuantBlockSizes
from jaxwb.pallas_kernels.quant.fake_quant import fake_quant
from jaxwb.pallas_kernels.quant.fp4 import QuantizedArray
from jaxwb.pallas_kernels.quant.hadamard import HadamardBlocks, HadamardBlockSizes, fwht
from jaxwb.pallas_kernels.quant.inquant import InQuantPacked, inquant_pack, inquant_unpack
from jaxwb.pallas_kernels.quant.matmul import MatmulBlockSizes, fp4_matmul
from jaxwb.pallas_kernels.quant.mxfp4 import mxfp4_dequantize, mxfp4_quantize
from jaxwb.pallas_kernels.quant.nvfp4 import nvfp4_dequantize, nvfp4_quantize
from jaxwb.pallas_kernels.quant.razer import razer_dequantize, razer_quantize
from jaxwb.pallas_kernels.quant.rht import RHTQuantized, rht_dequantize, rht_quantize

__all__ = [
    "fake_quant",
    "BlockSizes",
    "HadamardBlockSizes",
    "HadamardBlocks",
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
