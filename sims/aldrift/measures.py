"""ALDRIFT sim: the measurements over the stored results that the claims and figures read (pure NumPy, no code
shared with run.py), and the temperatures where the paper's proposal covers p_tau.

  final_distance        ||final fitted mean - x*|| per run
  line_fit              least-squares slope and intercept (the evaluations-to-eps slopes)
  eps_summary           evaluations to reach eps per method, with the reached flags
  covered_temperatures  where the inflated proposal 2/mu_tau covers p_tau's steepest curvature
"""

from __future__ import annotations

import numpy as np

from jaxwb.sims.aldrift.config import PAPER_INFLATION


def final_distance(res: dict, name: str) -> np.ndarray:
    """||final fitted mean - x*|| of each run (runs,) of the method ``name`` in one setting's results ``res``
    (its ``mean`` (runs, iteration, n); x* = 0)."""
    return np.linalg.norm(np.asarray(res[name]["mean"])[:, -1], axis=-1)  # (runs,)


def line_fit(x, y):
    """Least-squares (slope, intercept) of y on x (both (k,))."""
    A = np.stack([np.ones_like(x), x], 1)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    return coef[1], coef[0]


def eps_summary(results, cfg):
    """Median evaluations to eps for each method, with the fit statistics used by the claims."""
    e = results["eps"]
    rs = np.asarray(e["random"]["count"])
    return {
        "eps": np.asarray(e["eps"]),
        "ald_med": np.median(np.asarray(e["aldrift"]["mean_cost"]), 0),
        "ald_ok": np.asarray(e["aldrift"]["mean_reached"]).all(0),
        "rs_eps": np.asarray(e["random"]["eps"]),
        "rs_mean": rs.mean(0),
        "rs_ok": np.asarray(e["random"]["reached"]).all(0),
        "doo": np.asarray(e["doo"]["count"]),
        "doo_ok": np.asarray(e["doo"]["reached"]),
        "doo_eps": np.asarray(e["doo"]["eps"]),
    }


def covered_temperatures(setting, taus) -> np.ndarray:
    """Mask of the temperatures at which the paper's inflated proposal variance 2/mu_tau, mu_tau = mu0 + tau mu_d,
    is at least p_tau's variance at its steepest curvature, 1/(mu0 + tau L_d), L_d = mu_d + A w^2: there the
    proposal covers p_tau and M IMH steps suffice. (mu0 + tau L_d) <= 2 (mu0 + tau mu_d), i.e.
    tau <= mu0 / (L_d - 2 mu_d)."""
    mu_d, A, w, _, mu0 = setting
    taus = np.asarray(taus)
    return (mu0 + taus * (mu_d + A * w**2)) <= PAPER_INFLATION * (mu0 + taus * mu_d)
