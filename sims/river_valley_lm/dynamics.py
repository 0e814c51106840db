"""Training dynamics on the tiny LM for ``jaxwb.sims.river_valley_lm``: the heavy-ball optimiser, the mini-batch run
(loss map, AdamW grid, divergence-edge bisection) and the full-batch run (edge of stability with lambda_max(H(theta_t))
tracked, valley/river split, linear river). Three compiled programs serve the whole study: the mini-batch run and
the full-batch run with and without the tracker (whose HVPs dominate a full-batch run's cost).

Parameters travel as flat vectors ``theta: float32[P]`` (``jax.flatten_util.ravel_pytree`` of the model's inexact
arrays) so that runs for several initialisation seeds stack into ``float32[S, P]`` and vmap.
"""

from __future__ import annotations

import functools
from typing import cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float

from jaxwb.models import train as tr
from jaxwb.models.tiny_lm import TinyLM
from jaxwb.theory import hessian as hs


def hb_velocity(v: Float[Array, ...], g: Float[Array, ...], beta) -> Float[Array, ...]:
    """Heavy-ball velocity v_{t+1} = beta v_t + g_t; the step is theta_{t+1} = theta_t - lr v_{t+1}, i.e.
    theta_{t+1} = theta_t - lr g_t + beta (theta_t - theta_{t-1}), the paper's heavy ball."""
    return beta * v + g


def heavy_ball(lr, beta) -> optax.GradientTransformation:
    """SGD with heavy-ball momentum through :func:`hb_velocity` (equal to ``optax.sgd(lr, momentum=beta)``)."""

    def init(params):
        return jax.tree.map(jnp.zeros_like, params)

    def update(g, v, params=None):
        v = jax.tree.map(lambda a, b: hb_velocity(a, b, beta), v, g)
        return jax.tree.map(lambda a: -lr * a, v), v

    return optax.GradientTransformation(init, update)


def split(model: TinyLM):
    """(flat params float32[P], unravel, static) of ``model``."""
    params, static = eqx.partition(model, eqx.is_inexact_array)
    flat, unravel = ravel_pytree(params)
    return flat, unravel, static


def flat_loss(unravel, static, x, y):
    """Mean next-byte cross-entropy on the batch (x, y) as a function of the flat parameters."""
    return lambda f: tr.loss_fn(eqx.combine(unravel(f), static), x, y)


def norm_scale_norm(model: TinyLM) -> Float[Array, ""]:
    """Euclidean norm of all RMSNorm scale vectors (norm1, norm2 of every block and the final norm)."""
    ws = [w for b in model.blocks for w in (b.norm1.weight, b.norm2.weight)] + [model.norm_f.weight]
    return jnp.sqrt(sum(jnp.sum(w**2) for w in ws))


# ---------------------------------------------------------------------------------------------------------
# Mini-batch runs (loss map, AdamW grid, bisection steps): one program for all of them
# ---------------------------------------------------------------------------------------------------------


def hb_or_adam(lr, beta, is_adam, *, b2: float = 0.999, eps: float = 1e-8) -> optax.GradientTransformation:
    """Heavy ball (:func:`hb_velocity`, momentum ``beta``) where ``is_adam`` is False, Adam with beta1 = ``beta``
    (``optax.adamw(lr, b1=beta, b2, eps, weight_decay=0)``) where it is True. All three may be traced, so one
    compiled program serves both optimisers (both states are carried; the unused one costs elementwise ops)."""

    def init(params):
        z = jax.tree.map(jnp.zeros_like, params)
        return z, z, z, jnp.zeros((), jnp.int32)

    def update(g, state, params=None):
        v, m, s, c = state
        c = c + 1
        v = jax.tree.map(lambda a, b: hb_velocity(a, b, beta), v, g)
        m = jax.tree.map(lambda a, b: beta * a + (1.0 - beta) * b, m, g)
        s = jax.tree.map(lambda a, b: b2 * a + (1.0 - b2) * b * b, s, g)
        cf = c.astype(jnp.float32)
        bc1, bc2 = 1.0 - jnp.power(beta, cf), 1.0 - jnp.power(b2, cf)
        adam = jax.tree.map(lambda a, b: (a / bc1) / (jnp.sqrt(b / bc2) + eps), m, s)
        upd = jax.tree.map(lambda a, b: -lr * jnp.where(is_adam, a, b), adam, v)
        return upd, (v, m, s, c)

    return optax.GradientTransformation(init, update)


