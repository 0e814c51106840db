"""Config and presets of the tv_distance result."""

from __future__ import annotations

import dataclasses
import math

from jaxwb.theory import tv_distance as tv

NAME = "tv_distance"
TITLE = "TV distance between autoregressive models: logit O(n/eps^2), sample ~n^2 K/eps^2, noisy logits"


@dataclasses.dataclass(frozen=True)
class Config:
    K: int = 4  # vocabulary (next-token support)
    n: int = 6  # sequence length for the enumeration-checked parts (K^n sequences enumerated)
    scale: float = 1.0  # std of the random Markov logits of P
    delta_q: float = 0.6  # size of the random logit perturbation giving Q
    # errors vs queries (sample_s within slope_s, noisy_r within slope_r)
    pool_chunks: int = 4  # pool = slope_pool * pool_chunks sequences; groups of m of them give the errors
    sample_s: tuple[int, ...] = (4, 16, 64, 256)
    sigma: float = 0.3  # noisy-logit noise std (on log-probs)
    noisy_r: tuple[int, ...] = (1, 4, 16)
    # coverage at the Hoeffding m
    eps: float = 0.05
    delta: float = 0.1
    coverage_reps: int = 400  # repetitions at the Hoeffding m: coverage, unbiasedness, variance, CI coverage
    # queries to reach eps vs n
    # n >= 8: at n = 4 Var Z is still ~50% above its large-n (CLT) limit, which would bend the logit line
    slope_n: tuple[int, ...] = (8, 16, 32, 64)
    slope_delta: float = 0.5  # per-step perturbation slope_delta / sqrt(n): TV ~ 0.12 for every n
    slope_pool: int = 1 << 12
    slope_chunks: int = 2  # slope_pool * slope_chunks sequences per n
    slope_eps: float = 0.05
    slope_s: tuple[int, ...] = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
    slope_r: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128)
    # queries to reach slope_eps vs the vocabulary K at fixed n = k_n (sample access; () skips the sweep): one
    # compiled program per K, k_seeds independent model pairs per K (the family of the slopes, per-step
    # perturbation slope_delta / sqrt(k_n)), k_pool sequences each; k_s reaches s / (k_n (K - 1)) >= 100 at every K
    k_grid: tuple[int, ...] = (2, 4, 8, 16, 32, 64, 128)
    k_n: int = 8
    k_seeds: int = 8
    k_pool: int = 1 << 12
    k_s: tuple[int, ...] = tuple(1 << j for j in range(3, 18))
    k_pad: bool = False  # pad every K's models to max(k_grid) tokens (``pieces.pad_vocab``): one program, same law
    # TV vs KL as supports separate
    sep_lambda: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0)
    sep_m: int = 256
    sep_reps: int = 200
    # engines
    tf_K: int = 16
    tf_n: tuple[int, ...] = (2, 3, 4, 8, 16)
    tf_exact_n: int = 3  # largest n with an exact check (K^n enumerated)
    tf_m: int = 2048
    tf_d: int = 32
    tf_layers: int = 2

    def __post_init__(self):
        pos_int = (
            "K",
            "n",
            "pool_chunks",
            "coverage_reps",
            "slope_pool",
            "slope_chunks",
            "k_n",
            "k_seeds",
            "k_pool",
            "sep_m",
            "sep_reps",
            "tf_K",
            "tf_exact_n",
            "tf_m",
            "tf_d",
            "tf_layers",
        )
        for f in pos_int:
            val = getattr(self, f)
            if not isinstance(val, int) or val < 1:
                raise ValueError(f"Config.{f} must be a positive integer, got {val!r}")
        for f in ("scale", "delta_q", "sigma", "slope_delta"):
            val = getattr(self, f)
            if not (math.isfinite(val) and val >= 0):
                raise ValueError(f"Config.{f} must be finite and >= 0, got {val!r}")
        for f in ("eps", "delta", "slope_eps"):
            val = getattr(self, f)
            if not (math.isfinite(val) and 0 < val < 1):
                raise ValueError(f"Config.{f} must lie in (0, 1), got {val!r}")
        for f in ("sample_s", "noisy_r", "slope_n", "slope_s", "slope_r", "tf_n", "k_s"):
            val = getattr(self, f)
            if not val or not all(isinstance(x, int) and x >= 1 for x in val):
                raise ValueError(f"Config.{f} must be a non-empty tuple of positive integers, got {val!r}")
        if not set(self.sample_s) <= set(self.slope_s):
            raise ValueError(f"Config.sample_s must be a subset of slope_s, got {self.sample_s} / {self.slope_s}")
        if not set(self.noisy_r) <= set(self.slope_r):
            raise ValueError(f"Config.noisy_r must be a subset of slope_r, got {self.noisy_r} / {self.slope_r}")
        if len(self.slope_n) < 2:
            raise ValueError(f"Config.slope_n needs >= 2 lengths for a slope, got {self.slope_n}")
        if self.k_grid and (len(self.k_grid) < 2 or not all(isinstance(x, int) and x >= 2 for x in self.k_grid)):
            raise ValueError(f"Config.k_grid must be () or >= 2 vocabularies K >= 2 for a slope, got {self.k_grid!r}")
        if self.k_seeds < 2:
            raise ValueError(f"Config.k_seeds needs >= 2 seeds for an interval over seeds, got {self.k_seeds}")
        if self.tf_exact_n not in self.tf_n:
            raise ValueError(f"Config.tf_exact_n must be one of tf_n={self.tf_n}, got {self.tf_exact_n}")
        if self.K**self.n > tv.MAX_ENUMERATION or self.tf_K**self.tf_exact_n > tv.MAX_ENUMERATION:
            raise ValueError(f"Config.n / tf_exact_n too large to enumerate (K^n <= {tv.MAX_ENUMERATION})")
        if not self.sep_lambda or not all(math.isfinite(x) and x >= 0 for x in self.sep_lambda):
            raise ValueError(
                f"Config.sep_lambda must be a non-empty tuple of finite values >= 0, got {self.sep_lambda!r}"
            )


