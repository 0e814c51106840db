"""Speed-scaling sim: ``run`` and its pieces: the per-seed rows (sweepable), the bound rows, AVR's lower-bound
family and the BKP check against the pure-Python reference (``reference``)."""

from __future__ import annotations

from functools import partial
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.sims.core.sweep import sweep
from jaxwb.sims.speed_scaling import reference as ref
from jaxwb.sims.speed_scaling.config import ADVERSARIAL, Config, delta_reference
from jaxwb.theory import speed_scaling as ss

CAP_RTOL = 1e-5  # relative float32 margin of "above the cap" (the followed speed, OPT's, vs kappa AVR)

# ---------------------------------------------------------------------------------------------------------
# Pieces (pure functions of a PRNG key, vmapped by sims.core.sweep)
# ---------------------------------------------------------------------------------------------------------


def _adversarial_predictions(key, s_opt, cfg: Config):
    sub, D = cfg.substeps, cfg.window
    return {
        "zero": ss.predict_speed(s_opt, "zero", key=key),
        "scaled_up": ss.predict_speed(s_opt, "scaled", scale=10.0, key=key),
        "scaled_down": ss.predict_speed(s_opt, "scaled", scale=0.1, key=key),
        "shifted_early": ss.predict_speed(s_opt, "shifted", shift=-(D * sub) // 2, key=key),
        "shifted_late": ss.predict_speed(s_opt, "shifted", shift=(D * sub) // 2, key=key),
        "reversed": ss.predict_speed(s_opt, "reversed", key=key),
        "uniform": ss.predict_speed(s_opt, "uniform", key=key),
        "spikes": ss.predict_speed(s_opt, "spikes", period=D * sub, key=key),
        "very_noisy": ss.predict_speed(s_opt, "noisy", 3.0, key=key),
    }


def _row(key, *, cfg: Config):
    """One seed: a LAS-model instance; OPT, the baselines, LAS with three predictors (and the shrunk-instance
    reference), and SP (both modes, every eps, and pure following) under noisy and adversarial speed
    predictions. Returns ratios E / OPT and seed 0's profiles."""
    a, sub = cfg.alpha, cfg.substeps
    dt, n_slots = 1.0 / sub, (cfg.n_jobs + cfg.window) * sub
    k_inst, k_work, k_noise, k_adv = jax.random.split(key, 4)
    r, d, w = ss.las_instance(cfg.n_jobs, cfg.window, step=cfg.walk_step, key=k_inst)
    opt_res = ss.yds(r, d, w)
    opt = ss.energy(opt_res.profile, a)
    s_opt = ss.profile_on_grid(opt_res.profile, n_slots, dt)
    # the exact AVR profile on the grid (offline.avr_profile: no SP code) for the clip's predicted slots
    avr_exact = ss.profile_on_grid(ss.avr_profile(r, d, w), n_slots, dt)
    busy = avr_exact > 0
    out: dict[str, Any] = {}
    speeds = {"opt": s_opt}
    for name, sched in ss.online_schedules(r, d, w, alpha=a, n_slots=n_slots, dt=dt).items():
        out[name] = ss.energy(sched.profile, a) / opt
        out[f"{name}_work_only"] = ss.energy(ss.grid_profile(sched.work_rate, dt), a) / opt
        out[f"{name}_feasible"] = sched.feasible
        speeds[name] = sched.profile.speed
        if name == "bkp":
            speeds["bkp_work"] = sched.work_rate

    def las_run(e, pred):
        sched = ss.las(r, d, w, pred, eps=e, alpha=a, n_slots=n_slots, dt=dt)
        commanded = jnp.sum(sched.profile.speed) * dt / jnp.sum(w)  # commanded work / the instance's work
        guard = sched.guard_work / jnp.sum(w)  # work the EDF guard had to add / the instance's work
        return ss.energy(sched.profile, a) / opt, sched.feasible, sched.profile.speed, commanded, guard

    eps = jnp.asarray(cfg.eps_values)
    preds = jnp.stack([ss.predict_work(w, kind, key=k_work) for kind in ss.WORK_PREDICTIONS])
    ratio, feas, sp, cmd, guard = jax.vmap(jax.vmap(las_run, (0, None)), (None, 0))(eps, preds)  # (kinds, eps)
    for i, kind in enumerate(ss.WORK_PREDICTIONS):
        out[f"las_{kind}"], out[f"las_{kind}_feasible"] = ratio[i], feas[i]
    out["las_commanded_work"], out["las_guard_work"] = cmd, guard  # (kinds, eps)
    speeds["las"] = sp[0, 0]
    misleading = preds[ss.WORK_PREDICTIONS.index("misleading")]
    misleading_error = ss.prediction_error(misleading, w, a)  # seed 0's is claimed against the workloads

    def shrunk_opt(e):
        """YDS of the instance with deadlines moved in by m = ceil(delta |I| / dt) slots, and the causal width-m
        moving average of its grid speed (LAS-accurate on equal windows, written without ``ss.las``)."""
        m = jnp.ceil(delta_reference(e, a) * (d - r) / dt - 1e-6)
        prof = ss.yds(r, d - m * dt, w).profile
        mm = jnp.max(m)  # LAS's model: every window is D, so every job's m is the same
        c = jnp.concatenate([jnp.zeros(1), jnp.cumsum(ss.profile_on_grid(prof, n_slots, dt))])
        k = jnp.arange(1, n_slots + 1)
        smooth = (c[k] - c[jnp.maximum(k - mm.astype(int), 0)]) / mm
        return ss.energy(prof, a) / opt, jnp.sum(smooth**a) * dt / opt

    out["las_shrunk_opt"], out["las_smoothed_opt"] = jax.vmap(shrunk_opt)(eps)  # (eps,) each
    # job-workload predictions with relative noise sigma (LAS at the smallest eps): smoothness curve
    sig = jnp.asarray(cfg.noise_levels)
    w_noisy = jax.vmap(lambda s_, k: ss.predict_work(w, "accurate", s_, key=k))(sig, jax.random.split(k_work, sig.size))
    noisy_las = jax.vmap(lambda p_: las_run(jnp.min(eps), p_))(w_noisy)  # zero predictions among them (clipped)
    out["las_noise"] = noisy_las[0]
    out["las_noise_commanded_work"], out["las_noise_guard_work"] = noisy_las[3], noisy_las[4]  # (noise,)
    out["las_noise_error"] = jax.vmap(lambda p_: ss.prediction_error(p_, w, a))(w_noisy)

    def law_moment(k):  # the noise law alone (no schedule): eta_w^alpha of one more prediction per level
        one = lambda s_, kk: ss.prediction_error(ss.predict_work(w, "accurate", s_, key=kk), w, a) ** a
        return jax.vmap(one)(sig, jax.random.split(k, sig.size))

    law_keys = jax.random.split(jax.random.fold_in(k_work, 1), cfg.noise_law_draws)
    out["noise_law_moment"] = jnp.mean(jax.vmap(law_moment)(law_keys), axis=0)  # (noise,)

    kappas = jnp.asarray([ss.sp_kappa(e, a) for e in cfg.eps_values])

    def sp_run(s_hat):
        res = {"error": ss.prediction_error(s_hat, s_opt, a)}

        def one(c):
            both, env = ss.speed_prediction_schedules(r, d, w, s_hat, alpha=a, kappa=c, dt=dt)
            # the cap binds in a slot when the followed speed exceeds kappa AVR(t) and the machine runs at or
            # below the cap (the clip, not the pending work, set the speed)
            over = lambda s: (s.nominal > env * (1 + CAP_RTOL)) & (s.profile.speed <= env * (1 + CAP_RTOL))
            return {m: (ss.energy(s.profile, a) / opt, s.feasible, s.profile.speed, over(s)) for m, s in both.items()}

        per_cap = jax.vmap(one)(kappas)
        for mode in ss.SP_MODES:
            res[mode], res[f"{mode}_feasible"], res[f"{mode}_speed"], res[f"{mode}_capped"] = per_cap[mode]
        # return_envelope=False: a Schedule alone
        follow = cast(ss.Schedule, ss.speed_prediction_schedule(r, d, w, s_hat, alpha=a, robust=False, dt=dt))
        res["follow"], res["follow_feasible"] = ss.energy(follow.profile, a) / opt, follow.feasible
        return res

    sig = jnp.asarray(cfg.noise_levels)
    noisy = jax.vmap(lambda s, k: ss.predict_speed(s_opt, "noisy", s, key=k))(sig, jax.random.split(k_noise, sig.size))
    out["noise_pred_work"] = jnp.sum(noisy, axis=1) / jnp.sum(s_opt)  # (noise,) predicted / OPT's total work
    adv = _adversarial_predictions(k_adv, s_opt, cfg)
    preds = jnp.concatenate([noisy, jnp.stack([adv[k] for k in ADVERSARIAL])])
    res = jax.lax.map(sp_run, preds)
    n_noise = sig.size
    capped = {m: res.pop(f"{m}_capped") for m in ss.SP_MODES}  # (predictions, kappas, n_slots) each
    out["sp_noise"] = {k: v[:n_noise] for k, v in res.items() if not k.endswith("_speed")}
    out["sp_adv"] = {k: v[n_noise:] for k, v in res.items() if not k.endswith("_speed")}
    # the clip's share: for the exact prediction (c = 1) and the 10x one (c = 10) the slots where the cap binds,
    # against the slots where c OPT(t) > kappa AVR(t) (YDS and the exact AVR profile: no SP code)
    i_exact = int(np.argmin(np.abs(np.asarray(cfg.noise_levels))))
    clip = {"kstar": jnp.max(jnp.where(busy, s_opt / jnp.where(busy, avr_exact, 1.0), 0.0)), "busy": jnp.sum(busy)}
    for label, idx, c in (("exact", i_exact, 1.0), ("scaled_up", n_noise + ADVERSARIAL.index("scaled_up"), 10.0)):
        want = c * s_opt[None] > kappas[:, None] * avr_exact[None] * (1 + CAP_RTOL)  # (kappas, n_slots)
        clip[f"{label}_predicted"] = jnp.sum(want, axis=1)  # (kappas,)
        got = jnp.stack([capped[m][idx] for m in ss.SP_MODES])  # (modes, kappas, n_slots)
        clip[f"{label}_capped"] = jnp.sum(got, axis=2)  # (modes, kappas)
        clip[f"{label}_mismatch"] = jnp.sum(got != want[None], axis=2)  # (modes, kappas)
    out["clip"] = clip
    # pure following of the 10x prediction runs each job at w_j / dt in its release slot when 10 s*(r_j) dt >= w_j:
    # E = dt^(1 - a) sum_j w_j^a (written out from the workloads), and that precondition's margin
    out["follow_up_formula"] = dt ** (1 - a) * jnp.sum(w**a) / opt
    out["follow_up_margin"] = jnp.min(10.0 * s_opt[jnp.round(r / dt).astype(int)] * dt / w)
    i_show = min(2, n_noise - 1)
    speeds["sp_prediction"] = noisy[i_show]
    speeds["sp_dynamic"] = res["dynamic_speed"][i_show, len(cfg.eps_values) // 2]
    out["speeds"] = speeds
    out["jobs"] = {"release": r, "deadline": d, "work": w, "misleading_error": misleading_error}
    return out


def _las_calibration_row(key, *, cfg: Config):
    """One calibration instance (LAS's model, seeds of their own, never the test instances): LAS with exact
    workloads at every eps of ``las_eps_grid``: (grid,) ratios E / OPT."""
    a, sub = cfg.alpha, cfg.substeps
    dt, n_slots = 1.0 / sub, (cfg.n_jobs + cfg.window) * sub
    r, d, w = ss.las_instance(cfg.n_jobs, cfg.window, step=cfg.walk_step, key=key)
    opt = ss.energy(ss.yds(r, d, w).profile, a)

    def one(e):
        return ss.energy(ss.las(r, d, w, w, eps=e, alpha=a, n_slots=n_slots, dt=dt).profile, a) / opt

    return jax.vmap(one)(jnp.asarray(cfg.las_eps_grid))


def _robust_n_row(batch, *, n_pad: int, cfg: Config):
    """One (n, seed) row of the robustness-over-n sweep: the first ``batch["n"]`` jobs of a LAS-model instance
    with ``n_pad`` >= n jobs (the others get work 0 and change no energy: n's may share one compiled program),
    and the robust SP (dynamic mode, every eps) under the adversarial speed predictions. Returns "sp"
    (predictions, eps): E / OPT. The predictions live on the padded grid (the uniform one spreads s*'s work over
    it, the others are unchanged by the idle tail)."""
    a, sub, n_max = cfg.alpha, cfg.substeps, n_pad
    dt, n_slots = 1.0 / sub, (n_max + cfg.window) * sub
    k_inst, k_adv = jax.random.split(batch["key"])
    r, d, w = ss.las_instance(n_max, cfg.window, step=cfg.walk_step, key=k_inst)
    w = jnp.where(jnp.arange(n_max) < batch["n"], w, 0.0)
    opt_res = ss.yds(r, d, w)
    opt = ss.energy(opt_res.profile, a)
    s_opt = ss.profile_on_grid(opt_res.profile, n_slots, dt)
    adv = _adversarial_predictions(k_adv, s_opt, cfg)
    kappas = jnp.asarray([ss.sp_kappa(e, a) for e in cfg.eps_values])

    def per_prediction(s_hat):
        def one(c):
            sched = cast(
                ss.Schedule,  # return_envelope=False: a Schedule alone
                ss.speed_prediction_schedule(r, d, w, s_hat, alpha=a, kappa=c, mode="dynamic", dt=dt),
            )
            return ss.energy(sched.profile, a) / opt

        return jax.vmap(one)(kappas)

    return {"sp": jax.vmap(per_prediction)(jnp.stack([adv[k] for k in ADVERSARIAL]))}


def _robust_n(key, cfg: Config):
    """SP's adversarial ratios against the number of jobs (``robust_n``, ``robust_seeds`` seeds each, own keys
    per (n, seed)); ``robust_shared_shape``: every n padded to the largest (one compiled program; the quick
    preset's n are small and compiling dominates), else one program per n. Returns {"n": (N,), "sp": (N, seeds,
    predictions, eps)}."""
    n_n, n_s = len(cfg.robust_n), cfg.robust_seeds
    ns = jnp.repeat(jnp.asarray(cfg.robust_n), n_s)
    batch = {"key": jax.random.split(key, ns.size), "n": ns}
    if cfg.robust_shared_shape:
        fn = partial(_robust_n_row, n_pad=max(cfg.robust_n), cfg=cfg)
        sp = sweep(fn, batch, chunk_size=cfg.chunk)["sp"]
    else:
        rows = [
            sweep(
                partial(_robust_n_row, n_pad=n, cfg=cfg),
                jax.tree.map(lambda x, i=i: x[i * n_s : (i + 1) * n_s], batch),
                chunk_size=cfg.chunk,
            )["sp"]
            for i, n in enumerate(cfg.robust_n)
        ]
        sp = jnp.concatenate(rows)
    return {"n": np.asarray(cfg.robust_n), "sp": sp.reshape((n_n, n_s) + sp.shape[1:])}


def _bounds_row(batch, *, cfg: Config):
    """A general random instance (windows 1..12) at power alpha = batch["alpha"]: AVR, OA, qOA, BKP ratios."""
    sub, alpha = 4, batch["alpha"]
    r, d, w = ss.random_instance(cfg.bound_jobs, cfg.bound_horizon, 1, 12, 10.0, key=batch["key"])
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


def _bkp_check(key, cfg: Config):
    """BKP's commanded energy (the code path of the main sweep, on a grid running 2 D past the last deadline)
    vs the pure-Python reference (grid ending at the last deadline), on ``bkp_check_jobs`` jobs of one LAS-model
    instance; and BKP's largest speed on the tail (0: it idles once nothing is pending)."""
    a, sub, nj = cfg.alpha, cfg.substeps, cfg.bkp_check_jobs
    dt, n_slots = 1.0 / sub, (nj + cfg.window) * sub
    tail = 2 * cfg.window * sub  # grid past the last deadline: BKP must idle there
    r, d, w = ss.las_instance(nj, cfg.window, step=cfg.walk_step, key=key)
    sched = ss.online_schedules(r, d, w, alpha=a, n_slots=n_slots + tail, dt=dt)["bkp"]
    e_jax = float(ss.energy(sched.profile, a))
    r_l, d_l, w_l = (np.asarray(x, dtype=float).tolist() for x in (r, d, w))
    e_ref = ref.energy_python(ref.bkp_python(r_l, d_l, w_l, n_slots, dt), dt, a)
    tail_speed = float(np.max(np.asarray(sched.profile.speed)[n_slots:]))
    return {"jax": np.asarray(e_jax), "python": np.asarray(e_ref), "tail_speed": np.asarray(tail_speed)}


def run(cfg: Config, *, key: jax.Array) -> dict:
    k_main, k_bnd, k_bkp, k_rob, k_cal = jax.random.split(key, 5)
    out: dict[str, Any] = {
        "eps": jnp.asarray(cfg.eps_values),
        "kappas": jnp.asarray([ss.sp_kappa(e, cfg.alpha) for e in cfg.eps_values]),
    }
    main = sweep(partial(_row, cfg=cfg), jax.random.split(k_main, cfg.n_seeds), chunk_size=cfg.chunk)
    out["profiles"] = jax.tree.map(lambda x: x[0], {"speeds": main.pop("speeds"), "jobs": main.pop("jobs")})
    out["main"] = main
    out["bkp_check"] = _bkp_check(k_bkp, cfg)
    if cfg.robust_n:
        out["robust_n"] = _robust_n(k_rob, cfg)
    if cfg.las_eps_grid:  # the eps calibration of LAS's published range, on instances of its own
        keys = jax.random.split(k_cal, cfg.las_cal_seeds)
        out["las_calibration"] = sweep(partial(_las_calibration_row, cfg=cfg), keys, chunk_size=cfg.chunk)
    if cfg.lb_kappas:
        out["avr_lb"] = _avr_lower_bound(cfg)
    if not cfg.bound_seeds:
        return out
    alphas = jnp.repeat(jnp.asarray([2.0, 3.0]), cfg.bound_seeds)
    bnd = sweep(partial(_bounds_row, cfg=cfg), {"key": jax.random.split(k_bnd, alphas.size), "alpha": alphas})
    nb = cfg.bound_seeds
    out["bounds"] = {
        f"alpha{al}": jax.tree.map(lambda x, i=i: x[i * nb : (i + 1) * nb], bnd) for i, al in enumerate((2, 3))
    }
    return out
