"""The simulation (``run``): exact curves in float64, then Monte Carlo of every configuration (seeds vmapped
through ``jaxwb.sims.core.sweep.sweep``, float64) with bootstrap intervals; the Kaczmarz / coordinate-descent
panels."""

from __future__ import annotations

import math
from functools import partial
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.interpolation.config import METHODS, Config
from jaxwb.sims.interpolation.optimise import grid_optimise, rates
from jaxwb.sims.interpolation.statistics import asymptotic_window, boot_means, fits, hits
from jaxwb.theory import interpolation as ip

# Nesterov flag (gamma) of each method
NU = np.array([1.0 if m == "nesterov" else 0.0 for m in METHODS])

# ---------------------------------------------------------------------------------------------------------
# Theory in float64: optimised parameters, exact curves, the Kaczmarz / coordinate-descent problems
# ---------------------------------------------------------------------------------------------------------


@partial(jax.jit, static_argnames=("steps",))
def exact_batch(kernel, e0, lr, beta, nu, B, steps):
    f = lambda a, b, n_, c: ip.trajectory_jit(kernel.h, kernel.U, kernel.K, e0, a, b, n_, c, steps)
    return jax.vmap(f)(lr, beta, nu, B)


def exact_steps(rho, eps, extra_efolds):
    """Length of an exact curve: ``extra_efolds`` e-folds beyond eps at rate rho, rounded up to a power of 2 (so
    that a few compiled programs serve every configuration)."""
    steps = int(float(ip.efold_time(rho)) * (math.log(1 / eps) + extra_efolds)) + 20
    return 1 << max(6, math.ceil(math.log2(steps)))


def exact_curves_of(kernel, e0, lr, beta, nu, B, rho, eps, extra_efolds) -> list[np.ndarray]:
    """Exact E||e_t||^2 curves (full resolution) of the configurations (lr, beta, nu, B, rho: flat arrays), in one
    vmapped call per length class."""
    lens = [exact_steps(r, eps, extra_efolds) for r in rho]
    out: list = [None] * len(lens)
    for L in sorted(set(lens)):
        sel = [i for i, l_ in enumerate(lens) if l_ == L]
        arr = lambda a, sel=sel: jnp.asarray(np.asarray(a, np.float64)[sel])
        ex = np.asarray(exact_batch(kernel, e0, arr(lr), arr(beta), arr(nu), arr(B), L))
        for r, i in enumerate(sel):
            out[i] = ex[r]
    return out


