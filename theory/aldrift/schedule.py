"""Temperature schedules tau_1 < ... < tau_N = T (additive and geometric)."""

from __future__ import annotations

import math

import numpy as np
from jaxtyping import Float

from jaxwb.theory import validate as v

SCHEDULES = ("additive", "geometric")


def num_temperatures(
    schedule: str, T: float, *, D: float | None = None, tau1: float | None = None, n: int | None = None
) -> int:
    """N, the number of temperatures.

    additive:  tau_k = k / D, k = 1..N, N = ceil(T D)            (D = the range of d; step 1/D)
    geometric: tau_1 given (paper: mu0 / L_d), tau_{k+1} = (1 + 1/n) tau_k, stopped at T:
               N = 1 + ceil(ln(T / tau_1) / ln(1 + 1/n))        (last temperature clipped to T)
    """
    v.one_of("schedule", schedule, SCHEDULES)
    v.positive("T", T)
    if schedule == "additive":
        v.positive("D", D if D is not None else -1.0)
        assert D is not None  # narrowed: v.positive raised on None
        return max(1, math.ceil(T * D - 1e-9))
    v.positive("tau1", tau1 if tau1 is not None else -1.0)
    v.positive_int("n", n)
    assert tau1 is not None and n is not None  # narrowed: the checks above raised on None
    if tau1 >= T:
        return 1
    return 1 + math.ceil(math.log(T / tau1) / math.log1p(1.0 / n) - 1e-9)


def temperature_schedule(
    schedule: str, T: float, *, D: float | None = None, tau1: float | None = None, n: int | None = None
) -> Float[np.ndarray, " N"]:
    """The temperatures tau_1..tau_N (NumPy float array of length ``num_temperatures``), ending exactly at T."""
    N = num_temperatures(schedule, T, D=D, tau1=tau1, n=n)
    taus: np.ndarray
    if schedule == "additive":
        assert D is not None  # num_temperatures raised on None
        taus = np.arange(1, N + 1) / D
    else:
        assert tau1 is not None and n is not None  # num_temperatures raised on None
        taus = tau1 * (1.0 + 1.0 / n) ** np.arange(N)
    return np.minimum(taus, T)
