"""InQuant: in-place mixed-precision 4-bit KV-cache packing (NeurIPS 2026; ``docs/papers/quantization.md``).

Input: a KV tensor ``x`` of shape ``(..., T, C)`` (tokens x channels, 16-bit in practice). Outlier
channels need
8 bits; each borrows the 4-bit slot of a low-saliency neighbour channel for its high nibble, so the packed
layout is exactly the plain 4-bit layout: ``C/2`` bytes per token, 4.0x smaller than 16-bit.

Steps (``inquant_pack``):
  1. saliency by sampling: ``s_c = mean |x[t, c]|`` over ``n_samples`` tokens drawn without replacement with
     the explicit ``key`` (every leading index of a sampled token row counts);
  2. outliers: the ``n_outliers`` channels of largest saliency;
  3. donors, in decreasing outlier saliency: the free channel nearest to the outlier (stride 1 = adjacent,
     then stride 2, 3, ... when the neighbours are themselves outliers or already donors: "stride handling
     for adjacent outliers"), ties between the two sides broken by lower saliency ("saliency-aware");
  4. per token: the ordinary channels get symmetric int4 codes in [-7, 7] with scale ``s4 = max|x| / 7`` over
     ordinary channels; the outliers get int8 codes in [-127, 127] with ``s8 = max|x_outlier| / 127``, the low
     nibble in the outlier's own slot, the high nibble in its donor's slot; a donor channel is restored as its
     sampled mean (``donor_fill``);
  5. packing: two 4-bit slots per uint8, channel 2i in the low nibble.
The descriptor (outlier and donor indices, donor fill values) is per tensor; the per-token scales are
``(..., T, 2)`` float16. ``inquant_unpack`` reads the descriptor to rebuild each outlier byte from its two
nibbles ("descriptor-guided recovery").

Sizes: ``packed`` is exactly ``16 / 4 = 4.0x`` smaller than the 16-bit input; the metadata (two float16 scales
per token, plus 6 bytes per outlier in the descriptor) is reported separately by ``InQuantPacked.nbytes``.

Kernels: ``implementation="triton"|"mosaic_tpu"|"interpret"`` runs the unpack (dequantize) step as a Pallas
kernel; the outlier/donor recombination is a one-hot matmul (a gather GPUs can lower: ``hi = nibbles @ P``, ``P[donor,
outlier] = 1``), in bfloat16 (exact: nibbles and 0/1 entries, one product per output). Packing (a per-tensor
saliency sort) always runs as XLA. On an H200 (2026-12-04, T = 2^20, C = 128, bf16 out) the kernel took
343 us (64 rows per program, the default; 128 rows: 414 us) vs XLA's 1057 us; with float32 operands at
HIGHEST precision it had taken 60.8 ms.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jaxtyping import Array, Float

from jaxwb.pallas_kernels import dispatch as dp
from jaxwb.pallas_kernels.dispatch import Implementation
from jaxwb.pallas_kernels.quant.hadamard import per_platform, resolve_implementation


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["packed", "scales", "outliers", "donors", "donor_fill"],
    meta_fields=["channels", "dtype"],
)
@dataclasses.dataclass(frozen=True)
class InQuantPacked:
    """packed uint8 (..., T, C/2); scales float16 (..., T, 2) = (s4, s8); outliers, donors int32 (k,);
    donor_fill float16 (k,); channels C; dtype of the input."""

    packed: jax.Array
    scales: jax.Array
    outliers: jax.Array
    donors: jax.Array
    donor_fill: jax.Array
    channels: int
    dtype: str

    def nbytes(self) -> dict[str, int | float]:
        """Bytes of the payload, of the metadata, and of the 16-bit input, with both compression ratios."""
        payload = int(np.prod(self.packed.shape))
        meta = int(np.prod(self.scales.shape)) * 2 + int(self.outliers.shape[0]) * (2 + 2 + 2)
        dense16 = int(np.prod(self.packed.shape[:-1])) * self.channels * 2
        return {
            "payload": payload,
            "metadata": meta,
            "input_16bit": dense16,
            "payload_ratio": dense16 / payload,
            "total_ratio": dense16 / (payload + meta),
        }


def _check(x, n_outliers, n_samples):
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., T, C) with at least 2 axes, got {x.shape}")
    dp.check_array("x", x, min_ndim=2)
    dp.check_finite("x", x, "; the per-token scales would become inf/nan")
    c = x.shape[-1]
    if c % 2 or c < 4:
        raise ValueError(f"x.shape[-1] (channels) must be even and >= 4, got {c}")
    if not isinstance(n_outliers, (int, np.integer)) or not 0 <= n_outliers <= c // 3:
        raise ValueError(
            f"n_outliers must be an integer in [0, C/3] = [0, {c // 3}] (each outlier takes a donor), "
            f"got {n_outliers!r}"
        )
    if not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")


def check_float16_range(x, scales, fill) -> None:
    """The stored float16 scales and donor fills are finite: |x| up to 7 * 65504 in ordinary channels (more in
    outlier channels); beyond, ``ValueError`` naming x (eager, ``grad``/``vmap`` of an eager call, or under
    ``jit`` inside ``checked``)."""
    if dp.concrete(scales) is None and not dp.checkify_enabled():
        return
    bad = (jnp.sum(~jnp.isfinite(scales)) + jnp.sum(~jnp.isfinite(fill))).astype(jnp.int32)
    dp.require(
        bad == 0,
        "x is too large for InQuant's float16 scales (largest |x| {}; ordinary channels hold up to 7 * 65504): "
        "rescale x",
        jnp.max(jnp.abs(x)).astype(jnp.float32),
    )


def channel_saliency(x, *, key, n_samples: int):
    """Mean |x| per channel over ``n_samples`` sampled token rows of ``x.reshape(-1, C)``: shape (C,)."""
    rows = x.reshape(-1, x.shape[-1]).astype(jnp.float32)
    n = rows.shape[0]
    idx = jax.random.choice(key, n, (min(n_samples, n),), replace=False)
    sample = rows[idx]
    return jnp.mean(jnp.abs(sample), axis=0), jnp.mean(sample, axis=0)


def select_outliers_and_donors(saliency, n_outliers: int):
    """(outliers, donors) int32 (k,): top-k saliency channels and, for each (in decreasing saliency), the
    nearest free channel, ties broken by lower saliency (stride grows past adjacent outliers and used
    donors)."""
    c = saliency.shape[0]
    order = jnp.argsort(-saliency)
    outliers = order[:n_outliers].astype(jnp.int32)
    rank = jnp.argsort(jnp.argsort(saliency)).astype(jnp.int32)  # 0 = least salient
    taken0 = jnp.zeros(c, bool).at[outliers].set(True)
    chans = jnp.arange(c, dtype=jnp.int32)

    def body(i, carry):
        taken, donors = carry
        o = outliers[i]
        cost = jnp.abs(chans - o) * (c + 1) + rank
        cost = jnp.where(taken, jnp.iinfo(jnp.int32).max, cost)
        dn = jnp.argmin(cost).astype(jnp.int32)
        return taken.at[dn].set(True), donors.at[i].set(dn)

    _, donors = jax.lax.fori_loop(0, n_outliers, body, (taken0, jnp.zeros(n_outliers, jnp.int32)))
    return outliers, donors


def _nibble_pack(nib):
    """(..., C) values in [0, 16) -> (..., C/2) uint8, channel 2i in the low nibble."""
    nib = nib.astype(jnp.uint8)
    return nib[..., 0::2] | (nib[..., 1::2] << 4)


def _nibble_unpack(packed):
    lo = packed & 0xF
    hi = packed >> 4
    return jnp.stack([lo, hi], axis=-1).reshape(*packed.shape[:-1], packed.shape[-1] * 2)


def _sign4(nib):
    """4-bit two's complement nibble -> int32 in [-8, 7]."""
    nib = nib.astype(jnp.int32)
    return jnp.where(nib >= 8, nib - 16, nib)


