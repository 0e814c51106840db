"""Speed-scaling sim: the claims (ratios vs YDS = OPT, bounds with their slack, published numbers), decided on the
fits of ``measures.py`` and the independent values of ``reference.py``."""

from __future__ import annotations

import math

import numpy as np

from jaxwb.sims.core.claims import (
    Claim,
    ClaimGroups,
    agreement,
    array_agreement,
    mean_ci,
    one_sided,
    seed_mean,
    upper_bound,
    worst_agreement,
)
from jaxwb.sims.speed_scaling import reference as ref
from jaxwb.sims.speed_scaling.config import (
    ADVERSARIAL,
    BASELINES,
    LABELS,
    PUBLISHED,
    PUBLISHED_LAS,
    Config,
    delta_reference,
)
from jaxwb.sims.speed_scaling.measures import las_eps_interval, robust_growth
from jaxwb.theory import speed_scaling as ss

FLOAT32_REASON = (
    "float32 JAX vs float64 NumPy/Python: the tolerance is a float32 rounding allowance over the grid's slots; the "
    "observed deviation (1e-7 or exactly 0) depends on the instance's rounding"
)
LAS_WORK_RANGE = (20.0, 80.0)  # LAS's model: workloads in [20, 80]; the misleading predictor mirrors them in it
SMOOTH_MAX_SIGMA = 0.8  # smoothness is claimed up to this noise; beyond, (1 + eta)^a > 10 x the robustness cap
ROBUST_GROWTH = 2.0  # the largest growth of the worst adversarial ratio over robust_n that counts as "bounded"
BKP_REASON = (
    "the published 7.88 matches BKP's formula speed integrated up to the last deadline with the machine never "
    "idling (7.71 on our instances); BKP here idles whenever no released job has work left (the defined "
    "horizon: its speed formula counts work already done, so it finishes early and would otherwise keep running "
    "empty), which gives ~4.9 (docs/papers/speed_scaling.md)"
)
# the baselines' competitive bounds at alpha = 2 and 3, evaluated by hand from the papers' formulas: AVR
# 2^(a-1) a^a (Yao-Demers-Shenker 1995), OA a^a and BKP 2 (a/(a-1))^a e^a (Bansal-Kimbrel-Pruhs 2007)
PUBLISHED_BOUNDS = {
    "avr": ("2^(a-1) a^a", {2.0: 8.0, 3.0: 108.0}),
    "oa": ("a^a", {2.0: 4.0, 3.0: 27.0}),
    "bkp": ("2 (a/(a-1))^a e^a", {2.0: 8.0 * math.e**2, 3.0: 6.75 * math.e**3}),
}
CLAIMS = ClaimGroups()


def baseline_bound(name: str, alpha: float) -> float:
    """The competitive bound ``jaxwb.theory.speed_scaling`` gives baseline ``name`` (avr, oa, bkp) at ``alpha``: the
    value the bound claims compare with (looked up at each call, so that a patched theory function is seen)."""
    return {"avr": ss.avr_bound, "oa": ss.oa_bound, "bkp": ss.bkp_bound}[name](alpha)


def paper_setup(cfg: Config) -> bool:
    """True on LAS's experiment (200 jobs, D = 20, alpha = 3, 20 seeds): only there are published numbers claims."""
    return (cfg.n_jobs, cfg.window, cfg.alpha, cfg.n_seeds) == (200, 20, 3.0, 20)


def i0_noise(cfg: Config) -> int:
    """Index of the zero-noise level (exact prediction s_hat = s*)."""
    return int(np.argmin(np.abs(np.asarray(cfg.noise_levels))))


def eps_kappas(results: dict):
    """(j, (eps, kappa)) for each of SP's consistency targets."""
    return enumerate(zip(np.asarray(results["eps"]), np.asarray(results["kappas"]), strict=True))


def _smooth_sigmas(cfg: Config):
    """(index, sigma) of the noise levels at which smoothness is claimed: 0 < sigma <= SMOOTH_MAX_SIGMA."""
    return [(i, sig) for i, sig in enumerate(cfg.noise_levels) if 0 < sig <= SMOOTH_MAX_SIGMA]


