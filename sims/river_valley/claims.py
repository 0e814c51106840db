"""river_valley: the claims (what is measured: the package docstring)."""

from __future__ import annotations

import numpy as np

from jaxwb.sims.core.claims import Claim
from jaxwb.sims.river_valley.config import Config
from jaxwb.theory import river_valley as rv

# ---------------------------------------------------------------------------------------------------------
# Claims
# ---------------------------------------------------------------------------------------------------------


def boundary_claims(results: dict, cfg: Config) -> list[Claim]:
    """Measured HB and Nesterov stability edges vs their closed forms."""
    out = []
    b = results["boundary"]
    edge = (
        "bisection on lr, divergence = growth x1e6 within the horizon; the finite horizon puts the measured "
        "edge < 0.5% above the closed form"
    )
    for beta, hb, nag in zip(np.asarray(b["beta"]), np.asarray(b["hb"]), np.asarray(b["nesterov"]), strict=True):
        out.append(
            Claim(
                f"HB stability boundary lr* = 2(1+beta)/lam at beta={beta:.2f} ({edge})",
                rv.hb_threshold(cfg.lam, float(beta)),
                hb,
                0.02,
                "rel",
                kind="check",
            )
        )
        if beta > 0:
            out.append(
                Claim(
                    f"Nesterov boundary lr* = 2(1+beta)/((1+2beta)lam) at beta={beta:.2f}",
                    rv.nesterov_threshold(cfg.lam, float(beta)),
                    nag,
                    0.02,
                    "rel",
                    kind="check",
                )
            )
    return out


def speed_claims(results: dict, cfg: Config) -> list[Claim]:
    """Largest stable river speed HB/GD vs (1+beta)/(1-beta)."""
    out = []
    s = results["river_speed"]
    for beta, gain in zip(np.asarray(s["beta"]), np.asarray(s["gain"]), strict=True):
        out.append(
            Claim(
                f"largest stable river speed, HB/GD = (1+beta)/(1-beta) at beta={beta:.2f} (simulated "
                "at 0.95 x each measured edge)",
                rv.river_speed_gain(float(beta)),
                gain,
                0.03,
                "rel",
                kind="check",
            )
        )
    return out


def closed_form_claims(results: dict, cfg: Config) -> list[Claim]:
    """Linear-river transient, straight-valley progress and Polyak's rate vs the closed forms."""
    out = []
    t = results["transient"]
    err = np.max(np.abs(np.asarray(t["simulated"]) - np.asarray(t["formula"])))
    scale = np.max(np.abs(np.asarray(t["formula"])))
    out.append(
        Claim(
            "exact linear-river transient x_t = x0 - lr g/(1-b)[t - b(1-b^t)/(1-b)] (max rel. error, "
            "float32 simulation)",
            0.0,
            err / scale,
            1e-4,
            "abs",
            kind="check",
            source="theory",
        )
    )
    pr = results["progress"]
    dev = np.max(np.abs(np.asarray(pr["distance"], np.float64) - np.asarray(pr["theory"]))) / abs(cfg.x0)
    out.append(
        Claim(
            "straight-valley river distance |x_t| = closed-form eigen-solution |A r1^t + B r2^t| for GD "
            "and HB at 0.9 x threshold (max |error| / |x0|, float32 simulation)",
            0.0,
            dev,
            1e-4,
            "abs",
            kind="check",
            source="theory",
        )
    )
    p = results["polyak"]
    out.append(
        Claim(
            "Polyak-optimal HB on [mu, lam]: per-step decay 1 - rate over [T/2, T] = closed form "
            "(double roots r = (sqrt k-1)/(sqrt k+1): x_t = x0 r^t (1 + (1-r) t))",
            1.0 - float(p["rate_closed_form"]),
            1.0 - float(p["rate_measured"]),
            0.01,
            "rel",
            kind="check",
            source="theory",
        )
    )
    return out


def curved_valley_claims(results: dict, cfg: Config) -> list[Claim]:
    """Divergence / convergence fractions over random curved-valley starts vs linear stability."""
    out = []
    tr = results["trajectories"]
    n = int(np.asarray(tr["gd_aggressive"]["diverged"]).size)
    out.append(
        Claim(
            f"GD diverges at the aggressive lr = 0.8 x 2(1+beta)/lam_eff > 2/lam_eff (fraction of {n} "
            "random curved-valley starts)",
            1.0,
            float(np.mean(tr["gd_aggressive"]["diverged"])),
            0.0,
            "abs",
            kind="check",
            n_seeds=n,
        )
    )
    loss = np.asarray(tr["hb_aggressive"]["loss"], np.float64)
    conv = (~np.asarray(tr["hb_aggressive"]["diverged"])) & (loss[:, -1] < 1e-3 * loss[:, 0])
    out.append(
        Claim(
            f"HB (beta={cfg.traj_beta:g}) converges at the same lr < 2(1+beta)/lam_eff (fraction of {n} "
            "random starts with final loss < 1e-3 x initial)",
            1.0,
            float(np.mean(conv)),
            0.0,
            "abs",
            kind="check",
            n_seeds=n,
        )
    )
    return out


def claims(results: dict, cfg: Config) -> list[Claim]:
    return [
        *boundary_claims(results, cfg),
        *speed_claims(results, cfg),
        *closed_form_claims(results, cfg),
        *curved_valley_claims(results, cfg),
    ]
