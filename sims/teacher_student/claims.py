"""Teacher-student: the claims (the measurements they compare: ``measures``; the independent references:
``reference``)."""

from __future__ import annotations

import numpy as np

from jaxwb.sims.core.claims import Claim, ClaimGroups, agreement, array_agreement, lower_bound, seed_mean
from jaxwb.sims.teacher_student.config import SMALL_GAP, Config
from jaxwb.sims.teacher_student.measures import measurements, student_errors, threshold_counts
from jaxwb.sims.teacher_student.reference import C_IT_REF, refinement_ratio_bound
from jaxwb.theory import teacher_student as ts

CLAIMS = ClaimGroups()
R = "reconstruction"
F32 = "float32 solver vs float64 reference: 1e-5 is ~100 float32 ulps"


def check(statement: str, predicted, measured, tolerance: float, comparison: str = "abs", **options) -> Claim:
    """:func:`agreement` of a reconstruction with its prediction, by default within an absolute ``tolerance``."""
    return agreement(statement, predicted, measured, tolerance, comparison, source=R, **options)


@CLAIMS.add
def scaling_claims(results: dict, cfg: Config) -> list[Claim]:
    """Per beta: the eps_BO slopes while k_c < k and in refinement, eps_BO = Theta(k_c d/n)."""
    m = measurements(results, cfg)
    out = []
    window = f"{cfg.k_lo} <= k_c <= k/{cfg.k_hi_div}"
    for b, beta in enumerate(cfg.betas):
        exponent = 0.5 / beta - 1.0
        text = (
            f"eps_BO slope while k_c < k ({window}), beta={beta:g}: solver vs the continuum finite-k formula "
            f"(asymptotic 1/(2beta)-1 = {exponent:.3f})"
        )
        out.append(check(text, m["slope_asym"][b], m["slope_fl"][b], 0.03))
        if beta >= 1.0:
            text = f"eps_BO ~ n^(1/(2beta)-1) while k_c < k: fitted slope vs the asymptotic exponent, beta={beta:g}"
            out.append(check(text, exponent, m["slope_fl"][b], 0.05))
            text = (
                f"eps_BO = Theta(k_c d/n): eps alpha/(k_c Delta_eff) -> 1 + c_IT/(2beta-1) (median, feature "
                f"learning), beta={beta:g}; c_IT = {C_IT_REF:.6f} from scipy on the potential's definition, not the "
                "solver's constant"
            )
            out.append(check(text, 1.0 + C_IT_REF / (2 * beta - 1), m["ratio_fl"][b], 0.05, "rel"))
        text = (
            "refinement (k_c = k): eps_BO = k Delta_eff/alpha to leading order: eps alpha/(k Delta_eff), worst over "
            "alpha >= 10x the all-learned point, within max_(c >= 10 c_IT) |c (1 - m+(c)^3) - 1| of 1 (every c_i >= "
            f"10 c_IT there), beta={beta:g}"
        )
        out.append(check(text, 1.0, m["ratio_ref"][b], refinement_ratio_bound(10.0 * C_IT_REF)))
    return out


@CLAIMS.add
def threshold_claims(results: dict, cfg: Config) -> list[Claim]:
    """The learned sets of the solver against c_IT computed independently (scipy on the potential's definition):
    feature i is learned iff alpha a2_i / Delta_eff >= c_IT. A c_IT off by a few percent in the solver moves k_c by
    whole features here (the slopes cannot see it: k_c ~ c_IT^(-1/(2 beta)) shifts log k_c by a constant)."""
    m = threshold_counts(results, cfg)
    count = "an integer count: any tolerance below 1 means 'the same features'"
    rule = f"#{{i: alpha a2_i / Delta_eff >= c_IT}}, c_IT = {C_IT_REF:.6f} from scipy (not the solver's constant)"
    specs = {
        "kc_scaling": f"effective width k_c (m_i > 1/2) = {rule}: max |difference| over every beta and alpha",
        "kc_reference": (
            f"k_c on the reference grid (k={cfg.ref_k}) = {rule} with the float64 reference's own Delta_eff: max "
            "|difference| over alphas"
        ),
        "stair_m": (
            f"staircase (beta=1): m_i > 1/2 exactly where alpha a2_i / Delta_eff >= c_IT: number of (alpha, i <= "
            f"{cfg.stair_features}) where they disagree"
        ),
        "stair_detected": (
            f"jumps of m_1..m_{cfg.stair_features} detected at the first grid alpha where alpha a2_i / Delta_eff >= "
            "c_IT: max |grid-index difference|"
        ),
    }
    return [check(text, 0.0, m[key], 0.5, wide_reason=count) for key, text in specs.items()]


