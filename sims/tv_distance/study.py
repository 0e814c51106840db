"""The simulation (``run``) and its pieces: model pairs, pooled per-sequence estimates over (s, r) grids,
the float64 NumPy enumeration reference, Hoeffding coverage, the separation sweep and the two engines."""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special

from jaxwb.sims.tv_distance.config import Config
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


def _smoothed_np(mu, s2):
    """g(mu, s^2) = E (1 - exp(-(mu + s xi)))_+ in float64 NumPy/SciPy: Phi(mu/s) - exp(-mu + s^2/2 +
    log Phi(mu/s - s)). An independent implementation of ``jaxwb.theory.tv_distance.smoothed_z`` for the exact
    expectations below."""
    sd = np.sqrt(s2)
    a = mu / sd
    return scipy.special.ndtr(a) - np.exp(-mu + 0.5 * s2 + scipy.special.log_ndtr(a - sd))


def enumerated_reference(p, q, n: int, sigma: float, rs) -> dict:
    """Exact expectations by enumerating all K^n sequences, in float64 NumPy, sharing nothing with the
    estimators but the models' next-token tables:

      TV = sum_x P (1 - e^-L)_+,  E Z^2 of plain (x ~ P), mixture (|tanh(L/2)|, x ~ (P+Q)/2) and rb
      (sum_v p_n(v) (1 - e^-(L_<n + log p_n(v)/q_n(v)))_+, a function of the prefix: E Z^2 = sum_x P Z^2);
      noisy logits with r repeats (L_hat = L + N(0, v), v = 2 n sigma^2 / r): E plugin = sum_x P g(L, v),
      E SIMEX-2 = sum_x P (3 g(L, v) - 3 g(L, 2v) + g(L, 3v)) since E_eta g(L + eta, k v) = g(L, (k+1) v).
    """
    seqs = tv.all_sequences(p.K, n)
    lp_all = np.asarray(p.all_logprobs(seqs), np.float64)  # (S, n, K)
    lq_all = np.asarray(q.all_logprobs(seqs), np.float64)
    tok = np.asarray(seqs)[..., None]
    lp = np.take_along_axis(lp_all, tok, -1)[..., 0]
    lq = np.take_along_axis(lq_all, tok, -1)[..., 0]
    L = (lp - lq).sum(1)
    P, Q = np.exp(lp.sum(1)), np.exp(lq.sum(1))
    plain = np.maximum(0.0, -np.expm1(-L))
    mix = np.abs(np.tanh(0.5 * L))
    L_prev = L - (lp[:, -1] - lq[:, -1])
    rb = np.sum(
        np.exp(lp_all[:, -1]) * np.maximum(0.0, -np.expm1(-(L_prev[:, None] + lp_all[:, -1] - lq_all[:, -1]))), axis=-1
    )
    ref = {
        "tv": np.sum(P * plain),
        "tv_halfsum": 0.5 * np.sum(np.abs(P - Q)),
        "var": {
            "plain": np.sum(P * plain**2) - np.sum(P * plain) ** 2,
            "mixture": np.sum(0.5 * (P + Q) * mix**2) - np.sum(0.5 * (P + Q) * mix) ** 2,
            "rb": np.sum(P * rb**2) - np.sum(P * rb) ** 2,
        },
    }
    for r in rs:
        v_ = 2.0 * n * sigma**2 / r
        g = [_smoothed_np(L, k * v_) for k in (1, 2, 3)]
        ref[f"noisy_r{r}"] = {"plugin": np.sum(P * g[0]), "simex": np.sum(P * (3 * g[0] - 3 * g[1] + g[2]))}
    return ref


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
def _separation_row(ps, qs, keys, *, n, m):
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


# ---------------------------------------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------------------------------------


