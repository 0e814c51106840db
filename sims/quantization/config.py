"""quantization: the Config, its presets and the constants (what is measured: the package docstring)."""

from __future__ import annotations

import dataclasses
import math

from jaxwb.sims.core.presets import load_presets

NAME = "quantization"
TITLE = "Dithered RHT quantization meets (pi sqrt3/2) 4^-b; NVFP4/MXFP4/RaZeR/RHT at equal bits; InQuant 4.0x KV"

FAMILIES = ("gaussian", "flat", "e1", "sparse4", "two_level", "cauchy")


@dataclasses.dataclass(frozen=True)
class Config:
    dims: tuple[int, ...] = (64, 1024, 8192)  # d for the MSE-vs-bits sweep
    bits: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8)
    vectors_per_family: int = 3  # unit vectors per family (worst of len(FAMILIES) x this)
    n_signs: int = 48  # random sign draws D per vector (Monte Carlo)
    n_dither: int = 8  # stratified dithers per draw (the dither expectation is nearly exact)
    dense_d: int = 64  # dimension of the dense-Haar-rotation comparison (= rht_block: the RHT kernel is claimed on it)
    dense_rotations: int = 24
    chunk: int = 8  # sweep rows per jitted chunk (memory)
    # format comparison
    fmt_rows: int = 512
    fmt_cols: int = 256
    rht_block: int = 64  # RHT vectors of 64 coordinates: 4 + 32/64 = 4.5 bits per element, NVFP4's rate
    # InQuant
    kv_tokens: int = 2048
    kv_channels: int = 128
    kv_outliers: tuple[int, ...] = (3, 4, 5, 40, 97)  # three adjacent outlier channels exercise the stride
    kv_outlier_scale: float = 25.0
    kv_dof: int = 3
    kv_samples: int = 128
    kv_seeds: int = 5  # independent KV matrices (and packing keys) for the InQuant claim
    fresh_factor: int = 2  # the worst vector is re-measured with at least fresh_factor * n_signs new sign draws
    # Power of the re-measurement (fresh_draws): at b = 8 one draw's MSE / bound has sd 0.27 for a flat unit vector
    # at d = 64 (0.17 under a dense Haar rotation), with rare draws 15x the mean (20000 draws); 0.09 at d = 1024,
    # 0.04 at d = 8192: the d coordinates of a draw average. The b = 8 claims need the whole 95% CI within ~0.02
    # of the mean at every seed, so the re-measurement takes fresh_coordinates / d draws (2048 at d = 64: CI
    # +-0.012, +-0.02 with one draw 15x the mean) and at least fresh_factor * n_signs.
    fresh_coordinates: int = 131072

    def __post_init__(self):
        for f in (
            "vectors_per_family",
            "n_signs",
            "n_dither",
            "dense_d",
            "dense_rotations",
            "chunk",
            "fmt_rows",
            "fmt_cols",
            "rht_block",
            "kv_tokens",
            "kv_channels",
            "kv_dof",
            "kv_samples",
            "kv_seeds",
            "fresh_factor",
            "fresh_coordinates",
        ):
            val = getattr(self, f)
            if not isinstance(val, int) or val < 1:
                raise ValueError(f"Config.{f} must be a positive integer, got {val!r}")
        if not self.dims or any(d < 2 or d & (d - 1) for d in (*self.dims, self.dense_d, self.rht_block)):
            raise ValueError(
                f"Config.dims, dense_d and rht_block must be powers of two >= 2, got dims={self.dims}, "
                f"dense_d={self.dense_d}, rht_block={self.rht_block}"
            )
        if (
            not self.bits
            or any(not isinstance(b, int) or not 1 <= b <= 8 for b in self.bits)
            or list(self.bits) != sorted(set(self.bits))
        ):
            raise ValueError(f"Config.bits must be increasing integers in 1..8, got {self.bits}")
        for b in (3, 4, 8):
            if b not in self.bits:
                raise ValueError(f"Config.bits must contain {b} (the claims use b = 3, 4 and 8), got {self.bits}")
        if self.n_signs < 5 or self.kv_seeds < 5 or self.dense_rotations < 5:
            raise ValueError("Config.n_signs, kv_seeds and dense_rotations must be >= 5 (CIs over >= 5 draws)")
        if self.dense_d != self.rht_block:
            raise ValueError(
                f"Config.dense_d must equal rht_block (the RHT kernel on Gaussian rows is claimed against the dense "
                f"rotation at that d), got dense_d={self.dense_d}, rht_block={self.rht_block}"
            )
        if self.fmt_cols % 32 or self.fmt_cols % self.rht_block:
            raise ValueError(f"Config.fmt_cols must be a multiple of 32 and of rht_block, got {self.fmt_cols}")
        if not self.kv_outliers or max(self.kv_outliers) >= self.kv_channels or min(self.kv_outliers) < 0:
            raise ValueError(f"Config.kv_outliers must be channel indices in [0, kv_channels), got {self.kv_outliers}")
        if not (math.isfinite(self.kv_outlier_scale) and self.kv_outlier_scale > 0):
            raise ValueError(f"Config.kv_outlier_scale must be finite and > 0, got {self.kv_outlier_scale}")

    def fresh_draws(self, d: int) -> int:
        """Sign draws (and, at dense_d, Haar rotations) of the worst vector's re-measurement at dimension d: the
        power calculation of ``fresh_coordinates``."""
        return max(self.fresh_factor * self.n_signs, -(-self.fresh_coordinates // int(d)))


# arrays ``run`` returns that no claim decides on, and why (``jaxwb.sims.core.coverage``)
DISPLAY_ONLY = (
    "bound",  # the theory lines of mse_vs_bits.png (the claims recompute them from theory.dithered_quant)
    "finite_level",
    "dense/mse",  # the first-pass dense sweep (plotted; the claims use the re-measured dense_fresh)
    "dense/se",
    "rht_at_dense_d",  # the RHT sweep at dense_d (plotted; the same arrays as rht/<dense_d> when dense_d is in dims)
    # which vector the first pass found worst (an index into the families): plumbing for the re-measurement, whose
    # values the claims read
    "dense_fresh/worst",
    *(f"rht/{d}/worst" for d in sorted({*Config().dims, 64})),
    "formats",  # format_comparison.png / error_histograms.png; RaZeR <= NVFP4 per block and EDEN's unbiasedness
    # are unit tests (tests/sims/test_quantization.py), the perplexity comparison is tiny_lm's; the FP4 kernels'
    # values are claimed element by element against the independent decoder (format_check)
    "inquant/channel_rmse",  # inquant.png; the outlier channels' error is claimed per seed (outlier_bennett_per_seed)
    "inquant/mse",  # seed 0's MSEs (plotted); their InQuant / plain ratio is ratio_per_seed[0], claimed over seeds
    "inquant/true_outliers",  # the planted channels (cfg.kv_outliers) for the figure; recovery: recovered_per_seed
)

PRESETS = load_presets(Config)
