"""Dithered quantization with one randomized Hadamard transform (RHT): reference, fused Pallas kernels, ops.

Notation: ``x`` in R^d (d a power of two), ``D`` a diagonal of random
signs, ``H`` the normalized Walsh-Hadamard matrix, ``y = H D x`` (so ||y|| = ||x||), ``sigma = ||x|| /
sqrt(d)``
(the per-coordinate scale a uniformly random rotation would give), ``b`` bits per coordinate, ``N = 2^b``
levels, and ``u ~ U[0, 1)`` one random scalar dither per vector.

Scalar quantizer (the same for every coordinate): the Gaussian-optimal compander of Panter and Dite,

    z = G(y / sigma),   G(t) = Phi(t / sqrt 3)          (G' proportional to the N(0,1) density^(1/3))

maps the real line onto (0, 1); a uniform grid of step ``delta = 1/(N - 1)`` shifted by the dither,

    k = floor(z / delta + u)  in {0, ..., N - 1}       (cell k = [(k - u) delta, (k + 1 - u) delta) in z)

and the reconstruction is ``q = G^{-1}(midpoint of cell k clipped to [0, 1])`` (a unit-scale value). The step
is 1/(N - 1) rather than 1/N because a grid shifted by an arbitrary dither needs N - 1 full steps to cover
[0, 1] with only N cells; this costs a factor (N/(N-1))^2 = 1 + O(2^-b) in MSE, part of the o(1) term.

Averaged over the dither, coordinate i has error ~ delta^2 / (12 G'(y_i/sigma)^2) sigma^2 whatever y_i is,
and E_D exp(y_i^2 / (3 sigma^2)) <= sqrt 3 for every x (a Rademacher sum is sub-Gaussian), which gives the
paper's bound for one RHT, uniformly over x and d:

    E ||x - x_hat||^2 <= (pi sqrt(3) / 2 + o(1)) 4^-b ||x||^2        (theory/dithered_quant.py)

Scalings (one float32 per vector, ``scaling=``):
  "turbo"    S = sigma                       (TurboQuant-style: the codebook is scaled by the known norm)
  "mse"      S = <y, q> / ||q||^2            (RaBitQ/EDEN-style least-squares rescale: never worse than turbo)
  "unbiased" S = ||x||^2 / <y, q>            (EDEN's unbiased scale: <x_hat, x> = ||x||^2 exactly)
and ``x_hat = D H (S q)``.

The randomness is explicit: ``key`` -> (signs ``D`` of shape (d,), shared by every vector; dither ``u`` of
shape ``x.shape[:-1]``, one per vector); the container keeps the key so the decoder regenerates both.
Codes are stored one per uint8 (b <= 8).

Kernels: the fused Pallas quantize does signs, FWHT (dense Hadamard tiles / Kronecker split, as in
``hadamard.py``), norm, compander, dithered floor, reconstruction and the scale in one pass over x; the
fused dequantize does reconstruction, scale, FWHT and signs. They need d >= 16. Codes equal the reference's
except where the pre-floor value ``z/delta + u`` lies within float32 rounding of an integer (the kernel's
matmul FWHT and the reference butterfly sum in different orders); there they differ by one level.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jaxtyping import Array, Float

from jaxwb.pallas_kernels import dispatch as dp
from jaxwb.pallas_kernels.dispatch import Implementation
from jaxwb.pallas_kernels.quant.hadamard import (
    HadamardBlockSizes,
    check_block_sizes,
    check_length,
    check_x,
    fwht_reference,
    hadamard_matrix_np,
    kron_split,
    per_platform,
    resolve_implementation,
)

SCALINGS = ("turbo", "mse", "unbiased")
_SQRT3 = math.sqrt(3.0)
_SQRT2 = math.sqrt(2.0)


@functools.partial(
    jax.tree_util.register_dataclass, data_fields=["codes", "scale", "key"], meta_fields=["bits", "scaling"]
)
@dataclasses.dataclass(frozen=True)
class RHTQuantized:
    """codes: uint8 (..., d) levels in [0, 2^bits); scale: float32 (...,) the S of ``scaling``; key: the key
    that generated the signs and the dither (shared randomness between encoder and decoder)."""

    codes: jax.Array
    scale: jax.Array
    key: jax.Array
    bits: int
    scaling: str

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape)

    def bits_per_element(self) -> float:
        """Payload bits per coordinate: b + 32/d (one float32 scale per vector; codes at b bits each)."""
        return self.bits + 32.0 / self.codes.shape[-1]


def _check(x, bits, scaling):
    if not isinstance(bits, (int, np.integer)) or isinstance(bits, bool) or not 1 <= bits <= 8:
        raise ValueError(f"bits must be an integer in [1, 8], got {bits!r}")
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
    if x.ndim < 1:
        raise ValueError(f"x must have at least one axis (the vectors lie along the last), got shape {x.shape}")
    check_x(x)
    check_length(x.shape[-1])
    dp.check_finite("x", x, "; the norm and the compander would turn a whole vector into NaN")
    check_norm(x)


MAX_SUMSQ_LOG2 = 120  # a vector's float32 sum of squares must stay below 2^120 (float32 overflows at 2^128)


def check_norm(x) -> None:
    """Every vector's sum of squares is < 2^120, so the float32 norm, the scale and the products with the
    levels stay finite (|x| up to about 1e17 per coordinate at d = 2^16; 1e30 is rejected). Computed in a
    scaled form (x * 2^-64, squared) that does not overflow itself; eager, under ``grad``/``vmap`` of an
    eager call, and under ``jit`` inside ``checked``."""
    if dp.concrete(x) is None and not dp.checkify_enabled():
        return
    scaled = jnp.sum(jnp.square(jnp.asarray(x, jnp.float32) * np.float32(2.0**-64)), axis=-1)  # sumsq * 2^-128
    dp.require(
        jnp.all(scaled < np.float32(2.0 ** (MAX_SUMSQ_LOG2 - 128))),
        f"x has a vector with sum of squares >= 2^{MAX_SUMSQ_LOG2} (largest |x| {{}}); its float32 norm would "
        "overflow: rescale x",
        jnp.max(jnp.abs(jnp.asarray(x, jnp.float32))),
    )


@functools.partial(jax.jit, static_argnums=(1, 2))
def rht_randomness(key: jax.Array, d: int, batch_shape: tuple[int, ...]) -> tuple[jax.Array, jax.Array]:
    """(signs (d,) in {-1, +1} float32, dither u (*batch_shape) in [0, 1) float32) from ``key``."""
    k_sign, k_dither = jax.random.split(key)
    signs = jax.random.rademacher(k_sign, (d,), dtype=jnp.float32)
    u = jax.random.uniform(k_dither, batch_shape, dtype=jnp.float32)
    return signs, u


# ---------------------------------------------------------------------------------------------------------
# The scalar quantizer (shared by the reference and the kernels: plain jnp on arrays that broadcast)
# ---------------------------------------------------------------------------------------------------------


def erfc(x):
    """Complementary error function, Numerical Recipes' Chebyshev fit (fractional error < 1.2e-7 everywhere).

    Written with exp and arithmetic only because Pallas' Triton lowering has no ``erf``; the reference uses
    the same function so both sides compute the same compander.
    """
    z = jnp.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    p = -0.82215223 + t * 0.17087277
    for c in (
        1.48851587,
        -1.13520398,
        0.27886807,
        -0.18628806,
        0.09678418,
        0.37409196,
        1.00002368,
        -1.26551223,
    ):
        p = c + t * p
    ans = t * jnp.exp(-z * z + p)
    return jnp.where(x >= 0, ans, 2.0 - ans)


# Giles (2010), "Approximating the erfinv function" (GPU Computing Gems Jade, ch. 10), single precision: the
# coefficients of the central (w < 5) and tail branches, highest degree first.
_ERFINV_CENTRAL = (
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
)
_ERFINV_TAIL = (
    -0.000200214257,
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
)


def erfinv(x):
    """Inverse error function on [-1, 1], Giles' single-precision approximation (relative error < 6e-6 on
    float32; +-inf at +-1), any shape.

    Written with log1p, sqrt and arithmetic only, for the same reason as :func:`erfc`: ``jax.lax.erf_inv``
    changed in jax 0.12.1 to a form (``lax.fmuladd``) that Pallas' Triton lowering cannot lower. This is the
    algorithm ``lax.erf_inv`` used for float32 before 0.12.1 (bit-identical to it on CPU with jax 0.12.0), so
    the codes do not depend on the installed jax.
    """
    w = -jnp.log1p(x * -x)
    central = w < 5.0
    w = jnp.where(central, w - 2.5, jnp.sqrt(w) - 3.0)
    p = jnp.where(central, _ERFINV_CENTRAL[0], _ERFINV_TAIL[0])
    for a, b in zip(_ERFINV_CENTRAL[1:], _ERFINV_TAIL[1:], strict=True):
        p = jnp.where(central, a, b) + p * w
    return jnp.where(jnp.abs(x) == 1.0, jnp.inf * x, p * x)


def compand(t):
    """G(t) = Phi(t / sqrt 3) = erfc(-t / sqrt 6) / 2 (t = y / sigma)."""
    return 0.5 * erfc(t * (-1.0 / (_SQRT3 * _SQRT2)))


def expand(z):
    """G^{-1}(z) = sqrt 3 Phi^{-1}(z) = sqrt 6 erfinv(2 z - 1)."""
    return (_SQRT3 * _SQRT2) * erfinv(2.0 * z - 1.0)


def _levels_minus_one(bits):
    """N - 1 = 2^b - 1: a Python float for a Python int (kernels: no constant ops for Mosaic to lower), else
    traced."""
    if isinstance(bits, (int, np.integer)):
        return float(2 ** int(bits) - 1)
    return jnp.power(2.0, jnp.asarray(bits, jnp.float32)) - 1.0


def encode_levels(t, u, bits):
    """Dithered level k = floor(G(t)/delta + u) in [0, N-1] (int32); ``u`` broadcasts against t.

    ``bits`` may be a Python int or a traced integer (the references take it dynamically: one compile for
    every b)."""
    nm1 = _levels_minus_one(bits)
    v = compand(t) * nm1 + u
    return jnp.clip(jnp.floor(v), 0.0, nm1).astype(jnp.int32)


def decode_levels(k, u, bits):
    """Unit-scale reconstruction q = G^{-1}(midpoint of the dithered cell k clipped to [0, 1])."""
    delta = 1.0 / _levels_minus_one(bits)
    kf = k.astype(jnp.float32)
    lo = jnp.maximum((kf - u) * delta, 0.0)
    hi = jnp.minimum((kf + 1.0 - u) * delta, 1.0)
    z = 0.5 * (lo + hi)
    eps = 1e-7  # keep erfinv finite if a cell degenerates to an endpoint in float32
    return expand(jnp.clip(z, eps, 1.0 - eps))


def _scale(scaling: str, sumsq, yq, qq, d: int):
    """S per vector from ||x||^2, <y, q>, ||q||^2 (zero vector -> S = 0)."""
    if scaling == "turbo":
        return jnp.sqrt(sumsq / d)
    if scaling == "mse":
        return jnp.where(qq > 0, yq / jnp.where(qq > 0, qq, 1.0), 0.0)
    ok = jnp.abs(yq) > 0
    return jnp.where(ok, sumsq / jnp.where(ok, yq, 1.0), 0.0)


def _unit_coords(y, sumsq, d: int):
    """t = y / sigma with sigma = ||x|| / sqrt d (0 for a zero vector)."""
    sigma = jnp.sqrt(sumsq / d)
    return jnp.where(sigma > 0, y / jnp.where(sigma > 0, sigma, 1.0), 0.0)


# ---------------------------------------------------------------------------------------------------------
# Reference (pure jnp)
# ---------------------------------------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("scaling",))
def rht_quantize_reference(x, signs, u, *, bits: int, scaling: str = "turbo"):
    """Reference quantizer. x (..., d); signs (d,); u (...,). Returns (codes uint8 (..., d), scale f32
    (...,))."""
    x = jnp.asarray(x, jnp.float32)
    d = x.shape[-1]
    y = fwht_reference(x * signs)
    sumsq = jnp.sum(x * x, axis=-1, keepdims=True)
    k = encode_levels(_unit_coords(y, sumsq, d), u[..., None], bits)
    q = decode_levels(k, u[..., None], bits)
    s = _scale(scaling, sumsq, jnp.sum(y * q, -1, keepdims=True), jnp.sum(q * q, -1, keepdims=True), d)
    return k.astype(jnp.uint8), s[..., 0]


@functools.partial(jax.jit, static_argnames=("dtype",))
def rht_dequantize_reference(codes, scale, signs, u, *, bits: int, dtype=jnp.float32):
    """Reference decoder: x_hat = D H (S q)."""
    q = decode_levels(codes.astype(jnp.int32), u[..., None], bits)
    return (fwht_reference(q * scale[..., None]) * signs).astype(dtype)


@functools.partial(jax.jit, static_argnames=("scaling",))
def dense_rotation_quantize(x, rotation, u, *, bits: int, scaling: str = "turbo"):
    """The same dithered scalar quantizer after a dense rotation ``rotation`` (d, d) (e.g. Haar-random)
    instead
    of H D: the Theta(d^2) baseline the paper compares with. Returns x_hat (..., d) float32."""
    x = jnp.asarray(x, jnp.float32)
    d = x.shape[-1]
    y = x @ rotation.T
    sumsq = jnp.sum(x * x, axis=-1, keepdims=True)
    k = encode_levels(_unit_coords(y, sumsq, d), u[..., None], bits)
    q = decode_levels(k, u[..., None], bits)
    s = _scale(scaling, sumsq, jnp.sum(y * q, -1, keepdims=True), jnp.sum(q * q, -1, keepdims=True), d)
    return (q * s) @ rotation


# ---------------------------------------------------------------------------------------------------------
# Pallas kernels (fused)
# ---------------------------------------------------------------------------------------------------------


def _dense_fwht(v, h_ref, scale, precision):
    return jnp.dot(v, h_ref[...], precision=precision, preferred_element_type=jnp.float32) * scale


def _kron_fwht(v, ha_ref, hb_ref, scale, precision):
    t = jnp.dot(v, hb_ref[...], precision=precision, preferred_element_type=jnp.float32)
    return jnp.dot(ha_ref[...], t, precision=precision, preferred_element_type=jnp.float32) * scale


def _rowsum(v, kron: bool):
    s = jnp.sum(v, axis=1, keepdims=True)  # (rows, 1)
    return jnp.sum(s, axis=0, keepdims=True) if kron else s  # kron: one row per block -> (1, 1)


def _split_refs(refs, n_in: int, kron: bool):
    """Kernel refs ``(inputs..., Hadamard factor(s), outputs...)`` -> (inputs, the FWHT on a tile, outputs):
    two factors ``H_a, H_b`` for the Kronecker form, one dense ``H`` otherwise."""
    n_h = 2 if kron else 1
    h = refs[n_in : n_in + n_h]
    transform = (
        functools.partial(_kron_fwht, ha_ref=h[0], hb_ref=h[1]) if kron else functools.partial(_dense_fwht, h_ref=h[0])
    )
    return refs[:n_in], transform, refs[n_in + n_h :]


def _quant_kernel(*refs, bits, scaling, d, kron, precision):
    (x_ref, s_ref, u_ref), transform, (k_ref, sc_ref) = _split_refs(refs, 3, kron)
    x = x_ref[...].astype(jnp.float32)
    u = u_ref[...]
    y = transform(x * s_ref[...], scale=1.0 / math.sqrt(d), precision=precision)
    sumsq = _rowsum(x * x, kron)
    k = encode_levels(_unit_coords(y, sumsq, d), u, bits)
    q = decode_levels(k, u, bits)
    k_ref[...] = k.astype(jnp.uint8)
    sc_ref[...] = _scale(scaling, sumsq, _rowsum(y * q, kron), _rowsum(q * q, kron), d)


def _dequant_kernel(*refs, bits, d, kron, precision):
    (k_ref, sc_ref, s_ref, u_ref), transform, (o_ref,) = _split_refs(refs, 4, kron)
    q = decode_levels(k_ref[...].astype(jnp.int32), u_ref[...], bits)
    xh = transform(q * sc_ref[...], scale=1.0 / math.sqrt(d), precision=precision) * s_ref[...]
    o_ref[...] = xh.astype(o_ref.dtype)


def _layout(n: int, d: int, blocks: HadamardBlockSizes):
    """(kron, rows per block, padded n, tile inputs, view shape of a row)."""
    if d < 16:
        raise ValueError(f"x.shape[-1] must be >= 16 for the Pallas RHT kernels, got {d} (use implementation='xla')")
    if d <= blocks.dense_max:
        rows = min(blocks.block_rows, max(8, 1 << (n - 1).bit_length()))
        return False, rows, -(-n // rows) * rows, [jnp.asarray(hadamard_matrix_np(d))], (d,)
    a, b = kron_split(d, blocks)
    tiles = [jnp.asarray(hadamard_matrix_np(a)), jnp.asarray(hadamard_matrix_np(b))]
    return True, 1, n, tiles, (a, b)


def _specs(kron, rows, view, tiles):
    """BlockSpecs for (row data, signs, per-row scalar, *tiles)."""
    if kron:
        a, b = view
        data = pl.BlockSpec((None, a, b), lambda i: (i, 0, 0))
        signs = pl.BlockSpec((a, b), lambda i: (0, 0))
        scalar = pl.BlockSpec((None, 1, 1), lambda i: (i, 0, 0))
    else:
        (d,) = view
        data = pl.BlockSpec((rows, d), lambda i: (i, 0))
        signs = pl.BlockSpec((1, d), lambda i: (0, 0))
        scalar = pl.BlockSpec((rows, 1), lambda i: (i, 0))
    tile_specs = [pl.BlockSpec(t.shape, lambda i: (0, 0)) for t in tiles]
    return data, signs, scalar, tile_specs


def _quantize_call(x2, signs, u, *, bits, scaling, blocks, interpret, precision, compiler_params):
    n, d = x2.shape
    kron, rows, n_pad, tiles, view = _layout(n, d, blocks)
    data, sspec, scalar, tile_specs = _specs(kron, rows, view, tiles)
    x2 = jnp.pad(x2, ((0, n_pad - n), (0, 0)))
    u = jnp.pad(u, (0, n_pad - n))
    xs = x2.reshape(n_pad, *view)
    ss = signs.reshape(1, d) if not kron else signs.reshape(view)
    us = u.reshape(n_pad, 1, 1) if kron else u.reshape(n_pad, 1)
    codes, scale = pl.pallas_call(
        functools.partial(_quant_kernel, bits=bits, scaling=scaling, d=d, kron=kron, precision=precision),
        out_shape=(jax.ShapeDtypeStruct(xs.shape, jnp.uint8), jax.ShapeDtypeStruct(us.shape, jnp.float32)),
        grid=(n_pad // rows,),
        in_specs=[data, sspec, scalar, *tile_specs],
        out_specs=(data, scalar),
        interpret=interpret,
        compiler_params=compiler_params,
        name="rht_quantize",
    )(xs, ss, us, *tiles)
    return codes.reshape(n_pad, d)[:n], scale.reshape(n_pad)[:n]


def _dequantize_call(codes, scale, signs, u, *, bits, dtype, blocks, interpret, precision, compiler_params):
    n, d = codes.shape
    kron, rows, n_pad, tiles, view = _layout(n, d, blocks)
    data, sspec, scalar, tile_specs = _specs(kron, rows, view, tiles)
    pad = ((0, n_pad - n),)
    ks = jnp.pad(codes, pad + ((0, 0),)).reshape(n_pad, *view)
    shp = (n_pad, 1, 1) if kron else (n_pad, 1)
    sc = jnp.pad(scale.astype(jnp.float32), pad).reshape(shp)
    us = jnp.pad(u, pad).reshape(shp)
    ss = signs.reshape(view) if kron else signs.reshape(1, d)
    out = pl.pallas_call(
        functools.partial(_dequant_kernel, bits=bits, d=d, kron=kron, precision=precision),
        out_shape=jax.ShapeDtypeStruct(ks.shape, dtype),
        grid=(n_pad // rows,),
        in_specs=[data, scalar, sspec, scalar, *tile_specs],
        out_specs=data,
        interpret=interpret,
        compiler_params=compiler_params,
        name="rht_dequantize",
    )(ks, sc, ss, us, *tiles)
    return out.reshape(n_pad, d)[:n]


# ---------------------------------------------------------------------------------------------------------
# Public ops
# ---------------------------------------------------------------------------------------------------------


def _check_key(key) -> None:
    if not isinstance(key, jax.Array) and not hasattr(key, "dtype"):
        raise ValueError(f"key must be a jax.random key, got {type(key).__name__}")
    if not (jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) or (key.dtype == jnp.uint32 and key.shape == (2,))):
        raise ValueError(
            f"key must be a jax.random key (jax.random.key(seed)), got dtype {key.dtype}, shape {key.shape}"
        )


def _rht_refusal(d: int, block_sizes: HadamardBlockSizes):
    try:
        _layout(1, d, block_sizes)
    except ValueError as e:
        return str(e)
    return None


def rht_quantize(
    x: Float[Array, "*batch d"],
    *,
    key: jax.Array,
    bits: int,
    scaling: str = "turbo",
    implementation: Implementation = None,
    block_sizes: HadamardBlockSizes | None = None,
    precision=jax.lax.Precision.HIGHEST,
    backend: str | None = None,
) -> RHTQuantized:
    """Dithered RHT quantization of the vectors along the last axis of ``x`` (..., d) at ``bits`` per
    coordinate.

    x: float16/bfloat16/float32, finite (inf/nan raise: they would turn a whole vector into NaN), d a power of
    two (>= 16 for the kernels; ``None`` falls back to XLA below). key: explicit randomness (signs D and one
    dither per vector). scaling: "turbo" | "mse" | "unbiased" (module docstring). ``block_sizes``: the
    :class:`HadamardBlockSizes` of the kernel.
    """
    block_sizes = check_block_sizes(block_sizes) or HadamardBlockSizes()  # not measured on a GPU
    if not hasattr(x, "dtype"):
        x = jnp.asarray(x)
    _check(x, bits, scaling)
    _check_key(key)
    d = x.shape[-1]
    impl, _ = resolve_implementation(
        implementation, lambda p: _rht_refusal(d, block_sizes), backend, inputs=(x,), op="rht_quantize"
    )
    signs, u = rht_randomness(key, d, x.shape[:-1])
    if impl == "xla":
        codes, scale = rht_quantize_reference(x, signs, u, bits=bits, scaling=scaling)
    else:
        x2 = x.astype(jnp.float32).reshape(-1, d)
        call = functools.partial(
            _quantize_call,
            bits=bits,
            scaling=scaling,
            blocks=block_sizes,
            interpret=impl == "interpret",
            precision=precision,
        )
        codes, scale = per_platform(
            call, x2, signs, u.reshape(-1), interpret=impl == "interpret", num_warps=block_sizes.num_warps
        )
        codes, scale = codes.reshape(x.shape), scale.reshape(x.shape[:-1])
    return RHTQuantized(codes=codes, scale=scale, key=key, bits=int(bits), scaling=scaling)


def rht_dequantize(
    q: RHTQuantized,
    *,
    dtype=jnp.float32,
    implementation: Implementation = None,
    block_sizes: HadamardBlockSizes | None = None,
    precision=jax.lax.Precision.HIGHEST,
    backend: str | None = None,
) -> Float[Array, "*batch d"]:
    """x_hat = D H (S q) with the signs and dither regenerated from ``q.key``; shape ``q.codes.shape``."""
    if not isinstance(q, RHTQuantized):
        raise ValueError(f"q must be an RHTQuantized container from rht_quantize, got {type(q).__name__}")
    from jaxwb.pallas_kernels.quant.nvfp4 import float_out_dtype

    dtype = float_out_dtype(dtype)
    block_sizes = check_block_sizes(block_sizes) or HadamardBlockSizes()  # not measured on a GPU
    shape = q.codes.shape
    d = shape[-1]
    impl, _ = resolve_implementation(
        implementation, lambda p: _rht_refusal(d, block_sizes), backend, inputs=(q.codes, q.scale), op="rht_dequantize"
    )
    signs, u = rht_randomness(q.key, d, shape[:-1])
    if impl == "xla":
        return rht_dequantize_reference(q.codes, q.scale, signs, u, bits=q.bits, dtype=dtype)
    call = functools.partial(
        _dequantize_call,
        bits=q.bits,
        dtype=dtype,
        blocks=block_sizes,
        interpret=impl == "interpret",
        precision=precision,
    )
    out = per_platform(
        call,
        q.codes.reshape(-1, d),
        q.scale.reshape(-1),
        signs,
        u.reshape(-1),
        interpret=impl == "interpret",
        num_warps=block_sizes.num_warps,
    )
    return out.reshape(shape)
