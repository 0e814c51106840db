"""The pieces ``run`` assembles: model pairs, pooled per-sequence estimates over (s, r) grids, queries to
reach eps, the Hoeffding-m repetitions, the separation sweep and the two engines' prefix statistics."""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.theory import tv_distance as tv

# ---------------------------------------------------------------------------------------------------------
# Models and pieces
# ---------------------------------------------------------------------------------------------------------


def markov_pair(key, K, scale, delta):
    """P: a random Markov chain (logits N(0, scale^2)); Q: P's log-prob table moved by delta * N(0, 1)."""
    k1, k2 = jax.random.split(key)
    p = tv.random_ngram(K, 1, scale, key=k1)
    return p, tv.perturb(p, delta, key=k2)


def separated_pair(key, K, scale, lam):
    """P pushes the upper half of the vocabulary down by lam, Q the lower half: the supports separate as lam
    grows."""
    base = scale * jax.random.normal(key, (K + 1, K))
    upper = (jnp.arange(K) >= K // 2).astype(jnp.float32)
    return tv.ngram_model(base - lam * upper), tv.ngram_model(base - lam * (1.0 - upper))


def group_errors(z, tv_true, ms):
    """Mean |mean of a group of m - tv_true| over the pool split into groups of m, for each m in ms."""
    z = np.asarray(z, np.float64)
    out = []
    for m in ms:
        g = len(z) // m
        out.append(np.mean(np.abs(z[: g * m].reshape(g, m).mean(1) - tv_true)))
    return np.array(out)


def queries_to_eps(bias, var, se_bias, cost, eps, fine=256):
    """Queries needed for RMSE = eps: min over the cost parameter (s or r) of cost * var / (eps^2 - bias^2).

    bias, var, se_bias, cost: (..., P) over a geometric grid of the parameter; they are interpolated linearly
    in log(parameter) on a ``fine`` grid (so the minimum does not jump with the grid spacing). Only points
    whose bias is resolved below eps count: |bias| + 2 se(bias) < eps. NaN if no point qualifies.
    """
    bias, var, se_bias, cost = np.broadcast_arrays(
        *(np.atleast_2d(np.asarray(a, float)) for a in (bias, var, se_bias, cost))
    )
    out = np.full(bias.shape[0], np.nan)
    P = bias.shape[1]
    x, xf = np.arange(P), np.linspace(0, P - 1, fine if P > 1 else 1)
    for i in range(bias.shape[0]):
        b, v_, se, c = (np.interp(xf, x, a[i]) for a in (bias, var, se_bias, np.log(cost)))
        ok = np.abs(b) + 2 * se < eps
        if ok.any():
            out[i] = np.min(np.exp(c[ok]) * v_[ok] / (eps**2 - b[ok] ** 2))
    return out


@partial(jax.jit, static_argnames=("n", "m"))
def pool_z(p, q, s_grid, r_grid, sigma, length, *, key, n, m):
    """Per-sequence estimates of every estimator for the length-``length`` prefixes (length <= n, traced, so
    every length shares one compilation) from two decodes (x ~ P and x ~ (P+Q)/2): plain, rb, mixture (m,);
    sample_<kind> (len(s_grid), m); noisy_<kind> (len(r_grid), m)."""
    k_dec, k_mix, k_src, k_s, k_r = jax.random.split(key, 5)
    d = tv.decode(p, q, jnp.zeros((m,), bool), key=k_dec, n=n, m=m, keep_all=True)
    dm = tv.decode(p, q, jax.random.bernoulli(k_src, 0.5, (m,)), key=k_mix, n=n, m=m)
    out = {kind: tv.logit_z_from_decoded(d if kind != "mixture" else dm, kind, length) for kind in tv.LOGIT_KINDS}
    mask = (jnp.arange(n) < length).astype(jnp.float32)
    counts = jax.vmap(lambda s: tv.sample_counts(d, s, key=k_s))(s_grid)
    for kind in tv.NOISY_KINDS:
        out[f"sample_{kind}"] = jax.vmap(
            lambda cp, cq, s, kind=kind: tv.sample_z_from_counts(cp, cq, s, kind, mask=mask)
        )(counts[0], counts[1], s_grid)
        out[f"noisy_{kind}"] = jax.vmap(
            lambda r, kind=kind: tv.noisy_z_from_decoded(d, sigma, r, key=k_r, kind=kind, length=length)
        )(r_grid)
    return out


def pooled(p, q, cfg, length, key, chunks):
    """``pool_z`` over ``chunks`` chunks of cfg.slope_pool sequences, concatenated (float64 NumPy)."""
    n_max = max(cfg.slope_n)
    outs = [
        pool_z(
            p,
            q,
            jnp.asarray(cfg.slope_s, jnp.float32),
            jnp.asarray(cfg.slope_r, jnp.float32),
            jnp.float32(cfg.sigma),
            jnp.int32(length),
            key=k,
            n=n_max,
            m=cfg.slope_pool,
        )
        for k in jax.random.split(key, chunks)
    ]
    return {nm: np.concatenate([np.asarray(o[nm], np.float64) for o in outs], axis=-1) for nm in outs[0]}


@partial(jax.jit, static_argnames=("n", "m", "reps", "rs", "ss"))
def coverage_reps(p, q, sigma, *, key, n, m, reps, rs, ss):
    """``reps`` independent repetitions of m sequences each (one decode of reps * m sequences, reshaped): the
    three logit estimates, the noisy estimates (plugin and the default SIMEX-2 with its bias estimate against
    the plugin on the same noise) for each r in rs, and the sample estimate with the default kind ("auto")
    and its bias estimate (``lower_order``) for each s in ss. Per repetition: value, se (std / sqrt(m)),
    bias, each (reps,)."""
    k1, k2, k3, k4, k5 = jax.random.split(key, 5)
    B = reps * m
    d = tv.decode(p, q, jnp.zeros((B,), bool), key=k1, n=n, m=B)
    dm = tv.decode(p, q, jax.random.bernoulli(k2, 0.5, (B,)), key=k3, n=n, m=B)
    sq = math.sqrt(m)
    per = lambda z: z.reshape(reps, m)
    summ = lambda z: {"value": per(z).mean(1), "se": per(z).std(1, ddof=1) / sq}
    out = {kind: summ(tv.logit_z_from_decoded(dm if kind == "mixture" else d, kind)) for kind in tv.LOGIT_KINDS}
    for r in rs:
        zp = tv.noisy_z_from_decoded(d, sigma, float(r), key=k4, kind="plugin")
        z2 = tv.noisy_z_from_decoded(d, sigma, float(r), key=k4, kind="simex", order=2)
        ref_kind, ref_order = tv.lower_order("simex", 2)
        zr = tv.noisy_z_from_decoded(d, sigma, float(r), key=k4, kind=ref_kind, order=ref_order)
        out[f"noisy_r{r}"] = {"plugin": per(zp).mean(1), **summ(z2), "bias": jnp.abs(per(z2 - zr).mean(1))}
    for s_ in ss:
        kind = tv.resolve_sample_kind("auto", s_)
        z = tv.sample_z_from_decoded(d, float(s_), key=k5, kind=kind)
        ref_kind, ref_order = tv.lower_order(kind, 2)
        zr = tv.sample_z_from_decoded(d, float(s_), key=k5, kind=ref_kind, order=ref_order)
        out[f"sample_s{s_}"] = {**summ(z), "bias": jnp.abs(per(z - zr).mean(1))}
    return out


@partial(jax.jit, static_argnames=("n", "m"))
def separation_row(ps, qs, keys, *, n, m):
    def one(k):
        d = tv.decode(ps, qs, jnp.zeros((m,), bool), key=k, n=n, m=m)
        return tv.logit_z_from_decoded(d, "rb").mean(), jnp.sum(d.lp - d.lq, 1).mean()

    return jax.vmap(one)(keys)


@partial(jax.jit, static_argnames=("n", "m"))
def engine_prefix_stats(p, q, *, key, n, m):
    """One decode of length n (x ~ P) gives every prefix length k = 1..n: RB estimates Z_k and log-ratios
    L_k (both (m, n)); the full next-token distributions come from one teacher-forced pass per engine."""
    d = tv.decode(p, q, jnp.zeros((m,), bool), key=key, n=n, m=m)
    lp_all, lq_all = p.all_logprobs(d.tokens), q.all_logprobs(d.tokens)  # (m, n, K)
    L = jnp.cumsum(d.lp - d.lq, axis=1)
    L_prev = L - (d.lp - d.lq)
    z = jnp.sum(jnp.exp(lp_all) * tv.plain_z(L_prev[..., None] + lp_all - lq_all), axis=-1)
    return z, L