def minibatch_run(row, *, unravel, static, data, ex, ey, steps, batch_size, blowup):
    """One mini-batch run from ``row["theta0"]`` (float32[P]) with ``row["lr"]``, ``row["beta"]``,
    ``row["adam"]`` (bool) and the batch stream ``row["key"]``; {"diverged", "final_loss"} (validation loss on
    (ex, ey), NaN if diverged)."""
    model = eqx.combine(unravel(row["theta0"]), static)
    opt = hb_or_adam(row["lr"], row["beta"], row["adam"])
    state, _ = tr.train_scan(model, opt, data, key=row["key"], steps=steps, batch_size=batch_size, blowup=blowup)
    final = tr.loss_fn(state[0], ex, ey)
    return {"diverged": state[2], "final_loss": jnp.where(state[2], jnp.nan, final)}


@functools.partial(jax.jit, static_argnums=0)
def _vmapped(fn, rows):
    return jax.vmap(fn)(rows)


def run_rows(fn, rows: dict, chunk: int) -> dict:
    """``jax.vmap(fn)`` over the leading axis of the numpy arrays in ``rows``, ``chunk`` rows per call (the last
    call padded by repeating the last row, so every call has one shape and ``fn`` compiles once per run).
    ``fn`` must be the same object across calls (a closure made once per run)."""
    n = len(next(iter(rows.values())))
    outs = []
    for s in range(0, n, chunk):
        part = {k: np.asarray(x[s : s + chunk]) for k, x in rows.items()}
        m = len(next(iter(part.values())))
        part = {k: np.concatenate([x, np.repeat(x[-1:], chunk - m, axis=0)]) for k, x in part.items()}
        outs.append(jax.tree.map(lambda y, m=m: np.asarray(y)[:m], _vmapped(fn, part)))
    return jax.tree.map(lambda *ys: np.concatenate(ys), *outs)


def bisect_edges(diverges, lo: float, hi: float, iters: int, n: int) -> dict:
    """Log-lr bisection of ``n`` divergence edges at once: ``diverges(mults float[n]) -> bool[n]`` runs one
    training per row. The bracket ends are checked first, then ``iters`` halvings (``iters + 2`` calls).
    Returns {"lo", "hi"} (final brackets; edge = sqrt(lo hi), resolution (hi/lo)^(1/2^iters)), "lo_ok" (the low
    end trains), "hi_div" (the high end diverges). The edge is assumed unique inside the bracket."""
    a, b = np.full(n, float(lo)), np.full(n, float(hi))
    lo_ok = ~np.asarray(diverges(a))
    hi_div = np.asarray(diverges(b))
    for _ in range(iters):
        mid = np.sqrt(a * b)
        d = np.asarray(diverges(mid))
        a, b = np.where(d, a, mid), np.where(d, mid, b)
    return {"lo": a, "hi": b, "lo_ok": lo_ok, "hi_div": hi_div}


# ---------------------------------------------------------------------------------------------------------
# Full-batch runs: edge of stability, valley/river split, linear river: one program for all of them
# ---------------------------------------------------------------------------------------------------------


