"""Claims of the tv_distance result (kinds and intervals: the ``jaxwb.sims.tv_distance`` docstring)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from jaxwb.sims.core.claims import RESULT_ALPHA, Claim, bootstrap_ci, mean_ci
from jaxwb.sims.tv_distance.config import INTERVAL_MIN_S, Config
from jaxwb.sims.tv_distance.pieces import loglog_slope
from jaxwb.sims.tv_distance.statistics import binomial_ci, ci_hits
from jaxwb.theory import tv_distance as tv

NOISY_BIAS_FLOOR = 0.01  # the SIMEX bias bound's floor: the noisy-logit checks' CI half-width bound

# ---------------------------------------------------------------------------------------------------------
# helpers: the shapes the claims below share
# ---------------------------------------------------------------------------------------------------------


def mean_check(statement: str, predicted, mean, se, tol: float, n: int, *, crit: float = 1.96, source="theory"):
    """A Monte Carlo mean against its exact value (``comparison="ci"``): the interval mean +- crit x se must hold
    ``predicted`` and be at most ``tol`` wide (half-width); ``n`` sequences or repetitions."""
    return Claim(
        statement, predicted, float(mean), tol, "ci", kind="check", ci=crit * float(se), n_seeds=n, source=source
    )


def upper_bound(statement: str, bound, measured, *, ci: float = 0.0, n: int = 1, source: str = "paper") -> Claim:
    """``measured`` (with half-width ``ci`` over ``n`` seeds) <= ``bound``, a ``bound`` claim with its slack."""
    return Claim(statement, bound, measured, 0.0, "le", kind="bound", ci=ci, n_seeds=n, source=source)


def bias_bound(statement: str, bound, samples, truth: float, *, source: str = "paper") -> Claim:
    """|mean of ``samples`` - ``truth``| <= ``bound`` over the whole Student-t interval of the mean."""
    mean, half, n = mean_ci(np.asarray(samples, np.float64))
    return upper_bound(statement, bound, abs(mean - truth), ci=half, n=n, source=source)


def worst_paired_zero(statement, b, se, n: int, *, source: str = "theory") -> Claim:
    """Paired mean differences b (L,) with standard errors se (L,), one per length, = 0 at the worst length
    (largest |b| / se) on its 95% normal interval Bonferroni-corrected over the L lengths, half-width <= 0.01;
    ``statement(i)`` names the worst index i; ``n`` sequences per length."""
    b, se = np.asarray(b, float), np.asarray(se, float)
    i = int(np.argmax(np.abs(b) / se))
    crit = float(stats.norm.ppf(1 - 0.025 / len(b)))
    return mean_check(statement(i), 0.0, b[i], se[i], 0.01, n, crit=crit, source=source)


# ---------------------------------------------------------------------------------------------------------
# claims
# ---------------------------------------------------------------------------------------------------------


def logit_claims(results: dict, cfg: Config) -> list[Claim]:
    """Logit access at the Hoeffding m: coverage, unbiasedness, exact variances, RB <= plain."""
    out = []
    tv_true = float(results["exact"]["tv"])
    ref = results["reference"]
    cov = results["coverage"]
    m_h = int(cov["m"])
    R = cfg.coverage_reps
    # the paper's Hoeffding m, written out here (the run takes it from jaxwb.theory.tv_distance.hoeffding_m)
    m_paper = math.ceil(math.log(2 / cfg.delta) / (2 * cfg.eps**2))
    z_d = float(stats.norm.ppf(1 - cfg.delta / 2))
    p0 = 1 - cfg.delta
    for kind in tv.LOGIT_KINDS:
        est = np.asarray(cov[kind]["estimates"], np.float64)
        eps_clt = z_d * math.sqrt(float(ref["var"][kind]) / m_paper)
        frac = float(np.mean(np.abs(est - tv_true) <= eps_clt))
        out.append(
            Claim(
                f"Hoeffding's m, sharper: at the paper's m = ceil(ln(2/delta) / (2 eps^2)) = {m_paper} sequences the "
                f"{kind} estimate lies within eps' = z_(1-delta/2) sqrt(Var Z / m) of the exact TV (exact Var Z by "
                f"enumeration: eps' = {eps_clt:.4f}, below Hoeffding's eps = {cfg.eps}, whose coverage ~1 any "
                f"unbiased [0, 1] estimator meets) in 1 - delta = {p0:g} of {R} repetitions (the CLT for the mean of "
                "m, two-sided: its error is O(1/m); a bias of sqrt(Var Z / m) would give 0.74, a wrong m or Var Z "
                "moves it too); interval: the binomial's normal half-width at 1 - delta, <= 0.05",
                p0,
                frac,
                0.05,
                "ci",
                kind="check",
                ci=1.96 * math.sqrt(p0 * (1 - p0) / len(est)),
                n_seeds=len(est),
                source="theory",
            )
        )
    for kind in tv.LOGIT_KINDS:
        est = np.asarray(cov[kind]["estimates"], np.float64)
        out.append(
            Claim.from_samples(
                f"{kind} logit estimator unbiased: mean of {R} repetitions at the Hoeffding m = "
                "exact TV (enumeration); CI half-width <= 0.01",
                tv_true,
                est,
                0.01,
                "ci",
                kind="check",
                source="theory",
            )
        )
    for kind in tv.LOGIT_KINDS:
        est = np.asarray(cov[kind]["estimates"], np.float64)
        pred = float(ref["var"][kind])
        c = Claim.from_samples(
            f"{kind}: Var Z = m (T - TV)^2 averaged over {R} repetitions = exact Var Z "
            "(enumeration, float64); CI half-width <= 35% of it",
            pred,
            m_h * (est - tv_true) ** 2,
            0.35 * pred,
            "ci",
            kind="check",
            source="theory",
        )
        out.append(c)
    for kind in tv.LOGIT_KINDS:
        pred = float(ref["var"][kind])
        out.append(
            Claim.from_samples(
                f"{kind}: the stated standard error is right: m se^2 (sample variance, ddof 1) averaged over {R} "
                "repetitions = exact Var Z (enumeration, float64); CI half-width <= 5% of it",
                pred,
                m_h * np.asarray(cov[kind]["se"], np.float64) ** 2,
                0.05 * pred,
                "ci",
                kind="check",
                source="theory",
            )
        )
    gain = results["errors"]["rb_var_gain"]
    pred = float(ref["var"]["plain"]) - float(ref["var"]["rb"])
    N = cfg.slope_pool * cfg.pool_chunks
    out.append(
        mean_check(
            "Rao-Blackwellisation lowers the variance: Var Z(plain) - Var Z(RB), paired on the same "
            f"{N} sequences (errors pool), = its exact value by enumeration (> 0; 95% CI <= 50% of it)",
            pred,
            gain["mean"],
            gain["se"],
            0.5 * pred,
            N,
        )
    )
    return out


def noisy_claims(results: dict, cfg: Config) -> list[Claim]:
    """Noisy logits: plugin and SIMEX-2 means = their exact expectations; the spec's bias bounds."""
    out = []
    tv_true = float(results["exact"]["tv"])
    ref = results["reference"]
    cov = results["coverage"]
    R = cfg.coverage_reps
    for r in cfg.noisy_r:
        rep = cov[f"noisy_r{r}"]
        for kind, key in (("plugin", "plugin"), ("SIMEX-2", "value")):
            out.append(
                Claim.from_samples(
                    f"noisy logits (sigma={cfg.sigma}, r={r}): mean {kind} estimate over {R} repetitions = its exact "
                    "expectation (enumeration x Gaussian smoothing, float64); CI half-width <= 0.01",
                    float(ref[f"noisy_r{r}"][key.replace("value", "simex")]),
                    np.asarray(rep[key], np.float64),
                    0.01,
                    "ci",
                    kind="check",
                    source="theory",
                )
            )
        out.append(
            bias_bound(
                f"noisy-logit plugin |bias| <= sigma sqrt(2n/r) (sigma={cfg.sigma}, r={r}; the spec's "
                "worst-case bound, loose here: the check above is the sharp test)",
                float(tv.noisy_plugin_bias_bound(cfg.sigma, cfg.n, r)),
                rep["plugin"],
                tv_true,
            )
        )
    r0 = cfg.noisy_r[0]
    plugin_bias = abs(float(ref[f"noisy_r{r0}"]["plugin"]) - tv_true)
    out.append(
        bias_bound(
            f"SIMEX noisy-logit |bias| (measured, whole CI) <= max(plugin |bias| (exact), {NOISY_BIAS_FLOOR}) "
            f"(sigma={cfg.sigma}, r={r0}): SIMEX-2 removes the plugin's bias where it has one (over 20 pairs, "
            "exact: >= 54% of it where it is >= 0.01) and adds none beyond the floor where it has little (there "
            "SIMEX's exact |bias| is <= 0.0064 and may exceed the plugin's; the floor is the noisy-logit checks' "
            "resolution, their CI half-width bound)",
            max(plugin_bias, NOISY_BIAS_FLOOR),
            cov[f"noisy_r{r0}"]["value"],
            tv_true,
            source="reconstruction",
        )
    )
    return out


