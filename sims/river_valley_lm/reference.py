"""river_valley_lm's independent checks, float64 NumPy on the shared reference of the tiny LM
(``jaxwb.models.reference_np``: forward pass, loss and a hand-written gradient, sharing no code with the model, the
training loop or ``jaxwb.theory.hessian``).

* :func:`locate_targets`: where each window of a batch lies in the token stream, and whether its targets are the
  stream shifted by one there (``jaxwb.models.train``'s windows are compared with plain slicing).
* :func:`fd_hvp` / :func:`dense_hessian`: Hessian-vector products and the whole Hessian by central differences of
  the reference gradient (a dense eigendecomposition, ``numpy.linalg.eigh``, on a model small enough to form H).
* :func:`quadratic_edge`: heavy ball (beta = 0: GD) on the quadratic model of a dense Hessian, simulated: the lr
  beyond which some mode grows, by bisection (the independent value of ``theory.river_valley.hb_threshold``).
* :func:`train`: heavy-ball or Adam training on the reference (its own batches from the window starts of the run's
  random stream, its own update rules, the run's divergence rule) and :func:`bisect_edge`, one divergence edge
  bisected as the run does it.
* :func:`unigram_cross_entropy`: the unigram baseline by ``scipy.stats.entropy`` from counts of its own;
  :func:`linear_river_ratio`: heavy ball's displacement over GD's on a linear river, the recursion summed in closed
  form.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from jaxwb.models import reference_np as ref


def locate_targets(tokens: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, int]:
    """For each window ``x[i]`` (int [n, ctx]) the first start ``s`` in ``tokens`` where both ``x[i]`` and its
    targets ``y[i]`` match the stream (``tokens[s : s + ctx]`` and ``tokens[s + 1 : s + ctx + 1]``); else the first
    start where ``x[i]`` alone matches, or -1. Returns (starts [n], number of target bytes that differ from the
    stream's next bytes at those starts, a window not found counting all its ctx bytes)."""
    tok = np.asarray(tokens, np.int64)
    x, y = np.asarray(x, np.int64), np.asarray(y, np.int64)
    n, ctx = x.shape
    starts = np.full(n, -1, np.int64)
    bad = 0
    for i in range(n):
        cand = np.flatnonzero(tok[: tok.size - ctx] == x[i, 0])
        for j in range(1, ctx):
            cand = cand[tok[cand + j] == x[i, j]]
        if cand.size == 0:
            bad += ctx
            continue
        nxt = tok[cand[:, None] + 1 + np.arange(ctx)[None, :]]
        ok = np.all(nxt == y[i][None, :], axis=1)
        starts[i] = cand[np.argmax(ok)] if ok.any() else cand[0]
        bad += 0 if ok.any() else int(np.sum(nxt[0] != y[i]))
    return starts, bad


# ---------------------------------------------------------------------------------------------------------
# flat parameter vectors on the reference (the order is the reference's own: sorted names, C order)
# ---------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Flat:
    """The reference's parameters as one float64 vector (names sorted, each array C-ordered) and back."""

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, params: dict) -> Flat:
        names = tuple(sorted(params))
        return cls(names, tuple(tuple(params[k].shape) for k in names))

    @property
    def size(self) -> int:
        return sum(math.prod(s) for s in self.shapes)

    def flat(self, params: dict) -> np.ndarray:
        return np.concatenate([np.asarray(params[k], np.float64).ravel() for k in self.names])

    def unflat(self, v: np.ndarray) -> dict:
        out, i = {}, 0
        for k, s in zip(self.names, self.shapes, strict=True):
            n = math.prod(s)
            out[k] = v[i : i + n].reshape(s)
            i += n
        return out


FD_STEP = 1e-4  # central differences of the float64 gradient: error ~ h^2 |g'''| + eps |g| / h, ~1e-8 relative


