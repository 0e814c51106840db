"""Public ops: ``flash_attention`` and ``block_sparse_attention`` (layout [B, L, H, D], GQA, causal or not).

``implementation`` (:mod:`jaxwb.pallas_kernels.dispatch`): ``None`` (on a GPU the Triton kernel, or the Mosaic
GPU kernel where a hardware run measured it faster and it accepts the inputs; on a TPU the Mosaic TPU kernel;
the XLA path where no kernel fits the shapes and on a CPU), ``"xla"``, ``"triton"`` and ``"mosaic_gpu"`` (the
GPU kernels: ``kernel.py`` and the Hopper kernel of ``mosaic_gpu.py``), ``"mosaic_tpu"`` (the TPU kernel),
``"interpret"`` (the Triton form run by the Pallas interpreter: any platform).

The dense ``"xla"`` path *is* ``jax.nn.dot_product_attention(..., implementation="xla")`` (the peer: same
numerics, float32 softmax, and never slower than it); the block-sparse ``"xla"`` path gathers only the listed
key blocks.

Names follow ``jax.nn.dot_product_attention``: ``is_causal``,
``scale``; tiling by ``block_sizes=AttentionBlockSizes(block_q, block_k)``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from jaxwb.pallas_kernels import dispatch as dp
from jaxwb.pallas_kernels.attention import reference as ref
from jaxwb.pallas_kernels.attention.kernel import AttentionBlockSizes, flash_pallas, is_pow2
from jaxwb.pallas_kernels.dispatch import Implementation


def finite_output(op):
    """Wrap an attention op: with finite q, k, v (checked first) a non-finite output can only come from scores
    ``scale * q.k`` that overflow; raise ``ValueError`` naming q and k then (eager, ``grad``/``vmap`` of an eager
    call, or under ``jit`` inside ``checked``)."""

    @functools.wraps(op)
    def wrapped(*args, **kwargs):
        out = op(*args, **kwargs)
        q = args[0] if len(args) > 0 else kwargs["q"]
        k = args[1] if len(args) > 1 else kwargs["k"]
        if dp.concrete(out) is not None or dp.checkify_enabled():
            bad = jnp.sum(~jnp.isfinite(out)).astype(jnp.int32)
            dp.require(
                bad == 0,
                "q, k: the attention scores scale * q.k overflow (largest |q| {}, largest |k| {}); {} output "
                "value(s) are inf/nan: rescale q or k",
                jnp.max(jnp.abs(q)).astype(jnp.float32),
                jnp.max(jnp.abs(k)).astype(jnp.float32),
                bad,
            )
        return out

    return wrapped


ATTENTION_DTYPES = ("float16", "bfloat16", "float32")


def check_qkv(q, k, v, *, finite: bool = True) -> None:
    """dtype, rank, shape agreement, non-empty, finite (eager; traced under ``checked``)."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        dp.check_array(name, x, ndim=4, dtypes=ATTENTION_DTYPES)
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    ref.check_qkv_shapes(q, k, v)
    if finite:
        for name, x in (("q", q), ("k", k), ("v", v)):
            dp.check_finite(name, x, "; softmax attention is undefined for them")


def _check_scale(scale, head_dim: int) -> float:
    if scale is None:
        return ref.default_scale(head_dim)
    if dp.is_traced(scale):
        raise ValueError("scale must be a static Python float, got a traced value")
    s = float(scale)
    if not (s == s and abs(s) != float("inf")):
        raise ValueError(f"scale must be a finite float, got {scale!r}")
    return s


def pow2_divisor(n: int, cap: int = 64) -> int:
    """Largest power of two <= cap dividing n (1 if n is odd)."""
    b = 1
    while b * 2 <= cap and n % (b * 2) == 0:
        b *= 2
    return b


def _mosaic_gpu_refusal(q, k, v, block_sizes) -> str | None:
    from jaxwb.pallas_kernels.attention import mosaic_gpu

    return mosaic_gpu.unsupported_reason(q, k, v, block_sizes)


