"""Adapters: the only place that knows the public ops' names and keywords.

Every benchmark calls the public ops through these small functions: when an op's name or keyword changes
(as ``causal`` became ``is_causal`` and ``blocks`` became ``block_sizes``), fix it here, in one place.
Each imports its op lazily, so importing the check (or its pytest plugin) does not import jax.
"""

from __future__ import annotations


def flash(q, k, v, *, causal, implementation, block_sizes=None):
    """Dense attention: ``jaxwb.pallas_kernels.attention.flash_attention``."""
    from jaxwb.pallas_kernels.attention import flash_attention

    return flash_attention(q, k, v, is_causal=causal, implementation=implementation, block_sizes=block_sizes)


def attention_block_sizes(block_q, block_k, num_warps=4, num_stages=2, exp2=False):
    """``AttentionBlockSizes(block_q, block_k, num_warps, num_stages, exp2)`` of the attention ops."""
    from jaxwb.pallas_kernels.attention import AttentionBlockSizes

    return AttentionBlockSizes(block_q, block_k, num_warps=num_warps, num_stages=num_stages, exp2=exp2)


def block_sparse(q, k, v, cnt, idx, *, block_q, block_k, causal, implementation):
    """Block-sparse attention: ``jaxwb.pallas_kernels.attention.block_sparse_attention``."""
    from jaxwb.pallas_kernels.attention import AttentionBlockSizes, block_sparse_attention

    return block_sparse_attention(
        q,
        k,
        v,
        cnt,
        idx,
        block_sizes=AttentionBlockSizes(block_q, block_k),
        is_causal=causal,
        implementation=implementation,
    )


def mosaic_flash(q, k, v, *, causal, block_q, block_k, steps, interpret):
    """The Mosaic GPU dense kernel: ``mosaic_gpu.flash_attention_mgpu``."""
    from jaxwb.pallas_kernels.attention.mosaic_gpu import MosaicBlockSizes, flash_attention_mgpu

    bs = MosaicBlockSizes(block_q, block_k, steps)
    return flash_attention_mgpu(q, k, v, is_causal=causal, block_sizes=bs, interpret=interpret)


def mosaic_block_sparse(q, k, v, cnt, idx, *, block_q, block_k, steps, causal, interpret):
    """The Mosaic GPU block-sparse kernel: ``mosaic_gpu.block_sparse_attention_mgpu``."""
    from jaxwb.pallas_kernels.attention.mosaic_gpu import block_sparse_attention_mgpu

    return block_sparse_attention_mgpu(
        q,
        k,
        v,
        cnt,
        idx,
        block_q=block_q,
        block_k=block_k,
        is_causal=causal,
        max_concurrent_steps=steps,
        interpret=interpret,
    )


def quant_block_sizes(rows, cols, num_warps=4, edge="pad"):
    """``QuantBlockSizes(rows, cols, num_warps, edge)`` of the block quantizers."""
    from jaxwb.pallas_kernels.quant import QuantBlockSizes

    return QuantBlockSizes(rows, cols, num_warps=num_warps, edge=edge)


def quantize(fmt, x, g, *, implementation, block_sizes=None):
    """Quantize ``x`` to ``fmt`` (nvfp4, mxfp4, razer_activation) with global scale ``g``."""
    from jaxwb.pallas_kernels import quant

    if fmt == "nvfp4":
        return quant.nvfp4_quantize(x, global_scale=g, implementation=implementation, block_sizes=block_sizes)
    if fmt == "mxfp4":
        return quant.mxfp4_quantize(x, implementation=implementation, block_sizes=block_sizes)
    if fmt == "razer_activation":
        return quant.razer_quantize(
            x, variant="activation", global_scale=g, implementation=implementation, block_sizes=block_sizes
        )
    raise ValueError(f"unknown format {fmt!r}")


def dequantize(fmt, qa, *, dtype, implementation, block_sizes=None):
    """Dequantize a ``QuantizedArray`` of format ``fmt``."""
    from jaxwb.pallas_kernels import quant

    fn = {"nvfp4": quant.nvfp4_dequantize, "mxfp4": quant.mxfp4_dequantize}.get(fmt, quant.razer_dequantize)
    return fn(qa, dtype=dtype, implementation=implementation, block_sizes=block_sizes)


def hadamard_block_sizes(dense_max, tile, block_rows, num_warps):
    """``HadamardBlockSizes`` of the FWHT kernel."""
    from jaxwb.pallas_kernels.quant import HadamardBlockSizes

    return HadamardBlockSizes(dense_max=dense_max, tile=tile, block_rows=block_rows, num_warps=num_warps)


def fwht(x, *, implementation, block_sizes=None, xla_method="butterfly"):
    """The normalized fast Walsh-Hadamard transform: ``jaxwb.pallas_kernels.quant.fwht``."""
    from jaxwb.pallas_kernels.quant import fwht as op

    return op(x, implementation=implementation, block_sizes=block_sizes, xla_method=xla_method)


def inquant_pack(x, *, key):
    """InQuant packing (always XLA): ``jaxwb.pallas_kernels.quant.inquant_pack``."""
    from jaxwb.pallas_kernels.quant import inquant_pack as op

    return op(x, key=key, implementation="xla")


def inquant_unpack(packed, *, dtype, implementation, block_rows=64):
    """InQuant unpacking: ``jaxwb.pallas_kernels.quant.inquant_unpack``."""
    from jaxwb.pallas_kernels.quant import inquant_unpack as op

    return op(packed, dtype=dtype, implementation=implementation, block_rows=block_rows)


def matmul_block_sizes(bm, bn, bk):
    """``MatmulBlockSizes(bm, bn, bk)`` of the W4A16 matmul."""
    from jaxwb.pallas_kernels.quant import MatmulBlockSizes

    return MatmulBlockSizes(bm, bn, bk)


def fp4_matmul(x, w, *, implementation, block_sizes=None, decode="interleaved", dequantize_above_m=None):
    """The W4A16 matmul: ``jaxwb.pallas_kernels.quant.fp4_matmul`` (``decode``, ``dequantize_above_m``: its
    variants, default off)."""
    from jaxwb.pallas_kernels.quant import fp4_matmul as op

    return op(
        x,
        w,
        implementation=implementation,
        block_sizes=block_sizes,
        decode=decode,
        dequantize_above_m=dequantize_above_m,
    )
