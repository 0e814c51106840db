"""Teacher-student: the run (one compiled sweep of every fixed-point solve, AMP on data, MAP students)."""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.models import teacher_student as mts
from jaxwb.sims.core.sweep import sweep
from jaxwb.sims.teacher_student.config import Config
from jaxwb.sims.teacher_student.reference import hermite_sq_distance, map_adam_reference, reference_solve
from jaxwb.theory import teacher_student as ts

# ---------------------------------------------------------------------------------------------------------
# Run
# ---------------------------------------------------------------------------------------------------------


def _solve_row(row):
    sol = ts.solve(row["alpha"], row["a2"], row["delta"], check=False)
    return {
        "eps": sol.eps_bo,
        "k_c": sol.k_c,
        "delta_eff": sol.delta_eff,
        "converged": sol.converged,
        "residual": sol.residual,
        "m": sol.m,
        "complete": sol.complete,
        "n_candidates": sol.n_candidates,
    }


ROWS = 32  # solver rows per sweep chunk: every solve of a run has the shape (ROWS, k), so it compiles once


def _solve_rows(alphas, a2s, deltas, k: int, *, check: bool = True) -> dict:
    """Solve every row (alpha_r, a2_r, delta_r) in one sweep of fixed-shape chunks (ROWS, k) (one compilation per
    run): ``a2s`` is a list of amplitude vectors of length <= k, zero-padded to k (a feature of zero amplitude is
    never learned and adds nothing to eps, so the solution is unchanged; its m is 0). Returns the ``_solve_row``
    fields with a leading row axis; with ``check``, raises NotConvergedError if any row did not converge."""
    n = len(alphas)
    pad = -n % ROWS
    rows = np.zeros((n + pad, k), np.float32)
    for r, a2 in enumerate(a2s):
        rows[r, : len(a2)] = np.asarray(a2)
    rows[n:] = rows[n - 1]
    alpha = np.concatenate([np.asarray(alphas, np.float32), np.full(pad, alphas[-1], np.float32)])
    delta = np.concatenate([np.asarray(deltas, np.float32), np.full(pad, deltas[-1], np.float32)])
    out = dict(sweep(_solve_row, {"alpha": alpha, "a2": rows, "delta": delta}, chunk_size=ROWS))
    out = {f: np.asarray(x)[:n] for f, x in out.items()}  # host arrays: slicing them compiles nothing
    if check:
        ts.check_converged(_Conv(out["converged"], out["residual"], out["complete"]), alpha[:n])
    return out


class _Conv(NamedTuple):
    """The convergence fields of the run's solver rows (``jaxwb.theory.teacher_student.Converged``)."""

    converged: np.ndarray
    residual: np.ndarray
    complete: np.ndarray


def _thresholds(idx, a2, delta: float, k: int, lo: float = 1e-3, hi: float = 1e12, iters: int = 44) -> np.ndarray:
    """``ts.thresholds`` on the run's solver rows: per feature ``idx`` (0-based), bisection in log alpha on
    [lo, hi] for the first alpha with m_i > 1/2 (``iters`` solves each, all features in one batch per step)."""
    idx = np.asarray(idx)
    a, b = np.full(idx.size, lo), np.full(idx.size, hi)
    for _ in range(iters):
        mid = np.sqrt(a * b)
        m = np.asarray(_solve_rows(mid, [a2] * idx.size, [delta] * idx.size, k, check=False)["m"])
        learned = m[np.arange(idx.size), idx] > 0.5
        a, b = np.where(learned, a, mid), np.where(learned, mid, b)
    return np.sqrt(a * b)


def alpha_grid(cfg: Config, beta: float) -> np.ndarray:
    """log grid from alpha_lo to refine_factor x the closed-form threshold of the last feature (Delta_eff=Delta)."""
    top = float(cast(jax.Array, ts.threshold_closed_form(cfg.k, beta, cfg.k, cfg.delta))) * cfg.refine_factor
    return np.geomspace(cfg.alpha_lo, top, cfg.n_alpha)