@CLAIMS.add
def solver_claims(results: dict, cfg: Config) -> list[Claim]:
    """The threshold exponent and the solver against the independent float64 reference."""
    st, rf = results["staircase"], results["reference"]
    feat, thr = st["feature"], np.asarray(st["threshold"], np.float64)
    big = np.isin(feat, cfg.jump_features)
    exponent = float(np.polyfit(np.log(feat[big]), np.log(thr[big]), 1)[0])
    contested = (rf["n_candidates"] >= 2) | rf["coexist"]
    missing = float(np.sum(contested & (rf["n_distinct"] < 2)))
    jumps = (
        f"jumps of m_1..m_{cfg.ref_k} detected on the alpha grid at the same grid point as in the independent "
        "float64 reference (max |index difference| over features)"
    )
    eps_text = (
        "solver = independent float64 multi-start reference (plain iteration, no branch selection): max rel "
        f"|eps diff| over {cfg.ref_n_alpha} alphas + every alpha where several points coexist, k={cfg.ref_k}"
    )
    m_text = (
        f"overlaps m_1..m_{cfg.ref_k} of the solver = those of the independent float64 reference (max |m diff| "
        f"over the {cfg.ref_n_alpha}+ alphas and features; float32 vs float64)"
    )
    coexist = (
        "wherever the solver compared >= 2 self-consistent points (n_candidates >= 2, or flagged by the dense "
        "scan), the independent reference's plain iteration from its dense starts also converges to >= 2 "
        "distinct points: number of alphas where it does not"
    )
    statement = f"thresholds alpha_i ~ i^(2beta), beta=1: fitted exponent over i in {list(cfg.jump_features)}"
    index = "an integer grid-index difference: any tolerance below 1 means 'the same grid point'"
    alphas = "an integer count of alphas: any tolerance below 1 means 'none'"
    ulps, overlap = f"{F32}; the error sits at a few ulps", f"{F32} of an overlap in [0, 1]"
    return [
        check(statement, 2.0, exponent, 0.05),
        array_agreement(jumps, rf["jump_solver"], rf["jump_ref"], 0.5, relative=None, source=R, wide_reason=index),
        array_agreement(eps_text, rf["eps_solver"], rf["eps_ref"], 1e-5, relative="each", source=R, wide_reason=ulps),
        array_agreement(m_text, rf["m_solver"], rf["m_ref"], 1e-5, relative=None, source=R, wide_reason=overlap),
        check(coexist, 0.0, missing, 0.5, wide_reason=alphas),
    ]


