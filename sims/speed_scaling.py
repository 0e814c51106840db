"""Online speed scaling with predictions: machine-speed predictions (SP) and job-workload predictions (LAS)
against the classic online algorithms, measured as energy / OPT (YDS = 1). Spec:
``shared/papers/speed_scaling.md``.

Figures (``figures/speed_scaling/``): ratio_vs_error.png   SP's ratio vs the relative L_alpha error of a
noisy speed prediction, one curve per eps
                       (dynamic solid, offline dashed), AVR / OA / qOA / BKP as horizontal lines, YDS = 1
  profiles.png         speed profiles of OPT vs the algorithms on one small instance
  robustness.png       worst ratio under adversarial predictions per eps, with the robustness bound
  las_experiment.png   LAS's experiment (200 jobs, D = 20, alpha = 3, 20 seeds): mean ratios beside the
  published avr_lower_bound.png  AVR / OPT on the lower-bound family at alpha = 2 approaching alpha^alpha = 4

Grids: the LAS instances have integer release times; online algorithms run on a grid of ``substeps`` slots per
time unit (AVR, OA are exact on it; qOA and BKP are discretised; LAS and SP round their shrink to whole
slots). """

from __future__ import annotations

import dataclasses
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from sims.core import style
from sims.core.harness import BenchRow, Claim
from sims.core.sweep import sweep
from theory import speed_scaling as ss

NAME = "speed_scaling"
TITLE = "Speed scaling with machine-speed predictions: (1+eps)-consistent, O(1)-robust; LAS and baselines"

BASELINES = ("avr", "oa", "qoa", "bkp")
PUBLISHED = {"avr": 1.27, "oa": 1.20, "bkp": 7.88}  # Bamas et al. 2020, mean ratios of their experiment
PUBLISHED_LAS = (1.008, 1.026)
ADVERSARIAL = ("zero", "scaled_up", "scaled_down", "shifted_early", "shifted_late", "reversed", "uniform",
               "spikes", "very_noisy")
# Published numbers we do not reproduce; the claim is kept (and fails) and the reason is written here.
KNOWN_MISMATCHES = {
    "BKP mean ratio": "BKP implemented from its definition, s(t) = max_t' w(t, e t - (e-1) t', t') / (t' - t) "
                      "(evaluated every 1/4 time unit), gives about 3.6 on our random walk; the published 7.88 "
                      "depends on their BKP implementation and workload generator, which our notes do not "
                      "specify (a factor e^alpha = 20 of a missing 1/e would overshoot, so it is not that)",
    "LAS-accurate mean ratio": "the eps behind the published range is not in our notes; our LAS-accurate ratio "
                               "grows with eps (the shrink delta(eps) costs energy), so small eps lands below "
                               "the range (better) and eps = 2 above it",
}


@dataclasses.dataclass(frozen=True)
class Config:
    alpha: float = 3.0
    eps_values: tuple[float, ...] = (0.1, 0.5, 2.0)
    # LAS's experiment model (Bamas et al.): one job per time unit, window D, random-walk workloads in [20,
    # 80].
    # The same instances serve the LAS experiment, the error sweep and the adversarial predictions.
    n_jobs: int = 200
    window: int = 20
    n_seeds: int = 20
    substeps: int = 4  # grid slots per time unit
    walk_step: float = 5.0
    noise_levels: tuple[float, ...] = (0.0, 0.1, 0.2, 0.4, 0.8, 1.6)
    # worst-case bound checks on general random instances
    bound_jobs: int = 12
    bound_horizon: int = 30
    bound_seeds: int = 64
    # AVR lower-bound family at alpha = 2
    lb_jobs: int = 100  # jobs at kappa = 0.4 (n ~ 1 / kappa), and twice as many
    lb_kappas: tuple[float, ...] = (0.4, 0.2, 0.1)
    chunk: int = 5


PRESETS = {
    "full": Config(),
    "quick": Config(eps_values=(0.1, 2.0), n_jobs=40, n_seeds=2, substeps=2, noise_levels=(0.0, 0.4, 1.6),
                    bound_seeds=0, lb_kappas=(), chunk=2),  # bounds and the AVR family: full preset only
}


# ---------------------------------------------------------------------------------------------------------
# Pieces (pure functions of a PRNG key, vmapped by sims.core.sweep)
# ---------------------------------------------------------------------------------------------------------


