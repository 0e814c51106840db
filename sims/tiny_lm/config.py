"""NAME, TITLE, the Config and presets of the tiny-LM quantization study (``jaxwb.sims.tiny_lm``), and its
constants (formats, engines, the paper's numbers)."""

from __future__ import annotations

import dataclasses

from jaxwb.models import train as tr
from jaxwb.models.tiny_lm import LMConfig
from jaxwb.sims.core.presets import load_presets
from jaxwb.theory import validate as v

NAME = "tiny_lm"
TITLE = "Tiny LM with 4-bit weights (and activations): RaZeR vs NVFP4 vs MXFP4 vs dithered RHT, seeds x sizes"

FORMATS = ("nvfp4", "razer", "mxfp4", "rht4")  # weight-only formats
WA_FORMATS = ("nvfp4", "razer")  # weight + activation settings
COLORS = {"nvfp4": "tab:blue", "razer": "tab:green", "mxfp4": "tab:orange", "rht4": "tab:purple"}
PROMPT = "def "  # the engines generate continuations of this prompt
ENGINES = ("float32", "bfloat16", "nvfp4 weights", "razer weights")
PAPER_RAZER_REDUCTION = 0.294  # RaZeR paper: average perplexity-loss reduction over NVFP4, weight-only
PAPER_RAZER_REDUCTION_WA = 0.323  # RaZeR paper: the same, weight + activation quantization
# "strictly worse/better" floor in perplexity units: far above float32 rounding of a mean over >= 4k tokens
# (~1e-6) and below every effect the study reports; an exactly equal pair (a degenerate quantizer) fails it.
RESOLUTION = 1e-4

# Arrays no claim reads, declared (``jaxwb.sims.core.coverage``): the formats' bits per weight (constants), the
# sizes, the float32 engine against itself (TV = 0 exactly: a unit test), the layer study's per-layer perplexities
# (figure and table), RHT-4's perplexity (perplexity.png; its weights are claimed against the float64 reference
# group by group, its error against the dithered-RHT bound), the outlier-channel fraction removed (shown beside the
# others; no published value for this synthetic transform), the generated samples and the training curves.
DISPLAY_ONLY = (
    "bits",
    "d_models",
    "engines/float32",
    "fp_ppl",  # the float models' perplexity, exp(fp_loss): shown; the claims decide on fp_loss
    "layer_names",
    "layer_ppl",
    "ppl/rht4",
    "reduction/outlier",
    "sample",
    "sample_nvfp4",
    "train_losses",
)


