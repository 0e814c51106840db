"""Classic online algorithms on the grid: AVR, OA, qOA (Yao-Demers-Shenker; Bansal-Kimbrel-Pruhs) and BKP, with
their published competitive ratios. Energy integrates the commanded speed (``Schedule.profile``)."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from jaxwb.theory.speed_scaling.grid import finish_schedule, job_slots, prepare_jobs, scan_edf, sort_by_deadline
from jaxwb.theory.speed_scaling.model import E, Schedule, check_alpha


def avr_bound(alpha: float) -> float:
    """AVR's competitive ratio upper bound 2^(alpha - 1) alpha^alpha (YDS 1995)."""
    check_alpha(alpha)
    return 2.0 ** (alpha - 1) * alpha**alpha


def oa_bound(alpha: float) -> float:
    """OA's competitive ratio alpha^alpha (Bansal, Kimbrel, Pruhs)."""
    check_alpha(alpha)
    return alpha**alpha


def qoa_q(alpha: float) -> float:
    """qOA's speed-up factor q = 2 - 1/alpha."""
    check_alpha(alpha)
    return 2.0 - 1.0 / alpha


def bkp_bound(alpha: float) -> float:
    """BKP's competitive ratio upper bound 2 (alpha / (alpha - 1))^alpha e^alpha."""
    check_alpha(alpha)
    return 2.0 * (alpha / (alpha - 1.0)) ** alpha * E**alpha


def oa_speed(t, rem, pending, ds, dt):
    """YDS plan of the pending work at time t (all released now): max_k W(d <= d_k) / (d_k - t). Sorted by
    ds."""
    cum = jnp.cumsum(jnp.where(pending, rem, 0.0))
    horizon = ds * dt - t
    return jnp.max(jnp.where(pending & (horizon > 0), cum / jnp.where(horizon > 0, horizon, 1.0), 0.0))


def bkp_idle(speed: Float[Array, ""], pending: Bool[Array, " n"]) -> Float[Array, ""]:
    """BKP's commanded ``speed`` in a slot, 0 when no job is ``pending`` (n,) (Bansal-Kimbrel-Pruhs: the machine
    idles; without it the speed formula stays positive past the last deadline)."""
    return jnp.where(jnp.any(pending), speed, 0.0)


@partial(jax.jit, static_argnames=("n_slots", "algorithm"))
def _online(release, deadline, work, dt, q, is_avr, n_slots, algorithm):
    """algorithm "avr_oa": AVR when ``is_avr`` else q x OA (traced switch: AVR, OA and qOA share one compiled
    program); "bkp": BKP."""
    rs, ds = job_slots(release, deadline, dt)
    perm, r, d, w = sort_by_deadline(release, deadline, work, ds)
    rs, ds = rs[perm], ds[perm]
    dens = w / (d - r)

    if algorithm == "avr_oa":

        def fn(k, t, rem, pending, st):
            s_avr = jnp.sum(jnp.where((rs <= k) & (k < ds), dens, 0.0))
            return jnp.where(is_avr, s_avr, q * oa_speed(t, rem, pending, ds, dt)), st
    else:  # bkp

        def fn(k, t, rem, pending, st):
            released = r <= t + 1e-6 * dt
            # candidate t' (where w(t, e t - (e-1) t', t') jumps): deadlines, and t' with e t - (e-1) t' = r_j
            cand = jnp.concatenate([d, (E * t - r) / (E - 1.0)])
            cval = jnp.concatenate([d > t, released & (r < t)])
            t1 = E * t - (E - 1.0) * cand
            inc = (
                released[None, :] & (r[None, :] >= t1[:, None] - 1e-4 * dt) & (d[None, :] <= cand[:, None] + 1e-4 * dt)
            )
            wsum = inc.astype(w.dtype) @ w
            gap = jnp.where(cval, cand - t, 1.0)
            # the machine idles (speed 0) while nothing is pending: the published setting, and what makes the
            # energy independent of how far the grid runs past the last deadline
            return bkp_idle(jnp.max(jnp.where(cval, wsum / gap, 0.0)), pending), st

    rem, eff, nom, gw, _ = scan_edf(fn, rs, ds, w, n_slots, dt, guard=True)
    return finish_schedule(rem, perm, work, eff, nom, gw, dt)


