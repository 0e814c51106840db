"""quantization: independent references the claims compare with the run, no code shared with run.py or the
kernels: the high-resolution moment ratio of a vector (float64, from the closed forms of
``jaxwb.theory.dithered_quant``) and InQuant's donor rule recounted in plain Python."""

from __future__ import annotations

import numpy as np

from jaxwb.theory import dithered_quant as dq


def moment_ratio(x, d: int) -> float:
    """High-resolution prediction of the RHT / dense-Haar MSE ratio for the unit vector ``x`` (d,): E exp(t^2/3)
    under the Rademacher law of the RHT's coordinates (Gauss-Hermite quadrature) over the same moment under a
    Haar rotation (1F1(1/2; d/2; d/3)); eq. (1)-(3), everything else (the factor (N/(N-1))^2 (pi/2) 4^-b) cancels.
    Computed in float64 from x alone: it shares no code with either quantizer."""
    return dq.rademacher_exp_moment_quadrature(np.asarray(x, np.float64)) / dq.sphere_exp_moment(int(d))


def nearest_free_violations(outliers, donors, channels: int) -> int:
    """Donors that are not the nearest channel still free (not an outlier, not an earlier outlier's donor) to their
    outlier, outliers taken in the kernel's order (decreasing saliency): InQuant's stride rule, ties aside."""
    outliers, donors = np.asarray(outliers).tolist(), np.asarray(donors).tolist()
    taken, bad = set(outliers), 0
    for o, dn in zip(outliers, donors, strict=True):
        free = [c for c in range(channels) if c not in taken]
        bad += dn in taken or abs(dn - o) != min(abs(c - o) for c in free)
        taken.add(dn)
    return bad