def solve_all(cfg: Config) -> tuple[dict, dict]:
    """Every fixed-point solve of the run but the reference's (scaling for every beta, staircase, the reference's
    dense scan, the students' Bayes errors) in one table of rows: one compiled sweep. Returns (grids: name ->
    (alphas, amplitudes, delta), part: name -> the solver fields of its rows)."""
    k = cfg.k
    grids = {
        f"scaling{b}": (alpha_grid(cfg, beta), ts.amplitudes(k, beta), cfg.delta) for b, beta in enumerate(cfg.betas)
    }
    grids["stair"] = (np.geomspace(*cfg.stair_alpha, cfg.n_stair), ts.amplitudes(k, 1.0), cfg.delta)
    a2r = ts.amplitudes(cfg.ref_k, cfg.st_beta)
    # the reference grid: a uniform log grid plus every alpha of a dense scan where several self-consistent points
    # coexist (the windows where the choice of the global maximiser matters are ~1-3% wide in alpha)
    dense = np.geomspace(*cfg.ref_alpha, 12 * cfg.ref_n_alpha).astype(np.float32)
    grids["dense"] = (dense, a2r, cfg.st_delta)
    st_k = [max(1, int(d * cfg.st_k_ratio)) for d in cfg.st_ds]
    for j, kk in enumerate(st_k):
        grids[f"student{j}"] = (np.array([cfg.st_alpha]), ts.amplitudes(kk, cfg.st_beta), cfg.st_delta)
    names = list(grids)
    sizes = [len(grids[g][0]) for g in names]
    rows = _solve_rows(
        np.concatenate([grids[g][0] for g in names]),
        [grids[g][1] for g, n in zip(names, sizes, strict=True) for _ in range(n)],
        np.concatenate([np.full(n, grids[g][2]) for g, n in zip(names, sizes, strict=True)]),
        k,
    )
    ends = np.cumsum(sizes)
    part = {g: {f: x[e - n : e] for f, x in rows.items()} for g, n, e in zip(names, sizes, ends, strict=True)}
    return grids, part


def scaling(cfg: Config, grids: dict, part: dict) -> dict:
    """eps_BO and k_c vs alpha for every beta."""
    sc: dict[str, Any] = {"beta": jnp.asarray(cfg.betas), "alpha": [], "eps": [], "k_c": [], "delta_eff": []}
    for b in range(len(cfg.betas)):
        sc["alpha"].append(jnp.asarray(grids[f"scaling{b}"][0], jnp.float32))
        for f in ("eps", "k_c", "delta_eff"):
            sc[f].append(part[f"scaling{b}"][f])
    return {f: jnp.asarray(np.stack(x)) if isinstance(x, list) else x for f, x in sc.items()}


def staircase(cfg: Config, grids: dict, part: dict) -> dict:
    """Staircase at beta = 1: overlaps of the first features on a dense grid; jumps detected on the grid
    (ts.first_crossing) and thresholds bisected (as ts.thresholds) for the exponent."""
    r = part["stair"]
    idx = np.concatenate([np.arange(cfg.stair_features), np.asarray(cfg.jump_features) - 1])
    thr = _thresholds(idx, grids["stair"][1], cfg.delta, cfg.k)
    m_st = r["m"][:, : cfg.stair_features]
    det = np.asarray(ts.first_crossing(np.asarray(m_st).T, 0.5))  # (F,) first grid index with m_i > 1/2
    return {
        "alpha": jnp.asarray(grids["stair"][0], jnp.float32),
        "m": m_st,
        "delta_eff": r["delta_eff"],
        "feature": jnp.asarray(idx + 1),
        "threshold": jnp.asarray(thr, jnp.float32),
        "detected": jnp.asarray(det),
    }


def reference_comparison(cfg: Config, grids: dict, part: dict) -> dict:
    """The solver against the independent float64 reference across the first thresholds (k = ref_k)."""
    dense, a2r, _ = grids["dense"]
    coexist = dense[np.asarray(part["dense"]["n_candidates"]) >= 2]
    ra = np.sort(np.concatenate([np.geomspace(*cfg.ref_alpha, cfg.ref_n_alpha).astype(np.float32), coexist]))
    sol = _solve_rows(ra, [a2r] * ra.size, np.full(ra.size, cfg.st_delta), cfg.k)
    m_sol = sol["m"][:, : cfg.ref_k]
    ref = [reference_solve(float(a), np.asarray(a2r, np.float64), cfg.st_delta) for a in ra]
    m_ref = np.array([x["m"] for x in ref])
    return {
        "alpha": jnp.asarray(ra),
        "eps_solver": sol["eps"],
        "k_c": sol["k_c"],
        "n_candidates": sol["n_candidates"],
        "m_solver": m_sol,
        "m_ref": jnp.asarray(m_ref),
        # jumps on the reference's side found by NumPy alone (first grid index with m_i > 1/2)
        "coexist": jnp.asarray(np.isin(ra, coexist)),
        "jump_ref": jnp.asarray(np.where((m_ref > 0.5).any(0), np.argmax(m_ref > 0.5, axis=0), ra.size)),
        "jump_solver": ts.first_crossing(m_sol.T, 0.5),
        "eps_ref": jnp.asarray([x["eps"] for x in ref]),
        "n_distinct": jnp.asarray([x["n_distinct"] for x in ref]),
    }


