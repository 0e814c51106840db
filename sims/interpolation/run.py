"""The simulation (``run``): exact curves in float64, then Monte Carlo of every configuration (seeds vmapped
through ``jaxwb.sims.core.sweep.sweep``, float64) with bootstrap intervals; the Kaczmarz / coordinate-descent
panels."""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.core.sweep import sweep
from jaxwb.sims.interpolation.config import GROUPS, METHODS, Config
from jaxwb.sims.interpolation.optimise import grid_optimise, rates
from jaxwb.sims.interpolation.rows import cd_row, mc_row
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


def steps_for(rhos, cfg_eps, extra_efolds, points):
    ef = max(float(ip.efold_time(r)) for r in rhos)
    steps = int(ef * (math.log(1 / cfg_eps) + extra_efolds)) + 20
    stride = max(1, steps // points)
    return stride * math.ceil(steps / stride), stride


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


def exact_curves(cfg: Config, kernel, e0, params) -> tuple[dict, dict, dict]:
    """Exact E||e_t||^2 curves per B and per group (SGD runs much longer than momentum at large B), with the
    steps and recording stride of each."""
    theory_curves, steps_B, stride_B = {}, {}, {}
    for j, B in enumerate(cfg.batch_sizes):
        for g, group in enumerate(GROUPS):
            idx = [METHODS.index(m) for m in group]
            steps, stride = steps_for(
                [params[m]["rho"][j] for m in group], cfg.eps, cfg.fit_efolds + 3, cfg.record_points
            )
            steps_B[B, g], stride_B[B, g] = steps, stride
            theory_curves[B, g] = np.asarray(
                exact_batch(
                    kernel,
                    e0,
                    jnp.asarray([params[m]["lr"][j] for m in group]),
                    jnp.asarray([0.0 if m == "sgd" else params[m]["beta"][j] for m in group]),
                    jnp.asarray(NU[idx]),
                    jnp.full(len(group), float(B)),
                    steps,
                )
            )
    return theory_curves, steps_B, stride_B


def aux_theory(cfg: Config, problem) -> tuple:
    """The Kaczmarz and coordinate-descent problems: configurations (single, block, block + momentum), their
    exact rates and curves, and the Kaczmarz bound."""
    kz = ip.make_problem(problem.A, problem.b, sampling="norm")
    cdp = ip.coordinate_descent_problem(problem.A, problem.b)
    aux = {}
    for name, pr_ in (("kaczmarz", kz), ("cd", cdp)):
        kern, cc = ip.noise_kernel(pr_), ip.constants(pr_)
        lr_sgd_b, _ = ip.momentum_rule(float(cc.mu), float(cc.L), float(cc.L_max), cfg.block, "sgd")
        lr_hb_b, beta_hb_b = ip.momentum_rule(float(cc.mu), float(cc.L), float(cc.L_max), cfg.block, "hb")
        confs = {
            "single": (1.0 / float(cc.tr_H), 0.0, 1),
            "block": (float(lr_sgd_b), 0.0, cfg.block),
            "block_hb": (float(lr_hb_b), float(beta_hb_b), cfg.block),
        }
        rhos = {
            k: float(ip.mean_square_rate(pr_, kernel=kern, lr=a, beta=b_, batch_size=float(B_), method="hb").rho)
            for k, (a, b_, B_) in confs.items()
        }
        steps, stride = steps_for(list(rhos.values()), cfg.aux_eps, cfg.fit_efolds + 3, cfg.record_points)
        ex = np.asarray(
            exact_batch(
                kern,
                -pr_.x_star,
                jnp.asarray([v_[0] for v_ in confs.values()]),
                jnp.asarray([v_[1] for v_ in confs.values()]),
                jnp.zeros(3),
                jnp.asarray([float(v_[2]) for v_ in confs.values()]),
                steps,
            )
        )
        aux[name] = {
            "confs": confs,
            "rho": rhos,
            "steps": steps,
            "stride": stride,
            "exact": dict(zip(confs, ex, strict=True)),
            "bound_rate": float(ip.kaczmarz_rate_bound(pr_.A)),
        }
    return kz, aux


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
        theory_curves, steps_B, stride_B = exact_curves(cfg, kernel, e0, params)
        kz, aux = aux_theory(cfg, problem)
    constants = {
        "mu": mu,
        "L": L,
        "L_max": L_max,
        "tr_H": float(c.tr_H),
        "eff_rank": float(c.eff_rank),
        "row_spread": float(c.row_spread),
        "sat_sgd": float(sat["sgd"]),
        "sat_shb": float(sat["shb"]),
        "sat_rule": float(ip.rule_saturation(mu, L, L_max)),
        "residual": float(problem.residual),
    }
    return {
        "problem": problem,
        "constants": constants,
        "deterministic": {"hb_rho": float(rho_det), "polyak_rate_sq": float(r_p) ** 2, "gd_rho": gd_rho},
        "params": params,
        "nesterov_rule": nesterov_rule,
        "curves": theory_curves,
        "steps": steps_B,
        "stride": stride_B,
        "kaczmarz_problem": kz,
        "aux": aux,
    }


# ---------------------------------------------------------------------------------------------------------
# Monte Carlo (float64: in float32 the momentum difference x_t - x_{t-1} at beta ~ 0.998 loses enough precision
# to bias the B = 1 rule's measured decay by -2.5%; seeds x configurations vmapped in one sweep). Every statistic
# gets bootstrap replicates over seeds (cfg.n_boot) for its confidence interval.
# ---------------------------------------------------------------------------------------------------------


def monte_carlo(cfg: Config, th: dict, key, rng) -> tuple[dict, dict, dict]:
    """Monte Carlo of every (B, method) with its optimised parameters: iterations to eps and windowed decay with
    bootstrap replicates, beside the exact curves' values. Returns (mc, theory, curves)."""
    Bs = list(cfg.batch_sizes)
    nB, nM = len(Bs), len(METHODS)
    problem, params = th["problem"], th["params"]
    hits_mc, hits_th = np.full((nM, nB), np.nan), np.full((nM, nB), np.nan)
    rates_mc, rates_th_fit = np.full((nM, nB), np.nan), np.full((nM, nB), np.nan)
    hits_boot, rates_boot = np.full((nM, nB, cfg.n_boot), np.nan), np.full((nM, nB, cfg.n_boot), np.nan)
    windows = np.zeros((nM, nB, 2))
    diverged = np.zeros((nM, nB))
    seeds_B = np.zeros(nB, int)
    curves_out = {}
    keys = jax.random.split(key, nB * len(GROUPS))
    for j, B in enumerate(Bs):
        seeds = max(cfg.min_seeds, min(cfg.n_seeds, cfg.seed_budget // B))
        seeds_B[j] = seeds
        curves_out[f"B{B}"] = {"seeds": np.asarray(seeds)}
        for g, group in enumerate(GROUPS):
            idx = [METHODS.index(m) for m in group]
            k = len(group)
            steps, stride, th_c = th["steps"][B, g], th["stride"][B, g], th["curves"][B, g]
            rows = {
                "lr": np.repeat([params[m]["lr"][j] for m in group], seeds),
                "beta": np.repeat([0.0 if m == "sgd" else params[m]["beta"][j] for m in group], seeds),
                "gamma": np.repeat(NU[idx], seeds),
                "key": jax.random.split(keys[j * len(GROUPS) + g], k * seeds),
            }
            fn = partial(mc_row, problem=problem, batch_size=B, steps=steps, record_every=stride)
            with jax.enable_x64(True):
                errs, div = sweep(fn, rows)
            errs = np.asarray(errs, np.float64).reshape(k, seeds, -1)
            mean = errs.mean(axis=1)
            div = np.asarray(div).reshape(k, seeds)
            t = np.arange(mean.shape[1]) * stride
            full_t = np.arange(th_c.shape[1])
            lo_band, hi_band = np.zeros_like(mean), np.zeros_like(mean)
            for r, i in enumerate(idx):
                rho = float(params[METHODS[i]]["rho"][j])
                ta, tb = asymptotic_window(th_c[r], rho, cfg.fit_efolds)
                windows[i, j] = ta, tb
                boot = boot_means(errs[r], cfg.n_boot, rng)
                hits_mc[i, j] = hits(mean[r], t, cfg.eps)
                hits_th[i, j] = hits(th_c[r], full_t, cfg.eps)
                hits_boot[i, j] = hits(boot, t, cfg.eps)
                rates_mc[i, j] = fits(mean[r], t, ta, tb)
                rates_boot[i, j] = fits(boot, t, ta, tb)
                rates_th_fit[i, j] = fits(th_c[r], full_t, ta, tb)
                diverged[i, j] = div[r].mean()
                lo_band[r], hi_band[r] = np.quantile(boot / boot[:, :1], [0.025, 0.975], axis=0)
            curves_out[f"B{B}"]["_".join(group)] = {
                "t": t,
                "mc_mean": mean,
                "theory": th_c[:, ::stride],
                "mc_lo": lo_band,
                "mc_hi": hi_band,
            }
    mc = {
        "hits": hits_mc,
        "rates": rates_mc,
        "diverged_fraction": diverged,
        "hits_boot": hits_boot,
        "rates_boot": rates_boot,
        "seeds": seeds_B,
    }
    theory_out = {
        "hits": hits_th,
        "rates_fit": rates_th_fit,
        "fit_window": windows,
        "rho": np.stack([params[m]["rho"] for m in METHODS]),
    }
    return mc, theory_out, curves_out


def aux_monte_carlo(cfg: Config, th: dict, name: str, key, rng) -> dict:
    """Monte Carlo of the Kaczmarz (``name="kaczmarz"``) or coordinate-descent (``"cd"``) configurations."""
    a = th["aux"][name]
    res = {}
    for ci, (cname, (lr, beta, B)) in enumerate(a["confs"].items()):
        rows = {
            "lr": np.full(cfg.aux_seeds, lr),
            "beta": np.full(cfg.aux_seeds, beta),
            "gamma": np.zeros(cfg.aux_seeds),
            "key": jax.random.split(jax.random.fold_in(key, ci), cfg.aux_seeds),
        }
        with jax.enable_x64(True):
            if name == "kaczmarz":
                kz = th["kaczmarz_problem"]
                fn = partial(mc_row, problem=kz, batch_size=B, steps=a["steps"], record_every=a["stride"])
                errs = np.asarray(sweep(fn, rows)[0], np.float64)
            else:
                # coordinate descent acts on x of the original problem; 2 (f - f*) = ||z||^2 of the equivalent one
                fn = partial(cd_row, problem=th["problem"], batch_size=B, steps=a["steps"], record_every=a["stride"])
                errs = 2.0 * np.asarray(sweep(fn, rows), np.float64)
        mean = errs.mean(axis=0)
        t = np.arange(mean.shape[0]) * a["stride"]
        ex = a["exact"][cname]
        ta, tb = asymptotic_window(ex, a["rho"][cname], cfg.fit_efolds)
        boot = boot_means(errs, cfg.n_boot, rng)
        res[cname] = {
            "t": t,
            "mc_mean": mean,
            "mc_lo": np.quantile(boot / boot[:, :1], 0.025, axis=0),
            "mc_hi": np.quantile(boot / boot[:, :1], 0.975, axis=0),
            "exact": ex[:: a["stride"]],
            "rho": a["rho"][cname],
            "rate_mc": float(fits(mean, t, ta, tb)),
            "hit_mc": float(hits(mean, t, cfg.aux_eps)),
            "hit_boot": hits(boot, t, cfg.aux_eps),
            "hit_exact": float(hits(ex, np.arange(len(ex)), cfg.aux_eps)),
            "rate_boot": fits(boot, t, ta, tb),
            "rate_exact_fit": float(fits(ex, np.arange(len(ex)), ta, tb)),
            "fit_window": np.array([ta, tb]),
            "lr": lr,
            "beta": beta,
            "B": B,
        }
    res["bound_rate"] = a["bound_rate"]
    return res


def run(cfg: Config, *, key: jax.Array) -> dict:
    kp, kmc, kaux, kboot = jax.random.split(key, 4)
    out = {"batch_sizes": np.asarray(list(cfg.batch_sizes))}
    th = theory(cfg, kp)
    out["constants"] = th["constants"]
    out["deterministic"] = th["deterministic"]
    out["params"] = th["params"]
    out["nesterov_rule"] = th["nesterov_rule"]
    rng = np.random.default_rng(int(jax.random.randint(kboot, (), 0, 2**31 - 1)))
    out["mc"], out["theory"], out["curves"] = monte_carlo(cfg, th, kmc, rng)
    k1, k2 = jax.random.split(kaux)
    for name, kk in (("kaczmarz", k1), ("cd", k2)):
        out[name] = aux_monte_carlo(cfg, th, name, kk, rng)
    return out
