"""Public ops: ``flash_attention`` and ``block_sparse_attention`` (layout [B, L, H, D], GQA, causal or not).

``implementation``: ``None`` (Pallas on GPU/TPU, the XLA path on CPU), ``"xla"``, ``"pallas"`` (the kernel for
``backend``, default the current platform), ``"interpret"`` (the Pallas kernel run by the interpreter: any
platform; this is how the kernel is checked on CPU).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pallas_kernels.attention import reference as ref
from pallas_kernels.attention.kernel import BlockSizes, _is_pow2, flash_pallas

IMPLEMENTATIONS = (None, "xla", "pallas", "interpret")


def _platform(backend: str | None) -> str:
    b = (backend or jax.default_backend()).lower()
    return {"cuda": "gpu", "rocm": "gpu"}.get(b, b)


def _resolve(implementation, backend):
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {implementation!r}")
    plat = _platform(backend)
    if implementation is None:
        implementation = "pallas" if plat in ("gpu", "tpu") else "xla"
    if implementation == "pallas" and plat not in ("gpu", "tpu"):
        raise ValueError(
            f"implementation='pallas' needs backend 'gpu' or 'tpu' (got {plat!r}); "
            "use implementation='interpret' on CPU"
        )
    return implementation, plat


def _block_sizes(block_sizes, Lq, Lk, plat):
    bs = block_sizes or BlockSizes(min(64, Lq), min(64, Lk))
    for name, val in (("block_q", bs.block_q), ("block_k", bs.block_k)):
        if not isinstance(val, int) or val <= 0:
            raise ValueError(f"{name} must be a positive integer, got {val!r}")
        if plat == "gpu" and (not _is_pow2(val) or val < 16):
            raise ValueError(f"{name} must be a power of two >= 16 for the GPU kernel, got {val}")
    if Lq % bs.block_q or Lk % bs.block_k:
        raise ValueError(
            f"sequence lengths (Lq={Lq}, Lk={Lk}) must be multiples of block_q={bs.block_q} "
            f"and block_k={bs.block_k}"
        )
    return bs


def _bhld(x):
    return jnp.transpose(x, (0, 2, 1, 3))


def flash_attention(
    q,
    k,
    v,
    *,
    causal: bool = False,
    scale: float | None = None,
    block_sizes: BlockSizes | None = None,
    implementation: str | None = None,
    backend: str | None = None,
):
    """Dense attention ``softmax(scale q k^T) v`` (FlashAttention-2 online softmax in the kernel).

    q [B, Lq, H, D], k/v [B, Lk, Hkv, D] (H % Hkv == 0); returns [B, Lq, H, D] in q.dtype, equal to
    ``jax.nn.dot_product_attention(q, k, v, is_causal=causal)`` up to float32 rounding.
    """
    ref._check_qkv(q, k, v)
    implementation, plat = _resolve(implementation, backend)
    scale = ref.default_scale(q.shape[-1]) if scale is None else float(scale)
    if causal and q.shape[1] != k.shape[1]:
        raise ValueError(f"causal attention needs Lq == Lk, got {q.shape[1]} and {k.shape[1]}")
    if implementation == "xla":
        return ref.attention_reference(q, k, v, causal=causal, scale=scale)
    bs = _block_sizes(block_sizes, q.shape[1], k.shape[1], "gpu" if implementation == "interpret" else plat)
    out = flash_pallas(
        _bhld(q),
        _bhld(k),
        _bhld(v),
        causal=causal,
        scale=scale,
        block_sizes=bs,
        backend="gpu" if implementation == "interpret" else plat,
        interpret=implementation == "interpret",
    )
    return _bhld(out)


def _check_lists(kv_num_blocks, kv_indices, B, H, Qb, KVb):
    if kv_num_blocks.shape != (B, H, Qb):
        raise ValueError(
            f"kv_num_blocks must have shape (B, H, Qb) = {(B, H, Qb)}, got {kv_num_blocks.shape}"
        )
    if kv_indices.ndim != 4 or kv_indices.shape[:3] != (B, H, Qb):
        raise ValueError(
            f"kv_indices must have shape (B, H, Qb, cap) = {(B, H, Qb)} + (cap,), got {kv_indices.shape}"
        )
    if not (
        jnp.issubdtype(kv_num_blocks.dtype, jnp.integer) and jnp.issubdtype(kv_indices.dtype, jnp.integer)
    ):
        raise ValueError("kv_num_blocks and kv_indices must be integer arrays")
    cap = kv_indices.shape[-1]
    if not isinstance(kv_num_blocks, jax.core.Tracer):
        c = np.asarray(kv_num_blocks)
        if c.min(initial=0) < 0 or c.max(initial=0) > cap:
            raise ValueError(f"kv_num_blocks must lie in [0, cap={cap}], got range [{c.min()}, {c.max()}]")
    if not isinstance(kv_indices, jax.core.Tracer):
        ix = np.asarray(kv_indices)
        if ix.size and (ix.min() < 0 or ix.max() >= KVb):
            raise ValueError(
                f"kv_indices must lie in [0, {KVb}) (number of key blocks), "
                f"got range [{ix.min()}, {ix.max()}]"
            )


def block_sparse_attention(
    q,
    k,
    v,
    kv_num_blocks,
    kv_indices,
    *,
    block_q: int,
    block_k: int,
    causal: bool = False,
    scale: float | None = None,
    implementation: str | None = None,
    backend: str | None = None,
):
    """Block-sparse attention: query block i of (b, h) attends only to key blocks
    ``kv_indices[b, h, i, :kv_num_blocks[b, h, i]]`` (FlexAttention BlockMask lists, int32).

    q [B, Lq, H, D], k/v [B, Lk, Hkv, D]; kv_num_blocks [B, H, Lq/block_q],
    kv_indices [B, H, Lq/block_q, cap].
    Equals dense attention under the expanded block mask (and causal mask if ``causal``); a query with no key
    gets 0. Listed blocks must be distinct within a row (a repeated block would be counted twice). The
    ``"xla"`` path gathers only the listed blocks (work ~ cap / (Lk / block_k) of dense).
    """
    ref._check_qkv(q, k, v)
    implementation, plat = _resolve(implementation, backend)
    B, Lq, H, D = q.shape
    Lk = k.shape[1]
    bs = _block_sizes(
        BlockSizes(block_q, block_k), Lq, Lk, "gpu" if implementation in ("interpret",) else plat
    )
    _check_lists(kv_num_blocks, kv_indices, B, H, Lq // block_q, Lk // block_k)
    if causal and Lq != Lk:
        raise ValueError(f"causal attention needs Lq == Lk, got {Lq} and {Lk}")
    scale = ref.default_scale(D) if scale is None else float(scale)
    if implementation == "xla":
        return ref.block_sparse_xla(
            q, k, v, kv_num_blocks, kv_indices, block_q=block_q, block_k=block_k, causal=causal, scale=scale
        )
    out = flash_pallas(
        _bhld(q),
        _bhld(k),
        _bhld(v),
        kv_num_blocks.astype(jnp.int32),
        kv_indices.astype(jnp.int32),
        causal=causal,
        scale=scale,
        block_sizes=bs,
        backend="gpu" if implementation == "interpret" else plat,
        interpret=implementation == "interpret",
    )
    return _bhld(out)
