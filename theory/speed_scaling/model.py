"""Data types, validation and energy of speed profiles (the model of Yao, Demers and Shenker 1995).

Jobs j = 1..n: release r_j, deadline d_j > r_j, work w_j >= 0 (three arrays of shape (n,)); power s^alpha
(alpha > 1); E(s) = int s(t)^alpha dt. A ``Profile`` is piecewise constant: exact (between sorted release and
deadline times) or on a uniform grid of slots of width dt.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from jaxwb.theory import validate as v

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


def check_instance(
    release: Float[ArrayLike, " n"], deadline: Float[ArrayLike, " n"], work: Float[ArrayLike, " n"]
) -> None:
    """Raise ValueError for a bad concrete instance: shapes (n,), deadline > release, work >= 0, finite."""
    for name, arr in (("release", release), ("deadline", deadline), ("work", work)):
        if np.ndim(arr) != 1:
            raise ValueError(f"{name} must be a 1-D array of shape (n,), got shape {np.shape(arr)}")
        v.array(name, arr, ndim=1)  # real (complex rejected), non-empty, finite (a real check: not a == a)
    if not (np.shape(release) == np.shape(deadline) == np.shape(work)):
        raise ValueError(
            f"release, deadline and work must share one shape (n,), got {np.shape(release)}, "
            f"{np.shape(deadline)}, {np.shape(work)}"
        )
    if not (v.is_concrete(release) and v.is_concrete(deadline)):  # traced: checked under theory.checked
        gap = jnp.asarray(deadline) - jnp.asarray(release)
        v.check("deadline", gap, lambda a: a > 0, "> release for every job (value shown: deadline - release)")
    else:
        r, d = np.asarray(v.primal(release)), np.asarray(v.primal(deadline))
        bad = ~(d > r)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(
                f"deadline must be > release for every job, got deadline {d[i]} <= release {r[i]} for job {i}"
            )
    v.nonnegative("work", work)


def check_alpha(alpha: float) -> None:
    """alpha > 1 and finite (the power s^alpha is convex)."""
    v.check("alpha", alpha, lambda a: a > 1, "> 1")
    v.finite("alpha", alpha)


def energy(profile: Profile, alpha: float) -> Float[Array, ""]:
    """E = sum_i (edges[i+1] - edges[i]) speed[i]^alpha = int s(t)^alpha dt. ``alpha`` > 1. Returns a
    scalar."""
    check_alpha(alpha)
    return jnp.sum(jnp.diff(profile.edges) * jnp.asarray(profile.speed) ** alpha)


def total_work(profile: Profile) -> Float[Array, ""]:
    """int s(t) dt over the profile (scalar)."""
    return jnp.sum(jnp.diff(profile.edges) * profile.speed)


def grid_profile(speed: Float[ArrayLike, " n_slots"], dt: float) -> Profile:
    """A grid profile: ``speed`` (n_slots,) on slots [k dt, (k + 1) dt)."""
    v.array("speed", speed, ndim=1)
    v.nonnegative("speed", speed)
    v.positive("dt", dt)
    speed = jnp.asarray(speed)
    return Profile(jnp.arange(speed.shape[-1] + 1, dtype=speed.dtype) * dt, speed)


def profile_on_grid(profile: Profile, n_slots: int, dt: float) -> Float[Array, " n_slots"]:
    """Average speed of an exact profile on each grid slot, shape (n_slots,) (exact integration)."""
    v.positive_int("n_slots", n_slots)
    v.positive("dt", dt)
    piece = jnp.diff(profile.edges) * profile.speed
    cum = jnp.concatenate([jnp.zeros(1, piece.dtype), jnp.cumsum(piece)])
    x = jnp.arange(n_slots + 1, dtype=profile.speed.dtype) * dt
    c = jnp.interp(x, profile.edges, cum, left=0.0, right=cum[-1])
    return jnp.diff(c) / dt
