"""Shared helpers of the aldrift package: float conversion and the checks several modules make."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike

from jaxwb.theory import validate as v

LOG2PI = math.log(2.0 * math.pi)


def as_float(x: ArrayLike) -> Array:
    """``x`` as an array of the default float dtype."""
    return jnp.asarray(x, dtype=jnp.result_type(float))


def check_points(name: str, x, n: int) -> None:
    """``x`` a real finite array of shape (..., n) (points of R^n)."""
    v.array(name, x, min_ndim=1)
    if np.shape(x)[-1] != n:
        raise ValueError(f"{name} must have last axis n = {n} (the model's dimension), got shape {np.shape(x)}")


def check_log_density(name: str, x) -> None:
    """Log densities: real, no NaN and no +inf (-inf, a zero density, is allowed)."""
    v.array(name, x, min_ndim=0, allow_empty=False, finite=False)
    v.check(name, x, lambda a: (a == a) & (a < np.inf), "free of NaN and +inf (-inf = zero density is allowed)")