def fd_hvp(params: dict, direction: dict, x, y, *, n_heads: int, rope_base: float, h: float = FD_STEP) -> dict:
    """H(params) v by central differences of the reference gradient along ``direction`` (a dict like params)."""
    kw: dict[str, Any] = {"n_heads": n_heads, "rope_base": rope_base}
    plus = {k: params[k] + h * direction[k] for k in params}
    minus = {k: params[k] - h * direction[k] for k in params}
    gp, gm = ref.loss_and_grad(plus, x, y, **kw)[1], ref.loss_and_grad(minus, x, y, **kw)[1]
    return {k: (gp[k] - gm[k]) / (2 * h) for k in params}


def rayleigh(params: dict, direction: dict, x, y, *, n_heads: int, rope_base: float) -> float:
    """v^T H v / v^T v on the reference (central differences of its gradient)."""
    hv = fd_hvp(params, direction, x, y, n_heads=n_heads, rope_base=rope_base)
    num = sum(float(np.sum(direction[k] * hv[k])) for k in params)
    return num / sum(float(np.sum(direction[k] ** 2)) for k in params)


def dense_hessian(params: dict, x, y, *, n_heads: int, rope_base: float, h: float = FD_STEP) -> np.ndarray:
    """The whole Hessian [P, P] of the reference loss (columns by central differences of its gradient, symmetrised),
    in the :class:`Flat` order of ``params``."""
    fl = Flat.of(params)
    th = fl.flat(params)
    kw: dict[str, Any] = {"n_heads": n_heads, "rope_base": rope_base}
    cols = np.empty((fl.size, fl.size))
    for i in range(fl.size):
        e = np.zeros(fl.size)
        e[i] = h
        gp = fl.flat(ref.loss_and_grad(fl.unflat(th + e), x, y, **kw)[1])
        gm = fl.flat(ref.loss_and_grad(fl.unflat(th - e), x, y, **kw)[1])
        cols[:, i] = (gp - gm) / (2 * h)
    return 0.5 * (cols + cols.T)


def _grows(lr: float, lams: np.ndarray, beta: float, log2_steps: int) -> bool:
    """Does heavy ball x+ = x - lr lam x + beta (x - x_prev) grow on some mode lam of ``lams`` over 2^log2_steps
    steps? The 2x2 step matrices of all modes squared ``log2_steps`` times (renormalised, the growth accumulated
    in log), float64."""
    a = 1.0 + beta - lr * lams
    m = np.zeros((lams.size, 2, 2))
    m[:, 0, 0], m[:, 0, 1], m[:, 1, 0] = a, -beta, 1.0
    log_growth = np.zeros(lams.size)
    for _ in range(log2_steps):
        m = m @ m
        s = np.max(np.abs(m), axis=(1, 2))
        dead = s == 0  # a mode the iteration annihilates (nilpotent step matrix): it never grows
        m /= np.where(dead, 1.0, s)[:, None, None]
        log_growth = np.where(dead, -np.inf, 2.0 * log_growth + np.log(np.where(dead, 1.0, s)))
    return bool(np.any(log_growth > math.log(1e6)))


def quadratic_edge(lams: np.ndarray, beta: float, *, iters: int = 48, log2_steps: int = 20) -> float:
    """The largest lr at which heavy ball (momentum ``beta``) on the quadratic 1/2 sum_i lam_i x_i^2 does not grow
    within 2^log2_steps steps (any start), by bisection between 0 and an lr where it grows; ``lams`` the positive
    eigenvalues (a negative one grows at every lr). Resolution ~1e-5 relative (growth by 1e6 in 2^20 steps)."""
    lams = np.asarray(lams, np.float64)
    lams = lams[lams > 0]
    lo, hi = 0.0, 1.0 / np.max(lams)
    while not _grows(hi, lams, beta, log2_steps):
        lo, hi = hi, 2.0 * hi
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if _grows(mid, lams, beta, log2_steps) else (mid, hi)
    return 0.5 * (lo + hi)


# ---------------------------------------------------------------------------------------------------------
# training on the reference
# ---------------------------------------------------------------------------------------------------------


