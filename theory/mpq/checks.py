"""Input checks of ``jaxwb.theory.mpq`` (the policy of :mod:`jaxwb.theory.validate`) and the exact power-of-two
rescalings that keep the solvers away from float overflow and underflow.

Every check raises ``ValueError`` (``TypeError`` for a codebook that is not a :class:`Codebook`) whose message
starts with the parameter's name. Shapes, ranks, dtypes and integer options are static and raise in every mode;
value checks (finite, symmetric, definite, code ranges) run on concrete values (eager calls, the primal of
``jax.grad``/``jvp``, every member of an eager ``jax.vmap``) and, under ``jit``, only inside
``jaxwb.theory.checked`` (as ``checkify`` checks).

Rescaling. The codes of every solver are invariant to the scale of H (and MPQ's also to the joint scale of w and
its grid) in exact arithmetic. A float32 H outside a safe range (its largest diagonal entry outside
[2^-32, 2^32]) is multiplied by 4^-k, an exact operation; every solver step is homogeneous in H, so the codes are
those of the unscaled H computed without overflow or underflow, and an H inside the range is left untouched (the
same floats as without the rescaling).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.theory import validate as v

# a positive definite H: Cholesky of H - DEF_EPS * eps * max(diag H) * I exists (eps of H's dtype); a symmetric H:
# max |H - H^T| <= sqrt(eps) * max |H|
DEF_EPS = 8.0
H_SAFE = 32  # H (its largest diagonal entry) is rescaled by 4^-k only outside [2^-H_SAFE, 2^H_SAFE]


def as_float(x: Any) -> jax.Array:
    """``x`` as a float array of at least float32 precision (float64 stays float64 under ``jax_enable_x64``)."""
    x = jnp.asarray(x)
    return x.astype(jnp.promote_types(x.dtype, jnp.float32))


def concrete(value: Any) -> np.ndarray | None:
    """The NumPy value of ``value`` when it is known now (eager, or the primal of an autodiff tracer), else None
    (``jit`` and ``vmap`` tracers: those go through :func:`validate.check`)."""
    if not v.is_concrete(value):
        return None
    return np.asarray(v.primal(value))


def eps_of(value: Any) -> float:
    return float(jnp.finfo(v.compute_dtype(value)).eps)


def int_option(name: str, value: Any, *, minimum: int = 1) -> int:
    """A Python/NumPy integer (not a bool) >= ``minimum``. Static."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return int(value)


def real_scalar(name: str, value: Any) -> None:
    """A real number: a Python or NumPy scalar or a 0-d array, not complex (its value is checked by the caller)."""
    if value is None or isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be a real number, got {type(value).__name__}")
    if np.ndim(value) != 0:
        raise ValueError(f"{name} must be a real number (a scalar), got shape {np.shape(value)}")
    v.real(name, value)


def positive_scalar(name: str, value: Any) -> None:
    real_scalar(name, value)
    v.positive(name, value)


def array(name: str, value: Any, *, ndim: int | tuple[int, ...], integer: bool = False) -> None:
    """A real (or integer) non-empty array of rank ``ndim``, finite unless integer."""
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be an array, got {type(value).__name__}")
    v.array(name, value, ndim=ndim, integer=integer)


def shape_is(name: str, value: Any, expected: tuple[int, ...], why: str = "") -> None:
    got = tuple(np.shape(value))
    if got != tuple(expected):
        raise ValueError(f"{name} must have shape {tuple(expected)}{why}, got {got}")


def codes(name: str, value: Any, shape: tuple[int, ...], k: int) -> None:
    """Integer codes of ``shape``, each in [0, k)."""
    array(name, value, ndim=len(shape), integer=True)
    shape_is(name, value, shape)
    v.check(name, value, lambda a: (a >= 0) & (a < k), f"in [0, {k}) (indices into {k} grid values)", elementwise=True)


def grid(name: str, value: Any, lead: tuple[int, ...] | None, *, ndim: int | None = None) -> None:
    """A finite grid of shape ``lead + (K,)`` (K >= 1)."""
    nd = len(lead) + 1 if lead is not None else ndim
    assert nd is not None
    array(name, value, ndim=nd)
    if lead is not None and tuple(np.shape(value))[:-1] != tuple(lead):
        raise ValueError(f"{name} must have shape {tuple(lead)} + (K,), got {tuple(np.shape(value))}")


# ---------------------------------------------------------------------------------------------------------
# Hessians
# ---------------------------------------------------------------------------------------------------------


def _sym_ok(a: Any, tol: float) -> Any:
    xp = np if isinstance(a, np.ndarray) else jnp
    a = a.astype(np.float64) if xp is np else a
    return xp.max(xp.abs(a - a.T)) <= tol * xp.max(xp.abs(a))


