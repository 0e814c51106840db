"""Online speed scaling with predictions: machine-speed predictions (SP) and job-workload predictions (LAS)
against the classic online algorithms, measured as energy / OPT (YDS = 1). Spec:
``shared/papers/speed_scaling.md``; the algorithms and the robustness derivation are in
``theory/speed_scaling/`` (SP: ``sp.py``).

Figures (``figures/speed_scaling/``):
  ratio_vs_error.png   SP's ratio vs the relative L_alpha error eta of a noisy speed prediction, one curve per
                       eps (trust factor kappa = alpha / eps; dynamic solid, offline dashed), pure
                       prediction-following for contrast, the smoothness function (1 + eta)^alpha and the
                       robustness bound kappa^alpha E(AVR)/OPT drawn
  profiles.png         speed profiles of OPT vs the algorithms on one instance (BKP commanded vs work done)
  robustness.png       worst ratio under adversarial predictions (zero, huge, shifted, reversed, ...), SP per
                       eps vs pure following, with the bound kappa^alpha E(AVR)/OPT
  las_experiment.png   LAS's experiment (200 jobs, D = 20, alpha = 3, 20 seeds): mean ratios beside the
                       published ones (BKP with the commanded-speed accounting and with work-only accounting)
  las_eps.png          LAS-accurate mean ratio vs eps with the published range: which eps it belongs to
  las_smoothness.png   LAS's ratio vs the workload-prediction error with (1 + eps)(1 + eta_w)^alpha
  avr_lower_bound.png  AVR / OPT on the lower-bound family at alpha = 2 approaching alpha^alpha = 4

Findings (full preset, 20 seeds):
  * BKP with its commanded speed integrated: 7.72 +- 0.51 (published 7.88); the old work-only accounting gave
    3.6 (BKP's speed counts work it has already done, so it over-speeds; the machine pays for it).
  * SP (trust factor kappa = alpha / eps = 30 / 6 / 1.5 at eps = 0.1 / 0.5 / 2) is robust by construction:
    s <= kappa AVR in every slot. Worst over seeds, modes and the adversarial family (zero, 10x, 0.1x, shifted,
    reversed, uniform, spikes, very noisy): 504 / 25.4 / 2.95 OPT, i.e. 0.014 / 0.086 / 0.65 of the instance
    bound kappa^alpha E(AVR) and far below C = kappa^alpha 2^(alpha-1) alpha^alpha = 2.9e6 / 2.3e4 / 365;
    pure following reaches ~2600 OPT (spikes). The ratio-vs-error curve flattens at eps = 0.5 and 2; at
    eps = 0.1 (kappa = 30) the cap is 27000 E(AVR) and the curve still rises over our error range: the price
    of the consistency target. Noisy predictions stay below (1 + eta)^alpha for every sigma and eps.
  * Consistency with the exact prediction (worst seed): 1.0000 / 1.045 / 1.278 at eps = 0.1 / 0.5 / 2, each
    <= 1 + eps; the theory tests check <= 1 + eps on random instances with windows of 1-6 slots up to 100 slots
    (hypothesis). Pure following of the exact prediction costs exactly OPT; no O(1)-robust algorithm can
    reproduce every exact prediction (``theory.speed_scaling.sp``).
  * The published LAS-accurate range 1.008-1.026 maps to eps in [0.24, 1.17] on our instances (LAS-accurate
    is 1.005 at eps = 0.1 and 1.036 at eps = 2), so it belongs to eps = 0.5 of our three, not to all three.

Grid: the LAS instances have integer release times; every online algorithm runs on ``substeps`` slots per
time unit (AVR, OA and SP are exact on it; qOA and BKP are evaluated at slot starts; LAS rounds its shrink up
to whole slots).
"""

from __future__ import annotations

import dataclasses
import math
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from sims.core import style
from sims.core.audit import Mutant
from sims.core.harness import BenchRow, Claim
from sims.core.sweep import sweep
from theory import speed_scaling as ss

NAME = "speed_scaling"
TITLE = "Speed scaling with machine-speed predictions: robust SP, LAS and the classic baselines"

BASELINES = ("avr", "oa", "qoa", "bkp")
PUBLISHED = {"avr": 1.27, "oa": 1.20, "bkp": 7.88}  # Bamas et al. 2020, mean ratios of their experiment
PUBLISHED_LAS = (1.008, 1.026)
ADVERSARIAL = (
    "zero",
    "scaled_up",
    "scaled_down",
    "shifted_early",
    "shifted_late",
    "reversed",
    "uniform",
    "spikes",
    "very_noisy",
)
# Claims that fail on the full preset, with the reason (kept failing, not loosened).
KNOWN_MISMATCHES: dict[str, str] = {}


