"""The float64 NumPy enumeration reference: exact expectations of the estimators by enumerating all K^n
sequences, sharing nothing with the estimators but the models' next-token tables."""

from __future__ import annotations

import numpy as np
import scipy.special

from jaxwb.theory import tv_distance as tv


def smoothed_np(mu, s2):
    """g(mu, s^2) = E (1 - exp(-(mu + s xi)))_+ in float64 NumPy/SciPy: Phi(mu/s) - exp(-mu + s^2/2 +
    log Phi(mu/s - s)). An independent implementation of ``jaxwb.theory.tv_distance.smoothed_z`` for the exact
    expectations below."""
    sd = np.sqrt(s2)
    a = mu / sd
    return scipy.special.ndtr(a) - np.exp(-mu + 0.5 * s2 + scipy.special.log_ndtr(a - sd))


def sample_z_np(c_p, c_q, s: float, kind: str) -> np.ndarray:
    """The sample-access estimate from counts (m, n) in float64 NumPy/SciPy, an independent implementation of
    ``jaxwb.theory.tv_distance.sample_z_from_counts`` (order 2) from its stated formulas: L_hat = sum_t
    log((c_p + 1/2) / (c_q + 1/2)), the delta-method variance v_hat = sum_t 1/(c_p + 1/2) + 1/(c_q + 1/2) -
    2/(s + 1) (> 0 for counts in [0, s]); plugin (1 - exp(-L_hat))_+; SIMEX-2 the quadratic extrapolation to
    zero noise from total noise v_hat, 2 v_hat, 3 v_hat (L_hat already carries v_hat): 3 (1 - exp(-L_hat))_+ -
    3 g(L_hat, v_hat) + g(L_hat, 2 v_hat), g = ``smoothed_np`` clipped to [0, 1]. Returns (m,)."""
    cp, cq = np.asarray(c_p, np.float64), np.asarray(c_q, np.float64)
    L = np.sum(np.log(cp + 0.5) - np.log(cq + 0.5), axis=-1)
    if kind == "plugin":
        return np.maximum(0.0, -np.expm1(-L))
    if kind != "simex":
        raise ValueError(f"kind must be 'plugin' or 'simex', got {kind!r}")
    v_ = np.sum(1.0 / (cp + 0.5) + 1.0 / (cq + 0.5) - 2.0 / (s + 1.0), axis=-1)
    g = [np.clip(smoothed_np(L, k * v_), 0.0, 1.0) for k in (1, 2)]
    return 3 * np.maximum(0.0, -np.expm1(-L)) - 3 * g[0] + g[1]


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
        g = [smoothed_np(L, k * v_) for k in (1, 2, 3)]
        ref[f"noisy_r{r}"] = {"plugin": np.sum(P * g[0]), "simex": np.sum(P * (3 * g[0] - 3 * g[1] + g[2]))}
    return ref


GRID_H = 1e-3  # the grid step of the Markov-chain laws below (their accuracy: ``markov_law_np``)