def unit_ratio(statement: str, ratios, tolerance: float, *, source="theory", wide_reason=FLOAT32_REASON) -> Claim:
    """Ratios which must equal 1 do, up to float32 rounding: the one of ``ratios`` (any shape) farthest from 1."""
    return worst_agreement(statement, 1.0, ratios, tolerance, source=source, wide_reason=wide_reason)


@CLAIMS.add
def feasibility_claims(results: dict, cfg: Config) -> list[Claim]:
    """Every schedule the run builds finishes every job by its deadline (the model's constraint)."""
    main, keys = results["main"], [f"{b}_feasible" for b in BASELINES]
    flags = [main[k] for k in (*keys, *(f"las_{k}_feasible" for k in ss.WORK_PREDICTIONS))]
    flags += [v for blk in ("sp_noise", "sp_adv") for k, v in main[blk].items() if k.endswith("_feasible")]
    flags += [blk[k] for blk in results.get("bounds", {}).values() for k in keys]  # general random instances
    bad = int(sum(np.size(f) - np.count_nonzero(f) for f in flags))
    text = (
        f"every schedule finishes every job by its deadline: infeasible among {sum(np.size(f) for f in flags)} "
        "(seed, algorithm, prediction, eps) schedules = 0 (AVR, OA, qOA, BKP, LAS x3 predictors, SP both modes and "
        "pure following on noisy and adversarial predictions; the baselines on the random bound instances)"
    )
    return [agreement(text, 0.0, bad, 0.0, "abs", source="paper")]


@CLAIMS.add
def reference_claims(results: dict, cfg: Config) -> list[Claim]:
    """Seed 0's grid speeds of AVR, OA and qOA against the pure-Python ``reference`` (naive loops, no shared code)."""
    jobs, speeds = results["profiles"]["jobs"], results["profiles"]["speeds"]
    r, d, w = (np.asarray(jobs[k], float).tolist() for k in ("release", "deadline", "work"))
    dt, n_slots = 1.0 / cfg.substeps, (cfg.n_jobs + cfg.window) * cfg.substeps  # the main sweep's grid
    q = 2.0 - 1.0 / cfg.alpha  # qOA's factor (Bansal-Kimbrel-Pruhs), written out here
    out = []
    for name, reference in (("avr", ref.avr_python), ("oa", ref.oa_python), ("qoa", ref.qoa_python)):
        text = (
            f"{LABELS[name]} speed per slot (seed 0, {len(w)} jobs, {n_slots} slots) = pure-Python "
            f"{LABELS[name]} reference: largest deviation / peak speed = 0"
        )
        want = reference(r, d, w, n_slots, dt, **({"q": q} if name == "qoa" else {}))
        out.append(array_agreement(text, np.asarray(speeds[name], float), want, 1e-5, wide_reason=FLOAT32_REASON))
    return out


@CLAIMS.add
def work_claims(results: dict, cfg: Config) -> list[Claim]:
    """Every schedule integrates to the total work (the spec's testable statement); AVR, OA and LAS never command
    more than the pending work, LAS's own plan not even with noisy workloads (w_hat = 0 included: that job runs at
    its density over the window), and the EDF guard never adds work; OPT is a lower bound on every ratio."""
    speeds, main = results["profiles"]["speeds"], results["main"]
    total = float(np.sum(np.asarray(results["profiles"]["jobs"]["work"], float)))
    dt = 1.0 / cfg.substeps
    names = {"opt": "OPT (YDS on the grid)", "avr": "AVR", "oa": "OA", "las": "LAS", "sp_dynamic": "SP-dynamic"}
    out = []
    for key, label in {**names, "bkp_work": "BKP's work rate"}.items():
        text = f"{label} integrates to the total work (seed 0): int s dt = sum_j w_j = {total:.6g}"
        got = float(np.sum(np.asarray(speeds[key], float)) * dt)
        out.append(agreement(text, total, got, 1e-5, source="paper", wide_reason=FLOAT32_REASON))
    for b in ("avr", "oa"):
        text = f"{LABELS[b]} never commands more than the pending work: worst seed of E(work done) / E(commanded) = 1"
        out.append(unit_ratio(text, np.asarray(main[f"{b}_work_only"]) / np.asarray(main[b]), 1e-5))
    text = (
        "LAS commands exactly the instance's work (scaled predicted allocation + excess spread; robustify moves "
        "work, adds none): worst (seed, predictor, eps) of int s dt / sum_j w_j = 1 (accurate, random, misleading)"
    )
    out.append(unit_ratio(text, main["las_commanded_work"], 1e-4))  # (seeds, kinds, eps)
    ratios = [main[k] for k in (*BASELINES, *(f"las_{k}" for k in ss.WORK_PREDICTIONS), "las_noise")]
    ratios += [main[blk][m] for blk in ("sp_noise", "sp_adv") for m in (*ss.SP_MODES, "follow")]
    text = (
        "OPT (YDS) is a lower bound on LAS's instances: min ratio over seeds of AVR, OA, qOA, BKP, LAS (3 "
        "predictors, noisy workloads), SP (both modes, pure following; noisy and adversarial) >= 1"
    )
    out.append(one_sided(text, 1.0, ratios, "ge", tolerance=1e-4))
    guard = np.concatenate([np.ravel(main["las_guard_work"]), np.ravel(main["las_noise_guard_work"])])
    text = (
        f"LAS commands exactly the instance's work under noisy workload predictions (sigma = "
        f"{'/'.join(f'{x:g}' for x in cfg.noise_levels)}, clipped at 0: zero predictions spread their job over its "
        "window): worst (seed, sigma) of int s dt / sum_j w_j = 1"
    )
    guard_text = (
        "LAS's own speed plan finishes every job (the EDF guard adds no work): largest guard work / sum_j w_j "
        "over every (seed, predictor, eps) and noisy workload prediction = 0"
    )
    return out + [
        unit_ratio(text, main["las_noise_commanded_work"], 1e-4),  # (seeds, noise)
        agreement(guard_text, 0.0, float(np.max(guard)), 1e-5, "abs", wide_reason=FLOAT32_REASON),
    ]


