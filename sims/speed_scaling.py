"""Online speed scaling with predictions: machine-speed predictions (SP) and job-workload predictions (LAS) against
the classic online algorithms, measured as energy / OPT (YDS = 1). Spec: ``shared/papers/speed_scaling.md``.

Figures (``figures/speed_scaling/``):
  ratio_vs_error.png   SP's ratio vs the relative L_alpha error of a noisy speed prediction, one curve per eps
                       (dynamic solid, offline dashed), AVR / OA / qOA / BKP as horizontal lines, YDS = 1
  profiles.png         speed profiles of OPT vs the algorithms on one small instance
  robustness.png       worst ratio under adversarial predictions per eps, with the robustness bound
  las_experiment.png   LAS's experiment (200 jobs, D = 20, alpha = 3, 20 seeds): mean ratios beside the published
  avr_lower_bound.png  AVR / OPT on the lower-bound family at alpha = 2 approaching alpha^alpha = 4

Grids: the LAS instances have integer release times; online algorithms run on a grid of ``substeps`` slots per
time unit (AVR, OA are exact on it; qOA and BKP are discretised; LAS and SP round their shrink to whole slots).
"""

from __future__ import annotations

import dataclasses
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from sims import style
from sims.harness import BenchRow, Claim
from sims.sweep import sweep
from theory import speed_scaling as ss

NAME = "speed_scaling"
TITLE = "Speed scaling with machine-speed predictions: (1+eps)-consistent, O(1)-robust; LAS and classic baselines"

BASELINES = ("avr", "oa", "qoa", "bkp")
PUBLISHED = {"avr": 1.27, "oa": 1.20, "bkp": 7.88}  # Bamas et al. 2020, mean ratios of their experiment
PUBLISHED_LAS = (1.008, 1.026)
ADVERSARIAL = ("zero", "scaled_up", "scaled_down", "shifted_early", "shifted_late", "reversed", "uniform",
               "spikes", "very_noisy")
# Published numbers we do not reproduce; the claim is kept (and fails) and the reason is written here.
KNOWN_MISMATCHES = {
    "BKP mean ratio": "BKP implemented from its definition (s = max_t' w(t, et-(e-1)t', t')/(t'-t)) gives ~3.4 on "
                      "our random walk; the published 7.88 depends on their BKP variant/discretisation and "
                      "generator, which our notes do not specify",
}


@dataclasses.dataclass(frozen=True)
class Config:
    alpha: float = 3.0
    eps_values: tuple[float, ...] = (0.1, 0.5, 2.0)
    # LAS experiment (Bamas et al.): n jobs, one per time unit, window D, random-walk workloads in [20, 80]
    las_jobs: int = 200
    las_window: int = 20
    las_seeds: int = 20
    las_substeps: int = 4
    walk_step: float = 5.0
    # error sweep / adversarial predictions for SP (smaller instances of the same family)
    sweep_jobs: int = 100
    sweep_substeps: int = 2
    sweep_seeds: int = 8
    noise_levels: tuple[float, ...] = (0.0, 0.1, 0.2, 0.4, 0.8, 1.6)
    # worst-case bound checks on general random instances
    bound_jobs: int = 12
    bound_horizon: int = 30
    bound_seeds: int = 64
    # AVR lower-bound family at alpha = 2
    lb_jobs: int = 400
    lb_kappas: tuple[float, ...] = (0.4, 0.2, 0.1)
    chunk: int = 5


PRESETS = {
    "full": Config(),
    "quick": Config(eps_values=(0.1, 2.0), las_jobs=60, las_seeds=3, las_substeps=2, sweep_jobs=40,
                    sweep_seeds=2, noise_levels=(0.0, 0.4, 1.6), bound_seeds=8, lb_jobs=120, lb_kappas=(0.4,),
                    chunk=3),
}


def _ratio(sched, opt, alpha):
    return ss.energy(sched.profile, alpha) / opt


