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
