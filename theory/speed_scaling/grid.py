"""The time grid and EDF: slots rs_j = ceil(r_j / dt) <= k < ds_j = floor(d_j / dt), one EDF step per slot,
the scan shared by every online algorithm, and EDF on a given speed profile."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, ArrayLike, Float

from jaxwb.theory import validate as v
from jaxwb.theory.speed_scaling.model import Schedule, check_instance, grid_profile


def job_slots(release, deadline, dt):
    """Release and deadline slot indices of every job on the grid of step ``dt``."""
    rs = jnp.ceil(release / dt - 1e-4).astype(jnp.int32)
    ds = jnp.floor(deadline / dt + 1e-4).astype(jnp.int32)
    return rs, ds


def edf_step(rem, pending, cap):
    """EDF inside one slot: ``cap`` work units go to pending jobs in deadline order (arrays sorted by
    deadline)."""
    a = jnp.where(pending, rem, 0.0)
    before = jnp.cumsum(a) - a
    done = jnp.clip(cap - before, 0.0, a)
    return rem - done, done


def scan_edf(speed_fn, rs, ds, work, n_slots, dt, *, guard, state0=(), per_job=False, return_state=False):
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
        rem2, done = edf_step(rem, pending, s_used * dt)
        out = (jnp.sum(done) / dt, s_used, s, jnp.maximum(s_used - s, 0.0) * dt)
        return (rem2, st), (out + (done,) if per_job else out)

    (rem, st), outs = lax.scan(body, (work, state0), jnp.arange(n_slots))
    eff, used, nominal, gw = outs[:4]
    if return_state:
        return rem, (eff, used), nominal, jnp.sum(gw), st
    return rem, (eff, used), nominal, jnp.sum(gw), (outs[4] if per_job else None)


def sort_by_deadline(release, deadline, work, key_ds):
    """The jobs sorted by deadline slot (stable) and the permutation."""
    perm = jnp.argsort(key_ds, stable=True)
    return perm, release[perm], deadline[perm], work[perm]


def finish_schedule(rem_sorted, perm, work, speeds, nominal, gw, dt):
    """``speeds`` = (work rate, commanded speed) per slot; the profile (and so the energy) is the commanded
    one."""
    eff, used = speeds
    unfinished = jnp.zeros_like(rem_sorted).at[perm].set(rem_sorted)
    feasible = jnp.all(unfinished <= 1e-4 * (jnp.max(work) + 1e-30))
    return Schedule(grid_profile(used, dt), eff, nominal, unfinished, feasible, gw)


def resolve_n_slots(deadline, n_slots: int | None, dt, *, grid=None, grid_name: str = "speed") -> int:
    """The package's one grid convention: the number of slots ``n_slots`` (a static int) of every grid function.

    * ``n_slots=None`` (the default everywhere): inferred, from the length of the grid array the function takes
      (``grid``: SP's ``predicted_speed``, EDF's ``speed``) if any, else the smallest grid covering every
      deadline, max_j floor(d_j / dt) (the slot rounding of ``job_slots``). Inference needs concrete deadlines:
      under ``jit``/``vmap`` pass ``n_slots`` (it sets a static shape).
    * ``n_slots`` given with a grid array: it must equal the array's length.
    * Concrete deadlines must fit on the grid: max_j floor(d_j / dt) <= n_slots (a job due after the grid ends
      could never finish). A larger grid is allowed (LAS's smoothing delays work by < m_j slots).
    """
    if grid is not None:
        g = int(np.shape(grid)[-1])
        if n_slots is None:
            n_slots = g
        elif n_slots != g:
            raise ValueError(f"n_slots must equal the length of {grid_name} ({g}), got {n_slots!r}")
    concrete = v.is_concrete(deadline) and v.is_concrete(dt)
    last = None
    if concrete:
        last = int(np.max(np.floor(np.asarray(v.primal(deadline), float) / float(v.primal(dt)) + 1e-4)))
    if n_slots is None:
        if last is None:
            raise ValueError(
                "n_slots must be given when deadline or dt is traced (under jit/vmap): it sets a static shape"
            )
        n_slots = max(last, 1)
    v.positive_int("n_slots", n_slots)
    if last is not None and last > n_slots:
        raise ValueError(f"n_slots must cover every deadline (n_slots >= max(deadline) / dt = {last}), got {n_slots}")
    return n_slots


def prepare_jobs(
    release: ArrayLike,
    deadline: ArrayLike,
    work: ArrayLike,
    n_slots: int | None,
    dt: float,
    *,
    grid=None,
    grid_name: str = "speed",
) -> tuple[Array, Array, Array, int]:
    """Validate an instance and the grid; returns (release, deadline, work) as one float dtype and n_slots."""
    check_instance(release, deadline, work)
    v.positive("dt", dt)
    n_slots = resolve_n_slots(deadline, n_slots, dt, grid=grid, grid_name=grid_name)
    dtype = jnp.result_type(jnp.asarray(release), jnp.asarray(work), float)
    return jnp.asarray(release, dtype), jnp.asarray(deadline, dtype), jnp.asarray(work, dtype), n_slots


@partial(jax.jit, static_argnames=("n_slots", "guard"))
def edf_schedule_jit(release, deadline, work, speed, dt, n_slots, guard):
    """The jitted EDF run behind ``edf_schedule`` (no input checks)."""
    rs, ds = job_slots(release, deadline, dt)
    perm = jnp.argsort(ds, stable=True)
    fn = lambda k, t, rem, pending, st: (speed[k], st)
    rem, eff, nom, gw, _ = scan_edf(fn, rs[perm], ds[perm], work[perm], n_slots, dt, guard=guard)
    return finish_schedule(rem, perm, work, eff, nom, gw, dt)


def edf_schedule(
    release: Float[ArrayLike, " n"],
    deadline: Float[ArrayLike, " n"],
    work: Float[ArrayLike, " n"],
    speed: Float[ArrayLike, " n_slots"],
    *,
    n_slots: int | None = None,
    dt: float = 1.0,
    guard: bool = False,
) -> Schedule:
    """Run EDF on the grid speed profile ``speed`` (n_slots,); ``feasible`` says whether every job finished.

    With ``guard`` the speed of a slot is raised to finish the jobs due at its end (``guard_work`` records how
    much): a safety net that makes any profile feasible. EDF is optimal for feasibility: if any schedule with
    this speed profile meets every deadline, EDF does. ``n_slots`` defaults to ``len(speed)`` (must equal it;
    ``resolve_n_slots``).
    """
    v.array("speed", speed, ndim=1)
    v.nonnegative("speed", speed)
    release, deadline, work, n_slots = prepare_jobs(release, deadline, work, n_slots, dt, grid=speed)
    speed = jnp.asarray(speed, work.dtype)
    return edf_schedule_jit(release, deadline, work, speed, dt, n_slots, guard)
