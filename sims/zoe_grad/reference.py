"""zoe_grad: an independent float64 NumPy evaluation of the QAT study's tiny LM (5), for its check claims.

Shares no code with ``jaxwb.models`` (the forward, attention, rotary embedding, loss and evaluation windows),
``jaxwb.pallas_kernels`` (the attention op, the INT fake quantizer) or ``jaxwb.models.train`` (the evaluation):
it reads only the trained weights (as plain arrays) and the validation tokens, and re-derives the model of
``models/tiny_lm.py``'s docstrings: pre-norm blocks (RMSNorm, eps 1e-6), causal softmax attention with rotary
embeddings (pairs (x_2i, x_2i+1) rotated by t base^(-2i/Dh)), a tanh-GELU MLP, the tied embedding as the output
layer; the loss is the mean next-token cross-entropy over the first ``n`` non-overlapping windows.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Float, Int


def model_arrays(model) -> dict:
    """The weights of a ``TinyLM`` as float64 NumPy arrays (attribute reads only): ``embed`` [V, d], and per block
    ``norm1``, ``norm2`` [d], ``qkv`` [3d, d], ``out`` [d, d], ``mlp_in`` [4d, d], ``mlp_out`` [d, 4d]; ``norm_f``
    [d], ``n_heads``, ``rope_base``."""
    f = lambda a: np.asarray(a, np.float64)
    blocks = [
        {
            "norm1": f(b.norm1.weight),
            "norm2": f(b.norm2.weight),
            "qkv": f(b.attn.qkv.weight),
            "out": f(b.attn.out.weight),
            "mlp_in": f(b.mlp_in.weight),
            "mlp_out": f(b.mlp_out.weight),
        }
        for b in model.blocks
    ]
    return {
        "embed": f(model.embed),
        "blocks": blocks,
        "norm_f": f(model.norm_f.weight),
        "n_heads": int(model.config.n_heads),
        "rope_base": float(model.config.rope_base),
    }


def int_absmax_np(w: Float[np.ndarray, "out K"], bits: int, block: int) -> Float[np.ndarray, "out K"]:
    """Symmetric absmax INT-``bits`` quantize -> dequantize per block of ``block`` along the last axis (levels
    Delta (-M..M), Delta = amax / M, M = 2^(bits-1) - 1, round half to even), float64."""
    if w.shape[-1] % block:
        raise ValueError(f"block must divide the last axis {w.shape[-1]}, got {block}")
    m = 2 ** (bits - 1) - 1
    wb = w.reshape(*w.shape[:-1], -1, block)
    delta = np.max(np.abs(wb), axis=-1, keepdims=True) / m
    safe = np.where(delta > 0, delta, 1.0)
    return (np.clip(np.round(wb / safe), -m, m) * np.where(delta > 0, safe, 0.0)).reshape(w.shape)


def quantized_arrays(p: dict, bits: int, block: int) -> dict:
    """``p`` (of :func:`model_arrays`) with every block matmul weight INT-quantized (the embedding stays float)."""
    mats = ("qkv", "out", "mlp_in", "mlp_out")
    blocks = [{k: int_absmax_np(v, bits, block) if k in mats else v for k, v in b.items()} for b in p["blocks"]]
    return {**p, "blocks": blocks}


def _rms(x, w):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w


def _rotary(x, base: float):
    """x [B, T, H, Dh]: pairs (x_2i, x_2i+1) rotated by the angle t base^(-2i/Dh)."""
    t, dh = x.shape[1], x.shape[-1]
    ang = np.arange(t)[:, None] * base ** (-np.arange(0, dh, 2) / dh)[None, :]  # [T, Dh/2]
    c, s = np.cos(ang)[None, :, None, :], np.sin(ang)[None, :, None, :]
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out


def logits_np(p: dict, x: Int[np.ndarray, "B T"]) -> Float[np.ndarray, "B T V"]:
    """The tiny LM's forward in float64 on token windows ``x`` [B, T]."""
    h = p["embed"][x]
    bsz, t, d = h.shape
    nh = p["n_heads"]
    causal = np.tril(np.ones((t, t), bool))
    for b in p["blocks"]:
        a = _rms(h, b["norm1"]) @ b["qkv"].T
        q, k, v = (z.reshape(bsz, t, nh, d // nh) for z in np.split(a, 3, axis=-1))
        q, k = _rotary(q, p["rope_base"]), _rotary(k, p["rope_base"])
        q, k, v = (z.transpose(0, 2, 1, 3) for z in (q, k, v))  # [B, H, T, Dh]
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // nh)
        s = np.where(causal, s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        o = ((s / s.sum(-1, keepdims=True)) @ v).transpose(0, 2, 1, 3).reshape(bsz, t, d)
        h = h + o @ b["out"].T
        u = _rms(h, b["norm2"]) @ b["mlp_in"].T
        u = 0.5 * u * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (u + 0.044715 * u**3)))
        h = h + u @ b["mlp_out"].T
    return _rms(h, p["norm_f"]) @ p["embed"].T


def eval_loss_np(p: dict, tokens: Int[np.ndarray, " N"], ctx: int, n_windows: int) -> float:
    """Mean next-token cross-entropy (nats/token) on the first ``n_windows`` non-overlapping windows of length
    ``ctx`` of ``tokens`` (fewer when ``tokens`` is shorter), float64."""
    tok = np.asarray(tokens, np.int64)
    n = min(n_windows, (tok.size - 1) // ctx)
    if n < 1:
        raise ValueError(f"tokens must hold at least ctx + 1 = {ctx + 1} tokens, got {tok.size}")
    x, y = tok[: n * ctx].reshape(n, ctx), tok[1 : n * ctx + 1].reshape(n, ctx)
    z = logits_np(p, x)
    zmax = z.max(-1, keepdims=True)
    lse = zmax[..., 0] + np.log(np.exp(z - zmax).sum(-1))
    return float(np.mean(lse - np.take_along_axis(z, y[..., None], -1)[..., 0]))
