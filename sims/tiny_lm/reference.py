"""Independent checks of the quantizers the tiny-LM study runs, on the study's own tensors.

The study's numbers come from the fast paths (``jaxwb.pallas_kernels.quant``: RaZeR's XLA layout, the blockwise
NVFP4/MXFP4 quantizers, the RHT kernel's XLA fallback). Two independent references decide whether those paths
compute the formats they claim to, on the first model's block weights and on its first layer inputs:

* FP4 block formats: the pure-jnp specification (``pallas_kernels.quant.reference``: exhaustive per-block
  choice, no layout tricks) must give the same codes and scale bytes, bit for bit (the fast paths' docstrings
  promise this); :func:`code_mismatches` counts the elements and blocks where they differ.
* RHT-4: :func:`rht_reference_np` re-implements the dithered RHT quantizer of Eq. (3) of the quantization
  paper (``pallas_kernels/quant/rht.py``'s docstring) in float64 NumPy/SciPy (``scipy.linalg.hadamard``,
  ``scipy.stats.norm``) from the same signs and dither, sharing no code with the kernel.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float
from scipy import linalg, stats

from jaxwb.pallas_kernels.quant import (
    mxfp4_quantize,
    nvfp4_quantize,
    razer_quantize,
)
from jaxwb.pallas_kernels.quant import reference as spec
from jaxwb.pallas_kernels.quant.rht import rht_randomness
from jaxwb.theory.quantization import fp4_formats

# (format name, fast quantizer, specification quantizer) of the block formats the study runs
BLOCK_FORMATS = {
    "nvfp4": (nvfp4_quantize, spec.nvfp4_quantize),
    "mxfp4": (mxfp4_quantize, spec.mxfp4_quantize),
    "razer_weight": (
        lambda x: razer_quantize(x, variant="weight"),
        lambda x: spec.razer_quantize(x, variant="weight"),
    ),
    "razer_activation": (
        lambda x: razer_quantize(x, variant="activation"),
        lambda x: spec.razer_quantize(x, variant="activation"),
    ),
}


@functools.partial(jax.jit, static_argnames=("fmt", "per_row"))
def _mismatch_count(x, fmt: str, per_row: bool):
    fast, ref = BLOCK_FORMATS[fmt]
    if per_row:
        fast, ref = jax.vmap(fast), jax.vmap(ref)
    a, b = fast(x), ref(x)
    return jnp.sum(a.codes != b.codes) + jnp.sum(a.scales != b.scales)


def code_mismatches(x: Float[Array, "*batch K"], fmt: str, *, per_row: bool = False) -> int:
    """Number of elements whose 4-bit code, plus the number of blocks whose scale byte, differs between the
    fast quantizer and the specification for ``x`` (blocks along the last axis). ``per_row``: quantize each
    row on its own (its own global scale, as the per-token activation quantizer does)."""
    if fmt not in BLOCK_FORMATS:
        raise ValueError(f"fmt must be one of {tuple(BLOCK_FORMATS)}, got {fmt!r}")
    return int(_mismatch_count(jnp.asarray(x), fmt, per_row))


def by_width(ws: dict[str, Float[Array, "out K"]]) -> list[Float[Array, "rows K"]]:
    """The matrices of ``ws`` stacked along their rows, one stack per input width K (fewer compilations)."""
    widths = sorted({w.shape[-1] for w in ws.values()})
    return [jnp.concatenate([w for w in ws.values() if w.shape[-1] == k]) for k in widths]


def block_layers(model) -> dict[str, object]:
    """The block matmul layers of a (quantized) TinyLM by the names of ``models.tiny_lm.linear_weights``."""
    out = {}
    for i, b in enumerate(model.blocks):
        out |= {f"block{i}.attn.qkv": b.attn.qkv, f"block{i}.attn.out": b.attn.out}
        out |= {f"block{i}.mlp_in": b.mlp_in, f"block{i}.mlp_out": b.mlp_out}
    return out


def layer_decode_mismatches(qmodel, weights: dict[str, Float[Array, "out K"]], label: str) -> int:
    """Number of weight elements where what a quantized model's layers compute differs from the independent
    round trip ``theory.quantization.fp4_formats.roundtrip(label, w)`` of the float weight.

    A layer's effective weight is read through the layer itself: ``layer(e_k)`` for the unit vectors e_k
    (exact in bfloat16, one product per output in float32) is column k of the weight the layer multiplies by,
    so the check covers the packing, the scale decode and the matmul's dequantization the study runs."""
    n = 0
    for name, layer in block_layers(qmodel).items():
        w = weights[name]
        seen = jax.vmap(layer)(jnp.eye(w.shape[1], dtype=jnp.float32)).T
        n += int(np.sum(np.asarray(seen, np.float32) != fp4_formats.roundtrip(label, np.asarray(w, np.float32))))
    return n


