"""distillation: the simulation, ``run`` and its parts (what is measured: the package docstring).

Two studies, each one jitted program vmapped over seeds (``core.sweep``), everything in float64:

* ``timescales``: one diffusion time t, training sets of n points, p features. Per seed: the exact Gram matrices of
  the training set and of the data law, the GD loss curves (train and test) over log-spaced checkpoints, the two
  crossing times tau_gen and tau_mem, Monte Carlo estimates of the moments and of the losses (fresh noise and data),
  and the iterated GD at a short horizon (the reference of the closed form).
* ``generation``: a grid of angles, one readout per angle. Per seed: the teacher at each checkpoint of its training
  (exact GD iterate), its samples (probability-flow ODE from shared noise) and their copy fraction, nearest-neighbour
  distance and energy distance to fresh data; the student distilled from the last checkpoint by stochastic gradient
  descent on the consistency-distillation loss (fresh noise and minibatch each step), the expected student of the
  theory, the teacher with its memorised directions removed, and their samples and measures; the retention of the
  teacher's generalising and memorised directions, measured and predicted.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxwb.sims.core.sweep import sweep
from jaxwb.sims.distillation.config import Config
from jaxwb.theory import distillation as dm

CLASS_GENERALISING, CLASS_MEMORISED = 0, 1


def checkpoint_steps(cfg: Config) -> np.ndarray:
    """Log-spaced GD steps 1 .. 10^log10_steps_max of the timescale study's loss curves."""
    return np.logspace(0.0, cfg.log10_steps_max, cfg.n_checkpoints)


def grid_angles(cfg: Config) -> np.ndarray:
    """The sampler's grid theta_1 < ... < theta_K (evenly spaced)."""
    return np.linspace(*cfg.theta_range, cfg.n_theta)


# ---------------------------------------------------------------------------------------------------------
# Timescales at one diffusion time
# ---------------------------------------------------------------------------------------------------------


def _mc_checks(key, rf, X, n_valid, A, U, V, Up, Vp, t, m):
    """Monte Carlo (fresh noise; fresh data for the population) against the closed forms: the Rayleigh quotient
    u^T U u (relative deviation), u^T V e_1 for a random unit u (deviation in units of sqrt(u^T U u)) and the loss
    at readout A (relative deviation), on the first ``n_valid`` training points and on the data law: six scalars."""
    ku, ki, kx, kn, kn2 = jax.random.split(key, 5)
    p, d = V.shape
    u = jax.random.normal(ku, (p,), U.dtype)
    u = u / jnp.linalg.norm(u)
    alpha, delta = jnp.exp(-t), -jnp.expm1(-2.0 * t)  # the forward process written out (not dm.schedule)
    xi = jax.random.normal(kn, (m, d), U.dtype)
    x_train = alpha * X[jax.random.randint(ki, (m,), 0, n_valid)] + jnp.sqrt(delta) * xi
    xi2 = jax.random.normal(kn2, (m, d), U.dtype)
    x_pop = alpha * jax.random.normal(kx, (m, d), U.dtype) + jnp.sqrt(delta) * xi2
    out = {}
    for name, x, noise, (UU, VV) in (("train", x_train, xi, (U, V)), ("pop", x_pop, xi2, (Up, Vp))):
        phi = dm.features(rf, x)
        proj = phi @ u
        out[f"gram_{name}"] = jnp.mean(proj**2) / (u @ UU @ u) - 1.0
        out[f"cross_{name}"] = (jnp.mean(proj * noise[:, 0]) - u @ VV[:, 0]) / jnp.sqrt(u @ UU @ u)
        per = jnp.sum((jnp.sqrt(delta) * dm.score(A, rf, x) + noise) ** 2, axis=-1) / d
        out[f"loss_{name}"] = jnp.mean(per) / dm.dsm_loss(A, UU, VV, t) - 1.0
    return out


def timescale_n(n_valid, key, *, rf, X, Up, Vp, cfg: Config):
    """One training-set size: the first ``n_valid`` rows of X (the others weigh 0, so every n of the grid runs in
    one vmapped program on nested training sets). Loss curves, crossing times, GD check, Monte Carlo checks."""
    p = rf.W.shape[0]
    t, lr = cfg.t_fixed, cfg.lr_times_p / p
    steps = jnp.asarray(checkpoint_steps(cfg))
    weights = (jnp.arange(X.shape[0]) < n_valid).astype(X.dtype)
    U, V = dm.train_moments(rf, X, t, weights)
    lam, Q, C = dm.spectral_solution(U, V, t)
    B = C[None] * dm.gd_filter(lam, steps, lr)[:, None, :]  # readouts in the eigenbasis, (k, d, p)
    train = dm.dsm_loss(B, jnp.diag(lam), Q.T @ V, t)
    test = dm.dsm_loss(B, Q.T @ Up @ Q, Q.T @ Vp, t)
    gap = test - train
    A_closed = (C * dm.gd_filter(lam, float(cfg.iterate_steps), lr)) @ Q.T
    A_iter = dm.gd_iterate(U, V, t, steps=cfg.iterate_steps, lr=lr)
    return {
        "train": train,
        "test": test,
        "tau_gen": dm.crossing_time(steps, -test, -(jnp.min(test) + cfg.gen_level * (1.0 - jnp.min(test)))),
        "tau_mem": dm.crossing_time(steps, gap, cfg.mem_level * gap[-1]),
        "lam_train": lam,
        "iterate_error": jnp.max(jnp.abs(A_iter - A_closed)) / jnp.max(jnp.abs(A_closed)),
        **_mc_checks(key, rf, X, n_valid, A_closed, U, V, Up, Vp, t, cfg.mc_samples),
    }


