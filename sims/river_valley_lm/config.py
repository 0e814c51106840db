"""river_valley_lm: the Config and its presets (what is measured: the package docstring)."""

from __future__ import annotations

import dataclasses

from jaxwb.models.tiny_lm import LMConfig
from jaxwb.theory import validate as v

NAME = "river_valley_lm"
TITLE = "Heavy-ball momentum on a tiny LM: stable lr grows ~(1+beta), progress is along the river"

# Arrays no claim reads, declared (``jaxwb.sims.core.coverage``): the grids' axes and per-row labels, and what only
# the figures show (the loss map's divergence marks, per-step losses, parameter and RMSNorm-scale norms, seed 0's
# valley coordinates and river distance, the per-seed sharpness at init).
DISPLAY_ONLY = (
    "adam/beta1",
    "adam/lr",
    "adam/diverged",
    "sgd/lr_mult",
    "sgd/diverged",
    "edges/beta",
    "eos/beta",
    "eos/mult",
    "eos/loss_all",
    "eos/norm_scale",
    "eos/param_norm",
    "decomposition/beta",
    "decomposition/lr",
    "decomposition/step",
    "decomposition/valley",
    "decomposition/river",
    "hessian/eigenvalues",
    "hessian/lambda_max",
    "hessian/lambda_max_seeds",
)


@dataclasses.dataclass(frozen=True)
class Config:
    d_model: int = 32
    n_layers: int = 1
    n_heads: int = 2
    ctx: int = 32
    corpus_bytes: int = 400_000
    batch_size: int = 16
    steps: int = 100  # mini-batch steps per run (loss map, AdamW grid, every bisection run)
    lr_mults: tuple[float, float] = (0.5, 32.0)  # loss-map lr range in units of 2/lambda_max(init) of each seed
    n_lr: int = 13  # x sqrt(2) grid on (0.5, 32)
    betas: tuple[float, ...] = (0.0, 0.5, 0.9)
    adam_lrs: tuple[float, float] = (3e-3, 1e-1)
    n_adam: int = 12  # x 1.375 grid
    adam_beta1s: tuple[float, ...] = (0.0, 0.9)
    map_seeds: int = 5  # loss map + AdamW grid seeds (the first map_seeds of n_seeds)
    eval_windows: int = 64
    hvp_batch: int = 16  # windows in the Hessian / full-batch set
    lanczos_iters: int = 48
    top_k: int = 4
    spectrum_k: int = 20  # eigenvalues reported per seed for the valley/river gap
    decomp_beta: float = 0.9
    decomp_lr_mult: float = 1.5  # above GD's 1, below HB's 1+beta
    blowup: float = 2.0
    n_seeds: int = 5  # initialisation (and mini-batch stream) seeds for edges, EoS, spectra, decomposition
    edge_bracket: tuple[float, float] = (2.0, 64.0)  # bisection bracket in units of 2/lambda_max(init)
    edge_iters: int = 4  # bisection steps: resolution (hi/lo)^(1/2^iters) = 32^(1/16) = 1.24
    eos_beta: float = 0.5
    eos_mults: tuple[float, ...] = (2.0,)  # full-batch lr in units of 2/lambda_max(init)
    eos_steps: int = 100  # full-batch steps (edge of stability, decomposition)
    eos_every: int = 2  # steps between lambda_max measurements
    track_iters: int = 10  # warm-started Lanczos steps (HVPs) per lambda_max measurement

    def __post_init__(self):
        LMConfig(d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads, ctx=self.ctx)
        for name in (
            "batch_size",
            "steps",
            "n_lr",
            "n_adam",
            "eval_windows",
            "hvp_batch",
            "lanczos_iters",
            "top_k",
            "corpus_bytes",
            "spectrum_k",
            "edge_iters",
            "eos_steps",
            "eos_every",
            "track_iters",
        ):
            v.positive_int(name, getattr(self, name))
        v.positive("lr_mults", self.lr_mults)
        v.positive("adam_lrs", self.adam_lrs)
        v.positive("edge_bracket", self.edge_bracket)
        v.positive("eos_mults", self.eos_mults)
        v.in_interval("betas", self.betas, 0.0, 1.0)
        v.in_interval("adam_beta1s", self.adam_beta1s, 0.0, 1.0)
        v.in_interval("decomp_beta", self.decomp_beta, 0.0, 1.0)
        v.in_interval("eos_beta", self.eos_beta, 0.0, 1.0)
        v.positive("decomp_lr_mult", self.decomp_lr_mult)
        if self.top_k >= self.lanczos_iters:
            raise ValueError(f"top_k must be < lanczos_iters={self.lanczos_iters}, got {self.top_k}")
        if self.spectrum_k > self.lanczos_iters or self.spectrum_k < max(2, self.top_k):
            raise ValueError(
                f"spectrum_k must be in [max(2, top_k), lanczos_iters={self.lanczos_iters}], got {self.spectrum_k}"
            )
        if 0.0 not in self.betas:
            raise ValueError("betas must include 0.0 (the GD reference)")
        if self.n_seeds < 2:
            raise ValueError(f"n_seeds must be >= 2 (intervals over seeds), got {self.n_seeds}")
        if not 2 <= self.map_seeds <= self.n_seeds:
            raise ValueError(f"map_seeds must be in [2, n_seeds={self.n_seeds}], got {self.map_seeds}")
        if not self.edge_bracket[0] < self.edge_bracket[1]:
            raise ValueError(f"edge_bracket must be (lo, hi) with lo < hi, got {self.edge_bracket}")
        if self.eos_steps % self.eos_every:
            raise ValueError(f"eos_steps must be a multiple of eos_every={self.eos_every}, got {self.eos_steps}")

    @property
    def model(self) -> LMConfig:
        return LMConfig(d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads, ctx=self.ctx)


PRESETS = {
    "full": Config(),
    # CI-sized, same physics as the full preset on fewer grid points and shorter runs: 5 seeds, every beta of the
    # full preset (every edge claim's branch runs), 2 bisection halvings, lambda_max tracked every 2 steps by 10
    # warm-started Lanczos steps as in the full preset (20 full-batch steps: 30 cost 20% more of the whole run and
    # decide every claim alike; fewer tracker steps do not: 5 miss lambda_max by 12%); every claim is decided as
    # in the full preset (tests/sims/test_river_valley_lm.py)
    "quick": Config(
        n_layers=1,
        corpus_bytes=100_000,
        batch_size=8,
        steps=20,
        n_lr=3,
        lr_mults=(0.5, 32.0),
        betas=(0.0, 0.5, 0.9),
        n_adam=2,
        adam_lrs=(3e-3, 3e-2),
        eval_windows=8,
        hvp_batch=8,
        lanczos_iters=20,
        top_k=3,
        spectrum_k=6,
        n_seeds=5,
        map_seeds=5,
        edge_iters=2,
        eos_steps=20,
        eos_every=2,
        track_iters=10,
    ),
}
