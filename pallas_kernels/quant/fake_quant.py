"""Differentiable fake quantization for quantization-aware training (QAT): the forward is the real
quantize -> dequantize round trip of a format, the backward is a closed-form ZOE-Grad surrogate gradient
(``theory/zoe_grad.py``, eq. 3) through ``jax.custom_vjp``: no sampling.

    fake_quant(x, *, fmt="nvfp4", bits=4, surrogate="gaussian", sigma=None, block_size=None,
               implementation=None) -> array like x

Formats (blocks along the last axis; the forward calls the library's ops through :func:`_roundtrip`, the one
place that knows their names and signatures):

  "nvfp4"            nvfp4_quantize / nvfp4_dequantize (E2M1, E4M3 scale per 16, FP32 global scale)
  "mxfp4"            mxfp4_quantize / mxfp4_dequantize (E2M1, E8M0 scale per 32)
  "razer"            razer_quantize(variant="weight") / razer_dequantize (special value +-5 / +-8 per block)
  "razer_activation" razer_quantize(variant="activation") (special value +-5 per block)
  "int"              symmetric absmax INT-``bits`` per block of ``block_size`` (default: the whole last axis),
                     levels Delta * (-M..M), M = 2^(bits-1) - 1; round half to even. The library has no plain
                     INT op, so this one is implemented here in jnp.

Backward. With z = x / scale (scale = the element's block scale times the global scale, or Delta for INT) the
element's quantizer is scale * Q(z) on unit-scale levels (E2M1, E2M1 with RaZeR's special value, or -M..M),
so d/dx = g_sigma(z), the bump sum of ``jaxwb.theory.zoe_grad.surrogate_grad`` on those levels; **the scale is held
constant** in the backward pass (the gradient through the amax that sets it is dropped, as in STE-based QAT).
``sigma`` is the perturbation's standard deviation in units of the scale (z space); default 1/sqrt(12), the
uniform law one unit step wide. ``surrogate``:

  "ste"                                         gradient 1 everywhere (the plain straight-through estimator)
  "gaussian" | "logistic" | "triangular"        g_sigma(z) for that unit-variance law
  "uniform"                                     g_sigma(z) for the uniform law; on INT levels with the default
                                                sigma it is exactly the clipped STE 1[|z| < M]

Works under ``jit``, ``vmap`` and ``grad`` (the custom_vjp batches its forward and backward). For the QAT flag of
the quantized layers: keep the float weight as the trainable parameter and use
``fake_quant(w, fmt=fmt, surrogate=..., sigma=...)`` in place of the frozen packed weight.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.pallas_kernels import dispatch as dp
from jaxwb.pallas_kernels.dispatch import Implementation
from jaxwb.pallas_kernels.quant import reference as _ref
from jaxwb.pallas_kernels.quant.mxfp4 import mxfp4_dequantize, mxfp4_quantize
from jaxwb.pallas_kernels.quant.nvfp4 import nvfp4_dequantize, nvfp4_quantize
from jaxwb.pallas_kernels.quant.razer import razer_dequantize, razer_quantize
from jaxwb.theory import zoe_grad as zg

__all__ = ["FORMATS", "SURROGATES", "fake_quant", "quantize_with_scale"]

FORMATS = ("nvfp4", "mxfp4", "razer", "razer_activation", "int")
SURROGATES = ("ste", "gaussian", "logistic", "triangular", "uniform")
BLOCK = {"nvfp4": 16, "mxfp4": 32, "razer": 16, "razer_activation": 16}
_RAZER_SPECIALS = (5.0, -5.0, 8.0, -8.0)


@dataclasses.dataclass(frozen=True)
class _Spec:
    format: str
    bits: int
    surrogate: str
    sigma: float
    block_size: int | None
    implementation: Implementation


# ---------------------------------------------------------------------------------------------------------
# The adapter: the only code that calls the library's quantize/dequantize ops
# ---------------------------------------------------------------------------------------------------------


def _per_element(block_values, shape, block: int):
    """(..., nb) block values -> (..., K) by repeating each over its block."""
    return jnp.repeat(block_values, block, axis=-1).reshape(shape)


def _int_roundtrip(x, bits: int, block_size: int | None):
    k = x.shape[-1]
    b = k if block_size is None else block_size
    m = np.float32(2 ** (bits - 1) - 1)
    xb = x.reshape(*x.shape[:-1], k // b, b)
    amax = jnp.max(jnp.abs(xb), axis=-1, keepdims=True)
    delta = amax / m
    safe = jnp.where(delta > 0, delta, np.float32(1.0))
    codes = jnp.clip(jnp.round(xb / safe), -m, m)
    xhat = jnp.where(delta > 0, codes * safe, 0.0)
    return xhat.reshape(x.shape), jnp.broadcast_to(delta, xb.shape).reshape(x.shape)


def _roundtrip(x, spec: _Spec):
    """Quantize-dequantize ``x`` (float32, (..., K)) in ``spec.format``.

    Returns ``(x_hat, scale, special)``: ``x_hat`` float32 like x, ``scale`` the per-element scale (z = x/scale
    lies on unit-scale levels), ``special`` the per-element RaZeR special value (or None)."""
    fmt, impl = spec.format, spec.implementation
    if fmt == "int":
        xhat, scale = _int_roundtrip(x, spec.bits, spec.block_size)
        return xhat, scale, None
    if fmt == "nvfp4":
        q = nvfp4_quantize(x, implementation=impl)
        xhat = nvfp4_dequantize(q, implementation=impl)
    elif fmt == "mxfp4":
        q = mxfp4_quantize(x, implementation=impl)
        xhat = mxfp4_dequantize(q, implementation=impl)
    else:
        q = razer_quantize(x, variant="weight" if fmt == "razer" else "activation", implementation=impl)
        xhat = razer_dequantize(q, implementation=impl)
    block = BLOCK[fmt]
    scale = _per_element(_ref.block_scale_value(q.scales, q.format) * q.global_scale, x.shape, block)
    special = None
    if fmt.startswith("razer"):
        special = _per_element(_ref.razer_special_value(q.scales, q.format), x.shape, block)
    return xhat, scale, special


def quantize_with_scale(x, *, fmt: str = "nvfp4", bits: int = 4, block_size: int | None = None, implementation=None):
    """The forward of ``fake_quant`` with its per-element scale and RaZeR special value (for inspection)."""
    spec = _make_spec(x, fmt, bits, "ste", None, block_size, implementation)
    return _roundtrip(jnp.asarray(x, jnp.float32), spec)


# ---------------------------------------------------------------------------------------------------------
# Backward: the closed-form surrogate in z space
# ---------------------------------------------------------------------------------------------------------


def _levels(fmt: str, bits: int, special):
    """Unit-scale levels: (L,) shared, or (..., 16) per element for RaZeR (E2M1 with the special value)."""
    if fmt == "int":
        return zg.int_levels(bits)
    base = np.asarray(zg.E2M1_LEVELS, np.float32)
    if special is None:
        return jnp.asarray(base)
    tables = jnp.asarray(np.stack([np.sort(np.append(base, s)) for s in _RAZER_SPECIALS]).astype(np.float32))
    idx = jnp.argmax(special[..., None] == jnp.asarray(_RAZER_SPECIALS, jnp.float32), axis=-1)
    return tables[idx]


def _surrogate(z, special, spec: _Spec):
    """dQ/dx at z = x / scale (the scale cancels): 1 for STE, else the bump sum g_sigma(z)."""
    if spec.surrogate == "ste":
        return jnp.ones_like(z)
    return zg.surrogate_grad(z, _levels(spec.format, spec.bits, special), spec.sigma, law=spec.surrogate)


def _forward(x, spec: _Spec):
    xf = x.astype(jnp.float32)
    xhat, scale, special = _roundtrip(xf, spec)
    z = jnp.where(scale > 0, xf / jnp.where(scale > 0, scale, 1.0), 0.0)
    return xhat.astype(x.dtype), (z, special)


def _make_fq():
    def fq(x, spec):
        return _forward(x, spec)[0]

    fq = jax.custom_vjp(fq, nondiff_argnums=(1,))

    def fwd(x, spec):
        y, res = _forward(x, spec)
        return y, (res, jnp.zeros((), x.dtype))

    def bwd(spec, res, g):
        (z, special), proto = res
        return ((g.astype(jnp.float32) * _surrogate(z, special, spec)).astype(proto.dtype),)

    fq.defvjp(fwd, bwd)
    return fq


_fq_impl = _make_fq()


def _make_spec(x, fmt, bits, surrogate, sigma, block_size, implementation) -> _Spec:
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    if surrogate not in SURROGATES:
        raise ValueError(f"surrogate must be one of {SURROGATES}, got {surrogate!r}")
    if not isinstance(bits, (int, np.integer)) or isinstance(bits, bool):
        raise ValueError(f"bits must be an integer, got {bits!r}")
    if fmt == "int":
        if not 2 <= bits <= 16:
            raise ValueError(f"bits must be in [2, 16] for fmt 'int', got {bits}")
    elif bits != 4:
        raise ValueError(f"bits must be 4 for fmt {fmt!r} (FP4), got {bits}")
    sigma = zg.STE_SIGMA if sigma is None else sigma
    if isinstance(sigma, jax.core.Tracer):
        raise ValueError("sigma must be a Python float (it is static: one backward per value)")
    sigma = float(sigma)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a finite float > 0, got {sigma!r}")
    shape = jnp.shape(x)
    if len(shape) < 1:
        raise ValueError(f"x must have at least one axis (blocks run along the last), got shape {shape}")
    if not jnp.issubdtype(jnp.result_type(x), jnp.floating):
        raise ValueError(f"x must be a floating-point array, got dtype {jnp.result_type(x)}")
    if fmt == "int":
        if block_size is not None:
            if not isinstance(block_size, (int, np.integer)) or block_size <= 0 or shape[-1] % block_size:
                raise ValueError(
                    f"block_size must be a positive divisor of the last axis ({shape[-1]}), got {block_size!r}"
                )
            block_size = int(block_size)
    else:
        if block_size not in (None, BLOCK[fmt]):
            raise ValueError(f"block_size of {fmt!r} is fixed at {BLOCK[fmt]}, got {block_size!r}")
        block_size = None
        if shape[-1] % BLOCK[fmt]:
            raise ValueError(f"x's last axis ({shape[-1]}) must be a multiple of {BLOCK[fmt]} for {fmt!r}")
    # the FP4 formats resolve it in their quantize/dequantize ops; "int" has no kernel: checked here
    dp.resolve(implementation, op="fake_quant", inputs=(x,))
    return _Spec(fmt, int(bits), surrogate, sigma, block_size, implementation)


def fake_quant(
    x,
    *,
    fmt: str = "nvfp4",
    bits: int = 4,
    surrogate: str = "gaussian",
    sigma: float | None = None,
    block_size: int | None = None,
    implementation=None,
):
    """Quantize-dequantize ``x`` (..., K) in ``fmt`` with a ZOE-Grad surrogate backward (module docstring).

    Args:
      x: float array, blocks along the last axis (K a multiple of 16 for NVFP4/RaZeR, 32 for MXFP4).
      fmt: "nvfp4" | "mxfp4" | "razer" | "razer_activation" | "int".
      bits: INT bit width (2..16) for ``fmt="int"``; must be 4 for the FP4 formats.
      surrogate: "ste" | "gaussian" | "logistic" | "triangular" | "uniform".
      sigma: perturbation standard deviation in units of the element's scale (default 1/sqrt(12)).
      block_size: INT block length along the last axis (default: the whole axis); fixed for FP4 formats.
      implementation: passed to the library's quantize/dequantize ops (None | "xla" | "triton" | "mosaic_tpu" |
        "interpret"); ``fmt="int"`` runs XLA whatever it names.
    Returns:
      the dequantized array, dtype and shape of ``x``; ``jax.grad`` through it uses the surrogate.
    """
    spec = _make_spec(x, fmt, bits, surrogate, sigma, block_size, implementation)
    return _fq_impl(jnp.asarray(x), spec)
