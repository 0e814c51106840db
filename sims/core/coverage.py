"""Claim coverage: every array a result's ``run`` returns feeds at least one claim, or the result declares it
display-only (``DISPLAY_ONLY`` in its ``config.py``: result paths such as ``"trajectories"`` or
``"speed/wall_s"``, a prefix covering everything under it), so nothing computed goes unchecked by accident.

:func:`claimed_paths` runs ``claims(results, cfg)`` on a copy of the results whose dicts and lists record every
item read; the committed full-preset data (``figures/<name>/data.npz``) is enough, no simulation is run.
:func:`only_expected_to_fail` finds the arrays that only claims expected to fail depend on.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import jax
import numpy as np


class _Recorder:
    def __init__(self) -> None:
        self.read: set[str] = set()


def _join(prefix: str, key: Any) -> str:
    return f"{prefix}/{key}" if prefix else str(key)


class TrackedDict(dict):
    """A dict that records the path of every item read (and hands out tracked children)."""

    def __init__(self, data: dict, path: str, rec: _Recorder):
        super().__init__({k: _track(v, _join(path, k), rec) for k, v in data.items()})
        self._path, self._rec = path, rec

    def __getitem__(self, key):
        value = super().__getitem__(key)
        self._rec.read.add(_join(self._path, key))
        return value

    def get(self, key, default=None):
        return self[key] if key in self else default

    def values(self):
        return [self[k] for k in self]

    def items(self):
        return [(k, self[k]) for k in self]

    def __iter__(self) -> Iterator:
        return iter(list(super().keys()))


class TrackedList(list):
    """A list that records the index of every item read."""

    def __init__(self, data: list, path: str, rec: _Recorder):
        super().__init__(_track(v, _join(path, i), rec) for i, v in enumerate(data))
        self._path, self._rec = path, rec

    def __getitem__(self, i):
        value = super().__getitem__(i)
        idx = range(len(self))[i]
        for j in idx if isinstance(idx, range) else [idx]:
            self._rec.read.add(_join(self._path, j))
        return value

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def _track(value: Any, path: str, rec: _Recorder) -> Any:
    if isinstance(value, dict):
        return TrackedDict(value, path, rec)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return TrackedList(list(value), path, rec)
    return value


def _unflatten(keys, children) -> Any:
    """A plain dict: what a tree map over tracked results builds is not read by a claim, so it is not tracked."""
    return dict(zip(keys, children, strict=True))


jax.tree_util.register_pytree_with_keys(
    TrackedDict, lambda d: ([(jax.tree_util.DictKey(k), d[k]) for k in sorted(d)], sorted(d)), _unflatten
)


def leaf_paths(results: Any) -> list[str]:
    """Every array's path in ``results`` (``"a/b/0"``), as :func:`jaxwb.sims.core.outputs.flatten_results` names
    them."""
    from jaxwb.sims.core.outputs import flatten_results

    return list(flatten_results(results))


def claimed_paths(module: ModuleType, results: Any, cfg) -> set[str]:
    """The paths read while ``module.claims(results, cfg)`` runs (a read of a node counts for that node only)."""
    rec = _Recorder()
    module.claims(_track(results, "", rec), cfg)
    return rec.read


def unclaimed(module: ModuleType, results: Any, cfg) -> list[str]:
    """Arrays of ``results`` that no claim reads and that ``module.DISPLAY_ONLY`` does not declare."""
    read = claimed_paths(module, results, cfg)
    display = tuple(getattr(module, "DISPLAY_ONLY", ()))

    def covered(path: str) -> bool:
        return path in read or any(path == d or path.startswith(d + "/") for d in display)

    return [p for p in leaf_paths(results) if not covered(p)]


# --- arrays only known disagreements read ------------------------------------------------------------------------
# A claim expected to fail fails whatever the array it reads holds, so a bug in an array that only such claims read
# would go unseen. Which claims an array feeds is measured, not read from the code: the array is perturbed (floats
# by a relative 1e-3 per element, booleans negated, integers moved by one; then a larger change) and the claims
# whose numbers or statement move depend on it.


def perturbations(x: np.ndarray) -> list[np.ndarray]:
    """Changes of one array that any claim reading it should see (tried in turn until one moves a claim)."""
    if x.dtype == bool:
        one = np.zeros(x.shape, bool)
        one.flat[:1] = True
        return [~x, x ^ one]
    if np.issubdtype(x.dtype, np.integer):
        return [x + 1, x - 1]
    if np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.complexfloating):
        u = np.random.default_rng(0).uniform(0.5, 1.5, x.shape)
        scale = np.nanmean(np.abs(x)) if np.isfinite(x).any() else 1.0
        return [x * (1 + 1e-3 * u) + 1e-3 * scale * u, x * 1.5 + scale]
    return []


def strongest(x: np.ndarray) -> np.ndarray:
    """The largest of :func:`perturbations` (a float array x 1.5 + its mean magnitude; a boolean one negated, an
    integer one + 1): a claim that some perturbation moves, this one moves too (all but surely)."""
    options = perturbations(x)
    return options[1] if np.issubdtype(x.dtype, np.inexact) else options[0]


def _signature(c) -> tuple:
    return (c.statement, c.measured, c.predicted, c.ci, c.tolerance, c.n_seeds, c.passed)


def _same(a: tuple, b: tuple) -> bool:
    return all((x == y) or (isinstance(x, float) and np.isnan(x) and np.isnan(y)) for x, y in zip(a, b, strict=True))


class _Perturber:
    """Evaluates a result's claims with some of its arrays changed and says which claims moved."""

    def __init__(self, module: ModuleType, results: Any, cfg) -> None:
        from jaxwb.sims.core.claims import evaluate
        from jaxwb.sims.core.outputs import flatten_results, results_layout

        self.module, self.cfg, self.evaluate = module, cfg, evaluate
        self.claims = evaluate(module, results, cfg)
        self.base = [_signature(c) for c in self.claims]
        self.flat, self.layout = flatten_results(results), results_layout(results)
        self.read = sorted(p for p in claimed_paths(module, results, cfg) if p in self.flat)

    def moved(self, changes: dict[str, np.ndarray]) -> set[int] | None:
        """Indices of the claims that change with ``changes``; None if the claims raise or change in number."""
        from jaxwb.sims.core.outputs import unflatten_results

        try:
            with np.errstate(all="ignore"):
                now = self.evaluate(self.module, unflatten_results({**self.flat, **changes}, self.layout), self.cfg)
        except Exception:  # a change the claims cannot take (an index out of range)
            return None
        if len(now) != len(self.base):
            return None
        return {i for i, (a, c) in enumerate(zip(self.base, now, strict=True)) if not _same(a, _signature(c))}

    def dependents(self, path: str) -> set[int] | None:
        """The claims the first perturbation of ``path`` that moves anything moves (empty: none moves; None: every
        perturbation raised or changed the number of claims)."""
        found: set[int] | None = None
        for changed in perturbations(np.asarray(self.flat[path])):
            moved = self.moved({path: changed})
            if moved is None:
                continue
            if moved:
                return moved
            found = set()
        return found

    def touching(self, claims: set[int], changes: dict[str, np.ndarray]) -> list[str]:
        """The paths of ``changes`` (path -> its strongest perturbation, :func:`strongest`) whose change moves one of
        ``claims``, by group testing: a group changed at once that moves none of them is cleared whole, one that
        does is split (so is one whose change raises)."""
        if not changes:
            return []
        moved = self.moved(changes)
        if moved is not None and not moved & claims:
            return []
        paths = list(changes)
        if len(paths) == 1:
            return paths
        mid = len(paths) // 2
        return self.touching(claims, {p: changes[p] for p in paths[:mid]}) + self.touching(
            claims, {p: changes[p] for p in paths[mid:]}
        )


