"""Interval statistics of the tv_distance result: the binomial coverage interval and the stated intervals' hits."""

from __future__ import annotations

import numpy as np
from scipy import stats

from jaxwb.theory import tv_distance as tv


def binomial_ci(hits, level: float = 0.95) -> tuple[float, float, float, int]:
    """Fraction of True in ``hits`` (any shape) and its Wilson score interval at ``level``
    (``scipy.stats.binomtest(k, N).proportion_ci(method="wilson")``): (fraction, low, high, N). Wilson rather
    than the normal approximation: it does not collapse to zero width when every repetition covers, and its
    coverage is close to nominal at N = 200-400 and p near 0.95."""
    h = np.asarray(hits, bool).ravel()
    if h.size == 0:
        raise ValueError("hits must hold at least one repetition")
    k = int(h.sum())
    ci = stats.binomtest(k, int(h.size)).proportion_ci(confidence_level=level, method="wilson")
    return k / h.size, float(ci.low), float(ci.high), int(h.size)


def ci_hits(rep: dict, truth: float, level: float = 0.95) -> np.ndarray:
    """Does the stated interval ``value +- Estimate.halfwidth(level)`` of each repetition cover ``truth``?"""
    value, se, bias = np.asarray(rep["value"]), np.asarray(rep["se"]), np.asarray(rep.get("bias", 0.0))
    # theory's Estimate annotates its fields jax.Array; halfwidth (z * stderr + |bias|) takes NumPy arrays as well
    e = tv.Estimate(value, se, 0, bias)  # type: ignore[arg-type]  # NumPy fields, see the line above
    return np.abs(np.asarray(rep["value"]) - truth) <= np.asarray(e.halfwidth(level))
