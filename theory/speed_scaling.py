"""Online speed scaling (Yao-Demers-Shenker): exact offline optimum, classic online algorithms, and algorithms
that use predictions (of the jobs' workloads, LAS; of the machine speed, SP). Notes in
``shared/papers/speed_scaling.md``.

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

  SP   machine-speed predictions s_hat(t) (our reconstruction; the paper's text is not public). Per slot:
         follow(t) = max(s_hat(t), OA_own(t))        dynamic (only s_hat(t) is known at t)
                   = s_hat(t) + D(t)                  offline (D: least extra speed so that the remaining work
                                                      due by every d_k fits in int_t^{d_k} s_hat + D (d_k - t))
         floor(t)  = max(OA_own(t), dom(t))
         s(t)      = clip(follow(t), floor(t), lambda OA_ref(t))      (lambda = ``cap`` >= 1)
       OA_own(t) = OA's speed on SP's own remaining work; OA_ref(t) = the speed of a reference OA run on the same
       jobs (simulated alongside, online); dom(t) = the least speed after which every deadline-prefix of SP's
       remaining work is <= the reference's (EDF removes min(s dt, R_k) from prefix k).
       Feasibility: s >= OA_own, and OA's speed finishes everything due by the end of each slot.
       Robustness (C independent of the prediction). Invariant: R^SP_k(t) <= R^ref_k(t) for every deadline
       prefix k. It holds at t = 0, arrivals add the same work to both sides, and running at s >= dom keeps it.
       Under it OA_own(t) = max_k R^SP_k / (d_k - t) <= OA_ref(t) and dom(t) <= OA_ref(t) (the reference
       itself removes s_ref dt from each prefix), so floor <= OA_ref <= lambda OA_ref, the clip is well defined
       and s(t) <= lambda OA_ref(t) pointwise. Hence, whatever s_hat is,
           E(SP) <= lambda^alpha E(OA) <= lambda^alpha alpha^alpha OPT =: C(alpha, lambda)
       (OA is alpha^alpha-competitive; on the grid with releases on slot boundaries the grid OA is OA). The
       instance form lambda^alpha E(OA) is what the claims test (``return_envelope``). lambda = 2, alpha = 3:
       C = 216; the instance bound is 8 E(OA) ~ 8.7 OPT on LAS's instances.
       Consistency. Pure following (``robust=False``: s = max(follow, OA_own)) with s_hat = OPT's speed gives
       exactly OPT on every instance: OPT runs each job at a speed <= OPT(t) for every t in its window (a job
       whose critical interval was extracted before t's would contain t), so the remaining work due by d_k is
       <= OPT(t) (d_k - t) and OA_own(t) <= OPT(t) (EDF keeps every deadline prefix at its minimum). The
       robust SP deviates from OPT only where OPT > lambda OA_ref (OPT speeds up for jobs not yet released:
       the ramp at the start of LAS's instances) or where OPT falls behind the OA reference on a deadline
       prefix (OPT may postpone a job OA runs early). Both can be made arbitrarily costly by nesting windows,
       so robust SP is NOT (1 + eps)-consistent on every instance for a fixed lambda: measured, the worst of
       20 LAS instances (200 jobs) is 1.126 / 1.071 / 1.025 at lambda = 1.5 / 2 / 4 (1.21 at lambda = 2 on
       40-job instances, where the ramp is a larger share); random instances with windows 1..10 give up to
       ~1.5 (the tests pin one above 1.1). A dynamic predictor cannot tell "a burst is coming" from an adversary;
       how the paper gets both guarantees at once is not in our notes.
       Smoothness: the measured ratio stays below (1 + eta)^alpha with eta = ||s_hat - s*||_alpha / ||s*||_alpha
       (Minkowski: E(s_hat) <= (1 + eta)^alpha OPT) until the cap binds, then flattens below lambda^alpha
       E(OA) / OPT.

Every function is jit/vmap compatible (``n_slots`` and string options are static); concrete bad inputs raise
ValueError naming the parameter (deadline <= release, negative work, alpha <= 1, ...).
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from theory import _validate as v

E = math.e
SPEED_PREDICTIONS = ("accurate", "noisy", "zero", "scaled", "shifted", "reversed", "uniform", "spikes")
WORK_PREDICTIONS = ("accurate", "random", "misleading")
SP_MODES = ("dynamic", "offline")


class Profile(NamedTuple):
    """A piecewise-constant speed profile: ``speed[i]`` on [edges[i], edges[i + 1]). edges (m + 1,), speed
    (m,)."""

    edges: jax.Array
    speed: jax.Array


class Schedule(NamedTuple):
    """An EDF schedule on a time grid.

    profile     Profile on the grid (edges (n_slots + 1,)): the speed the machine RUNS at, i.e. the speed the
                algorithm commands (after the guard). Energy is integrated over this profile: a machine told to
                run at s(t) spends s(t)^alpha whether or not pending work remains (BKP and qOA over-speed;
                AVR, OA and the prediction-based algorithms never command more than the pending work).
    work_rate   (n_slots,) work actually done in each slot / dt (<= the commanded speed; equal to it when the
                machine never runs out of pending work).
    nominal     (n_slots,) the speed the algorithm asked for before the guard.
    unfinished  (n,) work of each job left at its deadline (0 for a feasible schedule).
    feasible    bool scalar: every job finished by its deadline (unfinished <= 1e-4 relative).
    guard_work  scalar: work the last-slot guard had to add (jobs due at the end of the slot). 0 for every
                algorithm whose own speed is feasible (AVR, OA, qOA, LAS, SP); reported as a diagnostic.
    """

    profile: Profile
    work_rate: jax.Array
    nominal: jax.Array
    unfinished: jax.Array
    feasible: jax.Array
    guard_work: jax.Array


class YDS(NamedTuple):
    """Output of ``yds``: the exact optimal profile and per-job / per-round critical speeds.

    profile     Profile on the sorted release/deadline times (edges (2n,), speed (2n - 1,)).
    job_speed   (n,) the critical speed at which each job runs (0 for a job with no work).
    critical    (n,) critical speeds in extraction order, padded with 0 after ``n_rounds``.
    n_rounds    number of critical intervals extracted.
    """

    profile: Profile
    job_speed: jax.Array
    critical: jax.Array
    n_rounds: jax.Array


# ---------------------------------------------------------------------------------------------------------
# Validation, energy, bounds
# ---------------------------------------------------------------------------------------------------------


def check_instance(release, deadline, work) -> None:
    """Raise ValueError for a bad concrete instance: shapes (n,), deadline > release, work >= 0, finite."""
    for name, arr in (("release", release), ("deadline", deadline), ("work", work)):
        if jnp.ndim(arr) != 1:
            raise ValueError(f"{name} must be a 1-D array of shape (n,), got shape {jnp.shape(arr)}")
    if not (jnp.shape(release) == jnp.shape(deadline) == jnp.shape(work)):
        raise ValueError(f"release, deadline and work must share one shape (n,), got {jnp.shape(release)}, "
                         f"{jnp.shape(deadline)}, {jnp.shape(work)}")
    v.check("release", release, lambda a: a == a, "finite")
    if v.is_concrete(release) and v.is_concrete(deadline):
        import numpy as np

        r, d = np.asarray(release), np.asarray(deadline)
        bad = ~(d > r)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"deadline must be > release for every job, got deadline {d[i]} <= release "
                             f"{r[i]} "
                             f"for job {i}")
    v.nonnegative("work", work)


def check_alpha(alpha) -> None:
    v.check("alpha", alpha, lambda a: a > 1, "> 1")


def energy(profile: Profile, alpha) -> jax.Array:
    """E = sum_i (edges[i+1] - edges[i]) speed[i]^alpha = int s(t)^alpha dt. ``alpha`` > 1. Returns a
    scalar."""
    check_alpha(alpha)
    return jnp.sum(jnp.diff(profile.edges) * jnp.asarray(profile.speed) ** alpha)


def total_work(profile: Profile) -> jax.Array:
    """int s(t) dt over the profile (scalar)."""
    return jnp.sum(jnp.diff(profile.edges) * profile.speed)


def grid_profile(speed, dt) -> Profile:
    """A grid profile: ``speed`` (n_slots,) on slots [k dt, (k + 1) dt)."""
    speed = jnp.asarray(speed)
    return Profile(jnp.arange(speed.shape[-1] + 1, dtype=speed.dtype) * dt, speed)


def profile_on_grid(profile: Profile, n_slots: int, dt) -> jax.Array:
    """Average speed of an exact profile on each grid slot, shape (n_slots,) (exact integration)."""
    piece = jnp.diff(profile.edges) * profile.speed
    cum = jnp.concatenate([jnp.zeros(1, piece.dtype), jnp.cumsum(piece)])
    x = jnp.arange(n_slots + 1, dtype=profile.speed.dtype) * dt
    c = jnp.interp(x, profile.edges, cum, left=0.0, right=cum[-1])
    return jnp.diff(c) / dt


def avr_bound(alpha):
    """AVR's competitive ratio upper bound 2^(alpha - 1) alpha^alpha (YDS 1995)."""
    check_alpha(alpha)
    return 2.0 ** (alpha - 1) * alpha**alpha