def timescale_seed(key, *, p: int, cfg: Config) -> dict:
    """One seed of the timescale study at p features, every n of ``cfg.n_grid`` (nested training sets: the first n
    points of one draw; the population Gram is shared)."""
    k_rf, k_data, k_mc = jax.random.split(key, 3)
    rf = dm.init_features(cfg.d, p, key=k_rf)
    Up, Vp = dm.population_moments(rf, cfg.t_fixed)
    lam_pop, _ = dm.eigen_directions(Up)
    X = jax.random.normal(k_data, (max(cfg.n_grid), cfg.d), Up.dtype)
    fn = partial(timescale_n, rf=rf, X=X, Up=Up, Vp=Vp, cfg=cfg)
    out = jax.vmap(fn)(jnp.asarray(cfg.n_grid), jax.random.split(k_mc, len(cfg.n_grid)))  # leading axis: n
    out["lam_pop"] = lam_pop
    return out


def timescales(cfg: Config, key: jax.Array) -> dict:
    """The timescale study for every p of ``cfg.p_grid``: arrays (p, seed, n, ...) and the checkpoint steps."""
    keys = jax.random.split(key, cfg.timescale_seeds)
    per_p = [sweep(partial(timescale_seed, p=p, cfg=cfg), keys) for p in cfg.p_grid]
    res: dict[str, Any] = {
        k: np.stack([np.asarray(r[k]) for r in per_p]) for k in per_p[0] if k not in ("lam_train", "lam_pop")
    }
    # spectra differ in length between p values: keep them per p
    res["lam_train"] = {f"p{p}": np.asarray(r["lam_train"]) for p, r in zip(cfg.p_grid, per_p, strict=True)}
    res["lam_pop"] = {f"p{p}": np.asarray(r["lam_pop"]) for p, r in zip(cfg.p_grid, per_p, strict=True)}
    res["steps"] = checkpoint_steps(cfg)
    return res


# ---------------------------------------------------------------------------------------------------------
# Generation and consistency distillation
# ---------------------------------------------------------------------------------------------------------


def _measures(samples, X, ref):
    d1, d2 = dm.nearest_two(samples, X)
    return {
        "copy": dm.copy_fraction(samples, X),
        "nn_median": jnp.median(d1),
        "energy": dm.energy_distance(samples, ref),
    }


def distill_time(A_teacher, theta, theta_next, key, *, rf, X, steps: int, batch: int, lr: float):
    """The student's readout at one grid angle: ``steps`` stochastic gradient steps of the consistency-distillation
    loss (``dm.consistency_distillation_loss``) from 0, each on ``batch`` training points noised afresh."""
    grad = jax.grad(dm.consistency_distillation_loss)
    c, s = jnp.cos(theta), jnp.sin(theta)

    def body(A, k):
        ki, kn = jax.random.split(k)
        x = c * X[jax.random.randint(ki, (batch,), 0, X.shape[0])] + s * jax.random.normal(kn, (batch, X.shape[1]))
        return A - lr * grad(A, A_teacher, rf, x, theta, theta_next), None

    A, _ = lax.scan(body, jnp.zeros_like(A_teacher), jax.random.split(key, steps))
    return A


