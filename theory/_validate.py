"""Eager input checks shared by the theory modules.

Every public function checks its parameters *outside* jit: when a value is concrete (a Python number or a
concrete array) the check runs and raises a ``ValueError`` naming the parameter; when it is a tracer (the
function is being traced under ``jit``/``vmap``) the check is skipped, because the value is not known yet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np


def is_concrete(value: Any) -> bool:
    """True when ``value`` (or every leaf of it) is known at trace time."""
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(value))


def check(name: str, value: Any, predicate: Callable[[np.ndarray], np.ndarray], requirement: str) -> None:
    """Raise ``ValueError(f"{name} must be {requirement}, got {value}")`` if a concrete value fails.

    ``predicate`` receives ``np.asarray(value)`` and returns a boolean array; every entry must hold.
    NaN fails every check.
    """
    if value is None or not is_concrete(value):
        return
    arr = np.asarray(value)
    with np.errstate(invalid="ignore"):
        ok = np.asarray(predicate(arr), dtype=bool)  # comparisons with NaN are False, so NaN fails
    if not np.all(ok):
        shown = arr.item() if arr.size == 1 else f"array with offending entries {arr[~ok][:5]}"
        raise ValueError(f"{name} must be {requirement}, got {shown}")


def positive(name: str, value: Any) -> None:
    check(name, value, lambda a: a > 0, "> 0")


def nonnegative(name: str, value: Any) -> None:
    check(name, value, lambda a: a >= 0, ">= 0")


def in_interval(name: str, value: Any, lo: float, hi: float, *, closed_hi: bool = False) -> None:
    bracket = "]" if closed_hi else ")"
    check(name, value, (lambda a: (a >= lo) & (a <= hi)) if closed_hi else (lambda a: (a >= lo) & (a < hi)),
          f"in [{lo}, {hi}{bracket}")


def positive_int(name: str, value: Any) -> None:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def one_of(name: str, value: Any, options: tuple[str, ...]) -> None:
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")


def shape(name: str, value: Any, expected: tuple[int | None, ...]) -> None:
    """Check ``value.shape`` against ``expected`` (``None`` matches any size)."""
    got = tuple(np.shape(value))
    if len(got) != len(expected) or any(e is not None and e != g for e, g in zip(expected, got, strict=True)):
        want = "(" + ", ".join("*" if e is None else str(e) for e in expected) + ")"
        raise ValueError(f"{name} must have shape {want}, got {got}")
