"""The Pallas flash-attention kernel, dense and block-sparse (one body, two ways to pick key blocks).

One program per (batch, head, query block) holds its query tile ``[block_q, D]`` and walks key blocks with a
``fori_loop``, keeping the online-softmax state (running max ``m``, normaliser ``l``, unnormalised output
``acc``) in float32 (FlashAttention-2, Alg. 1):

    m' = max(m, rowmax(S_j)),  P_j = exp(S_j - m'),  l' = e^{m - m'} l + rowsum(P_j),
    acc' = e^{m - m'} acc + P_j V_j,                  O = acc / l   (O = 0 where l = 0).

Dense: key blocks ``0 .. n-1`` (causal: up to the diagonal). Block-sparse: key block ``kv_indices[b,h,i,j]``
for ``j < kv_num_blocks[b,h,i]`` (the template is JAX's Pallas GPU paged attention: an index ref read inside
the loop, then a dynamic slice of the resident K/V). Work is proportional to the number of listed blocks.

Backends:
  * GPU (Triton): indices arrive as a blocked input ``[cap]`` per program; block sizes must be powers of two
    and >= 16 (dot dims), head_dim a power of two >= 16.
  * TPU (Mosaic): counts and indices are scalar-prefetched into SMEM (``PrefetchScalarGridSpec``), flattened.
  * interpret: the GPU form run by the Pallas interpreter (any backend, used for the CPU equality tests).
K and V of one kv head stay resident per program (BlockSpec over the whole key sequence), which bounds Lk by
on-chip memory on TPU (VMEM); on GPU they stay in HBM and only the dynamic slices are loaded.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

# imported eagerly: importing them inside the first trace changes JAX's trace context and makes the
# second call of a jitted op recompile
from jax.experimental.pallas import tpu as pltpu
from jax.experimental.pallas import triton as pltriton

from jaxwb.pallas_kernels.attention.reference import MASK_VALUE


@dataclasses.dataclass(frozen=True)
class AttentionBlockSizes:
    """Tile sizes of the attention kernels: ``block_q`` queries per program, ``block_k`` keys per inner step.

    Positive integers dividing the sequence lengths; powers of two >= 16 on GPU. Checked on construction.
    Triton kernel settings (ignored elsewhere; defaults = the kernel as before): ``num_warps``, ``num_stages``
    and ``exp2`` (``exp2``: log2(e) folded into the scale instead of ``exp``, as JAX's Triton
    attention does; the softmax is the same function, rounded differently, so not bit-identical)."""

    block_q: int = 64
    block_k: int = 64
    num_warps: int = 4
    num_stages: int = 2
    exp2: bool = False

    def __post_init__(self):
        from jaxwb.pallas_kernels.dispatch import check_block

        check_block("block_q", self.block_q)
        check_block("block_k", self.block_k)
        check_block("num_warps", self.num_warps, pow2=True)
        check_block("num_stages", self.num_stages)
        if not isinstance(self.exp2, bool):
            raise ValueError(f"exp2 must be a bool, got {self.exp2!r}")


LOG2_E = 1.4426950408889634  # log2(e): exp(x) = exp2(x log2 e)


def is_pow2(n: int) -> bool:
    """True for a positive power of two (1, 2, 4, ...)."""
    return n > 0 and (n & (n - 1)) == 0


def _body(q_ref, k_ref, v_ref, o_ref, *, n_steps, block_index, q_block, causal, scale, block_q, block_k, exp2=False):
    """The online-softmax loop; ``exp2``: scores in log2 units (scale * log2 e) and ``exp2`` for ``exp``."""
    exp = jnp.exp2 if exp2 else jnp.exp
    scale = scale * LOG2_E if exp2 else scale
    q = q_ref[...]
    D = q.shape[-1]
    qpos = q_block * block_q + jax.lax.broadcasted_iota(jnp.int32, (block_q, block_k), 0)

    def step(j, carry):
        acc, m, l = carry
        kb = block_index(j)
        start = pl.multiple_of(kb * block_k, block_k)
        k = k_ref[pl.ds(start, block_k), :]
        v = v_ref[pl.ds(start, block_k), :]
        s = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32) * scale
        if causal:
            keep = qpos >= kb * block_k + jax.lax.broadcasted_iota(jnp.int32, (block_q, block_k), 1)
            s = jnp.where(keep, s, MASK_VALUE)
        m_new = jnp.maximum(m, jnp.max(s, axis=1))
        corr = exp(m - m_new)
        p = exp(s - m_new[:, None])
        if causal:  # a row fully masked in this block must add nothing (even when m is still MASK_VALUE)
            p = jnp.where(keep, p, 0.0)
        l_new = corr * l + jnp.sum(p, axis=1)
        acc_new = corr[:, None] * acc + jax.lax.dot_general(
            p.astype(v.dtype), v, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32
        )
        return acc_new, m_new, l_new

    init = (
        jnp.zeros((block_q, D), jnp.float32),
        jnp.full((block_q,), MASK_VALUE, jnp.float32),
        jnp.zeros((block_q,), jnp.float32),
    )
    acc, _, l = jax.lax.fori_loop(0, n_steps, step, init)
    l_safe = jnp.where(l == 0.0, 1.0, l)
    o_ref[...] = (acc / l_safe[:, None]).astype(o_ref.dtype)


def _dense_steps(i, *, causal, block_q, block_k, num_kv_blocks):
    if causal:  # last key block touching the diagonal of query block i
        return jnp.minimum(((i + 1) * block_q + block_k - 1) // block_k, num_kv_blocks)
    return num_kv_blocks


def _triton_kernel(*refs, sparse, **kw):
    i = pl.program_id(2)
    if sparse:
        cnt_ref, idx_ref, q_ref, k_ref, v_ref, o_ref = refs
        n = cnt_ref[0]
        block_index = lambda j: idx_ref[j]
    else:
        q_ref, k_ref, v_ref, o_ref = refs
        n = _dense_steps(
            i,
            causal=kw["causal"],
            block_q=kw["block_q"],
            block_k=kw["block_k"],
            num_kv_blocks=kw.pop("num_kv_blocks"),
        )
        block_index = lambda j: j
    kw.pop("num_kv_blocks", None)
    _body(q_ref, k_ref, v_ref, o_ref, n_steps=n, block_index=block_index, q_block=i, **kw)


def _tpu_kernel(*refs, sparse, num_heads, num_q_blocks, cap, **kw):
    b, h, i = pl.program_id(0), pl.program_id(1), pl.program_id(2)
    num_kv_blocks = kw.pop("num_kv_blocks")
    if sparse:
        cnt_ref, idx_ref, q_ref, k_ref, v_ref, o_ref = refs
        row = (b * num_heads + h) * num_q_blocks + i
        n = cnt_ref[row]
        block_index = lambda j: idx_ref[row * cap + j]
    else:
        q_ref, k_ref, v_ref, o_ref = refs
        n = _dense_steps(
            i, causal=kw["causal"], block_q=kw["block_q"], block_k=kw["block_k"], num_kv_blocks=num_kv_blocks
        )
        block_index = lambda j: j
    _body(q_ref, k_ref, v_ref, o_ref, n_steps=n, block_index=block_index, q_block=i, **kw)


def flash_pallas(
    q,
    k,
    v,
    kv_num_blocks=None,
    kv_indices=None,
    *,
    causal: bool,
    scale: float,
    block_sizes: AttentionBlockSizes,
    backend: str,
    interpret: bool = False,
    num_warps: int | None = None,
    num_stages: int | None = None,
):
    """Run the kernel on ``q [B,H,Lq,D]``, ``k, v [B,Hkv,Lk,D]`` (head-major); returns ``[B,H,Lq,D]``.

    ``backend``: "gpu" (Triton form; with ``interpret=True`` the interpreter runs it) or "tpu" (Mosaic form).
    With ``kv_num_blocks``/``kv_indices`` given the kernel is block-sparse, else dense. ``num_warps`` /
    ``num_stages`` (None: ``block_sizes``'s) and ``block_sizes.exp2`` set the Triton form.
    """
    num_warps = block_sizes.num_warps if num_warps is None else num_warps
    num_stages = block_sizes.num_stages if num_stages is None else num_stages
    B, H, Lq, D = q.shape
    Hkv, Lk = k.shape[1], k.shape[2]
    g = H // Hkv
    bq, bk = block_sizes.block_q, block_sizes.block_k
    if Lq % bq or Lk % bk:
        raise ValueError(f"sequence lengths (Lq={Lq}, Lk={Lk}) must be multiples of block_q={bq}, block_k={bk}")
    Qb, KVb = Lq // bq, Lk // bk
    sparse = kv_indices is not None
    kw = dict(causal=causal, scale=scale, block_q=bq, block_k=bk, num_kv_blocks=KVb)
    if block_sizes.exp2:
        kw["exp2"] = True
    grid = (B, H, Qb)
    out_shape = jax.ShapeDtypeStruct((B, H, Lq, D), q.dtype)

    if backend == "tpu":
        cap = kv_indices.shape[-1] if sparse else 1
        kernel = functools.partial(_tpu_kernel, sparse=sparse, num_heads=H, num_q_blocks=Qb, cap=cap, **kw)
        nsp = 2 if sparse else 0
        q_spec = pl.BlockSpec((None, None, bq, D), lambda b, h, i, *_: (b, h, i, 0))
        kv_spec = pl.BlockSpec((None, None, Lk, D), lambda b, h, i, *_: (b, h // g, 0, 0))
        grid_spec = pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=nsp, grid=grid, in_specs=[q_spec, kv_spec, kv_spec], out_specs=q_spec
        )
        call = pl.pallas_call(
            kernel,
            grid_spec=grid_spec,
            out_shape=out_shape,
            interpret=interpret,
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
            name="block_sparse_flash" if sparse else "flash_attention",
        )
        if sparse:
            return call(kv_num_blocks.reshape(-1).astype(jnp.int32), kv_indices.reshape(-1).astype(jnp.int32), q, k, v)
        return call(q, k, v)

    if backend != "gpu":
        raise ValueError(f"backend must be 'gpu' or 'tpu', got {backend!r}")
    kernel = functools.partial(_triton_kernel, sparse=sparse, **kw)
    q_spec = pl.BlockSpec((None, None, bq, D), lambda b, h, i: (b, h, i, 0))
    kv_spec = pl.BlockSpec((None, None, Lk, D), lambda b, h, i: (b, h // g, 0, 0))
    in_specs = [q_spec, kv_spec, kv_spec]
    args = [q, k, v]
    if sparse:
        cap = kv_indices.shape[-1]
        cap2 = pl.next_power_of_2(cap)
        if cap2 != cap:  # Triton blocks are powers of two; padded slots are never read (j < count <= cap)
            kv_indices = jnp.pad(kv_indices, ((0, 0), (0, 0), (0, 0), (0, cap2 - cap)))
        in_specs = [
            pl.BlockSpec((None, None, None, 1), lambda b, h, i: (b, h, i, 0)),
            pl.BlockSpec((None, None, None, cap2), lambda b, h, i: (b, h, i, 0)),
        ] + in_specs
        args = [kv_num_blocks.astype(jnp.int32)[..., None], kv_indices.astype(jnp.int32)] + args
    return pl.pallas_call(
        kernel,
        grid=grid,
        in_specs=in_specs,
        out_specs=pl.BlockSpec((None, None, bq, D), lambda b, h, i: (b, h, i, 0)),
        out_shape=out_shape,
        interpret=interpret,
        compiler_params=pltriton.CompilerParams(num_warps=num_warps, num_stages=num_stages),
        name="block_sparse_flash" if sparse else "flash_attention",
    )(*args)