def _adversarial_predictions(key, s_opt, cfg: Config):
    sub, D = cfg.substeps, cfg.window
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


def _row(key, *, cfg: Config):
    """One seed: a LAS-model instance; OPT, the baselines, LAS with three predictors, and SP (both modes,
    every eps) under noisy and adversarial speed predictions. Returns ratios E / OPT and seed 0's profiles."""
    a, sub = cfg.alpha, cfg.substeps
    dt, n_slots = 1.0 / sub, (cfg.n_jobs + cfg.window) * sub
    k_inst, k_work, k_noise, k_adv = jax.random.split(key, 4)
    r, d, w = ss.las_instance(k_inst, cfg.n_jobs, cfg.window, step=cfg.walk_step)
    opt_res = ss.yds(r, d, w)
    opt = ss.energy(opt_res.profile, a)
    s_opt = ss.profile_on_grid(opt_res.profile, n_slots, dt)
    out, speeds = {}, {"opt": s_opt}
    for name, sched in ss.online_schedules(r, d, w, alpha=a, n_slots=n_slots, dt=dt).items():
        out[name] = ss.energy(sched.profile, a) / opt
        out[f"{name}_feasible"] = sched.feasible
        out[f"{name}_guard"] = sched.guard_work
        speeds[name] = sched.profile.speed
    eps = jnp.asarray(cfg.eps_values)

    def las_run(e, pred):
        sched = ss.las(r, d, w, pred, eps=e, alpha=a, n_slots=n_slots, dt=dt)
        return ss.energy(sched.profile, a) / opt, sched.feasible, sched.profile.speed

    preds = jnp.stack([ss.predict_work(k_work, w, kind) for kind in ss.WORK_PREDICTIONS])
    ratio, feas, sp = jax.vmap(jax.vmap(las_run, (0, None)), (None, 0))(eps, preds)  # (kinds, eps)
    for i, kind in enumerate(ss.WORK_PREDICTIONS):
        out[f"las_{kind}"], out[f"las_{kind}_feasible"] = ratio[i], feas[i]
    speeds["las"] = sp[0, 0]

    def sp_run(s_hat):
        res = {"error": ss.prediction_error(s_hat, s_opt, a)}
        def one(e):
            both = ss.speed_prediction_schedules(r, d, w, s_hat, eps=e, alpha=a, dt=dt)
            return {m: (ss.energy(s.profile, a) / opt, s.feasible, s.profile.speed) for m, s in both.items()}

        per_eps = jax.vmap(one)(eps)
        for mode in ss.SP_MODES:
            res[mode], res[f"{mode}_feasible"], res[f"{mode}_speed"] = per_eps[mode]
        return res

    sig = jnp.asarray(cfg.noise_levels)
    noisy = jax.vmap(lambda s, k: ss.predict_speed(k, s_opt, "noisy", s))(sig,
                                                                          jax.random.split(k_noise, sig.size))
    adv = _adversarial_predictions(k_adv, s_opt, cfg)
    preds = jnp.concatenate([noisy, jnp.stack([adv[k] for k in ADVERSARIAL])])
    res = jax.lax.map(sp_run, preds)
    n_noise = sig.size
    out["sp_noise"] = {k: v[:n_noise] for k, v in res.items() if not k.endswith("_speed")}
    out["sp_adv"] = {k: v[n_noise:] for k, v in res.items() if not k.endswith("_speed")}
    i_show = min(2, n_noise - 1)
    speeds["sp_prediction"] = noisy[i_show]
    speeds["sp_dynamic"] = res["dynamic_speed"][i_show, 0]
    m, delta_eff = ss.shrink_slots(r, d, eps[:, None], a, dt)
    out["delta_eff"] = jnp.min(delta_eff, axis=1)
    out["speeds"] = speeds
    out["jobs"] = {"release": r, "deadline": d, "work": w}
    return out


def _bounds_row(batch, *, cfg: Config):
    """A general random instance (windows 1..12) at power alpha = batch["alpha"]: AVR, OA, qOA, BKP ratios."""
    sub, alpha = 4, batch["alpha"]
    r, d, w = ss.random_instance(batch["key"], cfg.bound_jobs, cfg.bound_horizon, 1, 12, 10.0)
    opt = ss.energy(ss.yds(r, d, w).profile, alpha)
    n_slots, dt = cfg.bound_horizon * sub, 1.0 / sub
    out = {}
    for name, sched in ss.online_schedules(r, d, w, alpha=alpha, n_slots=n_slots, dt=dt).items():
        out[name] = ss.energy(sched.profile, alpha) / opt
        out[f"{name}_feasible"] = sched.feasible
    return out