@dataclasses.dataclass(frozen=True)
class Config:
    alpha: float = 3.0
    # LAS's eps and SP's consistency targets (SP's trust factor kappa = sp_kappa(eps, alpha) = alpha / eps)
    eps_values: tuple[float, ...] = (0.1, 0.5, 2.0)
    # LAS's experiment model (Bamas et al.): one job per time unit, window D, random-walk workloads in [20, 80].
    # The same instances serve the LAS experiment, the error sweep and the adversarial predictions.
    n_jobs: int = 200
    window: int = 20
    n_seeds: int = 20
    substeps: int = 4  # grid slots per time unit
    walk_step: float = 5.0
    noise_levels: tuple[float, ...] = (0.0, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2)
    las_eps_grid: tuple[float, ...] = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0)
    bkp_check_jobs: int = 40  # BKP against the pure-Python reference on the first jobs of seed 0
    # worst-case bound checks on general random instances
    bound_jobs: int = 12
    bound_horizon: int = 30
    bound_seeds: int = 64
    # AVR lower-bound family at alpha = 2
    lb_jobs: int = 100  # jobs at kappa = 0.4 (n ~ 1 / kappa), and twice as many
    lb_kappas: tuple[float, ...] = (0.4, 0.2, 0.1)
    chunk: int = 5

    def __post_init__(self):
        def bad(field, why):
            raise ValueError(f"Config.{field}: {why}, got {getattr(self, field)!r}")

        if not (math.isfinite(self.alpha) and self.alpha > 1):
            bad("alpha", "must be finite and > 1")
        for field in ("eps_values", "noise_levels", "las_eps_grid", "lb_kappas"):
            vals = getattr(self, field)
            if not isinstance(vals, tuple) or not all(math.isfinite(float(x)) for x in vals):
                bad(field, "must be a tuple of finite numbers")
        if not self.eps_values or any(e <= 0 for e in self.eps_values):
            bad("eps_values", "must be a non-empty tuple of positive eps")
        if not self.noise_levels or min(self.noise_levels) != 0 or any(x < 0 for x in self.noise_levels):
            bad("noise_levels", "must be non-negative and contain 0 (the exact prediction)")
        if list(self.noise_levels) != sorted(self.noise_levels):
            bad("noise_levels", "must be increasing")
        if any(e <= 0 for e in self.las_eps_grid) or list(self.las_eps_grid) != sorted(self.las_eps_grid):
            bad("las_eps_grid", "must be increasing positive eps")
        if any(not 0 < k < 1 for k in self.lb_kappas):
            bad("lb_kappas", "must lie in (0, 1)")
        for field in (
            "n_jobs",
            "window",
            "substeps",
            "chunk",
            "bkp_check_jobs",
            "bound_jobs",
            "bound_horizon",
            "lb_jobs",
        ):
            if not (isinstance(getattr(self, field), int) and getattr(self, field) >= 1):
                bad(field, "must be a positive int")
        if self.n_seeds < 5:
            bad("n_seeds", "must be >= 5 (claims on random quantities use a CI over seeds)")
        if self.bound_seeds < 0:
            bad("bound_seeds", "must be >= 0")
        if self.bkp_check_jobs > self.n_jobs:
            bad("bkp_check_jobs", f"must be <= n_jobs = {self.n_jobs}")
        if self.bound_horizon <= 12:
            bad("bound_horizon", "must exceed the longest random window (12)")
        if not (math.isfinite(self.walk_step) and self.walk_step > 0):
            bad("walk_step", "must be finite and > 0")
        d_max = max(ss.eps_to_delta(e, self.alpha) for e in self.eps_values + self.las_eps_grid)
        if math.ceil(d_max * self.window * self.substeps) >= self.window * self.substeps:
            bad("eps_values", "leave no window after LAS's shrink")


PRESETS = {
    "full": Config(),
    "quick": Config(
        eps_values=(0.1, 2.0),
        n_jobs=40,
        n_seeds=5,
        substeps=2,
        noise_levels=(0.0, 0.4, 1.6),
        las_eps_grid=(),
        bkp_check_jobs=24,
        bound_seeds=0,
        lb_kappas=(),
        chunk=5,
    ),  # bounds, the LAS eps sweep and the AVR family: full preset only
}


