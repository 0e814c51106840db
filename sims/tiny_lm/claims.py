"""Claims of the tiny-LM quantization study, decided on intervals over training seeds."""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxwb.sims.core.claims import Claim, bootstrap_ci, mean_ci
from jaxwb.sims.tiny_lm.config import (
    ENGINES,
    FORMATS,
    PAPER_RAZER_REDUCTION,
    PAPER_RAZER_REDUCTION_WA,
    RESOLUTION,
    Config,
)
from jaxwb.theory import dithered_quant as dq

PAPER_TOLERANCE = 0.10  # absolute, in fraction of NVFP4's loss: the whole interval within 10 points of the paper

# "strictly larger weight error": log MSE ratio floor, far above float32 rounding and far below the formats'
# differences (0.4-0.5); two identical quantizers (a log ratio of exactly 0) fail it
LOG_MSE_RESOLUTION = 1e-3

# Known disagreements (``expected="fail"``; ``docs/papers/tiny_lm.md``): what the full preset measures and why.
WHY_PAPER = {
    "weight": (
        "measured: RaZeR removes 47% +- 10% of NVFP4's perplexity loss on these byte-level models (10 models, full "
        "preset), more than the paper's 29.4% on LLMs; the models (0.1-0.4M parameters, near-Gaussian weights, "
        "800 steps on 1.9 MB) are not the paper's, so the fraction is not expected to transfer"
    ),
    "wa": (
        "measured: 39% +- 5% (10 models, full preset) against the paper's 32.3%: the interval reaches above the "
        "paper's +10 points; byte-level models with per-token activation scales are not the paper's LLMs"
    ),
}
WHY_MXFP4 = (
    "undecided, not contradicted: MXFP4 - NVFP4 = 0.032 +- 0.033 perplexity over 10 models (full preset): MXFP4's "
    "coarser power-of-two scales cost more weight error in every layer (layer_errors.png), but the perplexity "
    "difference is within the model-to-model noise at this size"
)


