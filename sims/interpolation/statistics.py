"""Statistics on E||e_t||^2 curves: iterations to eps (log-interpolated), windowed decay fits, the fit
windows, and percentile-bootstrap intervals over seeds."""

from __future__ import annotations

import math

import numpy as np


def _hit(curve, t, level):
    """First recorded time after which curve / curve[0] stays <= level (inf if never)."""
    c = np.asarray(curve) / float(np.asarray(curve)[0])
    above = np.nonzero(c > level)[0]
    if len(above) == 0:
        return float(t[0])
    k = above[-1] + 1
    return float(t[k]) if k < len(t) else math.inf


def asymptotic_window(exact, rho, span, tol=0.01, floor=1e-9):
    """(t_a, t_b) for the rate fit: the earliest window of ``span`` e-folds where the least-squares slope of
    log(exact curve) is within ``tol`` of log rho (exact curve at full resolution), restricted to levels
    >= ``floor`` x the initial value (the float32 Monte Carlo bottoms out near 1e-12). If no window qualifies,
    the best one above the floor is returned (the claim then shows the mismatch)."""
    c = np.asarray(exact, np.float64)
    lc = np.log(np.maximum(c / c[0], 1e-300))
    ef = float(-1.0 / np.log(rho))
    w = max(3, int(span * ef))
    above = np.nonzero(lc >= np.log(floor))[0]
    last = int(above[-1]) if len(above) else 0
    if last <= w:
        return 0, min(len(c) - 1, w)
    best, best_err = (0, w), math.inf
    step = max(1, (last - w) // 200)
    for ta in range(0, last - w + 1, step):
        tt = np.arange(ta, ta + w + 1, max(1, w // 50))
        slope = np.polyfit(tt, lc[tt], 1)[0]
        err = abs(slope / np.log(rho) - 1.0)
        if err < best_err:
            best, best_err = (ta, ta + w), err
        if err < tol:
            break
    return best


def _level_window(exact, span, start=1.0, floor=1e-9):
    """(t_a, t_b) for comparing Monte Carlo with the exact curve: from the first step where the exact
    E||e_t||^2 / ||e_0||^2 falls below e^-start to the first where it falls below e^-(start + span) (capped
    at ``floor``). Early on purpose: the Monte-Carlo mean of a product of random matrices is carried by ever
    rarer trajectories as t grows (its asymptotic rate is a large-deviation quantity), so an early window
    measures the same decay with a far smaller error; the prediction is the exact curve's fit on the same
    window, so the window needs no asymptotics."""
    c = np.asarray(exact, np.float64)
    lc = np.log(np.maximum(c / c[0], 1e-300))
    lo = max(-(start + span), math.log(floor))
    below_a = np.nonzero(lc <= -start)[0]
    below_b = np.nonzero(lc <= lo)[0]
    ta = int(below_a[0]) if len(below_a) else 0
    tb = int(below_b[0]) if len(below_b) else len(c) - 1
    return ta, max(tb, ta + 3)


def _fit(curve, t, ta, tb):
    """exp(slope) of log(curve) against t over ta <= t <= tb (nan if fewer than 3 recorded points)."""
    t = np.asarray(t, np.float64)
    sel = (t >= ta) & (t <= tb)
    c = np.asarray(curve, np.float64)[sel]
    if sel.sum() < 3 or not np.all(c > 0):
        return math.nan
    return float(np.exp(np.polyfit(t[sel], np.log(c), 1)[0]))


def hits(curves, t, level):
    """First time after which each curve (rows of ``curves`` (..., P), normalised by its first value) stays
    <= ``level``: log-linear interpolation between the last recorded point above and the next one (inf if the
    last point is above, t[0] if none is)."""
    c = np.asarray(curves, np.float64)
    c = c / c[..., :1]
    t = np.asarray(t, np.float64)
    P = c.shape[-1]
    above = c > level
    last = P - 1 - np.argmax(above[..., ::-1], axis=-1)
    k = np.minimum(last + 1, P - 1)
    lc = np.log(np.maximum(c, 1e-300))
    l0, l1 = np.take_along_axis(lc, (k - 1)[..., None], -1)[..., 0], np.take_along_axis(lc, k[..., None], -1)[..., 0]
    frac = np.clip((l0 - np.log(level)) / np.where(l0 > l1, l0 - l1, np.inf), 0.0, 1.0)
    out = t[k - 1] + frac * (t[k] - t[k - 1])
    out = np.where(last + 1 >= P, np.inf, out)
    return np.where(above.any(-1), out, t[0])


def fits(curves, t, ta, tb):
    """exp(slope) of log(curve) vs t over ta <= t <= tb for every row of ``curves`` (..., P) (nan if fewer
    than 3 points or a non-positive value)."""
    t = np.asarray(t, np.float64)
    sel = (t >= ta) & (t <= tb)
    c = np.asarray(curves, np.float64)[..., sel]
    if sel.sum() < 3:
        return np.full(c.shape[:-1], np.nan)
    ok = np.all(c > 0, axis=-1)
    y = np.log(np.where(c > 0, c, 1.0))
    x = t[sel] - t[sel].mean()
    slope = (y * x).sum(-1) / (x * x).sum()
    return np.where(ok, np.exp(slope), np.nan)


def boot_means(errs, n_boot, rng):
    """Bootstrap replicates of the mean curve over seeds: errs (seeds, P) -> (n_boot, P).

    ``scipy.stats.bootstrap`` draws the resamples (``n_resamples=n_boot`` resamples of the seed indices with
    replacement, ``method="percentile"``, ``random_state=rng``); the statistic maps a resample of indices to its
    mean curve (a count-weighted sum: one matrix product per batch of resamples). The replicates feed the
    percentile intervals of every statistic derived from the curve (``boot_halfwidth``)."""
    from scipy import stats

    errs = np.asarray(errs, np.float64)
    n = errs.shape[0]

    def mean_curve(idx, axis=-1):
        idx = np.asarray(idx)
        flat = idx.reshape(-1, n)
        off = (flat + n * np.arange(flat.shape[0])[:, None]).ravel()
        counts = np.bincount(off, minlength=flat.shape[0] * n).reshape(flat.shape[0], n)
        out = (counts @ errs / n).reshape(*idx.shape[:-1], errs.shape[1])
        return np.moveaxis(out, -1, 0)

    res = stats.bootstrap(
        (np.arange(n),),
        mean_curve,
        vectorized=True,
        n_resamples=n_boot,
        method="percentile",
        random_state=rng,
    )
    return np.asarray(res.bootstrap_distribution).T


def boot_halfwidth(point, replicates):
    """Percentile-bootstrap 95% half-width around ``point`` (the larger distance to an end; inf if any
    replicate is not finite)."""
    r = np.asarray(replicates, np.float64)
    if not np.isfinite(point) or not np.all(np.isfinite(r)):
        return math.inf
    lo, hi = np.quantile(r, [0.025, 0.975])
    return float(max(point - lo, hi - point, 0.0))
