"""Pure JAX theory: closed forms, bounds, estimators, fixed-point solvers and algorithms.

Nothing here does I/O or plotting, and nothing here imports ``sims``. Each result lives in its own module
(``theory.river_valley``, ...); shared input checks live in ``theory._validate``.
"""

from theory._validate import checked

__all__ = ["checked"]
