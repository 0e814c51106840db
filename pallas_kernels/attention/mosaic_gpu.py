"""Mosaic GPU (Hopper, sm_90a) flash attention, dense and block-sparse: wgmma, TMA, a software pipeline.

The same online-softmax recurrence as the Triton/Mosaic-TPU kernel (``kernel.py``; FlashAttention-2, Alg. 1),
written for Mosaic GPU after the shape of JAX's ``jax/experimental/pallas/ops/gpu/attention_mgpu.py``
(``attention_with_pipeline_emitter``), in our own form:

* one CUDA block (CTA) per (head, query block, batch), ``grid_names = ("heads", "q", "batch")``, one compute
  warpgroup (128 threads) per CTA holding a ``[block_q = 64, D]`` query tile: the M of one ``wgmma``;
* Q is copied GMEM -> SMEM once by the TMA unit (``copy_gmem_to_smem`` + an mbarrier); K and V tiles
  ``[block_k, D]`` stream through ``plgpu.emit_pipeline`` (``max_concurrent_steps`` SMEM slots, TMA copies
  issued ahead of the compute, one mbarrier per slot);
* ``S = Q K^T`` is one ``wgmma`` into a float32 accumulator (``plgpu.ACC``), the softmax update runs in
  registers in base 2 (``m`` kept scaled by ``log2 e``, ``p = exp2(s - m)``), and ``acc += P V`` is a second
  ``wgmma`` with P (bf16/f16) from registers and V from SMEM;
* the output tile goes registers -> SMEM (the Q buffer is reused) -> GMEM by TMA.

Dense: the pipeline's grid is the number of key blocks (causal: up to the diagonal, a dynamic count).
Block-sparse: the grid is ``kv_num_blocks[b, h, i]`` (dynamic) and the K/V ``index_map`` reads
``kv_indices[b, h, i, j]`` from GMEM, so the TMA fetches only listed blocks: work ~ listed blocks.

Masking uses the finite ``MASK_VALUE`` and zeroes masked probabilities (as ``kernel.py``), so a row with no
visible key yields 0, never NaN (the module convention of ``reference.py``).

Constraints (checked eagerly, ``ValueError`` naming the argument): q/k/v bfloat16 or float16; head_dim a
multiple of 64 (128-byte swizzle) and <= 256; block_q = 64; block_k a multiple of 64 and <= 256; L divisible by
the block sizes. Layout ``[B, L, H, D]`` with GQA (``H % Hkv == 0``), as ``jaxwb.pallas_kernels.attention``.

``interpret=True`` runs the kernel in Mosaic GPU's interpret mode (``plgpu.InterpretGPUParams``: a CPU
simulation of GMEM/SMEM, warpgroups, TMA and barriers), which is how it is tested without a GPU.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

from jaxwb.pallas_kernels.attention import reference as ref
from jaxwb.pallas_kernels.attention.reference import MASK_VALUE

__all__ = [
    "MosaicBlockSizes",
    "block_sparse_attention_mgpu",
    "flash_attention_mgpu",
    "flash_mgpu",
    "is_hopper",
    "unsupported_reason",
]

LOG2E = math.log2(math.e)
DTYPES = (jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float16))


@dataclasses.dataclass(frozen=True)
class MosaicBlockSizes:
    """``block_q`` queries per CTA (64: one warpgroup's wgmma M), ``block_k`` keys per pipeline step (multiple
    of 64, <= 256), ``max_concurrent_steps`` K/V SMEM slots in flight (>= 2 overlaps TMA with compute)."""

    block_q: int = 64
    block_k: int = 128
    max_concurrent_steps: int = 2


def _check(q, k, v, bs: MosaicBlockSizes):
    ref.check_qkv_shapes(q, k, v)
    for name, x in (("q", q), ("k", k), ("v", v)):
        if jnp.dtype(x.dtype) not in DTYPES:
            raise ValueError(f"{name} must be bfloat16 or float16 for the Mosaic GPU kernel, got {x.dtype}")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    D = q.shape[-1]
    if D % 64 or D > 256:
        raise ValueError(f"head_dim must be a multiple of 64 and <= 256 for the Mosaic GPU kernel, got {D}")
    if bs.block_q != 64:
        raise ValueError(f"block_q must be 64 (one warpgroup) for the Mosaic GPU kernel, got {bs.block_q}")
    if bs.block_k % 64 or not 64 <= bs.block_k <= 256:
        raise ValueError(f"block_k must be a multiple of 64 in [64, 256], got {bs.block_k}")
    if bs.max_concurrent_steps < 1:
        raise ValueError(f"max_concurrent_steps must be >= 1, got {bs.max_concurrent_steps}")
    Lq, Lk = q.shape[1], k.shape[1]
    if Lq % bs.block_q or Lk % bs.block_k:
        raise ValueError(
            f"sequence lengths (Lq={Lq}, Lk={Lk}) must be multiples of block_q={bs.block_q} and block_k={bs.block_k}"
        )


def unsupported_reason(q, k, v, block_sizes=None) -> str | None:
    """``None`` if the Mosaic GPU kernel accepts these operands and block sizes, else why not (the message of
    the ``ValueError`` the public functions would raise): for a dispatcher that falls back to Triton."""
    try:
        _check(q, k, v, _block_sizes(block_sizes))
    except ValueError as e:
        return str(e)
    return None


def is_hopper(device=None) -> bool:
    """True on an sm_90 GPU (H100 / H200), the target of this kernel (wgmma and TMA need Hopper)."""
    d = device or jax.devices()[0]
    return d.platform == "gpu" and str(getattr(d, "compute_capability", "")).startswith("9")


def _interpret_params(interpret):
    if interpret is True:
        return plgpu.InterpretGPUParams()
    return interpret or None


def causal_keep(q_start, kb, bq: int, bk: int):
    """``[bq, bk]`` bool: which (query, key) pairs of query block at ``q_start`` and key block ``kb`` the causal
    mask keeps (key position <= query position)."""
    rows = q_start + lax.broadcasted_iota(jnp.int32, (bq, bk), 0)
    cols = kb * bk + lax.broadcasted_iota(jnp.int32, (bq, bk), 1)
    return rows >= cols


def online_softmax_step(s, acc, m, l, keep):
    """One key block of the base-2 online softmax: scores ``s [bq, bk]`` (already times log2(e) * scale),
    running row max ``m`` and sum ``l`` ``[bq]``, accumulator ``acc [bq, D]``; ``keep`` the causal mask or None.
    Returns ``(p, acc rescaled, m_new, l_new)``; the caller adds ``p @ v`` to ``acc``."""
    if keep is not None:
        s = jnp.where(keep, s, MASK_VALUE)
    m_new = jnp.maximum(m, s.max(axis=1))
    alpha = jnp.exp2(m - m_new)
    p = jnp.exp2(s - lax.broadcast_in_dim(m_new, s.shape, [0]))
    if keep is not None:  # a row fully masked in this block must add nothing
        p = jnp.where(keep, p, 0.0)
    l_new = l * alpha + p.sum(axis=1)
    acc = acc * lax.broadcast_in_dim(alpha, acc.shape, [0])
    return p, acc, m_new, l_new


def flash_mgpu(
    q,
    k,
    v,
    kv_num_blocks=None,
    kv_indices=None,
    *,
    causal: bool,
    scale: float,
    block_sizes: MosaicBlockSizes,
    interpret=False,
):
    """The Mosaic GPU kernel on ``q [B, Lq, H, D]``, ``k, v [B, Lk, Hkv, D]`` -> ``[B, Lq, H, D]``.

    With ``kv_num_blocks [B, H, Qb]`` / ``kv_indices [B, H, Qb, cap]`` (int32) the kernel is block-sparse,
    else dense. No input checks here (see the public functions)."""
    B, Lq, H, D = q.shape
    Lk, Hkv = k.shape[1], k.shape[2]
    g = H // Hkv
    bq, bk = block_sizes.block_q, block_sizes.block_k
    Qb, KVb = Lq // bq, Lk // bk
    sparse = kv_indices is not None
    dtype = q.dtype
    steps = max(1, min(block_sizes.max_concurrent_steps, KVb))
    in_place = not interpret
    qk_scale = float(scale) * LOG2E  # s2 = log2(e) * scale * q.k : p = exp2(s2 - m2)

    def kernel(*refs):
        if sparse:
            q_ref, k_ref, v_ref, cnt_ref, idx_ref, o_ref, qo_smem, q_bar, *p_scratch = refs
        else:
            q_ref, k_ref, v_ref, o_ref, qo_smem, q_bar, *p_scratch = refs
        p_smem = p_scratch[0] if p_scratch else None
        h = lax.axis_index("heads")
        qi = lax.axis_index("q")
        b = lax.axis_index("batch")
        kvh = lax.div(h, jnp.int32(g))
        q_start = qi * bq

        plgpu.copy_gmem_to_smem(q_ref.at[b, pl.ds(q_start, bq), h], qo_smem, q_bar)
        plgpu.barrier_wait(q_bar)

        if sparse:
            n_steps = cnt_ref[b, h, qi]
            block_of = lambda j: idx_ref[b, h, qi, j]
        elif causal:  # last key block touching the diagonal of query block qi
            n_steps = lax.min(lax.div(q_start + bq + bk - 1, jnp.int32(bk)), jnp.int32(KVb))
            block_of = lambda j: j
        else:
            n_steps = KVb
            block_of = lambda j: j

        def body(idx, k_smem, v_smem, carry):
            acc, m, l = carry
            kb = block_of(idx[0])

            def qk(acc_ref):
                plgpu.wgmma(acc_ref, qo_smem, k_smem.T)
                return acc_ref[...]

            s = pl.run_scoped(qk, plgpu.ACC((bq, bk), jnp.float32)) * qk_scale
            keep = causal_keep(q_start, kb, bq, bk) if causal else None
            p, acc, m_new, l_new = online_softmax_step(s, acc, m, l, keep)
            p16 = p.astype(dtype)

            if in_place:  # hardware: wgmma accumulates into the rescaled acc registers (FA3's form)

                def pv(acc_ref):
                    plgpu.wgmma(acc_ref, p16, v_smem)

                acc = pl.run_state(pv)(plgpu.ACC.init(acc))
            else:  # interpret form: the interpreter's wgmma reads both operands from SMEM and has no rule for
                # the discharged (value) wgmma, so P goes through SMEM and a fresh accumulator is added
                assert p_smem is not None  # allocated when not in_place
                p_smem[...] = p16
                plgpu.commit_smem()

                def pv(acc_ref):
                    plgpu.wgmma(acc_ref, p_smem, v_smem)
                    return acc_ref[...]

                acc = acc + pl.run_scoped(pv, plgpu.ACC((bq, D), jnp.float32))
            return acc, m_new, l_new

        init = (
            jnp.zeros((bq, D), jnp.float32),
            jnp.full((bq,), MASK_VALUE, jnp.float32),
            jnp.zeros((bq,), jnp.float32),
        )
        kv_spec = plgpu.BlockSpec((bk, D), lambda j: (block_of(j), 0))
        pipeline = plgpu.emit_pipeline(
            body,
            grid=(n_steps,),
            in_specs=[kv_spec, kv_spec],
            max_concurrent_steps=steps,
            init_carry=init,
        )
        acc, _, l = pipeline(k_ref.at[b, :, kvh, :], v_ref.at[b, :, kvh, :])
        l_safe = jnp.where(l == 0.0, 1.0, l)
        qo_smem[...] = (acc / lax.broadcast_in_dim(l_safe, acc.shape, [0])).astype(dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(qo_smem, o_ref.at[b, pl.ds(q_start, bq), h])
        plgpu.wait_smem_to_gmem(0)

    call = plgpu.kernel(
        kernel,
        out_type=jax.ShapeDtypeStruct((B, Lq, H, D), dtype),
        scratch_types=(plgpu.SMEM((bq, D), dtype), plgpu.Barrier())
        + (() if in_place else (plgpu.SMEM((bq, bk), dtype),)),
        grid=(H, Qb, B),
        grid_names=("heads", "q", "batch"),
        compiler_params=plgpu.CompilerParams(approx_math=True, lowering_semantics=plgpu.LoweringSemantics.Warpgroup),
        interpret=_interpret_params(interpret),
        kernel_name="block_sparse_flash_mgpu" if sparse else "flash_attention_mgpu",
    )
    if sparse:
        return call(q, k, v, kv_num_blocks.astype(jnp.int32), kv_indices.astype(jnp.int32))
    return call(q, k, v)


def _block_sizes(block_sizes) -> MosaicBlockSizes:
    """A ``MosaicBlockSizes``, or anything with ``block_q``/``block_k`` (the public op's ``AttentionBlockSizes``)."""
    if block_sizes is None:
        return MosaicBlockSizes()
    if isinstance(block_sizes, MosaicBlockSizes):
        return block_sizes
    return MosaicBlockSizes(block_sizes.block_q, block_sizes.block_k, getattr(block_sizes, "max_concurrent_steps", 2))


def _check_lists(kv_num_blocks, kv_indices, B, H, Qb, KVb):
    if kv_num_blocks.shape != (B, H, Qb):
        raise ValueError(f"kv_num_blocks must have shape (B, H, Qb) = {(B, H, Qb)}, got {kv_num_blocks.shape}")
    if kv_indices.ndim != 4 or kv_indices.shape[:3] != (B, H, Qb):
        raise ValueError(f"kv_indices must have shape (B, H, Qb, cap) = {(B, H, Qb)} + (cap,), got {kv_indices.shape}")
    if not (jnp.issubdtype(kv_num_blocks.dtype, jnp.integer) and jnp.issubdtype(kv_indices.dtype, jnp.integer)):
        raise ValueError("kv_num_blocks and kv_indices must be integer arrays")
    cap = kv_indices.shape[-1]
    if not isinstance(kv_num_blocks, jax.core.Tracer):
        c = np.asarray(kv_num_blocks)
        if c.size and (c.min() < 0 or c.max() > cap):
            raise ValueError(f"kv_num_blocks must lie in [0, cap={cap}], got range [{c.min()}, {c.max()}]")
    if not isinstance(kv_indices, jax.core.Tracer):
        ix = np.asarray(kv_indices)
        if ix.size and (ix.min() < 0 or ix.max() >= KVb):
            raise ValueError(f"kv_indices must lie in [0, {KVb}) (number of key blocks), got [{ix.min()}, {ix.max()}]")


def flash_attention_mgpu(
    q,
    k,
    v,
    *,
    is_causal: bool = False,
    scale: float | None = None,
    block_sizes=None,
    interpret=False,
):
    """Dense attention ``softmax(scale q k^T) v`` by the Mosaic GPU kernel.

    Arguments as ``jaxwb.pallas_kernels.attention.flash_attention``: q [B, Lq, H, D], k/v [B, Lk, Hkv, D] ->
    [B, Lq, H, D] in q.dtype; ``block_sizes`` a ``MosaicBlockSizes`` or the op's ``AttentionBlockSizes``;
    ``interpret=True``: Mosaic GPU interpret mode (CPU)."""
    causal = bool(is_causal)
    bs = _block_sizes(block_sizes)
    _check(q, k, v, bs)
    if causal and q.shape[1] != k.shape[1]:
        raise ValueError(f"causal attention needs Lq == Lk, got {q.shape[1]} and {k.shape[1]}")
    scale = ref.default_scale(q.shape[-1]) if scale is None else float(scale)
    return flash_mgpu(q, k, v, causal=causal, scale=scale, block_sizes=bs, interpret=interpret)


def block_sparse_attention_mgpu(
    q,
    k,
    v,
    kv_num_blocks,
    kv_indices,
    *,
    block_q: int,
    block_k: int,
    is_causal: bool = False,
    scale: float | None = None,
    max_concurrent_steps: int = 2,
    interpret=False,
):
    """Block-sparse attention by the Mosaic GPU kernel; arguments as
    ``jaxwb.pallas_kernels.attention.block_sparse_attention``: query block i of (b, h) attends only to key blocks
    ``kv_indices[b, h, i, :kv_num_blocks[b, h, i]]`` (FlexAttention lists, int32); empty rows give 0."""
    causal = bool(is_causal)
    bs = MosaicBlockSizes(block_q, block_k, max_concurrent_steps)
    _check(q, k, v, bs)
    B, Lq, H, _ = q.shape
    _check_lists(kv_num_blocks, kv_indices, B, H, Lq // block_q, k.shape[1] // block_k)
    if causal and Lq != k.shape[1]:
        raise ValueError(f"causal attention needs Lq == Lk, got {Lq} and {k.shape[1]}")
    scale = ref.default_scale(q.shape[-1]) if scale is None else float(scale)
    return flash_mgpu(
        q, k, v, kv_num_blocks, kv_indices, causal=causal, scale=scale, block_sizes=bs, interpret=interpret
    )
