"""quantization: the claims (what is measured: the package docstring; the measurements over the results:
``measures``; the independent references: ``reference``)."""

from __future__ import annotations

import math

import numpy as np

from jaxwb.sims.core.claims import CHECK, Claim, ClaimGroups, agreement, clears, mean_ci, seed_mean, upper_bound
from jaxwb.sims.quantization.config import FAMILIES, Config
from jaxwb.sims.quantization.measures import bit_index, dense_fresh, fresh_worst, t_halfwidth
from jaxwb.sims.quantization.reference import moment_ratio, nearest_free_violations
from jaxwb.theory import dithered_quant as dq

R = "reconstruction"
HALF_STEP_ALLOWANCE = 2.0**-10  # (1 + 2^-11)(1 + 2^-20) - 1 < 2^-10: the stored float16 scale, float32 division
CLAIMS = ClaimGroups()
claims = CLAIMS.claims  # the groups below, in this order


@CLAIMS.add
def bound_claims(results: dict, cfg: Config) -> list[Claim]:
    """The worst vector's fresh MSE / bound: the paper's bound at b=8, (N/(N-1))^2 at b=3, 4, o(1) shrinking."""
    bits = np.asarray(results["bits"])
    fl = np.asarray(dq.finite_level_factor(bits))
    ratio, ci, dsel = fresh_worst(results, cfg)
    fresh = [(ratio[i], ci[i], cfg.fresh_draws(int(d))) for i, d in enumerate(dsel)]  # (ratio, CI, draws) per b
    b3, b8 = bit_index(results, 3), bit_index(results, 8)
    statement = (
        f"dithered RHT: MSE of the worst unit vector at b=8 <= (pi sqrt3/2 + o(1)) 4^-b (the paper's bound) "
        f"(worst of {len(FAMILIES) * cfg.vectors_per_family} vectors x {len(cfg.dims)} d chosen on one pass, "
        f"re-measured on {fresh[b8][2]} fresh sign draws at d={dsel[b8]}; whole 95% CI; o(1) <= 0.05 at b=8)"
    )
    out = [Claim.from_interval(statement, 1.0, fresh[b8], 0.05, "le", kind="bound")]
    for bi in np.flatnonzero(np.isin(bits, (3, 4))):
        statement = (
            f"b={bits[bi]}: worst-vector MSE/bound (fresh re-measurement, d={dsel[bi]}) <= (N/(N-1))^2, the "
            "finite-level high-resolution value (eq. 3; not a proven bound: with margin at b <= 4, at b >= 6 the first "
            "pass put the o(1) ~1% above it)"
        )
        out.append(Claim.from_interval(statement, fl[bi], fresh[bi], 0.0, "le", kind="bound", source="theory"))
    statement = (
        "measured o(1) shrinks (an ordering of two measurements): MSE/bound of the worst vector at b=3 exceeds "
        "that at b=8; the difference of the two independent fresh re-measurements, its 95% CI the root sum of "
        "squares of theirs, clears 0"
    )
    interval = (ratio[b3] - ratio[b8], math.hypot(ci[b3], ci[b8]), min(fresh[b3][2], fresh[b8][2]))
    return [*out, clears(statement, 0.0, interval)]


@CLAIMS.add
def dense_claims(results: dict, cfg: Config) -> list[Claim]:
    """One RHT against a dense Haar rotation (RHT/dense worst-vector MSE ratio): at b = 4 within 1.5% of 1; at b = 8
    (the high-resolution regime, where the e_1 claim holds eq. 1-3 to 3%) against the finite-d moment ratio."""
    n = cfg.fresh_draws(cfg.dense_d)  # sign draws, and fresh Haar rotations, of the re-measurement
    ratio, what = {}, {}
    for b in (4, 8):
        (r_m, r_h), (d_m, d_h) = dense_fresh(results, cfg, "rht", b), dense_fresh(results, cfg, "dense", b)
        ratio[b] = (r_m / d_m, r_m / d_m * math.hypot(r_h / r_m, d_h / d_m), n)
        what[b] = (
            f"one RHT vs a dense Haar rotation at d={cfg.dense_d}, b={b}: worst-vector MSE ratio RHT/dense (vector "
            f"worst under the RHT; dense is rotation-invariant; both re-measured: {n} sign draws, {n} fresh "
            "rotations; whole 95% CI within 1.5% at b=4, 8% at b=8)"
        )
    return [
        # 1.5%: the whole CI is +-0.0035 at 2048 draws; the flat vector's finite-d gap is +0.6% (8192 draws)
        Claim.from_interval(f"{what[4]} of 1", 1.0, ratio[4], 0.015, kind="check"),
        Claim.from_interval(
            f"{what[8]} of the high-resolution moment ratio E exp(t^2/3) Rademacher / Haar for that vector "
            "(quadrature / 1F1; the finite-d gap the paper's 'asymptotically' leaves: RHT coordinates of a "
            "flat vector have heavier tails than a sphere's)",
            moment_ratio(np.asarray(results["dense_fresh"]["x"])[bit_index(results, 8)], cfg.dense_d),
            ratio[8],
            0.08,
            **CHECK,
            wide_reason="heavy-tailed draws at b = 8: about one draw in 10^4 costs 15-50x the mean MSE and widens "
            "the CI from ~0.014 to 0.05 (quick seed 7 of 20: |ratio - prediction| + CI = 0.064); 8% covers those "
            "seeds",
        ),
    ]