@dataclasses.dataclass(frozen=True)
class Config:
    d_models: tuple[int, ...] = (64, 128)  # model sizes (widths); the first is the engines/layer-study model
    lrs: tuple[float, ...] = (3e-3, 2e-3)  # AdamW peak learning rate per size
    n_layers: int = 2
    n_heads: int = 4
    ctx: int = 64
    steps: int = 800
    batch_size: int = 16
    seeds: int = 5  # training seeds per size (weights, batches)
    corpus_bytes: int | None = None
    eval_windows: int = 256
    # the first this many evaluation windows: every variant's loss there is recomputed by the float64 NumPy reference
    # (``reference.variant_loss_np``; W4A4 round-trips each token in Python: ~0.2 s per window and format)
    check_windows: int = 8
    rht_group: int = 64
    outlier_channels: int = 4  # input channels per normed layer input made into outliers
    outlier_scale: float = 8.0  # their weight columns x this, the RMSNorm gain / this (float model unchanged)
    # independent draws of the outlier channels per model, draw j on every draws-th chunk of the evaluation windows
    # (the same cost as one draw). Power: the draw, not the model, sets the spread of NVFP4 - RaZeR with outliers
    # (sd 0.075 between draws of one model, 0.017 between models, 0.038 from a quarter of the windows; quick, 10
    # keys): with one draw on all windows the 5-model interval cleared 0 by 1.5-5 half-widths, with 4 draws on
    # quarters the per-model spread halves
    outlier_draws: int = 4
    sample_tokens: int = 120
    tv_n: int = 24  # sequence length for the engine TV/KL
    tv_m: int = 256  # sequences per estimate
    # the bound the data support on MXFP4 - NVFP4 perplexity (pooled over every model: two one-sided claims, each
    # whole interval inside). The ordering "MXFP4 >= NVFP4" is not resolved by 10 models (+0.032 +- 0.032 over the
    # full preset's 10; 5 models at d=64: +0.015 +- 0.065): its per-model spread (0.04) would need ~60 models to
    # resolve a 0.015 difference at 95%. These bounds leave >= 2 half-widths to each end (full: [-0.001, 0.064]).
    mxfp4_band: tuple[float, float] = (-0.05, 0.1)

    def __post_init__(self):
        if len(self.d_models) < 1 or len(self.lrs) != len(self.d_models):
            raise ValueError(
                f"lrs must give one learning rate per entry of d_models, got d_models={self.d_models}, lrs={self.lrs}"
            )
        for d in self.d_models:
            if d % 32:
                raise ValueError(f"d_models entries must be multiples of 32 (MXFP4 blocks), got {d}")
        for lr in self.lrs:
            v.positive("lrs", lr)
        _ = self.models  # validates the model shapes
        for name in (
            "steps",
            "batch_size",
            "seeds",
            "eval_windows",
            "rht_group",
            "outlier_channels",
            "sample_tokens",
            "tv_n",
            "tv_m",
            "check_windows",
            "outlier_draws",
        ):
            v.positive_int(name, getattr(self, name))
        if self.eval_windows % self.check_windows:
            raise ValueError(
                f"check_windows must divide eval_windows={self.eval_windows} (chunks), got {self.check_windows}"
            )
        if (self.eval_windows // self.check_windows) % self.outlier_draws:
            raise ValueError(
                f"outlier_draws must divide the {self.eval_windows // self.check_windows} chunks of check_windows "
                f"evaluation windows, got {self.outlier_draws}"
            )
        lo, hi = self.mxfp4_band
        if not lo < 0 < hi:
            raise ValueError(f"mxfp4_band must be (lo, hi) with lo < 0 < hi, got {self.mxfp4_band}")
        if self.seeds < 2:
            raise ValueError(f"seeds must be >= 2 (intervals over seeds), got {self.seeds}")
        v.positive("outlier_scale", self.outlier_scale)
        if self.outlier_channels > min(self.d_models):
            raise ValueError(
                f"outlier_channels must be <= the smallest d_model {min(self.d_models)}, got {self.outlier_channels}"
            )
        if self.tv_n + len(PROMPT) - 1 > self.ctx:
            raise ValueError(f"tv_n must be <= ctx - {len(PROMPT) - 1} = {self.ctx - len(PROMPT) + 1}, got {self.tv_n}")
        if self.rht_group & (self.rht_group - 1):
            raise ValueError(f"rht_group must be a power of two, got {self.rht_group}")

    @property
    def models(self) -> tuple[LMConfig, ...]:
        return tuple(
            LMConfig(d_model=d, n_layers=self.n_layers, n_heads=self.n_heads, ctx=self.ctx) for d in self.d_models
        )

    @property
    def model(self) -> LMConfig:
        """The first (engines / layer-study) model."""
        return self.models[0]

    def train_config(self, size: int = 0, seed: int = 0) -> tr.TrainConfig:
        return tr.TrainConfig(
            steps=self.steps,
            batch_size=self.batch_size,
            lr=self.lrs[size],
            warmup=max(1, min(50, self.steps // 10)),
            corpus_bytes=self.corpus_bytes,
            seed=seed,
        )

    @property
    def train(self) -> tr.TrainConfig:
        """Training of the first model, seed 0."""
        return self.train_config(0, 0)

    @property
    def size_labels(self) -> list[str]:
        """``d=<width>`` per model size, as the claims and tables name them."""
        return [f"d={d}" for d in self.d_models]


PRESETS = load_presets(Config)
