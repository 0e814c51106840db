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


def pad_vocab(model, K_pad: int, *, floor: float = -1e4):
    """The Markov model over K_pad >= K tokens with the law of ``model`` (an order-1 n-gram over K tokens): its
    log-prob table (K+1, K) placed in a (K_pad+1, K_pad) one, the extra tokens K..K_pad-1 at log-prob ``floor``
    (exp underflows to exactly 0 in float32, so they are never drawn and add 0 to every sum over the vocabulary),
    the start context moved from row K to row K_pad, the never-reached contexts K..K_pad-1 given the start row.
    Lets models of different K share one compiled program (``run.run_ksweep`` with ``k_pad``)."""
    t = model.params
    K = model.K
    if t.shape != (K + 1, K):
        raise ValueError(f"model must be an order-1 n-gram over K tokens (table (K+1, K)), got {t.shape}")
    if not isinstance(K_pad, int) or K_pad < K:
        raise ValueError(f"K_pad must be an integer >= K={K}, got {K_pad!r}")
    rows = jnp.concatenate([t[:K], jnp.broadcast_to(t[K], (K_pad + 1 - K, K))])  # (K_pad+1, K)
    return tv.ngram_model(jnp.concatenate([rows, jnp.full((K_pad + 1, K_pad - K), floor, rows.dtype)], axis=1))


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

    bias, var, se_bias, cost: (..., P) over a geometric grid of the parameter (broadcast; any leading batch
    axes, e.g. bootstrap resamples and n); they are interpolated linearly in log(parameter) on a ``fine`` grid
    (so the minimum does not jump with the grid spacing). Only points whose bias is resolved below eps count:
    |bias| + 2 se(bias) < eps. Returns (...,), NaN where no point qualifies.
    """
    bias, var, se_bias, cost = np.broadcast_arrays(
        *(np.atleast_2d(np.asarray(a, float)) for a in (bias, var, se_bias, cost))
    )
    P = bias.shape[-1]
    if P == 1:
        fb, fv, fse, fc = bias, var, se_bias, np.log(cost)
    else:
        xf = np.linspace(0, P - 1, fine)
        i0 = np.minimum(np.floor(xf).astype(int), P - 2)
        w = xf - i0
        lerp = lambda a: a[..., i0] * (1 - w) + a[..., i0 + 1] * w
        fb, fv, fse, fc = lerp(bias), lerp(var), lerp(se_bias), lerp(np.log(cost))
    ok = np.abs(fb) + 2 * fse < eps
    q = np.where(ok, np.exp(fc) * fv / np.where(ok, eps**2 - fb**2, 1.0), np.inf)
    out = q.min(axis=-1)
    return np.where(np.isfinite(out), out, np.nan)


def loglog_slope(n, q):
    """Least-squares slope of log q against log n over the finite entries: n (N,), q (..., N) -> (...,); NaN
    with fewer than two finite entries."""
    x = np.broadcast_to(np.log(np.asarray(n, float)), np.shape(q))
    y = np.log(np.asarray(q, float))
    w = np.isfinite(y)
    cnt = w.sum(-1)
    y0 = np.where(w, y, 0.0)
    xm = (x * w).sum(-1) / np.maximum(cnt, 1)
    ym = y0.sum(-1) / np.maximum(cnt, 1)
    dx = np.where(w, x - xm[..., None], 0.0)
    num = (dx * (y0 - ym[..., None])).sum(-1)
    den = (dx * dx).sum(-1)
    return np.where(cnt >= 2, num / np.where(den > 0, den, 1.0), np.nan)


def slope_stats(z, rb, cost, eps, n):
    """Per n and parameter (s or r): mean, variance, bias against the RB estimate on the same sequences and
    its standard error, queries to reach eps and the log-log slope over n.

    z (..., N, P, M): per-sequence estimates (N lengths, P parameter values, M sequences); rb (..., N, M);
    cost (N, P): measured queries per sequence. Leading axes (bootstrap resamples) are kept."""
    M = z.shape[-1]
    diff = z - rb[..., None, :]
    st = {
        "mean": z.mean(-1),
        "var": z.var(-1),
        "bias": diff.mean(-1),  # E Z - TV, estimated as a paired difference with RB
        "se_bias": diff.std(-1) / math.sqrt(M),
    }
    st["queries"] = queries_to_eps(st["bias"], st["var"], st["se_bias"], cost, eps)
    st["slope"] = loglog_slope(n, st["queries"])
    return st


def bootstrap_slopes(zs: dict, rb, costs: dict, eps, n, *, seed, n_resamples=999, batch=250) -> dict:
    """95% percentile-bootstrap intervals of the log-log slopes of queries-to-eps vs n of several estimators
    computed on the same pools: zs {name: (N, P_name, M)} per-sequence estimates, rb (N, M), costs {name:
    (N, P_name)}. Returns {name: (low, high)}.

    A resample draws M sequence indices uniformly with replacement from each n's pool (independently across n,
    as the pools are drawn); one resample serves every estimator, since they are computed on the same
    sequences. Its statistics are sums of per-sequence features (Z, Z^2, Z - RB, (Z - RB)^2) weighted by how
    often each sequence was drawn: one matrix product per n for all estimators. The interval is the 2.5% and
    97.5% percentiles (NumPy's linear interpolation) of the ``n_resamples`` slopes (``scipy.stats.bootstrap``'s
    ``method="percentile"``; NaN when a resample's slope is NaN)."""
    names = list(zs)
    N, _, M = zs[names[0]].shape
    widths = [zs[nm].shape[1] for nm in names]
    feats = []
    for i in range(N):
        parts = []
        for nm in names:
            z = zs[nm][i]
            d = z - rb[i][None]
            parts += [z, z**2, d, d**2]
        feats.append(np.concatenate(parts).T)  # (M, 4 sum P)
    rng = np.random.default_rng(seed)
    slopes: dict[str, list[np.ndarray]] = {nm: [] for nm in names}
    for b0 in range(0, n_resamples, batch):
        B = min(batch, n_resamples - b0)
        S_rows = []
        for i in range(N):
            idx = rng.integers(0, M, (B, M)) + M * np.arange(B)[:, None]
            counts = np.bincount(idx.ravel(), minlength=B * M).reshape(B, M).astype(np.float64)
            S_rows.append(counts @ feats[i] / M)  # (B, 4 sum P)
        S = np.stack(S_rows, axis=1)  # (B, N, 4 sum P)
        off = 0
        for nm, P in zip(names, widths, strict=True):
            mean, m2, b, b2 = (S[..., off + k * P : off + (k + 1) * P] for k in range(4))
            off += 4 * P
            var, se = m2 - mean**2, np.sqrt(np.maximum(b2 - b**2, 0.0) / M)
            slopes[nm].append(loglog_slope(n, queries_to_eps(b, var, se, costs[nm], eps)))
    out = {}
    for nm in names:
        sl = np.concatenate(slopes[nm])
        lo, hi = np.percentile(sl, [2.5, 97.5]) if np.all(np.isfinite(sl)) else (np.nan, np.nan)
        out[nm] = (float(lo), float(hi))
    return out


def bootstrap_slope(z, rb, cost, eps, n, *, seed, n_resamples=999):
    """``bootstrap_slopes`` of one estimator: z (N, P, M), rb (N, M), cost (N, P) -> (low, high)."""
    return bootstrap_slopes({"z": z}, rb, {"z": cost}, eps, n, seed=seed, n_resamples=n_resamples)["z"]


@partial(jax.jit, static_argnames=("n", "m"))
def pool_logit_noisy(p, q, r_grid, sigma, length, *, key, n, m):
    """Per-sequence logit and noisy-logit estimates for the length-``length`` prefixes (length <= n, traced,
    so every length shares one compilation) from two decodes (x ~ P and x ~ (P+Q)/2): plain, rb, mixture (m,);
    noisy_<kind> (len(r_grid), m); logit_queries (m,): the next-token queries counted by ``decode`` at the
    positions < length; and the decoded log-probs lp, lq (m, n) of x ~ P, from which the sample counts are
    drawn (``sample_counts_np``)."""
    k_dec, k_mix, k_src, k_r = jax.random.split(key, 4)
    d = tv.decode(p, q, jnp.zeros((m,), bool), key=k_dec, n=n, m=m, keep_all=True)
    dm = tv.decode(p, q, jax.random.bernoulli(k_src, 0.5, (m,)), key=k_mix, n=n, m=m)
    out = {kind: tv.logit_z_from_decoded(d if kind != "mixture" else dm, kind, length) for kind in tv.LOGIT_KINDS}
    mask = jnp.arange(n) < length
    assert d.queries is not None  # decode always counts the queries
    out["logit_queries"] = jnp.sum(jnp.where(mask, d.queries, 0), axis=1).astype(jnp.float32)
    for kind in tv.NOISY_KINDS:
        out[f"noisy_{kind}"] = jax.vmap(
            lambda r, kind=kind: tv.noisy_z_from_decoded(d, sigma, r, key=k_r, kind=kind, length=length)
        )(r_grid)
    return out, d.lp, d.lq


def sample_counts_np(lp, lq, s_grid, length: int, rng: np.random.Generator):
    """Sample-access counts in NumPy (its binomial sampler is ~15x faster than ``jax.random.binomial`` on CPU,
    which was most of the full preset's time): the number of the s samples of p_t(. | x_<t) (of q_t) equal
    to x_t, Binomial(s, p_t(x_t)) -- the law of
    ``jaxwb.theory.tv_distance.sample_counts`` -- at the positions < length: c (len(s_grid), 2, m, length)
    float32 (c_p, c_q stacked); draws (len(s_grid), m): the samples drawn per sequence, summed over the trials
    of each draw (both models)."""
    lp, lq = np.asarray(lp, np.float64)[:, :length], np.asarray(lq, np.float64)[:, :length]
    prob = np.clip(np.exp(np.stack([lp, lq])), 0.0, 1.0)  # (2, m, length)
    trials = np.broadcast_to(np.asarray(s_grid, np.int64)[:, None, None, None], (len(s_grid), *prob.shape))
    c = rng.binomial(trials, prob[None]).astype(np.float32)
    return c, trials.sum(axis=(1, 3)).astype(np.float64)


@jax.jit
def pool_sample(c_p, c_q, s_grid, length):
    """Sample-access per-sequence estimates sample_<kind> (len(s_grid), m) from counts (len(s_grid), m, n) at
    the positions < length (``jaxwb.theory.tv_distance.sample_z_from_counts`` with a position mask)."""
    mask = (jnp.arange(c_p.shape[-1]) < length).astype(jnp.float32)
    return {
        f"sample_{kind}": jax.vmap(lambda cp, cq, s, kind=kind: tv.sample_z_from_counts(cp, cq, s, kind, mask=mask))(
            c_p, c_q, s_grid
        )
        for kind in tv.NOISY_KINDS
    }


def pool_chunk(p, q, cfg, length, key, n, m):
    """Every estimator on one chunk of m sequences (length-``length`` prefixes of length-n decodes), float64
    NumPy: the logit and noisy z (``pool_logit_noisy``), the sample z (``pool_sample`` on NumPy counts), and
    the measured queries per sequence: logit_queries (m,), noisy_queries (len(slope_r), m) = r repeats of
    each counted query, sample_queries (len(slope_s), m) = the samples drawn plus one sampler call per
    position for x_t ~ P (half the counted logit queries: one to each model)."""
    k_main, k_s = jax.random.split(key)
    s_grid, r_grid = np.asarray(cfg.slope_s), np.asarray(cfg.slope_r)
    out, lp, lq = pool_logit_noisy(
        p, q, jnp.asarray(r_grid, jnp.float32), jnp.float32(cfg.sigma), jnp.int32(length), key=k_main, n=n, m=m
    )
    rng = np.random.default_rng(np.asarray(jax.random.key_data(k_s)).ravel().tolist())
    c, draws = sample_counts_np(lp, lq, s_grid, length, rng)
    full = np.zeros((*c.shape[:3], n), np.float32)
    full[..., :length] = c
    out = {k2: np.asarray(v2, np.float64) for k2, v2 in out.items()}
    sz = pool_sample(jnp.asarray(full[:, 0]), jnp.asarray(full[:, 1]), jnp.asarray(s_grid, jnp.float32), length)
    out.update({k2: np.asarray(v2, np.float64) for k2, v2 in sz.items()})
    out["noisy_queries"] = r_grid[:, None] * out["logit_queries"][None]
    out["sample_queries"] = draws + 0.5 * out["logit_queries"][None]
    return out


def pooled(p, q, cfg, length, key, chunks):
    """``pool_chunk`` over ``chunks`` chunks of cfg.slope_pool sequences (decodes of length max(slope_n), so
    every call shares one compiled program), concatenated along the last axis (float64 NumPy)."""
    outs = [pool_chunk(p, q, cfg, length, k, max(cfg.slope_n), cfg.slope_pool) for k in jax.random.split(key, chunks)]
    return {nm: np.concatenate([o[nm] for o in outs], axis=-1) for nm in outs[0]}


@partial(jax.jit, static_argnames=("n", "m", "reps", "rs"))
def coverage_reps(p, q, sigma, *, key, n, m, reps, rs):
    """``reps`` independent repetitions of m sequences each (one decode of reps * m sequences, reshaped): the
    three logit estimates and the noisy estimates (plugin and the default SIMEX-2 with its bias estimate against
    the plugin on the same noise) for each r in rs. Per repetition: value, se (std / sqrt(m)), bias, each
    (reps,). Also returns the decoded log-probs lp, lq (reps * m, n) of x ~ P for ``coverage_sample``."""
    k1, k2, k3, k4 = jax.random.split(key, 4)
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
    return out, d.lp, d.lq


@partial(jax.jit, static_argnames=("m", "reps", "ss", "head"))
def coverage_sample(c, *, m, reps, ss, head=256):
    """The sample estimate with the default kind ("auto") and its bias estimate (``lower_order``, on the same
    counts) for each s in ss, per repetition (value, se, bias, and plugin: the plugin's estimate, whichever of the
    two it is: (reps,)), from counts c (len(ss), 2, reps * m, n)
    (``sample_counts_np``; ``jaxwb.theory.tv_distance.sample_z_from_counts`` is the estimator); and the
    per-sequence estimates of the first ``head`` sequences, z_head and zr_head (head,) (the auto kind and its
    lower order), for the NumPy reference check (``run.run_coverage``)."""
    sq = math.sqrt(m)
    per = lambda z: z.reshape(reps, m)
    out = {}
    for i, s_ in enumerate(ss):
        kind = tv.resolve_sample_kind("auto", s_)
        z = tv.sample_z_from_counts(c[i, 0], c[i, 1], float(s_), kind)
        ref_kind, ref_order = tv.lower_order(kind, 2)
        zr = tv.sample_z_from_counts(c[i, 0], c[i, 1], float(s_), ref_kind, ref_order)
        out[f"sample_s{s_}"] = {
            "value": per(z).mean(1),
            "se": per(z).std(1, ddof=1) / sq,
            "bias": jnp.abs(per(z - zr).mean(1)),
            "plugin": per(z if kind == "plugin" else zr).mean(1),
            "z_head": z[:head],
            "zr_head": zr[:head],
        }
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
    L_k (both (m, n)); the full next-token distributions come from one teacher-forced pass per engine. Also
    the first 64 sequences (64, n) and P's log-probs on them (64, n, K)."""
    d = tv.decode(p, q, jnp.zeros((m,), bool), key=key, n=n, m=m)
    lp_all, lq_all = p.all_logprobs(d.tokens), q.all_logprobs(d.tokens)  # (m, n, K)
    L = jnp.cumsum(d.lp - d.lq, axis=1)
    L_prev = L - (d.lp - d.lq)
    z = jnp.sum(jnp.exp(lp_all) * tv.plain_z(L_prev[..., None] + lp_all - lq_all), axis=-1)
    return z, L, d.tokens[:64], lp_all[:64]  # and P's log-probs on 64 of the sequences, for a reference
