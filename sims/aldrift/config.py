"""ALDRIFT sim: the Config, its presets and the fixed study constants (see ``jaxwb.sims.aldrift``)."""

from __future__ import annotations

import dataclasses
import math

from jaxwb.sims.core.presets import load_presets

PAPER_INFLATION = 2.0  # the paper's proposal variance 2/mu_tau (written here, not read from theory.aldrift)
NAME = "aldrift"
TITLE = "ALDRIFT: annealed IMH-corrected refitting escapes the traps TOPIFT falls in; O(log 1/eps) evaluations"


@dataclasses.dataclass(frozen=True)
class Config:
    # the paper's settings (mu_d, A, w, x0 (times the all-ones vector), mu0); x* = 0
    settings: tuple[tuple[float, float, float, float, float], ...] = (
        (0.5, 2.0, 3.0, 6.0, 0.1),
        (1.0, 0.5, 4.0, 1.35, 2.0),
    )
    n: int = 10
    tau1: float = 0.1
    T: float = 20.0
    m: int = 200
    M: int = 50
    runs: int = 10
    # runs of the pure-quadratic check (setting 1 with A = 0), same m and M as the settings (one compiled sweep):
    # its claims need ~1% precision on E[d] at T, so m * quad_runs >~ 4000 chains; M < 50 leaves E[d] at T more
    # than 3% high (the IMH lag: 8% at M = 10)
    quad_runs: int = 20
    # evaluations-to-eps panel (n = 4: random search needs (1/eps)^(n/2) = eps^-2; the paper's setting 2 cost)
    eps_n: int = 4
    eps_setting: int = 1
    eps_T: float = 1e5
    eps_m: int = 100
    eps_M: int = 20
    eps_runs: int = 10
    eps_grid: tuple[float, float, int] = (1.0, 1e-4, 17)  # geomspace(start, stop, num)
    # random search and DOO box: contains x* = 0 off-centre (DOO's first evaluation is the centre)
    box: tuple[float, float] = (-1.1, 1.5)
    rs_runs: int = 512
    rs_budget: int = 4_000_000  # a cap: runs stop at their first hit of the smallest eps (mean ~190k at 0.032)
    rs_eps_min: float = 0.03
    rs_eps_max: float = 0.1  # random-search fits use rs_eps_min <= eps <= rs_eps_max (ball regime)
    doo_expansions: int = 1000
    doo_eps_grid: tuple[float, float, int] = (1.0, 1e-6, 25)
    # coverage (1-D target N(0, 1); a two-mode mixture for the single-Gaussian MLE)
    cov_m: tuple[int, ...] = (10, 30, 100, 300, 1000, 3000, 10000)
    cov_m_main: int = 1000
    cov_seeds: int = 32
    cov_R: tuple[float, ...] = (2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0)
    cov_R_fixed: float = 6.0
    cov_grid: int = 4001
    cov_mix_sep: float = 1.5
    # the coverage target's sd: not 1, so that a bandwidth or variance with the wrong power of the data's scale
    # (h = c / sigma_hat instead of c sigma_hat) shows; radii R and the mixture separation are in units of it
    cov_sd: float = 2.0
    # Monte Carlo repetitions of the exact-sampling reference for the first temperature's importance ESS
    kish_reps: int = 400

    def __post_init__(self):
        for f in (
            "n",
            "m",
            "M",
            "runs",
            "quad_runs",
            "eps_n",
            "eps_m",
            "eps_M",
            "eps_runs",
            "rs_runs",
            "rs_budget",
            "doo_expansions",
            "cov_m_main",
            "cov_seeds",
            "cov_grid",
            "kish_reps",
        ):
            val = getattr(self, f)
            if not isinstance(val, int) or val < 1:
                raise ValueError(f"Config.{f} must be a positive integer, got {val!r}")
        for f in ("runs", "quad_runs", "eps_runs", "cov_seeds"):
            if getattr(self, f) < 5:
                raise ValueError(
                    f"Config.{f} must be >= 5 (claims on random quantities use CIs over >= 5 seeds), "
                    f"got {getattr(self, f)}"
                )
        for f in ("tau1", "T", "eps_T", "rs_eps_min", "rs_eps_max", "cov_R_fixed", "cov_mix_sep", "cov_sd"):
            val = getattr(self, f)
            if not (math.isfinite(val) and val > 0):
                raise ValueError(f"Config.{f} must be finite and > 0, got {val!r}")
        if self.tau1 >= self.T or self.tau1 >= self.eps_T:
            raise ValueError(
                f"Config.tau1 must be below T and eps_T, got tau1={self.tau1}, T={self.T}, eps_T={self.eps_T}"
            )
        if self.rs_eps_min > self.rs_eps_max:
            raise ValueError(f"Config.rs_eps_min must be <= rs_eps_max, got {self.rs_eps_min} > {self.rs_eps_max}")
        if not self.settings or any(len(st) != 5 or not all(math.isfinite(x) for x in st) for st in self.settings):
            raise ValueError(f"Config.settings must be non-empty 5-tuples (mu_d, A, w, x0, mu0), got {self.settings}")
        if any(st[0] <= 0 or st[4] <= 0 or st[1] < 0 for st in self.settings):
            raise ValueError("Config.settings need mu_d > 0, A >= 0 and mu0 > 0")
        if not 0 <= self.eps_setting < len(self.settings):
            raise ValueError(
                f"Config.eps_setting must index settings (0..{len(self.settings) - 1}), got {self.eps_setting}"
            )
        for f in ("eps_grid", "doo_eps_grid"):
            a, b, num = getattr(self, f)
            if not (a > b > 0 and int(num) >= 3):
                raise ValueError(f"Config.{f} must be (start > stop > 0, num >= 3), got {getattr(self, f)}")
        lo, hi = self.box
        if not (lo < 0 < hi):
            raise ValueError(f"Config.box must contain x* = 0, got {self.box}")
        if self.cov_m_main not in self.cov_m:
            raise ValueError(f"Config.cov_m_main must be one of cov_m={self.cov_m}, got {self.cov_m_main}")
        if len(self.cov_R) < 2 or sorted(self.cov_R) != list(self.cov_R) or min(self.cov_R) <= 0:
            raise ValueError(f"Config.cov_R must be >= 2 increasing positive radii, got {self.cov_R}")