def refusal_for(bq: int, bk: int, q, k, v, mosaic_block_sizes):
    """``backend -> None | why not``: the Triton / Mosaic TPU tiling rules (:func:`_tiling_refusal`) and the
    Mosaic GPU kernel's (``mosaic_gpu.unsupported_reason`` with ``mosaic_block_sizes``)."""
    Lq, Lk, D = q.shape[1], k.shape[1], q.shape[-1]

    def refusal(b: str) -> str | None:
        if b == "mosaic_gpu":
            return _mosaic_gpu_refusal(q, k, v, mosaic_block_sizes)
        return _tiling_refusal(bq, bk, Lq, Lk, D, dp.BACKEND_PLATFORM[b])

    return refusal


def measured_facts(q, k) -> dict:
    """The facts :data:`jaxwb.pallas_kernels.dispatch.MEASURED`'s attention entries read."""
    return dict(dtype=jnp.dtype(q.dtype).name, head_dim=q.shape[-1], length=k.shape[1])


def _tiling_refusal(bq: int, bk: int, Lq: int, Lk: int, D: int, plat: str) -> str | None:
    """Why the kernel cannot take these shapes on ``plat`` (None: it can)."""
    if Lq % bq or Lk % bk:
        return (
            f"sequence lengths (Lq={Lq}, Lk={Lk}) must be multiples of block_q={bq} and block_k={bk} "
            "for the Pallas kernel"
        )
    if plat == "gpu":
        for name, val in (("block_q", bq), ("block_k", bk)):
            if not is_pow2(val) or val < 16:
                return f"{name} must be a power of two >= 16 for the GPU kernel, got {val}"
        if not is_pow2(D) or D < 16:
            return f"head_dim must be a power of two >= 16 for the GPU kernel, got {D}"
    if plat == "tpu" and bq % 8 and bq != Lq:
        return f"block_q must be a multiple of 8 (or Lq) for the TPU kernel, got {bq}"
    return None


def bhld(x):
    """Swap the sequence and head axes: ``[B, L, H, D]`` (the ops' layout) <-> ``[B, H, L, D]`` (the kernels')."""
    return jnp.transpose(x, (0, 2, 1, 3))


@finite_output
def flash_attention(
    q: Float[Array, "B Lq H D"],
    k: Float[Array, "B Lk Hkv D"],
    v: Float[Array, "B Lk Hkv D"],
    *,
    is_causal: bool = False,
    scale: float | None = None,
    block_sizes: AttentionBlockSizes | None = None,
    implementation: Implementation = None,
    backend: str | None = None,
) -> Float[Array, "B Lq H D"]:
    """Dense attention ``softmax(scale q k^T) v`` (FlashAttention-2 online softmax in the kernel).

    q [B, Lq, H, D], k/v [B, Lk, Hkv, D] (H % Hkv == 0), float16/bfloat16/float32, finite; returns
    [B, Lq, H, D] in q.dtype, equal to ``jax.nn.dot_product_attention(q, k, v, is_causal=is_causal)`` up to
    float32 rounding. ``is_causal`` needs Lq == Lk. ``block_sizes`` (kernel tiles) default to the largest
    power of two <= 64 dividing each length. ``implementation="mosaic_gpu"`` runs the Mosaic GPU (Hopper: wgmma,
    TMA) kernel of ``jaxwb.pallas_kernels.attention.mosaic_gpu`` (bf16/f16, D a multiple of 64, its own block
    sizes: ``block_sizes`` if given, else ``MosaicBlockSizes()``), which ``None`` picks on a GPU where a hardware
    run measured it faster than Triton (``dispatch.MEASURED``).
    """
    check_qkv(q, k, v)
    B, Lq, H, D = q.shape
    Lk = k.shape[1]
    if is_causal and Lq != Lk:
        raise ValueError(f"is_causal attention needs Lq == Lk, got {Lq} and {Lk}")
    scale = _check_scale(scale, D)
    if block_sizes is not None and not isinstance(block_sizes, AttentionBlockSizes):
        raise ValueError(f"block_sizes must be an AttentionBlockSizes, got {type(block_sizes).__name__}")
    bs = block_sizes or AttentionBlockSizes(pow2_divisor(Lq), pow2_divisor(Lk))
    impl, plat = dp.resolve(
        implementation,
        op="flash_attention",
        backends=dp.ATTENTION_BACKENDS,
        backend=backend,
        refusal=refusal_for(bs.block_q, bs.block_k, q, k, v, block_sizes),
        facts=measured_facts(q, k),
        inputs=(q, k, v),
    )
    if impl == "xla":
        return jax.nn.dot_product_attention(q, k, v, scale=scale, is_causal=is_causal, implementation="xla")
    if impl == "mosaic_gpu":
        from jaxwb.pallas_kernels.attention import mosaic_gpu

        return mosaic_gpu.flash_attention_mgpu(q, k, v, is_causal=is_causal, scale=scale, block_sizes=block_sizes)
    out = flash_pallas(
        bhld(q),
        bhld(k),
        bhld(v),
        causal=is_causal,
        scale=scale,
        block_sizes=bs,
        backend=plat,
        interpret=impl == "interpret",
    )
    return bhld(out)