def mc_plan(exact, rho, eps, span, points, margin=1.3):
    """(fit window (t_a, t_b), stride, n_chunks) of a Monte-Carlo run: it records every ``stride`` steps up to the
    later of ``margin`` x the exact curve's eps crossing and its fit window's end t_b (no later point is read)."""
    ta, tb = asymptotic_window(exact, rho, span)
    t_eps = float(hits(exact, np.arange(len(exact)), eps))
    need = max(int(margin * (t_eps if math.isfinite(t_eps) else len(exact))), int(tb)) + 10
    stride = max(1, need // points)
    return (ta, tb), stride, math.ceil(need / stride)


def optimised_params(cfg: Config, kernel, mu, L, L_max) -> tuple[dict, dict]:
    """Grid-optimised (lr, beta, rho) per method and B, the heavy-ball rule beside them; and the Nesterov rule."""
    Bs = list(cfg.batch_sizes)
    Bf = np.asarray(Bs, np.float64)
    params = {}
    for m in ("sgd", "hb", "nesterov"):
        lr, beta, rho = grid_optimise(
            kernel, Bs, m, n_grid=cfg.n_grid, n_zoom=cfg.n_zoom, zoom_points=cfg.zoom_points, L=L
        )
        params[m] = {"lr": lr, "beta": beta, "rho": rho}
    lr_r, beta_r = (np.asarray(a) for a in ip.momentum_rule(mu, L, L_max, Bf, "hb"))
    params["hb_rule"] = {"lr": lr_r, "beta": beta_r, "rho": rates(kernel, lr_r, beta_r, "hb", Bf)}
    lr_n, beta_n = (np.asarray(a) for a in ip.momentum_rule(mu, L, L_max, Bf, "nesterov"))
    rho_n = rates(kernel, lr_n, beta_n, "nesterov", Bf)
    return params, {"lr": lr_n, "beta": beta_n, "rho": rho_n}


def exact_curves(cfg: Config, kernel, e0, params) -> dict:
    """Exact E||e_t||^2 curves per (method, B) at full resolution: curves[m][j] (m in METHODS, j indexes B)."""
    Bs = list(cfg.batch_sizes)
    cfgs = [(m, j) for m in METHODS for j in range(len(Bs))]
    ex = exact_curves_of(
        kernel,
        e0,
        [params[m]["lr"][j] for m, j in cfgs],
        [0.0 if m == "sgd" else params[m]["beta"][j] for m, j in cfgs],
        [NU[METHODS.index(m)] for m, j in cfgs],
        [float(Bs[j]) for m, j in cfgs],
        [params[m]["rho"][j] for m, j in cfgs],
        cfg.eps,
        cfg.fit_efolds + 3,
    )
    curves: dict = {m: [None] * len(Bs) for m in METHODS}
    for (m, j), c in zip(cfgs, ex, strict=True):
        curves[m][j] = c
    return curves


def aux_theory(cfg: Config, problem) -> tuple:
    """The Kaczmarz and coordinate-descent problems: configurations (single, block, block + momentum), their
    exact rates and curves, and the Kaczmarz bound."""
    kz = ip.make_problem(problem.A, problem.b, sampling="norm")
    cdp = ip.coordinate_descent_problem(problem.A, problem.b)
    aux = {}
    for name, pr_ in (("kaczmarz", kz), ("cd", cdp)):
        kern, cc = ip.noise_kernel(pr_), ip.constants(pr_)
        # momentum_rule's returns: "sgd" (float, Array) on these float arguments, "hb" (Array, Array)
        lr_sgd_b, _ = cast(
            tuple[float, jax.Array],
            ip.momentum_rule(float(cc.mu), float(cc.L), float(cc.L_max), cfg.block, "sgd"),
        )
        lr_hb_b, beta_hb_b = cast(
            tuple[jax.Array, jax.Array],
            ip.momentum_rule(float(cc.mu), float(cc.L), float(cc.L_max), cfg.block, "hb"),
        )
        confs = {
            "single": (1.0 / float(cc.tr_H), 0.0, 1),
            "block": (float(lr_sgd_b), 0.0, cfg.block),
            "block_hb": (float(lr_hb_b), float(beta_hb_b), cfg.block),
        }
        rhos = {
            k: float(ip.mean_square_rate(pr_, kernel=kern, lr=a, beta=b_, batch_size=float(B_), method="hb").rho)
            for k, (a, b_, B_) in confs.items()
        }
        ex = exact_curves_of(
            kern,
            -pr_.x_star,
            [v_[0] for v_ in confs.values()],
            [v_[1] for v_ in confs.values()],
            [0.0] * 3,
            [float(v_[2]) for v_ in confs.values()],
            list(rhos.values()),
            cfg.aux_eps,
            cfg.fit_efolds + 3,
        )
        aux[name] = {
            "confs": confs,
            "rho": rhos,
            "exact": dict(zip(confs, ex, strict=True)),
            "bound_rate": float(ip.kaczmarz_rate_bound(pr_.A)),
        }
    return kz, aux


def reference_constants(A) -> dict:
    """Numpy references for the problem's constants, computed from A (n, d) without the theory module: the
    row-norm spread max ||a_i||^2 / mean ||a_i||^2 (row norms by ``np.linalg.norm``) and tr H = ||A||_F^2 / n."""
    A = np.asarray(A, np.float64)
    r = np.linalg.norm(A, axis=1) ** 2
    return {"row_spread": float(r.max() / r.mean()), "tr_H": float(np.linalg.norm(A, "fro") ** 2 / A.shape[0])}


def dense_operator(A, probs, weights, lr: float, beta: float, B: float, method: str) -> np.ndarray:
    """Eq. MS's dense (2d)^2 x (2d)^2 operator on row-major vec(S), S the second moment of the stacked errors
    (e_t, e_{t-1}), in NumPy float64 and written here from the iteration (the theory module is not called): the
    mean step M (heavy ball [[(1+beta) I - lr H, -beta I], [I, 0]], Nesterov's top row (1+beta, -beta) x (I - lr H),
    SGD beta = 0) and the sampling noise of X = w_i a_i a_i^T (row i with probability p_i) on the gradient point
    C e: T = M (x) M + lr^2/B (E1 (x) E1) (sum_i p_i w_i^2 vec(a_i a_i^T) vec(a_i a_i^T)^T - H (x) H) (C (x) C)."""
    A = np.asarray(A, np.float64)
    lr, beta, B = float(lr), float(beta), float(B)
    n, d = A.shape
    H = A.T @ A / n
    eye, zero = np.eye(d), np.zeros((d, d))
    beta = 0.0 if method == "sgd" else beta
    if method == "nesterov":
        G = eye - lr * H
        M = np.block([[(1 + beta) * G, -beta * G], [eye, zero]])
        C = np.hstack([(1 + beta) * eye, -beta * eye])
    else:
        M = np.block([[(1 + beta) * eye - lr * H, -beta * eye], [eye, zero]])
        C = np.hstack([eye, zero])
    aa = np.einsum("ij,ik->ijk", A, A).reshape(n, d * d)  # vec(a_i a_i^T)
    c = np.asarray(probs, np.float64) * np.asarray(weights, np.float64) ** 2
    N = (aa * c[:, None]).T @ aa - np.kron(H, H)
    E1 = np.vstack([eye, zero])
    return np.kron(M, M) + lr**2 / B * np.kron(E1, E1) @ N @ np.kron(C, C)


def dense_radii(cfg: Config, problem, params: dict) -> dict:
    """The spectral radius of eq. MS's dense operator (:func:`dense_operator`, ``numpy.linalg.eigvals``: no noise
    kernel, no reduced basis, no root finding) at each method's parameters, at the rate checks' batch sizes:
    {method: (len(rate_check_batches),)}."""
    out = {}
    for m, p in params.items():
        method = "hb" if m == "hb_rule" else m
        radii = []
        for j in cfg.rate_check_indices:
            T = dense_operator(
                problem.A, problem.probs, problem.weights, p["lr"][j], p["beta"][j], cfg.batch_sizes[j], method
            )
            radii.append(np.max(np.abs(np.linalg.eigvals(T))))
        out[m] = np.asarray(radii)
    return out


def theory(cfg: Config, key) -> dict:
    """Everything exact, in float64: the problem, its constants, the parameters, the exact curves, the
    deterministic (full-batch) references and the Kaczmarz / coordinate-descent theory."""
    with jax.enable_x64(True):
        problem = ip.random_problem(
            cfg.n,
            cfg.d,
            cond=cfg.cond,
            decay=cfg.decay,
            row_spread=cfg.row_spread,
            sampling=cfg.sampling,
            key=key,
        )
        c = ip.constants(problem)
        sat = ip.saturation_scales(problem)
        kernel = ip.noise_kernel(problem)
        mu, L, L_max = float(c.mu), float(c.L), float(c.L_max)
        params, nesterov_rule = optimised_params(cfg, kernel, mu, L, L_max)
        lr_p, beta_p, r_p = ip.hb_optimal_params(mu, L)
        rho_det = ip.mean_square_rate(problem, kernel=kernel, lr=lr_p, beta=beta_p, batch_size=jnp.inf, method="hb").rho
        gd_rho = ((L - mu) / (L + mu)) ** 2  # GD at lr = 2/(L + mu): ||e|| factor (k-1)/(k+1) per step
        e0 = -problem.x_star
        theory_curves = exact_curves(cfg, kernel, e0, params)
        kz, aux = aux_theory(cfg, problem)
        # float64 (outside x64 it rounds to float32)
        sat_rule = float(cast(jax.Array, ip.rule_saturation(mu, L, L_max)))
        rho_dense = dense_radii(cfg, problem, params)
    constants = {
        "mu": mu,
        "L": L,
        "L_max": L_max,
        "tr_H": float(c.tr_H),
        "eff_rank": float(c.eff_rank),
        "row_spread": float(c.row_spread),
        "sat_sgd": float(sat["sgd"]),
        "sat_shb": float(sat["shb"]),
        "sat_rule": sat_rule,
        "residual": float(problem.residual),
    }
    return {
        "problem": problem,
        "constants": constants,
        "reference": {**reference_constants(problem.A), "rho_dense": rho_dense},
        "deterministic": {"hb_rho": float(rho_det), "polyak_rate_sq": float(r_p) ** 2, "gd_rho": gd_rho},
        "params": params,
        "nesterov_rule": nesterov_rule,
        "curves": theory_curves,
        "kaczmarz_problem": kz,
        "aux": aux,
    }


# ---------------------------------------------------------------------------------------------------------
# Monte Carlo (float64; the iteration runs on the error in velocity form, ``jaxwb.theory.interpolation.curves_jit``:
# no cancellation of x_t - x_{t-1} at beta ~ 0.998). Seeds vmapped; one compiled program per batch size (the run
# length and recording stride are traced); every configuration runs only as long as its statistics read (the
# exact curve's eps crossing or fit window, whichever is later, x 1.3). Every statistic gets bootstrap replicates
# over seeds (scipy.stats.bootstrap, cfg.n_boot resamples) for its confidence interval.
# ---------------------------------------------------------------------------------------------------------


@partial(jax.jit, static_argnames=("batch_size", "n_records"))
def mc_batch(problem, lr, beta, gamma, keys, n_chunks, stride, batch_size, n_records):
    """Monte Carlo of many seeds/configurations: rows (lr, beta, gamma, keys) (S,) -> (||e_t||^2 (S, n_records + 1),
    diverged (S,)) from x_0 = 0."""
    f = lambda a, b, c, k: ip.curves_jit(problem, -problem.x_star, a, b, c, k, n_chunks, stride, batch_size, n_records)
    return jax.vmap(f)(lr, beta, gamma, keys)


@partial(jax.jit, static_argnames=("batch_size", "n_records"))
def cd_batch(problem, lr, beta, keys, n_chunks, stride, batch_size, n_records):
    """Coordinate descent of many seeds: 2 (f - f*) = ||z||^2 of the equivalent Kaczmarz problem, (S, n_records+1)."""
    f = lambda a, b, k: ip.cd_curves_jit(
        problem.A, -problem.x_star, a, b, 0.0 * a, k, n_chunks, stride, batch_size, n_records
    )
    return 2.0 * jax.vmap(f)(lr, beta, keys)


def simulate(problem, lr, beta, gamma, key, seeds, B, plan, cfg: Config, cd=False):
    """(errs (seeds, P), diverged fraction, t (P,)) of one configuration run by Monte Carlo along ``plan``."""
    _, stride, n_chunks = plan
    n_rec = 2 * cfg.record_points + 2  # n_chunks <= points + need / stride < 2 points + 2
    keys = jax.random.split(key, seeds)
    full = lambda x: jnp.full(seeds, x, jnp.float64)
    with jax.enable_x64(True):
        if cd:
            errs, div = cd_batch(problem, full(lr), full(beta), keys, n_chunks, stride, B, n_rec), np.zeros(seeds)
        else:
            errs, div = mc_batch(problem, full(lr), full(beta), full(gamma), keys, n_chunks, stride, B, n_rec)
    errs = np.asarray(errs, np.float64)[:, : n_chunks + 1]
    return errs, float(np.mean(np.asarray(div))), np.arange(n_chunks + 1) * stride


def monte_carlo(cfg: Config, th: dict, key, rng) -> tuple[dict, dict, dict]:
    """Monte Carlo of every (B, method) with its optimised parameters: iterations to eps and windowed decay with
    bootstrap replicates, beside the exact curves' values. Returns (mc, theory, curves)."""
    Bs = list(cfg.batch_sizes)
    nB, nM = len(Bs), len(METHODS)
    problem, params = th["problem"], th["params"]
    out = {k: np.full((nM, nB), np.nan) for k in ("hits", "rates", "hits_th", "rates_th", "diverged")}
    boot = {k: np.full((nM, nB, cfg.n_boot), np.nan) for k in ("hits", "rates")}
    windows = np.zeros((nM, nB, 2))
    seeds_ij = np.zeros((nM, nB), int)
    curves_out: dict = {}
    # streams: independent keys per (method, B) (each configuration its own seed count, ``Config.seed_scale``), or
    # with ``common_random_numbers`` every method at one B on the same keys and bootstrap resamples (paired
    # replicates; measured: no narrower, docs/papers/interpolation.md); batch sizes are independent of each other
    crn = cfg.common_random_numbers
    keys = jax.random.split(key, nB if crn else nB * nM)
    for j, B in enumerate(Bs):
        curves_out[f"B{B}"] = {}
        boot_seed = int(rng.integers(2**63)) if crn else None
        for i, m in enumerate(METHODS):
            seeds = cfg.seeds_of("sgd" if crn else m, B)
            seeds_ij[i, j] = seeds
            bs = boot_seed if crn else int(rng.integers(2**63))
            p, ex = params[m], th["curves"][m][j]
            plan = mc_plan(ex, float(p["rho"][j]), cfg.eps, cfg.fit_efolds, cfg.record_points)
            beta = 0.0 if m == "sgd" else float(p["beta"][j])
            k_ij = keys[j] if crn else keys[j * nM + i]
            errs, out["diverged"][i, j], t = simulate(
                problem, float(p["lr"][j]), beta, NU[i], k_ij, seeds, B, plan, cfg
            )
            (ta, tb), full_t = plan[0], np.arange(len(ex))
            windows[i, j] = ta, tb
            mean, reps = errs.mean(axis=0), boot_means(errs, cfg.n_boot, np.random.default_rng(bs))
            out["hits"][i, j], boot["hits"][i, j] = hits(mean, t, cfg.eps), hits(reps, t, cfg.eps)
            out["rates"][i, j], boot["rates"][i, j] = fits(mean, t, ta, tb), fits(reps, t, ta, tb)
            out["hits_th"][i, j] = hits(ex, full_t, cfg.eps)
            out["rates_th"][i, j] = fits(ex, full_t, ta, tb)
            lo, hi = np.quantile(reps / reps[:, :1], [0.025, 0.975], axis=0)
            curves_out[f"B{B}"][m] = {
                "t": t,
                "mc_mean": mean,
                "theory": ex[np.minimum(t, len(ex) - 1)],
                "mc_lo": lo,
                "mc_hi": hi,
            }
    mc = {
        "hits": out["hits"],
        "rates": out["rates"],
        "diverged_fraction": out["diverged"],
        "hits_boot": boot["hits"],
        "rates_boot": boot["rates"],
        "seeds": seeds_ij,
    }
    theory_out = {
        "hits": out["hits_th"],
        "rates_fit": out["rates_th"],
        "fit_window": windows,
        "rho": np.stack([params[m]["rho"] for m in METHODS]),
    }
    return mc, theory_out, curves_out


def aux_monte_carlo(cfg: Config, th: dict, name: str, key, rng) -> dict:
    """Monte Carlo of the Kaczmarz (``name="kaczmarz"``) or coordinate-descent (``"cd"``) configurations."""
    a = th["aux"][name]
    res: dict = {}
    # coordinate descent acts on x of the original problem; 2 (f - f*) = ||z||^2 of the equivalent one
    problem = th["kaczmarz_problem"] if name == "kaczmarz" else th["problem"]
    for ci, (cname, (lr, beta, B)) in enumerate(a["confs"].items()):
        ex = a["exact"][cname]
        plan = mc_plan(ex, a["rho"][cname], cfg.aux_eps, cfg.fit_efolds, cfg.record_points)
        seeds = cfg.aux_seeds_of(name, cname)
        errs, _, t = simulate(problem, lr, beta, 0.0, jax.random.fold_in(key, ci), seeds, B, plan, cfg, cd=name == "cd")
        mean = errs.mean(axis=0)
        (ta, tb), full_t = plan[0], np.arange(len(ex))
        boot = boot_means(errs, cfg.n_boot, rng)
        res[cname] = {
            "t": t,
            "mc_mean": mean,
            "mc_lo": np.quantile(boot / boot[:, :1], 0.025, axis=0),
            "mc_hi": np.quantile(boot / boot[:, :1], 0.975, axis=0),
            "exact": ex[np.minimum(t, len(ex) - 1)],
            "rho": a["rho"][cname],
            "rate_mc": float(fits(mean, t, ta, tb)),
            "hit_mc": float(hits(mean, t, cfg.aux_eps)),
            "hit_boot": hits(boot, t, cfg.aux_eps),
            "hit_exact": float(hits(ex, full_t, cfg.aux_eps)),
            "rate_boot": fits(boot, t, ta, tb),
            "rate_exact_fit": float(fits(ex, full_t, ta, tb)),
            "fit_window": np.array([ta, tb]),
            "lr": lr,
            "beta": beta,
            "B": B,
            "seeds": seeds,
        }
    res["bound_rate"] = a["bound_rate"]
    return res


def run_keys(key: jax.Array) -> jax.Array:
    """The run's keys from its seed key: (problem, Monte Carlo, auxiliary, bootstrap)."""
    return jax.random.split(key, 4)


def problem_key(cfg: Config, key: jax.Array) -> jax.Array:
    """The key of the run's problem: the run's own (``run_keys``) or, with ``cfg.problem_seed``, that of the run with
    that seed (the same problem at every seed)."""
    return run_keys(key if cfg.problem_seed is None else jax.random.key(cfg.problem_seed))[0]


def run(cfg: Config, *, key: jax.Array) -> dict:
    _, kmc, kaux, kboot = run_keys(key)
    kp = problem_key(cfg, key)
    out: dict[str, Any] = {"batch_sizes": np.asarray(list(cfg.batch_sizes))}
    th = theory(cfg, kp)
    out["constants"] = th["constants"]
    out["reference"] = th["reference"]
    out["deterministic"] = th["deterministic"]
    out["params"] = th["params"]
    out["nesterov_rule"] = th["nesterov_rule"]
    rng = np.random.default_rng(int(jax.random.randint(kboot, (), 0, 2**31 - 1)))
    out["mc"], out["theory"], out["curves"] = monte_carlo(cfg, th, kmc, rng)
    k1, k2 = jax.random.split(kaux)
    for name, kk in (("kaczmarz", k1), ("cd", k2)):
        out[name] = aux_monte_carlo(cfg, th, name, kk, rng)
    return out