def generation_seed(key, *, n: int, p: int, cfg: Config) -> dict:
    """One seed of the generative study: teacher checkpoints, the distilled student and the references."""
    k_rf, k_x, k_z, k_ref, k_fresh, k_cd = jax.random.split(key, 6)
    rf = dm.init_features(cfg.d, p, key=k_rf)
    X = jax.random.normal(k_x, (n, cfg.d), rf.W.dtype)
    lr = cfg.lr_times_p / p
    thetas = jnp.asarray(grid_angles(cfg))
    ts = dm.time_of_angle(thetas)

    def spectrum(t):
        return dm.spectral_solution(*dm.train_moments(rf, X, t), t)

    lam, Q, C = jax.vmap(spectrum)(ts)  # (K, p), (K, p, p), (K, d, p); a batched eigh (lax.map's is 5x slower)
    ck = jnp.asarray(cfg.teacher_checkpoints)
    g = jax.vmap(lambda lam_k: dm.gd_filter(lam_k, ck, lr), out_axes=1)(lam)  # (c, K, p)
    A_ck = jnp.einsum("kij,ckj,kqj->ckiq", C, g, Q)  # (c, K, d, p)
    shape = (cfg.n_samples, cfg.d)
    z, ref, fresh = (jax.random.normal(k, shape, rf.W.dtype) for k in (k_z, k_ref, k_fresh))

    def sample(As):
        return dm.pf_ode_sample(As, rf, thetas, z)

    A_T = A_ck[-1]
    classes = dm.direction_classes(lam, lr, cfg.tau_gen, cfg.teacher_steps)  # (K, p)
    prev = jnp.concatenate([thetas[:1] / 2, thetas[:-1]])
    A_S = jax.vmap(partial(distill_time, rf=rf, X=X, steps=cfg.distill_steps, batch=cfg.distill_batch, lr=lr))(
        A_T, thetas, prev, jax.random.split(k_cd, cfg.n_theta)
    )
    r_pred = dm.predicted_retention(lam, steps=cfg.distill_steps, lr=lr)  # (K, p)
    A_pred = jnp.einsum("kip,kpj,kj,kqj->kiq", A_T, Q, r_pred, Q)
    A_proj = jnp.einsum("kip,kpj,kj,kqj->kiq", A_T, Q, (classes == CLASS_GENERALISING).astype(lam.dtype), Q)
    retention = {}
    for name, cls in (("generalising", CLASS_GENERALISING), ("memorised", CLASS_MEMORISED)):
        mask = classes == cls
        retention[name] = jax.vmap(dm.retention)(A_S, A_T, Q, mask)
        retention[f"{name}_pred"] = jax.vmap(partial(dm.predicted_group_retention, steps=cfg.distill_steps, lr=lr))(
            A_T, Q, lam, mask
        )
    # the linear bound r_j <= K lr lam_j (1 - (1 - x)^K <= K x), weighted as the retention of the memorised class
    mask = classes == CLASS_MEMORISED
    w = jnp.where(mask, jnp.sum(jnp.einsum("kip,kpj->kij", A_T, Q) ** 2, 1), 0.0)
    retention["memorised_bound"] = jnp.sum(w * cfg.distill_steps * lr * lam, 1) / jnp.sum(w, 1)
    for name, cls in (("generalising", CLASS_GENERALISING), ("memorised", CLASS_MEMORISED)):
        retention[f"{name}_count"] = jnp.sum(classes == cls, axis=1)  # (K,), recounted by a claim
    cs, ct = jnp.einsum("kip,kpj->kij", A_S, Q), jnp.einsum("kip,kpj->kij", A_T, Q)
    retention["per_direction"] = jnp.sum(cs * ct, 1) / jnp.sum(ct * ct, 1)  # (K, p), for the figure
    retention["lr_lam"] = lr * lam
    # every model through one sampler and one set of measures (one compiled copy of each)
    models = jnp.concatenate([A_ck, jnp.stack([A_S, A_pred, A_proj, jnp.zeros_like(A_T)])])
    samples = lax.map(sample, models)
    m = jax.vmap(lambda s_: _measures(s_, X, ref))(jnp.concatenate([samples[:-1], fresh[None]]))
    c = A_ck.shape[0]
    pick = lambda i: jax.tree.map(lambda a: a[i], m)
    return {
        "teacher": jax.tree.map(lambda a: a[:c], m),
        "student": pick(c),
        "student_pred": pick(c + 1),
        "teacher_projected": pick(c + 2),
        "fresh": pick(c + 3),
        "retention": retention,
        "zero_readout_gain": samples[-1] / z,
        "samples": {
            "teacher": samples[c - 1],
            "student": samples[c],
            "train": X,
            "ref": ref,
            # what a NumPy re-run of the sampler needs: the teacher's readouts, the features, the noise
            "teacher_readouts": A_T,
            "W": rf.W,
            "b": rf.b,
            "z": z,
        },
    }


def generation_configs(cfg: Config) -> dict[str, tuple[int, int]]:
    """The generative study's configurations, name -> (n, p): the smallest and largest n at p features, and the
    smallest n at p_small features."""
    return {
        "small_n": (cfg.n_gen[0], cfg.p),
        "large_n": (cfg.n_gen[-1], cfg.p),
        "small_p": (cfg.n_gen[0], cfg.p_small),
    }


def generation(cfg: Config, key: jax.Array) -> dict:
    """The generative study for every configuration of ``generation_configs``: arrays (seed, ...) per name."""
    keys = jax.random.split(key, cfg.n_seeds)
    out = {
        name: sweep(partial(generation_seed, n=n, p=p, cfg=cfg), keys)
        for name, (n, p) in generation_configs(cfg).items()
    }
    out = jax.tree.map(np.asarray, out)
    for name in ("large_n", "small_p"):
        del out[name]["samples"]  # the recount and the figure use the small-n samples
    out["thetas"] = grid_angles(cfg)
    out["checkpoints"] = np.asarray(cfg.teacher_checkpoints)
    return out


def run(cfg: Config, *, key: jax.Array) -> dict:
    k_a, k_b = jax.random.split(key)
    with jax.enable_x64(True):
        res = {"timescales": timescales(cfg, k_a), "generation": generation(cfg, k_b)}
    return jax.tree.map(np.asarray, res)
