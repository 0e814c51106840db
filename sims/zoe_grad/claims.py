"""zoe_grad: the claims and the mutants that must make them fail (what is measured: the package docstring)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxwb.sims.core.claims import Claim
from jaxwb.sims.zoe_grad.config import ESTIMATORS, GRIDS, KERNEL_ANCHOR_SCALE, MC_LAWS, Config
from jaxwb.theory import zoe_grad as zg


def _n_point_claims(cfg: Config) -> int:
    return len(MC_LAWS) * 3 + 2 + len(MC_LAWS)  # score on INT, two-point on both, 2 moments, 3 kernel


def estimator_claims(results: dict, cfg: Config) -> list[Claim]:
    """Monte Carlo means of the score and two-point estimators and the score second moments vs eq. 3 and 7."""
    out = []
    level = 1.0 - 0.05 / _n_point_claims(cfg)  # Bonferroni over the Monte Carlo "ci" claims
    e = results["estimators"]
    for grid in GRIDS:
        g = e[grid]
        x0 = float(g["x"][-1])
        for law in MC_LAWS:
            pred = float(g[law]["closed"][-1])
            peak = float(jnp.max(g[law]["closed"]))
            for est in ESTIMATORS:
                if est == "score" and grid == "e2m1":
                    continue  # |Q| up to 6: the raw score estimator needs ~10x the draws (shown in the figure)
                out.append(
                    Claim.from_samples(
                        f"E[{est} estimator] = closed-form surrogate sum_k D_k p_sigma(b_k - x), {law}, {grid} grid, "
                        f"x={x0:.3g}, sigma={cfg.sigma:g}",
                        pred,
                        np.asarray(g[law][est][:, -1]),
                        0.05 * peak,
                        "ci",
                        kind="check",
                        level=level,
                        source="reconstruction",
                    )
                )
    g = e["int"]
    for law in ("gaussian", "logistic"):
        pred = float(g[law]["second_moment"][-1])
        out.append(
            Claim.from_samples(
                f"E[g1^2] of the score estimator = closed form (eq. 7), {law}, int grid, x={float(g['x'][-1]):.3g}",
                pred,
                np.asarray(g[law]["score_m2"][:, -1]),
                0.05 * pred,
                "ci",
                kind="check",
                level=level,
                source="reconstruction",
            )
        )
    return out


def sweep_claims(results: dict, cfg: Config) -> list[Claim]:
    """The bump sum against the characteristic-function series (eq. 8) across the sigma sweep."""
    out = []
    sw = results["sweep"]
    for law in zg.LAWS:
        at = ("level", "boundary") if law in ("gaussian", "logistic") else ("level",)
        if law == "uniform":
            continue
        err = max(float(jnp.max(jnp.abs(sw[law][a] - sw[law][a + "_pred"]))) for a in at)
        out.append(
            Claim(
                f"sigma sweep: bump sum on a wide INT grid = Poisson/characteristic-function series "
                f"(eq. 8), {law}, max |error| over {len(cfg.sweep_sigmas)} sigmas at {'+'.join(at)}",
                0.0,
                err,
                2e-4,
                "abs",
                kind="check",
                source="reconstruction",
            )
        )
    return out


def kernel_claims(results: dict, cfg: Config) -> list[Claim]:
    """fake_quant's NVFP4 backward against the score estimator's mean through the kernels."""
    out = []
    level = 1.0 - 0.05 / _n_point_claims(cfg)  # Bonferroni over the Monte Carlo "ci" claims
    k = results["kernel"]
    i0 = int(np.argmin(np.abs(np.asarray(k["z"]) - 2.65)))
    for law in MC_LAWS:
        pred = float(k[law]["vjp"][i0])
        out.append(
            Claim.from_samples(
                f"fake_quant nvfp4 custom_vjp ({law}) = E[two-point estimator through the NVFP4 kernels] at "
                f"z={float(k['z'][i0]):.3g}, block scale {KERNEL_ANCHOR_SCALE}",
                pred,
                np.asarray(k[law]["mc"][:, i0]),
                0.05 * float(jnp.max(k[law]["vjp"])),
                "ci",
                kind="check",
                level=level,
                source="reconstruction",
            )
        )
    return out


def toy_claims(results: dict, cfg: Config) -> list[Claim]:
    """The convergence bound (eq. 10) and the bias bound (eq. 9) on the toy objective."""
    out = []
    t = results["toy"]
    lhs = np.asarray(jnp.mean(t["grad_norm_sq"], axis=1))
    out.append(
        Claim.from_samples(
            f"SGD with the ZO surrogate: (1/T) sum E|grad F_sigma|^2 <= 4 (F_0 - E F_T)/(eta T) + 3 mean|b_t|^2 + "
            f"2 L eta mean E|xi_t|^2 (eq. 10, its proof's terms), toy d={cfg.toy_dim}, T={cfg.toy_steps}",
            float(jnp.mean(t["realized_bound"])),
            lhs,
            0.0,
            "le",
            kind="bound",
            source="reconstruction",
        )
    )
    out.append(
        Claim(
            "bias of the surrogate gradient sup_w |Q - Q_sigma| g_sigma <= B = sup|Q - Q_sigma| sup g_sigma (eq. 9)",
            float(t["constants"]["B"]),
            float(t["bias_sup"]),
            0.0,
            "le",
            kind="bound",
            source="reconstruction",
        )
    )
    return out


def qat_claims(results: dict, cfg: Config) -> list[Claim]:
    """QAT of the tiny LM: QAT beats PTQ for every surrogate; the paper's "continuous surrogates beat STE"."""
    out = []
    if "qat" not in results:
        return out
    q = results["qat"]
    fmt = f"{cfg.qat_format}{cfg.qat_bits if cfg.qat_format == 'int' else ''}"
    control = perplexity(q["fp_ptq"])
    for arm in cfg.qat_surrogates:
        out.append(
            Claim.from_samples(
                f"QAT ({arm}) beats float fine-tuning + PTQ for the same steps: ppl_fp+PTQ - ppl_QAT >= 0 ({fmt}, "
                "paired seeds)",
                0.0,
                control - perplexity(q[arm]),
                0.0,
                "ge",
                kind="paper",
                source="reconstruction",
            )
        )
    for arm in cfg.qat_surrogates:
        if arm in ("ste", "uniform"):
            continue
        out.append(
            Claim.from_samples(
                f"continuous surrogate ({arm}) beats STE in QAT: ppl_STE - ppl_{arm} >= 0 ({fmt}, paired seeds; "
                "paper: on LLMs)",
                0.0,
                perplexity(q["ste"]) - perplexity(q[arm]),
                0.0,
                "ge",
                kind="paper",
                source="paper",
            )
        )
    return out


def claims(results: dict, cfg: Config) -> list[Claim]:
    return [
        *estimator_claims(results, cfg),
        *sweep_claims(results, cfg),
        *kernel_claims(results, cfg),
        *toy_claims(results, cfg),
        *qat_claims(results, cfg),
    ]


def perplexity(a):
    """exp of a mean log-loss, in float64."""
    return np.exp(np.asarray(a, np.float64))