def oa_bound(alpha):
    """OA's competitive ratio alpha^alpha (Bansal, Kimbrel, Pruhs)."""
    check_alpha(alpha)
    return alpha**alpha


def qoa_q(alpha):
    """qOA's speed-up factor q = 2 - 1/alpha."""
    check_alpha(alpha)
    return 2.0 - 1.0 / alpha


def bkp_bound(alpha):
    """BKP's competitive ratio upper bound 2 (alpha / (alpha - 1))^alpha e^alpha."""
    check_alpha(alpha)
    return 2.0 * (alpha / (alpha - 1.0)) ** alpha * E**alpha


def eps_to_delta(eps, alpha):
    """delta with ((1 + delta) / (1 - delta))^alpha = 1 + eps (LAS's shrink factor)."""
    v.positive("eps", eps)
    check_alpha(alpha)
    c = (1.0 + eps) ** (1.0 / alpha)
    return (c - 1.0) / (c + 1.0)


def shrink_slots(release, deadline, eps, alpha, dt):
    """Per-job shrink / smoothing width in slots: m_j = ceil(delta (d_j - r_j) / dt) (>= 1 when eps > 0).

    Returns (m (n,) int32, delta_eff (n,)) with delta_eff = m dt / (d_j - r_j) >= delta (rounding up keeps the
    robustness guarantee; it costs a little consistency).
    """
    delta = eps_to_delta(eps, alpha)
    length = deadline - release
    m = jnp.ceil(delta * length / dt - 1e-6).astype(jnp.int32)
    return m, m * dt / length


