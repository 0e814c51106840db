"""An independent, straightforward NumPy port of the published GPTQ algorithm (Frantar et al., ICLR 2023, Alg. 1
and the authors' ``gptq.py`` ``fasterquant`` with ``quant.py``'s asymmetric min-max quantizer, static groups),
float64, sharing no code with ``jaxwb.theory.mpq``: the check of the JAX GPTQ and the bench baseline. Also the
tiny LM's float64 forward pass written from its description (:func:`lm_logits_np`; zoe_grad's QAT checks use it
too)."""

from __future__ import annotations

import numpy as np
import scipy.linalg

# the tiny LM's float64 forward pass, weights and loss are the shared reference (names kept for their importers)
from jaxwb.models.reference_np import cross_entropy as lm_cross_entropy_np
from jaxwb.models.reference_np import float64_params
from jaxwb.models.reference_np import logits as lm_logits_np


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


__all__ = ["float64_params", "gptq_numpy", "lm_cross_entropy_np", "lm_logits_np", "quantize", "quantizer_params"]
