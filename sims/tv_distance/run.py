"""The simulation ``run``, one stage per study: errors vs queries, repetitions at the Hoeffding m, queries to
reach eps vs n, TV vs KL as the supports separate, and the two engines of one tiny transformer."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.tv_distance.config import Config
from jaxwb.sims.tv_distance.pieces import (
    bootstrap_slopes,
    coverage_reps,
    coverage_sample,
    engine_prefix_stats,
    group_errors,
    markov_pair,
    pad_vocab,
    pool_chunk,
    pooled,
    sample_counts_np,
    separated_pair,
    separation_row,
    slope_stats,
)
from jaxwb.sims.tv_distance.reference import (
    enumerated_reference,
    logit_moments_np,
    sample_plugin_mean_np,
    sample_z_np,
    transformer_logprobs_np,
)
from jaxwb.theory import tv_distance as tv

SLOPE_NAMES = ("plain", "rb", "sample_plugin", "sample_simex", "noisy_plugin", "noisy_simex")


def run_errors(cfg: Config, p, q, tv_true, key) -> dict:
    """Mean |estimate - TV| vs total queries (exact TV by enumeration), every access model, on the length-n
    prefixes of the length-max(slope_n) decodes (the prefix path of the slopes' program): per estimator the
    measured queries, the error curve, and the pool's mean with its standard error (and Var Z with its
    standard error for the logit kinds)."""
    n = cfg.n
    pool = cfg.slope_pool * cfg.pool_chunks
    ms = 2 ** np.arange(0, int(math.log2(pool)) - 3)
    z = pooled(p, q, cfg, n, key, cfg.pool_chunks)
    err: dict[str, Any] = {"m": ms}
    per_seq = {"logit": z["logit_queries"].mean(), "sample": z["sample_queries"].mean(-1)}
    per_seq["noisy"] = z["noisy_queries"].mean(-1)
    sq = math.sqrt(z["rb"].size)
    for kind in tv.LOGIT_KINDS:
        zz = z[kind]
        err[f"logit_{kind}"] = {
            "queries": per_seq["logit"] * ms,
            "error": group_errors(zz, float(tv_true), ms),
            "mean": np.mean(zz),
            "se": np.std(zz, ddof=1) / sq,
            "var": np.var(zz),
            "var_se": np.std((zz - zz.mean()) ** 2, ddof=1) / sq,
        }
    # Var(plain) - Var(RB) on the same sequences: the mean of w = (plain - mean)^2 - (rb - mean)^2
    w = (z["plain"] - z["plain"].mean()) ** 2 - (z["rb"] - z["rb"].mean()) ** 2
    err["rb_var_gain"] = {"mean": w.mean(), "se": w.std(ddof=1) / sq}
    for kind in tv.NOISY_KINDS:
        for access, grid, keep, tag in (
            ("sample", cfg.slope_s, cfg.sample_s, "s"),
            ("noisy", cfg.slope_r, cfg.noisy_r, "r"),
        ):
            for i, x in enumerate(grid):
                if x in keep:
                    zz = z[f"{access}_{kind}"][i]
                    err[f"{access}_{kind}_{tag}{x}"] = {
                        "queries": per_seq[access][i] * ms,
                        "mean": np.mean(zz),
                        "se": np.std(zz, ddof=1) / sq,
                        "error": group_errors(zz, float(tv_true), ms),
                    }
    return err


def run_coverage(cfg: Config, p, q, tv_true, key) -> dict:
    """Repetitions at the Hoeffding m (vmapped): coverage, unbiasedness, variance, CI coverage."""
    m_h = tv.hoeffding_m(cfg.eps, cfg.delta)
    k_main, k_s = jax.random.split(key)
    est, lp, lq = coverage_reps(
        p, q, jnp.float32(cfg.sigma), key=k_main, n=cfg.n, m=m_h, reps=cfg.coverage_reps, rs=cfg.noisy_r
    )
    rng = np.random.default_rng(np.asarray(jax.random.key_data(k_s)).ravel().tolist())
    c, _ = sample_counts_np(lp, lq, cfg.sample_s, cfg.n, rng)
    est.update(coverage_sample(jnp.asarray(c), m=m_h, reps=cfg.coverage_reps, ss=cfg.sample_s))
    cov: dict[str, Any] = {"m": np.asarray(m_h), "sample_ref_err": sample_reference_error(est, c, cfg.sample_s)}
    lp, lq = np.asarray(p.params, np.float64), np.asarray(q.params, np.float64)
    # the plugin's exact expectation under sample access at each s (float64 NumPy, the law along the chain)
    cov["sample_plugin_exact"] = np.asarray([sample_plugin_mean_np(lp, lq, cfg.n, s_) for s_ in cfg.sample_s])
    for kind in tv.LOGIT_KINDS:
        cov[kind] = {
            "estimates": est[kind]["value"],
            "se": est[kind]["se"],
            "coverage": jnp.mean(jnp.abs(est[kind]["value"] - tv_true) <= cfg.eps),
        }
    for name in [f"noisy_r{r}" for r in cfg.noisy_r] + [f"sample_s{s_}" for s_ in cfg.sample_s]:
        cov[name] = est[name]
    return cov


def sample_reference_error(est: dict, c, ss) -> np.ndarray:
    """Largest |difference| between the sample estimates the repetitions use (``coverage_sample``'s z_head and
    zr_head, popped from ``est``: the auto kind and its bias reference, float32 JAX) and ``sample_z_np`` (float64
    NumPy) on the same counts c (len(ss), 2, N, n): SIMEX with the plugin as reference at s >= 8, the plugin
    with SIMEX-2 below (the documented rule of ``resolve_sample_kind`` and ``lower_order``)."""
    err = 0.0
    for i, s_ in enumerate(ss):
        e = est[f"sample_s{s_}"]
        z, zr = np.asarray(e.pop("z_head"), np.float64), np.asarray(e.pop("zr_head"), np.float64)
        kinds = ("simex", "plugin") if s_ >= 8 else ("plugin", "simex")
        for got, kind in zip((z, zr), kinds, strict=True):
            ref = sample_z_np(c[i, 0, : len(got)], c[i, 1, : len(got)], float(s_), kind)
            err = max(err, float(np.max(np.abs(got - ref))))
    return np.asarray(err)


def run_slopes(cfg: Config, key) -> dict:
    """Queries to reach eps vs n: per n one pool of x ~ P (independent across n), paired differences against
    the RB estimate on the same sequences; queries from the counts measured in the pool (``pool_chunk``); the
    log-log slopes with 95% bootstrap intervals over the sequences (``bootstrap_slopes``: one resample serves
    every estimator); the slopes' exact Var Z and TV per n (``slope_reference``)."""
    kp, k_dir, k_stats = jax.random.split(key, 3)
    base = tv.random_ngram(cfg.K, 1, cfg.scale, key=kp)
    direction = jax.random.normal(k_dir, base.params.shape)
    sl: dict[str, Any] = {"n": np.asarray(cfg.slope_n), "s": np.asarray(cfg.slope_s), "r": np.asarray(cfg.slope_r)}
    z: dict[str, list[np.ndarray]] = {nm: [] for nm in SLOPE_NAMES}
    cost: dict[str, list[np.ndarray]] = {nm: [] for nm in SLOPE_NAMES}
    for nn in cfg.slope_n:
        qn = tv.perturb(base, cfg.slope_delta / math.sqrt(nn), direction)
        zc = pooled(base, qn, cfg, nn, jax.random.fold_in(k_stats, nn), cfg.slope_chunks)
        for nm in SLOPE_NAMES:
            z[nm].append(zc[nm].reshape(-1, zc["rb"].size))
            access = nm.split("_")[0]
            q_seq = zc["logit_queries"][None] if access in ("plain", "rb") else zc[f"{access}_queries"]
            cost[nm].append(q_seq.mean(-1))
    rb = np.stack(z["rb"])[:, 0]  # (N, M)
    sl["tv_ref"], sl["tv_ref_se"] = rb.mean(-1), rb.std(-1) / math.sqrt(rb.shape[-1])
    zs = {nm: np.stack(z[nm]) for nm in SLOPE_NAMES}  # (N, P, M)
    costs = {nm: np.stack(cost[nm]) for nm in SLOPE_NAMES}  # (N, P)
    cis = bootstrap_slopes(zs, rb, costs, cfg.slope_eps, sl["n"], seed=0)
    for nm in SLOPE_NAMES:
        st = slope_stats(zs[nm], rb, costs[nm], cfg.slope_eps, sl["n"])
        st["cost"] = costs[nm]
        st["slope_ci"] = np.asarray(cis[nm])
        sl[nm] = st
    sl["exact"] = slope_reference(base, direction, cfg)
    return sl