def _baselines(r, d, w, opt, alpha, n_slots, dt):
    out = {}
    for name in BASELINES:
        if name == "qoa":
            sched = ss.qoa(r, d, w, alpha=alpha, n_slots=n_slots, dt=dt)
        else:
            sched = getattr(ss, name)(r, d, w, n_slots=n_slots, dt=dt)
        out[name] = _ratio(sched, opt, alpha)
        out[f"{name}_feasible"] = sched.feasible
    return out


# ---------------------------------------------------------------------------------------------------------
# Pieces (pure functions of a PRNG key, vmapped by sims.sweep)
# ---------------------------------------------------------------------------------------------------------


def _las_row(key, *, cfg: Config):
    """One seed of the LAS experiment: baselines, LAS with three predictors, SP with the exact OPT speed."""
    a, sub = cfg.alpha, cfg.las_substeps
    dt, n_slots = 1.0 / sub, (cfg.las_jobs + cfg.las_window) * sub
    k_inst, k_pred = jax.random.split(key)
    r, d, w = ss.las_instance(k_inst, cfg.las_jobs, cfg.las_window, step=cfg.walk_step)
    opt_res = ss.yds(r, d, w)
    opt = ss.energy(opt_res.profile, a)
    out = _baselines(r, d, w, opt, a, n_slots, dt)
    s_opt = ss.profile_on_grid(opt_res.profile, n_slots, dt)
    eps = jnp.asarray(cfg.eps_values)
    for kind in ss.WORK_PREDICTIONS:
        pred = ss.predict_work(k_pred, w, kind)
        out[f"las_{kind}"] = jax.vmap(
            lambda e, pred=pred: _ratio(ss.las(r, d, w, pred, eps=e, alpha=a, n_slots=n_slots, dt=dt), opt, a))(eps)
    for mode in ss.SP_MODES:
        out[f"sp_{mode}"] = jax.vmap(lambda e, mode=mode: _ratio(
            ss.speed_prediction_schedule(r, d, w, s_opt, eps=e, alpha=a, mode=mode, dt=dt), opt, a))(eps)
    return out


def _sweep_instance(key, cfg: Config):
    dt, n_slots = 1.0 / cfg.sweep_substeps, (cfg.sweep_jobs + cfg.las_window) * cfg.sweep_substeps
    r, d, w = ss.las_instance(key, cfg.sweep_jobs, cfg.las_window, step=cfg.walk_step)
    opt_res = ss.yds(r, d, w)
    return r, d, w, ss.energy(opt_res.profile, cfg.alpha), ss.profile_on_grid(opt_res.profile, n_slots, dt), dt


def _sp_ratios(r, d, w, opt, s_hat, dt, cfg):
    eps = jnp.asarray(cfg.eps_values)
    out = {}
    for mode in ss.SP_MODES:
        out[mode] = jax.vmap(lambda e, mode=mode: _ratio(
            ss.speed_prediction_schedule(r, d, w, s_hat, eps=e, alpha=cfg.alpha, mode=mode, dt=dt), opt,
            cfg.alpha))(eps)
    return out


def _error_row(key, *, cfg: Config):
    """One seed: SP's ratio at every noise level (noisy speed predictions) and the baselines."""
    k_inst, k_noise = jax.random.split(key)
    r, d, w, opt, s_opt, dt = _sweep_instance(k_inst, cfg)
    n_slots = s_opt.shape[0]
    out = _baselines(r, d, w, opt, cfg.alpha, n_slots, dt)

    def at_noise(sigma, k):
        s_hat = ss.predict_speed(k, s_opt, "noisy", sigma)
        res = _sp_ratios(r, d, w, opt, s_hat, dt, cfg)
        res["error"] = ss.prediction_error(s_hat, s_opt, cfg.alpha)
        return res

    sig = jnp.asarray(cfg.noise_levels)
    out["sp"] = jax.lax.map(lambda x: at_noise(*x), (sig, jax.random.split(k_noise, sig.shape[0])))
    return out