def cholesky_ok(a: Any, shift: float) -> Any:
    """Cholesky of ``a + shift * max(diag a) * I`` exists (float64 NumPy eagerly, the compute dtype traced); a
    zero ``a`` passes when ``shift`` > 0 (semidefinite) and fails otherwise."""
    if isinstance(a, np.ndarray):
        a = a.astype(np.float64)
        top = float(np.max(np.diag(a)))
        if top <= 0:
            return np.asarray(shift > 0 and not np.any(a))
        try:
            np.linalg.cholesky((a + a.T) / 2 + shift * top * np.eye(a.shape[0]))
        except np.linalg.LinAlgError:
            return np.asarray(False)
        return np.asarray(True)
    peak = jnp.max(jnp.diag(a))
    s = (a + a.T) / 2 + shift * jnp.maximum(peak, 0.0) * jnp.eye(a.shape[0], dtype=a.dtype)
    ok = jnp.all(jnp.isfinite(jnp.linalg.cholesky(s))) & (peak > 0)
    return (ok | ~jnp.any(a != 0)) if shift > 0 else ok


def eig_range(a: np.ndarray) -> str:
    e = np.linalg.eigvalsh((a.astype(np.float64) + a.T.astype(np.float64)) / 2)
    return f"eigenvalues in [{e[0]:.3g}, {e[-1]:.3g}]"


def hessian(name: str, h: Any, d: int | None, *, definite: str | None = "definite", why: str = "") -> None:
    """``h``: a finite real (d, d) array (any d when ``d`` is None) and, unless ``definite`` is None, symmetric to
    ``sqrt(eps)`` relative and ``definite`` = "definite" (Cholesky of ``h - 8 eps max(diag h) I`` exists: not
    singular, not indefinite), "semidefinite" (of ``h + 8 eps max(diag h) I``: eigenvalues >= about
    -8 eps max(diag h)) or "symmetric" (symmetric only)."""
    array(name, h, ndim=2)
    shp = tuple(np.shape(h))
    if shp[0] != shp[1]:
        raise ValueError(f"{name} must be square (d, d), got shape {shp}")
    if d is not None and shp != (d, d):
        raise ValueError(f"{name} must have shape ({d}, {d}){why}, got {shp}")
    if definite is None:
        return
    eps = eps_of(h)
    tol = math.sqrt(eps)
    sym_req = f"symmetric (max |{name} - {name}^T| <= {tol:.2g} max |{name}|)"
    c = concrete(h)
    if c is not None:
        a = c.astype(np.float64)
        if not bool(_sym_ok(a, tol)):
            r = float(np.max(np.abs(a - a.T)) / np.max(np.abs(a)))
            raise ValueError(f"{name} must be {sym_req}, got max |{name} - {name}^T| / max |{name}| = {r:.3g}")
    else:
        v.check(name, h, lambda a: _sym_ok(a, tol), sym_req)
    if definite == "symmetric":
        return
    shift = -DEF_EPS * eps if definite == "definite" else DEF_EPS * eps
    req = (
        f"positive definite (Cholesky of {name} - {DEF_EPS * eps:.2g} max(diag {name}) I exists: not singular or "
        f"indefinite; damp it, e.g. damp({name}, 0.01), or pass damping > 0 to proxy_hessian)"
        if definite == "definite"
        else f"positive semidefinite (eigenvalues >= -{DEF_EPS * eps:.2g} max(diag {name}))"
    )
    if c is not None:
        if not bool(cholesky_ok(c, shift)):
            raise ValueError(f"{name} must be {req}, got {eig_range(c)}")
    else:
        v.check(name, h, lambda a: cholesky_ok(a, shift), req)


# ---------------------------------------------------------------------------------------------------------
# Exact power-of-two rescaling
# ---------------------------------------------------------------------------------------------------------


def pow2_exponent(amax: float, safe: int) -> int:
    """0 when ``amax`` is 0 or in [2^-safe, 2^safe]; else the exponent e with ``amax * 2^-e`` in [0.5, 1)."""
    if amax == 0 or not math.isfinite(amax) or 2.0**-safe <= amax <= 2.0**safe:
        return 0
    return math.frexp(amax)[1]


def hessian_exponent(h: Any) -> int:
    """k such that ``h * 4^-k`` has its largest diagonal entry in the safe range (0 inside it or when traced)."""
    c = concrete(h)
    if c is None:
        return 0
    e = pow2_exponent(float(np.max(np.abs(np.diag(c)))), H_SAFE)
    return e // 2


def times_pow2(x: jax.Array, e: int) -> jax.Array:
    """``x * 2^e`` exactly (``e`` = 0: ``x`` itself), in steps of at most 2^60 so that every factor is a normal
    number of ``x``'s dtype."""
    while e != 0:
        step = max(-60, min(60, e))
        x = x * jnp.asarray(2.0**step, x.dtype)
        e -= step
    return x