def interval_claims(results: dict, cfg: Config) -> list[Claim]:
    """The stated 95% intervals (Estimate.halfwidth) cover the exact TV where the theory states it (logit, noisy
    logits, sample access at s >= INTERVAL_MIN_S); the sample plugin's mean = its exact expectation at every s."""
    out = []
    tv_true = float(results["exact"]["tv"])
    cov = results["coverage"]
    R = cfg.coverage_reps
    # stated 95% intervals cover the exact TV (logit: z stderr; noisy/sample: z stderr + |bias estimate|)
    cov_names = (
        [("rb", "logit rb")]
        + [(f"noisy_r{r}", f"noisy SIMEX-2 r={r}") for r in cfg.noisy_r]
        + [
            (f"sample_s{s_}", f"sample s={s_} ({tv.resolve_sample_kind('auto', s_)})")
            for s_ in cfg.sample_s
            if s_ >= INTERVAL_MIN_S
        ]
    )
    # decided together, as the family of exact-expectation claims is: a correct interval (coverage 0.95) fails one
    # of these k claims at no more than RESULT_ALPHA of seeds (each Wilson interval's upper end below 0.95 with
    # probability RESULT_ALPHA / k); at the 95% level each failed at ~2.5% of seeds
    level = 1 - 2 * RESULT_ALPHA / len(cov_names)
    for name, label in cov_names:
        rep = cov[name] if name not in tv.LOGIT_KINDS else {"value": cov[name]["estimates"], "se": cov[name]["se"]}
        frac, lo, hi, N = binomial_ci(ci_hits(rep, tv_true), level)
        out.append(
            Claim(
                f"{label}: the stated 95% interval (Estimate.halfwidth) covers the exact TV at >= its level in "
                f"{R} repetitions at the Hoeffding m: 0.95 not above the {100 * level:.4g}% Wilson interval of the "
                f"coverage (scipy binomtest; level 1 - {2 * RESULT_ALPHA:g}/{len(cov_names)}: the {len(cov_names)} "
                "coverage claims decided together; tolerance = the interval's width, so the claim fails exactly "
                "when its upper end is below 0.95)",
                0.95,
                frac,
                hi - lo,
                "ge",
                kind="check",
                ci=frac - lo,
                n_seeds=N,
                level=level,
            )
        )
    for i, s_ in enumerate(cfg.sample_s):
        out.append(
            Claim.from_samples(
                f"sample access, s={s_}: the plugin estimate (1 - exp(-L_hat))_+ from counts, mean over {R} "
                "repetitions = its exact expectation (float64 NumPy: the law of the count log-ratio along the "
                "Markov chain, x ~ P and both counts binomial, on a grid of step 1e-3, within 2e-5 of brute-force "
                "enumeration); CI half-width <= 0.01"
                + (
                    f" (below s = {INTERVAL_MIN_S} the stated interval is not claimed: the count log-ratio's "
                    "shrinkage toward 0 is a bias neither correction sees, docs/papers/tv_distance.md)"
                    if s_ < INTERVAL_MIN_S
                    else ""
                ),
                float(cov["sample_plugin_exact"][i]),
                np.asarray(cov[f"sample_s{s_}"]["plugin"], np.float64),
                0.01,
                "ci",
                kind="check",
                source="theory",
            )
        )
    out.append(
        Claim(
            f"sample access from counts (sample_z_from_counts, float32) = its float64 NumPy re-implementation "
            f"(reference.sample_z_np: log-ratio of counts + 1/2, delta-method variance, plugin / SIMEX-2) on the "
            f"same counts, the estimates the repetitions above use at s={cfg.sample_s} (SIMEX at s >= 8 with the "
            "plugin as its bias reference, the plugin below with SIMEX-2), first 256 sequences: largest difference "
            "<= 1e-5 (float32 roundings of log-ratios up to ~10, times the SIMEX weights' |3| + |3| + |1| = 7)",
            0.0,
            float(cov["sample_ref_err"]),
            1e-5,
            "abs",
            kind="check",
            source="theory",
        )
    )
    return out


