"""river_valley: the claims and the mutants that must make them fail (what is measured: the package docstring)."""

from __future__ import annotations

import numpy as np

from jaxwb.sims.core.audit import Mutant
from jaxwb.sims.core.claims import Claim
from jaxwb.sims.river_valley.config import Config
from jaxwb.theory import river_valley as rv

# ---------------------------------------------------------------------------------------------------------
# Claims
# ---------------------------------------------------------------------------------------------------------


def claims(results: dict, cfg: Config) -> list[Claim]:
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


# ---------------------------------------------------------------------------------------------------------
# Mutants: plausible bugs, each must make a claim fail on the quick preset (``workbench audit river_valley``)
# ---------------------------------------------------------------------------------------------------------


def _hb_momentum_10pct(step):
    def mutated(grad_fn, x, x_prev, *, lr, beta, method):
        return step(grad_fn, x, x_prev, lr=lr, beta=1.1 * beta if method == "hb" else beta, method=method)

    return mutated


def _polyak_lr_10pct(f):
    def mutated(mu, L):
        lr, beta, rate = f(mu, L)
        return 1.1 * lr, beta, rate

    return mutated


MUTANTS = [
    Mutant(
        "hb_boundary_missing_1+beta",
        "jaxwb.theory.river_valley:hb_threshold",
        lambda f: lambda lam, beta: f(lam, beta) / (1.0 + beta),
        "heavy-ball stability edge without its (1+beta) factor: 2/lam",
    ),
    Mutant(
        "nesterov_factor_off",
        "jaxwb.theory.river_valley:nesterov_threshold",
        lambda f: lambda lam, beta: f(lam, beta) * (1.0 + 2.0 * beta) / (1.0 + beta),
        "Nesterov edge with (1+beta) where (1+2beta) belongs",
    ),
    Mutant(
        "hb_momentum_10pct",
        "jaxwb.theory.river_valley:_momentum_step",
        _hb_momentum_10pct,
        "heavy-ball step applies 1.1 beta (x - x_prev)",
    ),
    Mutant(
        "polyak_lr_10pct",
        "jaxwb.theory.river_valley:hb_optimal_params",
        _polyak_lr_10pct,
        "Polyak's optimal step 4/(sqrt L + sqrt mu)^2 off by 10%",
    ),
]