def markov_law_np(lp, lq, n: int, kernel, *, h: float = GRID_H, keep_prefix: bool = False):
    """The law of a sum of per-position increments along an order-1 Markov chain x ~ P, on a grid of step ``h``,
    in float64 NumPy (FFT; no JAX, no sampling): a float64 reference for the estimators' expectations at
    lengths where the K^n sequences cannot be enumerated.

    lp, lq (K+1, K): the log-prob tables of P and Q (row K: the start context); position t moves the sum by a
    random increment whose law, given the transition a -> b, is ``kernel(a, b)`` = (values, weights) (weights
    summing to 1; a log-ratio d_ab = lp[a, b] - lq[a, b] under logit access, the log-ratio of counts under
    sample access). Each value is split between its two neighbouring grid points with the weights that keep
    its mean (linear interpolation), so the computed sum is L' = L + E with E a martingale of n steps each of
    size <= h: |E f(L') - E f(L)| <= Lip(f) sqrt(n) h / 2 for any Lipschitz f, and, f piecewise smooth, O(n h^2)
    in practice (within 1e-6 of enumeration at n = 6, 8: tests/sims/test_tv_distance.py).

    Returns (grid (N,), law): law (N,) the probabilities of the sum over the n positions, or with
    ``keep_prefix`` (K, N) the joint law of (x_{n-1}, sum over the first n - 1 positions) (for the
    Rao-Blackwellised last step; n >= 2)."""
    lp, lq = np.asarray(lp, np.float64), np.asarray(lq, np.float64)
    K = lp.shape[1]
    kern = {(a, b): kernel(a, b) for a in range(K + 1) for b in range(K)}
    span = n * max(float(np.max(np.abs(v))) for v, _ in kern.values()) + 4 * h
    N = 1 << int(np.ceil(np.log2(2 * span / h + 8)))
    hat = {}
    for ab, (vals, w) in kern.items():
        x = np.asarray(vals, np.float64).ravel() / h
        k = np.floor(x)
        fr = x - k
        idx = k.astype(np.int64) % N
        w = np.asarray(w, np.float64).ravel()
        dens = np.bincount(idx, (1 - fr) * w, N) + np.bincount((idx + 1) % N, fr * w, N)
        hat[ab] = np.fft.rfft(dens)
    pr = np.exp(lp)
    state = [pr[K, b] * hat[K, b] for b in range(K)]  # after the first position, per token, in Fourier space
    steps = n - 2 if keep_prefix else n - 1
    for _ in range(steps):
        state = [sum(pr[a, b] * state[a] * hat[a, b] for a in range(K)) for b in range(K)]
    grid = h * np.where(np.arange(N) < N // 2, np.arange(N), np.arange(N) - N)
    if keep_prefix:
        if n < 2:
            raise ValueError(f"keep_prefix needs n >= 2, got {n}")
        return grid, np.stack([np.fft.irfft(s_, N) for s_ in state])
    return grid, np.fft.irfft(sum(state), N)


def logit_moments_np(lp, lq, n: int, *, h: float = GRID_H) -> dict:
    """TV and the exact variances of the plain and RB logit estimators of an order-1 Markov pair at length n
    (``markov_law_np`` with the deterministic increments d_ab = lp[a, b] - lq[a, b]): TV = E (1 - e^-L)_+ (x ~ P),
    var_plain = E Z^2 - TV^2 with Z = (1 - e^-L)_+, var_rb the same with Z = sum_v p(v | x_{n-1})
    (1 - e^-(L_<n + d(x_{n-1}, v)))_+ (a function of the prefix). n >= 2."""
    lp, lq = np.asarray(lp, np.float64), np.asarray(lq, np.float64)
    d = lp - lq
    grid, law = markov_law_np(lp, lq, n, lambda a, b: ([d[a, b]], [1.0]), h=h, keep_prefix=True)
    f = lambda L: np.maximum(0.0, -np.expm1(-L))
    pr = np.exp(lp)
    K = lp.shape[1]
    rb = np.stack([sum(pr[a, v] * f(grid + d[a, v]) for v in range(K)) for a in range(K)])
    e1 = np.stack([sum(pr[a, v] * f(grid + d[a, v]) for v in range(K)) for a in range(K)])
    e2 = np.stack([sum(pr[a, v] * f(grid + d[a, v]) ** 2 for v in range(K)) for a in range(K)])
    tv_ = float(np.sum(law * rb))
    return {
        "tv": tv_,
        "var_plain": float(np.sum(law * e2) - np.sum(law * e1) ** 2),
        "var_rb": float(np.sum(law * rb**2) - tv_**2),
    }


def sample_plugin_mean_np(lp, lq, n: int, s: int, *, h: float = GRID_H) -> float:
    """E of the sample-access plugin (1 - e^-L_hat)_+, L_hat = sum_t log((c_p + 1/2) / (c_q + 1/2)), x ~ P and
    c_p ~ Binomial(s, p_t(x_t)), c_q ~ Binomial(s, q_t(x_t)) independent (``jaxwb.theory.tv_distance``'s sample
    model), by ``markov_law_np`` over the (s + 1)^2 count pairs of each transition (scipy's binomial pmf):
    the exact expectation of the estimator the repetitions use (up to the grid, ``markov_law_np``)."""
    from scipy import stats

    lp, lq = np.asarray(lp, np.float64), np.asarray(lq, np.float64)
    c = np.arange(s + 1, dtype=np.float64)
    lc = np.log(c + 0.5)

    def kernel(a, b):
        wp = stats.binom.pmf(c, s, np.exp(lp[a, b]))
        wq = stats.binom.pmf(c, s, np.exp(lq[a, b]))
        return lc[:, None] - lc[None, :], wp[:, None] * wq[None, :]

    grid, law = markov_law_np(lp, lq, n, kernel, h=h)
    return float(np.sum(law * np.maximum(0.0, -np.expm1(-grid))))


def _layernorm_np(x, scale):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * scale


def transformer_logprobs_np(params: dict, tokens, n_heads: int) -> np.ndarray:
    """The float32 engine of ``jaxwb.theory.tv_distance.random_transformer`` re-implemented in float64 NumPy
    from its parameters: (B, n) tokens -> (B, n, K) next-token log-probs (BOS = token K shifts the input;
    pre-LayerNorm blocks, causal softmax attention with ``n_heads`` heads, tanh-GELU MLP, LayerNorm, unembed)."""
    p = {k: (v if k == "layers" else np.asarray(v, np.float64)) for k, v in params.items()}
    tok = np.asarray(tokens)
    B, n = tok.shape
    K = p["unembed"].shape[1]
    inp = np.concatenate([np.full((B, 1), K), tok[:, :-1]], axis=1)
    h = p["embed"][inp] + p["pos"][:n]
    d = h.shape[-1]
    hd = d // n_heads
    causal = np.tril(np.ones((n, n), bool))
    for layer in p["layers"]:
        w = {k: np.asarray(v, np.float64) for k, v in layer.items()}
        qkv = (_layernorm_np(h, w["ln1"]) @ w["wqkv"]).reshape(B, n, 3, n_heads, hd)
        att = np.einsum("bqhd,bkhd->bhqk", qkv[:, :, 0], qkv[:, :, 1]) / np.sqrt(hd)
        att = np.exp(np.where(causal, att, -np.inf) - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        h = h + np.einsum("bhqk,bkhd->bqhd", att, qkv[:, :, 2]).reshape(B, n, d) @ w["wo"]
        u = _layernorm_np(h, w["ln2"]) @ w["w1"]
        h = h + 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u**3))) @ w["w2"]
    logits = _layernorm_np(h, p["lnf"]) @ p["unembed"]
    return logits - scipy.special.logsumexp(logits, axis=-1, keepdims=True)
