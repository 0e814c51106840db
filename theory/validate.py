"""Input checks shared by the theory modules: eager, under autodiff and ``vmap``, and (opt-in) under ``jit``.

Every public function checks its parameters when called and raises ``ValueError("<name> must be
<requirement>, got <value>")`` (``TypeError`` only where Python itself does), naming the parameter the caller
passed. Where the checks run:

* eager call: every check, at once.
* ``jax.grad`` / ``vjp`` / ``jvp`` (``jacfwd``, ``hessian``...) of an eager call: the arguments are autodiff
  tracers whose primal is concrete; :func:`check` unwraps them and checks the primal value, so the same error
  is raised as eagerly (``jax.grad(gd_threshold)(-1.0)`` raises ``lam must be > 0``).
* eager ``jax.vmap``: the batched value behind the tracer is checked, every member of the batch (the message
  says which member); nested ``vmap``/``grad`` combinations are unwrapped the same way.
* ``jit`` (and anything traced inside it): a value check is skipped (its value is not known yet) unless the
  call runs inside :func:`checked`, where it becomes a ``jax.experimental.checkify`` check and :func:`checked`
  raises the same ``ValueError`` when the compiled function runs. ``checked(jax.vmap(f))`` of an ``f`` with a
  while loop is refused with a clear error (checkify cannot check batched while loops).
* static properties (dtype, rank, shapes, options, integer counts) raise at trace time in every mode.

Numeric edges. Values are *finite* unless a check says otherwise (NaN fails every comparison, so it fails every
check; :func:`positive`, :func:`nonnegative`, :func:`finite` and ``check(..., finite=True)`` reject +-inf).
Complex values are rejected by every check, never cast. :func:`positive` also rejects subnormals (below
``np.finfo(dtype).tiny`` of the dtype jax computes in, see :func:`compute_dtype`). A finite input whose result
would overflow is either computed in a scaled form (same float result for ordinary inputs) or rejected by name.

The switch and the wrapper live in :mod:`jaxwb.theory.checking` (jax only), written so that
``jaxwb.pallas_kernels.dispatch`` can import them instead of keeping its own copy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.theory.checking import checked, checking_traced, emit

__all__ = ["checked", "checking_traced"]


_AD_TRACERS: tuple[type, ...] = ()
_BATCH_TRACER: type | None = None
try:  # the autodiff and batching tracer types (private module paths: looked up once, by name, defensively)
    from jax._src.interpreters import ad as _ad
    from jax._src.interpreters import batching as _batching

    _AD_TRACERS = tuple(t for t in (getattr(_ad, "JVPTracer", None), getattr(_ad, "LinearizeTracer", None)) if t)
    _BATCH_TRACER = getattr(_batching, "BatchTracer", None)
except Exception:  # pragma: no cover - jax moved them: tracers are then all treated as traced
    pass


def _unwrap(leaf: Any) -> tuple[Any, list[int | None]]:
    """``leaf`` with autodiff tracers replaced by their primal and batch tracers by their batched value.

    Returns the innermost value and the batch dimensions met, outermost tracer first (``None``: not batched).
    The value is a tracer still when the primal is traced (``jit``)."""
    bdims: list[int | None] = []
    while isinstance(leaf, jax.core.Tracer):
        if _AD_TRACERS and isinstance(leaf, _AD_TRACERS):
            leaf = leaf.primal
        elif _BATCH_TRACER is not None and isinstance(leaf, _BATCH_TRACER):
            bd = leaf.batch_dim
            bdims.append(int(bd) if isinstance(bd, (int, np.integer)) else None)
            leaf = leaf.val
        else:
            break
    return leaf, bdims


def primal(value: Any) -> Any:
    """``value`` with every autodiff tracer (``jax.grad``/``vjp``/``jvp`` of an eager call) replaced by its
    concrete primal value; other leaves (batch and ``jit`` tracers included) unchanged."""

    def one(leaf: Any) -> Any:
        while _AD_TRACERS and isinstance(leaf, _AD_TRACERS):
            leaf = cast(Any, leaf).primal
        return leaf

    return jax.tree.map(one, value)


def is_concrete(value: Any) -> bool:
    """True when ``value`` (or every leaf of it) is known at trace time: no tracer, or an autodiff tracer
    (``jax.grad``/``vjp``/``jvp`` of an eager call) whose primal is concrete (read it with :func:`primal`).
    Batch (``vmap``) and ``jit`` tracers are not concrete (``check`` handles eager ``vmap`` itself)."""
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(primal(value)))


def is_plain(value: Any) -> bool:
    """True when no leaf of ``value`` is a tracer of any kind (a host copy of it keeps every derivative)."""
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(value))


def _batched_members(value: Any) -> np.ndarray | None:
    """The concrete value behind ``value`` (a batched value: batch axes first, flattened to one leading axis,
    each entry one member of the ``vmap``); ``None`` when it is traced (``jit``). Unbatched: ``arr[None]``."""
    leaf, bdims = _unwrap(value)
    if isinstance(leaf, jax.core.Tracer):
        return None
    arr = np.asarray(leaf)
    lead = 0
    for bd in reversed(bdims):  # the innermost value's axes: the outermost vmap's batch axis first
        if bd is None:
            continue
        arr = np.moveaxis(arr, lead + int(bd), lead)
        lead += 1
    return arr.reshape((-1, *arr.shape[lead:])) if lead else arr[None]


def dtype_of(value: Any) -> np.dtype:
    """The dtype of an array, a JAX tracer or a Python scalar (as ``jnp.result_type`` would give), cheaply."""
    dt = getattr(value, "dtype", None)
    if isinstance(dt, np.dtype):  # NumPy and JAX arrays, ml_dtypes included: no jnp.result_type call (~20 us)
        return dt
    return np.dtype(jnp.result_type(value)) if dt is not None else np.asarray(value).dtype


def _real(name: str, value: Any) -> None:
    dt = dtype_of(value)
    if jnp.issubdtype(dt, jnp.complexfloating):
        raise ValueError(f"{name} must be real, got complex dtype {dt.name}")
    if not (jnp.issubdtype(dt, jnp.number) or dt == np.bool_):
        raise ValueError(f"{name} must be a real number or array, got dtype {dt}")


def real(name: str, value: Any) -> None:
    """``value`` has a real (not complex) numeric or bool dtype; never cast. Static: checked at trace time."""
    _real(name, value)


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
    elementwise: bool = False,
) -> None:
    """Raise ``ValueError(f"{name} must be {requirement}, got ...")`` unless ``predicate`` holds everywhere.

    ``predicate`` receives ``np.asarray(value)`` (eager) or a ``jnp`` array (traced, under :func:`checked`) and
    returns a boolean array; every entry must hold. NaN fails every comparison, so it fails every check;
    ``finite=True`` also rejects +-inf. Complex values are rejected. ``None`` is not checked.
    A scalar is shown as itself; an array as the number of offending entries and the first of them.

    Under ``jax.grad``/``vjp``/``jvp`` of an eager call the primal value is checked; under an eager
    ``jax.vmap`` every member of the batch is checked (all at once when ``elementwise``, the predicate then
    being a function of each entry alone, else member by member). Values traced under ``jit`` are checked
    only inside :func:`checked`.
    """
    if value is None:
        return
    _real(name, value)
    if finite:
        pred0 = predicate
        predicate = lambda a: pred0(a) & _isfinite(a)
    leaf, bdims = _unwrap(value)
    if isinstance(leaf, jax.core.Tracer):
        if checking_traced():
            _traced_check(name, value, predicate, requirement)
        return
    if not any(bd is not None for bd in bdims):
        _check_concrete(name, np.asarray(leaf), predicate, requirement)
        return
    members = _batched_members(value)
    assert members is not None
    if elementwise:
        ok = _evaluate(predicate, members)
        if ok is None or np.all(ok):
            return
        first = int(np.argmin(ok.reshape(ok.shape[0], -1).all(axis=1))) if ok.shape == members.shape else 0
        _check_concrete(name, members[first], predicate, requirement, member=first)
        return
    for i in range(members.shape[0]):
        _check_concrete(name, members[i], predicate, requirement, member=i)


def _evaluate(predicate: Callable[[Any], Any], arr: np.ndarray) -> np.ndarray | None:
    """``predicate(arr)`` as a bool array; ``None`` when it depends on a value still traced (then skipped)."""
    try:
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            res = primal(predicate(arr))
        if isinstance(res, jax.core.Tracer):
            return None
        return np.asarray(res, dtype=bool)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None


def _check_concrete(
    name: str, arr: np.ndarray, predicate: Callable[[Any], Any], requirement: str, *, member: int | None = None
) -> None:
    ok = _evaluate(predicate, arr)
    if ok is None or np.all(ok):
        return
    if arr.size == 1:
        shown = arr.item()
    elif ok.shape == arr.shape:
        shown = f"an array with {int(np.sum(~ok))} offending entries, first {arr[~ok][0]}"
    else:  # a property of the whole array (e.g. increasing): show the array itself
        shown = np.array2string(arr, threshold=12, precision=4)
    where = "" if member is None else f" (in member {member} of a jax.vmap batch)"
    raise ValueError(f"{name} must be {requirement}, got {shown}{where}")


def _isfinite(a: Any) -> Any:
    if isinstance(a, np.ndarray) or np.isscalar(a):
        return np.isfinite(np.asarray(a))
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
    check(name, value, lambda a: a == a, "finite (no NaN or inf)", finite=True, elementwise=True)


_check_finite = finite


def compute_dtype(value: Any) -> np.dtype:
    """The floating dtype ``value`` is computed in by jax: its own floating dtype, else the default float
    (float32 unless x64), a Python float or a float64 NumPy array canonicalised as ``jnp.asarray`` does."""
    return _canonical_float(dtype_of(value), bool(jax.config.jax_enable_x64))


@functools.cache
def _canonical_float(dt: np.dtype, x64: bool) -> np.dtype:
    if not jnp.issubdtype(dt, jnp.floating):
        dt = np.dtype(jnp.result_type(float))
    return np.dtype(jax.dtypes.canonicalize_dtype(dt))


@functools.cache
def _tiny_of(dt: np.dtype) -> float:
    return float(jnp.finfo(dt).tiny)


def tiny(value: Any) -> float:
    """The smallest positive normal number of the dtype ``value`` is computed in (``np.finfo(dtype).tiny``)."""
    return _tiny_of(compute_dtype(value))


def normal(name: str, value: Any) -> None:
    """No subnormal magnitude in ``value``: every nonzero entry has ``|value| >= tiny`` of its compute dtype
    (subnormals are flushed to zero on accelerators and lose precision everywhere)."""
    t = tiny(value)
    check(
        name,
        value,
        lambda a: (a == 0) | ~(np.abs(a) < t),
        f"zero or a normal number (|x| >= {t:.4g}, the smallest normal {compute_dtype(value).name}; "
        "a subnormal underflows)",
        elementwise=True,
    )


def positive(name: str, value: Any, *, allow_inf: bool = False) -> None:
    """``value > 0`` everywhere, not subnormal (see :func:`normal`); finite unless ``allow_inf`` (then +inf
    passes)."""
    check(name, value, lambda a: a > 0, "> 0", elementwise=True)
    t = tiny(value)
    check(
        name,
        value,
        lambda a: ~(a < t),
        f"a normal number >= {t:.4g} (the smallest normal {compute_dtype(value).name}; a subnormal underflows)",
        elementwise=True,
    )
    if not allow_inf:
        _check_finite(name, value)


def nonnegative(name: str, value: Any, *, allow_inf: bool = False) -> None:
    """``value >= 0`` everywhere; finite unless ``allow_inf``."""
    check(name, value, lambda a: a >= 0, ">= 0", elementwise=True)
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
        elementwise=True,
    )


def positive_int(name: str, value: Any) -> None:
    """A Python/NumPy integer (not a bool) >= 1. Static: never traced."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def nonnegative_int(name: str, value: Any) -> None:
    """A Python/NumPy integer (not a bool) >= 0. Static: never traced."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")


def prng_key(name: str, value: Any) -> None:
    """A JAX PRNG key (``jax.random.key(seed)`` or a legacy ``uint32[2]`` ``PRNGKey``). Static: never traced."""
    if value is None:
        raise ValueError(f"{name} must be a PRNG key (jax.random.key(seed)), got None")
    dt = getattr(value, "dtype", None)
    legacy = dt == np.uint32 and np.shape(value)[-1:] == (2,)
    if dt is None or not (jax.dtypes.issubdtype(dt, jax.dtypes.prng_key) or legacy):
        raise ValueError(
            f"{name} must be a PRNG key (jax.random.key(seed)), got {type(value).__name__}"
            f"{'' if dt is None else ' of dtype ' + str(dt)}"
        )


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
        dt = dtype_of(value)
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
