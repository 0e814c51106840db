"""One implementation resolver and one set of input checks for every public kernel op.

``implementation``:
  * ``None``: the best implementation that accepts these inputs on this platform: the Pallas kernel on GPU/TPU
    when the op's shape constraints hold (``pallas_ok``) and no hardware measurement found the XLA path faster
    for such inputs (``prefer_xla``, see :data:`MEASURED_XLA_FASTER`), otherwise the XLA path. ``None`` never
    raises for a valid input just because the kernel cannot take it.
  * ``"xla"``: the pure-jnp path (the reference, or a faster XLA formulation with the same numerics).
  * ``"pallas"``: the kernel for ``backend`` (default: the current platform); raises if it cannot run there
    or cannot take these shapes.
  * ``"interpret"``: the Pallas kernel run by the interpreter, on any platform (how kernels are checked on CPU).

Input checks (:func:`require` and the ``check_*`` helpers) raise ``ValueError`` naming the argument. Checks of
values (finiteness, index ranges) run eagerly on concrete arrays, also under ``jax.grad``/``vjp``/``jvp`` and
``jax.vmap`` of an eager call (on the concrete value behind the tracer, :func:`concrete`); under ``jit`` they are
skipped, unless the call runs inside :func:`checked` (``jax.experimental.checkify``), which raises the *same*
``ValueError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

# the opt-in checkify path is theory's (jax only): one switch, part of the jit trace context, and one `checked`
# that turns on the checks of both packages
from jaxwb.theory.checking import checked, checking_traced, emit  # noqa: F401 (checked: re-exported)

Implementation = Literal["xla", "pallas", "interpret"] | None
IMPLEMENTATIONS = (None, "xla", "pallas", "interpret")
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


BACKENDS = ("cpu", "gpu", "tpu", "cuda", "rocm")


def platform(backend: str | None = None) -> str:
    """``backend`` (or the default backend) as "cpu", "gpu" or "tpu"; another name raises ``ValueError``."""
    if backend is not None and (not isinstance(backend, str) or backend.lower() not in BACKENDS):
        raise ValueError(f"backend must be None or one of {BACKENDS}, got {backend!r}")
    b = (backend or jax.default_backend()).lower()
    return {"cuda": "gpu", "rocm": "gpu"}.get(b, b)


def has_devices(plat: str) -> bool:
    """Whether jax has devices of platform ``plat`` ("cpu", "gpu", "tpu") in this process."""
    try:
        return len(jax.devices(plat)) > 0
    except RuntimeError:
        return False


class Measured(NamedTuple):
    """One :data:`MEASURED_XLA_FASTER` entry: on ``platform``, where ``holds(**facts)`` (``when`` in words), the
    XLA path measured faster (``measurement``)."""

    platform: str
    when: str
    measurement: str
    holds: Callable[..., bool]


FWHT_GPU_MAX_D = 4096

# Where a hardware run measured the XLA path faster than the Pallas kernel (or the kernel did not finish
# compiling), ``implementation=None`` picks XLA there; ``"pallas"`` still runs the kernel. One table, read by
# the ops (:func:`xla_measured_faster`), the README and the tests: the condition lives only here.
MEASURED_XLA_FASTER = {
    "fwht": Measured(
        "gpu",
        f"d > {FWHT_GPU_MAX_D}",
        "H200, jax 0.11.2, 2026-12-04: the Kronecker kernel's Triton compile at d = 16384 did not finish within a "
        "200 s step (twice); XLA's FWHT took 1.0 ms on 2048 x 16384 float32",
        lambda d: d > FWHT_GPU_MAX_D,
    ),
    "fp4_matmul": Measured(
        "gpu",
        "M = 1",
        "H200, 2026-12-04, N = K = 16384 NVFP4: XLA 288 us vs the kernel's best 368 us at M = 1; at M = 16 the "
        "kernel was faster (356 us vs 967 us). Both are 2.2x+ a bf16 dense matmul's 160 us",
        lambda rows: rows == 1,
    ),
    "razer_activation_quantize": Measured(
        "gpu",
        "always",
        "H200, 2026-12-04: 259 us vs XLA's 220 us on 8192^2 bf16 (the kernel evaluates every candidate scale's "
        "error per element)",
        lambda **_: True,
    ),
}


def xla_measured_faster(op: str, **facts) -> Callable[[str], bool]:
    """``prefer_xla`` for ``op`` with these input facts (e.g. ``d=``, ``rows=``): True on the platform of its
    :data:`MEASURED_XLA_FASTER` entry where the entry's condition holds; never for an op without one."""
    entry = MEASURED_XLA_FASTER.get(op)
    return lambda p: entry is not None and p == entry.platform and entry.holds(**facts)