@CLAIMS.add
def prediction_claims(results: dict, cfg: Config) -> list[Claim]:
    """The predictions' errors against closed forms, and the laws of the noisy speed and workload predictions."""
    a, main = cfg.alpha, results["main"]
    err = np.asarray(main["sp_adv"]["error"])  # (seeds, predictions)
    out = []
    for name, c in (("zero", 0.0), ("scaled_up", 10.0), ("scaled_down", 0.1)):
        text = f"relative L_alpha error of the {name} speed prediction (c s* with c = {c:g}) = |1 - c|: worst seed"
        e = err[:, ADVERSARIAL.index(name)]
        out.append(worst_agreement(text, abs(1.0 - c), e, 1e-5, wide_reason=FLOAT32_REASON))
    w = np.asarray(results["profiles"]["jobs"]["work"], np.float64)  # seed 0's workloads
    lo, hi = LAS_WORK_RANGE
    want = float((np.sum(np.abs(w - (lo + hi - w)) ** a) / np.sum(w**a)) ** (1.0 / a))
    text = (
        f"misleading workload prediction (LAS's experiment: the mirror image {lo:g} + {hi:g} - w_j inside "
        f"[{lo:g}, {hi:g}]): relative L_alpha error on seed 0 = (sum |2 w_j - {lo + hi:g}|^a / sum w_j^a)^(1/a) = "
        f"{want:.4g} (NumPy on the instance's workloads)"
    )
    got = float(results["profiles"]["jobs"]["misleading_error"])
    out.append(agreement(text, want, got, 1e-5, source="paper", wide_reason=FLOAT32_REASON))
    pw, law = np.asarray(main["noise_pred_work"]), np.asarray(main["noise_law_moment"])  # (seeds, noise)
    for i, sig in _smooth_sigmas(cfg):
        text = (
            f"noisy speed prediction s* exp(sigma z - sigma^2/2) is unbiased (sigma={sig:g}): mean over seeds of "
            "its total work / OPT's = 1 (interval half-width <= 0.25; dropping the -sigma^2/2 biases it by "
            "exp(sigma^2/2) - 1)"
        )
        m = ref.noisy_error_moment(float(sig), a)
        moment = (
            f"noisy workload prediction (sigma={sig:g}): mean over seeds of eta_w^alpha (per seed the mean over "
            f"{cfg.noise_law_draws} independent predictions of its instance's workloads) = E|max(sigma z, "
            f"-1)|^alpha = {m:.4g} (quadrature; interval half-width <= half of it)"
        )
        out += [seed_mean(text, 1.0, pw[:, i], 0.25), seed_mean(moment, m, law[:, i], 0.5 * m)]
    return out


