"""river_valley: the Config, its presets and the constants (what is measured: the package docstring)."""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxwb.sims.core.presets import load_presets
from jaxwb.theory import validate as v

NAME = "river_valley"
TITLE = (
    "Heavy-ball momentum in river-valley landscapes: larger stable lr, (1+beta)/(1-beta) faster river "
    "(seed: curved-valley starts, high-dim offsets; the rest is deterministic)"
)


# Arrays of ``run`` that no claim reads, and why (tests/sims/test_claim_coverage.py)
DISPLAY_ONLY = (
    "transient/t",  # the step axis of the transient figure
    "progress/beta",  # inputs of the progress curves (the claim reads their distances and theory)
    "progress/lr",
    "trajectories/starts",  # curved-valley paths and losses for the figure; the claims read the flags
    "trajectories/gd_safe/theta",
    "trajectories/gd_safe/loss",
    "trajectories/gd_aggressive/theta",
    "trajectories/gd_aggressive/loss",
    "trajectories/gd_aggressive/lr",
    "trajectories/hb_aggressive/theta",
    "trajectories/hb_aggressive/lr",
    "polyak/rate_theory",  # Polyak's r, drawn as r^t; the claims use the closed form of both double-root modes
    "curved_river/period",  # the floor period and the distance curves of the curved-river figure
    "curved_river/gd/distance",
    "curved_river/hb/distance",
)


@dataclasses.dataclass(frozen=True)
class Config:
    lam: float = 100.0  # valley curvature
    mu: float = 0.01  # river curvature (kappa = lam / mu)
    x0: float = 1.0  # initial distance along the river (x* = 0)
    y0: float = 0.1  # initial valley offset
    # phase diagram
    n_lr: int = 60
    n_beta: int = 50
    lr_range: tuple[float, float] = (1e-3, 1e-1)
    beta_max: float = 0.99
    phase_steps: int = 500
    # stability boundary (bisection on lr, per beta)
    boundary_betas: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95)
    boundary_steps: int = 4000
    bisection_iters: int = 30
    # river speed
    speed_betas: tuple[float, ...] = (0.5, 0.8, 0.9)
    speed_margin: float = 0.95  # run at this fraction of the measured boundary
    speed_steps: int = 2000
    # curves
    progress_betas: tuple[float, ...] = (0.5, 0.8, 0.9)
    progress_steps: int = 1500
    curved_a: float = 1.0
    curved_k: float = 0.3
    traj_beta: float = 0.9
    traj_steps: int = 400
    start_x_range: tuple[float, float] = (-3.5, -2.5)  # curved-valley starts: x uniform in this range,
    start_y_sd: float = 0.1  # y = floor + 0.05 + start_y_sd * N(0, 1)
    hd_dim: int = 16
    hd_lam_min: float = 1.0
    n_seeds: int = 16
    polyak_steps: int = 1000
    # speed along a curved river (slope 1, floor curved_a sin(curved_k x))
    curve_steps: int = 3000  # GD covers ~2 floor periods, HB ~37
    curve_burn: int = 200  # steps before the speed is measured (HB's transient ~ 1/(1 - beta) steps)

    def __post_init__(self):
        v.positive("lam", self.lam)
        v.positive("mu", self.mu)
        v.check("mu", self.mu, lambda a: a < self.lam, f"< lam={self.lam} (the river is the flat direction)")
        v.positive("lr_range", self.lr_range)
        v.in_interval("beta_max", self.beta_max, 0.0, 1.0)
        for name in ("boundary_betas", "speed_betas", "progress_betas", "traj_beta"):
            v.in_interval(name, getattr(self, name), 0.0, 1.0)
        v.in_interval("speed_margin", self.speed_margin, 0.0, 1.0)
        if len(self.lr_range) != 2 or not self.lr_range[0] < self.lr_range[1]:
            raise ValueError(f"lr_range must be (lo, hi) with lo < hi, got {self.lr_range}")
        if len(self.start_x_range) != 2 or not self.start_x_range[0] < self.start_x_range[1]:
            raise ValueError(f"start_x_range must be (lo, hi) with lo < hi, got {self.start_x_range}")
        for name in ("x0", "y0", "curved_a", "curved_k", "start_y_sd", "hd_lam_min"):
            v.check(name, getattr(self, name), np.isfinite, "finite")
        v.positive("hd_lam_min", self.hd_lam_min)
        v.check("hd_lam_min", self.hd_lam_min, lambda a: a <= self.lam, f"<= lam={self.lam}")
        v.nonnegative("start_y_sd", self.start_y_sd)
        if self.x0 == 0:
            raise ValueError("x0 must be != 0 (river progress is measured relative to |x0 - x*|)")
        if len(self.boundary_betas) < 1 or len(self.speed_betas) < 1:
            raise ValueError("boundary_betas and speed_betas must be non-empty")
        for name in (
            "n_lr",
            "n_beta",
            "phase_steps",
            "boundary_steps",
            "bisection_iters",
            "speed_steps",
            "progress_steps",
            "traj_steps",
            "hd_dim",
            "n_seeds",
            "polyak_steps",
            "curve_steps",
            "curve_burn",
        ):
            v.positive_int(name, getattr(self, name))
        if self.n_seeds < 5:
            raise ValueError(f"n_seeds must be >= 5 (claims over random starts), got {self.n_seeds}")
        if self.polyak_steps < 10:
            raise ValueError(f"polyak_steps must be >= 10, got {self.polyak_steps}")
        if self.curve_steps <= self.curve_burn:
            raise ValueError(f"curve_steps must be > curve_burn={self.curve_burn}, got {self.curve_steps}")
        if self.speed_steps <= 100:
            raise ValueError(
                f"speed_steps must be > 100 (the speed is measured over the last 100), got {self.speed_steps}"
            )


PRESETS: dict[str, Config] = load_presets(Config)
