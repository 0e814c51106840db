"""The tiny LM (``jaxwb.models.tiny_lm.TinyLM``) in float64 NumPy, written from its description: the one reference
forward pass, logits, loss and gradient every check of the model uses (``sims/mpq``, ``sims/zoe_grad``,
``sims/river_valley_lm``, ``tests/models``).

What it implements (``models/tiny_lm.py``'s module docstring): token embedding ``E[tok]``; per block, pre-norm
causal self-attention with RoPE on queries and keys (pairs ``(a_2i, a_2i+1)`` of each head rotated by
``t * base^(-2i/Dh)``), scores ``q k^T / sqrt(Dh)``, then a pre-norm tanh-GELU MLP, each added to the residual
stream; RMSNorm ``x / sqrt(mean(x^2) + eps) * g``; the output layer the transposed embedding (tied weights). Linear
weights are ``[out, in]``. It shares no code with ``jaxwb.models`` (it reads the weights by attribute:
:func:`float64_params`), so a bug in the model, its attention op or the training loss shows as a difference.

The loss is the mean next-token cross-entropy over every position of every window (nats/token); the targets of a
window starting at ``s`` of a token stream are the stream shifted by one, ``tokens[s + 1 : s + ctx + 1]``
(:func:`windows`). :func:`loss_and_grad` is the same loss with its gradient by a hand-written backward pass (checked
against central finite differences in ``tests/models/test_reference_np.py``).

``params``: "embed" [V, d]; per block i "block{i}.norm1", "block{i}.norm2" [d], "block{i}.attn.qkv" [3d, d],
"block{i}.attn.out" [d, d], "block{i}.mlp_in" [m d, d], "block{i}.mlp_out" [d, m d]; "norm_f" [d].
"""

from __future__ import annotations

import numpy as np

BLOCK_PARAMS = ("norm1", "attn.qkv", "attn.out", "norm2", "mlp_in", "mlp_out")
GELU_C = 0.044715  # tanh-GELU: 0.5 u (1 + tanh(sqrt(2/pi) (u + c u^3)))


def float64_params(model) -> dict[str, np.ndarray]:
    """A ``models.tiny_lm.TinyLM``'s weights by name (the names above), float64, by attribute reads only."""
    params = {"embed": np.asarray(model.embed, np.float64)}
    for i, b in enumerate(model.blocks):
        params[f"block{i}.norm1"] = np.asarray(b.norm1.weight, np.float64)
        params[f"block{i}.attn.qkv"] = np.asarray(b.attn.qkv.weight, np.float64)
        params[f"block{i}.attn.out"] = np.asarray(b.attn.out.weight, np.float64)
        params[f"block{i}.norm2"] = np.asarray(b.norm2.weight, np.float64)
        params[f"block{i}.mlp_in"] = np.asarray(b.mlp_in.weight, np.float64)
        params[f"block{i}.mlp_out"] = np.asarray(b.mlp_out.weight, np.float64)
    params["norm_f"] = np.asarray(model.norm_f.weight, np.float64)
    return params


def n_blocks(params: dict) -> int:
    i = 0
    while f"block{i}.attn.qkv" in params:
        i += 1
    return i


def _rope_tables(t: int, dh: int, rope_base: float):
    ang = np.arange(t)[:, None] * rope_base ** (-np.arange(0, dh, 2) / dh)[None, :]  # [T, Dh/2]
    return np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]  # [T, 1, Dh/2]


def _rope(a, cos, sin):
    """a [..., T, H, Dh]: pairs (a_2i, a_2i+1) rotated by t theta_i."""
    a1, a2 = a[..., 0::2], a[..., 1::2]
    return np.stack([a1 * cos - a2 * sin, a1 * sin + a2 * cos], axis=-1).reshape(a.shape)


def _rope_back(d, cos, sin):
    """The transposed rotation (the gradient of :func:`_rope`)."""
    d1, d2 = d[..., 0::2], d[..., 1::2]
    return np.stack([d1 * cos + d2 * sin, -d1 * sin + d2 * cos], axis=-1).reshape(d.shape)