def train(
    params: dict,
    tokens: np.ndarray,
    starts: np.ndarray,
    ctx: int,
    *,
    lr: float,
    beta: float,
    adam: bool = False,
    blowup: float = 2.0,
    n_heads: int,
    rope_base: float,
    b2: float = 0.999,
    eps: float = 1e-8,
) -> tuple[bool, dict]:
    """Training on the reference, float64: at step t the windows at ``starts[t]`` (int [steps, batch]) of
    ``tokens`` (targets the stream shifted by one), the loss and its gradient, then heavy ball (v <- beta v + g,
    theta <- theta - lr v) or Adam with beta1 = ``beta`` (bias-corrected m / (sqrt(v) + eps), no weight decay).
    Divergence as in the run: at the first step whose loss is non-finite or above ``blowup`` x the first loss the
    run stops (its parameters are those before that step). Returns (diverged, parameters)."""
    kw: dict[str, Any] = {"n_heads": n_heads, "rope_base": rope_base}
    p = {k: np.array(v, np.float64) for k, v in params.items()}
    vel = {k: np.zeros_like(v) for k, v in p.items()}
    sq = {k: np.zeros_like(v) for k, v in p.items()}
    first = None
    with np.errstate(all="ignore"):
        for t in range(starts.shape[0]):
            x, y = ref.windows(tokens, starts[t], ctx)
            loss, g = ref.loss_and_grad(p, x, y, **kw)
            first = loss if first is None else first
            if not math.isfinite(loss) or loss > blowup * first:
                return True, p
            for k in p:
                if adam:
                    vel[k] = beta * vel[k] + (1.0 - beta) * g[k]
                    sq[k] = b2 * sq[k] + (1.0 - b2) * g[k] ** 2
                    mhat, vhat = vel[k] / (1.0 - beta ** (t + 1)), sq[k] / (1.0 - b2 ** (t + 1))
                    p[k] = p[k] - lr * mhat / (np.sqrt(vhat) + eps)
                else:
                    vel[k] = beta * vel[k] + g[k]
                    p[k] = p[k] - lr * vel[k]
    return False, p


def bisect_edge(diverges, lo: float, hi: float, iters: int) -> tuple[float, float, bool, bool]:
    """One divergence edge by bisection in log lr, as the run bisects its edges: ``diverges(lr) -> bool``; the
    bracket ends checked first, then ``iters`` geometric halvings. Returns (lo, hi, lo trains, hi diverges)."""
    lo_ok, hi_div = not diverges(lo), diverges(hi)
    for _ in range(iters):
        mid = math.sqrt(lo * hi)
        if diverges(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi, lo_ok, hi_div


# ---------------------------------------------------------------------------------------------------------
# closed forms: the unigram baseline, heavy ball on a linear river
# ---------------------------------------------------------------------------------------------------------


def linear_river_ratio(beta: float, steps: int) -> float:
    """HB / GD displacement after ``steps`` steps on a linear river (constant gradient g, v_0 = 0): from
    x_t = x_0 - (lr g/(1-beta)) [t - beta(1-beta^t)/(1-beta)] (the heavy-ball recursion summed) and GD's lr g t."""
    return (steps - beta * (1.0 - beta**steps) / (1.0 - beta)) / ((1.0 - beta) * steps)


def unigram_cross_entropy(train_tok, eval_tok, vocab: int) -> float:
    """Cross-entropy (nats/token) on ``eval_tok`` of the add-one-smoothed unigram model fitted on ``train_tok``,
    computed as H(q) + KL(q || p) with ``scipy.stats.entropy`` (q: the empirical distribution of ``eval_tok``, p:
    (count + 1) / (N + vocab)); shares no code with ``jaxwb.models.corpus.unigram_entropy``."""
    from scipy import stats

    n_tr, q = np.zeros(vocab), np.zeros(vocab)
    for counts, tok in ((n_tr, train_tok), (q, eval_tok)):
        u, c = np.unique(np.asarray(tok), return_counts=True)
        counts[u] = c
    p = (n_tr + 1.0) / (n_tr.sum() + vocab)
    return float(stats.entropy(q) + stats.entropy(q, p))
