"""Progress display: only on a terminal (``WORKBENCH_PROGRESS`` forces it on or off)."""

from __future__ import annotations

import math
import os
import statistics
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any


def progress_enabled() -> bool:
    """Progress bars only on a terminal: ``WORKBENCH_PROGRESS=1`` forces them on, ``=0`` off."""
    env = os.environ.get("WORKBENCH_PROGRESS", "").strip()
    if env:
        return env not in ("0", "false", "no", "off")
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class _Ticking:
    """A tqdm bar (``None`` when disabled) that :func:`ticking` refreshes every second until :meth:`close`."""

    bar: Any = None
    _stop: threading.Event | None = None

    def close(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class Phases(_Ticking):
    """A one-line tqdm bar over the phases of a run (run -> claims -> plot -> write) whose elapsed time ticks
    every second, so a long ``run`` shows it is alive. Disabled when stderr is not a terminal."""

    def __init__(self, name: str, phases: Sequence[str], enabled: bool | None = None, profile=None):
        self.enabled = progress_enabled() if enabled is None else enabled
        self.profile = profile  # a jaxwb.sims.core.profiling.Profile, told when each phase starts and ends
        if not self.enabled:
            return
        from tqdm.auto import tqdm

        self.bar = tqdm(
            total=len(phases),
            desc=name,
            unit="phase",
            leave=False,
            bar_format="{desc}: {n_fmt}/{total_fmt} phases [{elapsed}]{postfix}",
        )
        self._stop = ticking(self.bar)

    def start(self, phase: str) -> None:
        if self.profile is not None:
            self.profile.enter(phase)
        if self.bar is not None:
            self.bar.set_postfix_str(phase)

    def done(self) -> None:
        if self.profile is not None:
            self.profile.leave()
        if self.bar is not None:
            self.bar.update(1)


def ticking(bar) -> threading.Event:
    """Refresh ``bar`` every second (its elapsed time moves while nothing completes) until the returned event is
    set."""
    stop = threading.Event()

    def tick():
        while not stop.wait(1.0):
            bar.refresh()

    threading.Thread(target=tick, daemon=True).start()
    return stop


def result_weights(last_wall_s: Mapping[str, float]) -> dict[str, float]:
    """Each result's share of a ``workbench all`` bar: the wall time (s) of its last run, and for a result never run
    the mean of the others' (1 s each when none has run), so the remaining-time estimate is in the machine's own
    speed once the first result ends.

    >>> result_weights({"a": 10.0, "b": float("inf"), "c": 30.0})
    {'a': 10.0, 'b': 20.0, 'c': 30.0}
    """
    known = [w for w in last_wall_s.values() if math.isfinite(w) and w > 0]
    fill = statistics.fmean(known) if known else 1.0
    return {n: (w if math.isfinite(w) and w > 0 else fill) for n, w in last_wall_s.items()}


class ResultsBar(_Ticking):
    """One bar over the results of ``workbench all``: it advances by each result's :func:`result_weights` when the
    result ends and shows the results done, the elapsed time and the time left. Shown for two results or more,
    and only on a terminal (``WORKBENCH_PROGRESS`` as for :func:`progress_enabled`)."""

    def __init__(self, last_wall_s: Mapping[str, float], jobs: int = 1, enabled: bool | None = None, file=None):
        self.enabled = (progress_enabled() if enabled is None else enabled) and len(last_wall_s) > 1
        self.weights = result_weights(last_wall_s)
        self.n_done = 0
        self.name = "workbench all" + (f" ({jobs} at once)" if jobs > 1 else "")
        if not self.enabled:
            return
        from tqdm.auto import tqdm

        self.bar = tqdm(
            total=sum(self.weights.values()),
            desc=self._desc(),
            bar_format="{desc} [{elapsed}<{remaining}]",
            smoothing=0,
            file=file,
        )
        self._stop = ticking(self.bar)

    def _desc(self) -> str:
        return f"{self.name}: {self.n_done}/{len(self.weights)} results"

    def done(self, name: str) -> None:
        self.n_done += 1
        if self.bar is not None:
            self.bar.set_description_str(self._desc(), refresh=False)
            self.bar.update(self.weights[name])