def amp_on_data(cfg: Config, key: jax.Array) -> dict:
    """AMP on sampled spiked cubic tensors, from the learned side."""
    cs = jnp.asarray(cfg.amp_cs, jnp.float32)
    amp = [
        mts.spiked_tensor_amp(cs, key=kk, n=cfg.amp_n, iters=cfg.amp_iters, m0=cfg.amp_m0, signals=cfg.amp_signals)
        for kk in jax.random.split(key, cfg.amp_seeds)
    ]
    # per seed (one noise tensor): mean over its independent spikes
    return {
        "c": cs,
        "overlap": jnp.stack([a[0][:, -1].mean(-1) for a in amp]),
        "mse": jnp.stack([a[1][:, -1].mean(-1) for a in amp]),
        "mse_path": jnp.stack([a[1].mean(-1) for a in amp]),
    }


def students(cfg: Config, key: jax.Array, part: dict) -> dict:
    """MAP students: d grows at fixed alpha and k/d; random init vs warm start at the teacher."""
    st: dict[str, Any] = {
        "d": jnp.asarray(cfg.st_ds),
        "k": [],
        "eps_bo": [],
        "random": [],
        "warm": [],
        "warm_best": [],
        "init_test": [],
        "init_exact": [],
        "map_ref_dev": None,
    }
    for j, d in enumerate(cfg.st_ds):
        k = max(1, int(d * cfg.st_k_ratio))
        a2s = ts.amplitudes(k, cfg.st_beta)
        kd = jax.random.fold_in(key, j)
        teachers = jax.vmap(lambda kk, d=d, a2s=a2s: mts.prior_teacher(d, a2s, key=kk))(
            jax.random.split(jax.random.fold_in(kd, 0), cfg.st_seeds)
        )
        dkeys = jax.random.split(jax.random.fold_in(kd, 1), cfg.st_seeds)
        ikeys = jax.random.split(jax.random.fold_in(kd, 2), cfg.st_seeds)
        n = int(round(cfg.st_alpha * d))
        fn = partial(_student, n=n, delta=cfg.st_delta, steps=cfg.st_steps, lr=cfg.st_lr)
        warm = jnp.concatenate([jnp.zeros(cfg.st_seeds, bool), jnp.ones(cfg.st_seeds, bool)])
        tw = jax.tree.map(lambda t: jnp.concatenate([t, t]), teachers)
        res = jax.vmap(fn)(jnp.concatenate([dkeys, dkeys]), jnp.concatenate([ikeys, ikeys]), tw, warm)
        eps = float(part[f"student{j}"]["eps"][0])
        st["k"].append(k)
        st["eps_bo"].append(eps)
        st["random"].append(res["best"][: cfg.st_seeds])  # early-stopped by validation
        st["warm"].append(res["final"][cfg.st_seeds :])  # trained to the end from the teacher
        st["warm_best"].append(res["best"][cfg.st_seeds :])
        st["init_test"].append(res["test"][: cfg.st_seeds, 0])  # random init, before training: Monte Carlo
        st["init_exact"].append(init_error(teachers, ikeys, k, d))
        if j == 0:  # the smallest d: the float64 NumPy re-implementation costs ~0.1 s there
            st["map_ref_dev"] = jnp.asarray(map_reference_dev(cfg, teachers, dkeys, ikeys, res, n))
    return {f: jnp.asarray(np.array(x)) if isinstance(x, list) else x for f, x in st.items()}


