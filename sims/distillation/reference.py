"""distillation: the independent references and measurements the claims and figures compare with the run; pure
NumPy, float64, no code shared with run.py or ``jaxwb.theory.distillation``.

  numpy_crossing       the first checkpoint where a loss curve crosses a level (tau_gen, tau_mem)
  crossing_difference  the stored tau_gen and tau_mem against numpy_crossing on the stored loss curves
  class_miscount       the direction classes (generalising, memorised) recounted from the stored eigenvalues
  numpy_measures       one seed's copy fraction and energy distance of a set of samples
  numpy_sampler        the probability-flow Euler sampler and the final denoiser
"""

from __future__ import annotations

import numpy as np

from jaxwb.sims.core.claims import memoized


def numpy_crossing(steps, curve, level):
    """First step where ``curve`` >= ``level``, linear in log(step) between checkpoints (NaN if never)."""
    above = np.nonzero(curve >= level)[0]
    if not above.size or above[0] == 0:
        return np.nan
    i = above[0]
    frac = (level - curve[i - 1]) / (curve[i] - curve[i - 1])
    return float(np.exp(np.log(steps[i - 1]) + frac * (np.log(steps[i]) - np.log(steps[i - 1]))))


def crossing_difference(ts: dict, steps, gen_level: float, mem_level: float) -> float:
    """Largest relative difference between the stored crossing times ``ts["tau_gen"]``, ``ts["tau_mem"]`` (p,
    seed, n) and their :func:`numpy_crossing` recomputation from the stored loss curves ``ts["test"]``,
    ``ts["train"]`` (p, seed, n, checkpoint) at the checkpoints ``steps``: tau_gen where the test loss is within
    ``gen_level`` of its total decrease, tau_mem where the generalisation gap reaches ``mem_level`` x its
    end-of-training value (inf where a crossing is never reached)."""
    worst = 0.0
    for idx in np.ndindex(ts["tau_mem"].shape):
        test, train = np.asarray(ts["test"][idx], np.float64), np.asarray(ts["train"][idx], np.float64)
        gap = test - train
        ref_gen = numpy_crossing(steps, -test, -(test.min() + gen_level * (1.0 - test.min())))
        ref_mem = numpy_crossing(steps, gap, mem_level * gap[-1])
        for ref, got in ((ref_gen, ts["tau_gen"][idx]), (ref_mem, ts["tau_mem"][idx])):
            worst = max(worst, abs(float(got) / ref - 1.0)) if np.isfinite(ref) else np.inf
    return worst


def class_miscount(ret: dict, tau_gen: float, teacher_steps: float) -> int:
    """Directions miscounted by the stored class counts ``ret["generalising_count"]``, ``ret["memorised_count"]``
    (seed, K) against a recount from the stored ``ret["lr_lam"]`` (seed, K, p): generalising where lr lam tau_gen
    >= 1, memorised where lr lam tau_gen < 1 <= lr lam teacher_steps."""
    x = np.asarray(ret["lr_lam"], np.float64)  # (seed, K, p)
    fast = x * tau_gen >= 1.0
    slow = ~fast & (x * teacher_steps >= 1.0)
    miscount = int(np.sum(np.abs(fast.sum(-1) - ret["generalising_count"])))
    return miscount + int(np.sum(np.abs(slow.sum(-1) - ret["memorised_count"])))


@memoized
def numpy_measures(x, X, ref) -> tuple[float, float]:
    """NumPy float64 recount of one seed's copy fraction (d1/d2 < 1/3 against the training set ``X``) and energy
    distance (the U-statistic against the reference samples ``ref``) of samples ``x``."""
    d = np.sort(np.sqrt(((x[:, None, :] - X[None]) ** 2).sum(-1)), axis=1)
    copy = float(np.mean(d[:, 0] < d[:, 1] / 3.0))

    def mean_pair(a, b, same):
        dd = np.sqrt(((a[:, None, :] - b[None]) ** 2).sum(-1))
        return (dd.sum() - np.trace(dd)) / (len(a) * (len(a) - 1)) if same else dd.mean()

    return copy, float(2 * mean_pair(x, ref, False) - mean_pair(x, x, True) - mean_pair(ref, ref, True))


@memoized
def numpy_sampler(A, W, b, th, z):
    """The probability-flow Euler sampler and the final denoiser in NumPy float64 (theory.distillation.sampling)."""
    p, d = W.shape

    def score(k, x):
        return np.sqrt(2.0) * np.sin(x @ W.T / np.sqrt(d) + b) @ A[k].T / np.sqrt(p)

    x = z.copy()
    for k in range(len(th) - 1, 0, -1):
        x = x + (th[k] - th[k - 1]) * np.tan(th[k]) * (x + score(k, x))
    return (x + np.sin(th[0]) ** 2 * score(0, x)) / np.cos(th[0])