def las_robustness_bound(alpha, delta_eff):
    """E(LAS) <= delta_eff^-alpha 2^(alpha-1) alpha^alpha OPT, for any prediction (see module docstring)."""
    return avr_bound(alpha) / delta_eff**alpha


# ---------------------------------------------------------------------------------------------------------
# YDS: exact offline optimum
# ---------------------------------------------------------------------------------------------------------


@jax.jit
def _yds(release, deadline, work):
    n = release.shape[0]
    dtype = jnp.result_type(release, deadline, work, float)
    release, deadline, work = (jnp.asarray(a, dtype) for a in (release, deadline, work))
    edges = jnp.sort(jnp.concatenate([release, deadline]))
    seg_len = jnp.diff(edges)
    pos_r = jnp.searchsorted(edges, release, side="left")
    pos_d = jnp.searchsorted(edges, deadline, side="left")
    by_r = jnp.argsort(release, stable=True)  # job at release-rank p
    by_d = jnp.argsort(deadline, stable=True)  # job at deadline-rank q
    rank_r = jnp.argsort(by_r)
    rank_d = jnp.argsort(by_d)
    # W[p, q] = sum_j w_j [rank_r(j) >= p] [rank_d(j) <= q]: one (n, n) x (n, n) product per round
    ranks = jnp.arange(n)
    after_r = (rank_r[:, None] >= ranks[None, :]).astype(dtype)
    before_d = (rank_d[:, None] <= ranks[None, :]).astype(dtype)

    def body(state):
        alive, covered, seg_speed, job_speed, crit, rnd = state
        # collapsed coordinate of every edge: edges[0] + uncovered length before it
        U = edges[0] + jnp.concatenate([jnp.zeros(1, dtype), jnp.cumsum(jnp.where(covered, 0.0, seg_len))])
        rc, dc = U[pos_r], U[pos_d]
        # W[p, q] = work of alive jobs with release-rank >= p and deadline-rank <= q
        W = after_r.T @ (jnp.where(alive, work, 0.0)[:, None] * before_d)
        a, b = rc[by_r], dc[by_d]
        length = b[None, :] - a[:, None]
        ok = (length > 0) & alive[by_r][:, None] & alive[by_d][None, :]
        dens = jnp.where(ok, W / jnp.where(ok, length, 1.0), -1.0)
        flat = jnp.argmax(dens)
        p, q = flat // n, flat % n
        g, A, B = dens[p, q], a[p], b[q]
        inside = alive & (rc >= A) & (dc <= B)
        seg_in = (~covered) & (U[:-1] >= A) & (U[1:] <= B) & (seg_len > 0)
        return (alive & ~inside, covered | seg_in, jnp.where(seg_in, g, seg_speed),
                jnp.where(inside, g, job_speed), crit.at[rnd].set(g), rnd + 1)

    def cond(state):
        return jnp.any(state[0]) & (state[5] < n)

    z = jnp.zeros(n, dtype)
    state = (work > 0, jnp.zeros(2 * n - 1, bool), jnp.zeros(2 * n - 1, dtype), z, z, jnp.int32(0))
    _, _, seg_speed, job_speed, crit, rnd = lax.while_loop(cond, body, state)
    return YDS(Profile(edges, seg_speed), job_speed, crit, rnd)


def yds(release, deadline, work) -> YDS:
    """Exact YDS optimum of the instance (release, deadline, work), each of shape (n,).

    Each round extracts the max-density interval [r_i, d_k] (densities of all O(n^2) candidate intervals from
    one 2-D prefix sum over (release rank, deadline rank), so a round is O(n^2) and the algorithm O(n^3) in
    the worst case of n rounds), assigns its density to the uncovered elementary segments it covers, removes
    its jobs and collapses it (collapsed coordinates = uncovered length before each edge). Returns ``YDS``;
    the optimal energy is ``energy(yds(...).profile, alpha)``. Not the O(n^2 log n) algorithm of Li, Yao and
    Yao (2006). """
    check_instance(release, deadline, work)
    return _yds(jnp.asarray(release), jnp.asarray(deadline), jnp.asarray(work))


def avr_profile(release, deadline, work) -> Profile:
    """Exact AVR profile on the sorted release/deadline times: s = sum of densities w_j / (d_j - r_j) of the
    jobs whose window covers the elementary segment. edges (2n,), speed (2n - 1,)."""
    check_instance(release, deadline, work)
    release, deadline, work = (jnp.asarray(a, jnp.result_type(a, float)) for a in (release, deadline, work))
    edges = jnp.sort(jnp.concatenate([release, deadline]))
    dens = work / (deadline - release)
    cover = (release[None, :] <= edges[:-1, None]) & (deadline[None, :] >= edges[1:, None])
    return Profile(edges, cover.astype(dens.dtype) @ dens)


# ---------------------------------------------------------------------------------------------------------
# Time grid and EDF
# ---------------------------------------------------------------------------------------------------------


def _slots(release, deadline, dt):
    rs = jnp.ceil(release / dt - 1e-4).astype(jnp.int32)
    ds = jnp.floor(deadline / dt + 1e-4).astype(jnp.int32)
    return rs, ds


def _edf_step(rem, pending, cap):
    """EDF inside one slot: ``cap`` work units go to pending jobs in deadline order (arrays sorted by
    deadline)."""
    a = jnp.where(pending, rem, 0.0)
    before = jnp.cumsum(a) - a
    done = jnp.clip(cap - before, 0.0, a)
    return rem - done, done