PRESETS = {
    "full": Config(),
    # quick: one noisy r and two sample s at the Hoeffding m (``coverage_reps`` unrolls a block per r and per s:
    # its compilation was the largest single cost of the quick run); r = 1 and s = 4 are where the bias terms
    # matter most, and every mutant is still caught there (figures/audit/tv_distance.json); s = 16, the full
    # preset's smallest s >= SIMEX_MIN_S, so that the quick run reaches the branch the full preset uses for the
    # stated intervals of sample access at s >= 8 ("auto" -> SIMEX on counts, its bias estimate against the
    # plugin) with the same claim (200 repetitions, Wilson interval); ~0.2 CPU-s (issue 38, Deliver 2)
    "quick": Config(
        pool_chunks=1,
        sample_s=(4, 16),
        noisy_r=(1,),
        coverage_reps=200,
        slope_n=(8, 16, 32),
        slope_pool=1 << 11,
        slope_chunks=1,
        slope_s=(4, 16, 64, 256, 1024, 4096),
        slope_r=(1, 4, 16, 64),
        sep_lambda=(0.0, 2.0, 8.0),
        sep_m=128,
        sep_reps=40,
        tf_n=(2, 4),
        tf_exact_n=2,
        tf_m=256,
        tf_d=16,
        tf_layers=1,
        # the K sweep (issue 38, Deliver 2): K = 2 and 16 padded to 16 tokens (k_pad: one compiled program), n = 4,
        # 24 seeds x 512 sequences, s = 4..8192 (s / (n (K - 1)) reaches 100 at K = 16); the same two claims as the
        # full preset, decided over 12 base keys with the same outcomes (docs/papers/tv_distance.md); ~0.5 CPU-s
        # beside the program's trace and compilation
        k_grid=(2, 16),
        k_pad=True,
        k_n=4,
        k_seeds=24,
        k_pool=1 << 9,
        k_s=tuple(1 << j for j in range(2, 14)),
    ),
}


def display_only() -> tuple[str, ...]:
    """Result paths shown in the figures and read by no claim (``jaxwb.sims.core.coverage``), for the names of
    both presets: the error-vs-queries curves and their measured query axes, the sample estimators' pool means
    (no exact reference: the sample law has no closed-form expectation), the slopes' per-(n, s/r) tables from
    which the claimed queries and slopes are computed, grids, and the NumPy reference's TV (equal to
    ``exact/tv`` and to its half-sum form: tests/sims/test_tv_distance.py)."""
    paths = ["errors/m", "reference/tv", "reference/tv_halfsum", "slopes/n", "slopes/s", "slopes/r"]
    paths += ["separation/lam", "engines/self_tv", "engines/first_token_tv", "engines/n", "engines/exact_n"]
    # the K sweep: the logit and SIMEX queries (SIMEX's bias changes sign at s ~ K: docs/papers/tv_distance.md),
    # the family's TV per K and the plugin's bias curves (queries_vs_K.png)
    paths += ["ksweep/K", "ksweep/s", "ksweep/tv", "ksweep/rb/queries", "ksweep/sample_simex/queries"]
    paths += ["ksweep/sample_plugin/bias"]
    for cfg in PRESETS.values():
        for kind in ("plain", "mixture", "rb"):
            paths += [f"errors/logit_{kind}/error", f"errors/logit_{kind}/queries"]
        for kind in tv.NOISY_KINDS:
            for s in cfg.sample_s:
                paths += [f"errors/sample_{kind}_s{s}"]
            for r in cfg.noisy_r:
                paths += [f"errors/noisy_{kind}_r{r}/error", f"errors/noisy_{kind}_r{r}/queries"]
    for nm in ("plain", "rb", "sample_plugin", "sample_simex", "noisy_plugin", "noisy_simex"):
        paths += [f"slopes/{nm}/{k}" for k in ("mean", "var")]
        if nm not in ("plain", "sample_simex"):
            paths += [f"slopes/{nm}/bias", f"slopes/{nm}/se_bias"]
        if nm not in ("plain", "rb"):
            paths += [f"slopes/{nm}/queries"]
    return tuple(sorted(set(paths)))


DISPLAY_ONLY = display_only()
