"""Speed-scaling sim: the measurements over the stored results that the claims and figures state and draw: the
fitted growth of SP's worst adversarial ratio over n and the eps interval the published LAS-accurate range maps to.
"""

from __future__ import annotations

import numpy as np

from jaxwb.sims.core.claims import pooled_slope
from jaxwb.sims.speed_scaling.config import PUBLISHED_LAS


def las_eps_interval(eps_grid, means, lo=PUBLISHED_LAS[0], hi=PUBLISHED_LAS[1]):
    """The eps interval whose LAS-accurate mean ratio lies in [lo, hi], by linear interpolation of the mean
    ratio (increasing in eps) on the grid; (nan, nan) when the curve misses the range."""
    x, y = np.asarray(eps_grid, float), np.asarray(means, float)
    if y[0] > hi or y[-1] < lo:
        return float("nan"), float("nan")
    return float(np.interp(lo, y, x)), float(np.interp(hi, y, x))


def robust_growth(n, worst) -> tuple[float, float]:
    """Fitted growth factor G = (n_max / n_min)^b of the worst adversarial ratio ``worst`` (N, seeds) over ``n``
    (N,) and its 95% half-width, b the pooled log-log slope (``pooled_slope``). G = 1: flat; ln(n) growth over
    20..400 gives G ~ 2."""
    slope, half, _ = pooled_slope(n, worst)
    span = float(np.log(np.max(n) / np.min(n)))
    g = float(np.exp(slope * span))
    return g, float(np.exp((slope + half) * span) - g)
