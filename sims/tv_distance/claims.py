"""Claims of the tv_distance result (kinds and intervals: the ``jaxwb.sims.tv_distance`` docstring)."""

from __future__ import annotations

import math

import numpy as np

from jaxwb.sims.core.claims import Claim, mean_ci
from jaxwb.sims.tv_distance.config import Config
from jaxwb.sims.tv_distance.statistics import binomial_ci, ci_hits
from jaxwb.theory import tv_distance as tv

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
    for kind in tv.LOGIT_KINDS:
        frac = float(cov[kind]["coverage"])
        out.append(
            Claim(
                f"Hoeffding: coverage of |T - TV| <= {cfg.eps} at the Hoeffding m(eps, delta), {kind} "
                f"estimator >= 1 - delta ({R} repetitions; conservative by design, the checks below can "
                "fail)",
                1 - cfg.delta,
                frac,
                0.0,
                "ge",
                kind="bound",
                ci=0.0,
                n_seeds=R,
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
    var_rb = None
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
        if kind == "rb":
            var_rb = c
    out.append(
        Claim(
            "Rao-Blackwellised variance (measured, whole CI) <= plain variance (exact)",
            float(ref["var"]["plain"]),
            var_rb.measured,
            0.0,
            "le",
            kind="bound",
            ci=var_rb.ci,
            n_seeds=var_rb.n_seeds,
            source="theory",
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
        plug = np.asarray(rep["plugin"], np.float64)
        mean, half, _ = mean_ci(plug)
        out.append(
            Claim(
                f"noisy-logit plugin |bias| <= sigma sqrt(2n/r) (sigma={cfg.sigma}, r={r}; the spec's "
                "worst-case bound, loose here: the check above is the sharp test)",
                float(tv.noisy_plugin_bias_bound(cfg.sigma, cfg.n, r)),
                abs(mean - tv_true),
                0.0,
                "le",
                kind="bound",
                ci=half,
                n_seeds=R,
            )
        )
    r0 = cfg.noisy_r[0]
    simex = np.asarray(cov[f"noisy_r{r0}"]["value"], np.float64)
    cs_mean, cs_ci, _ = mean_ci(simex)
    out.append(
        Claim(
            f"SIMEX noisy-logit |bias| (measured, whole CI) <= plugin |bias| (exact) (sigma={cfg.sigma}, r={r0})",
            abs(float(ref[f"noisy_r{r0}"]["plugin"]) - tv_true),
            abs(cs_mean - tv_true),
            0.0,
            "le",
            kind="bound",
            ci=cs_ci,
            n_seeds=R,
            source="reconstruction",
        )
    )
    return out


def interval_claims(results: dict, cfg: Config) -> list[Claim]:
    """The stated 95% intervals (Estimate.halfwidth) cover the exact TV."""
    out = []
    tv_true = float(results["exact"]["tv"])
    cov = results["coverage"]
    R = cfg.coverage_reps
    # stated 95% intervals cover the exact TV (logit: z stderr; noisy/sample: z stderr + |bias estimate|)
    cov_names = (
        [("rb", "logit RB")]
        + [(f"noisy_r{r}", f"noisy SIMEX-2 r={r}") for r in cfg.noisy_r]
        + [(f"sample_s{s_}", f"sample s={s_} ({tv.resolve_sample_kind('auto', s_)})") for s_ in cfg.sample_s]
    )
    for name, label in cov_names:
        rep = cov[name] if name != "rb" else {"value": cov["rb"]["estimates"], "se": cov["rb"]["se"]}
        frac, half, N = binomial_ci(ci_hits(rep, tv_true))
        out.append(
            Claim(
                f"{label}: the stated 95% interval (Estimate.halfwidth) covers the exact TV in >= 90% of "
                f"{R} repetitions at the Hoeffding m (whole binomial CI; 0.05 below 0.95 for the normal "
                "approximation)",
                0.95,
                frac,
                0.05,
                "ge",
                kind="check",
                ci=half,
                n_seeds=N,
            )
        )
    return out


def slope_claims(results: dict, cfg: Config) -> list[Claim]:
    """Queries to reach eps grow like n (logit access) and n^2 (sample access)."""
    out = []
    sl = results["slopes"]
    for nm, lab, pred in (
        ("rb", "logit access (RB)", 1.0),
        ("plain", "logit access (plain)", 1.0),
        ("sample_plugin", "sample access (plugin)", 2.0),
        ("sample_simex", "sample access (SIMEX)", 2.0),
    ):
        out.append(
            Claim(
                f"{lab}: queries to reach eps grow like n^{pred:g} (log-log slope over n={cfg.slope_n}; "
                f"one pool of {cfg.slope_pool * cfg.slope_chunks} sequences per n)",
                pred,
                float(sl[nm]["slope"]),
                0.3,
                "abs",
                kind="check",
            )
        )
    return out


def separation_and_engine_claims(results: dict, cfg: Config) -> list[Claim]:
    """The TV estimates' spread at every separation; the fp32-vs-bf16 engines' RB estimate."""
    out = []
    sep = results["separation"]
    hw = 2 * math.sqrt(math.log(2 / 0.1) / (2 * cfg.sep_m))
    widths = [np.subtract(*np.percentile(np.asarray(x), [95, 5])) for x in sep["tv_est"]]
    out.append(
        Claim(
            f"TV estimates' 90% spread <= Hoeffding 90% width at every separation (m={cfg.sep_m})",
            hw,
            max(widths),
            0.0,
            "le",
            kind="bound",
            source="theory",
        )
    )
    eng = results["engines"]
    i = list(np.asarray(eng["n"])).index(int(eng["exact_n"]))
    out.append(
        Claim(
            f"fp32-vs-bf16 engines: RB estimate (m={cfg.tf_m}) = exact TV at n={int(eng['exact_n'])} "
            "(95% CI over sequences; half-width <= 0.05)",
            float(eng["exact_tv"]),
            float(eng["tv"][i]),
            0.05,
            "ci",
            kind="check",
            ci=1.96 * float(eng["tv_se"][i]),
            n_seeds=cfg.tf_m,
            source="theory",
        )
    )
    return out


def claims(results: dict, cfg: Config) -> list[Claim]:
    return [
        *logit_claims(results, cfg),
        *noisy_claims(results, cfg),
        *interval_claims(results, cfg),
        *slope_claims(results, cfg),
        *separation_and_engine_claims(results, cfg),
    ]
