"""quantization: the measurements over the stored results that the claims and figures share (where b bits stand,
the worst vector's MSE / bound on the first pass and re-measured, Student-t half-widths)."""

from __future__ import annotations

import math

import numpy as np
import scipy.stats

from jaxwb.sims.quantization.config import Config
from jaxwb.theory import dithered_quant as dq


def bit_index(results: dict, b: int) -> int:
    """Where ``b`` bits stand in ``results["bits"]``."""
    return int(np.nonzero(np.asarray(results["bits"]) == b)[0][0])


def worst_ratio(res, bits):
    """(worst over vectors of MSE / bound, its standard error) per b, for one {"mse", "se"} entry (first pass:
    biased up by the selection; plots only)."""
    bound = np.asarray(dq.mse_bound(np.asarray(bits)))[None]
    ratio = np.asarray(res["mse"]) / bound
    i, cols = np.argmax(ratio, axis=0), np.arange(ratio.shape[1])
    return ratio[i, cols], (np.asarray(res["se"]) / bound)[i, cols]


def t_halfwidth(se, n: int):
    """95% Student-t half-width from ``se`` = std (ddof 0) / sqrt(n) of n independent draws."""
    return scipy.stats.t.ppf(0.975, n - 1) * np.asarray(se) * math.sqrt(n / (n - 1))


def fresh_worst(results, cfg):
    """Per b: the fresh (held-out) estimate of MSE / bound for the worst vector of the d whose first-pass worst
    ratio is largest, its 95% CI half-width, and that d. Returns (ratio (B,), ci (B,), d (B,))."""
    bits, rht = np.asarray(results["bits"]), results["rht"]
    bound, dims = np.asarray(dq.mse_bound(bits)), list(rht)
    first = np.stack([worst_ratio(rht[d], bits)[0] for d in dims])  # (dims, B)
    worst = [dims[j] for j in np.argmax(first, axis=0)]  # per b: the d whose first-pass worst ratio is largest
    ratio = np.array([np.asarray(rht[d]["fresh_mse"])[bi] / bound[bi] for bi, d in enumerate(worst)])
    se = [np.asarray(rht[d]["fresh_se"])[bi] / bound[bi] for bi, d in enumerate(worst)]
    ci = np.array([t_halfwidth(s, cfg.fresh_draws(int(d))) for s, d in zip(se, worst, strict=True)])
    return ratio, ci, np.array([int(d) for d in worst])


def dense_fresh(results: dict, cfg: Config, name: str, b: int) -> tuple[float, float]:
    """The re-measured MSE at d = dense_d of ``name`` ("rht" or "dense") at ``b`` bits, its 95% t half-width."""
    df, bi = results["dense_fresh"], bit_index(results, b)
    se = float(np.asarray(df[f"{name}_se"])[bi])
    return float(np.asarray(df[f"{name}_mse"])[bi]), t_halfwidth(se, cfg.fresh_draws(cfg.dense_d))