def resolve(
    implementation: Implementation,
    *,
    backend: str | None = None,
    pallas_ok: bool | Callable[[str], str | None] = True,
    prefer_xla: Callable[[str], bool] | None = None,
    inputs: tuple = (),
) -> tuple[str, str]:
    """-> (implementation in {"xla", "pallas", "interpret"}, kernel platform in {"cpu", "gpu", "tpu"}).

    ``pallas_ok``: True, or a function ``platform -> None`` (the kernel accepts the inputs) or an error string
    (why it does not). With ``implementation=None`` a refusal falls back to "xla"; with ``"pallas"`` or
    ``"interpret"`` it raises ``ValueError(reason)``. The platform returned for "interpret" is "gpu" (the
    interpreter runs the GPU form of the kernel). ``prefer_xla``: a function ``platform -> bool``, True where
    a measurement found the XLA path faster for these inputs (:data:`MEASURED_XLA_FASTER`); it only changes
    what ``None`` picks.

    ``backend`` names the platform to compile for (lowering for another platform, ``jax.jit(f).lower``, is
    fine); when the call runs (some of ``inputs`` have a concrete value: eager, or ``grad``/``vmap`` of an
    eager call) on a platform with no device here, it raises ``ValueError`` naming ``backend``.
    """
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {implementation!r}")
    plat = platform(backend)
    if (
        backend is not None
        and implementation != "interpret"
        and any(concrete(x) is not None for x in inputs)
        and not has_devices(plat)
    ):
        raise ValueError(
            f"backend={backend!r}: jax has no {plat} device here (default backend {jax.default_backend()!r}); "
            "pass backend only to run on, or lower for, that platform"
        )

    def refusal(p: str) -> str | None:
        if isinstance(pallas_ok, bool):
            return None if pallas_ok else "the Pallas kernel cannot take these inputs"
        return pallas_ok(p)

    if implementation is None:
        if plat in ("gpu", "tpu") and refusal(plat) is None and not (prefer_xla is not None and prefer_xla(plat)):
            return "pallas", plat
        return "xla", plat
    if implementation == "xla":
        return "xla", plat
    if implementation == "pallas" and plat not in ("gpu", "tpu"):
        raise ValueError(
            f"implementation='pallas' needs backend 'gpu' or 'tpu' (got {plat!r}); "
            "use implementation='interpret' on CPU"
        )
    kplat = "gpu" if implementation == "interpret" else plat
    why = refusal(kplat)
    if why is not None:
        raise ValueError(why)
    return implementation, kplat


# ---------------------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------------------


def is_traced(x) -> bool:
    """True for a ``jax.core.Tracer`` (under ``jit``, ``grad``, ``vmap``, ...)."""
    return isinstance(x, jax.core.Tracer)


def concrete(x):
    """The concrete value behind ``x``, or None when there is none (under ``jit``: abstract).

    ``x`` itself when it is not traced. Under ``jax.grad`` / ``jax.vjp`` (``LinearizeTracer``) or ``jax.jvp``
    (``JVPTracer``) of an eager call, the primal (``.primal``, unwrapped recursively: ``grad(grad(f))``).
    Under ``jax.vmap`` of an eager call, the batched value (``.val``: every batch element; the batch axis is
    somewhere in it, which the value checks here, finiteness and ranges, do not depend on). So ``grad`` and
    ``vmap`` of an eager call check the values an eager call checks."""
    while is_traced(x):
        nxt = getattr(x, "primal", None)
        if nxt is None and getattr(x, "batch_dim", None) is not None:
            nxt = getattr(x, "val", None)
        if nxt is None:
            return None
        x = nxt
    return x


def checkify_enabled() -> bool:
    return checking_traced()


def _fmt(a):
    """A message argument: a Python scalar, or a list for a batched (``vmap``) value."""
    a = np.asarray(a)
    return a.item() if a.size == 1 else a.tolist()


def require(ok, msg: str, *fmt_args) -> None:
    """Raise ``ValueError(msg.format(*fmt_args))`` unless ``ok``.

    ``ok`` is a Python bool or a boolean array. A traced ``ok`` with a concrete value behind it (``grad`` or
    ``vmap`` of an eager call, :func:`concrete`) is checked like an eager one; one without (under ``jit``)
    becomes a ``checkify.check`` inside :func:`checked` (same message) and is skipped otherwise."""
    if isinstance(ok, (bool, np.bool_)):
        if not ok:
            raise ValueError(msg.format(*(_fmt(a) for a in fmt_args)))
        return
    values = [concrete(a) for a in (ok, *fmt_args)]
    if any(v is None for v in values):
        if checking_traced():
            emit(jnp.all(ok), msg, *fmt_args)
        return
    if not bool(np.all(np.asarray(values[0]))):
        raise ValueError(msg.format(*(_fmt(a) for a in values[1:])))