def _scan_edf(speed_fn, rs, ds, work, n_slots, dt, *, guard, state0=(), per_job=False, return_state=False):
    """Scan over slots: speed_fn(k, t, rem, pending, state) -> (speed, state); then EDF. Arrays sorted by ds.

    Returns (rem_final, eff_speed, nominal, guard_work, done (n_slots, n) or None).
    """
    tol = 1e-6 * (jnp.max(work) + 1e-30)

    def body(carry, k):
        rem, st = carry
        t = k * dt
        pending = (rs <= k) & (k < ds) & (rem > tol)
        s, st = speed_fn(k, t, rem, pending, st)
        need = jnp.sum(jnp.where(pending & (ds == k + 1), rem, 0.0)) / dt
        s_used = jnp.maximum(s, need) if guard else s
        rem2, done = _edf_step(rem, pending, s_used * dt)
        out = (jnp.sum(done) / dt, s_used, s, jnp.maximum(s_used - s, 0.0) * dt)
        return (rem2, st), (out + (done,) if per_job else out)

    (rem, st), outs = lax.scan(body, (work, state0), jnp.arange(n_slots))
    eff, used, nominal, gw = outs[:4]
    if return_state:
        return rem, (eff, used), nominal, jnp.sum(gw), st
    return rem, (eff, used), nominal, jnp.sum(gw), (outs[4] if per_job else None)


def _sorted(release, deadline, work, key_ds):
    perm = jnp.argsort(key_ds, stable=True)
    return perm, release[perm], deadline[perm], work[perm]


def _finish(rem_sorted, perm, work, speeds, nominal, gw, dt):
    """``speeds`` = (work rate, commanded speed) per slot; the profile (and so the energy) is the commanded
    one."""
    eff, used = speeds
    unfinished = jnp.zeros_like(rem_sorted).at[perm].set(rem_sorted)
    feasible = jnp.all(unfinished <= 1e-4 * (jnp.max(work) + 1e-30))
    return Schedule(grid_profile(used, dt), eff, nominal, unfinished, feasible, gw)


def _prep(release, deadline, work, n_slots, dt):
    check_instance(release, deadline, work)
    v.positive_int("n_slots", n_slots)
    v.positive("dt", dt)
    dtype = jnp.result_type(jnp.asarray(release), jnp.asarray(work), float)
    return tuple(jnp.asarray(a, dtype) for a in (release, deadline, work))


@partial(jax.jit, static_argnames=("n_slots", "guard"))
def _edf_schedule(release, deadline, work, speed, dt, n_slots, guard):
    rs, ds = _slots(release, deadline, dt)
    perm = jnp.argsort(ds, stable=True)
    fn = lambda k, t, rem, pending, st: (speed[k], st)  # noqa: E731
    rem, eff, nom, gw, _ = _scan_edf(fn, rs[perm], ds[perm], work[perm], n_slots, dt, guard=guard)
    return _finish(rem, perm, work, eff, nom, gw, dt)


def edf_schedule(release, deadline, work, speed, *, dt=1.0, guard=False) -> Schedule:
    """Run EDF on the grid speed profile ``speed`` (n_slots,); ``feasible`` says whether every job finished.

    With ``guard`` the speed of a slot is raised to finish the jobs due at its end (``guard_work`` records how
    much): a safety net that makes any profile feasible. EDF is optimal for feasibility: if any schedule with
    this speed profile meets every deadline, EDF does.
    """
    release, deadline, work = _prep(release, deadline, work, jnp.shape(speed)[-1], dt)
    speed = jnp.asarray(speed, work.dtype)
    return _edf_schedule(release, deadline, work, speed, dt, speed.shape[-1], guard)


# ---------------------------------------------------------------------------------------------------------
# Classic online algorithms on the grid
# ---------------------------------------------------------------------------------------------------------


def _oa_speed(t, rem, pending, ds, dt):
    """YDS plan of the pending work at time t (all released now): max_k W(d <= d_k) / (d_k - t). Sorted by
    ds."""
    cum = jnp.cumsum(jnp.where(pending, rem, 0.0))
    horizon = ds * dt - t
    return jnp.max(jnp.where(pending & (horizon > 0), cum / jnp.where(horizon > 0, horizon, 1.0), 0.0))


@partial(jax.jit, static_argnames=("n_slots", "algorithm"))
def _online(release, deadline, work, dt, q, is_avr, n_slots, algorithm):
    """algorithm "avr_oa": AVR when ``is_avr`` else q x OA (traced switch: AVR, OA and qOA share one compiled
    program); "bkp": BKP."""
    rs, ds = _slots(release, deadline, dt)
    perm, r, d, w = _sorted(release, deadline, work, ds)
    rs, ds = rs[perm], ds[perm]
    dens = w / (d - r)

    if algorithm == "avr_oa":
        def fn(k, t, rem, pending, st):
            s_avr = jnp.sum(jnp.where((rs <= k) & (k < ds), dens, 0.0))
            return jnp.where(is_avr, s_avr, q * _oa_speed(t, rem, pending, ds, dt)), st
    else:  # bkp
        def fn(k, t, rem, pending, st):
            released = r <= t + 1e-6 * dt
            # candidate t' (where w(t, e t - (e-1) t', t') jumps): deadlines, and t' with e t - (e-1) t' = r_j
            cand = jnp.concatenate([d, (E * t - r) / (E - 1.0)])
            cval = jnp.concatenate([d > t, released & (r < t)])
            t1 = E * t - (E - 1.0) * cand
            inc = (released[None, :] & (r[None, :] >= t1[:, None] - 1e-4 * dt)
                   & (d[None, :] <= cand[:, None] + 1e-4 * dt))
            wsum = inc.astype(w.dtype) @ w
            gap = jnp.where(cval, cand - t, 1.0)
            return jnp.max(jnp.where(cval, wsum / gap, 0.0)), st

    rem, eff, nom, gw, _ = _scan_edf(fn, rs, ds, w, n_slots, dt, guard=True)
    return _finish(rem, perm, work, eff, nom, gw, dt)