def check_block_lists(kv_num_blocks, kv_indices, B: int, H: int, Qb: int, KVb: int) -> None:
    """Shapes, integer dtypes and ranges of FlexAttention-style block lists (ranges: eager, or traced under
    ``checked``: an out-of-range index would be an out-of-bounds read on hardware)."""
    for name, x in (("kv_num_blocks", kv_num_blocks), ("kv_indices", kv_indices)):
        dp.check_array(
            name, x, dtypes=("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"), allow_empty=True
        )
    if tuple(kv_num_blocks.shape) != (B, H, Qb):
        raise ValueError(f"kv_num_blocks must have shape (B, H, Qb) = {(B, H, Qb)}, got {kv_num_blocks.shape}")
    if kv_indices.ndim != 4 or tuple(kv_indices.shape[:3]) != (B, H, Qb):
        raise ValueError(f"kv_indices must have shape (B, H, Qb, cap) = {(B, H, Qb)} + (cap,), got {kv_indices.shape}")
    cap = kv_indices.shape[-1]
    if cap == 0:
        raise ValueError(f"kv_indices must have a capacity (last axis) >= 1, got shape {kv_indices.shape}")
    dp.check_range("kv_num_blocks", kv_num_blocks, 0, cap + 1)
    dp.check_range("kv_indices", kv_indices, 0, KVb)
    check_distinct_blocks(kv_num_blocks, kv_indices)


def repeated_blocks(xp, kv_num_blocks, kv_indices):
    """Per (b, h, query block): how many of the first ``kv_num_blocks`` listed key blocks repeat an earlier
    one (``xp``: numpy or jax.numpy)."""
    cap = kv_indices.shape[-1]
    slot = xp.arange(cap)
    listed = slot < kv_num_blocks[..., None]
    keyed = xp.where(listed, kv_indices.astype(xp.int64 if xp is np else jnp.int32), -1 - slot)  # unused: unique
    s = xp.sort(keyed, axis=-1)
    return xp.sum(s[..., 1:] == s[..., :-1], axis=-1)


def check_distinct_blocks(kv_num_blocks, kv_indices) -> None:
    """The listed key blocks of each row are distinct (a repeated block would be counted twice in the softmax):
    eager (numpy), under ``grad``/``vmap`` of an eager call, and under ``jit`` inside ``checked``."""
    msg = "kv_indices must list distinct key blocks per (batch, head, query block) row, got {} repeat(s)"
    if not (dp.is_traced(kv_num_blocks) or dp.is_traced(kv_indices)):
        repeats = int(np.sum(repeated_blocks(np, np.asarray(kv_num_blocks), np.asarray(kv_indices))))
        dp.require(repeats == 0, msg, repeats)
        return
    if dp.concrete(kv_num_blocks) is None and dp.concrete(kv_indices) is None and not dp.checkify_enabled():
        return
    n = jnp.sum(repeated_blocks(jnp, kv_num_blocks, kv_indices))
    dp.require(n == 0, msg, n)