def delta_reference(eps, alpha):
    """delta with ((1 + delta) / (1 - delta))^alpha = 1 + eps, written out here (not ``ss.eps_to_delta``) so that
    the LAS shrink claim does not share code with what it checks."""
    c = (1.0 + eps) ** (1.0 / alpha)
    return (c - 1.0) / (c + 1.0)


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
    out, speeds = {}, {"opt": s_opt}
    for name, sched in ss.online_schedules(r, d, w, alpha=a, n_slots=n_slots, dt=dt).items():
        out[name] = ss.energy(sched.profile, a) / opt
        out[f"{name}_work_only"] = ss.energy(ss.grid_profile(sched.work_rate, dt), a) / opt
        out[f"{name}_feasible"] = sched.feasible
        speeds[name] = sched.profile.speed
        if name == "bkp":
            speeds["bkp_work"] = sched.work_rate

    def las_run(e, pred):
        sched = ss.las(r, d, w, pred, eps=e, alpha=a, n_slots=n_slots, dt=dt)
        return ss.energy(sched.profile, a) / opt, sched.feasible, sched.profile.speed

    eps = jnp.asarray(cfg.eps_values)
    preds = jnp.stack([ss.predict_work(w, kind, key=k_work) for kind in ss.WORK_PREDICTIONS])
    ratio, feas, sp = jax.vmap(jax.vmap(las_run, (0, None)), (None, 0))(eps, preds)  # (kinds, eps)
    for i, kind in enumerate(ss.WORK_PREDICTIONS):
        out[f"las_{kind}"], out[f"las_{kind}_feasible"] = ratio[i], feas[i]
    speeds["las"] = sp[0, 0]

    def shrunk_opt(e):  # YDS of the instance with deadlines moved in by ceil(delta |I| / dt) slots
        m = jnp.ceil(delta_reference(e, a) * (d - r) / dt - 1e-6)
        return ss.energy(ss.yds(r, d - m * dt, w).profile, a) / opt

    out["las_shrunk_opt"] = jax.vmap(shrunk_opt)(eps)
    # job-workload predictions with relative noise sigma (LAS at the smallest eps): smoothness curve
    sig = jnp.asarray(cfg.noise_levels)
    w_noisy = jax.vmap(lambda s_, k: ss.predict_work(w, "accurate", s_, key=k))(sig, jax.random.split(k_work, sig.size))
    out["las_noise"] = jax.vmap(lambda p_: las_run(jnp.min(eps), p_)[0])(w_noisy)
    out["las_noise_error"] = jax.vmap(lambda p_: ss.prediction_error(p_, w, a))(w_noisy)
    if cfg.las_eps_grid:
        grid = jnp.asarray(cfg.las_eps_grid)
        out["las_eps_grid"] = jax.vmap(lambda e: las_run(e, w)[0])(grid)

    kappas = jnp.asarray([ss.sp_kappa(e, a) for e in cfg.eps_values])

    def sp_run(s_hat):
        res = {"error": ss.prediction_error(s_hat, s_opt, a)}

        def one(c):
            both, _ = ss.speed_prediction_schedules(r, d, w, s_hat, alpha=a, kappa=c, dt=dt)
            return {m: (ss.energy(s.profile, a) / opt, s.feasible, s.profile.speed) for m, s in both.items()}

        per_cap = jax.vmap(one)(kappas)
        for mode in ss.SP_MODES:
            res[mode], res[f"{mode}_feasible"], res[f"{mode}_speed"] = per_cap[mode]
        follow = ss.speed_prediction_schedule(r, d, w, s_hat, alpha=a, robust=False, dt=dt)
        res["follow"], res["follow_feasible"] = ss.energy(follow.profile, a) / opt, follow.feasible
        return res

    sig = jnp.asarray(cfg.noise_levels)
    noisy = jax.vmap(lambda s, k: ss.predict_speed(s_opt, "noisy", s, key=k))(sig, jax.random.split(k_noise, sig.size))
    adv = _adversarial_predictions(k_adv, s_opt, cfg)
    preds = jnp.concatenate([noisy, jnp.stack([adv[k] for k in ADVERSARIAL])])
    res = jax.lax.map(sp_run, preds)
    n_noise = sig.size
    out["sp_noise"] = {k: v[:n_noise] for k, v in res.items() if not k.endswith("_speed")}
    out["sp_adv"] = {k: v[n_noise:] for k, v in res.items() if not k.endswith("_speed")}
    i_show = min(2, n_noise - 1)
    speeds["sp_prediction"] = noisy[i_show]
    speeds["sp_dynamic"] = res["dynamic_speed"][i_show, len(cfg.eps_values) // 2]
    out["speeds"] = speeds
    out["jobs"] = {"release": r, "deadline": d, "work": w}
    return out


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
    """BKP's commanded energy (the code path of the main sweep) vs the pure-Python reference, on the first
    ``bkp_check_jobs`` jobs of one LAS-model instance (same grid)."""
    from sims.bench import _speed_scaling_reference as ref

    a, sub, nj = cfg.alpha, cfg.substeps, cfg.bkp_check_jobs
    dt, n_slots = 1.0 / sub, (nj + cfg.window) * sub
    r, d, w = ss.las_instance(nj, cfg.window, step=cfg.walk_step, key=key)
    e_jax = float(ss.energy(ss.online_schedules(r, d, w, alpha=a, n_slots=n_slots, dt=dt)["bkp"].profile, a))
    lists = [np.asarray(x, dtype=float).tolist() for x in (r, d, w)]
    e_ref = ref.energy_python(ref.bkp_python(*lists, n_slots, dt), dt, a)
    return {"jax": np.asarray(e_jax), "python": np.asarray(e_ref)}


def run(cfg: Config, *, key: jax.Array) -> dict:
    k_main, k_bnd, k_bkp = jax.random.split(key, 3)
    out = {
        "eps": jnp.asarray(cfg.eps_values),
        "kappas": jnp.asarray([ss.sp_kappa(e, cfg.alpha) for e in cfg.eps_values]),
    }
    main = sweep(partial(_row, cfg=cfg), jax.random.split(k_main, cfg.n_seeds), chunk_size=cfg.chunk)
    out["profiles"] = jax.tree.map(lambda x: x[0], {"speeds": main.pop("speeds"), "jobs": main.pop("jobs")})
    out["main"] = main
    out["bkp_check"] = _bkp_check(k_bkp, cfg)
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


# ---------------------------------------------------------------------------------------------------------
# Claims
# ---------------------------------------------------------------------------------------------------------


def paper_setup(cfg: Config) -> bool:
    """True when the config is LAS's experiment (200 jobs, D = 20, alpha = 3, 20 seeds): only then are the
    published numbers a claim."""
    return (cfg.n_jobs, cfg.window, cfg.alpha, cfg.n_seeds) == (200, 20, 3.0, 20)


def las_eps_interval(eps_grid, means, lo=PUBLISHED_LAS[0], hi=PUBLISHED_LAS[1]):
    """The eps interval whose LAS-accurate mean ratio lies in [lo, hi], by linear interpolation of the mean
    ratio (increasing in eps) on the grid; (nan, nan) when the curve misses the range."""
    x, y = np.asarray(eps_grid, float), np.asarray(means, float)
    if y[0] > hi or y[-1] < lo:
        return float("nan"), float("nan")
    return float(np.interp(lo, y, x)), float(np.interp(hi, y, x))


def i0_noise(cfg: Config) -> int:
    """Index of the zero-noise level (exact prediction s_hat = s*)."""
    return int(np.argmin(np.abs(np.asarray(cfg.noise_levels))))


def claims(results: dict, cfg: Config) -> list[Claim]:
    a = cfg.alpha
    eps = np.asarray(results["eps"])
    kappas = np.asarray(results["kappas"])
    main = results["main"]
    out = []
    i0 = i0_noise(cfg)

    # BKP / qOA energy accounting: independent pure-Python BKP integrating the commanded speed
    bc = results["bkp_check"]
    out.append(
        Claim(
            f"BKP energy (commanded speed integrated) = pure-Python BKP reference ({cfg.bkp_check_jobs} "
            "jobs, same grid)",
            float(bc["python"]),
            float(bc["jax"]),
            1e-3,
            "rel",
            kind="check",
            source="theory",
        )
    )

    # SP robustness: s <= kappa AVR(t) in every slot, so E(SP) <= kappa^a E(AVR) <= C OPT for every prediction
    avr = np.asarray(main["avr"])  # (seeds,) grid AVR = exact AVR (times on the grid)
    for j, (e, k) in enumerate(zip(eps, kappas, strict=True)):
        worst_inst, worst = 0.0, 0.0
        for blk in ("sp_noise", "sp_adv"):
            for mode in ss.SP_MODES:
                sp = np.asarray(main[blk][mode])[..., j]  # (seeds, predictions)
                worst_inst = max(worst_inst, float(np.max(sp / (k**a * avr[:, None]))))
                worst = max(worst, float(np.max(sp)))
        C = float(ss.sp_robustness_bound(a, k))
        out.append(
            Claim(
                f"SP robustness, instance form (eps={e:g}, kappa={k:g}): worst over seeds, modes and "
                "predictions (noisy, zero, 10x, 0.1x, shifted, reversed, uniform, spikes) of E(SP) / "
                "(kappa^a E(AVR)) <= 1",
                1.0,
                worst_inst,
                0.0,
                "le",
                kind="bound",
                source="theory",
            )
        )
        out.append(
            Claim(
                f"SP robustness (eps={e:g}): worst ratio over seeds, modes and predictions <= C = kappa^a "
                f"2^(a-1) a^a = {C:.3g} (independent of the prediction error)",
                C,
                worst,
                0.0,
                "le",
                kind="bound",
                source="theory",
            )
        )
        # consistency on the figure's instances (LAS's model): exact prediction
        for mode in ss.SP_MODES:
            worst0 = float(np.max(np.asarray(main["sp_noise"][mode])[:, i0, j]))
            out.append(
                Claim(
                    f"SP-{mode} consistency on LAS's instances (eps={e:g}, kappa={k:g}): worst ratio with "
                    "s_hat = OPT's speed <= 1 + eps",
                    1 + float(e),
                    worst0,
                    0.0,
                    "le",
                    kind="bound",
                    source="theory",
                )
            )
    # the fallback path against an independent implementation: with no prediction (s_hat = 0) SP runs OA on its
    # own work; at the largest kappa neither the reserve nor the cap binds on LAS's instances, so E(SP) = E(OA)
    jk = int(np.argmax(kappas))
    oa = np.asarray(main["oa"])
    rel0 = np.concatenate(
        [np.asarray(main["sp_adv"][mode])[:, ADVERSARIAL.index("zero"), jk] / oa for mode in ss.SP_MODES]
    )
    out.append(
        Claim(
            f"SP with no prediction (s_hat = 0, eps={eps[jk]:g}, kappa={kappas[jk]:g}) = OA (ss.oa): worst seed and "
            "mode of E(SP) / E(OA)",
            1.0,
            float(rel0[np.argmax(np.abs(rel0 - 1))]),
            1e-4,
            "rel",
            kind="check",
            source="theory",
        )
    )
    follow0 = np.asarray(main["sp_noise"]["follow"])[:, i0]
    out.append(
        Claim(
            "pure prediction-following with s_hat = OPT's speed costs exactly OPT (OA reserve never "
            "exceeds OPT's speed; worst seed)",
            1.0,
            float(np.max(follow0)),
            1e-4,
            "abs",
            kind="check",
            source="theory",
        )
    )
    # smoothness: ratio <= (1 + eta)^a per noise level and eps (both modes), CI over seeds
    eta = np.asarray(main["sp_noise"]["error"])  # (seeds, noise)
    for i, sig in enumerate(cfg.noise_levels):
        if sig == 0:
            continue
        for j, e in enumerate(eps):
            for mode in ss.SP_MODES:
                rel = np.asarray(main["sp_noise"][mode])[:, i, j] / (1 + eta[:, i]) ** a
                out.append(
                    Claim.from_samples(
                        f"SP-{mode} smoothness (eps={e:g}, sigma={sig:g}, mean eta={eta[:, i].mean():.2f}): mean over "
                        "seeds of ratio / (1 + eta)^a <= 1",
                        1.0,
                        rel,
                        0.0,
                        "le",
                        kind="check",
                        source="theory",
                    )
                )

    # LAS smoothness with noisy job-workload predictions (smallest eps): ratio <= (1 + eps) (1 + eta_w)^a
    eta_w, las_n = np.asarray(main["las_noise_error"]), np.asarray(main["las_noise"])
    e0 = float(eps.min())
    for i, sig in enumerate(cfg.noise_levels):
        if sig == 0:
            continue
        rel = las_n[:, i] / ((1 + e0) * (1 + eta_w[:, i]) ** a)
        out.append(
            Claim.from_samples(
                f"LAS smoothness (eps={e0:g}, workload noise sigma={sig:g}, mean eta_w={eta_w[:, i].mean():.2f}): mean "
                "over seeds of ratio / ((1 + eps) (1 + eta_w)^a) <= 1",
                1.0,
                rel,
                0.0,
                "le",
                kind="check",
                source="theory",
            )
        )

    # LAS
    las_acc = np.asarray(main["las_accurate"])  # (seeds, eps)
    shrunk = np.asarray(main["las_shrunk_opt"])
    for j, e in enumerate(eps):
        out.append(
            Claim(
                f"LAS consistency: worst ratio with exact workloads <= 1 + eps (eps={e:g})",
                1 + e,
                float(np.max(las_acc[:, j])),
                0.0,
                "le",
                kind="bound",
                source="paper",
            )
        )
        out.append(
            Claim(
                f"LAS with exact workloads costs <= YDS of the instance shrunk by delta(eps) (robustify on "
                f"equal widths never raises energy; worst seed, eps={e:g})",
                1.0,
                float(np.max(las_acc[:, j] / shrunk[:, j])),
                1e-4,
                "le",
                kind="bound",
                source="theory",
            )
        )

    if paper_setup(cfg):
        for name, pub in PUBLISHED.items():
            out.append(
                Claim.from_samples(
                    f"{LABELS[name]} mean ratio in LAS's experiment (200 jobs, D=20, a=3, 20 seeds) vs published "
                    "(10%: their random-walk step and grid are not in our notes)",
                    pub,
                    np.asarray(main[name]),
                    0.1,
                    "rel",
                    kind="paper",
                )
            )
        if "las_eps_grid" in main:
            grid = np.asarray(cfg.las_eps_grid)
            means = np.asarray(main["las_eps_grid"]).mean(0)
            lo, hi = las_eps_interval(grid, means)
            inside = [j for j, e in enumerate(eps) if lo <= e <= hi]
            pl, ph = PUBLISHED_LAS
            for j in inside:
                out.append(
                    Claim.from_samples(
                        f"LAS-accurate mean ratio within the published range [{pl}, {ph}] at eps={eps[j]:g} (the range "
                        f"maps to eps in [{lo:.2f}, {hi:.2f}] on our instances)",
                        (pl + ph) / 2,
                        las_acc[:, j],
                        (ph - pl) / 2,
                        "abs",
                        kind="paper",
                    )
                )
            if not inside:
                out.append(
                    Claim(
                        f"LAS-accurate published range [{pl}, {ph}] maps to an eps interval containing one "
                        f"of eps_values (found [{lo:.2f}, {hi:.2f}])",
                        1.0,
                        0.0,
                        0.0,
                        "abs",
                        kind="paper",
                    )
                )
    for label in ("alpha2", "alpha3") if "bounds" in results else ():
        al = 2.0 if label == "alpha2" else 3.0
        b = results["bounds"][label]
        for name, bound in (("avr", ss.avr_bound(al)), ("oa", ss.oa_bound(al)), ("bkp", ss.bkp_bound(al))):
            out.append(
                Claim(
                    f"{LABELS[name]} worst ratio <= its bound on random instances (alpha={al:g}; the "
                    "published bound, loose on random instances)",
                    float(bound),
                    float(np.max(np.asarray(b[name]))),
                    0.0,
                    "le",
                    kind="bound",
                    source="paper",
                )
            )
        out.append(
            Claim(
                f"OPT is a lower bound: min ratio of AVR/OA/qOA/BKP >= 1 (alpha={al:g})",
                1.0,
                min(float(np.min(np.asarray(b[n]))) for n in BASELINES),
                1e-4,
                "ge",
                kind="bound",
                source="theory",
            )
        )
    lb = results.get("avr_lb", {k: () for k in ("n", "kappa", "measured", "continuum", "extrapolated")})
    for k, m, c, x, nn in zip(lb["kappa"], lb["measured"], lb["continuum"], lb["extrapolated"], lb["n"], strict=True):
        n1, n2 = (int(v) for v in nn)
        order = float(np.log2((c - m[0]) / (c - m[1])))
        out.append(
            Claim(
                f"AVR/OPT on the lower-bound family (alpha=2, kappa={k:g}): convergence order in the "
                f"log-spacing, {n1} vs {n2} jobs",
                1.0,
                order,
                0.35,
                "abs",
                kind="check",
                source="theory",
            )
        )
        out.append(
            Claim(
                f"AVR/OPT extrapolated 2R({n2}) - R({n1}) = continuum limit (alpha=2, kappa={k:g}; -> 4 as kappa -> 0)",
                c,
                x,
                0.02,
                "rel",
                kind="check",
                source="theory",
            )
        )
    return out


# ---------------------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------------------

COLORS = {"avr": "tab:orange", "oa": "tab:green", "qoa": "tab:olive", "bkp": "tab:red"}
LABELS = {"avr": "AVR", "oa": "OA", "qoa": "qOA", "bkp": "BKP"}


def _mean_ci(x, axis=0):
    x = np.asarray(x, float)
    n = x.shape[axis]
    from scipy import stats

    half = stats.t.ppf(0.975, n - 1) * x.std(axis=axis, ddof=1) / np.sqrt(n) if n > 1 else np.zeros_like(x.mean(axis))
    return x.mean(axis), half


def plot(results: dict, cfg: Config) -> dict:
    figs = {}
    a = cfg.alpha
    eps = np.asarray(results["eps"])
    kappas = np.asarray(results["kappas"])
    cmap = [f"C{i}" for i in range(len(eps))]
    main = results["main"]
    avr_mean = float(np.mean(np.asarray(main["avr"])))
    setup = f"{cfg.n_jobs} jobs, D={cfg.window}, a={a:g}, {cfg.n_seeds} seeds"

    # ratio vs prediction error (zero error drawn at the left edge of the log axis)
    fig, ax = style.figure(figsize=(9, 6))
    eta = np.asarray(main["sp_noise"]["error"]).mean(0)
    x_floor = 0.02
    x = np.where(eta > 0, eta, x_floor)
    for j, (e, k) in enumerate(zip(eps, kappas, strict=True)):
        for mode, fmt in (("dynamic", "o-"), ("offline", "s--")):
            m, h = _mean_ci(np.asarray(main["sp_noise"][mode])[:, :, j])
            ax.errorbar(
                x, m, yerr=h, fmt=fmt, color=cmap[j], ms=4, capsize=2, label=f"SP {mode}, eps={e:g} (kappa={k:g})"
            )
        ax.axhline(
            k**a * avr_mean,
            **style.prediction(color=cmap[j]),
            label=f"bound kappa^a E(AVR)/OPT = {k**a * avr_mean:.3g} (eps={e:g})",
        )
    m, h = _mean_ci(np.asarray(main["sp_noise"]["follow"]))
    ax.errorbar(x, m, yerr=h, fmt="^:", color="0.4", ms=4, capsize=2, label="pure prediction-following (no cap)")
    xs = np.geomspace(x_floor, max(x.max(), 1.0), 100)
    ax.plot(xs, (1 + xs) ** a, color="black", lw=1.2, ls="-.", label="smoothness function (1 + eta)^a")
    for name in BASELINES:
        ax.axhline(
            np.mean(np.asarray(main[name])),
            color=COLORS[name],
            lw=2,
            alpha=0.5,
            label=f"{LABELS[name]} (no prediction), mean",
        )
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set(
        xscale="log",
        yscale="log",
        ylim=(0.9, None),
        xlabel=f"relative prediction error eta = ||s_hat - s*||_a / ||s*||_a  (mean over seeds; eta = 0 drawn "
        f"at {x_floor})",
        ylabel="energy / OPT (mean, 95% CI over seeds)",
        title=f"SP with noisy speed predictions s_hat = s* exp(sigma z - sigma^2/2)  ({setup})",
    )
    ax.legend(fontsize=7, ncol=3, loc="upper left")
    figs["ratio_vs_error"] = fig

    # LAS with noisy job-workload predictions
    fig, ax = style.figure(figsize=(7, 4.5))
    eta_w = np.asarray(main["las_noise_error"]).mean(0)
    xw = np.where(eta_w > 0, eta_w, x_floor)
    m, h = _mean_ci(np.asarray(main["las_noise"]))
    ax.errorbar(xw, m, yerr=h, fmt="o-", capsize=3, label=f"LAS, eps={eps.min():g} (mean, 95% CI)")
    xs = np.geomspace(x_floor, max(xw.max(), 1.0), 100)
    ax.plot(xs, (1 + eps.min()) * (1 + xs) ** a, **style.prediction(), label="(1 + eps)(1 + eta_w)^a")
    ax.axhline(np.mean(np.asarray(main["avr"])), color=COLORS["avr"], lw=2, alpha=0.5, label="AVR, mean")
    ax.set(
        xscale="log",
        yscale="log",
        ylim=(0.95, None),
        xlabel=f"relative workload error eta_w = ||w_hat - w||_a / ||w||_a (eta = 0 drawn at {x_floor})",
        ylabel="energy / OPT",
        title=f"LAS with noisy workloads w_hat = w (1 + sigma z)^+ ({setup})",
    )
    ax.legend(fontsize=8)
    figs["las_smoothness"] = fig

    # speed profiles (seed 0, first 60 time units)
    p = results["profiles"]
    sp = {k: np.asarray(v) for k, v in p["speeds"].items()}
    n_slots = sp["opt"].shape[0]
    t = np.arange(n_slots + 1) / cfg.substeps
    t_end = min(60.0, t[-1])
    k_end = int(t_end * cfg.substeps)
    fig, axes = style.figure(2, 1, figsize=(10, 7), sharex=True)
    sigma_show = cfg.noise_levels[min(2, len(cfg.noise_levels) - 1)]
    groups = (
        (
            ("avr", "AVR"),
            ("oa", "OA"),
            ("qoa", "qOA (commanded)"),
            ("bkp", "BKP (commanded)"),
            ("bkp_work", "BKP work done"),
        ),
        (
            ("sp_prediction", f"predicted speed s_hat (sigma = {sigma_show:g})"),
            ("sp_dynamic", f"SP dynamic with that prediction, eps={eps[len(eps) // 2]:g}"),
            ("las", f"LAS with exact workloads, eps={eps[0]:g}"),
        ),
    )
    for ax, names in zip(axes, groups, strict=True):
        ax.stairs(sp["opt"][:k_end], t[: k_end + 1], color="black", lw=2.4, label="OPT (YDS)")
        for key, label in names:
            kw = dict(color="0.6", lw=0.8) if key == "sp_prediction" else dict(lw=1.3)
            if key == "bkp_work":
                kw = dict(color="tab:red", lw=0.8, ls=":")
            ax.stairs(sp[key][:k_end], t[: k_end + 1], label=label, **kw)
        ax.set(ylabel="speed s(t) (work / time)", yscale="log")
        ax.legend(fontsize=8, loc="upper right", ncol=2)
    axes[0].set_title(
        f"Speed profiles on one instance (seed 0 of the LAS model, first {t_end:g} time units; "
        f"job i arrives at t = i, due at i + {cfg.window})"
    )
    axes[1].set(xlabel="time t")
    figs["profiles"] = fig

    # robustness
    adv = main["sp_adv"]
    fig, ax = style.figure(figsize=(11, 5.5))
    n_bar = len(eps) + 1
    width = 0.8 / n_bar
    xs = np.arange(len(ADVERSARIAL))
    for j, (e, k) in enumerate(zip(eps, kappas, strict=True)):
        worst = np.max(np.maximum(np.asarray(adv["dynamic"])[:, :, j], np.asarray(adv["offline"])[:, :, j]), axis=0)
        ax.bar(
            xs + (j - (n_bar - 1) / 2) * width,
            worst,
            width,
            color=cmap[j],
            label=f"SP eps={e:g}, kappa={k:g} (worst over seeds and modes)",
        )
        ax.axhline(
            k**a * avr_mean,
            **style.prediction(color=cmap[j]),
            label=f"proved bound kappa^a E(AVR)/OPT (eps={e:g}, mean over seeds)",
        )
    worst = np.max(np.asarray(adv["follow"]), axis=0)
    ax.bar(xs + (len(eps) - (n_bar - 1) / 2) * width, worst, width, color="0.6", label="pure following (no cap)")
    ax.axhline(ss.oa_bound(a), color="0.35", lw=1, ls="-.", label="OA's bound a^a")
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set(
        xticks=xs,
        yscale="log",
        ylabel="worst energy / OPT over seeds",
        title=f"Robustness: SP under adversarial speed predictions ({setup})",
    )
    ax.set_xticklabels([k.replace("_", "\n") for k in ADVERSARIAL], fontsize=8)
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    ax.set_ylim(0.8, None)
    figs["robustness"] = fig

    # LAS experiment
    fig, ax = style.figure(figsize=(13, 5.5))
    pos, ticks, ticklabels = 0.0, [], []
    base_pos = {}
    for name in BASELINES:
        m, h = _mean_ci(np.asarray(main[name]))
        ax.bar(pos, m, yerr=h, color=COLORS[name], capsize=3)
        base_pos[name] = pos
        ticks.append(pos)
        ticklabels.append(LABELS[name])
        pos += 1
    m, h = _mean_ci(np.asarray(main["bkp_work_only"]))
    ax.bar(pos, m, yerr=h, color=COLORS["bkp"], alpha=0.35, capsize=3, hatch="..")
    ticks.append(pos)
    ticklabels.append("BKP\nwork-only\n(old bug)")
    pos += 1.5
    for kind in ss.WORK_PREDICTIONS:
        vals = np.asarray(main[f"las_{kind}"])
        for j, e in enumerate(eps):
            m, h = _mean_ci(vals[:, j])
            ax.bar(pos, m, yerr=h, color=cmap[j], capsize=3)
            ticks.append(pos)
            ticklabels.append(f"LAS\n{kind}\neps={e:g}")
            pos += 1
        pos += 0.5
    for mode in ss.SP_MODES:
        vals = np.asarray(main["sp_noise"][mode])[:, i0_noise(cfg), :]
        for j, e in enumerate(eps):
            m, h = _mean_ci(vals[:, j])
            ax.bar(pos, m, yerr=h, color=cmap[j], capsize=3, hatch="//")
            ticks.append(pos)
            ticklabels.append(f"SP\n{mode}\ns_hat=s*\neps={e:g}")
            pos += 1
        pos += 0.5
    for k, (name, pub) in enumerate(PUBLISHED.items()):
        ax.plot(
            base_pos[name],
            pub,
            marker="*",
            ms=15,
            color="black",
            ls="none",
            label="published mean (Bamas et al. 2020)" if k == 0 else None,
        )
    ax.axhspan(*PUBLISHED_LAS, color="0.75", zorder=0, label="published LAS-accurate range 1.008-1.026")
    ax.axhline(1.0, **style.prediction(), label="OPT = 1")
    ax.set(
        xticks=ticks,
        yscale="log",
        ylabel="mean energy / OPT (95% CI over seeds)",
        title=f"LAS's experiment: {setup} (random-walk workloads in [20, 80]); bars ours, stars published",
    )
    ax.set_xticklabels(ticklabels, fontsize=6)
    ax.legend(fontsize=8, loc="upper right")
    figs["las_experiment"] = fig

    if "las_eps_grid" in main:
        grid = np.asarray(cfg.las_eps_grid)
        m, h = _mean_ci(np.asarray(main["las_eps_grid"]))
        lo, hi = las_eps_interval(grid, m)
        fig, ax = style.figure(figsize=(7, 4.5))
        ax.errorbar(grid, m, yerr=h, fmt="o-", capsize=3, label="LAS, exact workloads (mean, 95% CI)")
        ax.axhspan(*PUBLISHED_LAS, color="0.8", label="published LAS-accurate range")
        if np.isfinite(lo):
            ax.axvspan(lo, hi, color="tab:blue", alpha=0.12, label=f"eps in [{lo:.2f}, {hi:.2f}] maps into it")
        ax.plot(grid, 1 + grid, **style.prediction(), label="consistency bound 1 + eps")
        ax.set(
            xscale="log",
            yscale="log",
            ylim=(1.0, max(1.2, float(m.max()) * 1.05)),
            xlabel="eps",
            ylabel="energy / OPT",
            title=f"Which eps is the published LAS range? ({setup})",
        )
        ax.legend(fontsize=8)
        figs["las_eps"] = fig

    # AVR lower bound (full preset only)
    if "avr_lb" not in results:
        return figs
    lb = results["avr_lb"]
    fig, ax = style.figure(figsize=(7, 4.5))
    ax.plot(lb["curve_kappa"], lb["curve_ratio"], **style.prediction(), label="continuum limit (quadrature)")
    ax.plot(
        lb["kappa"],
        lb["measured"][:, 0],
        "v",
        color="tab:orange",
        ms=7,
        ls="none",
        label=f"measured: exact AVR / YDS, n = {cfg.lb_jobs} x 0.4/kappa jobs",
    )
    ax.plot(lb["kappa"], lb["measured"][:, 1], "^", color="tab:orange", ms=7, ls="none", label="measured, 2n jobs")
    ax.plot(
        lb["kappa"], lb["extrapolated"], "o", color="tab:blue", ms=8, ls="none", label="extrapolated 2 R(2n) - R(n)"
    )
    ax.axhline(4.0, color="tab:red", lw=1, label="alpha^alpha = 4 (kappa -> 0)")
    ax.set(
        xscale="log",
        xlabel="kappa (work density t^-gamma, gamma = (1 - kappa) / alpha)",
        ylabel="AVR / OPT",
        title="AVR on its lower-bound family at alpha = 2",
    )
    ax.legend()
    figs["avr_lower_bound"] = fig
    return figs


# ---------------------------------------------------------------------------------------------------------
# Mutants (plausible bugs the claims must catch on the quick preset)
# ---------------------------------------------------------------------------------------------------------


def _no_fallback(f):
    """SP without its robust clip: pure prediction-following (the ``robust`` flag forced off)."""
    return lambda *args: f(*args[:-1], False)


def _double_shrink(f):
    """LAS's window shrink doubled (m_j -> 2 m_j)."""

    def shrink(*args, **kwargs):
        m, delta_eff = f(*args, **kwargs)
        return 2 * m, 2 * delta_eff

    return shrink


def _bkp_work_only(f):
    """BKP (and every baseline) integrated over the work done instead of the commanded speed."""

    def schedules(*args, **kwargs):
        out = f(*args, **kwargs)
        return {k: s._replace(profile=s.profile._replace(speed=s.work_rate)) for k, s in out.items()}

    return schedules


MUTANTS = [
    Mutant(
        "sp_no_robust_fallback",
        "theory.speed_scaling.sp:_sp",
        _no_fallback,
        "SP follows the prediction without the kappa x AVR clip and per-job reserve (robust fallback removed)",
    ),
    Mutant(
        "las_shrink_doubled",
        "theory.speed_scaling.las:shrink_slots",
        _double_shrink,
        "LAS shrinks every window by 2 delta |I_j| instead of delta |I_j|",
    ),
    Mutant(
        "bkp_work_only",
        "theory.speed_scaling.online:online_schedules",
        _bkp_work_only,
        "online baselines' energy integrated over the work done, not the commanded speed",
    ),
]


# ---------------------------------------------------------------------------------------------------------
# Benchmark: batched YDS + AVR + OA (jit(vmap)) vs the pure-Python reference, over many instances
# ---------------------------------------------------------------------------------------------------------


def _bench_row(key, *, n_jobs, horizon, alpha):
    r, d, w = ss.random_instance(n_jobs, horizon, 1, 10, 10.0, key=key)
    opt = ss.energy(ss.yds(r, d, w).profile, alpha)
    e_avr = ss.energy(ss.avr(r, d, w, n_slots=horizon).profile, alpha)
    e_oa = ss.energy(ss.oa(r, d, w, n_slots=horizon).profile, alpha)
    return jnp.stack([opt, e_avr, e_oa]), (r, d, w)


def bench(quick: bool = False) -> list[BenchRow]:
    """Energies of OPT (YDS), AVR and OA for a batch of random instances: one jit(vmap) program (median of 5
    runs after a compile) vs the pure-Python reference on the same instances (one run)."""
    from sims.bench import _speed_scaling_reference as ref
    from sims.core.harness import time_call

    n_inst = 40 if quick else 200
    n_jobs, horizon, alpha = 40, 100, 3.0
    keys = jax.random.split(jax.random.key(0), n_inst)
    fn = partial(_bench_row, n_jobs=n_jobs, horizon=horizon, alpha=alpha)
    t_ours = time_call(lambda k: sweep(fn, k), keys, repeats=5, warmup=1)
    ours, (r, d, w) = jax.block_until_ready(sweep(fn, keys))
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
    return [
        BenchRow(
            f"YDS+AVR+OA, {n_inst} inst x {n_jobs} jobs",
            "jit(vmap) sweep",
            "pure Python",
            t_ours,
            t_base,
            note=f"max rel. energy diff {diff:.1e}",
        )
    ]
