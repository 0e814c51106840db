"""zoe_grad: the independent references and measurements the claims and figures compare with the run; pure
NumPy/SciPy, float64, no code shared with run.py.

  bias_constant_reference  the bias constant B of eq. 9 on a dense grid (SciPy's ndtr, not ``theory.zoe_grad``)
  int_absmax_np, quantized_arrays, eval_loss_np
                           the QAT study's tiny LM (5) evaluated in NumPy (below)
  perplexity               exp of a mean log-loss (the QAT claims and figure)

The tiny LM's forward pass is mpq's float64 NumPy one (``jaxwb.sims.mpq.reference_np.lm_logits_np``, written from
``models/tiny_lm.py``'s docstrings, sharing no code with ``jaxwb.models``), on the trained weights read as plain
arrays (``reference_np.float64_params``). What is zoe_grad's own: the INT absmax quantizer in NumPy (sharing no
code with ``jaxwb.pallas_kernels``' fake quantizer) and the evaluation windows (not ``jaxwb.models.train``'s): the
loss is the mean next-token cross-entropy over the first ``n`` non-overlapping windows.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Float, Int

from jaxwb.models.reference_np import cross_entropy

MATMULS = ("attn.qkv", "attn.out", "mlp_in", "mlp_out")  # the block weights QAT quantizes (the embedding stays float)


def bias_constant_reference(levels, sigma: float, n: int = 4001) -> float:
    """B = sup_w |Q(w) - Q_sigma(w)| * sup_w g_sigma(w) (eq. 9, L_f = 1) for the Gaussian law and the ascending
    ``levels`` (L,) (grid units), in float64 with ``scipy.special.ndtr`` and the normal density on a grid of [q_0 - 3,
    q_K + 3] plus the boundaries (where |Q - Q_sigma| takes its one-sided limits and g_sigma peaks): independent of
    ``theory.zoe_grad``'s sup, densities and CDFs."""
    from scipy import special

    lv = np.asarray(levels, np.float64)
    b, d = 0.5 * (lv[1:] + lv[:-1]), np.diff(lv)
    w = np.concatenate([np.linspace(lv[0] - 3.0, lv[-1] + 3.0, n), b])
    t = (b - w[:, None]) / sigma
    qs = lv[0] + np.sum(d * special.ndtr(-t), axis=1)
    g = np.sum(d * np.exp(-0.5 * t * t), axis=1) / (sigma * np.sqrt(2 * np.pi))
    q = lv[0] + np.sum(d * (w[:, None] > b), axis=1)  # at a boundary: the lower one-sided limit ...
    eps = max(np.max(np.abs(q - qs)), np.max(np.abs(q[-b.size :] + d - qs[-b.size :])))  # ... and the upper
    return float(eps * np.max(g))


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
    """``p`` (of ``reference_np.float64_params``) with every block matmul weight INT-quantized."""
    return {k: int_absmax_np(v, bits, block) if k.endswith(MATMULS) else v for k, v in p.items()}


def eval_loss_np(
    p: dict, tokens: Int[np.ndarray, " N"], ctx: int, n_windows: int, *, n_heads: int, rope_base: float
) -> float:
    """Mean next-token cross-entropy (nats/token) on the first ``n_windows`` non-overlapping windows of length
    ``ctx`` of ``tokens`` (fewer when ``tokens`` is shorter), float64."""
    tok = np.asarray(tokens, np.int64)
    n = min(n_windows, (tok.size - 1) // ctx)
    if n < 1:
        raise ValueError(f"tokens must hold at least ctx + 1 = {ctx + 1} tokens, got {tok.size}")
    x, y = tok[: n * ctx].reshape(n, ctx), tok[1 : n * ctx + 1].reshape(n, ctx)
    return cross_entropy(p, x, y, n_heads=n_heads, rope_base=rope_base)


def perplexity(a):
    """exp of a mean log-loss, in float64."""
    return np.exp(np.asarray(a, np.float64))
