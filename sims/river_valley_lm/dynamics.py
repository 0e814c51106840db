# ruff: noqa: F722  (jaxtyping shape strings)
"""Training dynamics on the tiny LM for ``sims.river_valley_lm``: the heavy-ball optimiser, divergence edges by
bisection over seeds, and the edge-of-stability tracker (lambda_max(H(theta_t)) along full-batch runs).

Parameters travel as flat vectors ``theta: float32[P]`` (``jax.flatten_util.ravel_pytree`` of the model's inexact
arrays) so that runs for several initialisation seeds stack into ``float32[S, P]`` and vmap.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float

from models import train as tr
from models.tiny_lm import TinyLM
from theory import hessian as hs


def hb_velocity(v: Float[Array, ...], g: Float[Array, ...], beta) -> Float[Array, ...]:
    """Heavy-ball velocity v_{t+1} = beta v_t + g_t; the step is theta_{t+1} = theta_t - lr v_{t+1}, i.e.
    theta_{t+1} = theta_t - lr g_t + beta (theta_t - theta_{t-1}) (``shared/papers/river_valley.md``)."""
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
# Divergence edges: bisection in log lr, vmapped over (beta, seed) rows
# ---------------------------------------------------------------------------------------------------------


def edge_bisect(flat0, unit, beta, data_key, *, unravel, static, data, steps, batch_size, blowup, lo, hi, iters):
    """One row: log-lr bisection of the divergence edge of mini-batch heavy ball from ``flat0``.

    lr = mult * ``unit`` (unit = 2/lambda_max(init) of this seed); the bracket [lo, hi] (in mults) is checked
    first. Returns {"lo", "hi"} (final bracket in mults; edge = sqrt(lo hi)), "lo_ok" (lo trains), "hi_div"
    (hi diverges). The edge is assumed unique (stable below, divergent above) inside the bracket.
    """

    def diverges(mult):
        model = eqx.combine(unravel(flat0), static)
        state, _ = tr.train_scan(
            model, heavy_ball(mult * unit, beta), data, key=data_key, steps=steps, batch_size=batch_size, blowup=blowup
        )
        return state[2]

    lo_ok = ~diverges(jnp.float32(lo))
    hi_div = diverges(jnp.float32(hi))

    def body(_, c):
        a, b = c
        mid = jnp.sqrt(a * b)
        d = diverges(mid)
        return jnp.where(d, a, mid), jnp.where(d, mid, b)

    a, b = jax.lax.fori_loop(0, iters, body, (jnp.float32(lo), jnp.float32(hi)))
    return {"lo": a, "hi": b, "lo_ok": lo_ok, "hi_div": hi_div}


# ---------------------------------------------------------------------------------------------------------
# Edge of stability: full-batch runs with lambda_max tracked by warm-started power iteration
# ---------------------------------------------------------------------------------------------------------


def eos_run(flat0, u0, lr, beta, *, unravel, static, x, y, steps, every, power_iters):
    """Full-batch heavy ball (beta=0: GD) on (x, y) from ``flat0`` for ``steps`` steps; every ``every`` steps
    lambda_max(H(theta_t)) by ``power_iters`` warm-started power-iteration steps on HVPs.

    Returns per tracked point (``steps // every + 1`` of them, the first at init): "lam", "loss", "param_norm",
    "norm_scale" (RMSNorm scales' norm); and "loss_all" [steps] per step.
    """
    f = flat_loss(unravel, static, x, y)
    grad = jax.value_and_grad(f)

    def measure(theta, u):
        lam, u = hs.power_top(lambda w: hs.hvp(f, theta, w), u, iters=power_iters)
        m = eqx.combine(unravel(theta), static)
        return u, {"lam": lam, "loss": f(theta), "param_norm": jnp.linalg.norm(theta), "norm_scale": norm_scale_norm(m)}

    def step(c, _):
        theta, v = c
        loss, g = grad(theta)
        v = hb_velocity(v, g, beta)
        return (theta - lr * v, v), loss

    def chunk(c, _):
        theta, v, u = c
        (theta, v), losses = jax.lax.scan(step, (theta, v), None, length=every)
        u, rec = measure(theta, u)
        return (theta, v, u), (rec, losses)

    u, rec0 = measure(flat0, u0)
    _, (recs, losses) = jax.lax.scan(chunk, (flat0, jnp.zeros_like(flat0), u), None, length=steps // every)
    out = {k: jnp.concatenate([rec0[k][None], recs[k]]) for k in rec0}
    out["loss_all"] = losses.reshape(-1)
    return out
