"""Pure JAX theory: closed forms, bounds, estimators, fixed-point solvers and algorithms.

Nothing here does I/O or plotting, and nothing here imports ``sims``. Each result lives in its own module
(``jaxwb.theory.river_valley``, ...); shared input checks live in ``jaxwb.theory.validate``.

Calling convention: PRNG keys are keyword-only (``f(x, *, key)``); shapes are in jaxtyping annotations; bad
inputs raise ``ValueError`` naming the parameter: eagerly, under ``jax.grad``/``vjp``/``jvp`` of an eager call
(the primal is checked) and under an eager ``jax.vmap`` (every member is checked). Under ``jit`` value checks
are skipped unless the call runs inside :func:`checked` (``jaxwb.theory.checked(fn)(*args)``), which raises the
same errors for traced values through ``jax.experimental.checkify``. The full policy, numeric edges included
(subnormals, overflow, complex), is in :mod:`jaxwb.theory.validate`.
"""

from jaxwb.theory.validate import checked

__all__ = ["checked"]
