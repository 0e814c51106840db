"""The opt-in checkify path shared by the theory checks (jax only, importable from any package).

A switch says "checks of traced values are wanted"; :func:`checked` switches it on while
``jax.experimental.checkify`` traces a function, so every check a library function makes on a traced value
becomes a ``checkify.check``; the wrapper turns a failed check back into the ``ValueError`` an eager call
raises. Outside :func:`checked` nothing is added to a traced program (plain ``jit`` stays as fast as before).

The switch is a jax config state that is part of the trace context, so a function jitted outside
:func:`checked` is traced again inside it and the other way round; the checks are emitted with
``debug=True`` as well (dropped, not an error, should one ever run outside ``checkify``). Library code still
validates in its public (non-jitted) wrapper and calls jitted private functions that do no value checks.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
from collections.abc import Callable
from typing import Any

import jax
from jax.experimental import checkify

try:  # a jax config state that is part of the trace context: a function jitted outside checked() is
    # re-traced inside it (and vice versa), so its checks are neither missing there nor leaked out of it
    from jax._src import config as _jax_config

    _STATE: Any = _jax_config.bool_state(
        "workbench_checks_on_traced",
        False,
        "Emit input checks of traced values as checkify checks (set by theory.checking.checked).",
        include_in_trace_context=True,
    )
except Exception:  # pragma: no cover - private API moved: a context variable (jit caches then not keyed on it)
    _STATE = None
_CHECKED = contextvars.ContextVar("theory_checked", default=False)


def checking_traced() -> bool:
    """True while :func:`checked` traces a function (traced values are then checked with checkify)."""
    return bool(_STATE.value) if _STATE is not None else _CHECKED.get()


@contextlib.contextmanager
def checks_on():
    """Context in which checks of traced values are emitted as ``checkify`` checks."""
    if _STATE is not None:
        with _STATE(True):
            yield
        return
    tok = _CHECKED.set(True)
    try:
        yield
    finally:
        _CHECKED.reset(tok)


def emit(ok, msg: str, *fmt_args) -> None:
    """A ``checkify`` check of a traced ``ok``. ``debug=True``: should a jaxpr holding it ever run outside
    ``checkify`` (a cache shared across the switch), the check is dropped instead of failing to lower."""
    checkify.check(ok, msg, *fmt_args, debug=True)


def _name(fn: Callable) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


def checked(fn: Callable, *, jit: bool = True) -> Callable:
    """``fn`` with the value checks of every theory function it calls active for traced values.

    ``checked(f)(*args)`` traces ``f`` with ``jax.experimental.checkify`` (and ``jax.jit`` unless
    ``jit=False``) and raises the same ``ValueError`` an eager call raises (``lr`` negative, a NaN start, a
    deadline before its release...), naming the parameter. Static arguments of ``f`` must be closed over
    (``checked(partial(f, steps=10))``), as with ``jax.jit``. Costs one traced boolean per check.

    Example::

        from jaxwb.theory import checked, river_valley as rv
        checked(rv.gd_threshold)(-1.0)   # ValueError: lam must be > 0, got -1.0
    """

    def traced(*args, **kwargs):
        with checks_on():
            return fn(*args, **kwargs)

    cf = checkify.checkify(traced, errors=checkify.user_checks)
    if jit:
        cf = jax.jit(cf)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with checks_on():
            try:
                err, out = cf(*args, **kwargs)
            except ValueError as e:
                if "batched while-loops" not in str(e):
                    raise
                raise ValueError(
                    f"fn must not be a jax.vmap of a function with a while loop (checked({_name(fn)}) traces it "
                    "with checkify, which cannot check batched while loops): call the eager jax.vmap(f)(...), "
                    "whose batched values are checked member by member, or checked(f) once per member"
                ) from None
        msg = err.get()
        if msg is not None:
            raise ValueError(re.sub(r"\s*\((`check` failed|check failed at).*$", "", msg, flags=re.S))
        return out

    return wrapper
