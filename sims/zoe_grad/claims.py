"""zoe_grad: the claims and the mutants that must make them fail (what is measured: the package docstring)."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from jaxwb.sims.core.audit import Mutant
from jaxwb.sims.core.claims import Claim
from jaxwb.sims.zoe_grad.config import ESTIMATORS, GRIDS, KERNEL_ANCHOR_SCALE, MC_LAWS, Config
from jaxwb.theory import zoe_grad as zg


def _n_point_claims(cfg: Config) -> int:
    return len(MC_LAWS) * 3 + 2 + len(MC_LAWS)  # score on INT, two-point on both, 2 moments, 3 kernel


def claims(results: dict, cfg: Config) -> list[Claim]:
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
    if "qat" not in results:
        return out
    q = results["qat"]
    fmt = f"{cfg.qat_format}{cfg.qat_bits if cfg.qat_format == 'int' else ''}"
    control = _ppl(q["fp_ptq"])
    for arm in cfg.qat_surrogates:
        out.append(
            Claim.from_samples(
                f"QAT ({arm}) beats float fine-tuning + PTQ for the same steps: ppl_fp+PTQ - ppl_QAT >= 0 ({fmt}, "
                "paired seeds)",
                0.0,
                control - _ppl(q[arm]),
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
                _ppl(q["ste"]) - _ppl(q[arm]),
                0.0,
                "ge",
                kind="paper",
                source="paper",
            )
        )
    return out


def _ppl(a):
    return np.exp(np.asarray(a, np.float64))


# first: the cheapest (it changes only the kernel check's compiled function; the default suite runs it)
MUTANTS = [
    Mutant(
        "fake_quant_grad_times_scale",
        "jaxwb.pallas_kernels.quant.fake_quant:_surrogate",
        lambda f: lambda z, special, spec: f(z, special, spec) * 1.25,
        "fake_quant's backward off by 25% (a stray chain-rule factor)",
    ),
    Mutant(
        "density_missing_normalisation",
        "jaxwb.theory.zoe_grad:_pdf",
        lambda f: lambda t, law: 1.1 * f(t, law),
        "the perturbation density 10% too large (a dropped normalising constant)",
    ),
    Mutant(
        "boundaries_at_levels",
        "jaxwb.theory.zoe_grad:_boundaries",
        lambda f: lambda levels: levels[..., :-1] + 0.4 * (levels[..., 1:] - levels[..., :-1]),
        "decision boundaries 40% of the way between levels instead of the midpoint",
    ),
    Mutant(
        "logistic_score_without_scale",
        "jaxwb.theory.zoe_grad:_score",
        lambda f: lambda u, law: f(u, law) * (math.sqrt(3) / math.pi if law == "logistic" else 1.0),
        "the logistic score tanh(u/2s)/s without its 1/s",
    ),
    Mutant(
        "fake_quant_scale_doubled",
        "jaxwb.pallas_kernels.quant.fake_quant:_roundtrip",
        lambda f: lambda x, spec: (lambda r: (r[0], 2.0 * r[1], r[2]))(f(x, spec)),
        "the backward's per-element scale doubled (block scale from amax/3 instead of amax/6)",
    ),
]