@CLAIMS.add
def bkp_claims(results: dict, cfg: Config) -> list[Claim]:
    """BKP's energy against an independent pure-Python BKP; BKP idles once nothing is pending (its energy does not
    depend on how far the grid runs past the last deadline)."""
    bc = results["bkp_check"]
    text = f"BKP energy (commanded speed integrated) = pure-Python BKP reference ({cfg.bkp_check_jobs} jobs, same grid)"
    why = (
        "float32 JAX vs float64 Python: 1e-5 is a float32 allowance for ~100 slots, the observed error (1e-7 or "
        "exactly 0) depends on the instance's rounding"
    )
    idle = (
        f"BKP idles once nothing is pending (Bansal-Kimbrel-Pruhs): max speed over the {2 * cfg.window} time "
        "units of grid past the last deadline = 0"
    )
    return [
        agreement(text, float(bc["python"]), float(bc["jax"]), 1e-5, wide_reason=why),
        agreement(idle, 0.0, float(bc["tail_speed"]), 0.0, "abs", source="paper"),
    ]


@CLAIMS.add
def follow_claims(results: dict, cfg: Config) -> list[Claim]:
    """SP is robust by its clip (E(SP) <= kappa^a E(AVR) holds by the per-slot clip whatever the prediction: a unit
    test in tests/theory/test_speed_scaling.py, not a claim): pure following (``robust=False``) of the 10x prediction
    costs dt^(1-a) sum_j w_j^a, and at the smallest kappa its worst adversarial cost exceeds kappa^a E(AVR)."""
    a, main = cfg.alpha, results["main"]
    eps, kappas = np.asarray(results["eps"]), np.asarray(results["kappas"])
    dt = 1.0 / cfg.substeps
    up = ADVERSARIAL.index("scaled_up")
    follow = np.asarray(main["sp_adv"]["follow"], np.float64)  # (seeds, predictions): E / OPT
    formula = np.asarray(main["follow_up_formula"], np.float64)
    margin = float(np.min(np.asarray(main["follow_up_margin"])))
    avr = np.asarray(main["avr"], np.float64)
    ratio = follow[:, :, None] / (avr[:, None, None] * kappas[None, None, :] ** a)  # (seeds, predictions, eps)
    j = int(np.argmin(kappas))
    worst, bound = ratio[:, :, j].max(axis=1), avr * kappas[j] ** a  # bound (seeds,): kappa^a E(AVR) / OPT
    by_pred = ratio[:, :, j].mean(axis=0)
    loose = " (< 1: there the bound is looser than pure following)"
    others = [(k, ratio[:, :, i].max(axis=1).mean()) for i, k in enumerate(kappas) if i != j]
    others_text = ", ".join(f"kappa={k:g}: {f:.3g}{loose if f < 1 else ''}" for k, f in others)
    formula_text = (
        f"pure following (robust=False) of the 10x prediction runs each job at w_j/dt in its release slot "
        f"(10 s*(r_j) dt >= w_j: smallest margin {margin:.3g} over seeds and jobs): E = dt^(1-a) sum_j w_j^a "
        f"(dt={dt:g}, written out from the workloads): worst seed of E(follow) / that"
    )
    why = "float32 energies over the grid: 1e-4 is a rounding allowance; the two agree to ~1e-7"
    text = (
        f"without the clip SP is not robust (eps={eps[j]:g}, kappa={kappas[j]:g}): the worst adversarial "
        f"E(pure following) exceeds the instance bound kappa^a E(AVR), paired over seeds (in OPT units; the "
        f"factor E(follow) / (kappa^a E(AVR)) is {worst.mean():.3g} on average, largest for "
        f"{ADVERSARIAL[int(np.argmax(by_pred))]}; the 10x prediction's {by_pred[up]:.3g} = dt^(1-a) sum w^a / "
        f"(kappa^a E(AVR)); at {others_text})"
    )
    return [
        unit_ratio(formula_text, follow[:, up] / formula, 1e-4, wide_reason=why),
        Claim.ordering(text, worst * bound, bound, source="theory"),
    ]