def activation_decode_mismatches(h: Float[Array, "rows K"], fake_quant, label: str) -> int:
    """Elements where ``fake_quant(row)`` (the study's per-token activation quantize-dequantize) differs from the
    independent round trip of that row."""
    seen = np.asarray(jax.vmap(fake_quant)(h), np.float32)
    ind = np.stack([fp4_formats.roundtrip(label, row) for row in np.asarray(h, np.float32)])
    return int(np.sum(seen != ind))


def rht_reference_np(x: np.ndarray, signs: np.ndarray, u: np.ndarray, *, bits: int) -> np.ndarray:
    """Dithered RHT quantize-dequantize in float64 with the least-squares ("mse") scale.

    x: (..., d), d a power of two; signs: (d,) in {-1, +1}; u: x.shape[:-1] dithers in [0, 1). For each vector:
    y = H D x (H the orthonormal Walsh-Hadamard matrix), sigma = ||x|| / sqrt d, z = Phi(y / (sigma sqrt 3)),
    level k = min(floor(z (N - 1) + u), N - 1) (N = 2^bits), q = sqrt 3 Phi^{-1}(midpoint of the cell
    [(k - u), (k + 1 - u)] / (N - 1) clipped to [0, 1]), S = <y, q> / ||q||^2, x_hat = D H^T (S q)."""
    x = np.asarray(x, np.float64)
    d = x.shape[-1]
    h = linalg.hadamard(d).astype(np.float64) / np.sqrt(d)
    y = (x * signs) @ h.T
    sigma = np.sqrt(np.sum(x * x, axis=-1, keepdims=True) / d)
    t = np.divide(y, sigma, out=np.zeros_like(y), where=sigma > 0)
    nm1 = 2.0**bits - 1.0
    uu = np.asarray(u, np.float64)[..., None]
    k = np.clip(np.floor(stats.norm.cdf(t / np.sqrt(3.0)) * nm1 + uu), 0.0, nm1)
    lo = np.maximum((k - uu) / nm1, 0.0)
    hi = np.minimum((k + 1.0 - uu) / nm1, 1.0)
    q = np.sqrt(3.0) * stats.norm.ppf(np.clip(0.5 * (lo + hi), 1e-7, 1.0 - 1e-7))
    qq = np.sum(q * q, axis=-1, keepdims=True)
    s = np.divide(np.sum(y * q, axis=-1, keepdims=True), qq, out=np.zeros_like(qq), where=qq > 0)
    return ((s * q) @ h) * signs


def rht_rel_mse_reference(w: Float[Array, "out K"], key: jax.Array, *, group: int, bits: int = 4) -> float:
    """Relative MSE ||w - w_hat||^2 / ||w||^2 of RHT-``bits`` over groups of ``group`` along the last axis,
    with the signs and dithers that ``rht_quantize(..., key=key)`` draws (``rht_randomness``)."""
    g = min(group, w.shape[-1])
    x = np.asarray(w, np.float64).reshape(*w.shape[:-1], w.shape[-1] // g, g)
    signs, u = rht_randomness(key, g, x.shape[:-1])
    xh = rht_reference_np(x, np.asarray(signs, np.float64), np.asarray(u, np.float64), bits=bits)
    return float(np.sum((xh - x) ** 2) / np.sum(x * x))
