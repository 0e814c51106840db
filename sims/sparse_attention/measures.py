"""Measurements over the sparse-attention results that the claims and figures read: the Spearman rank
correlation of the head-adaptive allocation (every row at once), and the index of a (refresh period, budget) policy
in the run's period-major grid. Pure NumPy/SciPy over the stored results."""

from __future__ import annotations

import numpy as np
from scipy import stats

from jaxwb.sims.sparse_attention.config import Config


def spearman_rows(a, b) -> np.ndarray:
    """Spearman rank correlation of ``a [..., n]`` and ``b [..., n]`` along the last axis (as
    ``scipy.stats.spearmanr``: average ranks for ties), every row at once. A row with a constant input (e.g. every
    head given the same number of blocks) has no ranking, and the correlation is undefined: returned as exactly 0.0
    (no association shown, so a sign test counts it as no win), never NaN."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape or a.ndim < 1 or a.shape[-1] < 2:
        raise ValueError(f"a and b must have the same shape (..., n >= 2), got {a.shape} and {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("a and b must be finite")
    ra, rb = stats.rankdata(a, axis=-1), stats.rankdata(b, axis=-1)
    ra, rb = ra - ra.mean(-1, keepdims=True), rb - rb.mean(-1, keepdims=True)
    den = np.sqrt(np.sum(ra**2, -1) * np.sum(rb**2, -1))
    constant = np.all(a == a[..., :1], -1) | np.all(b == b[..., :1], -1)
    return np.where(constant, 0.0, np.sum(ra * rb, -1) / np.where(constant, 1.0, den))


def spearman(a, b) -> float:
    """Spearman rank correlation of ``a [n]`` and ``b [n]`` (:func:`spearman_rows` of one row)."""
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(spearman_rows(a, b))


def row(cfg: Config, period: int, budget: float) -> int:
    """Index of (period, budget) in the period-major policy grid."""
    return list(cfg.periods).index(period) * len(cfg.budgets) + list(cfg.budgets).index(budget)