@CLAIMS.add
def clip_share_claims(results: dict, cfg: Config) -> list[Claim]:
    """SP's cap binds exactly where c OPT(t) > kappa AVR(t) for the exact (c = 1) and the 10x (c = 10) prediction,
    OPT from YDS and AVR from the exact AVR profile (``offline.avr_profile``, not SP's envelope). A slot counts as
    capped when the followed speed exceeds the cap and the machine runs at or below it (so removing the clip, or a
    cap over the wrong jobs, shows)."""
    clip = results["main"]["clip"]
    kstar = np.asarray(clip["kstar"], np.float64)
    busy = int(np.sum(np.asarray(clip["busy"])))
    out = []
    for label, c, what in (
        ("exact", "OPT(t)", "the exact prediction (s_hat = OPT's speed)"),
        ("scaled_up", "10 OPT(t)", "the 10x prediction"),
    ):
        pred = np.asarray(clip[f"{label}_predicted"])  # (seeds, kappas)
        got, mism = np.asarray(clip[f"{label}_capped"]), np.asarray(clip[f"{label}_mismatch"])  # (seeds, modes, kappas)
        for j, (e, k) in eps_kappas(results):
            share = f"{100 * np.sum(got[:, 0, j]) / busy:.3g}% (predicted {100 * np.sum(pred[:, j]) / busy:.3g}%)"
            extra = ""
            if label == "exact":  # with the exact prediction the cap never binds at kappa >= K* = max_t OPT/AVR
                where = "never at kappa >= K*" if k >= kstar.max() else "it binds at kappa < K*"
                extra = f"; K* = max_t OPT(t)/AVR(t) = {kstar.min():.3g}..{kstar.max():.3g} over seeds, so {where}"
            text = (
                f"SP's cap with {what} (eps={e:g}, kappa={k:g}) binds exactly where {c} > kappa AVR(t) "
                f"(YDS and the exact AVR profile, no SP code): dynamic mode on {share} of the busy slots{extra}; "
                "slots where the two differ, over seeds and both modes = 0"
            )
            out.append(agreement(text, 0.0, float(np.sum(mism[:, :, j])), 0.0, "abs"))
    return out


@CLAIMS.add
def sp_consistency_claims(results: dict, cfg: Config) -> list[Claim]:
    """SP's consistency on LAS's instances: worst ratio with the exact prediction <= 1 + eps, per eps and mode."""
    sp, i0 = results["main"]["sp_noise"], i0_noise(cfg)
    out = []
    for j, (e, k) in eps_kappas(results):
        for mode in ss.SP_MODES:
            text = (
                f"SP-{mode} consistency on LAS's instances (eps={e:g}, kappa={k:g}): worst ratio with s_hat = OPT's "
                "speed <= 1 + eps"
            )
            out.append(upper_bound(text, 1 + float(e), np.asarray(sp[mode])[:, i0, j]))
    return out


@CLAIMS.add
def robust_n_claims(results: dict, cfg: Config) -> list[Claim]:
    """SP's robustness is independent of n (the paper's O(1)): the fitted growth of the worst adversarial ratio
    over robust_n (``robust_growth``) is at most ``ROBUST_GROWTH`` (whole 95% interval); at the smallest kappa
    (the eps most trusting of the cap) the worst n's mean worst ratio is within OA's guarantee alpha^alpha."""
    if "robust_n" not in results:
        return []
    n, sp = np.asarray(results["robust_n"]["n"]), np.asarray(results["robust_n"]["sp"])  # sp (N, seeds, pred, eps)
    eps, a = np.asarray(results["eps"]), cfg.alpha
    out = []
    for j, e in enumerate(eps):
        worst = sp[..., j].max(axis=2)  # (N, seeds)
        text = (
            f"SP robustness independent of n (eps={e:g}, dynamic): worst adversarial ratio at n = "
            f"{'/'.join(str(int(x)) for x in n)} jobs (mean over {worst.shape[1]} seeds: "
            f"{', '.join(f'{m:.3g}' for m in worst.mean(1))}); fitted growth over the range (n_max/n_min)^b "
            f"(log-log LSQ, whole 95% CI) <= {ROBUST_GROWTH:g} (a ratio growing like ln n or n^(1/4) fails)"
        )
        growth = (*robust_growth(n, worst), worst.size)
        out.append(Claim.from_interval(text, ROBUST_GROWTH, growth, 0.0, "le", kind="check"))
    j = int(np.argmax(eps))
    cis = [mean_ci(w) for w in sp[..., j].max(axis=2)]
    i = int(np.argmax([m + h for m, h, _ in cis]))
    text = (
        f"SP at eps={float(eps[j]):g} (kappa={float(np.asarray(results['kappas'])[j]):g}) is as robust as OA's "
        f"guarantee: mean worst adversarial ratio at the worst n (n={int(n[i])}) <= alpha^alpha = {a**a:g} (at "
        "eps=0.1 it is 15-40x above: the price of the consistency target)"
    )
    return out + [Claim.from_interval(text, a**a, cis[i], 0.0, "le", kind="check", source="theory")]