def _forward(params: dict, tokens: np.ndarray, n_heads: int, rope_base: float, eps: float, keep: bool):
    """Logits [..., T, V] of ``tokens`` [..., T] and (``keep``) what the backward pass needs."""
    tokens = np.asarray(tokens)

    def rms(x, g):
        sd = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
        xhat = x / sd
        return xhat * g, (xhat, 1.0 / sd)

    emb = params["embed"]
    x = emb[tokens]
    t, d = x.shape[-2:]
    dh = d // n_heads
    cos, sin = _rope_tables(t, dh, rope_base)
    causal = np.tril(np.ones((t, t), bool))
    tape = []
    for i in range(n_blocks(params)):
        p = {name: params[f"block{i}.{name}"] for name in BLOCK_PARAMS}
        n1, c1 = rms(x, p["norm1"])
        q, k, v = np.split(n1 @ p["attn.qkv"].T, 3, axis=-1)
        q, k, v = (a.reshape(*a.shape[:-1], n_heads, dh) for a in (q, k, v))
        q, k = _rope(q, cos, sin), _rope(k, cos, sin)
        s = np.einsum("...thd,...shd->...hts", q, k) / np.sqrt(dh)
        s = np.where(causal, s, -np.inf)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        o = np.einsum("...hts,...shd->...thd", w, v).reshape(*x.shape[:-1], d)
        x1 = x + o @ p["attn.out"].T
        n2, c2 = rms(x1, p["norm2"])
        u = n2 @ p["mlp_in"].T
        th = np.tanh(np.sqrt(2.0 / np.pi) * (u + GELU_C * u**3))
        hid = 0.5 * u * (1.0 + th)
        x2 = x1 + hid @ p["mlp_out"].T
        if keep:
            tape.append((x, n1, c1, q, k, v, w, o, x1, n2, c2, u, th, hid))
        x = x2
    nf, cf = rms(x, params["norm_f"])
    z = nf @ emb.T
    return z, (tokens, tape, nf, cf, cos, sin)


def logits(params: dict, tokens: np.ndarray, *, n_heads: int, rope_base: float, eps: float = 1e-6) -> np.ndarray:
    """Logits float64 [..., T, V] of ``tokens`` int [..., T] (one window or a batch of windows)."""
    return _forward(params, tokens, n_heads, rope_base, eps, keep=False)[0]


def _token_nll(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """-log softmax(z)[y] per position, logsumexp shifted by the row maximum."""
    m = z.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(-1, keepdims=True)))[..., 0]
    return lse - np.take_along_axis(z, np.asarray(y)[..., None], axis=-1)[..., 0]


def cross_entropy(
    params: dict, x: np.ndarray, y: np.ndarray, *, n_heads: int, rope_base: float, per_window: bool = True
) -> float:
    """Mean next-token cross-entropy (nats/token) on windows ``x``, ``y``: int [n, T], one window at a time (the
    sum accumulated per window) or, ``per_window=False``, all windows in one batched forward pass (faster; the
    same value up to float64 rounding)."""
    if not per_window:
        return float(np.sum(_token_nll(logits(params, x, n_heads=n_heads, rope_base=rope_base), y)) / np.size(y))
    total = 0.0
    for xi, yi in zip(np.asarray(x), np.asarray(y), strict=True):
        z = logits(params, xi, n_heads=n_heads, rope_base=rope_base)
        total += float(np.sum(_token_nll(z, yi)))
    return total / np.asarray(y).size