def run(cfg: Config, *, key: jax.Array) -> dict:
    keys = iter(jax.random.split(key, 16))
    K, n = cfg.K, cfg.n
    p, q = markov_pair(next(keys), K, cfg.scale, cfg.delta_q)
    tv_true = tv.exact_tv(p, q, n)
    kl_true = tv.exact_kl(p, q, n)
    out = {"exact": {"tv": tv_true, "kl": kl_true}}

    # ---- errors vs queries (exact TV by enumeration) ----
    pool = cfg.slope_pool * cfg.pool_chunks
    ms = 2 ** np.arange(0, int(math.log2(pool)) - 3)
    z = pooled(p, q, cfg, n, next(keys), cfg.pool_chunks)
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
    out["errors"] = err

    # ---- repetitions at the Hoeffding m (vmapped): coverage, unbiasedness, variance, CI coverage ----
    out["reference"] = enumerated_reference(p, q, n, cfg.sigma, cfg.noisy_r)
    m_h = tv.hoeffding_m(cfg.eps, cfg.delta)
    est = coverage_reps(
        p,
        q,
        jnp.float32(cfg.sigma),
        key=next(keys),
        n=n,
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
    out["coverage"] = cov

    # ---- queries to reach eps vs n: paired differences against the RB estimate on the same sequences ----
    kp, k_dir, k_stats = jax.random.split(next(keys), 3)
    base = tv.random_ngram(K, 1, cfg.scale, key=kp)
    direction = jax.random.normal(k_dir, base.params.shape)
    sl = {"n": np.asarray(cfg.slope_n), "s": np.asarray(cfg.slope_s), "r": np.asarray(cfg.slope_r)}
    names = ("plain", "rb", "sample_plugin", "sample_simex", "noisy_plugin", "noisy_simex")
    acc = {nm: {"mean": [], "var": [], "bias": [], "se_bias": []} for nm in names}
    tv_ref, tv_se = [], []
    for nn in cfg.slope_n:
        qn = tv.perturb(base, cfg.slope_delta / math.sqrt(nn), direction)
        zc = pooled(base, qn, cfg, nn, jax.random.fold_in(k_stats, nn), cfg.slope_chunks)
        rb = zc["rb"]
        tv_ref.append(rb.mean())
        tv_se.append(rb.std() / math.sqrt(rb.size))
        for nm in names:
            zz = zc[nm]
            diff = zz - rb
            acc[nm]["mean"].append(zz.mean(-1))
            acc[nm]["var"].append(zz.var(-1))
            acc[nm]["bias"].append(diff.mean(-1))  # E Z - TV, estimated as a paired difference with RB
            acc[nm]["se_bias"].append(diff.std(-1) / math.sqrt(rb.size))
    sl["tv_ref"], sl["tv_ref_se"] = np.array(tv_ref), np.array(tv_se)
    nn = sl["n"].astype(float)
    costs = {
        "plain": 2 * nn[:, None],
        "rb": 2 * nn[:, None],
        "sample_plugin": nn[:, None] * (2 * sl["s"][None, :] + 1),
        "sample_simex": nn[:, None] * (2 * sl["s"][None, :] + 1),
        "noisy_plugin": 2 * nn[:, None] * sl["r"][None, :],
        "noisy_simex": 2 * nn[:, None] * sl["r"][None, :],
    }
    for nm in names:
        st = {k2: np.array(v2).reshape(len(nn), -1) for k2, v2 in acc[nm].items()}
        st["queries"] = queries_to_eps(st["bias"], st["var"], st["se_bias"], costs[nm], cfg.slope_eps)
        ok = np.isfinite(st["queries"])
        st["slope"] = np.asarray(
            np.polyfit(np.log(nn[ok]), np.log(st["queries"][ok]), 1)[0] if ok.sum() >= 2 else np.nan
        )
        sl[nm] = st
    out["slopes"] = sl

    # ---- TV vs KL as supports separate ----
    k_base, k_rep = jax.random.split(next(keys))
    sep = {"lam": np.asarray(cfg.sep_lambda), "tv": [], "kl": [], "tv_est": [], "kl_est": []}
    rep = jax.random.split(k_rep, cfg.sep_reps)
    for lam in cfg.sep_lambda:
        ps, qs = separated_pair(k_base, K, cfg.scale, lam)
        sep["tv"].append(tv.exact_tv(ps, qs, n))
        sep["kl"].append(tv.exact_kl(ps, qs, n))
        t_est, k_est = _separation_row(ps, qs, rep, n=n, m=cfg.sep_m)
        sep["tv_est"].append(t_est)
        sep["kl_est"].append(k_est)
    out["separation"] = {k2: (jnp.stack(v2) if k2 != "lam" else v2) for k2, v2 in sep.items()}

    # ---- two engines of one tiny transformer: one decode of length max(tf_n), every prefix length ----
    n_max = max(cfg.tf_n)
    f32 = tv.random_transformer(cfg.tf_K, n_max, d_model=cfg.tf_d, n_layers=cfg.tf_layers, key=next(keys))
    bf16 = tv.with_dtype(f32, "bfloat16")
    z, L = engine_prefix_stats(f32, bf16, key=next(keys), n=n_max, m=cfg.tf_m)
    idx = np.asarray(cfg.tf_n) - 1
    sq = math.sqrt(cfg.tf_m)
    eng = {
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
    out["engines"] = eng
    return out