@CLAIMS.add
def amp_claims(results: dict, cfg: Config) -> list[Claim]:
    """AMP on sampled spiked cubic tensors against the learned branch 1 - m+(c)."""
    learned = np.asarray(cfg.amp_cs) >= 3.0  # well above the spinodal: finite-n AMP stays on the branch
    c, mse, overlap = (np.asarray(results["amp"][f], np.float64)[..., learned] for f in ("c", "mse", "overlap"))
    pred_mse = 1.0 - np.asarray(ts.m_plus(c), np.float64)
    slopes = np.array([np.polyfit(np.log(c), np.log(seed), 1)[0] for seed in mse])
    mse_text = (
        f"AMP on sampled spiked cubic tensors (n={cfg.amp_n}) from the learned side: MSE / (1 - m+(c)) - 1, mean over "
        "c >= 3 (per seed; finite-n fluctuations ~ n^-1/2 set the 15%)"
    )
    overlap_text = (
        f"AMP on data from the learned side (n={cfg.amp_n}): overlap <xhat x> / m+(c) - 1, mean over c >= 3 (per "
        "seed) = 0: the exact expectation inside the 95% interval (the interval no wider than 0.01)"
    )
    slope_text = "AMP on data: slope of log MSE vs log c over c >= 3 = slope of log(1 - m+(c)) (refinement, per seed)"
    return [
        seed_mean(mse_text, 0.0, np.mean(mse / pred_mse - 1.0, axis=1), 0.15, "abs", source=R),
        seed_mean(overlap_text, 0.0, np.mean(overlap / (1.0 - pred_mse) - 1, axis=1), 0.01, source=R),
        seed_mean(slope_text, float(np.polyfit(np.log(c), np.log(pred_mse), 1)[0]), slopes, 0.1, "abs", source=R),
    ]


@CLAIMS.add
def student_claims(results: dict, cfg: Config) -> list[Claim]:
    """MAP students against the Bayes error (a bound) and the paper's small gap."""
    s = results["student"]
    random_init, _ = student_errors(results)
    init_dev = np.mean(np.asarray(s["init_test"], np.float64) / s["init_exact"] - 1.0, axis=0)
    d_hi = cfg.st_ds[-1]
    init = (
        "students' test error (Monte Carlo over 4096 fresh inputs) at the random initialisation = its exact "
        "Gaussian expectation E_x (f_init - f*)^2 (Wick's theorem for He_3 units, float64, no model code): "
        f"test/exact - 1, mean over d in {list(cfg.st_ds)} per seed (the interval no wider than 0.25: a cubic "
        "unit's square has relative spread ~9, /sqrt(4096) ~ 0.15 per draw)"
    )
    estimator = (
        f"the MAP/Adam students (d={cfg.st_ds[0]}, {cfg.st_seeds} random-init and {cfg.st_seeds} warm-start) are "
        f"the documented estimator: {cfg.st_steps} Adam steps (cosine decay to lr/10) on the negative log "
        "posterior sum (y - f)^2/(2 Delta) + |w|^2/2 = an independent float64 NumPy re-implementation "
        "(hand-written gradient and Adam, same data and initialisation): max relative parameter distance over "
        "students (float32 rounding through the run: 2e-6..1.4e-5 observed at d = 16..96, 100..300 steps)"
    )
    bayes = (
        f"no MAP student beats the Bayes error: random-init err/eps_BO at d={d_hi} (k/d={cfg.st_k_ratio:g}, "
        f"alpha={cfg.st_alpha:g})"
    )
    gap = (
        f"{SMALL_GAP}: random-init MAP/Adam student err/eps_BO at d={d_hi} (small = within 50%; not reproduced, "
        "see the module docstring)"
    )
    reason = (
        "not reproduced at the d we can afford: random-init students stay 4-7x above eps_BO at d = 24..96 (the gap "
        "does not close with d); students started at the teacher approach eps_BO as d grows (3.5x -> 1.9x), so the "
        "factor ~2.5 left is optimisation failure, not an optimistic eps_BO (module docstring)"
    )
    return [
        seed_mean(init, 0.0, init_dev, 0.25),
        agreement(estimator, 0.0, float(np.max(s["map_ref_dev"])), 1e-4, "abs"),
        lower_bound(bayes, 1.0, random_init[-1], over_seeds=True),
        seed_mean(gap, 1.0, random_init[-1], 0.5, "rel", kind="paper", source="paper", expected="fail", reason=reason),
    ]


claims = CLAIMS.claims
