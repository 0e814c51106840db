"""Per-coordinate scalar codebooks for row-wise PTQ.

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

Checked (``ValueError`` naming the parameter, ``TypeError`` for a ``book`` that is not a :class:`Codebook`; see
:mod:`jaxwb.theory.mpq.checks` for where value checks run): weights and grids real, finite, non-empty and of the
documented rank and shape; codes integer and in [0, K); ``bits``, ``group`` and ``fmt`` as documented.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from jaxwb.pallas_kernels.quant import fp4
from jaxwb.pallas_kernels.quant import reference as qref
from jaxwb.theory import validate as v
from jaxwb.theory.mpq import checks as c


class Codebook(NamedTuple):
    """``grid``: float32[m, d, K], the K values coordinate j of row i may take. ``scales``/``global_scale``: the
    kernels' scale bytes (uint8[m, d / B]) and FP32 global scale for an FP4 codebook (``None`` for INT-b);
    ``fmt``: "int" or the kernel format name."""

    grid: Float[Array, "m d K"]
    scales: Array | None = None
    global_scale: Array | None = None
    fmt: str = "int"


def check_codebook(name: str, book: object, lead: tuple[int, int] | None = None) -> None:
    """A :class:`~jaxwb.theory.mpq.codebooks.Codebook` whose grid is finite with shape ``lead + (K,)``."""
    if not isinstance(book, Codebook):
        raise TypeError(f"{name} must be a Codebook (int_codebook, fp4_codebook), got {type(book).__name__}")
    c.grid(f"{name}.grid", book.grid, lead, ndim=3)
    if book.fmt not in ("int", "nvfp4", "mxfp4"):
        raise ValueError(f"{name}.fmt must be 'int', 'nvfp4' or 'mxfp4', got {book.fmt!r}")


def _check_weight(w: ArrayLike, name: str = "w") -> jax.Array:
    """A finite, real, non-empty 2-D (rows, d) weight, as float32."""
    c.array(name, w, ndim=2)
    return jnp.asarray(w, jnp.float32)


def int_codebook(w: Float[ArrayLike, "m d"], *, bits: int, group: int) -> Codebook:
    """INT-``bits`` grid with per-row groups of ``group`` consecutive weights (min-max scale, zero point), scales
    chosen from the float ``w`` (GPTQ reference quantizer, static groups). Returns ``grid`` (m, d, 2^bits).

    Checked: ``w`` a finite real non-empty (m, d) array; ``bits`` an integer in [1, 8]; ``group`` a positive
    integer dividing d."""
    w = _check_weight(w)
    if isinstance(bits, bool) or not (isinstance(bits, (int, np.integer)) and 1 <= bits <= 8):
        raise ValueError(f"bits must be an integer in [1, 8], got {bits!r}")
    m, d = w.shape
    c.int_option("group", group)
    if d % group:
        raise ValueError(f"group must divide d={d} (w.shape[1]), got {group!r}")
    bits, group = int(bits), int(group)
    cw = c.concrete(w)  # a w near the float32 range's ends: computed on w * 2^-e (exact; the grid scales by 2^e)
    e = 0 if cw is None else c.pow2_exponent(float(np.max(np.abs(cw))), 100)
    w = c.times_pow2(w, -e)
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
    return Codebook(c.times_pow2(jnp.repeat(grid, group, axis=1), e))


def fp4_codebook(w: Float[ArrayLike, "m d"], fmt: str = "nvfp4") -> Codebook:
    """The kernels' ``fmt`` ("nvfp4" or "mxfp4") grid for ``w``: scales from the kernels' reference quantizer,
    values of the 16 E2M1 codes from the kernels' dequantizer. Returns ``grid`` (m, d, 16) (index = E2M1 code).

    Checked: ``fmt`` "nvfp4" or "mxfp4"; ``w`` a finite real non-empty (m, d) array, d a multiple of the
    format's block (16 or 32)."""
    if not isinstance(fmt, str) or fmt not in ("nvfp4", "mxfp4"):
        raise ValueError(f"fmt must be 'nvfp4' or 'mxfp4', got {fmt!r}")
    w = _check_weight(w)
    block = fp4.BLOCK_SIZE[fmt]
    m, d = w.shape
    if d % block:
        raise ValueError(f"w.shape[1] must be a multiple of {block} for {fmt}, got {d}")
    q = qref.nvfp4_quantize(w) if fmt == "nvfp4" else qref.mxfp4_quantize(w)
    codes = jnp.broadcast_to(jnp.arange(16, dtype=jnp.uint32)[:, None, None, None], (16, m, d // block, block))
    vals = jax.vmap(lambda c: qref.dequantize_blocks(c, q.scales, q.global_scale, fmt))(codes)
    grid = jnp.moveaxis(vals.reshape(16, m, d), 0, -1)
    return Codebook(grid, q.scales, q.global_scale, fmt)


def nearest_unchecked(x, grid):
    """:func:`nearest` without checks (inside the jitted solvers)."""
    return jnp.argmin(jnp.abs(jnp.asarray(grid) - jnp.asarray(x)[..., None]), axis=-1)


def values_unchecked(codes, grid):
    """:func:`values` without checks (inside the jitted solvers)."""
    return jnp.take_along_axis(jnp.asarray(grid), jnp.asarray(codes)[..., None], axis=-1)[..., 0]


def nearest(x: Float[ArrayLike, "*b"], grid: Float[ArrayLike, "*b K"]) -> Int[Array, "*b"]:
    """Index of the grid value nearest to ``x`` (first index on ties): round to nearest on any scalar grid.

    Checked: ``x`` finite and real (any rank); ``grid`` finite, real, of shape ``x.shape + (K,)``, K >= 1."""
    if isinstance(x, (str, bytes)) or x is None:
        raise ValueError(f"x must be a real number or array, got {type(x).__name__}")
    v.real("x", x)
    v.finite("x", x)
    c.grid("grid", grid, tuple(np.shape(x)))
    return nearest_unchecked(x, grid)


def values(codes: Int[ArrayLike, "m d"], grid: Float[ArrayLike, "m d K"]) -> Float[Array, "m d"]:
    """The values ``grid[i, j, codes[i, j]]`` of integer codes.

    Checked: ``grid`` finite and real with K >= 1 values on its last axis; ``codes`` an integer array of shape
    ``grid.shape[:-1]`` with every entry in [0, K) (no wrap-around of negative codes)."""
    if isinstance(grid, (str, bytes)) or grid is None:
        raise ValueError(f"grid must be an array, got {type(grid).__name__}")
    if np.ndim(grid) < 1:
        raise ValueError(f"grid must have at least 1 axis (the K values), got shape {np.shape(grid)}")
    c.grid("grid", grid, None, ndim=np.ndim(grid))
    shp = tuple(np.shape(grid))
    c.codes("codes", codes, shp[:-1], shp[-1])
    return values_unchecked(codes, grid)


def pack_fp4(codes: Int[ArrayLike, "m d"], book: Codebook) -> fp4.QuantizedArray:
    """FP4 ``codes`` (E2M1 code per weight) with the codebook's kernel scales as the kernels' packed array.

    Checked: ``book`` an FP4 :class:`Codebook` (:func:`fp4_codebook`: its grid (m, d, 16), scale bytes
    (m, d / block) and global scale present); ``codes`` an integer (m, d) array with every code in [0, 16)."""
    check_codebook("book", book)
    if book.fmt not in ("nvfp4", "mxfp4") or book.scales is None or book.global_scale is None:
        raise ValueError(f"book must be an FP4 codebook (fp4_codebook), got fmt={book.fmt!r}")
    m, d, k = np.shape(book.grid)
    block = fp4.BLOCK_SIZE[book.fmt]
    if k != 16 or d % block or tuple(np.shape(book.scales)) != (m, d // block) or np.size(book.global_scale) != 1:
        raise ValueError(
            f"book must be an FP4 codebook of fp4_codebook (grid (m, d, 16), scales (m, d / {block})), got grid "
            f"{tuple(np.shape(book.grid))}, scales {tuple(np.shape(book.scales))}"
        )
    c.codes("codes", codes, (m, d), 16)
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
    consecutive distinct sorted grid values (float); coordinates whose grid holds one distinct value are left out,
    NaN when every coordinate's is. Checked: ``book`` a :class:`Codebook` with a finite grid."""
    check_codebook("book", book)
    return spread_of_grid(book.grid)


def spread_of_grid(grid) -> float:
    """:func:`grid_spread` of a checked grid."""
    g = np.sort(np.asarray(grid, np.float64), axis=-1)
    gaps = np.diff(g, axis=-1)
    gaps = np.where(gaps > 0, gaps, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: the coordinates left out
        return float(np.nanmean(np.nanmin(gaps, axis=-1) ** 2))