def loss_and_grad(
    params: dict, x: np.ndarray, y: np.ndarray, *, n_heads: int, rope_base: float, eps: float = 1e-6
) -> tuple[float, dict[str, np.ndarray]]:
    """The mean next-token cross-entropy on windows ``x``, ``y``: int [B, T] and its gradient (a dict like
    ``params``), by a hand-written backward pass through :func:`logits`' forward, batched over windows."""
    x, y = np.asarray(x), np.asarray(y)
    z, (tok, tape, nf, (fhat, fr), cos, sin) = _forward(params, x, n_heads, rope_base, eps, keep=True)
    n_tok = y.size
    loss = float(np.sum(_token_nll(z, y)) / n_tok)
    emb = params["embed"]
    d = emb.shape[1]
    dh = d // n_heads
    grads: dict[str, np.ndarray] = {}

    def rms_back(dout, g, xhat, r):
        """(dx, dg) of out = xhat * g, xhat = x * r, r = (mean(x^2) + eps)^(-1/2)."""
        dg = np.sum(dout * xhat, axis=tuple(range(dout.ndim - 1)))
        dxh = dout * g
        return r * (dxh - xhat * np.mean(dxh * xhat, axis=-1, keepdims=True)), dg

    pz = np.exp(z - z.max(-1, keepdims=True))
    pz /= pz.sum(-1, keepdims=True)
    np.put_along_axis(pz, y[..., None], np.take_along_axis(pz, y[..., None], axis=-1) - 1.0, axis=-1)
    dz = pz / n_tok  # [B, T, V]
    dE = np.einsum("btv,btd->vd", dz, nf)
    dx, grads["norm_f"] = rms_back(dz @ emb, params["norm_f"], fhat, fr)
    for i in reversed(range(len(tape))):
        xin, n1, (h1, r1), q, k, v, w, o, x1, n2, (h2, r2), u, th, hid = tape[i]
        p = {name: params[f"block{i}.{name}"] for name in BLOCK_PARAMS}
        # MLP branch: x2 = x1 + gelu(n2 W_in^T) W_out^T
        grads[f"block{i}.mlp_out"] = np.einsum("btd,btm->dm", dx, hid)
        dhid = dx @ p["mlp_out"]
        a = np.sqrt(2.0 / np.pi)
        du = dhid * (0.5 * (1.0 + th) + 0.5 * u * (1.0 - th * th) * a * (1.0 + 3.0 * GELU_C * u * u))
        grads[f"block{i}.mlp_in"] = np.einsum("btm,btd->md", du, n2)
        dn2, grads[f"block{i}.norm2"] = rms_back(du @ p["mlp_in"], p["norm2"], h2, r2)
        dx1 = dx + dn2
        # attention branch: x1 = x + o W_out^T, o = softmax(q k^T / sqrt(Dh), causal) v
        grads[f"block{i}.attn.out"] = np.einsum("btd,bte->de", dx1, o)
        do = (dx1 @ p["attn.out"]).reshape(*o.shape[:-1], n_heads, dh)
        dw = np.einsum("bthd,bshd->bhts", do, v)
        dv = np.einsum("bhts,bthd->bshd", w, do)
        ds = w * (dw - np.sum(dw * w, axis=-1, keepdims=True)) / np.sqrt(dh)
        dq = _rope_back(np.einsum("bhts,bshd->bthd", ds, k), cos, sin)
        dk = _rope_back(np.einsum("bhts,bthd->bshd", ds, q), cos, sin)
        dqkv = np.concatenate([a.reshape(*a.shape[:-2], d) for a in (dq, dk, dv)], axis=-1)
        grads[f"block{i}.attn.qkv"] = np.einsum("bte,btd->ed", dqkv, n1)
        dn1, grads[f"block{i}.norm1"] = rms_back(dqkv @ p["attn.qkv"], p["norm1"], h1, r1)
        dx = dx1 + dn1
    np.add.at(dE, tok.reshape(-1), dx.reshape(-1, d))
    grads["embed"] = dE
    return loss, {k: grads[k] for k in params}


def windows(tokens: np.ndarray, starts: np.ndarray, ctx: int) -> tuple[np.ndarray, np.ndarray]:
    """Inputs ``tokens[s : s + ctx]`` and next-token targets ``tokens[s + 1 : s + ctx + 1]`` for each start ``s``
    (int [n, ctx] each)."""
    tok = np.asarray(tokens)
    idx = np.asarray(starts, np.int64)[:, None] + np.arange(ctx)[None, :]
    return tok[idx], tok[idx + 1]