def avr(release, deadline, work, *, n_slots: int, dt=1.0) -> Schedule:
    """AVR on the grid: s(t) = sum of densities of the jobs whose window contains t; EDF. Exact on the
    grid."""
    release, deadline, work = _prep(release, deadline, work, n_slots, dt)
    return _online(release, deadline, work, dt, 1.0, True, n_slots, "avr_oa")


def oa(release, deadline, work, *, n_slots: int, dt=1.0) -> Schedule:
    """Optimal Available: at each slot, the speed of the YDS plan of the remaining work (exact on the
    grid)."""
    release, deadline, work = _prep(release, deadline, work, n_slots, dt)
    return _online(release, deadline, work, dt, 1.0, False, n_slots, "avr_oa")


def qoa(release, deadline, work, *, alpha, n_slots: int, dt=1.0) -> Schedule:
    """qOA: q = 2 - 1/alpha times OA's current speed, re-planned every slot (a discretisation of the
    continuous rule: finer dt approaches it)."""
    release, deadline, work = _prep(release, deadline, work, n_slots, dt)
    return _online(release, deadline, work, dt, qoa_q(alpha), False, n_slots, "avr_oa")


def bkp(release, deadline, work, *, n_slots: int, dt=1.0) -> Schedule:
    """BKP evaluated at the start of each slot and held for the slot (O(n^2) per slot); the guard covers the
    discretisation (``guard_work`` reports it; it vanishes as dt -> 0)."""
    release, deadline, work = _prep(release, deadline, work, n_slots, dt)
    return _online(release, deadline, work, dt, 1.0, False, n_slots, "bkp")


def online_schedules(release, deadline, work, *, alpha, n_slots: int, dt=1.0) -> dict[str, Schedule]:
    """AVR, OA, qOA (one compiled program, vmapped over the algorithm switch) and BKP: {name: Schedule}."""
    release, deadline, work = _prep(release, deadline, work, n_slots, dt)
    one = jnp.asarray(1.0, work.dtype)
    q = jnp.stack([one, one, jnp.asarray(qoa_q(alpha), work.dtype)])
    is_avr = jnp.array([True, False, False])
    three = jax.vmap(lambda qq, a: _online(release, deadline, work, dt, qq, a, n_slots, "avr_oa"))(q, is_avr)
    out = {name: jax.tree.map(lambda x, i=i: x[i], three) for i, name in enumerate(("avr", "oa", "qoa"))}
    out["bkp"] = _online(release, deadline, work, dt, 1.0, False, n_slots, "bkp")
    return out


# ---------------------------------------------------------------------------------------------------------
# Robustify and the prediction-based algorithms
# ---------------------------------------------------------------------------------------------------------


@jax.jit
def robustify(alloc, width):
    """Per-job causal moving average: alloc (n_slots, n) work per slot, width (n,) in slots (0 or 1 =
    unchanged).

    out[k, j] = (1 / m_j) sum_{i = k - m_j + 1}^{k} alloc[i, j]: work done at slot i is spread over slots
    i .. i + m_j - 1 (a delay of < m_j slots), and the total work of each job is kept when the grid has room
    (work pushed past the grid is lost, so leave max m_j slots of room after the last allocation).

    Energy (E(x) = sum_k (sum_j x[k, j])^alpha). It is NOT true in general that robustify never increases
    energy: with different widths, one job's work smoothed onto slots busy with another job's work can raise
    it (``tests/theory/test_speed_scaling.py`` has an alpha = 3 example). What is true (``robustify_energy_bound``):
      * equal widths m_j = m (LAS's setting: uniform windows D, so delta D is the same for every job): the total
        speed is itself a moving average of width m, and by Jensen E(out) <= E(alloc) (each alloc slot enters
        m averages with weight 1 / m);
      * in general E(out) <= (max_j m_j / min_j m_j)^alpha E(alloc), because out[k, j] <= (M / m_min) x the
        width-M moving average of alloc[:, j] (M = max m_j), and the equal-width case applies to width M.
    LAS's consistency proof needs only the first (its windows are uniform); its robustness needs the per-job
    cap out[k, j] <= w_j / m_j, which holds for every width.
    """
    n_slots = alloc.shape[0]
    m = jnp.maximum(width, 1)
    c = jnp.concatenate([jnp.zeros((1, alloc.shape[1]), alloc.dtype), jnp.cumsum(alloc, axis=0)])
    k = jnp.arange(n_slots)[:, None]
    lo = jnp.clip(k + 1 - m[None, :], 0, n_slots)
    hi = k + 1
    out = (jnp.take_along_axis(c, hi * jnp.ones_like(lo), 0) - jnp.take_along_axis(c, lo, 0)) / m[None, :]
    return jnp.where(width[None, :] > 1, out, alloc)


def robustify_energy_bound(width, alpha):
    """(max m / min m)^alpha over the widths (0 and 1 count as 1): E(robustify(a, width)) <= this x E(a)
    (``robustify``'s docstring); 1 for equal widths."""
    check_alpha(alpha)
    m = jnp.maximum(jnp.asarray(width), 1)
    return (jnp.max(m) / jnp.min(m)) ** alpha