@functools.partial(jax.jit, static_argnames=("n_outliers", "n_samples"))
def _pack(x, key, *, n_outliers, n_samples):
    c = x.shape[-1]
    saliency, mean = channel_saliency(x, key=key, n_samples=n_samples)
    outliers, donors = select_outliers_and_donors(saliency, n_outliers)
    is_out = jnp.zeros(c, bool).at[outliers].set(True)
    is_don = jnp.zeros(c, bool).at[donors].set(True)
    ordinary = ~(is_out | is_don)
    xf = x.astype(jnp.float32)
    tiny = jnp.finfo(jnp.float16).tiny
    s4 = jnp.max(jnp.where(ordinary, jnp.abs(xf), 0.0), axis=-1, keepdims=True) / 7.0
    s8 = jnp.max(jnp.where(is_out, jnp.abs(xf), 0.0), axis=-1, keepdims=True) / 127.0
    # The codes are computed with the float16-rounded scales that are stored. reduce_precision, not a
    # float16 round trip: XLA:GPU removes convert(convert(s, f16), f32) (excess precision allowed; seen on an
    # H200, where codes from the unrounded scale broke the half-step error bound of the stored one).
    s4 = jax.lax.reduce_precision(jnp.maximum(s4, tiny), exponent_bits=5, mantissa_bits=10)
    s8 = jax.lax.reduce_precision(jnp.maximum(s8, tiny), exponent_bits=5, mantissa_bits=10)
    q4 = jnp.clip(jnp.round(xf / s4), -7, 7).astype(jnp.int32)
    q8 = jnp.clip(jnp.round(xf / s8), -127, 127).astype(jnp.int32)
    s4, s8 = s4.astype(jnp.float16), s8.astype(jnp.float16)  # exact: already float16 values
    byte8 = q8 & 0xFF  # two's complement byte
    nib = jnp.where(ordinary, q4 & 0xF, 0)
    nib = jnp.where(is_out, byte8 & 0xF, nib)
    hi_at_out = (byte8 >> 4) & 0xF  # (..., C): high nibble of each outlier, still at the outlier's column
    nib = nib.at[..., donors].set(hi_at_out[..., outliers])
    return (
        _nibble_pack(nib),
        jnp.concatenate([s4, s8], axis=-1),
        outliers,
        donors,
        mean[donors].astype(jnp.float16),
    )


