"""LAS (Bamas, Maggiori, Rohwedder, Svensson 2020): job-workload predictions, window shrink and robustify."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int

from jaxwb.theory import validate as v
from jaxwb.theory.speed_scaling.grid import edf_schedule_jit, job_slots, prepare_jobs, scan_edf
from jaxwb.theory.speed_scaling.model import Schedule, check_alpha, profile_on_grid
from jaxwb.theory.speed_scaling.offline import yds_jit
from jaxwb.theory.speed_scaling.online import avr_bound


def eps_to_delta(eps: float, alpha: float) -> Float[Array, ""]:
    """delta with ((1 + delta) / (1 - delta))^alpha = 1 + eps (LAS's shrink factor)."""
    v.positive("eps", eps)
    check_alpha(alpha)
    c = (1.0 + eps) ** (1.0 / alpha)
    return (c - 1.0) / (c + 1.0)


def shrink_slots(
    release: Float[ArrayLike, " n"], deadline: Float[ArrayLike, " n"], eps: float, alpha: float, dt: float
) -> tuple[Int[Array, " n"], Float[Array, " n"]]:
    """Per-job shrink / smoothing width in slots: m_j = ceil(delta (d_j - r_j) / dt) (>= 1 when eps > 0).

    Returns (m (n,) int32, delta_eff (n,)) with delta_eff = m dt / (d_j - r_j) >= delta (rounding up keeps the
    robustness guarantee; it costs a little consistency).
    """
    delta = eps_to_delta(eps, alpha)
    v.positive("dt", dt)
    length = jnp.asarray(deadline) - jnp.asarray(release)
    m = jnp.ceil(delta * length / dt - 1e-6).astype(jnp.int32)
    return m, m * dt / length


def las_robustness_bound(alpha: float, delta_eff: Float[ArrayLike, "*b"]) -> Float[Array, "*b"]:
    """E(LAS) <= delta_eff^-alpha 2^(alpha-1) alpha^alpha OPT, for any prediction (see module docstring)."""
    v.check("delta_eff", delta_eff, lambda a: (a > 0) & (a <= 1), "in (0, 1]")
    return avr_bound(alpha) / jnp.asarray(delta_eff) ** alpha


@jax.jit
def robustify(alloc: Float[Array, "n_slots n"], width: Int[Array, " n"]) -> Float[Array, "n_slots n"]:
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


def robustify_energy_bound(width: Int[ArrayLike, " n"], alpha: float) -> Float[Array, ""]:
    """(max m / min m)^alpha over the widths (0 and 1 count as 1): E(robustify(a, width)) <= this x E(a)
    (``robustify``'s docstring); 1 for equal widths."""
    check_alpha(alpha)
    v.array("width", width, ndim=1)
    v.nonnegative("width", width)
    m = jnp.maximum(jnp.asarray(width), 1)
    return (jnp.max(m) / jnp.min(m)) ** alpha


@partial(jax.jit, static_argnames=("n_slots",))
def _las(release, deadline, work, pred, dt, m, n_slots):
    rs, ds = job_slots(release, deadline, dt)
    ds_s = ds - m  # shrunk deadline slots
    # YDS on the predicted jobs with shrunk windows, sampled on the grid, EDF -> per-job predicted allocation
    opt_pred = yds_jit(release, ds_s * dt, pred)
    s_pred = profile_on_grid(opt_pred.profile, n_slots, dt)
    perm = jnp.argsort(ds_s, stable=True)
    fn = lambda k, t, rem, pending, st: (s_pred[k], st)
    _, _, _, _, done = scan_edf(fn, rs[perm], ds_s[perm], pred[perm], n_slots, dt, guard=True, per_job=True)
    alloc_pred = jnp.zeros_like(done).at[:, perm].set(done)
    scale = jnp.where(pred > 0, jnp.minimum(1.0, work / jnp.where(pred > 0, pred, 1.0)), 0.0)
    excess = jnp.maximum(work - pred, 0.0) * (pred > 0) + work * (pred <= 0)
    k = jnp.arange(n_slots)[:, None]
    in_win = (k >= rs[None, :]) & (k < ds_s[None, :])
    spread = in_win * (excess / ((ds_s - rs) * dt))[None, :] * dt
    alloc = alloc_pred * scale[None, :] + spread
    speed = jnp.sum(robustify(alloc, m), axis=1) / dt
    return edf_schedule_jit(release, deadline, work, speed, dt, n_slots, True)


def las(
    release: Float[ArrayLike, " n"],
    deadline: Float[ArrayLike, " n"],
    work: Float[ArrayLike, " n"],
    predicted_work: Float[ArrayLike, " n"],
    *,
    eps: float,
    alpha: float,
    n_slots: int | None = None,
    dt: float = 1.0,
) -> Schedule:
    """LAS (LAS-Trust + Robustify, Bamas et al. 2020) with job-workload predictions ``predicted_work`` (n,).

    Shrink/smoothing width m_j = ceil(delta (d_j - r_j) / dt) slots, delta from ``eps_to_delta``. ``n_slots``
    defaults to the smallest grid covering every deadline and must cover them (``grid.resolve_n_slots``: the
    convention of every grid function). The predicted instance shares the real releases and deadlines (LAS's
    setting: one job per time step with a predicted workload).
    """
    release, deadline, work, n_slots = prepare_jobs(release, deadline, work, n_slots, dt)
    v.array("predicted_work", predicted_work, ndim=1)
    v.same_shape("work", work, "predicted_work", predicted_work)
    v.nonnegative("predicted_work", predicted_work)
    m, _ = shrink_slots(release, deadline, eps, alpha, dt)
    v.check("eps", m, lambda a: a < (jnp.asarray(deadline - release) / dt), "small enough to leave a window")
    return _las(release, deadline, work, jnp.asarray(predicted_work, work.dtype), dt, m, n_slots)