@CLAIMS.add
def sp_fallback_claims(results: dict, cfg: Config) -> list[Claim]:
    """The fallback path against an independent implementation: with no prediction SP runs OA on its own work (at
    the largest kappa neither reserve nor cap binds on LAS's instances); following the exact prediction costs OPT."""
    eps, kappas, main = np.asarray(results["eps"]), np.asarray(results["kappas"]), results["main"]
    jk, zero = int(np.argmax(kappas)), ADVERSARIAL.index("zero")
    oa = np.asarray(main["oa"])
    rel0 = np.concatenate([np.asarray(main["sp_adv"][mode])[:, zero, jk] / oa for mode in ss.SP_MODES])
    follow0 = np.asarray(main["sp_noise"]["follow"])[:, i0_noise(cfg)]
    text = (
        f"SP with no prediction (s_hat = 0, eps={eps[jk]:g}, kappa={kappas[jk]:g}) = OA (ss.oa): worst seed and "
        "mode of E(SP) / E(OA)"
    )
    why = (
        "float32 energies summed over the grid: 1e-4 is a rounding allowance; the two code paths agree to ~1e-6 or "
        "exactly, depending on the seed"
    )
    follow = (
        "pure prediction-following with s_hat = OPT's speed costs exactly OPT (OA reserve never exceeds OPT's "
        "speed; worst seed)"
    )
    follow_why = (
        "float32 rounding allowance (OPT's profile resampled on the grid); the error is ~1e-5 or exactly 0 "
        "depending on the seed"
    )
    return [
        unit_ratio(text, rel0, 1e-4, wide_reason=why),
        agreement(follow, 1.0, float(np.max(follow0)), 1e-4, "abs", wide_reason=follow_why),
    ]


@CLAIMS.add
def smoothness_claims(results: dict, cfg: Config) -> list[Claim]:
    """Smoothness, mean over seeds per noise level: SP's ratio <= (1 + eta)^a per eps and mode (Minkowski:
    E(s_hat) <= (1 + eta)^a OPT), LAS's with noisy workloads <= (1 + eps) (1 + eta_w)^a at the smallest eps."""
    sp, eps = results["main"]["sp_noise"], np.asarray(results["eps"])
    eta = np.asarray(sp["error"])  # (seeds, noise)
    out = []
    for i, sig in _smooth_sigmas(cfg):
        for j, e in enumerate(eps):
            for mode in ss.SP_MODES:
                text = (
                    f"SP-{mode} smoothness (eps={e:g}, sigma={sig:g}, mean eta={eta[:, i].mean():.2f}): mean over "
                    "seeds of ratio / (1 + eta)^a <= 1"
                )
                rel = np.asarray(sp[mode])[:, i, j] / (1 + eta[:, i]) ** cfg.alpha
                out.append(upper_bound(text, 1.0, rel, over_seeds=True))
    eta_w, las_n = np.asarray(results["main"]["las_noise_error"]), np.asarray(results["main"]["las_noise"])
    e0 = float(eps.min())
    for i, sig in _smooth_sigmas(cfg):
        text = (
            f"LAS smoothness (eps={e0:g}, workload noise sigma={sig:g}, mean eta_w={eta_w[:, i].mean():.2f}): mean "
            "over seeds of ratio / ((1 + eps) (1 + eta_w)^a) <= 1"
        )
        rel = las_n[:, i] / ((1 + e0) * (1 + eta_w[:, i]) ** cfg.alpha)
        out.append(upper_bound(text, 1.0, rel, over_seeds=True))
    return out


