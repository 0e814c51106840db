"""Fast Walsh-Hadamard transform (FWHT) along the last axis: reference butterfly, Pallas kernel, public op.

Notation: ``d = 2^n`` is the transform length and ``H_d`` the Sylvester Hadamard matrix
(``H_1 = [1]``, ``H_2m = [[H_m, H_m], [H_m, -H_m]]``, i.e. ``scipy.linalg.hadamard(d)``). The normalized
transform

    fwht(x) = x @ H_d / sqrt(d)                                (orthonormal, self-inverse)

costs O(d log d) with the butterfly ``(a, b) -> (a + b, a - b)`` over strides ``h = 1, 2, 4, ..., d/2``
(``fwht_reference``, pure jnp: the spec and the XLA fallback).

The Pallas kernel does not run the butterfly (log d dependent passes over registers); it uses dense Hadamard
tiles on the matrix units instead, after the GPU design of the papers (a dense 16x16 / 128x128 H tile on
tensor cores plus a Kronecker split for large d). Because Sylvester matrices factor as
``H_{ab} = H_a (x) H_b``, a row ``x`` of length ``d = a b`` viewed row-major as an ``a x b`` matrix ``X``
transforms as

    vec(H_a X H_b) = (H_a (x) H_b) vec(X)                                            (H symmetric)

so one row costs two small dense matmuls, ``2 d (a + b)`` flops, instead of ``d^2`` for a dense rotation.
Modes (``HadamardBlockSizes``):
  * dense, ``d <= dense_max``: a block of ``block_rows`` rows times one dense ``T x T`` tile, where
    ``T = max(d, 16)`` and the tile is ``I_{T/d} (x) H_d`` (rows shorter than 16 are grouped 16/d per
    tile row,
    since GPU dots need every dim >= 16);
  * Kronecker, ``d > dense_max``: one row per program, ``H_a X H_b`` with ``b = min(tile, d/16)`` (raised to
    ``d/256`` where ``a = d/b`` would exceed 256), so d up to 32768 (= 256 x 128) is supported.
Default block sizes: :class:`HadamardBlockSizes` (tile 128, the TPU's MXU width) except on GPUs
(:func:`default_block_sizes`), measured on an H200 (2026-12-04, 8192 x 4096 float32): tile 64 (64 x 64 tiles
instead of 32 x 128 and 128 x 128) took 0.78 ms vs 8.9 ms, and 8 warps 0.39 ms, for d >= 4096
(:data:`GPU_BLOCK_SIZES`); below, the tile does not change the kernel and 4 warps were 28-30% faster than 8
(d = 256, 1024).
Tiles hold the exact +-1 entries; the ``1/sqrt(d)`` scale is applied once at the end in float32.

Shapes: ``x`` is ``(..., d)`` of any float dtype; the output has the same shape and dtype (computed in f32).
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

MAX_PALLAS_D = 32768
GPU_MAX_D = dp.FWHT_GPU_MAX_D  # above it ``implementation=None`` runs XLA on a GPU (MEASURED[("fwht", "triton")])
_MIN_DOT = 16  # Triton dots need every dimension >= 16


def _check_blocks(blocks) -> None:
    for name in ("dense_max", "tile", "block_rows"):
        v = getattr(blocks, name)
        if isinstance(v, bool) or not is_power_of_two(v) or (name != "block_rows" and v < _MIN_DOT):
            raise ValueError(f"block_sizes.{name} must be a power of two (>= 16 for tiles), got {v!r}")
    if isinstance(blocks.num_warps, bool) or not is_power_of_two(blocks.num_warps):
        raise ValueError(f"block_sizes.num_warps must be a power of two, got {blocks.num_warps!r}")


@dataclasses.dataclass(frozen=True)
class HadamardBlockSizes:
    """Block sizes of the FWHT kernel.

    dense_max: largest d done with one dense tile per block of rows (power of two, >= 16).
    tile: largest Kronecker factor ``b`` (power of two, >= 16); ``a = d / b`` must stay <= 256.
    block_rows: rows (of the T-wide view) per program in dense mode (power of two, multiple of 8 for TPU).
    num_warps: Triton warps per program.
    """

    dense_max: int = 128
    tile: int = 128
    block_rows: int = 32
    num_warps: int = 4

    def __post_init__(self):
        _check_blocks(self)


def is_power_of_two(d: int) -> bool:
    return isinstance(d, (int, np.integer)) and d >= 1 and (d & (d - 1)) == 0


def check_length(d: int, name: str = "x.shape[-1]") -> None:
    if not is_power_of_two(d):
        raise ValueError(f"{name} must be a power of two (Walsh-Hadamard length), got {d}")


GPU_BLOCK_SIZES = HadamardBlockSizes(tile=64, num_warps=8)  # the GPU default for d >= 4096 (module docstring)


def default_block_sizes(platform: str, d: int) -> HadamardBlockSizes:
    """The block sizes ``block_sizes=None`` means for a kernel platform ("gpu" or "tpu") and length d."""
    if platform != "gpu":
        return HadamardBlockSizes()
    return GPU_BLOCK_SIZES if d >= 4096 else HadamardBlockSizes(tile=64, num_warps=4)


def resolve_implementation(
    implementation: Implementation,
    refusal=None,
    backend: str | None = None,
    inputs: tuple = (),
    *,
    op: str,
    facts: dict | None = None,
) -> tuple[str, str]:
    """The shared resolver (:func:`jaxwb.pallas_kernels.dispatch.resolve`) -> (implementation, platform) for the
    Hadamard-family ops (backends Triton and Mosaic TPU). ``refusal(platform)``: None when the kernel accepts
    the shapes on that platform ("gpu" or "tpu"), else why not. ``backend`` ("gpu"/"tpu") lets a CPU host
    lower the kernel for an accelerator (the kernels pick their platform's parameters at lowering time)."""
    by_backend = None if refusal is None else (lambda b: refusal(dp.BACKEND_PLATFORM[b]))
    return dp.resolve(implementation, op=op, backend=backend, refusal=by_backend, facts=facts, inputs=inputs)


def check_x(x, name: str = "x") -> None:
    """A non-empty float array with at least one axis (complex and integer rejected by name)."""
    dp.check_array(name, x, min_ndim=1)


@functools.lru_cache(maxsize=64)
def hadamard_matrix_np(d: int) -> np.ndarray:
    """The unnormalized Sylvester Hadamard matrix H_d (entries +-1, float32), equal to
    scipy.linalg.hadamard."""
    check_length(d, "d")
    h = np.ones((1, 1), np.float32)
    while h.shape[0] < d:
        h = np.block([[h, h], [h, -h]])
    return h


def hadamard_matrix(d: int, dtype=jnp.float32, *, normalize: bool = True) -> jax.Array:
    """H_d (``normalize``: divided by sqrt(d), orthonormal) as a ``(d, d)`` array."""
    h = hadamard_matrix_np(d)
    return jnp.asarray(h / np.sqrt(d) if normalize else h, dtype)


@functools.partial(jax.jit, static_argnames=("normalize",))
def fwht_reference(x: jax.Array, *, normalize: bool = True) -> jax.Array:
    """Butterfly FWHT along the last axis (pure jnp): ``x @ H_d / sqrt(d)`` (``normalize``) or ``x @ H_d``.

    Stage h pairs entries i and i + h inside blocks of 2h: ``(a, b) -> (a + b, a - b)``; log2(d) stages.
    """
    x = jnp.asarray(x)
    d = x.shape[-1]
    check_length(d)
    out_dtype = x.dtype if jnp.issubdtype(x.dtype, jnp.floating) else jnp.float32
    y = x.astype(jnp.promote_types(out_dtype, jnp.float32))
    lead = y.shape[:-1]
    h = 1
    while h < d:
        z = y.reshape(*lead, d // (2 * h), 2, h)
        a, b = z[..., 0, :], z[..., 1, :]
        y = jnp.stack([a + b, a - b], axis=-2).reshape(*lead, d)
        h *= 2
    if normalize:
        y = y * (1.0 / math.sqrt(d))
    return y.astype(out_dtype)


XLA_METHODS = ("butterfly", "kron")
KRON_XLA_FACTOR_MAX = 64  # largest Hadamard factor of the XLA Kronecker path (d = 32768: 32 x 32 x 32)


def kron_factors(d: int, factor_max: int = KRON_XLA_FACTOR_MAX) -> tuple[int, ...]:
    """Powers of two ``f_1 >= ... >= f_k`` (each <= ``factor_max``, as equal as possible) with product d."""
    check_length(d, "d")
    n = d.bit_length() - 1
    per = max(1, factor_max.bit_length() - 1)
    k = max(1, -(-n // per))
    return tuple(1 << (n // k + (1 if i < n % k else 0)) for i in range(k))


@functools.partial(jax.jit, static_argnames=("normalize",))
def fwht_kron_xla(x: jax.Array, *, normalize: bool = True) -> jax.Array:
    """The FWHT as a Kronecker einsum (XLA): ``H_d = H_f1 (x) ... (x) H_fk`` (:func:`kron_factors`), so a row
    viewed as an ``f1 x ... x fk`` array is multiplied by the small dense ``H_fi`` along each axis (exact +-1
    entries, float32 accumulation at HIGHEST precision): ``d (f1 + ... + fk)`` flops in a few large matmuls
    instead of log2(d) memory-bound butterfly passes. Same result as :func:`fwht_reference` up to float32
    summation order (``fwht(..., xla_method="kron")``)."""
    x = jnp.asarray(x)
    d = x.shape[-1]
    check_length(d)
    out_dtype = x.dtype if jnp.issubdtype(x.dtype, jnp.floating) else jnp.float32
    lead = x.shape[:-1]
    factors = kron_factors(d)
    y = x.astype(jnp.promote_types(out_dtype, jnp.float32)).reshape(*lead, *factors)
    for i, f in enumerate(factors):
        ax = len(lead) + i
        h = jnp.asarray(hadamard_matrix_np(f), y.dtype)
        y = jnp.moveaxis(jnp.tensordot(y, h, axes=([ax], [0]), precision=jax.lax.Precision.HIGHEST), -1, ax)
    y = y.reshape(*lead, d)
    if normalize:
        y = y * (1.0 / math.sqrt(d))
    return y.astype(out_dtype)


# ---------------------------------------------------------------------------------------------------------
# Pallas kernel
# ---------------------------------------------------------------------------------------------------------


def kron_split(d: int, blocks: HadamardBlockSizes = HadamardBlockSizes()) -> tuple[int, int]:
    """``(a, b)`` with ``H_d = H_a (x) H_b`` for the Kronecker mode: b = min(tile, d/16), raised to d/256
    where a = d/b would exceed 256; a = d/b."""
    b = max(min(blocks.tile, d // _MIN_DOT), d // 256)
    a = d // b
    if d > MAX_PALLAS_D or a > 256 or a < _MIN_DOT or b < _MIN_DOT:
        raise ValueError(
            f"d={d} cannot be split into Hadamard tiles a x b with 16 <= a <= 256, 16 <= b <= "
            f"{blocks.tile}; the Pallas FWHT supports power-of-two d up to {MAX_PALLAS_D}"
        )
    return a, b


def _dense_kernel(x_ref, h_ref, o_ref, *, scale, precision):
    x = x_ref[...].astype(jnp.float32)
    y = jnp.dot(x, h_ref[...], precision=precision, preferred_element_type=jnp.float32)
    o_ref[...] = (y * scale).astype(o_ref.dtype)


def _kron_kernel(x_ref, ha_ref, hb_ref, o_ref, *, scale, precision):
    x = x_ref[...].astype(jnp.float32)  # (a, b): one row of length d = a b
    t = jnp.dot(x, hb_ref[...], precision=precision, preferred_element_type=jnp.float32)
    y = jnp.dot(ha_ref[...], t, precision=precision, preferred_element_type=jnp.float32)
    o_ref[...] = (y * scale).astype(o_ref.dtype)


def triton_params(num_warps: int):
    from jax.experimental.pallas import triton as pltr

    return pltr.CompilerParams(num_warps=num_warps, num_stages=1)


def per_platform(fn, *args, interpret: bool, num_warps: int):
    """Call ``fn(*args, compiler_params=...)`` with Triton params on CUDA/ROCm and none elsewhere (TPU).

    The choice is made at lowering time with ``lax.platform_dependent`` so one traced function lowers for
    either platform (also from a CPU host, as the lowering tests do).
    """
    if interpret:
        return fn(*args, compiler_params=None)
    gpu = functools.partial(fn, compiler_params=triton_params(num_warps))
    other = functools.partial(fn, compiler_params=None)
    return jax.lax.platform_dependent(*args, cuda=gpu, rocm=gpu, default=other)


def fwht_pallas(
    x: jax.Array,
    *,
    blocks: HadamardBlockSizes = HadamardBlockSizes(),
    interpret: bool = False,
    precision=jax.lax.Precision.HIGHEST,
) -> jax.Array:
    """Pallas FWHT along the last axis (see the module docstring for the tile design)."""
    _check_blocks(blocks)
    x = jnp.asarray(x)
    d = x.shape[-1]
    check_length(d)
    if d > MAX_PALLAS_D:
        raise ValueError(f"x.shape[-1] must be <= {MAX_PALLAS_D} for the Pallas FWHT, got {d}")
    if d > blocks.dense_max:
        kron_split(d, blocks)  # eager error for an impossible split
    call = functools.partial(_fwht_call, blocks=blocks, interpret=interpret, precision=precision)
    return per_platform(call, x, interpret=interpret, num_warps=blocks.num_warps)


def _fwht_call(x, *, blocks, interpret, precision, compiler_params):
    d = x.shape[-1]
    shape, dtype = x.shape, x.dtype
    x2 = x.reshape(-1, d)
    n = x2.shape[0]
    scale = 1.0 / math.sqrt(d)
    cp = compiler_params
    if d <= blocks.dense_max:
        t = max(d, _MIN_DOT)
        g = t // d  # rows grouped per tile row
        tile = jnp.asarray(np.kron(np.eye(g, dtype=np.float32), hadamard_matrix_np(d)))
        m = -(-n // g)
        rows = min(blocks.block_rows, max(8, 1 << (m - 1).bit_length()))
        m_pad = -(-m // rows) * rows
        flat = jnp.pad(x2.reshape(-1), (0, m_pad * t - n * d)).reshape(m_pad, t)
        y = pl.pallas_call(
            functools.partial(_dense_kernel, scale=scale, precision=precision),
            out_shape=jax.ShapeDtypeStruct((m_pad, t), dtype),
            grid=(m_pad // rows,),
            in_specs=[pl.BlockSpec((rows, t), lambda i: (i, 0)), pl.BlockSpec((t, t), lambda i: (0, 0))],
            out_specs=pl.BlockSpec((rows, t), lambda i: (i, 0)),
            interpret=interpret,
            compiler_params=cp,
            name="fwht_dense",
        )(flat, tile)
        return y.reshape(-1)[: n * d].reshape(shape)
    a, b = kron_split(d, blocks)
    x3 = x2.reshape(n, a, b)
    y = pl.pallas_call(
        functools.partial(_kron_kernel, scale=scale, precision=precision),
        out_shape=jax.ShapeDtypeStruct((n, a, b), dtype),
        grid=(n,),
        in_specs=[
            pl.BlockSpec((None, a, b), lambda i: (i, 0, 0)),
            pl.BlockSpec((a, a), lambda i: (0, 0)),
            pl.BlockSpec((b, b), lambda i: (0, 0)),
        ],
        out_specs=pl.BlockSpec((None, a, b), lambda i: (i, 0, 0)),
        interpret=interpret,
        compiler_params=cp,
        name="fwht_kron",
    )(x3, jnp.asarray(hadamard_matrix_np(a)), jnp.asarray(hadamard_matrix_np(b)))
    return y.reshape(shape)


def _pallas_refusal(d: int, block_sizes: HadamardBlockSizes):
    if d > MAX_PALLAS_D:
        return f"x.shape[-1] must be <= {MAX_PALLAS_D} for the Pallas FWHT, got {d}"
    if d > block_sizes.dense_max:
        try:
            kron_split(d, block_sizes)
        except ValueError as e:
            return str(e)
    return None


def fwht(
    x: Float[Array, "*batch d"],
    *,
    implementation: Implementation = None,
    block_sizes: HadamardBlockSizes | None = None,
    precision=jax.lax.Precision.HIGHEST,
    backend: str | None = None,
    xla_method: str = "butterfly",
) -> Float[Array, "*batch d"]:
    """Normalized fast Walsh-Hadamard transform along the last axis: ``x @ H_d / sqrt(d)``.

    x: ``(..., d)`` float16/bfloat16/float32 (complex and integer inputs are rejected), d a power of two
    (<= 32768 for the Pallas kernel; ``None`` falls back to XLA beyond). Self-inverse: fwht(fwht(x)) = x.
    inf/nan raise ``ValueError`` naming ``x`` (the transform is linear: a non-finite entry would spread over its
    whole row); eagerly, under ``grad``/``vmap`` of an eager call, and under ``jit`` inside ``checked``.
    ``block_sizes``: the kernel's :class:`HadamardBlockSizes` (None: the platform's default).
    ``xla_method``: the XLA path's formulation, "butterfly" (default, :func:`fwht_reference`) or "kron"
    (:func:`fwht_kron_xla`, a Kronecker einsum; same values up to float32 summation order).
    """
    if xla_method not in XLA_METHODS:
        raise ValueError(f"xla_method must be one of {XLA_METHODS}, got {xla_method!r}")
    user_blocks = check_block_sizes(block_sizes)
    if not hasattr(x, "dtype"):
        x = jnp.asarray(x)
    check_x(x)
    check_length(x.shape[-1])
    dp.check_finite("x", x, "; the transform would spread them over their whole row")
    x = jnp.asarray(x)  # a NumPy float64 x is float32 unless jax_enable_x64
    d = x.shape[-1]
    blocks_for = lambda p: user_blocks or default_block_sizes(p, d)
    impl, plat = resolve_implementation(
        implementation,
        lambda p: _pallas_refusal(d, blocks_for(p)),
        backend,
        (x,),
        op="fwht",
        facts=dict(d=d),
    )
    hint = "; pass x as float32" if x.dtype == jnp.float16 else ""
    if impl == "xla":
        y = scaled_when_huge(fwht_kron_xla if xla_method == "kron" else fwht_reference, x)
    else:
        y = fwht_pallas(x, blocks=blocks_for(plat), interpret=impl == "interpret", precision=precision)
        hint = hint or "; the XLA path (implementation='xla') computes rows this large in a scaled form"
    dp.check_finite_output(
        y,
        f"x would overflow {jnp.dtype(y.dtype).name} in the transform: {{}} output value(s) are inf/nan (largest "
        f"|x| {{}}; an output can reach sqrt(d) max|x| with d = {d}){hint}",
        dp.max_abs(x),
    )
    return y


def scaled_when_huge(run, x):
    """``run(x)`` for the XLA transforms, safe from intermediate overflow: the unnormalized sums reach
    ``d max|x|``, so where ``run(x)`` comes out non-finite (x itself is finite) the transform runs again on
    ``x 2^-m`` with ``2^m = 2 d`` and its output is multiplied back by ``2^m`` in the compute dtype (float32 or
    float64) before the cast to ``x.dtype``: the transform is linear and a power-of-two scale is exact, so only
    outputs that do not fit the dtype overflow. One ``lax.cond`` on the output's finiteness (eager calls too):
    an ordinary ``x`` returns ``run(x)`` itself, bit for bit, and costs one finiteness reduction of the
    output."""
    d = x.shape[-1]
    ct = jnp.promote_types(x.dtype, jnp.float32)
    m = d.bit_length()  # 2^m = 2 d

    def scaled(v):
        y = run(v.astype(ct) * np.asarray(2.0**-m, ct))
        return (y * np.asarray(2.0**m, ct)).astype(x.dtype)

    y = run(x)
    return jax.lax.cond(jnp.all(jnp.isfinite(y)), lambda v: y, scaled, x)


def check_block_sizes(block_sizes) -> HadamardBlockSizes | None:
    """The caller's :class:`HadamardBlockSizes` (None: the platform default); another type raises."""
    if block_sizes is None:
        return None  # the platform's default (default_block_sizes)
    if not isinstance(block_sizes, HadamardBlockSizes):
        raise ValueError(f"block_sizes must be a HadamardBlockSizes, got {type(block_sizes).__name__}")
    return block_sizes