def fullbatch_run(row, *, unravel, static, x, y, steps, every, track_iters, mid):
    """Full-batch heavy ball (beta=0: GD) on (x, y) from ``row["theta0"]`` with ``row["lr"]``, ``row["beta"]``.

    At steps 0, every, ..., steps (``steps // every + 1`` tracked points): lambda_max(H(theta_t)) by
    ``track_iters`` Lanczos steps (HVPs) warm-started from the previous point's top Ritz vector (the first from
    ``row["u0"]``),
    the loss, the parameter and RMSNorm-scale norms, the valley coordinates V^T d_t (V = ``row["V"]``
    float32[P, k], d_t = theta_t - theta_0), the river distance |(I - V V^T) d_t|, the loss at theta_0 + river part
    |d_t| accumulated from the updates ("disp": exact at tiny lr where theta_t rounds) and the gradient's share
    in span(V) ("grad_frac_top"). Also "loss_all"
    [steps] per step and theta at tracked point ``mid`` and at the end ("theta_mid", "theta_end").
    ``track_iters=0``: no tracker and no "lam" (the decomposition rows: the loss and gradient by one
    ``value_and_grad`` per tracked point instead of ``track_iters`` HVPs).
    """
    f = flat_loss(unravel, static, x, y)
    grad = jax.value_and_grad(f)
    theta0, V, lr, beta = row["theta0"], row["V"], row["lr"], row["beta"]

    def track(theta, u):
        """lambda_max(H(theta)) by ``track_iters`` Lanczos steps warm-started from the previous top Ritz vector
        ``u`` (``jaxwb.theory.hessian.lanczos_warm``: the top Ritz value maximises the Rayleigh quotient over the Krylov
        space, so it tracks the largest *algebraic* eigenvalue, never a negative one of larger magnitude). Its
        HVPs (jvp of value_and_grad) also return the loss and gradient at theta: one copy of the HVP code."""

        def op(q):
            (loss, g), (_, w) = jax.jvp(grad, (theta,), (q,))
            return w, (loss, g)

        # has_aux=True: the 3-tuple of lanczos_warm's annotated union, aux = op's (loss, gradient) at u
        lam, vec, (loss, g) = cast(
            tuple[Array, Array, tuple[Array, Array]], hs.lanczos_warm(op, u, iters=track_iters, k=1, has_aux=True)
        )
        return vec[:, 0], lam[0], loss, g

    def measure(theta, u, d):
        if track_iters:
            u, lam, loss, g = track(theta, u)
        else:  # no tracker (the decomposition rows): the loss and gradient alone
            loss, g = grad(theta)
        m = eqx.combine(unravel(theta), static)
        dt = theta - theta0
        valley = dt @ V
        river = dt - V @ valley
        rec = {
            "grad_frac_top": jnp.sum((g @ V) ** 2) / jnp.maximum(jnp.sum(g**2), 1e-30),
            "loss": loss,
            "param_norm": jnp.linalg.norm(theta),
            "norm_scale": norm_scale_norm(m),
            "valley": valley,
            "river": jnp.linalg.norm(river),
            "loss_river_only": f(theta0 + river),
            "disp": jnp.linalg.norm(d),
        }
        return u, ({"lam": lam, **rec} if track_iters else rec)

    def step(c, _):
        theta, v, d = c
        loss, g = grad(theta)
        v = hb_velocity(v, g, beta)
        return (theta - lr * v, v, d - lr * v), loss

    n = steps // every + 1

    def chunk(c, i):
        theta, v, u, d, th_mid, th_end = c
        u, rec = measure(theta, u, d)
        th_mid = jnp.where(i == mid, theta, th_mid)
        th_end = jnp.where(i == n - 1, theta, th_end)
        (theta, v, d), losses = jax.lax.scan(step, (theta, v, d), None, length=every)  # the last chunk's is unused
        return (theta, v, u, d, th_mid, th_end), (rec, losses)

    z = jnp.zeros_like(theta0)
    c0 = (theta0, z, row["u0"], z, theta0, theta0)
    (_, _, _, _, th_mid, th_end), (rec, losses) = jax.lax.scan(chunk, c0, jnp.arange(n))
    return {**rec, "loss_all": losses.reshape(-1)[:steps], "theta_mid": th_mid, "theta_end": th_end}
