"""Coverage of the interpolation result's Monte-Carlo intervals against the exact recursion.

``docs/papers/interpolation.md`` ("Intervals") decides each full-preset check that fails on whether its interval
is honest: for one (method, B) of the preset, ``replicates`` independent seed sets (keys ``10_000 + r``, none of
them the run's) at a given seed count are each reduced as the run reduces its seeds (mean of ||e_t||^2 over
seeds, bootstrap half-width; ``statistics``), and the coverage is the fraction of replicates whose 95% interval
holds the exact recursion's value, for the iterations to eps and the decay rate on the fit window. Coverage near
95% says a failure is chance; coverage far below it, with the replicate means on one side, says the seeds miss
the heavy tail of ||e_t||^2 (a sampling limit, not a theory error).

    python -m jaxwb.sims.interpolation.coverage sgd:16:2048 nesterov:1:8192 --replicates 20
"""

from __future__ import annotations

import argparse
import json

import jax
import numpy as np
from tqdm import tqdm

from jaxwb.sims.interpolation.config import METHODS, PRESETS, Config
from jaxwb.sims.interpolation.run import NU, mc_plan, problem_key, simulate, theory
from jaxwb.sims.interpolation.statistics import boot_halfwidth, boot_means, fits, hits

REPLICATE_KEY0 = 10_000  # replicate r uses jax.random.key(REPLICATE_KEY0 + r): streams the run never uses


def replicate(th: dict, cfg: Config, method: str, batch_size: int, seeds: int, r: int) -> dict:
    """One replicate seed set: iterations to eps and decay with their bootstrap half-widths, and the exact
    recursion's values (``th``: :func:`run.theory`'s output for ``cfg``)."""
    i, j = METHODS.index(method), list(cfg.batch_sizes).index(batch_size)
    p, ex = th["params"][method], th["curves"][method][j]
    plan = mc_plan(ex, float(p["rho"][j]), cfg.eps, cfg.fit_efolds, cfg.record_points)
    (ta, tb), full_t = plan[0], np.arange(len(ex))
    beta = 0.0 if method == "sgd" else float(p["beta"][j])
    key = jax.random.key(REPLICATE_KEY0 + r)
    errs, _, t = simulate(th["problem"], float(p["lr"][j]), beta, NU[i], key, seeds, batch_size, plan, cfg)
    mean, reps = errs.mean(0), boot_means(errs, cfg.n_boot, np.random.default_rng(r))
    h, d = float(hits(mean, t, cfg.eps)), float(-np.log(fits(mean, t, ta, tb)))
    return {
        "hits": (h, float(boot_halfwidth(h, hits(reps, t, cfg.eps)))),
        "decay": (d, float(boot_halfwidth(d, -np.log(fits(reps, t, ta, tb))))),
        "exact": {"hits": float(hits(ex, full_t, cfg.eps)), "decay": float(-np.log(fits(ex, full_t, ta, tb)))},
    }


def summarise(rows: list[dict]) -> dict:
    """Coverage, the replicate means' mean and its bias in standard errors, per statistic."""
    out = {}
    for k in ("hits", "decay"):
        a = np.array([r[k] for r in rows])
        exact = rows[0]["exact"][k]
        sem = a[:, 0].std(ddof=1) / np.sqrt(len(a))
        out[k] = {
            "exact": exact,
            "covered": int(np.sum(np.abs(a[:, 0] - exact) <= a[:, 1])),
            "replicates": len(a),
            "mean_of_means": float(a[:, 0].mean()),
            "bias_in_sem": float((a[:, 0].mean() - exact) / sem) if sem > 0 else 0.0,
            "median_halfwidth": float(np.median(a[:, 1])),
        }
    return out


def committed_theory(cfg: Config, seed: int = 0) -> dict:
    """:func:`run.theory` on the problem of the run with seed ``seed`` (``run.problem_key``: the preset's
    ``problem_seed`` when it has one)."""
    return theory(cfg, problem_key(cfg, jax.random.key(seed)))


def coverage(method: str, batch_size: int, seeds: int, replicates: int, *, preset: str = "full") -> dict:
    """The coverage study of (``method``, ``batch_size``) at ``seeds`` seeds per replicate on ``preset``'s
    problem (the run's problem key)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    cfg = PRESETS[preset]
    if batch_size not in cfg.batch_sizes:
        raise ValueError(f"batch_size must be one of {cfg.batch_sizes}, got {batch_size}")
    if seeds < 2 or replicates < 2:
        raise ValueError(f"seeds and replicates must be >= 2, got seeds={seeds}, replicates={replicates}")
    th = committed_theory(cfg)
    rows = [
        replicate(th, cfg, method, batch_size, seeds, r)
        for r in tqdm(range(replicates), desc=f"{method} B={batch_size}")
    ]
    return {"method": method, "batch_size": batch_size, "seeds": seeds, **summarise(rows)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("configs", nargs="+", help="METHOD:B:SEEDS, e.g. sgd:16:2048")
    ap.add_argument("--replicates", type=int, default=20)
    ap.add_argument("--preset", default="full", choices=tuple(PRESETS))
    args = ap.parse_args(argv)
    for spec in args.configs:
        m, b, s = spec.split(":")
        print(json.dumps(coverage(m, int(b), int(s), args.replicates, preset=args.preset)), flush=True)


if __name__ == "__main__":
    main()