def check_array(
    name: str,
    x,
    *,
    ndim: int | tuple[int, ...] | None = None,
    min_ndim: int | None = None,
    dtypes: tuple[str, ...] = FLOAT_DTYPES,
    allow_empty: bool = False,
) -> None:
    """Static checks: a floating (or ``dtypes``) array of the right rank, non-empty. Complex and integer
    dtypes are rejected by name."""
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        if isinstance(x, (list, tuple, int, float, np.number)):
            x = np.asarray(x)
        else:
            raise ValueError(f"{name} must be an array, got {type(x).__name__}")
    dt = jnp.dtype(x.dtype)
    if dt.name not in dtypes:
        kind = (
            "complex"
            if jnp.issubdtype(dt, jnp.complexfloating)
            else (
                "integer"
                if jnp.issubdtype(dt, jnp.integer)
                else ("boolean" if dt == jnp.bool_ else ("floating" if jnp.issubdtype(dt, jnp.floating) else "other"))
            )
        )
        what = (
            "a floating-point array"
            if dtypes == FLOAT_DTYPES or all("float" in d for d in dtypes)
            else ("an integer array" if all("int" in d for d in dtypes) else "an array")
        )
        raise ValueError(f"{name} must be {what} with dtype in {dtypes}, got {kind} dtype {dt.name}")
    nd = len(x.shape)
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if nd not in allowed:
            raise ValueError(f"{name} must have rank {' or '.join(map(str, allowed))}, got shape {tuple(x.shape)}")
    if min_ndim is not None and nd < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} axis/axes, got shape {tuple(x.shape)}")
    if not allow_empty and 0 in tuple(x.shape):
        raise ValueError(f"{name} must be non-empty, got shape {tuple(x.shape)}")


def check_finite(name: str, x, why: str = "") -> None:
    """No inf/nan in ``x``: eager, under ``grad``/``vjp``/``jvp``/``vmap`` of an eager call (on the concrete
    value, :func:`concrete`), and under ``jit`` inside :func:`checked`."""
    c = concrete(x)
    if c is None:
        if checking_traced():
            bad = jnp.sum(~jnp.isfinite(jnp.asarray(x))).astype(jnp.int32)
            emit(bad == 0, f"{name} contains {{}} non-finite value(s) (inf/nan){why}", bad)
        return
    a = np.asarray(jnp.asarray(c).astype(jnp.float32) if jnp.dtype(c.dtype) == jnp.bfloat16 else c)
    nonfinite = ~np.isfinite(a)
    if nonfinite.any():
        raise ValueError(f"{name} contains {int(nonfinite.sum())} non-finite value(s) (inf/nan){why}")


def check_finite_output(out, msg: str, *fmt_args) -> None:
    """With finite inputs (checked before the computation), a non-finite output can only come from an
    overflow: raise ``ValueError(msg.format(n_bad, *fmt_args))`` where ``n_bad`` counts the inf/nan values of
    ``out``. Eager, under ``grad``/``vjp``/``jvp``/``vmap`` of an eager call (:func:`concrete`), and under
    ``jit`` inside :func:`checked`; skipped under a plain ``jit``."""
    if concrete(out) is None and not checkify_enabled():
        return
    bad = jnp.sum(~jnp.isfinite(out)).astype(jnp.int32)
    require(bad == 0, msg, bad, *fmt_args)


def max_abs(x):
    """``max |x|`` as a float32 scalar (a message argument)."""
    return jnp.max(jnp.abs(jnp.asarray(x))).astype(jnp.float32)


def pow2(e):
    """``2.0 ** e`` (float32, exact) for an int32 ``e`` in [-126, 127], from the exponent bits."""
    e = jnp.asarray(e, jnp.int32)
    return jax.lax.bitcast_convert_type(((e + 127) << 23).astype(jnp.uint32), jnp.float32)


def check_block(name: str, value, *, pow2: bool = False, minimum: int = 1) -> None:
    """A block size: a positive integer (a power of two if ``pow2``) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if pow2 and value & (value - 1):
        raise ValueError(f"{name} must be a power of two, got {value}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


def check_range(name: str, x, lo: int, hi: int) -> None:
    """Integer entries of ``x`` lie in ``[lo, hi)``: eager, under ``grad``/``vmap`` of an eager call
    (:func:`concrete`), and under ``jit`` inside :func:`checked`."""
    if x.size == 0:
        return
    msg = f"{name} must lie in [{lo}, {hi}), got range [{{}}, {{}}]"
    c = concrete(x)
    if c is None:
        if checking_traced():
            mn, mx = jnp.min(x), jnp.max(x)
            emit((mn >= lo) & (mx < hi), msg, mn, mx)
        return
    a = np.asarray(c)
    if a.min() < lo or a.max() >= hi:
        raise ValueError(msg.format(a.min(), a.max()))