def slope_claims(results: dict, cfg: Config) -> list[Claim]:
    """Queries to reach eps vs n from the measured query counts, slopes decided on 95% bootstrap intervals."""
    out = []
    sl = results["slopes"]
    pool = cfg.slope_pool * cfg.slope_chunks
    where = f"n={cfg.slope_n}, {pool} sequences per n, queries counted in the run, 95% bootstrap CI"
    n_sigma2 = [round(n_ * cfg.sigma**2, 2) for n_ in (min(cfg.slope_n), max(cfg.slope_n))]
    ex = sl["exact"]
    for nm, lab in (("rb", "logit access (RB)"), ("plain", "logit access (plain)")):
        slope = float(sl[nm]["slope"])
        lo, hi = (float(x) for x in sl[nm]["slope_ci"])
        pred = float(loglog_slope(np.asarray(sl["n"], float), np.asarray(ex[f"queries_{nm}"], float)))
        out.append(
            Claim(
                f"{lab}: queries to reach RMSE {cfg.slope_eps} grow like n^(exact slope) = n^{pred:.3f}, the "
                "slope of 2 n Var Z(n) / eps^2 with the exact Var Z(n) of this family (float64 NumPy, the law of L "
                "along the chain on a grid of step 1e-3, within 1e-7 of enumeration at n <= 8; per-step "
                "perturbation slope_delta / sqrt(n), so Var Z(n) moves by the family: the slope is 0.8-1.2, not "
                f"the 1 of the paper's O(n / eps^2), an upper bound claimed below) (log-log slope over {where}; "
                "half-width <= 0.15)",
                pred,
                slope,
                0.15,
                "ci",
                kind="check",
                ci=max(slope - lo, hi - slope) if np.isfinite(lo + hi) else float("inf"),
                n_seeds=pool,
                source="theory",
            )
        )
    for nm, lab, pred, tol, why in (
        ("sample_plugin", "sample access (plugin)", 2.0, 0.4, "the paper's O~(n^2 K / eps^2) at fixed K"),
        ("sample_simex", "sample access (SIMEX)", 2.0, 0.4, "the paper's O~(n^2 K / eps^2) at fixed K"),
        (
            "noisy_plugin",
            f"noisy logits (plugin, sigma={cfg.sigma})",
            2.0,
            0.4,
            f"the n^2 sigma^2 term of the paper's O~((n + n^2 sigma^2) / eps^2): n sigma^2 = {n_sigma2}, the "
            "bias needs r > 1 repeats at every n, so the cost n r grows like n^2",
        ),
        (
            "noisy_simex",
            f"noisy logits (SIMEX-2, sigma={cfg.sigma})",
            2.0,
            0.4,
            f"the n^2 sigma^2 term of the paper's O~((n + n^2 sigma^2) / eps^2) (n sigma^2 = {n_sigma2})",
        ),
    ):
        slope = float(sl[nm]["slope"])
        lo, hi = (float(x) for x in sl[nm]["slope_ci"])
        out.append(
            Claim(
                f"{lab}: queries to reach RMSE {cfg.slope_eps} grow like n^{pred:g} ({why}; log-log slope over "
                f"{where}; half-width <= {tol})",
                pred,
                slope,
                tol,
                "ci",
                kind="paper",
                ci=max(slope - lo, hi - slope) if np.isfinite(lo + hi) else float("inf"),
                n_seeds=pool,
            )
        )
    nn = np.asarray(sl["n"], float)[:, None]
    counts = {  # the access models' query counts per sequence (the paper; s samples or r repeats)
        "plain": 2 * nn,
        "rb": 2 * nn,
        "sample_plugin": (2 * np.asarray(sl["s"], float)[None] + 1) * nn,
        "sample_simex": (2 * np.asarray(sl["s"], float)[None] + 1) * nn,
        "noisy_plugin": 2 * np.asarray(sl["r"], float)[None] * nn,
        "noisy_simex": 2 * np.asarray(sl["r"], float)[None] * nn,
    }
    dev = max(float(np.max(np.abs(np.asarray(sl[nm]["cost"], float) / c - 1))) for nm, c in counts.items())
    out.append(
        Claim(
            "queries per sequence counted in the run = the access models' counts at every n, s, r: n per model "
            "(logit), n sampler calls + 2 s n samples (sample access), 2 r n (noisy logits, r repeats); worst "
            "relative deviation",
            0.0,
            dev,
            0.0,
            "abs",
            kind="check",
        )
    )
    tv_n = np.asarray(ex["tv"], float)  # exact TV per n (the law of L on the grid)
    worst = tv_n * (1 - tv_n)
    for nm in ("rb", "plain"):
        q = np.asarray(sl[nm]["queries"], float)
        cost = np.asarray(sl[nm]["cost"], float)[:, 0]
        ratio = q / (cost * worst / cfg.slope_eps**2)
        out.append(
            upper_bound(
                f"logit access ({nm}): queries to reach RMSE {cfg.slope_eps} <= (measured queries per sequence) "
                "x TV (1 - TV) / eps^2 at every n (the paper's O(n / eps^2) upper bound: Var Z <= TV (1 - TV) for Z "
                "in [0, 1]; worst ratio over n, exact TV of each n)",
                1.0,
                float(np.max(ratio)),
                source="theory",
            )
        )
    return out