@partial(jax.jit, static_argnames=("n_slots",))
def _las(release, deadline, work, pred, dt, m, n_slots):
    rs, ds = _slots(release, deadline, dt)
    ds_s = ds - m  # shrunk deadline slots
    # YDS on the predicted jobs with shrunk windows, sampled on the grid, EDF -> per-job predicted allocation
    opt_pred = _yds(release, ds_s * dt, pred)
    s_pred = profile_on_grid(opt_pred.profile, n_slots, dt)
    perm = jnp.argsort(ds_s, stable=True)
    fn = lambda k, t, rem, pending, st: (s_pred[k], st)  # noqa: E731
    _, _, _, _, done = _scan_edf(fn, rs[perm], ds_s[perm], pred[perm], n_slots, dt, guard=True, per_job=True)
    alloc_pred = jnp.zeros_like(done).at[:, perm].set(done)
    scale = jnp.where(pred > 0, jnp.minimum(1.0, work / jnp.where(pred > 0, pred, 1.0)), 0.0)
    excess = jnp.maximum(work - pred, 0.0) * (pred > 0) + work * (pred <= 0)
    k = jnp.arange(n_slots)[:, None]
    in_win = (k >= rs[None, :]) & (k < ds_s[None, :])
    spread = in_win * (excess / ((ds_s - rs) * dt))[None, :] * dt
    alloc = alloc_pred * scale[None, :] + spread
    speed = jnp.sum(robustify(alloc, m), axis=1) / dt
    return _edf_schedule(release, deadline, work, speed, dt, n_slots, True)


def las(release, deadline, work, predicted_work, *, eps, alpha, n_slots: int, dt=1.0) -> Schedule:
    """LAS (LAS-Trust + Robustify, Bamas et al. 2020) with job-workload predictions ``predicted_work`` (n,).

    Shrink/smoothing width m_j = ceil(delta (d_j - r_j) / dt) slots, delta from ``eps_to_delta``. Needs
    n_slots >= max deadline / dt. The predicted instance shares the real releases and deadlines (LAS's
    setting: one job per time step with a predicted workload).
    """
    release, deadline, work = _prep(release, deadline, work, n_slots, dt)
    v.nonnegative("predicted_work", predicted_work)
    m, _ = shrink_slots(release, deadline, eps, alpha, dt)
    v.check("eps", m, lambda a: a < (jnp.asarray(deadline - release) / dt), "small enough to leave a window")
    return _las(release, deadline, work, jnp.asarray(predicted_work, work.dtype), dt, m, n_slots)


def default_cap(alpha):
    """Default cap factor lambda = 2 (SP never runs faster than 2 x the OA reference speed, or AVR's floor)."""
    check_alpha(alpha)
    return 2.0


def sp_robustness_bound(alpha, cap):
    """C(alpha, lambda) = lambda^alpha alpha^alpha: E(SP) <= C OPT for every prediction (module docstring). The
    instance bound lambda^alpha E(OA) (``return_envelope``) is the tighter statement of the same proof."""
    check_alpha(alpha)
    v.check("cap", cap, lambda a: a >= 1, ">= 1")
    return cap**alpha * oa_bound(alpha)


@partial(jax.jit, static_argnames=("n_slots",))
def _sp(release, deadline, work, s_hat, cap, dt, n_slots, offline, robust):
    """``offline`` and ``robust`` are traced bools (every mode shares one compiled program).

    One scan over slots carrying SP's remaining work and the remaining work of a reference OA run. Returns
    (Schedule, envelope (n_slots,)) with envelope[k] = cap x OA_ref[k] >= the SP speed."""
    rs, ds = _slots(release, deadline, dt)
    perm = jnp.argsort(ds, stable=True)
    rs, ds, w = rs[perm], ds[perm], work[perm]
    capacity = jnp.concatenate([jnp.zeros(1, s_hat.dtype), jnp.cumsum(s_hat * dt)])
    tol = 1e-6 * (jnp.max(work) + 1e-30)

    def body(carry, k):
        rem, rem_oa = carry
        t = k * dt
        active = (rs <= k) & (k < ds)
        pending = active & (rem > tol)
        left = (ds - k).astype(w.dtype) * dt  # time to the deadline (>= dt for an active job)
        # the prediction-following speed
        cum = jnp.cumsum(jnp.where(pending, rem, 0.0))
        future = capacity[jnp.clip(ds, 0, n_slots)] - capacity[k]
        deficit = jnp.max(jnp.where(pending, jnp.maximum(cum - future, 0.0) / left, 0.0))
        s_oa_own = _oa_speed(t, rem, pending, ds, dt)
        follow = jnp.where(offline, s_hat[k] + deficit, jnp.maximum(s_hat[k], s_oa_own))
        # the reference OA run and the domination floor: the least speed that keeps every deadline-prefix of
        # SP's remaining work <= the reference's after this slot (EDF removes min(s dt, R_k) from prefix k)
        pend_oa = active & (rem_oa > tol)
        s_ref = _oa_speed(t, rem_oa, pend_oa, ds, dt)
        after_ref = jnp.maximum(jnp.cumsum(jnp.where(pend_oa, rem_oa, 0.0)) - s_ref * dt, 0.0)
        s_dom = jnp.max(jnp.where(pending, cum - after_ref, 0.0)) / dt
        floor = jnp.maximum(s_oa_own, s_dom)
        floor = jnp.where(robust, floor, s_oa_own)  # pure following keeps only its own feasibility reserve
        s = jnp.where(robust, jnp.clip(follow, floor, jnp.maximum(cap * s_ref, floor)), jnp.maximum(follow, floor))
        s = jnp.minimum(s, cum[-1] / dt)  # never command more than the pending work
        rem2, done = _edf_step(rem, pending, s * dt)
        rem_oa2, _ = _edf_step(rem_oa, pend_oa, s_ref * dt)
        env = cap * s_ref
        return (rem2, rem_oa2), (jnp.sum(done) / dt, s, follow, env)

    (rem, _), (eff, used, nom, env) = lax.scan(body, (w, w), jnp.arange(n_slots))
    sched = _finish(rem, perm, work, (eff, used), nom, jnp.zeros((), w.dtype), dt)
    return sched, env


