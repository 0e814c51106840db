"""Speed-scaling sim: NAME, TITLE, the Config, its presets and the published numbers it is compared with
(see ``jaxwb.sims.speed_scaling``)."""

from __future__ import annotations

import dataclasses
import math

from jaxwb.sims.core.presets import load_presets
from jaxwb.theory import speed_scaling as ss

NAME = "speed_scaling"
TITLE = "Speed scaling with machine-speed predictions: robust SP, LAS and the classic baselines"

BASELINES = ("avr", "oa", "qoa", "bkp")
PUBLISHED = {"avr": 1.27, "oa": 1.20, "bkp": 7.88}  # Bamas et al. 2020, mean ratios of their experiment
PUBLISHED_LAS = (1.008, 1.026)
ADVERSARIAL = (
    "zero",
    "scaled_up",
    "scaled_down",
    "shifted_early",
    "shifted_late",
    "reversed",
    "uniform",
    "spikes",
    "very_noisy",
)
# Arrays of ``run`` that no claim reads, and why (tests/sims/test_claim_coverage.py)
DISPLAY_ONLY = (
    "avr_lb/curve_kappa",  # the continuum curve of avr_lower_bound.png; the claims read it at lb_kappas (continuum)
    "avr_lb/curve_ratio",
    "main/qoa_work_only",  # work-only accounting beside the commanded one (las_experiment.png); <= commanded by EDF
    "main/bkp_work_only",
    "profiles/speeds/bkp",  # BKP's commanded speed drawn in profiles.png; its energy is claimed by bkp_check
    "profiles/speeds/sp_prediction",  # the noisy prediction drawn; its law is claimed via main/noise_pred_work
)
# Claims that fail on the full preset, with the reason (kept failing, not loosened).
KNOWN_MISMATCHES: dict[str, str] = {}


@dataclasses.dataclass(frozen=True)
class Config:
    alpha: float = 3.0
    # LAS's eps and SP's consistency targets (SP's trust factor kappa = sp_kappa(eps, alpha) = alpha / eps)
    eps_values: tuple[float, ...] = (0.1, 0.5, 2.0)
    # LAS's experiment model (Bamas et al.): one job per time unit, window D, random-walk workloads in [20, 80].
    # The same instances serve the LAS experiment, the error sweep and the adversarial predictions.
    n_jobs: int = 200
    window: int = 20
    n_seeds: int = 20
    substeps: int = 4  # grid slots per time unit
    walk_step: float = 5.0
    noise_levels: tuple[float, ...] = (0.0, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2)
    noise_law_draws: int = 16  # extra workload predictions per seed and level for the noise law's claim (no schedule)
    las_eps_grid: tuple[float, ...] = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0)
    las_cal_seeds: int = 10  # instances (own seeds) on which las_eps_grid maps the published range to eps
    bkp_check_jobs: int = 40  # BKP against the pure-Python reference on the first jobs of seed 0
    # SP's robustness against n: worst adversarial ratio on LAS-model instances of each size (own seeds)
    robust_n: tuple[int, ...] = (20, 50, 100, 200, 400)
    robust_seeds: int = 10
    robust_shared_shape: bool = False  # pad every n to the largest (one compiled program) or one program per n
    # worst-case bound checks on general random instances
    bound_jobs: int = 12
    bound_horizon: int = 30
    bound_seeds: int = 64
    # AVR lower-bound family at alpha = 2
    lb_jobs: int = 100  # jobs at kappa = 0.4 (n ~ 1 / kappa), and twice as many
    lb_kappas: tuple[float, ...] = (0.4, 0.2, 0.1)
    chunk: int = 5

    def __post_init__(self):
        def bad(field, why):
            raise ValueError(f"Config.{field}: {why}, got {getattr(self, field)!r}")

        if not (math.isfinite(self.alpha) and self.alpha > 1):
            bad("alpha", "must be finite and > 1")
        for field in ("eps_values", "noise_levels", "las_eps_grid", "lb_kappas"):
            vals = getattr(self, field)
            if not isinstance(vals, tuple) or not all(math.isfinite(float(x)) for x in vals):
                bad(field, "must be a tuple of finite numbers")
        if not self.eps_values or any(e <= 0 for e in self.eps_values):
            bad("eps_values", "must be a non-empty tuple of positive eps")
        if not self.noise_levels or min(self.noise_levels) != 0 or any(x < 0 for x in self.noise_levels):
            bad("noise_levels", "must be non-negative and contain 0 (the exact prediction)")
        if list(self.noise_levels) != sorted(self.noise_levels):
            bad("noise_levels", "must be increasing")
        if any(e <= 0 for e in self.las_eps_grid) or list(self.las_eps_grid) != sorted(self.las_eps_grid):
            bad("las_eps_grid", "must be increasing positive eps")
        if any(not 0 < k < 1 for k in self.lb_kappas):
            bad("lb_kappas", "must lie in (0, 1)")
        for field in (
            "n_jobs",
            "noise_law_draws",
            "window",
            "substeps",
            "chunk",
            "bkp_check_jobs",
            "bound_jobs",
            "bound_horizon",
            "lb_jobs",
        ):
            if not (isinstance(getattr(self, field), int) and getattr(self, field) >= 1):
                bad(field, "must be a positive int")
        if self.n_seeds < 5:
            bad("n_seeds", "must be >= 5 (claims on random quantities use a CI over seeds)")
        if any(not (isinstance(n, int) and n >= 2) for n in self.robust_n):
            bad("robust_n", "must be a tuple of ints >= 2")
        if self.robust_n and self.robust_seeds < 5:
            bad("robust_seeds", "must be >= 5 (the robustness-over-n claim uses a CI over seeds)")
        if self.las_cal_seeds < 5:
            bad("las_cal_seeds", "must be >= 5 (the calibration is a mean over seeds)")
        if self.bound_seeds < 0 or 0 < self.bound_seeds < 5:
            bad("bound_seeds", "must be 0 (no bound instances) or >= 5 per alpha")
        if self.bkp_check_jobs > self.n_jobs:
            bad("bkp_check_jobs", f"must be <= n_jobs = {self.n_jobs}")
        if self.bound_horizon <= 12:
            bad("bound_horizon", "must exceed the longest random window (12)")
        if not (math.isfinite(self.walk_step) and self.walk_step > 0):
            bad("walk_step", "must be finite and > 0")
        d_max = max(ss.eps_to_delta(e, self.alpha) for e in self.eps_values + self.las_eps_grid)
        if math.ceil(d_max * self.window * self.substeps) >= self.window * self.substeps:
            bad("eps_values", "leave no window after LAS's shrink")


PRESETS = load_presets(Config)


def delta_reference(eps, alpha):
    """delta with ((1 + delta) / (1 - delta))^alpha = 1 + eps, written out here (not ``ss.eps_to_delta``) so that
    the LAS shrink claim does not share code with what it checks."""
    c = (1.0 + eps) ** (1.0 / alpha)
    return (c - 1.0) / (c + 1.0)


COLORS = {"avr": "tab:orange", "oa": "tab:green", "qoa": "tab:olive", "bkp": "tab:red"}
LABELS = {"avr": "AVR", "oa": "OA", "qoa": "qOA", "bkp": "BKP"}