def slope_reference(base, direction, cfg: Config) -> dict:
    """The slopes' family at every n of slope_n without sampling (``reference.logit_moments_np``, float64 NumPy,
    the law of L along the chain on a grid): TV, Var Z of the plain and RB estimators (N,) each, and the
    queries to reach RMSE slope_eps they imply for logit access, 2 n Var Z / eps^2 (2n counted queries per
    sequence, no bias)."""
    per_n: dict[str, list[Any]] = {"tv": [], "var_plain": [], "var_rb": []}
    lp = np.asarray(base.params, np.float64)
    for nn in cfg.slope_n:
        qn = tv.perturb(base, cfg.slope_delta / math.sqrt(nn), direction)
        mom = logit_moments_np(lp, np.asarray(qn.params, np.float64), nn)
        for k in per_n:
            per_n[k].append(mom[k])
    out = {k: np.asarray(v) for k, v in per_n.items()}
    ns = np.asarray(cfg.slope_n, float)
    for kind in ("plain", "rb"):
        out[f"queries_{kind}"] = 2 * ns * out[f"var_{kind}"] / cfg.slope_eps**2
    return out


def run_ksweep(cfg: Config, key) -> dict:
    """Queries to reach RMSE slope_eps vs the vocabulary K at fixed n = k_n (the K of the paper's sample-access
    O~(n^2 K / eps^2)): for each of k_seeds seeds and each K in k_grid an independent random Markov pair (the
    slopes' family: P's logits N(0, scale^2), Q = P moved by slope_delta / sqrt(k_n) * N(0, 1)) and one pool of
    k_pool sequences x ~ P (``pool_chunk``: one compiled program per K, the seeds reuse it; with k_pad both
    models padded to max(k_grid) tokens of probability 0, ``pad_vocab``: one program for every K), the s grid k_s.
    Returns K (NK,), s (P,); per seed and K: queries (S, NK) for rb (logit access), sample_plugin and
    sample_simex, from the measured counts; tv (S, NK), the RB mean; sample_plugin/bias (S, NK, P),
    mean(plugin - RB) paired on the sequences."""
    kcfg = dataclasses.replace(
        cfg, slope_s=cfg.k_s, sample_s=cfg.k_s[:1], slope_r=(1,), noisy_r=(1,), slope_pool=cfg.k_pool
    )
    names = ("rb", "sample_plugin", "sample_simex")
    rows: dict[str, list[np.ndarray]] = {nm: [] for nm in (*names, "tv", "bias")}
    for j in range(cfg.k_seeds):
        row: dict[str, list[Any]] = {nm: [] for nm in rows}
        for K in cfg.k_grid:
            kp, kq, kz = jax.random.split(jax.random.fold_in(jax.random.fold_in(key, j), K), 3)
            p = tv.random_ngram(K, 1, cfg.scale, key=kp)
            q = tv.perturb(p, cfg.slope_delta / math.sqrt(cfg.k_n), key=kq)
            if cfg.k_pad:  # the same law over max(k_grid) tokens: one compiled program for every K
                p, q = pad_vocab(p, max(cfg.k_grid)), pad_vocab(q, max(cfg.k_grid))
            z = pool_chunk(p, q, kcfg, cfg.k_n, kz, cfg.k_n, cfg.k_pool)
            cost = {"rb": z["logit_queries"].mean(keepdims=True), "sample": z["sample_queries"].mean(-1)}
            for nm in names:
                zz = z[nm][None] if nm == "rb" else z[nm]  # (P, M)
                st = slope_stats(zz[None], z["rb"][None], cost[nm.split("_")[0]][None], cfg.slope_eps, [K])
                row[nm].append(float(st["queries"][0]))
                if nm == "sample_plugin":
                    row["bias"].append(st["bias"][0])
            row["tv"].append(z["rb"].mean())
        for nm in rows:
            rows[nm].append(np.stack(row[nm]))
    out: dict[str, Any] = {"K": np.asarray(cfg.k_grid), "s": np.asarray(cfg.k_s), "tv": np.stack(rows["tv"])}
    out.update({nm: {"queries": np.stack(rows[nm])} for nm in names})
    out["sample_plugin"]["bias"] = np.stack(rows["bias"])
    return out


