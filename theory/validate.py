"""Input checks shared by the theory modules, eager and (opt-in) under ``jit``.

Every public function checks its parameters when called. A check of a *concrete* value (a Python number or a
concrete array) runs at once and raises ``ValueError("<name> must be <requirement>, got <value>")``. A check of
a *traced* value (the function is being traced under ``jit``/``vmap``) is skipped, because the value is not
known yet, unless the call runs inside :func:`checked`: there the same predicate becomes a
``jax.experimental.checkify`` check and :func:`checked` raises the same ``ValueError`` (same message up to
the printed value) when the compiled function runs. Static properties (dtype, rank, shapes, options) do not
depend on values and raise at trace time either way.

The switch and the wrapper live in :mod:`jaxwb.theory.checking` (jax only), written so that
``jaxwb.pallas_kernels.dispatch`` can import them instead of keeping its own copy (``theory`` may not import
``pallas_kernels``; the other direction already exists: ``jaxwb.pallas_kernels.quant.fake_quant`` uses
``jaxwb.theory.zoe_grad``). Until it does, ``jaxwb.theory.checked`` and ``jaxwb.pallas_kernels.checked`` each activate
only
their own package's checks.

Values are *finite* unless a check says otherwise: :func:`positive`, :func:`nonnegative` and :func:`check`
with ``finite=True`` reject +-inf as well as NaN (NaN fails every comparison, so it fails every check).
Complex values are rejected by every value check (no ordering is meaningful on them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.theory.checking import checked, checking_traced, emit

__all__ = ["checked", "checking_traced"]


def is_concrete(value: Any) -> bool:
    """True when ``value`` (or every leaf of it) is known at trace time."""
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(value))


def _dtype_of(value: Any) -> np.dtype:
    dt = getattr(value, "dtype", None)
    if isinstance(dt, np.dtype):  # NumPy and JAX arrays, ml_dtypes included: no jnp.result_type call (~20 us)
        return dt
    return np.dtype(jnp.result_type(value)) if dt is not None else np.asarray(value).dtype


def _real(name: str, value: Any) -> None:
    dt = _dtype_of(value)
    if jnp.issubdtype(dt, jnp.complexfloating):
        raise ValueError(f"{name} must be real, got complex dtype {dt.name}")
    if not (jnp.issubdtype(dt, jnp.number) or dt == np.bool_):
        raise ValueError(f"{name} must be a real number or array, got dtype {dt}")


def _show(x: Any) -> Any:
    x = np.asarray(x)
    return x.item() if x.size == 1 else x


def check(
    name: str,
    value: Any,
    predicate: Callable[[Any], Any],
    requirement: str,
    *,
    finite: bool = False,
) -> None:
    """Raise ``ValueError(f"{name} must be {requirement}, got ...")`` unless ``predicate`` holds everywhere.

    ``predicate`` receives ``np.asarray(value)`` (eager) or a ``jnp`` array (traced, under :func:`checked`) and
    returns a boolean array; every entry must hold. NaN fails every comparison, so it fails every check;
    ``finite=True`` also rejects +-inf. Complex values are rejected. ``None`` is not checked.
    A scalar is shown as itself; an array as the number of offending entries and the first of them.
    """
    if value is None:
        return
    _real(name, value)
    if finite:
        pred0 = predicate
        predicate = lambda a: pred0(a) & _isfinite(a)
    if not is_concrete(value):
        if checking_traced():
            _traced_check(name, value, predicate, requirement)
        return
    arr = np.asarray(value)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        ok = np.asarray(predicate(arr), dtype=bool)
    if not np.all(ok):
        if arr.size == 1:
            shown = arr.item()
        elif ok.shape == arr.shape:
            shown = f"an array with {int(np.sum(~ok))} offending entries, first {arr[~ok][0]}"
        else:  # a property of the whole array (e.g. increasing): show the array itself
            shown = np.array2string(arr, threshold=12, precision=4)
        raise ValueError(f"{name} must be {requirement}, got {shown}")


def _isfinite(a):
    if isinstance(a, np.ndarray) or np.isscalar(a):
        return np.isfinite(a)
    return jnp.isfinite(a)


def _traced_check(name, value, predicate, requirement) -> None:
    a = jnp.asarray(value)
    try:
        ok = jnp.asarray(predicate(a), dtype=bool)
    except (TypeError, jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return  # a predicate written for NumPy only (another module's): skipped under jit, as before
    if a.size <= 1:
        emit(jnp.all(ok), f"{name} must be {requirement}, got {{}}", a.reshape(()))
        return
    if ok.shape != a.shape:
        emit(jnp.all(ok), f"{name} must be {requirement}, got {{}}", a)
        return
    flat, okf = a.reshape(-1), ok.reshape(-1)
    first = flat[jnp.argmin(okf)]
    bad = jnp.sum(~okf).astype(jnp.int32)
    emit(
        jnp.all(okf),
        f"{name} must be {requirement}, got an array with {{}} offending entries, first {{}}",
        bad,
        first,
    )


def finite(name: str, value: Any) -> None:
    """No NaN and no +-inf in ``value`` (a real number or array)."""
    check(name, value, lambda a: a == a, "finite (no NaN or inf)", finite=True)


_check_finite = finite


def positive(name: str, value: Any, *, allow_inf: bool = False) -> None:
    """``value > 0`` everywhere; finite unless ``allow_inf`` (then +inf passes)."""
    check(name, value, lambda a: a > 0, "> 0")
    if not allow_inf:
        _check_finite(name, value)


def nonnegative(name: str, value: Any, *, allow_inf: bool = False) -> None:
    """``value >= 0`` everywhere; finite unless ``allow_inf``."""
    check(name, value, lambda a: a >= 0, ">= 0")
    if not allow_inf:
        _check_finite(name, value)


def in_interval(name: str, value: Any, lo: float, hi: float, *, closed_hi: bool = False) -> None:
    """``lo <= value < hi`` (``<= hi`` when ``closed_hi``) everywhere."""
    bracket = "]" if closed_hi else ")"
    check(
        name,
        value,
        (lambda a: (a >= lo) & (a <= hi)) if closed_hi else (lambda a: (a >= lo) & (a < hi)),
        f"in [{lo}, {hi}{bracket}",
    )


def positive_int(name: str, value: Any) -> None:
    """A Python/NumPy integer (not a bool) >= 1. Static: never traced."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def nonnegative_int(name: str, value: Any) -> None:
    """A Python/NumPy integer (not a bool) >= 0. Static: never traced."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")


def one_of(name: str, value: Any, options: tuple) -> None:
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")


def shape(name: str, value: Any, expected: tuple[int | None, ...]) -> None:
    """Check ``value.shape`` against ``expected`` (``None`` matches any size)."""
    got = tuple(np.shape(value))
    if len(got) != len(expected) or any(e is not None and e != g for e, g in zip(expected, got, strict=True)):
        want = "(" + ", ".join("*" if e is None else str(e) for e in expected) + ")"
        raise ValueError(f"{name} must have shape {want}, got {got}")


def array(
    name: str,
    value: Any,
    *,
    ndim: int | tuple[int, ...] | None = None,
    min_ndim: int | None = None,
    integer: bool = False,
    allow_empty: bool = False,
    finite: bool = True,
) -> None:
    """Static checks of an array argument, then (unless ``finite=False``) its finiteness.

    dtype: real floating (or integer/bool, which are promoted) unless ``integer``, then an integer dtype;
    complex is always rejected. Rank ``ndim`` (one or several allowed) / at least ``min_ndim``; non-empty
    unless ``allow_empty``.
    """
    if value is None:
        raise ValueError(f"{name} must be an array, got None")
    try:
        dt = _dtype_of(value)
    except TypeError as e:
        raise ValueError(f"{name} must be an array, got {type(value).__name__}") from e
    if jnp.issubdtype(dt, jnp.complexfloating):
        raise ValueError(f"{name} must be real, got complex dtype {dt.name}")
    if integer and not jnp.issubdtype(dt, jnp.integer):
        raise ValueError(f"{name} must be an integer array, got dtype {dt.name}")
    if not (jnp.issubdtype(dt, jnp.number) or dt == np.bool_):
        raise ValueError(f"{name} must be a real array, got dtype {dt}")
    shp = tuple(np.shape(value))
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if len(shp) not in allowed:
            raise ValueError(f"{name} must have rank {' or '.join(map(str, allowed))}, got shape {shp}")
    if min_ndim is not None and len(shp) < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} axes, got shape {shp}")
    if not allow_empty and 0 in shp:
        raise ValueError(f"{name} must be non-empty, got shape {shp}")
    if finite and not integer:
        _check_finite(name, value)


def same_shape(name_a: str, a: Any, name_b: str, b: Any) -> None:
    """``a`` and ``b`` have the same shape."""
    sa, sb = tuple(np.shape(a)), tuple(np.shape(b))
    if sa != sb:
        raise ValueError(f"{name_b} must have the shape of {name_a} {sa}, got {sb}")
