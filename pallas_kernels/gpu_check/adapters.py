"""Adapters: the only place that knows the public ops' names and keywords.

Every benchmark calls the public ops through these small functions: when an op's name or keyword changes
(``causal`` -> ``is_causal``, ``blocks`` -> ``block_sizes``, a renamed kernel library), fix it here, in one place.
Each imports its op lazily, so importing the check (or its pytest plugin) does not import jax.
"""

from __future__ import annotations


def _flash(q, k, v, *, causal, implementation, block_sizes=None):
    from jaxwb.pallas_kernels.attention import flash_attention

    return flash_attention(q, k, v, causal=causal, implementation=implementation, block_sizes=block_sizes)


def _attention_block_sizes(block_q, block_k):
    from jaxwb.pallas_kernels.attention import BlockSizes

    return BlockSizes(block_q, block_k)


def _block_sparse(q, k, v, cnt, idx, *, block_q, block_k, causal, implementation):
    from jaxwb.pallas_kernels.attention import block_sparse_attention

    return block_sparse_attention(
        q, k, v, cnt, idx, block_q=block_q, block_k=block_k, causal=causal, implementation=implementation
    )


def _mosaic_flash(q, k, v, *, causal, block_q, block_k, steps, interpret):
    from jaxwb.pallas_kernels.attention.mosaic_gpu import MosaicBlockSizes, flash_attention_mgpu

    bs = MosaicBlockSizes(block_q, block_k, steps)
    return flash_attention_mgpu(q, k, v, causal=causal, block_sizes=bs, interpret=interpret)


def _mosaic_block_sparse(q, k, v, cnt, idx, *, block_q, block_k, steps, causal, interpret):
    from jaxwb.pallas_kernels.attention.mosaic_gpu import block_sparse_attention_mgpu

    return block_sparse_attention_mgpu(
        q,
        k,
        v,
        cnt,
        idx,
        block_q=block_q,
        block_k=block_k,
        causal=causal,
        max_concurrent_steps=steps,
        interpret=interpret,
    )


def _quant_block_sizes(rows, cols):
    from jaxwb.pallas_kernels.quant import BlockSizes

    return BlockSizes(rows, cols)


def _quantize(fmt, x, g, *, implementation, block_sizes=None):
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


def _dequantize(fmt, qa, *, dtype, implementation, block_sizes=None):
    from jaxwb.pallas_kernels import quant

    fn = {"nvfp4": quant.nvfp4_dequantize, "mxfp4": quant.mxfp4_dequantize}.get(fmt, quant.razer_dequantize)
    return fn(qa, dtype=dtype, implementation=implementation, block_sizes=block_sizes)


def _hadamard_blocks(dense_max, tile, block_rows, num_warps):
    from jaxwb.pallas_kernels.quant import HadamardBlocks

    return HadamardBlocks(dense_max=dense_max, tile=tile, block_rows=block_rows, num_warps=num_warps)


def _fwht(x, *, implementation, blocks=None):
    from jaxwb.pallas_kernels.quant import fwht

    return fwht(x, implementation=implementation, blocks=blocks)


def _inquant_pack(x, *, key):
    from jaxwb.pallas_kernels.quant import inquant_pack

    return inquant_pack(x, key=key, implementation="xla")


def _inquant_unpack(packed, *, dtype, implementation, block_rows=64):
    from jaxwb.pallas_kernels.quant import inquant_unpack

    return inquant_unpack(packed, dtype=dtype, implementation=implementation, block_rows=block_rows)


def _matmul_block_sizes(bm, bn, bk):
    from jaxwb.pallas_kernels.quant import MatmulBlockSizes

    return MatmulBlockSizes(bm, bn, bk)


def _fp4_matmul(x, w, *, implementation, block_sizes=None):
    from jaxwb.pallas_kernels.quant import fp4_matmul

    return fp4_matmul(x, w, implementation=implementation, block_sizes=block_sizes)
