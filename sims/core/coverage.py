"""Claim coverage: every array a result's ``run`` returns feeds at least one claim, or the result declares it
display-only (``DISPLAY_ONLY`` in its ``config.py``: result paths such as ``"trajectories"`` or
``"speed/wall_s"``, a prefix covering everything under it), so nothing computed goes unchecked by accident.

:func:`claimed_paths` runs ``claims(results, cfg)`` on a copy of the results whose dicts and lists record every
item read; the committed full-preset data (``figures/<name>/data.npz``) is enough, no simulation is run.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import jax


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


jax.tree_util.register_pytree_with_keys(
    TrackedDict,
    lambda d: ([(jax.tree_util.DictKey(k), d[k]) for k in sorted(d)], sorted(d)),
    lambda keys, children: dict(zip(keys, children, strict=True)),
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