def dependents(module: ModuleType, results: Any, cfg) -> dict[str, set[int] | None]:
    """For every array the claims read: the indices of the claims whose numbers or statement change when it is
    perturbed (None: every perturbation raised or changed the number of claims, so no claim is singled out). One
    evaluation of the claims per array and perturbation; :func:`only_expected_to_fail` needs far fewer."""
    pert = _Perturber(module, results, cfg)
    return {p: pert.dependents(p) for p in pert.read}


def only_expected_to_fail(module: ModuleType, results: Any, cfg) -> list[str]:
    """Arrays whose every dependent claim (:func:`dependents`) is expected to fail. Only arrays that move some
    expected-to-fail claim can qualify: they are found by group testing with each array's strongest perturbation
    (about log2(#arrays) evaluations per such array, none when no claim is expected to fail), then judged one by
    one."""
    pert = _Perturber(module, results, cfg)
    expected = {i for i, c in enumerate(pert.claims) if c.expected == "fail"}
    if not expected:
        return []
    arrays = {p: np.asarray(pert.flat[p]) for p in pert.read}
    candidates = pert.touching(expected, {p: strongest(a) for p, a in arrays.items() if perturbations(a)})
    bad = []
    for path in candidates:
        deps = pert.dependents(path)
        if deps and deps <= expected:
            bad.append(path)
    return bad
