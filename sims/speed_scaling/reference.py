"""Pure-Python reference implementations for speed scaling (and one SciPy quadrature): the independent oracles of
the reference, BKP and noisy-workload claims, of the theory tests (``tests/theory/test_speed_scaling.py``) and the
benchmark baseline (``bench``).

Deliberately naive and independent of ``theory/speed_scaling/``:
  yds_python             the textbook O(n^3)-per-round YDS: every interval [r_i, d_k], the work of the jobs
                         inside it by a loop over jobs, extraction, explicit collapse of every remaining job's
                         times (floats, no arrays)
  avr_python, oa_python  slot-by-slot loops on the grid with EDF by a Python sort
  qoa_python             qOA's commanded speed (q x OA's plan), slot by slot
  bkp_python             BKP's commanded speed, slot by slot
  noisy_error_moment     E|max(sigma z, -1)|^alpha of the noisy workload prediction, by SciPy quadrature
"""

from __future__ import annotations

import math


def yds_python(release, deadline, work):
    """Returns (energy_fn, rounds): rounds = [(density, length, [job indices])] in extraction order;
    energy_fn(alpha) = sum density^alpha * length."""
    triples = zip(release, deadline, work, strict=True)
    jobs = {j: [float(r), float(d), float(w)] for j, (r, d, w) in enumerate(triples) if w > 0}
    rounds = []
    while jobs:
        best: tuple[float, float, float, list[int]] | None = None
        starts = sorted({v[0] for v in jobs.values()})
        ends = sorted({v[1] for v in jobs.values()})
        for a in starts:
            for b in ends:
                if b <= a:
                    continue
                inside = [j for j, (r, d, _) in jobs.items() if r >= a and d <= b]
                wsum = sum(jobs[j][2] for j in inside)
                g = wsum / (b - a)
                if best is None or g > best[0] + 1e-12 * max(1.0, abs(g)):
                    best = (g, a, b, inside)
        assert best is not None  # some interval [a, b] holds a whole pending job (r < d)
        g, a, b, inside = best
        rounds.append((g, b - a, inside))
        for j in inside:
            del jobs[j]
        for vals in jobs.values():
            for i in (0, 1):
                t = vals[i]
                vals[i] = t if t <= a else (a if t <= b else t - (b - a))
    return (lambda alpha: sum(g**alpha * length for g, length, _ in rounds)), rounds


def _edf_slot(rem, avail_order, cap):
    done_total = 0.0
    for j in avail_order:
        x = min(rem[j], cap - done_total)
        if x <= 0:
            break
        rem[j] -= x
        done_total += x
    return done_total


def _grid(release, deadline, dt):
    rs = [math.ceil(r / dt - 1e-4) for r in release]
    ds = [math.floor(d / dt + 1e-4) for d in deadline]
    return rs, ds


def _pending(k, rs, ds, rem, tol):
    """The jobs released by slot ``k``, due after it and with more than ``tol`` work left, earliest deadline first."""
    return sorted((j for j in range(len(rem)) if rs[j] <= k < ds[j] and rem[j] > tol), key=lambda j: ds[j])


def avr_python(release, deadline, work, n_slots, dt=1.0):
    """AVR speeds per slot with EDF; returns the list of effective speeds."""
    rs, ds = _grid(release, deadline, dt)
    n = len(work)
    rem = [float(w) for w in work]
    dens = [work[j] / (deadline[j] - release[j]) for j in range(n)]
    out = []
    for k in range(n_slots):
        s = sum(dens[j] for j in range(n) if rs[j] <= k < ds[j])
        order = _pending(k, rs, ds, rem, 0.0)
        out.append(_edf_slot(rem, order, s * dt) / dt)
    return out


def oa_python(release, deadline, work, n_slots, dt=1.0):
    """OA speeds per slot (max over deadlines of remaining work due by it / time left) with EDF."""
    rs, ds = _grid(release, deadline, dt)
    rem = [float(w) for w in work]
    out = []
    for k in range(n_slots):
        t = k * dt
        order = _pending(k, rs, ds, rem, 1e-12)
        s, cum = 0.0, 0.0
        for j in order:
            cum += rem[j]
            s = max(s, cum / (ds[j] * dt - t))
        out.append(_edf_slot(rem, order, s * dt) / dt)
    return out


def qoa_python(release, deadline, work, n_slots, dt=1.0, q=1.0):
    """qOA's COMMANDED speed per slot: q times OA's plan (max over deadlines of the remaining work due by it / time
    left), raised to finish the jobs due at the end of the slot; EDF. q = 1 is OA."""
    rs, ds = _grid(release, deadline, dt)
    rem = [float(w) for w in work]
    tol = 1e-6 * max(work)  # work below this counts as done (the grid functions' tolerance)
    out = []
    for k in range(n_slots):
        t = k * dt
        order = _pending(k, rs, ds, rem, tol)
        s, cum = 0.0, 0.0
        for j in order:
            cum += rem[j]
            s = max(s, cum / (ds[j] * dt - t))
        need = sum(rem[j] for j in order if ds[j] == k + 1) / dt
        s = max(q * s, need)
        _edf_slot(rem, order, s * dt)
        out.append(s)
    return out


def energy_python(speeds, dt, alpha):
    return sum(s**alpha for s in speeds) * dt


def bkp_python(release, deadline, work, n_slots, dt=1.0):
    """BKP's COMMANDED speed per slot (what the machine runs at, and pays for):
    s(t) = max_{t' > t} w(t, e t - (e - 1) t', t') / (t' - t), w(t, t1, t2) = work released in [t1, t] with
    deadline <= t2 (Bansal-Kimbrel-Pruhs), raised to finish the jobs due at the end of the slot; EDF; 0 while no
    released job has work left (the machine idles)."""
    e = math.e
    rs, ds = _grid(release, deadline, dt)
    n = len(work)
    rem = [float(w) for w in work]
    tol = 1e-6 * max(work)  # work below this counts as done (the grid functions' tolerance)
    out = []
    for k in range(n_slots):
        t = k * dt
        cands = [deadline[j] for j in range(n) if deadline[j] > t]
        cands += [(e * t - release[j]) / (e - 1) for j in range(n) if release[j] <= t + 1e-6 * dt and release[j] < t]
        s = 0.0
        for tp in cands:
            t1 = e * t - (e - 1) * tp
            wsum = sum(
                work[j]
                for j in range(n)
                if release[j] <= t + 1e-6 * dt and release[j] >= t1 - 1e-4 * dt and deadline[j] <= tp + 1e-4 * dt
            )
            s = max(s, wsum / (tp - t))
        order = _pending(k, rs, ds, rem, tol)
        need = sum(rem[j] for j in order if ds[j] == k + 1) / dt
        s = max(s, need) if order else 0.0  # idle while nothing is pending
        _edf_slot(rem, order, s * dt)
        out.append(s)
    return out


def noisy_error_moment(sigma: float, alpha: float) -> float:
    """E|max(sigma z, -1)|^alpha, z ~ N(0, 1) (scipy quadrature): the expected eta_w^alpha of the workload
    prediction max(w (1 + sigma z), 0) (every job's relative error is max(sigma z, -1); the weights w_j^alpha
    cancel in expectation)."""
    from scipy import integrate, stats

    f = lambda z: abs(max(sigma * z, -1.0)) ** alpha * stats.norm.pdf(z)
    return float(sum(integrate.quad(f, lo, hi, limit=200)[0] for lo, hi in ((-12.0, -1 / sigma), (-1 / sigma, 12.0))))
