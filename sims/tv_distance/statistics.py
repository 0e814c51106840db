"""Interval statistics of the tv_distance result: the binomial coverage interval and the stated intervals' hits."""

from __future__ import annotations

import math

import numpy as np

from jaxwb.theory import tv_distance as tv


def binomial_ci(hits) -> tuple[float, float, int]:
    """Fraction of True in ``hits`` and its normal-approximation 95% half-width (at least 1.96 sqrt(p(1-p)/N)
    evaluated at p = 0.95, so a run where every repetition covers is not given a zero-width interval)."""
    h = np.asarray(hits, bool).ravel()
    frac = float(h.mean())
    pp = min(max(frac, 0.05), 0.95)
    return frac, 1.96 * math.sqrt(pp * (1 - pp) / h.size), int(h.size)


def ci_hits(rep: dict, truth: float, level: float = 0.95) -> np.ndarray:
    """Does the stated interval ``value +- Estimate.halfwidth(level)`` of each repetition cover ``truth``?"""
    e = tv.Estimate(np.asarray(rep["value"]), np.asarray(rep["se"]), 0, np.asarray(rep.get("bias", 0.0)))
    return np.abs(np.asarray(rep["value"]) - truth) <= np.asarray(e.halfwidth(level))
