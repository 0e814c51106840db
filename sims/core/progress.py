"""Progress display: only on a terminal (``WORKBENCH_PROGRESS`` forces it on or off)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence


def progress_enabled() -> bool:
    """Progress bars only on a terminal: ``WORKBENCH_PROGRESS=1`` forces them on, ``=0`` off."""
    env = os.environ.get("WORKBENCH_PROGRESS", "").strip()
    if env:
        return env not in ("0", "false", "no", "off")
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class Phases:
    """A one-line tqdm bar over the phases of a run (run -> claims -> plot -> write) whose elapsed time ticks
    every second, so a long ``run`` shows it is alive. Disabled when stderr is not a terminal."""

    def __init__(self, name: str, phases: Sequence[str], enabled: bool | None = None, profile=None):
        self.enabled = progress_enabled() if enabled is None else enabled
        self.profile = profile  # a jaxwb.sims.core.profiling.Profile, told when each phase starts and ends
        self.bar = None
        self._stop = None
        if not self.enabled:
            return
        import threading

        from tqdm.auto import tqdm

        self.bar = bar = tqdm(
            total=len(phases),
            desc=name,
            unit="phase",
            leave=False,
            bar_format="{desc}: {n_fmt}/{total_fmt} phases [{elapsed}]{postfix}",
        )
        self._stop = stop = threading.Event()

        def tick():
            while not stop.wait(1.0):
                bar.refresh()

        threading.Thread(target=tick, daemon=True).start()

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

    def close(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self.bar is not None:
            self.bar.close()
            self.bar = None
