"""Shared helpers of the aldrift package."""

from __future__ import annotations

import math

import jax.numpy as jnp

_LOG2PI = math.log(2.0 * math.pi)


def _f(x):
    return jnp.asarray(x, dtype=jnp.result_type(float))