def _avr_lower_bound(cfg: Config):
    """AVR / YDS on the lower-bound family at alpha = 2 with n and 2n jobs per kappa (float64): the error to
    the continuum limit is first order in the log-spacing 6 / (kappa n), so 2 R(2n) - R(n) extrapolates to
    the limit. n = lb_jobs 0.4 / kappa keeps the log-spacing the same for every kappa."""
    sizes = [max(2, round(cfg.lb_jobs * 0.4 / k)) for k in cfg.lb_kappas]
    out = {"kappa": np.asarray(cfg.lb_kappas), "n": np.asarray([[n, 2 * n] for n in sizes])}
    meas = []
    with jax.enable_x64(True):
        for kappa, n1 in zip(cfg.lb_kappas, sizes, strict=True):
            row = []
            for n in (n1, 2 * n1):
                r, d, w = ss.avr_lower_bound_instance(n, 2.0, kappa)
                opt = ss.energy(ss.yds(r, d, w).profile, 2.0)
                row.append(float(ss.energy(ss.avr_profile(r, d, w), 2.0) / opt))
            meas.append(row)
    out["measured"] = np.asarray(meas)  # (kappas, 2)
    out["continuum"] = np.asarray([ss.avr_lower_bound_ratio(2.0, k) for k in cfg.lb_kappas])
    out["extrapolated"] = 2 * out["measured"][:, 1] - out["measured"][:, 0]
    fine = np.geomspace(1e-3, 0.9, 40)
    out["curve_kappa"] = fine
    out["curve_ratio"] = np.asarray([ss.avr_lower_bound_ratio(2.0, k) for k in fine])
    return out


def run(cfg: Config, *, key: jax.Array) -> dict:
    k_main, k_bnd = jax.random.split(key)
    out = {"eps": jnp.asarray(cfg.eps_values)}
    main = sweep(partial(_row, cfg=cfg), jax.random.split(k_main, cfg.n_seeds), chunk_size=cfg.chunk)
    out["profiles"] = jax.tree.map(lambda x: x[0], {"speeds": main.pop("speeds"), "jobs": main.pop("jobs")})
    out["main"] = main
    if cfg.lb_kappas:
        out["avr_lb"] = _avr_lower_bound(cfg)
    if not cfg.bound_seeds:
        return out
    alphas = jnp.repeat(jnp.asarray([2.0, 3.0]), cfg.bound_seeds)
    bnd = sweep(partial(_bounds_row, cfg=cfg), {"key": jax.random.split(k_bnd, alphas.size), "alpha": alphas})
    nb = cfg.bound_seeds
    out["bounds"] = {f"alpha{al}": jax.tree.map(lambda x, i=i: x[i * nb:(i + 1) * nb], bnd)
                     for i, al in enumerate((2, 3))}
    return out


# ---------------------------------------------------------------------------------------------------------
# Claims
# ---------------------------------------------------------------------------------------------------------


def paper_setup(cfg: Config) -> bool:
    """True when the config is LAS's experiment (200 jobs, D = 20, alpha = 3, 20 seeds): only then are the
    published numbers a claim."""
    return (cfg.n_jobs, cfg.window, cfg.alpha, cfg.n_seeds) == (200, 20, 3.0, 20)