def run_separation(cfg: Config, key) -> dict:
    """TV vs KL as the supports separate (exact by enumeration, and the estimators' spread)."""
    k_base, k_rep = jax.random.split(key)
    sep: dict[str, Any] = {"lam": np.asarray(cfg.sep_lambda), "tv": [], "kl": [], "tv_est": [], "kl_est": []}
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
    z, L, tokens, lp = engine_prefix_stats(f32, bf16, key=k_decode, n=n_max, m=cfg.tf_m)
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
        **engine_references(f32, tokens, lp),
    }


def engine_references(f32, tokens, lp) -> dict:
    """The engines against independent implementations: ref_logprob_err, the largest |log-prob| difference
    between the float32 engine's log-probs ``lp`` (64, n, K) on decoded ``tokens`` (64, n) and its float64
    NumPy re-implementation (``transformer_logprobs_np``); bf16_round_err, the largest difference between
    ``round_bf16`` of the parameters and their round-to-nearest-even bfloat16 cast by ml_dtypes (NumPy)."""
    ref = transformer_logprobs_np(f32.params, tokens, dict(f32.opts)["n_heads"])
    x = np.concatenate([np.asarray(a, np.float32).ravel() for a in jax.tree.leaves(f32.params)])
    return {
        "ref_logprob_err": np.max(np.abs(np.asarray(lp, np.float64) - ref)),
        "bf16_round_err": np.max(np.abs(np.asarray(tv.round_bf16(x)) - x.astype(jnp.bfloat16).astype(np.float32))),
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
    if cfg.k_grid:  # after the other stages: their keys do not depend on whether the sweep runs
        out["ksweep"] = run_ksweep(cfg, next(keys))
    return out
