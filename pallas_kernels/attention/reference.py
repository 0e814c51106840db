"""Pure-jnp references for the sparse-attention core: the spec of every kernel and the XLA fallback.

Layout follows ``jax.nn.dot_product_attention``: ``q [B, Lq, H, D]``, ``k, v [B, Lk, Hkv, D]`` with
``H % Hkv == 0`` (grouped-query attention: query head ``h`` reads kv head ``h // (H // Hkv)``).

Block masks follow FlexAttention's ``BlockMask``: the key/value sequence is cut into blocks of ``block_k``
tokens and the queries into blocks of ``block_q``; for every (batch, head, query block) the listed key blocks
are ``kv_indices[b, h, i, :kv_num_blocks[b, h, i]]`` (int32; entries past the count are ignored).

Convention for empty rows: a query that sees no key at all (no listed block, or every listed key masked by
causality) gets output **0** (as FlexAttention), never NaN.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxwb.pallas_kernels import dispatch as dp

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32")
MASK_DTYPES = ("bool", *INT_DTYPES)

MASK_VALUE = -0.7 * float(jnp.finfo(jnp.float32).max)  # finite "minus infinity": exp(MASK - m) == 0


def check_qkv_shapes(q, k, v):
    """``ValueError`` unless q, k, v are [B, L, H, D] with k.shape == v.shape, shared B and D, and H_q a multiple
    of H_kv (GQA). Shapes only: ``ops.check_qkv`` adds dtypes and finiteness."""
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(f"q, k, v must be [B, L, H, D]; got shapes q {q.shape}, k {k.shape}, v {v.shape}")
    if k.shape != v.shape:
        raise ValueError(f"k and v must have the same shape, got k {k.shape}, v {v.shape}")
    if q.shape[0] != k.shape[0] or q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share batch and head_dim, got q {q.shape}, k {k.shape}")
    if q.shape[2] % k.shape[2]:
        raise ValueError(f"q heads ({q.shape[2]}) must be a multiple of kv heads ({k.shape[2]}) (GQA)")


def _expand_kv(x, num_heads):
    """[B, L, Hkv, D] -> [B, L, H, D] by repeating each kv head for its query group."""
    return jnp.repeat(x, num_heads // x.shape[2], axis=2)


def default_scale(head_dim: int) -> float:
    return 1.0 / float(head_dim) ** 0.5


def attention_reference(q, k, v, *, is_causal: bool = False, scale: float | None = None, mask=None):
    """Dense softmax attention ``softmax(scale q k^T + mask) v`` in float32, with defined empty rows.

    q [B, Lq, H, D], k/v [B, Lk, Hkv, D]; ``mask`` optional bool broadcastable to
    [B, H, Lq, Lk] (True = keep).
    ``is_causal`` keeps key j for query i iff j <= i (aligned at the start, Lq == Lk).
    Returns [B, Lq, H, D] in q.dtype; rows with no kept key are 0.
    """
    causal = bool(is_causal)
    check_qkv_shapes(q, k, v)
    B, Lq, H, D = q.shape
    Lk = k.shape[1]
    scale = default_scale(D) if scale is None else scale
    kk, vv = _expand_kv(k, H), _expand_kv(v, H)
    s = jnp.einsum("bqhd,bkhd->bhqk", q.astype(jnp.float32), kk.astype(jnp.float32)) * scale
    keep = jnp.ones((1, 1, Lq, Lk), bool)
    if causal:
        keep = keep & (jnp.arange(Lq)[:, None] >= jnp.arange(Lk)[None, :])
    if mask is not None:
        keep = keep & mask
    s = jnp.where(keep, s, MASK_VALUE)
    m = jnp.max(s, axis=-1, keepdims=True)
    p = jnp.where(keep, jnp.exp(s - m), 0.0)
    l = jnp.sum(p, axis=-1, keepdims=True)
    o = jnp.einsum("bhqk,bkhd->bqhd", p / jnp.where(l == 0, 1.0, l), vv.astype(jnp.float32))
    return o.astype(q.dtype)


# ---------------------------------------------------------------------------------------------------------
# Block masks <-> block lists
# ---------------------------------------------------------------------------------------------------------


def block_lists_to_mask(kv_num_blocks, kv_indices, num_kv_blocks: int):
    """Dense block mask [B, H, Qb, num_kv_blocks] (bool) from FlexAttention-style lists.

    ``kv_num_blocks`` [..., Qb] and ``kv_indices`` [..., Qb, cap] integer arrays, counts in [0, cap], indices
    in [0, num_kv_blocks) (a bad input raises ``ValueError`` naming it)."""
    dp.check_block("num_kv_blocks", num_kv_blocks)
    dp.check_array("kv_num_blocks", kv_num_blocks, dtypes=INT_DTYPES, allow_empty=True)
    dp.check_array("kv_indices", kv_indices, min_ndim=1, dtypes=INT_DTYPES, allow_empty=True)
    if tuple(kv_indices.shape[:-1]) != tuple(kv_num_blocks.shape):
        raise ValueError(
            f"kv_indices.shape[:-1] must equal kv_num_blocks.shape, got {kv_indices.shape} and {kv_num_blocks.shape}"
        )
    dp.check_range("kv_num_blocks", kv_num_blocks, 0, kv_indices.shape[-1] + 1)
    dp.check_range("kv_indices", kv_indices, 0, num_kv_blocks)
    cap = kv_indices.shape[-1]
    valid = jnp.arange(cap) < kv_num_blocks[..., None]  # [B, H, Qb, cap]
    onehot = jax.nn.one_hot(kv_indices, num_kv_blocks, dtype=jnp.int32) * valid[..., None]
    return jnp.sum(onehot, axis=-2) > 0


def mask_to_block_lists(block_mask, capacity: int | None = None):
    """FlexAttention-style (kv_num_blocks [B,H,Qb], kv_indices [B,H,Qb,cap]) from a bool block mask.

    Listed blocks are in increasing order; unused slots hold the last listed index (or 0) so that a kernel
    that reads a slot past the count still stays in bounds. ``capacity`` (static) defaults to the number of
    key blocks; blocks beyond ``capacity`` in a row are dropped (pass at least the largest row count).
    ``block_mask``: a bool (or 0/1 integer) array with at least one axis (a bad input raises ``ValueError``).
    """
    dp.check_array("block_mask", block_mask, min_ndim=1, dtypes=MASK_DTYPES)
    if capacity is not None:
        dp.check_block("capacity", capacity)
    n = block_mask.shape[-1]
    cap = n if capacity is None else int(capacity)
    counts = jnp.minimum(jnp.sum(block_mask, axis=-1), cap).astype(jnp.int32)
    # stable sort: selected blocks first, in increasing index order
    order = jnp.argsort(jnp.where(block_mask, 0, 1) * n + jnp.arange(n), axis=-1)[..., :cap].astype(jnp.int32)
    last = jnp.take_along_axis(order, jnp.maximum(counts - 1, 0)[..., None], axis=-1)
    idx = jnp.where(jnp.arange(cap) < counts[..., None], order, last)
    return counts, idx.astype(jnp.int32)


def expand_block_mask(block_mask, block_q: int, block_k: int):
    """Token-level mask [B, H, Qb*block_q, KVb*block_k] from a block mask [B, H, Qb, KVb] (bool or 0/1
    integer, at least 2 axes; ``block_q``/``block_k`` positive integers)."""
    dp.check_array("block_mask", block_mask, min_ndim=2, dtypes=MASK_DTYPES, allow_empty=True)
    dp.check_block("block_q", block_q)
    dp.check_block("block_k", block_k)
    return jnp.repeat(jnp.repeat(block_mask, block_q, axis=-2), block_k, axis=-1)


def block_sparse_reference(
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
):
    """The spec of block-sparse attention: dense attention under the expanded block mask."""
    Lk = k.shape[1]
    bm = block_lists_to_mask(kv_num_blocks, kv_indices, Lk // block_k)
    return attention_reference(q, k, v, is_causal=is_causal, scale=scale, mask=expand_block_mask(bm, block_q, block_k))


def block_sparse_xla(
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
    keep_dtype: bool = False,
):
    """The XLA path that *skips work*: gathers only the ``cap = kv_indices.shape[-1]`` listed key blocks per
    (batch, head, query block) and attends to those, so compute scales with the list capacity, not Lk.

    Memory/compute ~ B * H * Lq * cap * block_k * D. Equals ``block_sparse_reference`` (same-order blocks
    do not matter: softmax is permutation invariant). Empty rows give 0.

    ``keep_dtype`` (default False: q and the gathered K/V are cast to float32 first, as the reference): the
    gathered K/V stay in their dtype (half the bytes for bfloat16) and both products accumulate in float32
    (``preferred_element_type``), with the probabilities rounded to V's dtype for the second product as
    the flash kernels do (relative error <= 2^-9 per weight for bfloat16; identical math for float32).
    """
    check_qkv_shapes(q, k, v)
    B, Lq, H, D = q.shape
    Lk, Hkv = k.shape[1], k.shape[2]
    g = H // Hkv
    Qb, cap = Lq // block_q, kv_indices.shape[-1]
    scale = default_scale(D) if scale is None else scale
    qb = q.reshape(B, Qb, block_q, H, D).transpose(0, 3, 1, 2, 4)  # [B,H,Qb,bq,D]
    qb = qb if keep_dtype else qb.astype(jnp.float32)
    kb = k.reshape(B, Lk // block_k, block_k, Hkv, D).transpose(0, 3, 1, 2, 4)  # [B,Hkv,KVb,bk,D]
    vb = v.reshape(B, Lk // block_k, block_k, Hkv, D).transpose(0, 3, 1, 2, 4)
    kvh = jnp.arange(H) // g

    def gather(xb):  # -> [B, H, Qb, cap, bk, D]
        return xb[jnp.arange(B)[:, None, None, None], kvh[None, :, None, None], kv_indices]

    kg, vg = gather(kb), gather(vb)
    if not keep_dtype:
        kg, vg = kg.astype(jnp.float32), vg.astype(jnp.float32)
    f32 = jnp.float32 if keep_dtype else None
    s = jnp.einsum("bhiqd,bhijkd->bhiqjk", qb, kg, preferred_element_type=f32) * scale  # [B,H,Qb,bq,cap,bk]
    valid = (jnp.arange(cap) < kv_num_blocks[..., None])[:, :, :, None, :, None]
    if is_causal:
        qpos = jnp.arange(Qb)[:, None] * block_q + jnp.arange(block_q)[None, :]  # [Qb, bq]
        kpos = kv_indices[..., None] * block_k + jnp.arange(block_k)  # [B,H,Qb,cap,bk]
        valid = valid & (qpos[None, None, :, :, None, None] >= kpos[:, :, :, None, :, :])
    s = jnp.where(valid, s, MASK_VALUE)
    m = jnp.max(s, axis=(-2, -1), keepdims=True)
    p = jnp.where(valid, jnp.exp(s - m), 0.0)
    l = jnp.sum(p, axis=(-2, -1), keepdims=True)
    p = p / jnp.where(l == 0, 1.0, l)
    o = jnp.einsum("bhiqjk,bhijkd->bhiqd", p.astype(vg.dtype) if keep_dtype else p, vg, preferred_element_type=f32)
    return o.transpose(0, 2, 3, 1, 4).reshape(B, Lq, H, D).astype(q.dtype)