def prefix_claims(results: dict, cfg: Config) -> list[Claim]:
    """The estimators at prefix lengths: the errors pool (length-n prefixes of the length-max(slope_n) decodes)
    against the exact values by enumeration; plain vs RB at every prefix length of the slopes."""
    out = []
    tv_true = float(results["exact"]["tv"])
    ref = results["reference"]
    err = results["errors"]
    N = cfg.slope_pool * cfg.pool_chunks
    where = f"length-{cfg.n} prefixes of length-{max(cfg.slope_n)} decodes, {N} sequences"
    for kind in tv.LOGIT_KINDS:
        e = err[f"logit_{kind}"]
        out.append(
            mean_check(
                f"{kind} logit estimator at a prefix length: mean = exact TV ({where}; 95% CI <= 0.02)",
                tv_true,
                e["mean"],
                e["se"],
                0.02,
                N,
            )
        )
        pred = float(ref["var"][kind])
        out.append(
            mean_check(
                f"{kind} logit estimator at a prefix length: Var Z = exact Var Z (enumeration, float64; {where}; "
                "95% CI <= 15% of it)",
                pred,
                e["var"],
                e["var_se"],
                0.15 * pred,
                N,
            )
        )
    for r in cfg.noisy_r:
        for kind in tv.NOISY_KINDS:
            e = err[f"noisy_{kind}_r{r}"]
            out.append(
                mean_check(
                    f"noisy logits (sigma={cfg.sigma}, r={r}) at a prefix length: mean {kind} estimate = its exact "
                    f"expectation (enumeration x Gaussian smoothing, float64; {where}; 95% CI <= 0.03)",
                    float(ref[f"noisy_r{r}"][kind]),
                    e["mean"],
                    e["se"],
                    0.03,
                    N,
                    source="theory" if kind == "plugin" else "reconstruction",
                )
            )
    sl = results["slopes"]
    n_slope = cfg.slope_pool * cfg.slope_chunks
    b = np.asarray(sl["sample_simex"]["bias"], float)[:, -1]  # mean(SIMEX - RB) at the largest s, per n
    se = np.asarray(sl["sample_simex"]["se_bias"], float)[:, -1]
    out.append(
        worst_paired_zero(
            lambda i: (
                f"sample access is consistent: SIMEX at s = {cfg.slope_s[-1]} agrees with RB at every prefix "
                f"length n={cfg.slope_n} (paired mean difference = 0 at the worst n, n={cfg.slope_n[i]}; "
                "Bonferroni 95% CI over the lengths <= 0.01; its bias is O((nK/s)^3))"
            ),
            b,
            se,
            n_slope,
            source="reconstruction",
        )
    )
    b = np.asarray(sl["plain"]["bias"], float).ravel()  # mean(plain - RB) per n, paired on the same sequences
    se = np.asarray(sl["plain"]["se_bias"], float).ravel()
    out.append(
        worst_paired_zero(
            lambda i: (
                f"plain and RB agree at every prefix length n={cfg.slope_n} (both unbiased): paired mean "
                f"difference = 0 at the worst n (n={cfg.slope_n[i]}; Bonferroni 95% CI over the {len(b)} "
                "lengths <= 0.01)"
            ),
            b,
            se,
            n_slope,
        )
    )
    return out