def speed_prediction_schedule(release, deadline, work, predicted_speed, *, alpha, mode: str = "dynamic", cap=None,
                              robust: bool = True, dt=1.0, return_envelope: bool = False):
    """SP: follow the predicted machine speed ``predicted_speed`` (n_slots,), clipped to [floor, cap x OA_ref]
    (module docstring). E(SP) <= cap^alpha E(OA) <= ``sp_robustness_bound(alpha, cap)`` OPT for every
    prediction.

    ``mode="dynamic"``: only predicted_speed[k] is used at slot k (follow = max(s_hat, OA of own work));
    ``mode="offline"``: also the predicted future capacity (follow = s_hat + the missing speed). ``cap``
    (lambda) defaults to ``default_cap(alpha)``; ``robust=False`` removes the upper clip (pure following, not
    robust). With ``return_envelope`` returns (Schedule, envelope (n_slots,)), envelope = cap x OA_ref.
    """
    v.one_of("mode", mode, SP_MODES)
    n_slots = int(jnp.shape(predicted_speed)[-1])
    release, deadline, work = _prep(release, deadline, work, n_slots, dt)
    v.nonnegative("predicted_speed", predicted_speed)
    check_alpha(alpha)
    cap = default_cap(alpha) if cap is None else cap
    v.check("cap", cap, lambda a: a >= 1, ">= 1")
    s_hat = jnp.asarray(predicted_speed, work.dtype)
    sched, env = _sp(release, deadline, work, s_hat, cap, dt, n_slots, mode == "offline", robust)
    return (sched, env) if return_envelope else sched


def speed_prediction_schedules(release, deadline, work, predicted_speed, *, alpha, cap=None, dt=1.0):
    """SP in both modes at once (one compiled program vmapped over the mode): ({mode: Schedule}, envelope)."""
    n_slots = int(jnp.shape(predicted_speed)[-1])
    release, deadline, work = _prep(release, deadline, work, n_slots, dt)
    v.nonnegative("predicted_speed", predicted_speed)
    check_alpha(alpha)
    cap = default_cap(alpha) if cap is None else cap
    s_hat = jnp.asarray(predicted_speed, work.dtype)
    flags = jnp.array([False, True])
    both, env = jax.vmap(lambda off: _sp(release, deadline, work, s_hat, cap, dt, n_slots, off, True))(flags)
    return {mode: jax.tree.map(lambda x, i=i: x[i], both) for i, mode in enumerate(SP_MODES)}, env[0]


# ---------------------------------------------------------------------------------------------------------
# Instances and predictions
# ---------------------------------------------------------------------------------------------------------


def las_instance(key, n_jobs: int = 200, window: int = 20, low: float = 20.0, high: float = 80.0,
                 step: float = 5.0):
    """LAS's uniform-deadline model: job i released at time i with deadline i + window (``D``), workloads a
    random walk in [low, high]: w_0 ~ U[low, high], w_{i+1} = w_i + U[-step, step], reflected at the walls.

    The step distribution is our choice (the paper's generator is not specified in our notes).
    Returns (release, deadline, work), each (n_jobs,).
    """
    v.positive_int("n_jobs", n_jobs)
    v.positive_int("window", window)
    k0, k1 = jax.random.split(key)
    w0 = jax.random.uniform(k0, (), minval=low, maxval=high)
    steps = jax.random.uniform(k1, (n_jobs - 1,), minval=-step, maxval=step)

    def reflect(w, s):
        x = w + s
        x = jnp.where(x > high, 2 * high - x, x)
        x = jnp.where(x < low, 2 * low - x, x)
        return x, x

    _, ws = lax.scan(reflect, w0, steps)
    work = jnp.concatenate([w0[None], ws])
    release = jnp.arange(n_jobs, dtype=work.dtype)
    return release, release + window, work


def random_instance(key, n_jobs: int, horizon: int, min_window: int = 1, max_window: int = 10,
                    max_work: float = 10.0):
    """Jobs with integer releases U{0 .. horizon - max_window}, integer window lengths U{min .. max_window}
    and work U(0.1, max_work). Returns (release, deadline, work), each (n_jobs,)."""
    v.positive_int("n_jobs", n_jobs)
    v.positive_int("min_window", min_window)
    v.check("max_window", max_window, lambda a: (a >= min_window) & (a <= horizon),
            f"in [min_window, {horizon}]")
    k0, k1, k2 = jax.random.split(key, 3)
    r = jax.random.randint(k0, (n_jobs,), 0, horizon - max_window + 1).astype(jnp.result_type(float))
    length = jax.random.randint(k1, (n_jobs,), min_window, max_window + 1).astype(r.dtype)
    w = jax.random.uniform(k2, (n_jobs,), minval=0.1, maxval=max_work)
    return r, r + length, w


