"""zoe_grad: the convergence and bias bounds on the separable toy objective (4)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxwb.sims.zoe_grad.config import Config
from jaxwb.sims.zoe_grad.estimators import hard_quantizer
from jaxwb.theory import zoe_grad as zg

# ---------------------------------------------------------------------------------------------------------
# 4. convergence toy: f(q) = |q - c|^2 / 2 over INT-3 weights
# ---------------------------------------------------------------------------------------------------------


def toy_constants(cfg: Config, c) -> dict:
    """Constants of eq. 9-10 for the toy: G = sup g, H = sup |g'|, eps = sup |Q - Q_sigma|, L, B, V."""
    lv = zg.int_levels(cfg.int_bits)
    s = cfg.toy_sigma
    g_fn = lambda z: zg.surrogate_grad(z, lv, s, law="gaussian")
    dg = jax.vmap(jax.grad(lambda z: g_fn(z)))
    big_g = zg.sup_on_grid(g_fn, lv)
    big_h = zg.sup_on_grid(lambda z: jnp.abs(dg(z)), lv)
    r = lv[-1] + jnp.max(jnp.abs(c))  # sup |Q_sigma - c|
    smooth = big_g**2 + r * big_h
    b = zg.bias_bound(lv, s, law="gaussian", lf=1.0)
    m2 = zg.sup_on_grid(lambda z: zg.score_second_moment(z, lv, s, law="gaussian"), lv)
    var = cfg.toy_dim * r**2 * m2 / cfg.toy_zo  # E|xi|^2 <= sum_i (Q_i - c_i)^2 E g1^2 / n_zo
    return {"G": big_g, "H": big_h, "R": r, "L": smooth, "B": b, "V": var, "eta": 0.25 / smooth}


@functools.partial(jax.jit, static_argnums=0)
def run_toy(cfg: Config, key) -> dict:
    kc, kw, kn = jax.random.split(key, 3)
    lv = zg.int_levels(cfg.int_bits)
    m = float(2 ** (cfg.int_bits - 1) - 1)
    c = jax.random.uniform(kc, (cfg.toy_dim,), minval=-m + 0.5, maxval=m - 0.5)
    w0 = jax.random.uniform(kw, (cfg.toy_dim,), minval=-m, maxval=m)
    k = toy_constants(cfg, c)
    s, eta = cfg.toy_sigma, k["eta"]
    q_fn = hard_quantizer("int", cfg.int_bits)

    def grad_f_sigma(w):
        return (zg.smoothed(w, lv, s, law="gaussian") - c) * zg.surrogate_grad(w, lv, s, law="gaussian")

    def f_sigma(w):
        return 0.5 * jnp.sum((zg.smoothed(w, lv, s, law="gaussian") - c) ** 2)

    def trajectory(key):
        def step(w, kk):
            ghat = jnp.mean(zg.score_estimator(q_fn, w, s, law="gaussian", key=kk, n=cfg.toy_zo), axis=0)
            qw, g = q_fn(w), zg.surrogate_grad(w, lv, s, law="gaussian")
            h = (qw - c) * ghat
            bias_sq = jnp.sum(((qw - zg.smoothed(w, lv, s, law="gaussian")) * g) ** 2)
            var_g = zg.score_second_moment(w, lv, s, law="gaussian") - g**2  # eq. 7, one draw
            var = jnp.sum((qw - c) ** 2 * var_g) / cfg.toy_zo
            return w - eta * h, (jnp.sum(grad_f_sigma(w) ** 2), bias_sq, var)

        w_t, (gn, bias_sq, var) = jax.lax.scan(step, w0, jax.random.split(key, cfg.toy_steps))
        return gn, bias_sq, var, f_sigma(w_t)

    gn, bias_sq, var, f_t = jax.vmap(trajectory)(jax.random.split(kn, cfg.toy_seeds))
    f0 = f_sigma(w0)
    # eq. 10 with the realized terms of its proof: E F_T for inf F, the mean |b_t|^2 and E|xi_t|^2 per step
    realized = zg.convergence_bound(
        f0 - f_t, eta=eta, smooth=k["L"], steps_t=cfg.toy_steps, bias_sq=jnp.mean(bias_sq, 1), var=jnp.mean(var, 1)
    )
    bound = zg.convergence_bound(
        f0, eta=eta, smooth=k["L"], steps_t=cfg.toy_steps, bias_sq=cfg.toy_dim * k["B"] ** 2, var=k["V"]
    )
    ws = jnp.linspace(-m - 1, m + 1, 2001)
    bias = jnp.abs(q_fn(ws) - zg.smoothed(ws, lv, s, law="gaussian")) * zg.surrogate_grad(ws, lv, s, law="gaussian")
    # the one-sided limits at the boundaries, where sup |Q - Q_sigma| g_sigma is attained
    bnd = zg.boundaries(lv)
    gb = zg.surrogate_grad(bnd, lv, s, law="gaussian")
    qsb = zg.smoothed(bnd, lv, s, law="gaussian")
    bias_at_b = jnp.maximum(jnp.abs(lv[1:] - qsb), jnp.abs(lv[:-1] - qsb)) * gb
    return {
        "grad_norm_sq": gn,
        "f_final": f_t,
        "f0": f0,
        "bound": jnp.asarray(bound),
        "realized_bound": realized,
        "bias_sq": bias_sq,
        "var": var,
        "constants": {kk: jnp.asarray(vv) for kk, vv in k.items()},
        "bias_w": ws,
        "bias": bias,
        "bias_sup": jnp.maximum(jnp.max(bias), jnp.max(bias_at_b)),
    }
