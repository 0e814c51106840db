"""Measurements over the tv_distance results that the claims and figures read: a fitted log-log slope as an
interval (from its stored bootstrap ends), and a coverage study's repetitions in the form ``statistics.ci_hits``
reads. NumPy over the stored results."""

from __future__ import annotations

import numpy as np

from jaxwb.theory import tv_distance as tv


def slope_interval(fit: dict, n: int) -> tuple[float, float, int]:
    """(slope, half-width, n) of a fitted log-log slope with its 95% bootstrap interval ``fit["slope_ci"]``: the
    larger distance from the slope to an end (inf when an end is not finite)."""
    slope = float(fit["slope"])
    lo, hi = (float(x) for x in fit["slope_ci"])
    return slope, max(slope - lo, hi - slope) if np.isfinite(lo + hi) else float("inf"), n


def interval_rep(cov: dict, name: str) -> dict:
    """The repetitions of ``cov[name]`` as ``ci_hits`` reads them (a logit kind's estimates are its values)."""
    return cov[name] if name not in tv.LOGIT_KINDS else {"value": cov[name]["estimates"], "se": cov[name]["se"]}