def init_error(teachers, ikeys, h: int, d: int) -> np.ndarray:
    """Per seed, the exact E_x (f_init - f*)^2 of the random initialisation ``mts.train_map`` draws from its
    ``init_key`` (w ~ N(0, I_d) from the first split, v ~ 0.1 N(0, 1)/sqrt(h) from the second) against the teacher
    (``hermite_sq_distance``, closed form): the target of the students' Monte Carlo test error at step 0."""
    w0, v0 = (np.asarray(x) for x in _init_draws(ikeys, h, d))
    tw, tv = np.asarray(teachers.w), np.asarray(teachers.v)
    return np.array([hermite_sq_distance(tw[s], tv[s], w0[s], v0[s]) for s in range(len(ikeys))])


MAP_VAL_FRAC = 0.2  # ``mts.train_map``'s default validation fraction (its first round(0.2 n) samples)


def map_reference_dev(cfg: Config, teachers, dkeys, ikeys, res: dict, n: int) -> np.ndarray:
    """Per student (random init: seeds 0..S-1, then warm start: S..2S-1), the relative distance of ``train_map``'s
    end parameters (``res["w"]``, ``res["v"]``, rows random then warm) from ``reference.map_adam_reference`` (float64
    NumPy: the documented objective, Adam and schedule, cfg.st_steps steps) run from the same initialisation on the
    same training samples: max(|w - w_ref|/|w_ref|, |v - v_ref|/|v_ref|), shape (2 S,). The samples are re-drawn
    here from the data keys as documented (x ~ N(0, I_d), noise z ~ N(0, 1); y = f*(x) + sqrt(Delta) z with f*
    written out in NumPy), the random init from ``_init_draws``."""
    d = teachers.w.shape[2]
    x, z = (np.asarray(a, np.float64) for a in _data_draws(dkeys, n, d))
    w0, v0 = (np.asarray(a, np.float64) for a in _init_draws(ikeys, teachers.w.shape[1], d))
    tw, tv = np.asarray(teachers.w, np.float64), np.asarray(teachers.v, np.float64)
    u = x @ np.swapaxes(tw, 1, 2) / np.sqrt(d)
    y = (((u**3 - 3 * u) / np.sqrt(6)) @ tv[:, :, None])[:, :, 0] + np.sqrt(cfg.st_delta) * z
    n_val = max(1, int(round(MAP_VAL_FRAC * n)))
    both = lambda a, b: np.concatenate([a, b])  # random-init rows, then warm-start rows (as ``res``)
    w_ref, v_ref = map_adam_reference(
        both(w0, tw), both(v0, tv), both(x, x)[:, n_val:], both(y, y)[:, n_val:], cfg.st_delta, cfg.st_steps, cfg.st_lr
    )
    rel = lambda a, b: (
        np.linalg.norm((np.asarray(a, np.float64) - b).reshape(len(b), -1), axis=1)
        / np.linalg.norm(b.reshape(len(b), -1), axis=1)
    )
    return np.maximum(rel(res["w"], w_ref), rel(res["v"], v_ref))


@partial(jax.jit, static_argnames=("n", "d"))
def _data_draws(dkeys, n: int, d: int):
    def one(dk):
        kx, kz = jax.random.split(jax.random.split(dk)[0])
        return jax.random.normal(kx, (n, d)), jax.random.normal(kz, (n,))

    return jax.vmap(one)(dkeys)


@partial(jax.jit, static_argnames=("h", "d"))
def _init_draws(ikeys, h: int, d: int):
    def one(ik):
        kw, kv = jax.random.split(ik)
        return jax.random.normal(kw, (h, d)), 0.1 * jax.random.normal(kv, (h,)) / jnp.sqrt(h)

    return jax.vmap(one)(ikeys)


def run(cfg: Config, *, key: jax.Array) -> dict:
    grids, part = solve_all(cfg)
    out = {
        "scaling": scaling(cfg, grids, part),
        "staircase": staircase(cfg, grids, part),
        "reference": reference_comparison(cfg, grids, part),
    }
    ka, ks = jax.random.split(key)
    out["amp"] = amp_on_data(cfg, ka)
    out["student"] = students(cfg, ks, part)
    return out


def _student(dk, ik, teacher, warm, *, n, delta, steps, lr):
    return mts.train_map(teacher, data_key=dk, init_key=ik, n=n, delta=delta, steps=steps, lr=lr, warm=warm)