@finite_output
def block_sparse_attention(
    q: Float[Array, "B Lq H D"],
    k: Float[Array, "B Lk Hkv D"],
    v: Float[Array, "B Lk Hkv D"],
    kv_num_blocks: Int[Array, "B H Qb"],
    kv_indices: Int[Array, "B H Qb cap"],
    *,
    block_sizes: AttentionBlockSizes,
    is_causal: bool = False,
    scale: float | None = None,
    implementation: Implementation = None,
    backend: str | None = None,
    xla_keep_dtype: bool = False,
) -> Float[Array, "B Lq H D"]:
    """Block-sparse attention: query block i of (b, h) attends only to key blocks
    ``kv_indices[b, h, i, :kv_num_blocks[b, h, i]]`` (FlexAttention BlockMask lists, integer).

    q [B, Lq, H, D], k/v [B, Lk, Hkv, D]; kv_num_blocks [B, H, Lq/block_q] in [0, cap],
    kv_indices [B, H, Lq/block_q, cap] in [0, Lk/block_k), with ``block_sizes=AttentionBlockSizes(block_q, block_k)``.
    Equals dense attention under the expanded block mask (and causal mask if ``is_causal``); a query with no
    key gets 0. Listed blocks must be distinct within a row (a repeated block would be counted twice). The
    ``"xla"`` path gathers only the listed blocks (work ~ cap / (Lk / block_k) of dense);
    ``xla_keep_dtype=True`` keeps the gathered K/V in their dtype there, with float32 accumulation
    (``reference.block_sparse_xla``; default False: cast to float32 as before).
    """
    if not isinstance(xla_keep_dtype, bool):
        raise ValueError(f"xla_keep_dtype must be a bool, got {xla_keep_dtype!r}")
    if not isinstance(block_sizes, AttentionBlockSizes):
        raise ValueError(f"block_sizes must be an AttentionBlockSizes, got {type(block_sizes).__name__}")
    bq, bk = block_sizes.block_q, block_sizes.block_k
    check_qkv(q, k, v)
    B, Lq, H, D = q.shape
    Lk = k.shape[1]
    if Lq % bq or Lk % bk:
        raise ValueError(f"sequence lengths (Lq={Lq}, Lk={Lk}) must be multiples of block_q={bq} and block_k={bk}")
    check_block_lists(kv_num_blocks, kv_indices, B, H, Lq // bq, Lk // bk)
    if is_causal and Lq != Lk:
        raise ValueError(f"is_causal attention needs Lq == Lk, got {Lq} and {Lk}")
    scale = _check_scale(scale, D)
    impl, plat = dp.resolve(
        implementation,
        op="block_sparse_attention",
        backends=dp.ATTENTION_BACKENDS,
        backend=backend,
        refusal=refusal_for(bq, bk, q, k, v, block_sizes),
        facts=measured_facts(q, k),
        inputs=(q, k, v),
    )
    if impl == "xla":
        return ref.block_sparse_xla(
            q,
            k,
            v,
            kv_num_blocks,
            kv_indices,
            block_q=bq,
            block_k=bk,
            is_causal=is_causal,
            scale=scale,
            keep_dtype=xla_keep_dtype,
        )
    if impl == "mosaic_gpu":
        from jaxwb.pallas_kernels.attention import mosaic_gpu

        return mosaic_gpu.block_sparse_attention_mgpu(
            q,
            k,
            v,
            kv_num_blocks,
            kv_indices,
            block_q=bq,
            block_k=bk,
            is_causal=is_causal,
            scale=scale,
        )
    out = flash_pallas(
        bhld(q),
        bhld(k),
        bhld(v),
        kv_num_blocks.astype(jnp.int32),
        kv_indices.astype(jnp.int32),
        causal=is_causal,
        scale=scale,
        block_sizes=block_sizes,
        backend=plat,
        interpret=impl == "interpret",
    )
    return bhld(out)