@CLAIMS.add
def e1_claims(results: dict, cfg: Config) -> list[Claim]:
    """The MSE of e_1 at b=8 against its closed form."""
    b8, dmax = bit_index(results, 8), str(max(cfg.dims))
    # e1: every |t| = 1, so E exp(t^2/3) = e^(1/3) exactly -> prediction finite-level * (pi/2) e^(1/3) 4^-b
    e1 = int(np.nonzero(np.asarray(results["families"]) == FAMILIES.index("e1"))[0][0])
    pred = float(dq.high_resolution_mse(8, np.exp(1.0 / 3.0)))
    e1_m = float(np.asarray(results["rht"][dmax]["mse"])[e1, b8])
    e1_ci = float(t_halfwidth(np.asarray(results["rht"][dmax]["se"])[e1, b8], cfg.n_signs))
    statement = (
        f"e_1 at b=8, d={dmax}: MSE = (N/(N-1))^2 (pi/2) e^(1/3) 4^-b (eq. 1-3): the closed form inside the 95% CI "
        f"over {cfg.n_signs} sign draws, the CI narrower than 3% of it"
    )
    return [Claim.from_interval(statement, pred, (e1_m, e1_ci, cfg.n_signs), 0.03 * pred, "ci", **CHECK)]


@CLAIMS.add
def format_claims(results: dict, cfg: Config) -> list[Claim]:
    """Each FP4 kernel's x_hat against the independent decoder (``theory.quantization.fp4_formats``: the formats'
    rules with ml_dtypes' E2M1/E4M3 casts and an E3M3 table), element by element on the three datasets."""
    out = []
    for label, chk in results["format_check"].items():
        if label == "RHT b=4 gaussian":
            out.append(rht_gaussian_claim(results, cfg))
            continue
        statement = (
            f"{label}: the kernel's round trip equals the format's rules (independent NumPy/ml_dtypes decoder: "
            "E2M1 RNE saturating at 6, E4M3/E8M0/E3M3 block scales, RaZeR's strictly-closer special value and "
            f"least-error candidate) on all {int(np.asarray(chk['elements']))} elements of the 3 datasets: number of "
            "differing values = 0"
        )
        out.append(agreement(statement, 0.0, float(np.asarray(chk["mismatch"])), 0.0, "abs", source="paper"))
    return out


def rht_gaussian_claim(results: dict, cfg: Config) -> Claim:
    """The RHT kernel on Gaussian rows vs the dense Haar rotation: for Gaussian x, H D x / ||x|| is uniform on the
    sphere (H D orthogonal, x isotropic), so the relative MSE has exactly the law of a Haar-rotated unit vector's."""
    d_m, d_h = dense_fresh(results, cfg, "dense", 4)
    mean, half, n = mean_ci(np.asarray(results["format_check"]["RHT b=4 gaussian"], np.float64))
    interval = (mean - d_m, math.hypot(half, d_h), min(n, cfg.fresh_draws(cfg.dense_d)))
    statement = (
        f"RHT kernel (rht_quantize, b=4, turbo) on {n} Gaussian vectors of d={cfg.rht_block}: mean relative MSE = "
        f"the dense Haar rotation's MSE of a unit vector at d={cfg.dense_d}, b=4 (H D x / ||x|| is uniform on the "
        "sphere for Gaussian x: the same law); the difference inside its 95% CI (root sum of squares of both), the CI "
        "narrower than 10% of the dense MSE"
    )
    return Claim.from_interval(statement, 0.0, interval, 0.1 * d_m, "ci", **CHECK)