def _adversarial_predictions(key, s_opt, cfg: Config):
    sub, D = cfg.sweep_substeps, cfg.las_window
    return {
        "zero": ss.predict_speed(key, s_opt, "zero"),
        "scaled_up": ss.predict_speed(key, s_opt, "scaled", scale=10.0),
        "scaled_down": ss.predict_speed(key, s_opt, "scaled", scale=0.1),
        "shifted_early": ss.predict_speed(key, s_opt, "shifted", shift=-(D * sub) // 2),
        "shifted_late": ss.predict_speed(key, s_opt, "shifted", shift=(D * sub) // 2),
        "reversed": ss.predict_speed(key, s_opt, "reversed"),
        "uniform": ss.predict_speed(key, s_opt, "uniform"),
        "spikes": ss.predict_speed(key, s_opt, "spikes", period=D * sub),
        "very_noisy": ss.predict_speed(key, s_opt, "noisy", 3.0),
    }


def _adversarial_row(key, *, cfg: Config):
    k_inst, k_pred = jax.random.split(key)
    r, d, w, opt, s_opt, dt = _sweep_instance(k_inst, cfg)
    preds = _adversarial_predictions(k_pred, s_opt, cfg)
    stacked = jnp.stack([preds[k] for k in ADVERSARIAL])
    res = jax.lax.map(lambda s_hat: _sp_ratios(r, d, w, opt, s_hat, dt, cfg), stacked)  # (kinds, eps)
    m, delta_eff = ss.shrink_slots(r, d, jnp.asarray(cfg.eps_values)[:, None], cfg.alpha, dt)
    res["delta_eff"] = jnp.min(delta_eff, axis=1)
    return res


def _bounds_row(key, *, cfg: Config, alpha: float):
    """A general random instance: ratios of AVR, OA, BKP (fine grid) and the feasibility of each schedule."""
    sub = 4
    r, d, w = ss.random_instance(key, cfg.bound_jobs, cfg.bound_horizon, 1, 12, 10.0)
    opt = ss.energy(ss.yds(r, d, w).profile, alpha)
    n_slots = cfg.bound_horizon * sub
    return _baselines(r, d, w, opt, alpha, n_slots, 1.0 / sub)


def _profiles(key, cfg: Config):
    """Speed profiles of every algorithm on one small instance (12 jobs on [0, 30])."""
    a, sub, horizon = cfg.alpha, 4, 30
    dt, n_slots = 1.0 / sub, horizon * sub
    r, d, w = ss.random_instance(key, 12, horizon, 2, 14, 10.0)
    opt_res = ss.yds(r, d, w)
    opt = ss.energy(opt_res.profile, a)
    s_opt = ss.profile_on_grid(opt_res.profile, n_slots, dt)
    s_hat = ss.predict_speed(jax.random.fold_in(key, 1), s_opt, "noisy", 0.4)
    eps = 0.5
    scheds = {
        "AVR": ss.avr(r, d, w, n_slots=n_slots, dt=dt),
        "OA": ss.oa(r, d, w, n_slots=n_slots, dt=dt),
        "qOA": ss.qoa(r, d, w, alpha=a, n_slots=n_slots, dt=dt),
        "BKP": ss.bkp(r, d, w, n_slots=n_slots, dt=dt),
        "SP dynamic (noise 0.4)": ss.speed_prediction_schedule(r, d, w, s_hat, eps=eps, alpha=a, dt=dt),
        "LAS (noise 0.2)": ss.las(r, d, w, ss.predict_work(jax.random.fold_in(key, 2), w, "accurate", 0.2),
                                  eps=eps, alpha=a, n_slots=n_slots, dt=dt),
    }
    return {"release": r, "deadline": d, "work": w, "opt_edges": opt_res.profile.edges,
            "opt_speed": opt_res.profile.speed, "prediction": s_hat, "eps": jnp.asarray(eps),
            "speed": {k: s.profile.speed for k, s in scheds.items()},
            "ratio": {k: ss.energy(s.profile, a) / opt for k, s in scheds.items()}}


def _avr_lower_bound(cfg: Config):
    out = {"kappa": np.asarray(cfg.lb_kappas), "measured": [], "continuum": []}
    with jax.enable_x64(True):
        for kappa in cfg.lb_kappas:
            r, d, w = ss.avr_lower_bound_instance(cfg.lb_jobs, 2.0, kappa)
            opt = ss.energy(ss.yds(r, d, w).profile, 2.0)
            out["measured"].append(float(ss.energy(ss.avr_profile(r, d, w), 2.0) / opt))
            out["continuum"].append(float(ss.avr_lower_bound_ratio(2.0, kappa)))
    out["measured"] = np.asarray(out["measured"])
    out["continuum"] = np.asarray(out["continuum"])
    fine = np.geomspace(1e-3, 0.9, 40)
    out["curve_kappa"] = fine
    out["curve_ratio"] = np.asarray([ss.avr_lower_bound_ratio(2.0, k) for k in fine])
    return out


def run(cfg: Config, *, key: jax.Array) -> dict:
    k_las, k_err, k_adv, k_bnd, k_prof = jax.random.split(key, 5)
    out = {"eps": jnp.asarray(cfg.eps_values)}
    out["las"] = sweep(partial(_las_row, cfg=cfg), jax.random.split(k_las, cfg.las_seeds), chunk_size=cfg.chunk)
    out["error"] = sweep(partial(_error_row, cfg=cfg), jax.random.split(k_err, cfg.sweep_seeds),
                         chunk_size=cfg.chunk)
    out["adversarial"] = sweep(partial(_adversarial_row, cfg=cfg), jax.random.split(k_adv, cfg.sweep_seeds),
                               chunk_size=cfg.chunk)
    out["bounds"] = {f"alpha{int(a)}": sweep(partial(_bounds_row, cfg=cfg, alpha=a),
                                             jax.random.split(jax.random.fold_in(k_bnd, int(a)), cfg.bound_seeds))
                     for a in (2.0, 3.0)}
    out["profiles"] = _profiles(k_prof, cfg)
    out["avr_lb"] = _avr_lower_bound(cfg)
    return out


# ---------------------------------------------------------------------------------------------------------
# Claims
# ---------------------------------------------------------------------------------------------------------


def claims(results: dict, cfg: Config) -> list[Claim]:
    a = cfg.alpha
    eps = np.asarray(results["eps"])
    out = []
    err = results["error"]
    noise = np.asarray(cfg.noise_levels)
    i0 = int(np.argmin(np.abs(noise)))
    for mode in ss.SP_MODES:
        worst0 = np.max(np.asarray(err["sp"][mode])[:, i0, :], axis=0)  # (eps,) worst seed at zero error
        for e, m in zip(eps, worst0, strict=True):
            out.append(Claim(f"SP-{mode} consistency: worst ratio at zero error <= 1 + eps (eps={e:g})", 1 + e, m,
                             0.0, "le", source="paper"))
    las = results["las"]
    for e, m in zip(eps, np.max(np.asarray(las["las_accurate"]), axis=0), strict=True):
        out.append(Claim(f"LAS consistency: worst ratio with exact workloads <= 1 + eps (eps={e:g})", 1 + e, m, 0.0,
                         "le", source="paper"))
    adv = results["adversarial"]
    delta = np.min(np.asarray(adv["delta_eff"]), axis=0)
    for j, e in enumerate(eps):
        worst = max(np.max(np.asarray(adv[mode])[:, :, j]) for mode in ss.SP_MODES)
        out.append(Claim(f"SP robustness: worst adversarial ratio <= delta^-a 2^(a-1) a^a (eps={e:g}, "
                         f"delta_eff={delta[j]:.3f})", float(ss.sp_robustness_bound(a, delta[j])), worst, 0.0,
                         "le", source="theory"))
        worst_las = max(np.max(np.asarray(las[f"las_{k}"])[:, j]) for k in ss.WORK_PREDICTIONS)
        out.append(Claim(f"LAS robustness: worst ratio (random/misleading predictors) below the same bound "
                         f"(eps={e:g})", float(ss.sp_robustness_bound(a, delta[j])), worst_las, 0.0, "le",
                         source="theory"))
    for name, pub in PUBLISHED.items():
        label = {"avr": "AVR", "oa": "OA", "bkp": "BKP"}[name]
        out.append(Claim(f"{label} mean ratio (LAS experiment, {cfg.las_jobs} jobs, D={cfg.las_window}, a={a:g}, "
                         f"{cfg.las_seeds} seeds) vs published", pub, np.mean(np.asarray(las[name])), 0.1, "rel"))
    lo, hi = PUBLISHED_LAS
    mean_las = np.mean(np.asarray(las["las_accurate"]), axis=0)
    for e, m in zip(eps, mean_las, strict=True):
        out.append(Claim(f"LAS-accurate mean ratio within the published range [{lo}, {hi}] (eps={e:g})",
                         (lo + hi) / 2, m, (hi - lo) / 2, "abs"))
    for label in ("alpha2", "alpha3"):
        al = 2.0 if label == "alpha2" else 3.0
        b = results["bounds"][label]
        for name, bound in (("avr", ss.avr_bound(al)), ("oa", ss.oa_bound(al)), ("bkp", ss.bkp_bound(al))):
            out.append(Claim(f"{name.upper()} worst ratio <= its bound on random instances (alpha={al:g})",
                             float(bound), float(np.max(np.asarray(b[name]))), 0.0, "le", source="theory"))
        feas = all(bool(np.all(np.asarray(b[f"{n}_feasible"]))) for n in BASELINES)
        out.append(Claim(f"every AVR/OA/qOA/BKP schedule meets every deadline (alpha={al:g}, 1 = all)", 1.0,
                         float(feas), 0.0, "abs", source="theory"))
    lb = results["avr_lb"]
    for k, m, c in zip(lb["kappa"], lb["measured"], lb["continuum"], strict=True):
        out.append(Claim(f"AVR/OPT on the lower-bound family at alpha=2, kappa={k:g} (-> 4 as kappa -> 0)", c, m,
                         0.05, "rel", source="theory"))
    return out


# ---------------------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------------------

COLORS = {"avr": "tab:orange", "oa": "tab:green", "qoa": "tab:olive", "bkp": "tab:red"}
LABELS = {"avr": "AVR", "oa": "OA", "qoa": "qOA", "bkp": "BKP"}


def plot(results: dict, cfg: Config) -> dict:
    figs = {}
    a = cfg.alpha
    eps = np.asarray(results["eps"])
    cmap = [f"C{i}" for i in range(len(eps))]

    # ratio vs prediction error
    err = results["error"]
    fig, ax = style.figure(figsize=(8, 5))
    x = np.mean(np.asarray(err["sp"]["error"]), axis=0)
    for j, e in enumerate(eps):
        for mode, ls in (("dynamic", "-"), ("offline", "--")):
            y = np.asarray(err["sp"][mode])[:, :, j]
            ax.errorbar(x, y.mean(0), yerr=y.std(0), fmt="o" + ls, color=cmap[j], ms=4, capsize=2,
                        label=f"SP {mode}, eps={e:g}" if mode == "dynamic" else f"SP offline, eps={e:g}")
        ax.axhline(1 + e, color=cmap[j], lw=0.8, ls=":")
    for name in BASELINES:
        ax.axhline(np.mean(np.asarray(err[name])), color=COLORS[name], lw=1.5, alpha=0.7,
                   label=f"{LABELS[name]} (no prediction)")
    ax.axhline(1.0, **style.prediction(), label="YDS = OPT = 1")
    ax.set(xscale="symlog", xlabel="relative prediction error ||s_hat - s*||_a / ||s*||_a (symlog)",
           ylabel="energy / OPT", yscale="log",
           title=f"SP with noisy machine-speed predictions ({cfg.sweep_jobs} jobs, D={cfg.las_window}, a={a:g}, "
                 f"{cfg.sweep_seeds} seeds; dotted: 1 + eps)")
    ax.set_xlim(left=0)
    ax.legend(fontsize=7, ncol=2)
    figs["ratio_vs_error"] = fig

    # speed profiles
    p = results["profiles"]
    fig, axes = style.figure(2, 1, figsize=(10, 7), sharex=True)
    edges, sp = np.asarray(p["opt_edges"]), np.asarray(p["opt_speed"])
    n_slots = np.asarray(p["prediction"]).shape[0]
    tgrid = np.arange(n_slots + 1) * (30.0 / n_slots)
    ratios = {k: float(v) for k, v in p["ratio"].items()}
    for ax, names in zip(axes, (("AVR", "OA", "qOA", "BKP"), ("SP dynamic (noise 0.4)", "LAS (noise 0.2)")),
                         strict=True):
        ax.stairs(sp, edges, color="black", lw=2.2, label="OPT (YDS, exact)")
        for name in names:
            ax.stairs(np.asarray(p["speed"][name]), tgrid, lw=1.2, label=f"{name}: E/OPT = {ratios[name]:.3f}")
        if names[0].startswith("SP"):
            ax.stairs(np.asarray(p["prediction"]), tgrid, color="0.6", lw=0.8, ls=":", label="predicted speed s_hat")
        ax.set(ylabel="speed s(t)")
        ax.legend(fontsize=8, loc="upper right")
    r, d = np.asarray(p["release"]), np.asarray(p["deadline"])
    ymax = axes[1].get_ylim()[1]
    for i, (ri, di) in enumerate(zip(r, d, strict=True)):
        axes[1].plot([ri, di], [ymax * (0.97 - 0.025 * i)] * 2, color="0.4", lw=1)
    axes[0].set_title(f"Speed profiles on one instance (12 jobs; grey bars: job windows; a={a:g}, eps={float(p['eps']):g})")
    axes[1].set(xlabel="time t")
    figs["profiles"] = fig

    # robustness
    adv = results["adversarial"]
    fig, ax = style.figure(figsize=(10, 5))
    width = 0.8 / (2 * len(eps))
    xs = np.arange(len(ADVERSARIAL))
    for j, e in enumerate(eps):
        for mi, mode in enumerate(ss.SP_MODES):
            worst = np.max(np.asarray(adv[mode])[:, :, j], axis=0)
            off = (2 * j + mi - len(eps) + 0.5) * width
            ax.bar(xs + off, worst, width, color=cmap[j], alpha=1.0 if mode == "dynamic" else 0.5,
                   label=f"SP {mode}, eps={e:g}")
    delta = np.min(np.asarray(adv["delta_eff"]), axis=0)
    for j, e in enumerate(eps):
        ax.axhline(float(ss.sp_robustness_bound(a, delta[j])), **style.prediction(color=cmap[j]),
                   label=f"bound delta^-a 2^(a-1) a^a, eps={e:g}")
    err = results["error"]
    ax.axhline(np.mean(np.asarray(err["oa"])), color=COLORS["oa"], lw=1.5, label="OA (mean)")
    ax.axhline(ss.oa_bound(a), color=COLORS["oa"], lw=1, ls="-.", label="OA's bound a^a")
    ax.set(xticks=xs, yscale="log", ylabel="worst energy / OPT over seeds",
           title="Robustness: SP under adversarial speed predictions")
    ax.set_xticklabels([k.replace("_", "\n") for k in ADVERSARIAL], fontsize=8)
    ax.legend(fontsize=7, ncol=3, loc="upper left")
    figs["robustness"] = fig

    # LAS experiment
    las = results["las"]
    fig, ax = style.figure(figsize=(10, 5))
    names = list(BASELINES) + [f"las_{k}" for k in ss.WORK_PREDICTIONS] + [f"sp_{m}" for m in ss.SP_MODES]
    pos = 0
    ticks, ticklabels = [], []
    for name in names:
        vals = np.asarray(las[name])
        if vals.ndim == 1:
            vals = vals[:, None]
            labels = [LABELS.get(name, name)]
        else:
            labels = [f"{name.replace('_', ' ')}\neps={e:g}" for e in eps]
        for j in range(vals.shape[1]):
            ax.bar(pos, vals[:, j].mean(), yerr=vals[:, j].std(), color=COLORS.get(name, cmap[j]), capsize=3)
            ticks.append(pos)
            ticklabels.append(labels[j])
            pos += 1
        pos += 0.5
    for k, (name, pub) in enumerate(PUBLISHED.items()):
        ax.plot(BASELINES.index(name) * 1.5, pub, marker="*", ms=14, color="black", ls="none",
                label="published mean (Bamas et al. 2020)" if k == 0 else None)
    ax.axhspan(*PUBLISHED_LAS, color="0.8", zorder=0, label="published LAS-accurate range 1.008-1.026")
    ax.axhline(1.0, **style.prediction(), label="OPT")
    ax.set(xticks=ticks, yscale="log", ylabel="mean energy / OPT (+- std over seeds)",
           title=f"LAS experiment: {cfg.las_jobs} jobs, D={cfg.las_window}, a={a:g}, {cfg.las_seeds} seeds "
                 f"(random-walk workloads in [20, 80])")
    ax.set_xticklabels(ticklabels, fontsize=6.5)
    ax.legend(fontsize=8)
    figs["las_experiment"] = fig

    # AVR lower bound
    lb = results["avr_lb"]
    fig, ax = style.figure(figsize=(7, 4.5))
    ax.plot(lb["curve_kappa"], lb["curve_ratio"], **style.prediction(), label="continuum limit (quadrature)")
    ax.plot(lb["kappa"], lb["measured"], "o", color="tab:orange", ms=8,
            label=f"measured: exact AVR / YDS, {cfg.lb_jobs} jobs")
    ax.axhline(4.0, color="tab:red", lw=1, label="alpha^alpha = 4")
    ax.set(xscale="log", xlabel="kappa (gamma = (1 - kappa) / alpha)", ylabel="AVR / OPT",
           title="AVR on its lower-bound family at alpha = 2")
    ax.legend()
    figs["avr_lower_bound"] = fig
    return figs


# ---------------------------------------------------------------------------------------------------------
# Benchmark: batched YDS + AVR + OA (jit(vmap)) vs the pure-Python reference, over many instances
# ---------------------------------------------------------------------------------------------------------


def _bench_row(key, *, n_jobs, horizon, alpha):
    r, d, w = ss.random_instance(key, n_jobs, horizon, 1, 10, 10.0)
    opt = ss.energy(ss.yds(r, d, w).profile, alpha)
    e_avr = ss.energy(ss.avr(r, d, w, n_slots=horizon).profile, alpha)
    e_oa = ss.energy(ss.oa(r, d, w, n_slots=horizon).profile, alpha)
    return jnp.stack([opt, e_avr, e_oa]), (r, d, w)


def bench(quick: bool = False) -> list[BenchRow]:
    from sims import _speed_scaling_reference as ref

    n_inst = 100 if quick else 1000
    n_jobs, horizon, alpha = 16, 40, 3.0
    keys = jax.random.split(jax.random.key(0), n_inst)
    fn = partial(_bench_row, n_jobs=n_jobs, horizon=horizon, alpha=alpha)
    jax.block_until_ready(sweep(fn, keys))  # compile
    t0 = time.perf_counter()
    ours, (r, d, w) = jax.block_until_ready(sweep(fn, keys))
    t_ours = time.perf_counter() - t0
    r, d, w = (np.asarray(x, dtype=float).tolist() for x in (r, d, w))
    t0 = time.perf_counter()
    base = []
    for i in range(n_inst):
        e_opt = ref.yds_python(r[i], d[i], w[i])[0](alpha)
        e_avr = ref.energy_python(ref.avr_python(r[i], d[i], w[i], horizon), 1.0, alpha)
        e_oa = ref.energy_python(ref.oa_python(r[i], d[i], w[i], horizon), 1.0, alpha)
        base.append((e_opt, e_avr, e_oa))
    t_base = time.perf_counter() - t0
    diff = np.max(np.abs(np.asarray(ours) - np.asarray(base)) / np.asarray(base))
    return [BenchRow(f"YDS+AVR+OA, {n_inst} inst x {n_jobs} jobs", "jit(vmap) sweep", "pure Python", t_ours, t_base,
                     note=f"max rel. energy diff {diff:.1e}")]
