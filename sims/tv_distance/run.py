"""The simulation ``run``, one stage per study: errors vs queries, repetitions at the Hoeffding m, queries to
reach eps vs n, TV vs KL as the supports separate, and the two engines of one tiny transformer."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.tv_distance.config import Config
from jaxwb.sims.tv_distance.pieces import (
    coverage_reps,
    engine_prefix_stats,
    group_errors,
    markov_pair,
    pooled,
    queries_to_eps,
    separated_pair,
    separation_row,
)
from jaxwb.sims.tv_distance.reference import enumerated_reference
from jaxwb.theory import tv_distance as tv

SLOPE_NAMES = ("plain", "rb", "sample_plugin", "sample_simex", "noisy_plugin", "noisy_simex")


def run_errors(cfg: Config, p, q, tv_true, key) -> dict:
    """Mean |estimate - TV| vs total queries (exact TV by enumeration), every access model."""
    n = cfg.n
    pool = cfg.slope_pool * cfg.pool_chunks
    ms = 2 ** np.arange(0, int(math.log2(pool)) - 3)
    z = pooled(p, q, cfg, n, key, cfg.pool_chunks)
    err = {"m": ms}
    for kind in tv.LOGIT_KINDS:
        err[f"logit_{kind}"] = {
            "queries": 2 * n * ms,
            "error": group_errors(z[kind], float(tv_true), ms),
            "mean": np.mean(z[kind]),
            "var": np.var(z[kind]),
        }
    for kind in tv.NOISY_KINDS:
        for i, s in enumerate(cfg.slope_s):
            if s in cfg.sample_s:
                zz = z[f"sample_{kind}"][i]
                err[f"sample_{kind}_s{s}"] = {
                    "queries": (2 * s + 1) * n * ms,
                    "mean": np.mean(zz),
                    "error": group_errors(zz, float(tv_true), ms),
                }
        for i, r in enumerate(cfg.slope_r):
            if r in cfg.noisy_r:
                zz = z[f"noisy_{kind}"][i]
                err[f"noisy_{kind}_r{r}"] = {
                    "queries": 2 * n * r * ms,
                    "mean": np.mean(zz),
                    "error": group_errors(zz, float(tv_true), ms),
                }
    return err


def run_coverage(cfg: Config, p, q, tv_true, key) -> dict:
    """Repetitions at the Hoeffding m (vmapped): coverage, unbiasedness, variance, CI coverage."""
    m_h = tv.hoeffding_m(cfg.eps, cfg.delta)
    est = coverage_reps(
        p,
        q,
        jnp.float32(cfg.sigma),
        key=key,
        n=cfg.n,
        m=m_h,
        reps=cfg.coverage_reps,
        rs=cfg.noisy_r,
        ss=cfg.sample_s,
    )
    cov = {"m": np.asarray(m_h)}
    for kind in tv.LOGIT_KINDS:
        cov[kind] = {
            "estimates": est[kind]["value"],
            "se": est[kind]["se"],
            "coverage": jnp.mean(jnp.abs(est[kind]["value"] - tv_true) <= cfg.eps),
        }
    for name in [f"noisy_r{r}" for r in cfg.noisy_r] + [f"sample_s{s_}" for s_ in cfg.sample_s]:
        cov[name] = est[name]
    return cov


def slope_costs(sl: dict) -> dict:
    """Queries per sequence of each estimator, (len(n), len(s or r))."""
    nn = sl["n"].astype(float)
    return {
        "plain": 2 * nn[:, None],
        "rb": 2 * nn[:, None],
        "sample_plugin": nn[:, None] * (2 * sl["s"][None, :] + 1),
        "sample_simex": nn[:, None] * (2 * sl["s"][None, :] + 1),
        "noisy_plugin": 2 * nn[:, None] * sl["r"][None, :],
        "noisy_simex": 2 * nn[:, None] * sl["r"][None, :],
    }


def run_slopes(cfg: Config, key) -> dict:
    """Queries to reach eps vs n: paired differences against the RB estimate on the same sequences."""
    kp, k_dir, k_stats = jax.random.split(key, 3)
    base = tv.random_ngram(cfg.K, 1, cfg.scale, key=kp)
    direction = jax.random.normal(k_dir, base.params.shape)
    sl = {"n": np.asarray(cfg.slope_n), "s": np.asarray(cfg.slope_s), "r": np.asarray(cfg.slope_r)}
    acc = {nm: {"mean": [], "var": [], "bias": [], "se_bias": []} for nm in SLOPE_NAMES}
    tv_ref, tv_se = [], []
    for nn in cfg.slope_n:
        qn = tv.perturb(base, cfg.slope_delta / math.sqrt(nn), direction)
        zc = pooled(base, qn, cfg, nn, jax.random.fold_in(k_stats, nn), cfg.slope_chunks)
        rb = zc["rb"]
        tv_ref.append(rb.mean())
        tv_se.append(rb.std() / math.sqrt(rb.size))
        for nm in SLOPE_NAMES:
            zz = zc[nm]
            diff = zz - rb
            acc[nm]["mean"].append(zz.mean(-1))
            acc[nm]["var"].append(zz.var(-1))
            acc[nm]["bias"].append(diff.mean(-1))  # E Z - TV, estimated as a paired difference with RB
            acc[nm]["se_bias"].append(diff.std(-1) / math.sqrt(rb.size))
    sl["tv_ref"], sl["tv_ref_se"] = np.array(tv_ref), np.array(tv_se)
    nn = sl["n"].astype(float)
    costs = slope_costs(sl)
    for nm in SLOPE_NAMES:
        st = {k2: np.array(v2).reshape(len(nn), -1) for k2, v2 in acc[nm].items()}
        st["queries"] = queries_to_eps(st["bias"], st["var"], st["se_bias"], costs[nm], cfg.slope_eps)
        ok = np.isfinite(st["queries"])
        st["slope"] = np.asarray(
            np.polyfit(np.log(nn[ok]), np.log(st["queries"][ok]), 1)[0] if ok.sum() >= 2 else np.nan
        )
        sl[nm] = st
    return sl


def run_separation(cfg: Config, key) -> dict:
    """TV vs KL as the supports separate (exact by enumeration, and the estimators' spread)."""
    k_base, k_rep = jax.random.split(key)
    sep = {"lam": np.asarray(cfg.sep_lambda), "tv": [], "kl": [], "tv_est": [], "kl_est": []}
    rep = jax.random.split(k_rep, cfg.sep_reps)
    for lam in cfg.sep_lambda:
        ps, qs = separated_pair(k_base, cfg.K, cfg.scale, lam)
        sep["tv"].append(tv.exact_tv(ps, qs, cfg.n))
        sep["kl"].append(tv.exact_kl(ps, qs, cfg.n))
        t_est, k_est = separation_row(ps, qs, rep, n=cfg.n, m=cfg.sep_m)
        sep["tv_est"].append(t_est)
        sep["kl_est"].append(k_est)
    return {k2: (jnp.stack(v2) if k2 != "lam" else v2) for k2, v2 in sep.items()}


def run_engines(cfg: Config, k_model, k_decode) -> dict:
    """Two engines (float32, bfloat16) of one tiny transformer: one decode of length max(tf_n), every prefix."""
    n_max = max(cfg.tf_n)
    f32 = tv.random_transformer(cfg.tf_K, n_max, d_model=cfg.tf_d, n_layers=cfg.tf_layers, key=k_model)
    bf16 = tv.with_dtype(f32, "bfloat16")
    z, L = engine_prefix_stats(f32, bf16, key=k_decode, n=n_max, m=cfg.tf_m)
    idx = np.asarray(cfg.tf_n) - 1
    sq = math.sqrt(cfg.tf_m)
    return {
        "n": np.asarray(cfg.tf_n),
        "tv": z.mean(0)[idx],
        "tv_se": z.std(0, ddof=1)[idx] / sq,
        "kl": L.mean(0)[idx],
        "kl_se": L.std(0, ddof=1)[idx] / sq,
        "exact_n": np.asarray(cfg.tf_exact_n),
        "exact_tv": tv.exact_tv(f32, bf16, cfg.tf_exact_n),
        "exact_kl": tv.exact_kl(f32, bf16, cfg.tf_exact_n),
        "self_tv": tv.exact_tv(bf16, bf16, cfg.tf_exact_n),
        "first_token_tv": tv.exact_tv(f32, bf16, 1),
    }


def run(cfg: Config, *, key: jax.Array) -> dict:
    keys = iter(jax.random.split(key, 16))
    p, q = markov_pair(next(keys), cfg.K, cfg.scale, cfg.delta_q)
    tv_true = tv.exact_tv(p, q, cfg.n)
    kl_true = tv.exact_kl(p, q, cfg.n)
    out = {"exact": {"tv": tv_true, "kl": kl_true}}
    out["errors"] = run_errors(cfg, p, q, tv_true, next(keys))
    out["reference"] = enumerated_reference(p, q, cfg.n, cfg.sigma, cfg.noisy_r)
    out["coverage"] = run_coverage(cfg, p, q, tv_true, next(keys))
    out["slopes"] = run_slopes(cfg, next(keys))
    out["separation"] = run_separation(cfg, next(keys))
    k_model, k_decode = next(keys), next(keys)
    out["engines"] = run_engines(cfg, k_model, k_decode)
    return out