def inquant_pack(
    x: Float[Array, "*batch T C"],
    *,
    key: jax.Array,
    n_outliers: int | None = None,
    n_samples: int = 64,
    implementation: Implementation = None,
) -> InQuantPacked:
    """Pack ``x`` (..., T, C) into the InQuant 4-bit layout (module docstring). ``n_outliers`` defaults
    to C/32
    (at least 1). ``implementation`` is accepted for the common op signature; packing runs as XLA."""
    if not hasattr(x, "dtype"):
        x = jnp.asarray(x)
    if n_outliers is None:
        n_outliers = max(1, x.shape[-1] // 32)
    _check(x, n_outliers, n_samples)
    resolve_implementation(implementation, inputs=(x,), op="inquant_pack")  # validated; packing runs as XLA
    packed, scales, outliers, donors, fill = _pack(x, key, n_outliers=int(n_outliers), n_samples=int(n_samples))
    check_float16_range(x, scales, fill)
    return InQuantPacked(
        packed=packed,
        scales=scales,
        outliers=outliers,
        donors=donors,
        donor_fill=fill,
        channels=int(x.shape[-1]),
        dtype=jnp.dtype(x.dtype).name,
    )


# ---------------------------------------------------------------------------------------------------------
# Unpack: reference and Pallas kernel
# ---------------------------------------------------------------------------------------------------------


def _routing(q: InQuantPacked):
    """Masks (1, C) and the one-hot matrices the kernel uses instead of gathers (exact on small integers):
    E, O (C/2, C) put the low/high nibble of byte i in channel 2i / 2i+1, and P (C, C) with P[donor, outlier]
    = 1 moves each donor's nibble to its outlier's column: ``RE = E P``, ``RO = O P``."""
    c = q.channels
    is_out = jnp.zeros((1, c), jnp.float32).at[0, q.outliers].set(1.0)
    is_don = jnp.zeros((1, c), jnp.float32).at[0, q.donors].set(1.0)
    fill = jnp.zeros((1, c), jnp.float32).at[0, q.donors].set(q.donor_fill.astype(jnp.float32))
    half = jnp.arange(c // 2)
    even = jnp.zeros((c // 2, c), jnp.float32).at[half, 2 * half].set(1.0)
    odd = jnp.zeros((c // 2, c), jnp.float32).at[half, 2 * half + 1].set(1.0)
    route = jnp.zeros((c, c), jnp.float32).at[q.donors, q.outliers].set(1.0)
    # 0/1 matrices with at most one 1 per column: exact in bfloat16, as is every product with them (below)
    onehot = [m.astype(jnp.bfloat16) for m in (even, odd, even @ route, odd @ route)]
    return is_out, is_don, fill, *onehot


@functools.partial(jax.jit, static_argnames=("dtype",))
def inquant_unpack_reference(q: InQuantPacked, dtype=jnp.float32):
    nib = _nibble_unpack(q.packed).astype(jnp.int32)  # (..., C)
    s4 = q.scales[..., 0:1].astype(jnp.float32)
    s8 = q.scales[..., 1:2].astype(jnp.float32)
    c = q.channels
    is_out = jnp.zeros(c, bool).at[q.outliers].set(True)
    is_don = jnp.zeros(c, bool).at[q.donors].set(True)
    hi = jnp.zeros_like(nib).at[..., q.outliers].set(nib[..., q.donors])  # descriptor-guided recovery
    byte8 = nib | (hi << 4)
    q8 = jnp.where(byte8 >= 128, byte8 - 256, byte8)
    fill = jnp.zeros(c, jnp.float32).at[q.donors].set(q.donor_fill.astype(jnp.float32))
    val = jnp.where(is_out, q8 * s8, _sign4(nib) * s4)
    val = jnp.where(is_don, fill, val)
    return val.astype(dtype)


def _unpack_kernel(p_ref, s4_ref, s8_ref, out_ref, don_ref, fill_ref, e_ref, o_ref_, re_ref, ro_ref, y_ref):
    p = p_ref[...].astype(jnp.int32)  # (rows, C/2) packed bytes
    # nibbles 0..15 and one-hot columns are exact in bfloat16 and each output is a single product, so the
    # bf16 dots (tensor cores / MXU) with float32 results are exact; float32 operands at HIGHEST ran as
    # IEEE FMAs on an H200 (2026-12-04: 57x slower than the XLA path)
    lo = (p & 0xF).astype(jnp.bfloat16)
    hi = ((p >> 4) & 0xF).astype(jnp.bfloat16)
    dot = functools.partial(jnp.dot, preferred_element_type=jnp.float32)
    v = dot(lo, e_ref[...]) + dot(hi, o_ref_[...])  # (rows, C) nibble of every channel (exact integers)
    h = dot(lo, re_ref[...]) + dot(hi, ro_ref[...])  # each outlier's high nibble, from its donor's slot
    byte = v + 16.0 * h
    q8 = jnp.where(byte >= 128.0, byte - 256.0, byte)
    q4 = jnp.where(v >= 8.0, v - 16.0, v)
    val = jnp.where(out_ref[...] > 0, q8 * s8_ref[...], q4 * s4_ref[...])  # scales (rows, 1): no slicing
    val = jnp.where(don_ref[...] > 0, fill_ref[...], val)
    y_ref[...] = val.astype(y_ref.dtype)


def _unpack_call(packed, scales, *routing, dtype, rows, interpret, compiler_params):
    """packed (n, C/2) uint8; scales (n, 2) f32; routing from ``_routing``."""
    n, h = packed.shape
    c = 2 * h
    n_pad = -(-n // rows) * rows
    packed = jnp.pad(packed, ((0, n_pad - n), (0, 0)))
    scales = jnp.pad(scales, ((0, n_pad - n), (0, 0)))
    vec = pl.BlockSpec((1, c), lambda i: (0, 0))
    full = lambda shape: pl.BlockSpec(shape, lambda i: (0, 0))
    out = pl.pallas_call(
        _unpack_kernel,
        out_shape=jax.ShapeDtypeStruct((n_pad, c), dtype),
        grid=(n_pad // rows,),
        in_specs=[
            pl.BlockSpec((rows, h), lambda i: (i, 0)),
            pl.BlockSpec((rows, 1), lambda i: (i, 0)),
            pl.BlockSpec((rows, 1), lambda i: (i, 0)),
            vec,
            vec,
            vec,
            full((h, c)),
            full((h, c)),
            full((h, c)),
            full((h, c)),
        ],
        out_specs=pl.BlockSpec((rows, c), lambda i: (i, 0)),
        interpret=interpret,
        compiler_params=compiler_params,
        name="inquant_unpack",
    )(packed, scales[:, 0:1], scales[:, 1:2], *routing)
    return out[:n]


def inquant_unpack(
    q: InQuantPacked,
    *,
    dtype=jnp.float32,
    implementation: Implementation = None,
    block_rows: int = 64,
    backend: str | None = None,
) -> Float[Array, "*batch T C"]:
    """Dequantize an ``InQuantPacked`` to ``(..., T, C)``: ordinary channels from int4, outliers from the
    8-bit
    code rebuilt out of their own and their donor's nibble, donors as their sampled mean."""
    if not isinstance(q, InQuantPacked):
        raise ValueError(f"q must be an InQuantPacked from inquant_pack, got {type(q).__name__}")
    from jaxwb.pallas_kernels.quant.nvfp4 import float_out_dtype

    dtype = float_out_dtype(dtype)
    dp.check_block("block_rows", block_rows, pow2=True)
    c = q.channels

    def refusal(p):
        if c < 32 or c & (c - 1):
            return f"channels must be a power of two >= 32 for the Pallas unpack, got {c}"
        return None

    impl, _ = resolve_implementation(implementation, refusal, backend, inputs=(q.packed,), op="inquant_unpack")
    if impl == "xla":
        return inquant_unpack_reference(q, dtype)
    shape = (*q.packed.shape[:-1], c)
    call = functools.partial(_unpack_call, dtype=dtype, rows=block_rows, interpret=impl == "interpret")
    out = per_platform(
        call,
        q.packed.reshape(-1, c // 2),
        q.scales.reshape(-1, 2).astype(jnp.float32),
        *_routing(q),
        interpret=impl == "interpret",
        num_warps=4,
    )
    return out.reshape(shape)