def _a(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def claims(results: dict, cfg: Config) -> list[Claim]:
    return [
        *_per_size_claims(results, cfg),
        *_pooled_ordering_claims(results, cfg),
        *_paper_claims(results, cfg),
        *_layer_error_claims(results),
        _rht_error_claim(results),
        *_kernel_claims(results),
        *_pinsker_claims(results, cfg),
    ]


def _per_size_claims(results: dict, cfg: Config) -> list[Claim]:
    """Per model size: the trained model beats the unigram baseline, every 4-bit format costs perplexity, RaZeR
    beats NVFP4 weight-only."""
    fp = _a(results["fp_ppl"])  # [sizes, seeds]
    p = {f: _a(results["ppl"][f]) for f in FORMATS}
    n = fp.shape[1]
    out = []
    for s, size in enumerate(cfg.size_labels):
        unigram = np.full(n, float(results["unigram_loss"]))
        out.append(
            Claim.ordering(
                f"{size}: the trained model beats the unigram baseline (unigram - model loss, nats/byte; {n} seeds)",
                unigram,
                _a(results["fp_loss"])[s],
                source="theory",
            )
        )
        out.append(
            Claim.ordering(
                f"{size}: every 4-bit weight format costs perplexity: min over formats of "
                f"ppl_q - ppl_fp > {RESOLUTION:g}",
                np.min(np.stack([p[f][s] for f in FORMATS]), axis=0),
                fp[s],
                source="theory",
                at_least=RESOLUTION,
            )
        )
        out.append(
            Claim.ordering(
                f"{size}: RaZeR (weight variant) perplexity < NVFP4's, weight-only (NVFP4 - RaZeR > {RESOLUTION:g})",
                p["nvfp4"][s],
                p["razer"][s],
                source="theory",
                at_least=RESOLUTION,
            )
        )
    return out


def _pooled(a: np.ndarray) -> np.ndarray:
    """Every model of every size: [sizes, seeds] -> [sizes * seeds]."""
    return a.reshape(-1)


def _pooled_ordering_claims(results: dict, cfg: Config) -> list[Claim]:
    """The orderings decided over every model of every size: W4A4 RaZeR < NVFP4, W4A4 costs more than W4A16,
    RaZeR < NVFP4 with outlier channels, MXFP4 >= NVFP4."""
    p = {f: _a(results["ppl"][f]) for f in FORMATS}
    wa = {f: _a(v) for f, v in results["ppl_wa"].items()}
    ol = {f: _a(v) for f, v in results["ppl_outlier"].items()}
    return [
        Claim.ordering(
            f"W4A4: RaZeR (weight + activation variants) perplexity < NVFP4's, all sizes "
            f"(NVFP4 - RaZeR > {RESOLUTION:g})",
            _pooled(wa["nvfp4"]),
            _pooled(wa["razer"]),
            source="theory",
            at_least=RESOLUTION,
        ),
        Claim.ordering(
            f"W4A4 costs more than W4A16 (NVFP4): ppl_W4A4 - ppl_W4A16 > {RESOLUTION:g}, all sizes",
            _pooled(wa["nvfp4"]),
            _pooled(p["nvfp4"]),
            source="theory",
            at_least=RESOLUTION,
        ),
        Claim.ordering(
            f"outlier channels (x{cfg.outlier_scale:g} on {cfg.outlier_channels} input "
            f"channels): RaZeR perplexity < NVFP4's (NVFP4 - RaZeR > {RESOLUTION:g}), "
            "all sizes",
            _pooled(ol["nvfp4"]),
            _pooled(ol["razer"]),
            source="theory",
            at_least=RESOLUTION,
        ),
        dataclasses.replace(
            Claim.ordering(
                "MXFP4 (power-of-two scales, blocks of 32) perplexity >= NVFP4's (MXFP4 - NVFP4), all sizes",
                _pooled(p["mxfp4"]),
                _pooled(p["nvfp4"]),
                source="theory",
            ),
            expected="fail",
            reason=WHY_MXFP4,
        ),
    ]


def _paper_claims(results: dict, cfg: Config) -> list[Claim]:
    """The fraction of NVFP4's perplexity loss RaZeR removes, weight-only and W4A4, beside the paper's."""
    red = results["reduction"]
    out = []
    for key, paper, setting in (
        ("weight", PAPER_RAZER_REDUCTION, "weight-only"),
        ("wa", PAPER_RAZER_REDUCTION_WA, "weight + activation"),
    ):
        r = _pooled(_a(red[key]))
        est, half, k = bootstrap_ci(r)
        out.append(
            Claim(
                f"RaZeR removes {100 * paper:.1f}% of NVFP4's perplexity loss ({setting}; paper: average "
                f"over its LLMs; here byte-level models of {'/'.join(map(str, cfg.d_models))}"
                f" width, {k} models, mean with 95% bootstrap interval, within {100 * PAPER_TOLERANCE:g} "
                "points)",
                paper,
                est,
                PAPER_TOLERANCE,
                "abs",
                kind="paper",
                ci=half,
                n_seeds=k,
                expected="fail",
                reason=WHY_PAPER[key],
            )
        )
    return out


def _layer_error_claims(results: dict) -> list[Claim]:
    """The formats' weight error itself (a bit-level property, not through perplexity): per block layer of the first
    model, relative MSE of RaZeR < NVFP4 (RaZeR's extra special values, same E2M1 grid otherwise) and NVFP4 <
    MXFP4 (power-of-two scales over 32 vs E4M3 scales over 16); log ratio, t interval over the layers."""
    mse = {f: _a(results["layer_rel_mse"][f]) for f in ("razer", "nvfp4", "mxfp4")}
    n = mse["nvfp4"].size
    return [
        Claim.ordering(
            f"weight error: relative MSE of {hi} > {lo}'s per block layer (log ratio over the first model's {n} "
            f"layers > {LOG_MSE_RESOLUTION:g})",
            np.log(mse[hi]),
            np.log(mse[lo]),
            source="theory",
            at_least=LOG_MSE_RESOLUTION,
        )
        for lo, hi in (("razer", "nvfp4"), ("nvfp4", "mxfp4"))
    ]


def _rht_error_claim(results: dict) -> Claim:
    """RHT-4's weight error beside the dithered-RHT theory (``jaxwb.theory.dithered_quant``, eq. 3-4): per group of
    ``rht_group`` weights, E||x - x_hat||^2 <= (N/(N-1))^2 (pi sqrt(3)/2) 4^-b ||x||^2 for every x (the Gaussian
    moment E exp(t^2/3) = sqrt 3 is the largest); the "mse" scale (the study's) only lowers it. A layer's relative
    MSE averages this over its groups and the dither; t interval over the first model's block layers."""
    bits = 4
    bound = float(dq.finite_level_factor(bits) * dq.mse_bound(bits))
    m, h, n = mean_ci(_a(results["layer_rel_mse"]["rht4"]))
    return Claim(
        f"weight error: RHT-4 relative MSE per block layer <= (N/(N-1))^2 (pi sqrt 3/2) 4^-b = {bound:.4g} "
        f"(dithered RHT, b = {bits}; mean over the first model's {n} layers, t interval)",
        bound,
        m,
        0.0,
        "le",
        source="theory",
        kind="bound",
        ci=h,
        n_seeds=n,
    )


# float32 (the kernel: Chebyshev erfc, float32 sums) against float64 (SciPy): relative differences of a layer's
# MSE measured at <= 1.5e-7 (quick preset, seed 0); a wrong level, cell or scale moves it by > 1e-3
RHT_REFERENCE_RTOL = 1e-5


def _tensors(fmt: str) -> str:
    return "first attention input, per token" if "activations" in fmt else "block weights"


def _what(label: str) -> str:
    return "activations (first attention input, per token)" if "activations" in label else "layers' weights"


def _no_mismatch(statement: str, mismatches) -> Claim:
    """A deterministic equality of two implementations: the number of differing elements against 0."""
    return Claim(statement, 0.0, float(mismatches), 0.0, "abs", source="theory", kind="check")


def _kernel_claims(results: dict) -> list[Claim]:
    """The study's quantizers are the formats they name, on the first model's own tensors (``reference``): the
    fast paths' codes and scale bytes equal the pure-jnp specification's, bit for bit (their docstrings'
    promise), the values the quantized layers compute equal an independent decoder's round trip, and RHT-4's
    per-layer error equals a float64 NumPy implementation's given the same randomness."""
    kc = results["kernel_check"]
    out = [
        _no_mismatch(
            f"{fmt}: the fast quantizer's codes and scale bytes = the specification's "
            f"(pallas_kernels.quant.reference; the first model's {_tensors(fmt)}): mismatches",
            m,
        )
        for fmt, m in kc["mismatches"].items()
    ]
    out += [
        _no_mismatch(
            f"{label}: the values the study's quantized {_what(label)} compute = the independent round trip "
            "(theory.quantization.fp4_formats: the formats' published rules in NumPy/ml_dtypes): mismatches",
            m,
        )
        for label, m in kc["decoded_mismatches"].items()
    ]
    fast, ref = _a(results["layer_rel_mse"]["rht4"]), _a(kc["rht4_rel_mse_np"])
    out.append(
        Claim(
            "RHT-4 relative weight MSE per block layer = an independent float64 NumPy/SciPy implementation's (same "
            f"signs and dithers): largest relative difference over the first model's {fast.size} layers "
            "(float32 vs float64 rounding)",
            0.0,
            float(np.max(np.abs(fast / ref - 1.0))),
            RHT_REFERENCE_RTOL,
            "abs",
            source="theory",
            kind="check",
            wide_reason=(
                "a float32 allowance for a layer's MSE, a sum over its 4e3-2e4 weights (~sqrt(n) ulp: 4e-6 to "
                "8e-6); the observed difference depends on the installed jax's rounding (1.8e-7: full preset, jax "
                "0.12.0; 8.8e-8: quick, 0.12.1) while a wrong level, cell or scale moves it by > 1e-3"
            ),
        )
    )
    return out


def _pinsker_claims(results: dict, cfg: Config) -> list[Claim]:
    """Pinsker between the float32 engine and each other engine: no evidence of a violation."""
    e = results["engines"]
    out = []
    for name in ENGINES[1:]:
        tv, kl = float(e[name]["tv"]), float(e[name]["kl"])
        # Pinsker holds for the exact TV and KL; both are estimates from m sequences. The claim asks for no
        # evidence of a violation: TV's lower 95% end <= the bound at KL's upper 95% end.
        kl_hi = max(kl + 1.96 * float(e[name]["kl_se"]), 0.0)
        out.append(
            Claim(
                f"Pinsker TV <= sqrt(KL/2), float32 vs {name} (no violation: TV - 1.96se vs "
                "sqrt((KL + 1.96se)/2); first model, seed 0)",
                float(np.sqrt(kl_hi / 2)),
                tv - 1.96 * float(e[name]["tv_se"]),
                0.0,
                "le",
                source="theory",
                kind="bound",
            )
        )
    return out