def avr_lower_bound_instance(n_jobs: int, alpha: float, kappa: float, t_min: float | None = None):
    """The family on which AVR's ratio tends to alpha^alpha: common release 0, deadlines d_i geometric in
    [t_min, 1], work w_i = int_{d_{i+1}}^{d_i} t^-gamma dt with gamma = (1 - kappa) / alpha.

    Continuum limit (OPT(t) = t^-gamma, AVR(t) = (t^-gamma - 1) / gamma):
    ratio(kappa) = (1 - gamma alpha) gamma^-alpha int_0^1 (t^-gamma - 1)^alpha dt  ->  alpha^alpha as kappa ->
    0 (``avr_lower_bound_ratio``). t_min defaults to exp(-6 / kappa): the truncated mass is ~ e^-6 of the
    total (use float64 for kappa < 0.15). The discrete ratio approaches the continuum one as the log-spacing
    6 / (kappa n_jobs) -> 0.
    """
    v.positive_int("n_jobs", n_jobs)
    check_alpha(alpha)
    v.in_interval("kappa", kappa, 0.0, 1.0)
    v.positive("kappa", kappa)
    gamma = (1.0 - kappa) / alpha
    log_tmin = math.log(t_min) if t_min is not None else -6.0 / kappa
    dtype = jnp.result_type(float)
    d = jnp.exp(jnp.linspace(0.0, log_tmin, n_jobs + 1, dtype=dtype))  # d_0 = 1 > d_1 > ... > d_n
    prim = d ** (1.0 - gamma) / (1.0 - gamma)
    work = prim[:-1] - prim[1:]
    deadline = d[:-1]
    return jnp.zeros_like(deadline), deadline, work


def avr_lower_bound_ratio(alpha, kappa, n_quad: int = 20001):
    """Continuum AVR / OPT on the lower-bound family (see ``avr_lower_bound_instance``), by quadrature in
    u = -log t (float64 NumPy; a reference value, not jitted)."""
    import numpy as np

    gamma = (1.0 - kappa) / alpha
    u = np.linspace(0.0, 80.0 / kappa, n_quad)
    f = np.exp((gamma * alpha - 1.0) * u) * (-np.expm1(-gamma * u)) ** alpha  # (e^{gamma u} - 1)^alpha e^{-u}
    integral = np.trapezoid(f, u)
    return (1.0 - gamma * alpha) * gamma ** (-alpha) * integral


def predict_work(key, work, kind: str = "accurate", noise=0.0, low: float = 20.0, high: float = 80.0):
    """Job-workload predictions w_hat (n,) for LAS.

    accurate    w (1 + noise N(0, 1)), clipped at 0 (noise = 0: perfect)
    random      U[low, high], independent of w                      (LAS's "random predictor")
    misleading  low + high - w: the mirror image inside [low, high]  (LAS's "misleading predictor")
    """
    v.one_of("kind", kind, WORK_PREDICTIONS)
    v.nonnegative("noise", noise)
    work = jnp.asarray(work)
    if kind == "accurate":
        return jnp.maximum(work * (1.0 + noise * jax.random.normal(key, work.shape, work.dtype)), 0.0)
    if kind == "random":
        return jax.random.uniform(key, work.shape, work.dtype, minval=low, maxval=high)
    return low + high - work


def predict_speed(key, opt_speed, kind: str = "noisy", noise=0.0, *, shift: int = 0, scale=1.0,
                  period: int = 10):
    """Machine-speed predictions s_hat (n_slots,) built from the optimal grid speed ``opt_speed`` (n_slots,).

    accurate  s*                         noisy     s* exp(noise z - noise^2 / 2), z ~ N(0, 1) per slot
    zero      0                          scaled    scale s*
    shifted   s* rolled by ``shift`` slots (early/late by |shift| dt)
    reversed  s*(T - t)                  uniform   the mean of s* everywhere (right total work, wrong timing)
    spikes    all of s*'s work of each block of ``period`` slots packed into its first slot
    """
    v.one_of("kind", kind, SPEED_PREDICTIONS)
    v.nonnegative("noise", noise)
    s = jnp.asarray(opt_speed)
    if kind == "accurate":
        return s
    if kind == "noisy":
        z = jax.random.normal(key, s.shape, s.dtype)
        return s * jnp.exp(noise * z - 0.5 * noise**2)
    if kind == "zero":
        return jnp.zeros_like(s)
    if kind == "scaled":
        return scale * s
    if kind == "shifted":
        return jnp.roll(s, shift)
    if kind == "reversed":
        return s[::-1]
    if kind == "uniform":
        return jnp.full_like(s, jnp.mean(s))
    n = s.shape[0]
    pad = (-n) % period
    blocks = jnp.concatenate([s, jnp.zeros(pad, s.dtype)]).reshape(-1, period)
    out = jnp.zeros_like(blocks).at[:, 0].set(blocks.sum(1))
    return out.reshape(-1)[:n]


def prediction_error(pred, truth, alpha):
    """Relative L_alpha error ||pred - truth||_alpha / ||truth||_alpha (speeds on one grid or workloads)."""
    check_alpha(alpha)
    num = jnp.sum(jnp.abs(pred - truth) ** alpha) ** (1.0 / alpha)
    return num / jnp.sum(jnp.abs(truth) ** alpha) ** (1.0 / alpha)