def claims(results: dict, cfg: Config) -> list[Claim]:
    a = cfg.alpha
    eps = np.asarray(results["eps"])
    main = results["main"]
    out = []
    noise = np.asarray(cfg.noise_levels)
    i0 = int(np.argmin(np.abs(noise)))
    for mode in ss.SP_MODES:
        worst0 = np.max(np.asarray(main["sp_noise"][mode])[:, i0, :], axis=0)  # (eps,) worst seed, zero error
        for e, m in zip(eps, worst0, strict=True):
            out.append(Claim(f"SP-{mode} consistency: worst ratio at zero error <= 1 + eps (eps={e:g})",
                             1 + e, m, 0.0, "le", source="paper"))
    for e, m in zip(eps, np.max(np.asarray(main["las_accurate"]), axis=0), strict=True):
        out.append(Claim(f"LAS consistency: worst ratio with exact workloads <= 1 + eps (eps={e:g})",
                         1 + e, m, 0.0, "le", source="paper"))
    feas = [np.asarray(main[f"las_{k}_feasible"]) for k in ss.WORK_PREDICTIONS]
    feas += [np.asarray(main[blk][f"{m}_feasible"]) for blk in ("sp_noise", "sp_adv") for m in ss.SP_MODES]
    feas += [np.asarray(main[f"{n}_feasible"]) for n in BASELINES]
    out.append(Claim("every schedule (baselines, LAS, SP; every prediction) meets every deadline (1 = all)",
                     1.0,
                     float(all(bool(f.all()) for f in feas)), 0.0, "abs", source="theory"))
    delta = np.min(np.asarray(main["delta_eff"]), axis=0)
    for j, e in enumerate(eps):
        bound = float(ss.sp_robustness_bound(a, delta[j]))
        worst = max(float(np.max(np.asarray(main[blk][mode])[..., j])) for blk in ("sp_noise", "sp_adv")
                    for mode in ss.SP_MODES)
        out.append(Claim(f"SP robustness: worst ratio over all generated predictions <= delta^-a 2^(a-1) a^a "
                         f"(eps={e:g}, delta_eff={delta[j]:.3f})", bound, worst, 0.0, "le", source="theory"))
        worst_las = max(float(np.max(np.asarray(main[f"las_{k}"])[:, j])) for k in ss.WORK_PREDICTIONS)
        out.append(Claim(f"LAS robustness: worst ratio (random / misleading predictors) <= the same bound "
                         f"(eps={e:g})", bound, worst_las, 0.0, "le", source="theory"))
    if paper_setup(cfg):
        for name, pub in PUBLISHED.items():
            label = LABELS[name]
            out.append(Claim(f"{label} mean ratio in LAS's experiment (200 jobs, D=20, a=3, 20 seeds) vs "
                             "published",
                             pub, float(np.mean(np.asarray(main[name]))), 0.1, "rel"))
        lo, hi = PUBLISHED_LAS
        for e, m in zip(eps, np.mean(np.asarray(main["las_accurate"]), axis=0), strict=True):
            out.append(Claim(f"LAS-accurate mean ratio within the published range [{lo}, {hi}] (eps={e:g})",
                             (lo + hi) / 2, m, (hi - lo) / 2, "abs"))
    for label in ("alpha2", "alpha3") if "bounds" in results else ():
        al = 2.0 if label == "alpha2" else 3.0
        b = results["bounds"][label]
        for name, bound in (("avr", ss.avr_bound(al)), ("oa", ss.oa_bound(al)), ("bkp", ss.bkp_bound(al))):
            out.append(Claim(f"{LABELS[name]} worst ratio <= its bound on random instances (alpha={al:g})",
                             float(bound), float(np.max(np.asarray(b[name]))), 0.0, "le", source="theory"))
        out.append(Claim(f"OPT is a lower bound: min ratio of AVR/OA/qOA/BKP >= 1 (alpha={al:g})", 1.0,
                         min(float(np.min(np.asarray(b[n]))) for n in BASELINES), 1e-4, "ge",
                         source="theory"))
    lb = results.get("avr_lb", {k: () for k in ("n", "kappa", "measured", "continuum", "extrapolated")})
    for k, m, c, x, nn in zip(lb["kappa"], lb["measured"], lb["continuum"], lb["extrapolated"], lb["n"],
                              strict=True):
        n1, n2 = (int(v) for v in nn)
        order = float(np.log2((c - m[0]) / (c - m[1])))
        out.append(Claim(f"AVR/OPT on the lower-bound family (alpha=2, kappa={k:g}): convergence order in "
                         "the "
                         f"log-spacing, {n1} vs {n2} jobs", 1.0, order, 0.35, "abs", source="theory"))
        out.append(Claim(f"AVR/OPT extrapolated 2R({n2}) - R({n1}) = continuum limit (alpha=2, kappa={k:g}; "
                         f"-> 4 as kappa -> 0)", c, x, 0.02, "rel", source="theory"))
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
    main = results["main"]
    setup = f"{cfg.n_jobs} jobs, D={cfg.window}, a={a:g}, {cfg.n_seeds} seeds"

    # ratio vs prediction error
    fig, ax = style.figure(figsize=(8.5, 5.5))
    x = np.mean(np.asarray(main["sp_noise"]["error"]), axis=0)
    for j, e in enumerate(eps):
        for mode, fmt in (("dynamic", "o-"), ("offline", "s--")):
            y = np.asarray(main["sp_noise"][mode])[:, :, j]
            ax.errorbar(x, y.mean(0), yerr=y.std(0), fmt=fmt, color=cmap[j], ms=4, capsize=2,
                        label=f"SP {mode}, eps={e:g}")
        ax.axhline(1 + e, color=cmap[j], lw=0.8, ls=":", label=f"1 + eps = {1 + e:g}")
    for name in BASELINES:
        ax.axhline(np.mean(np.asarray(main[name])), color=COLORS[name], lw=2, alpha=0.6,
                   label=f"{LABELS[name]} (no prediction), mean")
    ax.axhline(1.0, **style.prediction(), label="YDS = OPT = 1")
    ax.set(xscale="symlog", xlabel="relative prediction error ||s_hat - s*||_a / ||s*||_a  (mean over seeds)",
           ylabel="energy / OPT (mean +- std)", yscale="log",
           title=f"SP with noisy speed predictions s_hat = s* exp(sigma z - sigma^2/2)  ({setup})")
    ax.set_xlim(left=0)
    ax.legend(fontsize=7, ncol=3)
    figs["ratio_vs_error"] = fig

    # speed profiles (seed 0, first 60 time units)
    p = results["profiles"]
    sp = {k: np.asarray(v) for k, v in p["speeds"].items()}
    n_slots = sp["opt"].shape[0]
    t = np.arange(n_slots + 1) / cfg.substeps
    t_end = min(60.0, t[-1])
    k_end = int(t_end * cfg.substeps)
    fig, axes = style.figure(2, 1, figsize=(10, 7), sharex=True)
    sigma_show = cfg.noise_levels[min(2, len(cfg.noise_levels) - 1)]
    groups = ((("avr", "AVR"), ("oa", "OA"), ("qoa", "qOA"), ("bkp", "BKP")),
              (("sp_prediction", f"predicted speed s_hat (sigma = {sigma_show:g})"),
               ("sp_dynamic", f"SP dynamic with that prediction, eps={eps[0]:g}"),
               ("las", f"LAS with exact workloads, eps={eps[0]:g}")))
    for ax, names in zip(axes, groups, strict=True):
        ax.stairs(sp["opt"][:k_end], t[:k_end + 1], color="black", lw=2.4, label="OPT (YDS)")
        for key, label in names:
            style_kw = dict(color="0.6", lw=0.8) if key == "sp_prediction" else dict(lw=1.3)
            ax.stairs(sp[key][:k_end], t[:k_end + 1], label=label, **style_kw)
        ax.set(ylabel="speed s(t) (work / time)")
        ax.legend(fontsize=8, loc="upper left", ncol=2)
    axes[0].set_title(f"Speed profiles on one instance (seed 0 of the LAS model, first {t_end:g} time units; "
                      f"job i arrives at t = i, due at i + {cfg.window})")
    axes[1].set(xlabel="time t")
    figs["profiles"] = fig

    # robustness
    adv = main["sp_adv"]
    fig, ax = style.figure(figsize=(11, 5.5))
    width = 0.8 / (2 * len(eps))
    xs = np.arange(len(ADVERSARIAL))
    for j, e in enumerate(eps):
        for mi, mode in enumerate(ss.SP_MODES):
            worst = np.max(np.asarray(adv[mode])[:, :, j], axis=0)
            off = (2 * j + mi - len(eps) + 0.5) * width
            ax.bar(xs + off, worst, width, color=cmap[j], alpha=1.0 if mode == "dynamic" else 0.45,
                   label=f"SP {mode}, eps={e:g}")
    delta = np.min(np.asarray(main["delta_eff"]), axis=0)
    for j, e in enumerate(eps):
        ax.axhline(float(ss.sp_robustness_bound(a, delta[j])), **style.prediction(color=cmap[j]),
                   label=f"robustness bound, eps={e:g} (delta_eff={delta[j]:.3f})")
    ax.axhline(np.mean(np.asarray(main["oa"])), color="0.35", lw=1.5, label="OA (mean ratio, no prediction)")
    ax.axhline(ss.oa_bound(a), color="0.35", lw=1, ls="-.", label="OA's bound a^a")
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set(xticks=xs, yscale="log", ylabel="worst energy / OPT over seeds",
           title=f"Robustness: SP under adversarial speed predictions ({setup}); "
                 "bound = delta^-a 2^(a-1) a^a")
    ax.set_xticklabels([k.replace("_", "\n") for k in ADVERSARIAL], fontsize=8)
    ax.legend(fontsize=7, ncol=3, loc="upper left")
    ax.set_ylim(0.8, None)
    figs["robustness"] = fig

    # LAS experiment
    fig, ax = style.figure(figsize=(13, 5.5))
    pos, ticks, ticklabels = 0.0, [], []
    base_pos = {}
    for name in BASELINES:
        vals = np.asarray(main[name])
        ax.bar(pos, vals.mean(), yerr=vals.std(), color=COLORS[name], capsize=3)
        base_pos[name] = pos
        ticks.append(pos)
        ticklabels.append(LABELS[name])
        pos += 1
    pos += 0.5
    for kind in ss.WORK_PREDICTIONS:
        vals = np.asarray(main[f"las_{kind}"])
        for j, e in enumerate(eps):
            ax.bar(pos, vals[:, j].mean(), yerr=vals[:, j].std(), color=cmap[j], capsize=3)
            ticks.append(pos)
            ticklabels.append(f"LAS\n{kind}\neps={e:g}")
            pos += 1
        pos += 0.5
    for mode in ss.SP_MODES:
        vals = np.asarray(main["sp_noise"][mode])[:, i0_noise(cfg), :]
        for j, e in enumerate(eps):
            ax.bar(pos, vals[:, j].mean(), yerr=vals[:, j].std(), color=cmap[j], capsize=3, hatch="//")
            ticks.append(pos)
            ticklabels.append(f"SP\n{mode}\ns_hat=s*\neps={e:g}")
            pos += 1
        pos += 0.5
    for k, (name, pub) in enumerate(PUBLISHED.items()):
        ax.plot(base_pos[name], pub, marker="*", ms=15, color="black", ls="none",
                label="published mean (Bamas et al. 2020)" if k == 0 else None)
    ax.axhspan(*PUBLISHED_LAS, color="0.75", zorder=0, label="published LAS-accurate range 1.008-1.026")
    ax.axhline(1.0, **style.prediction(), label="OPT = 1")
    ax.set(xticks=ticks, yscale="log", ylabel="mean energy / OPT (+- std over seeds)",
           title=f"LAS's experiment: {setup} (random-walk workloads in [20, 80]); bars ours, stars published")
    ax.set_xticklabels(ticklabels, fontsize=6)
    ax.legend(fontsize=8, loc="upper right")
    figs["las_experiment"] = fig

    # AVR lower bound (full preset only)
    if "avr_lb" not in results:
        return figs
    lb = results["avr_lb"]
    fig, ax = style.figure(figsize=(7, 4.5))
    ax.plot(lb["curve_kappa"], lb["curve_ratio"], **style.prediction(), label="continuum limit (quadrature)")
    ax.plot(lb["kappa"], lb["measured"][:, 0], "v", color="tab:orange", ms=7, ls="none",
            label=f"measured: exact AVR / YDS, n = {cfg.lb_jobs} x 0.4/kappa jobs")
    ax.plot(lb["kappa"], lb["measured"][:, 1], "^", color="tab:orange", ms=7, ls="none",
            label="measured, 2n jobs")
    ax.plot(lb["kappa"], lb["extrapolated"], "o", color="tab:blue", ms=8, ls="none",
            label="extrapolated 2 R(2n) - R(n)")
    ax.axhline(4.0, color="tab:red", lw=1, label="alpha^alpha = 4 (kappa -> 0)")
    ax.set(xscale="log", xlabel="kappa (work density t^-gamma, gamma = (1 - kappa) / alpha)",
           ylabel="AVR / OPT",
           title="AVR on its lower-bound family at alpha = 2")
    ax.legend()
    figs["avr_lower_bound"] = fig
    return figs


def i0_noise(cfg: Config) -> int:
    """Index of the zero-noise level (exact prediction s_hat = s*)."""
    return int(np.argmin(np.abs(np.asarray(cfg.noise_levels))))


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
    from sims.bench import _speed_scaling_reference as ref

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
    return [BenchRow(f"YDS+AVR+OA, {n_inst} inst x {n_jobs} jobs", "jit(vmap) sweep", "pure Python", t_ours,
                     t_base,
                     note=f"max rel. energy diff {diff:.1e}")]