def separation_and_engine_claims(results: dict, cfg: Config) -> list[Claim]:
    """TV vs KL as the supports separate (exact values, estimators' means and spread); the fp32-vs-bf16
    engines' TV and KL estimates against enumeration."""
    out = []
    sep = results["separation"]
    hw = 2 * math.sqrt(math.log(2 / 0.1) / (2 * cfg.sep_m))
    widths = [np.subtract(*np.percentile(np.asarray(x), [95, 5])) for x in sep["tv_est"]]
    out.append(
        upper_bound(
            f"TV estimates' 90% spread <= Hoeffding 90% width at every separation (m={cfg.sep_m})",
            hw,
            max(widths),
            source="theory",
        )
    )
    L = len(cfg.sep_lambda)
    crit = float(stats.t.ppf(1 - 0.025 / L, cfg.sep_reps - 1))  # Bonferroni over the separations
    for name, lab, tol in (("tv", "TV (RB)", 0.01), ("kl", "KL", 0.0)):
        est = np.asarray(sep[f"{name}_est"], float)  # (L, reps)
        exact = np.asarray(sep[name], float)
        # + 1e-4: the float32 rounding of the exact value summed over K^n = 4096 sequences (at lambda = 0 both
        # estimators are exactly 0; at lambda = 16 the RB estimate's spread is ~1e-4 of TV ~ 1)
        se = est.std(1, ddof=1) / math.sqrt(est.shape[1]) + 1e-4 / crit
        i = int(np.argmax(np.abs(est.mean(1) - exact) / se))
        out.append(
            Claim(
                f"{lab} estimator unbiased at every separation lambda={cfg.sep_lambda}: mean of {cfg.sep_reps} "
                f"repetitions (m={cfg.sep_m}) = exact value at the worst lambda ({cfg.sep_lambda[i]}; Bonferroni "
                f"95% CI over the {L} separations"
                + (f" <= {tol})" if tol else " <= max(10% of the exact KL, 0.01 nats); the KL estimator is unbounded)"),
                float(exact[i]),
                float(est[i].mean()),
                tol if tol else max(0.1 * float(exact[i]), 0.01),
                "ci",
                kind="check",
                ci=crit * float(se[i]),
                n_seeds=cfg.sep_reps,
                source="theory",
            )
        )
    tvx = np.append(np.asarray(sep["tv"], float), float(results["exact"]["tv"]))
    klx = np.append(np.asarray(sep["kl"], float), float(results["exact"]["kl"]))
    tvx, klx = tvx[tvx > 1e-6], klx[tvx > 1e-6]  # P = Q (lambda = 0): 0 <= 0, float32 rounding aside
    out.append(
        upper_bound(
            "Pinsker: exact TV <= sqrt(KL / 2) (enumeration) at every separation and for the main pair (worst "
            "ratio TV / sqrt(KL / 2))",
            1.0,
            float(np.max(tvx / np.sqrt(klx / 2))),
            source="theory",
        )
    )
    eng = results["engines"]
    out.append(
        Claim(
            "float32 engine = its float64 NumPy re-implementation from the parameters (64 random sequences; "
            "largest |log-prob| difference <= 2e-5: ~20 float32 roundings of log-probs of size ~8)",
            0.0,
            float(eng["ref_logprob_err"]),
            2e-5,
            "abs",
            kind="check",
            source="theory",
        )
    )
    out.append(
        Claim(
            "bfloat16 engine's rounding (round_bf16, integer ops) = round-to-nearest-even bfloat16 cast "
            "(ml_dtypes) on every parameter: largest difference 0",
            0.0,
            float(eng["bf16_round_err"]),
            0.0,
            "abs",
            kind="check",
        )
    )
    i = list(np.asarray(eng["n"])).index(int(eng["exact_n"]))
    for name, lab, rel, tol_text in (("tv", "RB TV", 0.25, "25% of it"), ("kl", "KL", None, "0.005 nats")):
        pred = float(eng[f"exact_{name}"])
        out.append(
            mean_check(
                f"fp32-vs-bf16 engines: {lab} estimate (m={cfg.tf_m}) = exact {name.upper()} at "
                f"n={int(eng['exact_n'])} (enumeration; 95% CI over sequences; half-width <= {tol_text}"
                + ("; the KL estimator's spread is ~20x the KL itself here)" if rel is None else ")"),
                pred,
                eng[name][i],
                eng[f"{name}_se"][i],
                rel * pred if rel else 0.005,
                cfg.tf_m,
            )
        )
    return out


