"""Speed-scaling sim: the mutants, plausible bugs the claims must catch on the quick preset (``workbench audit``)."""

from __future__ import annotations

from jaxwb.sims.core.audit import Mutant


def _no_fallback(f):
    """SP without its robust clip: pure prediction-following (the ``robust`` flag forced off)."""
    return lambda *args: f(*args[:-1], False)


def _follow_clipped(f):
    """SP's ``robust`` flag ignored: pure prediction-following (robust=False) is clipped to kappa AVR too."""
    return lambda *args: f(*args[:-1], True)


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


def _bkp_never_idles(f):
    """BKP keeps its formula's speed when nothing is pending (its energy then depends on the grid length)."""
    return lambda speed, pending: speed


def _avr_all_released(f):
    """SP's cap kappa AVR(t) summed over every released job, not only those whose window contains t: the cap
    grows with the number of jobs released so far."""
    import jax.numpy as jnp

    return lambda rs, ds, dens, k: jnp.sum(jnp.where(rs <= k, dens, 0.0))


MUTANTS = [
    Mutant(
        "sp_no_robust_fallback",
        "jaxwb.theory.speed_scaling.sp:_sp",
        _no_fallback,
        "SP follows the prediction without the kappa x AVR clip and per-job reserve (robust fallback removed)",
    ),
    Mutant(
        "sp_follow_clipped",
        "jaxwb.theory.speed_scaling.sp:_sp",
        _follow_clipped,
        "SP's robust=False (pure prediction-following) still clips to [reserve, kappa AVR]",
    ),
    Mutant(
        "las_shrink_doubled",
        "jaxwb.theory.speed_scaling.las:shrink_slots",
        _double_shrink,
        "LAS shrinks every window by 2 delta |I_j| instead of delta |I_j|",
    ),
    Mutant(
        "bkp_work_only",
        "jaxwb.theory.speed_scaling.online:online_schedules",
        _bkp_work_only,
        "online baselines' energy integrated over the work done, not the commanded speed",
    ),
    Mutant(
        "bkp_never_idles",
        "jaxwb.theory.speed_scaling.online:bkp_idle",
        _bkp_never_idles,
        "BKP's speed stays at its formula's value once nothing is pending (energy grows with the grid's length)",
    ),
    Mutant(
        "sp_cap_over_released_jobs",
        "jaxwb.theory.speed_scaling.sp:avr_speed",
        _avr_all_released,
        "SP's cap kappa AVR(t) sums the densities of every released job (the cap, and the worst case, grow with n)",
    ),
]