# Arrays of ``run`` that no claim reads, and why (tests/sims/test_claim_coverage.py)
DISPLAY_ONLY = (
    "taus",  # the temperature axis; the quadratic's predictions use the sim's own intended_schedule (unit-tested)
    # IMH acceptance rates (acceptance.png): the ESS claims test the proposals, the cost claims the chains
    "setting1/aldrift/acceptance",
    "setting2/aldrift/acceptance",
    "quadratic/acceptance",
    "eps/aldrift/acceptance",
    # importance ESS in the Rastrigin settings and the n = 4 panel: no closed form (the pure quadratic's is claimed)
    "setting1/aldrift/ess",
    "setting2/aldrift/ess",
    "eps/aldrift/ess",
    # TOPIFT records acceptance 1/M and ESS 1 by construction (it keeps the m cheapest, it does not weight)
    "setting1/topift/acceptance",
    "setting2/topift/acceptance",
    "setting1/topift/ess",
    "setting2/topift/ess",
    # TOPIFT's elite mean cost: shown; its trap is claimed on its mean's distance and on its best cost
    "setting1/topift/sample_cost",
    "setting2/topift/sample_cost",
    # setting 1's exact mean of p_tau: the figure's reference; ALDRIFT lags p_tau there at every tau >= tau1 (the
    # proposal's 2/mu_tau never covers the curvature L_d = 37 mu_d: see the expected failure at T)
    "setting1/exact/distance",
    # the best cost seen is <= the fitted samples' mean cost (they are among the evaluated points), so it reaches
    # every eps first by construction; shown dotted in evaluations.png
    "eps/aldrift/best",
    "eps/aldrift/best_reached",
    # DOO's best-so-far curve: the claim compares the first-hit counts read off it with an independent NumPy DOO's
    "eps/doo/best",
    # Pr_p[p/L > 10] on the grid: shown; coverage is decided on sup p/L (claims on log_sup_vs_R and _vs_m)
    "coverage/tail_mass_K10_vs_m",
)

PRESETS = load_presets(Config)


COVERAGE_FAMILIES = (
    "MLE mean, variance 2 sigma^2 (ALDRIFT)",
    "KDE h = sigma_hat (c = 1)",
    "KDE h = 2 sigma_hat (c = 2)",
    "single Gaussian MLE on a 2-mode mixture",
    "empirical variance (no inflation)",
    "KDE h = m^(-1/5) sigma_hat (shrinking)",
)
COVERAGE_HOLDS = (True, True, True, True, False, False)
