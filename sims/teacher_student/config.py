"""Teacher-student: the Config (validated), its presets and the names shared by claims and figures."""

from __future__ import annotations

import dataclasses
import math

from jaxwb.sims.core.presets import load_presets

NAME = "teacher_student"
TITLE = (
    "Teacher-student at extensive width (reconstruction): features learned one by one through jumps; "
    "eps_BO ~ n^(1/(2beta)-1), then n^-1"
)
RECON = "decoupled fixed-point reconstruction (paper's equations not public)"
SMALL_GAP = "Adam student of width k reaches eps_BO up to a small gap"


@dataclasses.dataclass(frozen=True)
class Config:
    k: int = 4000  # teacher width (number of features)
    delta: float = 1.0  # label-noise variance Delta
    betas: tuple[float, ...] = (0.75, 1.0, 1.5)
    n_alpha: int = 160  # alpha grid per beta, from alpha_lo to refine_factor x (alpha where the k-th is learned)
    alpha_lo: float = 1.0
    refine_factor: float = 1e3
    # fit windows: feature learning where k_lo <= k_c <= k / k_hi_div; refinement from 10 x the first all-learned
    k_lo: int = 10
    k_hi_div: int = 20
    # staircase (beta = 1)
    stair_features: int = 8  # show m_1..m_F
    n_stair: int = 400
    stair_alpha: tuple[float, float] = (1.0, 300.0)
    jump_features: tuple[int, ...] = (32, 64, 128, 256, 512)  # 1-based features whose thresholds are bisected
    # independent float64 reference across the first thresholds
    ref_k: int = 12
    ref_n_alpha: int = 48
    ref_alpha: tuple[float, float] = (0.5, 400.0)
    # AMP on spiked cubic tensors
    amp_n: int = 96
    amp_seeds: int = 8
    amp_signals: int = 8  # independent spikes per noise tensor
    amp_cs: tuple[float, ...] = (1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0)
    amp_iters: int = 30
    amp_m0: float = 0.9
    # MAP / Adam students, teacher from the prior (beta, Delta as below, k = d * st_k_ratio)
    st_ds: tuple[int, ...] = (24, 48, 96)
    st_k_ratio: float = 0.25
    st_alpha: float = 16.0
    st_beta: float = 1.0
    st_delta: float = 0.25
    st_seeds: int = 5
    st_steps: int = 300
    st_lr: float = 1e-2

    def __post_init__(self):
        def bad(field, what):
            raise ValueError(f"Config.{field} {what} (got {getattr(self, field)!r})")

        for f in (
            "k",
            "n_alpha",
            "k_lo",
            "k_hi_div",
            "stair_features",
            "n_stair",
            "ref_k",
            "ref_n_alpha",
            "amp_n",
            "amp_seeds",
            "amp_signals",
            "amp_iters",
            "st_seeds",
            "st_steps",
        ):
            val = getattr(self, f)
            if not isinstance(val, int) or val < 1:
                bad(f, "must be a positive integer")
        for f in ("delta", "alpha_lo", "refine_factor", "st_alpha", "st_delta", "st_lr", "st_k_ratio"):
            val = getattr(self, f)
            if not (isinstance(val, (int, float)) and math.isfinite(val) and val > 0):
                bad(f, "must be finite and > 0")
        if not self.betas or any(not (math.isfinite(b) and b > 0.5) for b in self.betas):
            bad("betas", "must be a non-empty tuple of finite values > 1/2")
        if 1.0 not in self.betas:
            bad("betas", "must contain 1.0 (the staircase and refinement-ratio claims use it)")
        if not (math.isfinite(self.st_beta) and self.st_beta > 0.5):
            bad("st_beta", "must be finite and > 1/2")
        for f in ("stair_alpha", "ref_alpha"):
            lo_hi = getattr(self, f)
            if len(lo_hi) != 2 or not (0 < lo_hi[0] < lo_hi[1] < math.inf):
                bad(f, "must be a pair 0 < lo < hi < inf")
        if (
            not self.jump_features
            or any(not (1 <= j <= self.k) for j in self.jump_features)
            or len(self.jump_features) < 3
        ):
            bad("jump_features", f"must hold >= 3 features in [1, k={self.k}]")
        if self.stair_features > self.k or self.ref_k < 2:
            bad("stair_features", "must be <= k (and ref_k >= 2)")
        if (
            len(self.amp_cs) < 4
            or any(not (math.isfinite(c) and c > 0) for c in self.amp_cs)
            or list(self.amp_cs) != sorted(self.amp_cs)
        ):
            bad("amp_cs", "must be >= 4 increasing finite SNRs > 0")
        if sum(c >= 3.0 for c in self.amp_cs) < 3:
            bad("amp_cs", "must hold >= 3 SNRs >= 3 (the learned-branch claims)")
        if not (0.0 < self.amp_m0 < 1.0):
            bad("amp_m0", "must be in (0, 1)")
        if len(self.st_ds) < 2 or any(int(d * self.st_k_ratio) < 1 for d in self.st_ds):
            bad("st_ds", "must hold >= 2 input dimensions with d * st_k_ratio >= 1")
        if self.amp_seeds < 5 or self.st_seeds < 5:
            bad("amp_seeds" if self.amp_seeds < 5 else "st_seeds", "must be >= 5 (claims use CIs over seeds)")


PRESETS = load_presets(Config)

# arrays shown in the figures only (each with why no claim reads it):
#   scaling/beta, student/d, student/k: the config's betas, input dimensions and widths echoed for the plots;
#   student/warm_best: the warm start's test error at its lowest validation loss; started AT the teacher it is an
#     oracle, not an estimator from the data, so the Bayes error does not bound it (it sits at 0.04-0.5 eps_BO,
#     the first checkpoints after the teacher) and nothing independent predicts it; shown beside the final error;
#   amp/mse_path: AMP's MSE per iteration (amp.png); on the learned branch (c >= 3) it settles in 1-2 steps, so its
#     end point (amp/mse) carries everything a claim can check, and below c = 3 the path drifts by finite-n effects.
DISPLAY_ONLY = ("scaling/beta", "student/d", "student/k", "student/warm_best", "amp/mse_path")