@CLAIMS.add
def las_claims(results: dict, cfg: Config) -> list[Claim]:
    """LAS with exact workloads: consistency (<= 1 + eps) and no worse than YDS of the shrunk instance."""
    main = results["main"]
    las_acc = np.asarray(main["las_accurate"])  # (seeds, eps)
    shrunk, smoothed = np.asarray(main["las_shrunk_opt"]), np.asarray(main["las_smoothed_opt"])
    dt = 1.0 / cfg.substeps
    out = []
    for j, e in enumerate(np.asarray(results["eps"])):
        m = int(np.ceil(delta_reference(float(e), cfg.alpha) * cfg.window / dt - 1e-6))
        average = (
            f"LAS with exact workloads on equal windows = the width-m causal moving average of YDS's speed on "
            f"the instance shrunk by m = ceil(delta D / dt) = {m} slots (eps={e:g}; delta from ((1 + delta) / "
            "(1 - delta))^a = 1 + eps, written out; the average computed without ss.las): worst seed of the "
            "energy ratio = 1"
        )
        consistency = f"LAS consistency: worst ratio with exact workloads <= 1 + eps (eps={e:g})"
        shrink = (
            f"LAS with exact workloads costs <= YDS of the instance shrunk by delta(eps) (robustify on "
            f"equal widths never raises energy; worst seed, eps={e:g})"
        )
        out.append(unit_ratio(average, las_acc[:, j] / smoothed[:, j], 1e-5, source="paper"))
        out.append(upper_bound(consistency, 1 + e, las_acc[:, j], source="paper"))
        out.append(upper_bound(shrink, 1.0, las_acc[:, j] / shrunk[:, j], tolerance=1e-4))
    return out


@CLAIMS.add
def baseline_order_claims(results: dict, cfg: Config) -> list[Claim]:
    """The published order of the mean ratios, OA (1.20) < AVR (1.27) < BKP (7.88), on paired per-seed
    differences. Off LAS's setup (fewer jobs: the horizon's edges weigh more, the ratios are higher) the published
    values are no prediction but their order is; on it this checks BKP, whose published value is not reproduced."""
    where = "on" if paper_setup(cfg) else "off"
    return [
        Claim.ordering(
            f"{LABELS[hi]} costs more than {LABELS[lo]} on LAS's model {where} its setup ({cfg.n_jobs} jobs, "
            f"D={cfg.window}, a={cfg.alpha:g}): mean over seeds of the paired ratio difference > 0 (the published "
            f"order of LAS's experiment, {PUBLISHED[lo]} < {PUBLISHED[hi]})",
            np.asarray(results["main"][hi]),
            np.asarray(results["main"][lo]),
        )
        for hi, lo in (("avr", "oa"), ("bkp", "avr"))
    ]


@CLAIMS.add
def las_calibration_claims(results: dict, cfg: Config) -> list[Claim]:
    """Off LAS's setup, what the eps calibration rests on, on its own instances: LAS with exact workloads is
    (1 + eps)-consistent over the grid and its mean ratio rises with eps, so the published range maps to an eps
    interval by interpolation (``las_eps_interval``)."""
    if paper_setup(cfg) or "las_calibration" not in results:
        return []
    cal = np.asarray(results["las_calibration"])  # (calibration seeds, grid)
    grid = np.asarray(cfg.las_eps_grid, float)
    worst = cal.max(axis=0) / (1.0 + grid)
    j = int(np.argmax(worst))
    text = (
        f"LAS consistency on the {cal.shape[0]} calibration instances: worst over the eps grid "
        f"({', '.join(f'{e:g}' for e in grid)}) of worst ratio / (1 + eps) <= 1 (exact workloads; largest at "
        f"eps={grid[j]:g})"
    )
    out = [upper_bound(text, 1.0, worst[j], source="paper")]
    if grid.size >= 2:
        text = (
            f"LAS-accurate mean ratio rises over the calibration grid (the premise of mapping the published "
            f"range to eps): ratio at eps={grid[-1]:g} > ratio at eps={grid[0]:g}, paired over the "
            f"{cal.shape[0]} calibration instances"
        )
        out.append(Claim.ordering(text, cal[:, -1], cal[:, 0], source="theory"))
    return out


