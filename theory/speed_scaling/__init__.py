"""Online speed scaling (Yao-Demers-Shenker): exact offline optimum, classic online algorithms, and algorithms
that use predictions (of the jobs' workloads, LAS; of the machine speed, SP). Notes in
``docs/papers/speed_scaling.md``.

Model. Jobs j = 1..n have release r_j, deadline d_j > r_j and work w_j >= 0 (three arrays of shape (n,)).
Preemption is allowed; a machine running at speed s(t) consumes power s^alpha (alpha > 1); the energy of a
speed profile is E(s) = int s(t)^alpha dt, and a schedule must finish every job inside its window [r_j, d_j].

Two representations of a speed profile (both the NamedTuple ``Profile``: ``edges`` (m + 1,), ``speed`` (m,),
constant on each piece):
  * exact, piecewise constant between the sorted release/deadline times (``yds``, ``avr_profile``);
  * on a uniform time grid of ``n_slots`` slots of width ``dt`` (every online algorithm). On the grid a job is
    available in slots rs_j <= k < ds_j with rs_j = ceil(r_j / dt), ds_j = floor(d_j / dt): exact when the
    release and deadline times are multiples of dt (every generator here makes them so).

Algorithms (E = energy, OPT = E(YDS)):
  YDS  offline optimum: repeatedly extract the interval I maximising g(I) = w(jobs with window in I) / |I|,
       run at g(I) on I, remove its jobs and collapse I. Critical speeds are non-increasing.  (YDS 1995)
  AVR  s(t) = sum_{j: r_j <= t < d_j} w_j / (d_j - r_j); alpha^alpha <= ratio <= 2^(alpha-1) alpha^alpha.
  OA   at each time run the YDS plan of the remaining work: s(t) = max_k W_rem(d <= d_k) / (d_k - t);
       ratio alpha^alpha.  qOA: q x OA's speed, q = 2 - 1/alpha.
  BKP  s(t) = max_{t' > t} w(t, e t - (e - 1) t', t') / (t' - t), with w(t, t1, t2) = work released in
       [t1, t] with deadline <= t2; ratio <= 2 (alpha / (alpha - 1))^alpha e^alpha.  (Bansal-Kimbrel-Pruhs)
       Energy accounting: BKP and qOA command speeds above the pending work (BKP's s(t) counts work already
       done); the machine pays for the commanded speed, so ``Schedule.profile`` is the commanded speed and
       ``Schedule.work_rate`` the work done. Integrating only the work done made BKP look 2x better (3.6 vs
       ~8 on LAS's instances).
  LAS  (Bamas, Maggiori, Rohwedder, Svensson 2020) job-workload predictions w_hat: delta from
       ((1 + delta) / (1 - delta))^alpha = 1 + eps; windows shrunk to [r_j, d_j - delta |I_j|]; follow the
       YDS schedule of the predicted jobs scaled by min(1, w_j / w_hat_j), spread the excess
       (w_j - w_hat_j)^+ uniformly over the shrunk window, then ``robustify``: average each job's allocation
       over a causal window of width delta |I_j| (feasible for the original windows; no more energy when the
       widths are equal, as in LAS's uniform-window setting; see ``robustify``).

  SP   machine-speed predictions s_hat(t) (our reconstruction): follow the prediction (dynamic or offline),
       clipped between a per-job reserve and kappa x AVR(t); E(SP) <= kappa^alpha E(AVR) <= kappa^alpha
       2^(alpha-1) alpha^alpha OPT for every prediction, kappa = alpha / eps for consistency 1 + eps
       (derivation, and what is proved and what is measured: ``jaxwb.theory.speed_scaling.sp``).

Package layout (every public name is re-exported here: ``from theory.speed_scaling import X``):
  model      Profile, Schedule, YDS, validation, energy, grid profiles
  offline    yds, avr_profile (exact)
  grid       the time grid and EDF (edf_schedule)
  online     avr, oa, qoa, bkp, online_schedules and their competitive bounds
  las        eps_to_delta, shrink_slots, robustify, las
  sp         sp_kappa, sp_robustness_bound, speed_prediction_schedule(s)
  instances  las_instance, random_instance, the AVR lower-bound family, predict_work / predict_speed

Every function is jit/vmap compatible (``n_slots`` and string options are static); concrete bad inputs raise
ValueError naming the parameter (deadline <= release, negative work, alpha <= 1, ...), and ``jaxwb.theory.checked``
raises the same for traced values. Grid convention (``resolve_n_slots``, the same in every grid function):
``n_slots`` is keyword, default None = inferred from the grid array the function takes (SP's predicted speed,
EDF's speed) or else from the deadlines (max floor(d_j / dt)); given, it must match that array and cover every
deadline; under jit with traced deadlines it must be given.
"""

from jaxwb.theory.speed_scaling.grid import edf_schedule, resolve_n_slots
from jaxwb.theory.speed_scaling.instances import (
    avr_lower_bound_instance,
    avr_lower_bound_ratio,
    las_instance,
    predict_speed,
    predict_work,
    prediction_error,
    random_instance,
)
from jaxwb.theory.speed_scaling.las import (
    eps_to_delta,
    las,
    las_robustness_bound,
    robustify,
    robustify_energy_bound,
    shrink_slots,
)
from jaxwb.theory.speed_scaling.model import (
    SP_MODES,
    SPEED_PREDICTIONS,
    WORK_PREDICTIONS,
    YDS,
    E,
    Profile,
    Schedule,
    check_alpha,
    check_instance,
    energy,
    grid_profile,
    profile_on_grid,
    total_work,
)
from jaxwb.theory.speed_scaling.offline import avr_profile, yds
from jaxwb.theory.speed_scaling.online import avr, avr_bound, bkp, bkp_bound, oa, oa_bound, online_schedules, qoa, qoa_q
from jaxwb.theory.speed_scaling.sp import (
    sp_kappa,
    sp_robustness_bound,
    speed_prediction_schedule,
    speed_prediction_schedules,
)

__all__ = [
    "E",
    "SPEED_PREDICTIONS",
    "SP_MODES",
    "WORK_PREDICTIONS",
    "YDS",
    "Profile",
    "Schedule",
    "avr",
    "avr_bound",
    "avr_lower_bound_instance",
    "avr_lower_bound_ratio",
    "avr_profile",
    "bkp",
    "bkp_bound",
    "check_alpha",
    "check_instance",
    "edf_schedule",
    "energy",
    "eps_to_delta",
    "grid_profile",
    "las",
    "las_instance",
    "las_robustness_bound",
    "oa",
    "oa_bound",
    "online_schedules",
    "predict_speed",
    "predict_work",
    "prediction_error",
    "profile_on_grid",
    "qoa",
    "qoa_q",
    "random_instance",
    "resolve_n_slots",
    "robustify",
    "robustify_energy_bound",
    "shrink_slots",
    "sp_kappa",
    "sp_robustness_bound",
    "speed_prediction_schedule",
    "speed_prediction_schedules",
    "total_work",
    "yds",
]
