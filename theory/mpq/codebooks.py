"""Per-coordinate scalar codebooks for row-wise PTQ (``shared/papers/mpq.md``, "Codebook").

A :class:`Codebook` holds, for every row i and input coordinate j of a weight W (m, d), the K values that
coordinate may take: ``grid[i, j, k]``. The solvers only read the grid, so one solver serves every format:

* INT-b, groups of g consecutive weights, asymmetric min-max scale and zero point chosen from the float row
  before any solve (the quantizer of the GPTQ reference code, ``quant.py``, ``sym=False``, with static groups):
  ``xmin = min(min w_G, 0)``, ``xmax = max(max w_G, 0)`` (``-1, 1`` if equal), ``s = (xmax - xmin) / (2^b - 1)``,
  ``z = round(-xmin / s)``, value of code k = ``s (k - z)``, k = 0 .. 2^b - 1.
* NVFP4 / MXFP4: the global and block scales that the kernels' quantizer chooses for the float W
  (``jaxwb.pallas_kernels.quant.reference.nvfp4_quantize`` / ``mxfp4_quantize``), and for every E2M1 code
  c = 0..15 the value the kernels' dequantizer returns (``reference.dequantize_blocks``): a solver's codes packed
  with those scale bytes dequantize to exactly the solver's values (bit for bit; tested).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from jaxwb.pallas_kernels.quant import fp4
from jaxwb.pallas_kernels.quant import reference as qref


class Codebook(NamedTuple):
    """``grid``: float32[m, d, K], the K values coordinate j of row i may take. ``scales``/``global_scale``: the
    kernels' scale bytes (uint8[m, d / B]) and FP32 global scale for an FP4 codebook (``None`` for INT-b);
    ``fmt``: "int" or the kernel format name."""

    grid: Float[Array, "m d K"]
    scales: Array | None = None
    global_scale: Array | None = None
    fmt: str = "int"


def _check_weight(w: ArrayLike, name: str = "w") -> jax.Array:
    w = jnp.asarray(w, jnp.float32)
    if w.ndim != 2 or w.size == 0:
        raise ValueError(f"{name} must be a non-empty 2-D (rows, d) array, got shape {w.shape}")
    return w


def int_codebook(w: Float[ArrayLike, "m d"], *, bits: int, group: int) -> Codebook:
    """INT-``bits`` grid with per-row groups of ``group`` consecutive weights (min-max scale, zero point), scales
    chosen from the float ``w`` (GPTQ reference quantizer, static groups). Returns ``grid`` (m, d, 2^bits)."""
    w = _check_weight(w)
    if not (isinstance(bits, int) and 1 <= bits <= 8):
        raise ValueError(f"bits must be an integer in [1, 8], got {bits!r}")
    m, d = w.shape
    if not (isinstance(group, int) and group >= 1 and d % group == 0):
        raise ValueError(f"group must be a positive integer dividing d={d}, got {group!r}")
    maxq = 2**bits - 1
    wg = w.reshape(m, d // group, group)
    xmin = jnp.minimum(jnp.min(wg, axis=-1), 0.0)
    xmax = jnp.maximum(jnp.max(wg, axis=-1), 0.0)
    same = xmin == xmax
    xmin, xmax = jnp.where(same, -1.0, xmin), jnp.where(same, 1.0, xmax)
    scale = (xmax - xmin) / maxq
    zero = jnp.round(-xmin / scale)
    k = jnp.arange(maxq + 1, dtype=jnp.float32)
    grid = scale[..., None] * (k - zero[..., None])  # (m, d/g, K)
    return Codebook(jnp.repeat(grid, group, axis=1))


def fp4_codebook(w: Float[ArrayLike, "m d"], fmt: str = "nvfp4") -> Codebook:
    """The kernels' ``fmt`` ("nvfp4" or "mxfp4") grid for ``w``: scales from the kernels' reference quantizer,
    values of the 16 E2M1 codes from the kernels' dequantizer. Returns ``grid`` (m, d, 16) (index = E2M1 code)."""
    w = _check_weight(w)
    if fmt not in ("nvfp4", "mxfp4"):
        raise ValueError(f"fmt must be 'nvfp4' or 'mxfp4', got {fmt!r}")
    block = fp4.BLOCK_SIZE[fmt]
    m, d = w.shape
    if d % block:
        raise ValueError(f"w.shape[1] must be a multiple of {block} for {fmt}, got {d}")
    q = qref.nvfp4_quantize(w) if fmt == "nvfp4" else qref.mxfp4_quantize(w)
    codes = jnp.broadcast_to(jnp.arange(16, dtype=jnp.uint32)[:, None, None, None], (16, m, d // block, block))
    vals = jax.vmap(lambda c: qref.dequantize_blocks(c, q.scales, q.global_scale, fmt))(codes)
    grid = jnp.moveaxis(vals.reshape(16, m, d), 0, -1)
    return Codebook(grid, q.scales, q.global_scale, fmt)


def nearest(x: Float[ArrayLike, "*b"], grid: Float[ArrayLike, "*b K"]) -> Int[Array, "*b"]:
    """Index of the grid value nearest to ``x`` (first index on ties): round to nearest on any scalar grid."""
    return jnp.argmin(jnp.abs(jnp.asarray(grid) - jnp.asarray(x)[..., None]), axis=-1)


def values(codes: Int[ArrayLike, "m d"], grid: Float[ArrayLike, "m d K"]) -> Float[Array, "m d"]:
    """The values ``grid[i, j, codes[i, j]]`` of integer codes."""
    return jnp.take_along_axis(jnp.asarray(grid), jnp.asarray(codes)[..., None], axis=-1)[..., 0]


def pack_fp4(codes: Int[ArrayLike, "m d"], book: Codebook) -> fp4.QuantizedArray:
    """FP4 ``codes`` (E2M1 code per weight) with the codebook's kernel scales as the kernels' packed array."""
    if book.fmt not in ("nvfp4", "mxfp4") or book.scales is None or book.global_scale is None:
        raise ValueError(f"book must be an FP4 codebook (fp4_codebook), got fmt={book.fmt!r}")
    codes = jnp.asarray(codes)
    return fp4.QuantizedArray(
        codes=fp4.pack_nibbles(codes.astype(jnp.uint32)),
        scales=jnp.asarray(book.scales).astype(jnp.uint8),
        global_scale=jnp.asarray(book.global_scale, jnp.float32),
        shape=tuple(codes.shape),
        format=book.fmt,
        block_size=fp4.BLOCK_SIZE[book.fmt],
    )


def grid_spread(book: Codebook) -> float:
    """Mean squared grid step (a scale for the inverse temperature): mean over (i, j) of the squared gap between
    consecutive distinct sorted grid values (float)."""
    g = np.sort(np.asarray(book.grid, np.float64), axis=-1)
    gaps = np.diff(g, axis=-1)
    gaps = np.where(gaps > 0, gaps, np.nan)
    return float(np.nanmean(np.nanmin(gaps, axis=-1) ** 2))