def ksweep_claims(results: dict, cfg: Config) -> list[Claim]:
    """Sample access vs the vocabulary K at fixed n (none when ``cfg.k_grid`` is empty): the
    log-log slope of the measured queries to reach eps, one per seed (an independent model pair and pool at
    every K), against the paper's exponent 1 in K and against 1 in K - 1 (the noise scale of its sample model,
    mean relative variance (K - 1) / s), each on a 95% bootstrap interval over the seeds."""
    if not cfg.k_grid:
        return []
    K = np.asarray(cfg.k_grid, float)
    q = np.asarray(results["ksweep"]["sample_plugin"]["queries"], float)  # (seeds, K)
    where = (
        f"log-log slope over K={cfg.k_grid}, queries counted in the run, {cfg.k_pool} sequences per K and seed, a "
        "new random Markov pair per K and seed"
        + (f" (padded to {max(cfg.k_grid)} tokens of probability 0: the same law)" if cfg.k_pad else "")
        + "; mean over the seeds, 95% percentile bootstrap CI over the seeds; half-width <= 0.15"
    )
    slope, half, S = bootstrap_ci(loglog_slope(K, q))
    slope1, half1, _ = bootstrap_ci(loglog_slope(K - 1, q))
    k1 = float(loglog_slope(K, K - 1))
    return [
        Claim(
            f"sample access (plugin): queries to reach RMSE {cfg.slope_eps} grow like K^1 at fixed n={cfg.k_n} "
            f"(the paper's O~(n^2 K / eps^2)): {where}",
            1.0,
            slope,
            0.15,
            "ci",
            kind="paper",
            ci=half,
            n_seeds=S,
            expected="fail",
            reason=(
                "the sample model's noise is (K - 1) / s, not K / s (mean relative variance of the estimated "
                f"p_t(x_t)), and K - 1 grows faster than K at small K: its log-log slope over this grid is {k1:.3f}; "
                "the slope in K - 1 (next claim) is 1 within its interval (full preset, K = 2..128: local slopes "
                "in K ~1.45 from K = 2 to 8, 0.9-1.1 above). The paper's O~ is asymptotic in K"
            ),
        ),
        Claim(
            f"sample access (plugin): queries to reach RMSE {cfg.slope_eps} grow like (K - 1)^1 at fixed "
            f"n={cfg.k_n} (the paper's sample model: the estimated p_t(x_t) has mean relative variance (K - 1) / s, "
            f"so s, and the queries, grow like K - 1): {where}",
            1.0,
            slope1,
            0.15,
            "ci",
            kind="check",
            ci=half1,
            n_seeds=S,
            source="theory",
        ),
    ]


def claims(results: dict, cfg: Config) -> list[Claim]:
    return [
        *logit_claims(results, cfg),
        *noisy_claims(results, cfg),
        *interval_claims(results, cfg),
        *prefix_claims(results, cfg),
        *slope_claims(results, cfg),
        *ksweep_claims(results, cfg),
        *separation_and_engine_claims(results, cfg),
    ]
