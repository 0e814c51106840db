"""An independent, straightforward NumPy port of the published GPTQ algorithm (Frantar et al., ICLR 2023, Alg. 1
and the authors' ``gptq.py`` ``fasterquant`` with ``quant.py``'s asymmetric min-max quantizer, static groups),
float64, sharing no code with ``jaxwb.theory.mpq``: the check of the JAX GPTQ and the bench baseline. Also the
tiny LM's float64 forward pass written from its description (:func:`lm_logits_np`; zoe_grad's QAT checks use it
too)."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from jaxwb.models.tiny_lm import linear_weights


def quantizer_params(w: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """``quant.py`` ``Quantizer.find_params`` (per row, sym=False): scale and zero of rows ``w`` (m, g)."""
    maxq = 2**bits - 1
    xmin = np.minimum(w.min(axis=1), 0)
    xmax = np.maximum(w.max(axis=1), 0)
    tmp = (xmin == 0) & (xmax == 0)
    xmin[tmp], xmax[tmp] = -1, +1
    scale = (xmax - xmin) / maxq
    zero = np.round(-xmin / scale)
    return scale, zero


def quantize(x: np.ndarray, scale: np.ndarray, zero: np.ndarray, bits: int) -> np.ndarray:
    """``quant.py`` ``quantize``: scale * (clamp(round(x / scale) + zero, 0, maxq) - zero)."""
    q = np.clip(np.round(x / scale) + zero, 0, 2**bits - 1)
    return scale * (q - zero)


def gptq_numpy(
    w: np.ndarray, x: np.ndarray, *, bits: int, group: int, blocksize: int = 128, percdamp: float = 0.01
) -> np.ndarray:
    """Quantized rows Q (m, d) of ``w`` by GPTQ on calibration inputs ``x`` (n, d): H = X^T X / n, dampened by
    percdamp * mean(diag H), U = upper Cholesky factor of H^-1, lazy-batch updates of ``blocksize`` columns;
    group scales from the float rows (static groups). Returns the dequantized values."""
    w = np.array(w, np.float64)
    x = np.asarray(x, np.float64)
    m, d = w.shape
    h = x.T @ x / x.shape[0]
    dead = np.diag(h) == 0
    h[dead, dead] = 1
    w[:, dead] = 0
    h[np.diag_indices(d)] += percdamp * np.mean(np.diag(h))
    hinv = scipy.linalg.cho_solve(scipy.linalg.cho_factor(h, lower=True), np.eye(d))
    hinv = scipy.linalg.cholesky(hinv, lower=False)
    params = [quantizer_params(w[:, g : g + group], bits) for g in range(0, d, group)]
    q = np.zeros_like(w)
    for i1 in range(0, d, blocksize):
        i2 = min(i1 + blocksize, d)
        w1 = w[:, i1:i2].copy()
        err1 = np.zeros_like(w1)
        hinv1 = hinv[i1:i2, i1:i2]
        for i in range(i2 - i1):
            col = w1[:, i]
            scale, zero = params[(i1 + i) // group]
            qc = quantize(col, scale, zero, bits)
            q[:, i1 + i] = qc
            e = (col - qc) / hinv1[i, i]
            w1[:, i:] -= np.outer(e, hinv1[i, i:])
            err1[:, i] = e
        w[:, i2:] -= err1 @ hinv[i1:i2, i2:]
    return q


BLOCK_PARAMS = ("norm1", "attn.qkv", "attn.out", "norm2", "mlp_in", "mlp_out")


def lm_logits_np(params: dict, tokens: np.ndarray, *, n_heads: int, rope_base: float, eps: float = 1e-6) -> np.ndarray:
    """The tiny LM's forward pass in float64 NumPy, written from its description (``models/tiny_lm.py``'s module
    docstring: pre-norm blocks, RoPE on queries and keys, causal softmax(q k^T / sqrt(Dh)) attention, tanh-GELU
    MLP, RMSNorm, tied output), sharing no code with the model. ``params``: "embed" [V, d] and per block i
    "block{i}.{norm1,norm2}" [d], "block{i}.attn.qkv" [3d, d], "block{i}.attn.out" [d, d], "block{i}.mlp_in"
    [4d, d], "block{i}.mlp_out" [d, 4d] (Linear weights [out, in]), "norm_f" [d]. tokens: int [T] -> [T, V]."""

    def rms(x, g):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g

    emb = params["embed"]
    x = emb[tokens]
    t, d = x.shape
    dh = d // n_heads
    ang = np.arange(t)[:, None] * rope_base ** (-np.arange(0, dh, 2) / dh)[None, :]  # [T, Dh/2]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]

    def rope(a):  # a [T, H, Dh]: pairs (a_2i, a_2i+1) rotated by t theta_i
        a1, a2 = a[..., 0::2], a[..., 1::2]
        return np.stack([a1 * cos - a2 * sin, a1 * sin + a2 * cos], axis=-1).reshape(a.shape)

    causal = np.tril(np.ones((t, t), bool))
    i = 0
    while f"block{i}.attn.qkv" in params:
        p = {name: params[f"block{i}.{name}"] for name in BLOCK_PARAMS}
        q, k, v = np.split(rms(x, p["norm1"]) @ p["attn.qkv"].T, 3, axis=-1)
        q, k, v = (a.reshape(t, n_heads, dh) for a in (q, k, v))
        q, k = rope(q), rope(k)
        s = np.einsum("thd,shd->hts", q, k) / np.sqrt(dh)
        s = np.where(causal[None], s, -np.inf)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        x = x + np.einsum("hts,shd->thd", w, v).reshape(t, d) @ p["attn.out"].T
        u = rms(x, p["norm2"]) @ p["mlp_in"].T
        hid = 0.5 * u * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (u + 0.044715 * u**3)))
        x = x + hid @ p["mlp_out"].T
        i += 1
    return rms(x, params["norm_f"]) @ emb.T


def float64_params(model) -> dict[str, np.ndarray]:
    """A ``models.tiny_lm.TinyLM``'s weights by name, float64 (attribute reads only), for :func:`lm_logits_np`."""
    params = {k: np.asarray(w, np.float64) for k, w in linear_weights(model).items()}
    for i, b in enumerate(model.blocks):
        params[f"block{i}.norm1"] = np.asarray(b.norm1.weight, np.float64)
        params[f"block{i}.norm2"] = np.asarray(b.norm2.weight, np.float64)
    params["norm_f"] = np.asarray(model.norm_f.weight, np.float64)
    return params


def lm_cross_entropy_np(params: dict, x: np.ndarray, y: np.ndarray, *, n_heads: int, rope_base: float) -> float:
    """Mean next-token cross-entropy (nats/token) of :func:`lm_logits_np` on windows x, y: int [n, T]."""
    total = 0.0
    for xi, yi in zip(np.asarray(x), np.asarray(y), strict=True):
        z = lm_logits_np(params, xi, n_heads=n_heads, rope_base=rope_base)
        m = z.max(-1, keepdims=True)
        lse = (m + np.log(np.exp(z - m).sum(-1, keepdims=True)))[:, 0]
        total += float(np.sum(lse - z[np.arange(len(yi)), yi]))
    return total / np.asarray(y).size