@CLAIMS.add
def inquant_claims(results: dict, cfg: Config) -> list[Claim]:
    """InQuant on heavy-tailed KV: MSE vs plain 4-bit, its serialized bytes (decoded within half a step, 4.0x fewer
    than 16-bit), its metadata's byte count, outlier detection, donor rule, 8-bit outliers vs Bennett's Delta^2/12."""
    iq, seeds = results["inquant"], cfg.kv_seeds
    t, c, k = cfg.kv_tokens, cfg.kv_channels, len(cfg.kv_outliers)
    per_seed = {key.removesuffix("_per_seed"): np.asarray(x, np.float64) for key, x in iq.items() if "_per_seed" in key}
    says = {  # the statements, by claim
        "ratio": f"InQuant MSE / plain 4-bit MSE on heavy-tailed KV well below 1: <= 0.25 (whole 95% CI over {seeds} "
        "KV matrices; the paper: accuracy close to mixed-precision baselines at exactly 4.0x)",
        "packed": "InQuant's packed bytes hold the data: the payload serialized and read back as the format lays it "
        "out (uint8, C/2 bytes per token, two 4-bit slots per byte), unpacked with the stored scales and descriptor: "
        f"largest |x_hat - x| / (Delta/2) over {seeds} KV matrices, every token and every non-donor channel <= 1 + "
        "2^-10 (Delta from x in float64: max|x|/7 over the token's ordinary channels, /127 over its outliers; round "
        "to nearest on the stored float16 scale's grid: proven, the allowance covers the scale's float16 rounding "
        "and float32 division)",
        "smaller": "InQuant payload 4.0x smaller than 16-bit (the paper): bytes of the 16-bit input / bytes of the "
        f"packed payload as serialized (the bytes decoded within half a step above), smallest over {seeds} KV matrices",
        "total": f"InQuant total ratio = the layout's byte count 2TC / (TC/2 + 4T + 6k) (T={t}, C={c}, k={k}: C/2 "
        "payload bytes and two float16 scales per token, 6 descriptor bytes per outlier), counted from the "
        "configuration; to float32 resolution (the ratio is stored as float32)",
        "recovered": f"InQuant's sampled saliency ({cfg.kv_samples} tokens) selects every planted outlier channel "
        f"(x{cfg.kv_outlier_scale:g}): fraction recovered = 1 on each of {seeds} KV matrices",
        "donors": "InQuant donors: each outlier's donor is its nearest free channel (stride 1, then 2, ... past "
        "outliers and earlier donors; recomputed from the returned outlier order): number of violations = 0",
        "bennett": "InQuant's 8-bit outlier channels: squared error / Bennett's uniform-rounding Delta^2/12 (Delta = "
        f"each token's stored s8; the token's largest entry on the grid; per token, then the mean over the {t} tokens) "
        f"= 1: inside the 95% CI over {seeds} KV matrices, the CI narrower than 0.08 (one matrix's value has sd 0.026 "
        "at 256 tokens, 0.012 at 2048)",
    }
    smallest = float(np.min(per_seed["input_bytes"] / per_seed["payload_bytes"]))
    layout = 2.0 * t * c / (t * c / 2 + 2 * 2 * t + 6 * k)
    violations = float(nearest_free_violations(iq["outliers"], iq["donors"], c))
    return [
        upper_bound(says["ratio"], 0.25, per_seed["ratio"], over_seeds=True, kind="paper", source=R),
        upper_bound(says["packed"], 1.0, per_seed["half_step"], tolerance=HALF_STEP_ALLOWANCE, source=R),
        agreement(says["smaller"], 4.0, smallest, 0.0, "abs", kind="paper", source="paper"),
        agreement(says["total"], layout, float(np.asarray(iq["total_ratio"])), 2.0**-23, source=R),
        seed_mean(says["recovered"], 1.0, per_seed["recovered"], 0.0, "abs", source=R),
        agreement(says["donors"], 0.0, violations, 0.0, "abs", source=R),
        seed_mean(says["bennett"], 1.0, per_seed["outlier_bennett"], 0.08),
    ]
