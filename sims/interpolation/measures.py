"""Measurements over the interpolation results that the claims and figures read: the Monte-Carlo statistics per
(method, B) stacked with their bootstrap replicates (``Measured``), least-squares log-log slopes, and the
full-batch methods' iterations to eps. NumPy over the stored results (and the exact e-fold time of
``jaxwb.theory.interpolation``)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from jaxwb.sims.interpolation.config import METHODS, Config
from jaxwb.theory import interpolation as ip


def with_boot(point, boot):
    """Stack a point estimate (...,) and its bootstrap replicates (..., n_boot) into (..., 1 + n_boot)."""
    return np.concatenate([np.asarray(point, np.float64)[..., None], np.asarray(boot, np.float64)], -1)


@dataclasses.dataclass(frozen=True)
class Measured:
    """The Monte-Carlo statistics per (method, B) with their bootstrap replicates, (nM, nB, 1 + n_boot), and the
    exact recursion's iterations to eps, (nM, nB)."""

    Bs: np.ndarray  # (nB,) batch sizes
    seeds: np.ndarray  # (nM, nB) seeds behind each statistic
    hits: np.ndarray  # iterations to eps
    decay: np.ndarray  # per-step decay -log(rate) of E||e||^2 on the fit window
    efold: np.ndarray  # iterations per e-fold, 1 / decay
    exact_hits: np.ndarray
    note: str  # what the interval is
    checked: list  # (B, its index) of each rate-check batch size


def measured(results: dict, cfg: Config) -> Measured:
    """The Monte-Carlo statistics and exact iterations of ``results``."""
    mc = results["mc"]
    # seeds per (method, B); outputs written before seeds were per configuration hold one count per B
    seeds = np.asarray(mc["seeds"])
    seeds = np.broadcast_to(seeds, (len(METHODS), seeds.shape[-1])) if seeds.ndim == 1 else seeds
    decay = -np.log(with_boot(mc["rates"], mc["rates_boot"]))
    Bs, hits = np.asarray(results["batch_sizes"], dtype=float), with_boot(mc["hits"], mc["hits_boot"])
    note = f"95% bootstrap CI over seeds ({cfg.n_boot} resamples)"
    checked = list(zip(cfg.rate_check_batches, cfg.rate_check_indices, strict=True))
    return Measured(Bs, seeds, hits, decay, 1.0 / decay, np.asarray(results["theory"]["hits"]), note, checked)


def slope(x, Y):
    """Least-squares slope of Y (k, m) against x (k,), per column."""
    xc = x - x.mean()
    return (xc[:, None] * (Y - Y.mean(0))).sum(0) / (xc**2).sum()


def full_batch_times(results: dict, cfg: Config) -> tuple[float, float]:
    """Iterations to eps of full-batch Polyak heavy ball and of GD: ln(1/eps) x their e-fold times."""
    lg, det = math.log(1 / cfg.eps), results["deterministic"]
    return lg * float(ip.efold_time(det["polyak_rate_sq"])), lg * float(ip.efold_time(det["gd_rho"]))