@CLAIMS.add
def paper_claims(results: dict, cfg: Config) -> list[Claim]:
    """On LAS's experiment only: the published mean ratios and LAS-accurate range (at the eps it maps to)."""
    if not paper_setup(cfg):
        return []
    eps, main = np.asarray(results["eps"]), results["main"]
    out = []
    for name, pub in PUBLISHED.items():
        text = (
            f"{LABELS[name]} mean ratio in LAS's experiment (200 jobs, D=20, a=3, 20 seeds) vs published "
            "(10%: their random-walk step and grid are not in our notes)"
        )
        known = {"expected": "fail", "reason": BKP_REASON} if name == "bkp" else {}
        out.append(Claim.from_samples(text, pub, np.asarray(main[name]), 0.1, "rel", kind="paper", **known))
    if "las_calibration" not in results:
        return out
    means = np.asarray(results["las_calibration"]).mean(0)  # calibration instances, not the tested ones
    lo, hi = las_eps_interval(np.asarray(cfg.las_eps_grid), means)
    inside = [j for j, e in enumerate(eps) if lo <= e <= hi]
    pl, ph = PUBLISHED_LAS
    for j in inside:
        text = (
            f"LAS-accurate mean ratio within the published range [{pl}, {ph}] at eps={eps[j]:g} (the range "
            f"maps to eps in [{lo:.2f}, {hi:.2f}] on {cfg.las_cal_seeds} calibration instances of their own; "
            f"tested on the {cfg.n_seeds} experiment instances)"
        )
        las_acc = np.asarray(main["las_accurate"])[:, j]
        out.append(Claim.from_samples(text, (pl + ph) / 2, las_acc, (ph - pl) / 2, "abs", kind="paper"))
    if not inside:
        text = (
            f"LAS-accurate published range [{pl}, {ph}] maps to an eps interval containing one of eps_values "
            f"(found [{lo:.2f}, {hi:.2f}])"
        )
        out.append(agreement(text, 1.0, 0.0, 0.0, "abs", kind="paper", source="paper"))
    return out


@CLAIMS.add
def baseline_bound_claims(results: dict, cfg: Config) -> list[Claim]:
    """The baselines' published competitive bounds (the values the bound claims take from ``jaxwb.theory``, against
    the papers' formulas evaluated by hand) and OPT as a lower bound, on general random instances."""
    out = []
    for name, (formula, want) in PUBLISHED_BOUNDS.items() if "bounds" in results else ():
        text = (
            f"{LABELS[name]}'s competitive bound as the bound claims below use it = the published {formula} at "
            f"alpha = 2 and 3 ({', '.join(f'{w:.6g}' for w in want.values())}, evaluated by hand): largest "
            "relative difference = 0"
        )
        got = [baseline_bound(name, al) for al in want]
        out.append(array_agreement(text, got, list(want.values()), 0.0, relative="each", source="paper"))
    for label, al in (("alpha2", 2.0), ("alpha3", 3.0)) if "bounds" in results else ():
        b = results["bounds"][label]
        for name in PUBLISHED_BOUNDS:
            text = (
                f"{LABELS[name]} worst ratio <= its bound on random instances (alpha={al:g}; the published bound, "
                "loose on random instances)"
            )
            out.append(upper_bound(text, baseline_bound(name, al), b[name], source="paper"))
        text = f"OPT is a lower bound: min ratio of AVR/OA/qOA/BKP >= 1 (alpha={al:g})"
        out.append(one_sided(text, 1.0, [b[n] for n in BASELINES], "ge", tolerance=1e-4))
    return out


@CLAIMS.add
def avr_lower_bound_claims(results: dict, cfg: Config) -> list[Claim]:
    """AVR on its lower-bound family at alpha = 2: first-order convergence and the extrapolated continuum limit."""
    out = []
    lb = results.get("avr_lb", {k: () for k in ("n", "kappa", "measured", "continuum", "extrapolated")})
    for k, m, c, x, nn in zip(lb["kappa"], lb["measured"], lb["continuum"], lb["extrapolated"], lb["n"], strict=True):
        n1, n2 = (int(v) for v in nn)
        order = float(np.log2((c - m[0]) / (c - m[1])))
        text = (
            f"AVR/OPT on the lower-bound family (alpha=2, kappa={k:g}): convergence order in the log-spacing, "
            f"{n1} vs {n2} jobs"
        )
        limit = f"AVR/OPT extrapolated 2R({n2}) - R({n1}) = continuum limit (alpha=2, kappa={k:g}; -> 4 as kappa -> 0)"
        out.append(agreement(text, 1.0, order, 0.35, "abs"))
        out.append(agreement(limit, c, x, 0.02))
    return out


claims = CLAIMS.claims
