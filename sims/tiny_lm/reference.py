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

And one reference decides the perplexities themselves, on every trained model: :func:`variant_loss_np`, the
validation loss of a quantized variant (W4A16 or W4A4) recomputed by a float64 NumPy forward of the tiny LM
(:func:`lm_loss_np`) whose block layers multiply by the independent round trip of each weight
(``theory.quantization.fp4_formats``) and whose inputs are rounded as the drop-in layers round them (bfloat16;
W4A4: each token's vector round-tripped in the activation format first). It shares no code with the model, the
kernels or the layers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float
from scipy import linalg, stats

from jaxwb.models.tiny_lm import linear_weights
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


def block_layers(model) -> dict[str, Callable[..., jax.Array]]:
    """The block matmul layers of a (quantized) TinyLM by the names of ``models.tiny_lm.linear_weights``."""
    out: dict[str, Callable[..., jax.Array]] = {}
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


def _rht_cells(x, signs, u, bits: int):
    """(H, y, v) of :func:`rht_reference_np`: the orthonormal Hadamard matrix, y = H D x and each coordinate's
    dithered cell position v = Phi(t / sqrt 3) (N - 1) + u (its level is floor(v), clipped to [0, N - 1])."""
    x = np.asarray(x, np.float64)
    d = x.shape[-1]
    h = linalg.hadamard(d).astype(np.float64) / np.sqrt(d)
    y = (x * signs) @ h.T
    sigma = np.sqrt(np.sum(x * x, axis=-1, keepdims=True) / d)
    t = np.divide(y, sigma, out=np.zeros_like(y), where=sigma > 0)
    v = stats.norm.cdf(t / np.sqrt(3.0)) * (2.0**bits - 1.0) + np.asarray(u, np.float64)[..., None]
    return h, y, v


def rht_reference_np(x: np.ndarray, signs: np.ndarray, u: np.ndarray, *, bits: int) -> np.ndarray:
    """Dithered RHT quantize-dequantize in float64 with the least-squares ("mse") scale.

    x: (..., d), d a power of two; signs: (d,) in {-1, +1}; u: x.shape[:-1] dithers in [0, 1). For each vector:
    y = H D x (H the orthonormal Walsh-Hadamard matrix), sigma = ||x|| / sqrt d, z = Phi(y / (sigma sqrt 3)),
    level k = min(floor(z (N - 1) + u), N - 1) (N = 2^bits), q = sqrt 3 Phi^{-1}(midpoint of the cell
    [(k - u), (k + 1 - u)] / (N - 1) clipped to [0, 1]), S = <y, q> / ||q||^2, x_hat = D H^T (S q)."""
    h, y, v = _rht_cells(x, signs, u, bits)
    nm1 = 2.0**bits - 1.0
    uu = np.asarray(u, np.float64)[..., None]
    k = np.clip(np.floor(v), 0.0, nm1)
    lo = np.maximum((k - uu) / nm1, 0.0)
    hi = np.minimum((k + 1.0 - uu) / nm1, 1.0)
    q = np.sqrt(3.0) * stats.norm.ppf(np.clip(0.5 * (lo + hi), 1e-7, 1.0 - 1e-7))
    qq = np.sum(q * q, axis=-1, keepdims=True)
    s = np.divide(np.sum(y * q, axis=-1, keepdims=True), qq, out=np.zeros_like(qq), where=qq > 0)
    return ((s * q) @ h) * signs


def _rht_groups(w, key: jax.Array, group: int):
    """``w [out, K]`` as float64 groups ``[out, K / g, g]`` (g = min(group, K)) with the signs and dithers
    ``rht_quantize(..., key=key)`` draws for them (float64)."""
    g = min(group, w.shape[-1])
    x = np.asarray(w, np.float64).reshape(*w.shape[:-1], w.shape[-1] // g, g)
    signs, u = rht_randomness(key, g, x.shape[:-1])
    return x, np.asarray(signs, np.float64), np.asarray(u, np.float64)


def rht_rel_mse_reference(w: Float[Array, "out K"], key: jax.Array, *, group: int, bits: int = 4) -> float:
    """Relative MSE ||w - w_hat||^2 / ||w||^2 of RHT-``bits`` over groups of ``group`` along the last axis,
    with the signs and dithers that ``rht_quantize(..., key=key)`` draws (``rht_randomness``)."""
    x, signs, u = _rht_groups(w, key, group)
    xh = rht_reference_np(x, signs, u, bits=bits)
    return float(np.sum((xh - x) ** 2) / np.sum(x * x))


# a coordinate whose float64 cell position lies within this many cells of a level boundary may be given either
# level by the float32 kernel (its position carries float32 rounding, up to ~2e-6 cells at N - 1 = 15): measured,
# the kernel and the reference disagree only on groups holding one at <= 8e-7 cells
RHT_TIE = 1e-5


def rht_group_errors(w, w_hat, key: jax.Array, *, group: int, bits: int = 4) -> tuple[float, int, int]:
    """The fast path's fake-quantized ``w_hat`` against :func:`rht_reference_np`, group by group (same signs and
    dithers): (largest ||w_hat_g - ref_g|| / ||w_g|| over the groups with no coordinate within :data:`RHT_TIE`
    cells of an interior level boundary, the number of groups left out as ties, the number of groups)."""
    x, signs, u = _rht_groups(w, key, group)
    _, _, v = _rht_cells(x, signs, u, bits)
    interior = (v > 0.5) & (v < 2.0**bits - 0.5)  # boundaries 1 .. N - 1; below 0 and above N - 1 clip
    tie = np.any(interior & (np.abs(v - np.round(v)) < RHT_TIE), axis=-1)
    ref = rht_reference_np(x, signs, u, bits=bits)
    wh = np.asarray(w_hat, np.float64).reshape(x.shape)
    norm = np.linalg.norm(x, axis=-1)
    err = np.linalg.norm(wh - ref, axis=-1) / np.where(norm > 0, norm, 1.0)
    return float(np.max(err[~tie], initial=0.0)), int(tie.sum()), int(tie.size)


# the float model's parameters the forward reads besides the block matmul weights
_NORMS = ("norm1", "norm2")
# W4A16 / W4A4 variants of the study: weight round trip (fp4_formats label) and activation round trip (or None)
VARIANTS = {
    "fp": (None, None),
    "nvfp4": ("NVFP4", None),
    "razer": ("RaZeR (weight)", None),
    "mxfp4": ("MXFP4", None),
    "wa_nvfp4": ("NVFP4", "NVFP4"),
    "wa_razer": ("RaZeR (weight)", "RaZeR (act.)"),
}


def _bf16(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 -> bfloat16 (round to nearest even, ``ml_dtypes``) -> float64."""
    return np.asarray(x, np.float32).astype(jnp.bfloat16).astype(np.float64)


def lm_loss_np(params: dict, x: np.ndarray, y: np.ndarray, *, n_heads: int, rope_base: float, linear, eps=1e-6):
    """Mean next-byte cross-entropy (nats/byte) of the tiny LM on windows ``x, y: int [n, T]``, in float64 NumPy,
    written from ``models/tiny_lm.py``'s description (pre-norm blocks, RoPE on queries and keys, causal
    softmax(q k^T / sqrt(Dh)) attention, tanh-GELU MLP, RMSNorm, tied output), every block matmul through
    ``linear(name, h)`` (``h [n, T, in]`` -> ``[n, T, out]``). ``params``: "embed" [V, d], "norm_f" [d] and per
    block i "block{i}.norm1/norm2" [d]."""

    def rms(h, g):
        return h / np.sqrt(np.mean(h * h, axis=-1, keepdims=True) + eps) * g

    emb = params["embed"]
    h = emb[np.asarray(x)]
    n, t, d = h.shape
    dh = d // n_heads
    ang = np.arange(t)[:, None] * rope_base ** (-np.arange(0, dh, 2) / dh)[None, :]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]

    def rope(a):  # [n, T, H, Dh]: pairs (a_2i, a_2i+1) rotated by t theta_i
        a1, a2 = a[..., 0::2], a[..., 1::2]
        return np.stack([a1 * cos - a2 * sin, a1 * sin + a2 * cos], axis=-1).reshape(a.shape)

    causal = np.tril(np.ones((t, t), bool))
    i = 0
    while f"block{i}.norm1" in params:
        b = f"block{i}."
        q, k, v = np.split(linear(b + "attn.qkv", rms(h, params[b + "norm1"])), 3, axis=-1)
        q, k, v = (a.reshape(n, t, n_heads, dh) for a in (q, k, v))
        s = np.einsum("nthd,nshd->nhts", rope(q), rope(k)) / np.sqrt(dh)
        s = np.where(causal, s, -np.inf)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        h = h + linear(b + "attn.out", np.einsum("nhts,nshd->nthd", w, v).reshape(n, t, d))
        u = linear(b + "mlp_in", rms(h, params[b + "norm2"]))
        h = h + linear(b + "mlp_out", 0.5 * u * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (u + 0.044715 * u**3))))
        i += 1
    z = np.einsum("ntd,vd->ntv", rms(h, params["norm_f"]), emb)
    m = z.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(-1, keepdims=True)))[..., 0]
    return float(np.mean(lse - np.take_along_axis(z, np.asarray(y)[..., None], -1)[..., 0]))


def variant_loss_np(model, variant: str, x, y) -> float:
    """The validation loss on ``x, y`` of the float ``model``'s quantized variant ``variant`` (a key of
    :data:`VARIANTS`) as :func:`lm_loss_np` computes it: block weights = the independent round trip of the float32
    weights in the variant's format; every block matmul's input rounded to bfloat16 (the drop-in layers' W4A16
    numerics), after a per-token round trip in the activation format for W4A4 (each token's vector its own
    global scale); "fp": the float model, float64 throughout."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {tuple(VARIANTS)}, got {variant!r}")
    w_label, a_label = VARIANTS[variant]
    ws = {k: np.asarray(w, np.float32) for k, w in linear_weights(model).items()}
    params = {"embed": ws.pop("embed").astype(np.float64), "norm_f": np.asarray(model.norm_f.weight, np.float64)}
    for i, b in enumerate(model.blocks):
        for norm in _NORMS:
            params[f"block{i}.{norm}"] = np.asarray(getattr(b, norm).weight, np.float64)
    if w_label is not None:
        ws = {k: fp4_formats.roundtrip(w_label, w) for k, w in ws.items()}
    wt = {k: np.ascontiguousarray(w.astype(np.float64).T) for k, w in ws.items()}

    def linear(name, h):
        if a_label is not None:
            rows = np.asarray(h, np.float32).reshape(-1, h.shape[-1])
            h = np.stack([fp4_formats.roundtrip(a_label, r) for r in rows]).reshape(h.shape)
        h = h if w_label is None else _bf16(h)
        return np.einsum("nti,io->nto", h, wt[name])

    cfg = model.config
    return lm_loss_np(params, x, y, n_heads=cfg.n_heads, rope_base=cfg.rope_base, linear=linear)
