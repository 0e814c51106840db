"""Speed-scaling sim: the mutants, plausible bugs the claims must catch on the quick preset (``workbench audit``)."""

from __future__ import annotations

from jaxwb.sims.core.audit import Mutant


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
        "jaxwb.theory.speed_scaling.sp:_sp",
        _no_fallback,
        "SP follows the prediction without the kappa x AVR clip and per-job reserve (robust fallback removed)",
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
]
