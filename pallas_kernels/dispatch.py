"""One implementation resolver and one set of input checks for every public kernel op.

``implementation`` (the backend named, as tokamax names them):
  * ``None``: the best implementation that accepts these inputs on this platform: on a GPU the op's Triton
    kernel, on a TPU its Mosaic TPU kernel, when that kernel accepts the shapes, unless a hardware measurement
    (:data:`MEASURED`, keyed by (op, backend)) found another implementation faster for such inputs (the XLA
    path, or the Mosaic GPU kernel over Triton), and the XLA path on a CPU or where no kernel accepts the
    shapes. ``None`` never raises for a valid input just because a kernel cannot take it.
  * ``"xla"``: the pure-jnp path (the reference, or a faster XLA formulation with the same numerics).
  * ``"triton"``, ``"mosaic_gpu"``: the Pallas kernel compiled by Triton / Mosaic GPU (a GPU; Mosaic GPU only
    for the attention ops); ``"mosaic_tpu"``: the Pallas kernel compiled by Mosaic for a TPU. Raises
    ``ValueError`` (message starting "implementation") on another platform or for an op without that backend,
    and the kernel's own refusal where it cannot take the shapes.
  * ``"interpret"``: the GPU (Triton) form of the kernel run by the Pallas interpreter, on any platform (how
    kernels are checked on CPU).

The platform a call targets is ``backend`` (where the op takes one), else the platform of the abstract mesh
being traced under (``jax.sharding.use_abstract_mesh``: how a CPU host lowers an op for CUDA or TPU), else
jax's default backend. A kernel backend on a platform with no device here raises when the call would run
(concrete inputs); under a trace it lowers (``jax.jit(f).trace(...).lower(lowering_platforms=...)``).

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

Implementation = Literal["xla", "triton", "mosaic_gpu", "mosaic_tpu", "interpret"] | None
IMPLEMENTATIONS = (None, "xla", "triton", "mosaic_gpu", "mosaic_tpu", "interpret")
KERNEL_BACKENDS = ("triton", "mosaic_gpu", "mosaic_tpu")  # each compiles for one platform:
BACKEND_PLATFORM = {"triton": "gpu", "mosaic_gpu": "gpu", "mosaic_tpu": "tpu"}
DEFAULT_BACKEND = {"gpu": "triton", "tpu": "mosaic_tpu"}  # None's first choice on each accelerator
QUANT_BACKENDS = ("triton", "mosaic_tpu")  # every op's kernels; the attention ops add "mosaic_gpu"
ATTENTION_BACKENDS = ("triton", "mosaic_gpu", "mosaic_tpu")
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


BACKENDS = ("cpu", "gpu", "tpu", "cuda", "rocm")


def platform(backend: str | None = None) -> str:
    """``backend`` (or the default backend) as "cpu", "gpu" or "tpu"; another name raises ``ValueError``."""
    if backend is not None and (not isinstance(backend, str) or backend.lower() not in BACKENDS):
        raise ValueError(f"backend must be None or one of {BACKENDS}, got {backend!r}")
    b = (backend or jax.default_backend()).lower()
    return {"cuda": "gpu", "rocm": "gpu"}.get(b, b)


def traced_platform() -> str | None:
    """The platform ("gpu", "tpu", "cpu") of the abstract mesh the current trace runs under, if it names one
    (``jax.sharding.use_abstract_mesh`` with an ``AbstractDevice``), else None."""
    try:
        dev = getattr(jax.sharding.get_abstract_mesh(), "abstract_device", None)
    except Exception:  # an older jax without abstract meshes
        return None
    plat = getattr(dev, "platform", None)
    return None if plat is None else platform(str(plat)) if str(plat).lower() in BACKENDS else None


def target_platform(backend: str | None = None) -> str:
    """The platform a call compiles for: ``backend``, else :func:`traced_platform`, else the default backend."""
    if backend is not None:
        return platform(backend)
    return traced_platform() or platform(None)


def has_devices(plat: str) -> bool:
    """Whether jax has devices of platform ``plat`` ("cpu", "gpu", "tpu") in this process."""
    try:
        return len(jax.devices(plat)) > 0
    except RuntimeError:
        return False


class Measured(NamedTuple):
    """One :data:`MEASURED` entry for (op, backend): on ``platform``, where ``holds(**facts)`` (``when`` in
    words), ``faster`` (the XLA path or another backend) measured faster than ``backend`` (``measurement``)."""

    platform: str
    faster: str
    when: str
    measurement: str
    holds: Callable[..., bool]


FWHT_GPU_MAX_D = 4096
MOSAIC_MEASURED_MIN_L = 4096  # the Mosaic GPU attention kernels were measured at L = 4K-16K (bf16, D = 128)

# Where a hardware run measured another implementation faster than an op's backend, ``implementation=None``
# picks it there (``"triton"`` etc. still run what they name). One table, keyed by (op, backend), read by the
# ops (through :func:`resolve`), the docs and the tests: each condition lives only here. The facts each op
# passes: fwht ``d``; fp4_matmul ``rows``; the attention ops ``dtype``, ``head_dim``, ``length``.
MEASURED: dict[tuple[str, str], Measured] = {
    ("fwht", "triton"): Measured(
        "gpu",
        "xla",
        f"d > {FWHT_GPU_MAX_D}",
        "H200, jax 0.11.2, 2026-12-04: the Kronecker kernel's Triton compile at d = 16384 did not finish within a "
        "200 s step (twice); XLA's FWHT took 1.0 ms on 2048 x 16384 float32",
        lambda d, **_: d > FWHT_GPU_MAX_D,
    ),
    ("fp4_matmul", "triton"): Measured(
        "gpu",
        "xla",
        "M = 1",
        "H200, 2026-12-04, N = K = 16384 NVFP4: XLA 288 us vs the kernel's best 368 us at M = 1; at M = 16 the "
        "kernel was faster (356 us vs 967 us). Both are 2.2x+ a bf16 dense matmul's 160 us",
        lambda rows, **_: rows == 1,
    ),
    ("razer_activation_quantize", "triton"): Measured(
        "gpu",
        "xla",
        "always",
        "H200, 2026-12-04: 259 us vs XLA's 220 us on 8192^2 bf16 (the kernel evaluates every candidate scale's "
        "error per element)",
        lambda **_: True,
    ),
    ("flash_attention", "triton"): Measured(
        "gpu",
        "mosaic_gpu",
        f"bfloat16, head_dim 128, L >= {MOSAIC_MEASURED_MIN_L}",
        "H200, jax 0.11.2, 2026-12-04, B1 H16 D128 bf16: Mosaic GPU 450 / 503 / 511 TFLOP/s vs Triton 306 / 347 / "
        "368 at L = 4K / 8K / 16K",
        lambda dtype, head_dim, length, **_: dtype == "bfloat16" and head_dim == 128 and length >= 4096,
    ),
    ("block_sparse_attention", "triton"): Measured(
        "gpu",
        "mosaic_gpu",
        f"bfloat16, head_dim 128, L >= {MOSAIC_MEASURED_MIN_L}",
        "H200, jax 0.11.2, 2026-12-04, B1 H16 D128 bf16, s = 0.5-0.95: Mosaic GPU 131-384 TFLOP/s vs Triton "
        "74-259 at L = 4K-16K (1.5-1.9x at every measured point)",
        lambda dtype, head_dim, length, **_: dtype == "bfloat16" and head_dim == 128 and length >= 4096,
    ),
}


def measured_choice(op: str, plat: str, backends: tuple[str, ...], refusal, facts: dict) -> str:
    """What ``implementation=None`` runs for ``op`` on ``plat``: the platform's default backend (Triton on a
    GPU, Mosaic on a TPU) when the op has it and it accepts the inputs, then, while :data:`MEASURED` holds an
    entry for (op, that backend) on this platform whose condition holds, the implementation it found faster
    (if that is a kernel, only where it accepts the inputs); "xla" on a CPU or where the kernel refuses."""
    cand = DEFAULT_BACKEND.get(plat)
    if cand is None or cand not in backends or refusal(cand) is not None:
        return "xla"
    seen = set()
    while cand != "xla" and cand not in seen:
        seen.add(cand)
        m = MEASURED.get((op, cand))
        if m is None or m.platform != plat or not m.holds(**facts):
            break
        if m.faster != "xla" and (m.faster not in backends or refusal(m.faster) is not None):
            break
        cand = m.faster
    return cand


def check_implementation(implementation, op: str, backends: tuple[str, ...]) -> None:
    """``implementation`` is a name this op knows (None, "xla", "interpret" or one of its ``backends``);
    otherwise ``ValueError`` starting "implementation". "pallas" (the old name) says what replaced it."""
    accepted = (None, "xla", *backends, "interpret")
    if implementation == "pallas":
        raise ValueError(
            "implementation='pallas' is no longer a name: name the backend, 'triton' or 'mosaic_gpu' on a GPU, "
            f"'mosaic_tpu' on a TPU, 'interpret' on a CPU ({op} accepts {accepted})"
        )
    if implementation in KERNEL_BACKENDS and implementation not in backends:
        raise ValueError(f"implementation={implementation!r} is not a backend of {op}: it accepts {accepted}")
    if implementation not in accepted:
        raise ValueError(f"implementation must be one of {accepted} for {op}, got {implementation!r}")


def resolve(
    implementation: Implementation,
    *,
    op: str,
    backends: tuple[str, ...] = QUANT_BACKENDS,
    backend: str | None = None,
    refusal: Callable[[str], str | None] | None = None,
    facts: dict | None = None,
    inputs: tuple = (),
) -> tuple[str, str]:
    """-> (implementation in {"xla", "triton", "mosaic_gpu", "mosaic_tpu", "interpret"}, kernel platform in
    {"cpu", "gpu", "tpu"}).

    ``op`` names the op (messages, :data:`MEASURED`); ``backends`` its kernel backends. ``refusal(backend)``:
    None when that backend's kernel accepts the inputs, else why not (a sentence naming the parameter); a
    named backend (or "interpret", which runs the Triton form) then raises ``ValueError(reason)`` and ``None``
    falls back. ``facts``: the inputs' properties :data:`MEASURED`'s conditions read. The platform returned for
    "interpret" is "gpu" (the interpreter runs the GPU form of the kernel), for "xla" the target platform.

    A named backend whose platform is not the call's target platform (:func:`target_platform`) raises
    ``ValueError`` starting "implementation"; so does a kernel backend on a platform with no device here when
    the call would run (some of ``inputs`` concrete). ``backend`` given for a platform with no device here
    raises the same way for every implementation but "interpret"."""
    check_implementation(implementation, op, backends)
    plat = target_platform(backend)
    refuse = refusal or (lambda b: None)
    running = any(concrete(x) is not None for x in inputs)
    if backend is not None and implementation != "interpret" and running and not has_devices(plat):
        raise ValueError(
            f"backend={backend!r}: jax has no {plat} device here (default backend {jax.default_backend()!r}); "
            "pass backend only to run on, or lower for, that platform"
        )
    if implementation is None:
        if running and backend is None and not has_devices(plat):
            plat = platform(None)  # an eager call under an abstract mesh runs on this host's platform
        return measured_choice(op, plat, backends, refuse, facts or {}), plat
    if implementation == "xla":
        return "xla", plat
    if implementation == "interpret":
        why = refuse("triton")
        if why is not None:
            raise ValueError(why)
        return "interpret", "gpu"
    need = BACKEND_PLATFORM[implementation]
    if plat != need:
        raise ValueError(
            f"implementation={implementation!r} compiles for a {need.upper()}, but this call targets {plat!r}"
            + ("; on a CPU, implementation='interpret' runs the kernel's GPU form" if plat == "cpu" else "")
        )
    if running and not has_devices(need):
        raise ValueError(
            f"implementation={implementation!r} needs a {need} device to run, and jax has none here (default "
            f"backend {jax.default_backend()!r}); lower it for {need} under jax.jit instead"
        )
    why = refuse(implementation)
    if why is not None:
        raise ValueError(why)
    return implementation, need


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