def avr(
    release: Float[ArrayLike, " n"],
    deadline: Float[ArrayLike, " n"],
    work: Float[ArrayLike, " n"],
    *,
    n_slots: int | None = None,
    dt: float = 1.0,
) -> Schedule:
    """AVR on the grid: s(t) = sum of densities of the jobs whose window contains t; EDF. Exact on the
    grid."""
    release, deadline, work, n_slots = prepare_jobs(release, deadline, work, n_slots, dt)
    return _online(release, deadline, work, dt, 1.0, True, n_slots, "avr_oa")


def oa(
    release: Float[ArrayLike, " n"],
    deadline: Float[ArrayLike, " n"],
    work: Float[ArrayLike, " n"],
    *,
    n_slots: int | None = None,
    dt: float = 1.0,
) -> Schedule:
    """Optimal Available: at each slot, the speed of the YDS plan of the remaining work (exact on the
    grid)."""
    release, deadline, work, n_slots = prepare_jobs(release, deadline, work, n_slots, dt)
    return _online(release, deadline, work, dt, 1.0, False, n_slots, "avr_oa")


def qoa(
    release: Float[ArrayLike, " n"],
    deadline: Float[ArrayLike, " n"],
    work: Float[ArrayLike, " n"],
    *,
    alpha: float,
    n_slots: int | None = None,
    dt: float = 1.0,
) -> Schedule:
    """qOA: q = 2 - 1/alpha times OA's current speed, re-planned every slot (a discretisation of the
    continuous rule: finer dt approaches it)."""
    release, deadline, work, n_slots = prepare_jobs(release, deadline, work, n_slots, dt)
    return _online(release, deadline, work, dt, qoa_q(alpha), False, n_slots, "avr_oa")


def bkp(
    release: Float[ArrayLike, " n"],
    deadline: Float[ArrayLike, " n"],
    work: Float[ArrayLike, " n"],
    *,
    n_slots: int | None = None,
    dt: float = 1.0,
) -> Schedule:
    """BKP evaluated at the start of each slot and held for the slot (O(n^2) per slot); the guard covers the
    discretisation (``guard_work`` reports it; it vanishes as dt -> 0). Speed 0 in every slot where no released
    job has work left (Bansal-Kimbrel-Pruhs: the machine idles), so the energy does not depend on the grid's
    length past the last deadline."""
    release, deadline, work, n_slots = prepare_jobs(release, deadline, work, n_slots, dt)
    return _online(release, deadline, work, dt, 1.0, False, n_slots, "bkp")


def online_schedules(
    release: Float[ArrayLike, " n"],
    deadline: Float[ArrayLike, " n"],
    work: Float[ArrayLike, " n"],
    *,
    alpha: float,
    n_slots: int | None = None,
    dt: float = 1.0,
) -> dict[str, Schedule]:
    """AVR, OA, qOA (one compiled program, vmapped over the algorithm switch) and BKP: {name: Schedule}."""
    release, deadline, work, n_slots = prepare_jobs(release, deadline, work, n_slots, dt)
    one = jnp.asarray(1.0, work.dtype)
    q = jnp.stack([one, one, jnp.asarray(qoa_q(alpha), work.dtype)])
    is_avr = jnp.array([True, False, False])
    three = jax.vmap(lambda qq, a: _online(release, deadline, work, dt, qq, a, n_slots, "avr_oa"))(q, is_avr)
    out = {name: jax.tree.map(lambda x, i=i: x[i], three) for i, name in enumerate(("avr", "oa", "qoa"))}
    out["bkp"] = _online(release, deadline, work, dt, 1.0, False, n_slots, "bkp")
    return out
