"""Teacher-student: the measurements over the stored results that the claims and figures share (fit windows and
slopes, the learned sets recounted against the threshold rule, the students' errors relative to eps_BO)."""

from __future__ import annotations

import numpy as np

from jaxwb.sims.teacher_student.config import Config
from jaxwb.sims.teacher_student.reference import amplitudes_np, asymptotic_eps, learned_by_threshold


def windows(results: dict, cfg: Config):
    """Per beta: boolean masks (feature-learning window, refinement window) over the alpha grid."""
    kc, alpha = (np.asarray(results["scaling"][f]) for f in ("k_c", "alpha"))
    fl = (kc >= cfg.k_lo) & (kc <= cfg.k // cfg.k_hi_div)
    ref = np.zeros_like(fl)
    for b in range(kc.shape[0]):
        full = np.nonzero(kc[b] == cfg.k)[0]
        if full.size:
            ref[b] = alpha[b] >= 10 * alpha[b, full[0]]
    return fl, ref


def fit_slope(alpha, eps, mask) -> float:
    """Least-squares slope of log eps vs log alpha over ``mask`` (NaN when fewer than 3 points)."""
    if np.sum(mask) < 3:
        return float("nan")
    return float(np.polyfit(np.log(alpha[mask]), np.log(eps[mask]), 1)[0])


def threshold_counts(results: dict, cfg: Config) -> dict:
    """The solver's learned sets against the information-theoretic threshold computed independently (C_IT_REF):
    ``kc_scaling`` max over betas and alphas of |k_c - #{i: alpha a2_i / Delta_eff >= c_IT}|; ``stair_m`` the
    number of (alpha, i <= F) where m_i > 1/2 disagrees with that rule; ``stair_detected`` max over the first F
    features of |detected jump index - first grid index where the rule learns i|; ``kc_reference`` as
    ``kc_scaling`` on the reference grid (k = ref_k, Delta = st_delta)."""
    sc = results["scaling"]
    kc = np.asarray(sc["k_c"])
    out = {"kc_scaling": 0.0}
    for b, beta in enumerate(cfg.betas):
        alpha_b, de_b = np.asarray(sc["alpha"])[b], np.asarray(sc["delta_eff"])[b]
        rule = learned_by_threshold(alpha_b, amplitudes_np(cfg.k, beta), de_b)
        out["kc_scaling"] = max(out["kc_scaling"], float(np.max(np.abs(kc[b] - rule.sum(1)))))
    st, f = results["staircase"], cfg.stair_features
    rule = learned_by_threshold(st["alpha"], amplitudes_np(cfg.k, 1.0)[:f], st["delta_eff"])
    out["stair_m"] = float(np.sum((np.asarray(st["m"]) > 0.5) != rule))
    first = np.where(rule.any(0), np.argmax(rule, axis=0), rule.shape[0])  # per feature (A when never learned)
    out["stair_detected"] = float(np.max(np.abs(np.asarray(st["detected"]) - first)))
    rf = results["reference"]
    d_ref = cfg.st_delta + np.asarray(rf["eps_ref"], np.float64)  # the reference's own Delta_eff
    rule = learned_by_threshold(rf["alpha"], amplitudes_np(cfg.ref_k, cfg.st_beta), d_ref)
    out["kc_reference"] = float(np.max(np.abs(np.asarray(rf["k_c"]) - rule.sum(1))))
    return out


def measurements(results: dict, cfg: Config) -> dict:
    """Per beta: the eps_BO slopes in the feature-learning and refinement windows and eps alpha / (k_c Delta_eff)."""
    sc = results["scaling"]
    alpha, eps, kc, de = (np.asarray(sc[f], np.float64) for f in ("alpha", "eps", "k_c", "delta_eff"))
    fl, ref = windows(results, cfg)
    out: dict[str, list] = {"slope_fl": [], "slope_asym": [], "slope_ref": [], "ratio_fl": [], "ratio_ref": []}
    for b, beta in enumerate(cfg.betas):
        out["slope_fl"].append(fit_slope(alpha[b], eps[b], fl[b]))
        out["slope_asym"].append(fit_slope(alpha[b], asymptotic_eps(alpha[b], beta, cfg.k, cfg.delta), fl[b]))
        out["slope_ref"].append(fit_slope(alpha[b], eps[b], ref[b]))
        ratio = eps[b] * alpha[b] / (np.maximum(kc[b], 1) * de[b])
        out["ratio_fl"].append(float(np.median(ratio[fl[b]])) if fl[b].any() else float("nan"))
        # refinement (k_c = k): eps alpha / (k Delta_eff), the worst deviation from 1 over the window
        rr = eps[b] * alpha[b] / (cfg.k * de[b])
        out["ratio_ref"].append(float(rr[ref[b]][np.argmax(np.abs(rr[ref[b]] - 1))]) if ref[b].any() else np.nan)
    return out


def student_errors(results: dict) -> tuple[np.ndarray, np.ndarray]:
    """Test error / eps_BO of the random-init and the warm-start students, each (d, seeds)."""
    s = results["student"]
    eps_s = np.asarray(s["eps_bo"])[:, None]
    return np.asarray(s["random"]) / eps_s, np.asarray(s["warm"]) / eps_s
