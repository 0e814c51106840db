"""Where a run's time goes: ``workbench run NAME --profile`` splits each phase (run, claims, plot, write) into
JAX's tracing, lowering and XLA compilation, and the rest (execution and Python), and counts the programs
compiled and the ones loaded from the persistent compilation cache.

The split comes from ``jax.monitoring``'s duration events (``/jax/core/compile/jaxpr_trace_duration``,
``.../jaxpr_to_mlir_module_duration``, ``.../backend_compile_duration``) and the cache-hit event; one listener is
registered on first use and feeds whichever :class:`Profile` is active.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator

import jax

DURATIONS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace_s",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
    "/jax/core/compile/backend_compile_duration": "compile_s",
}
CACHE_HIT = "/jax/compilation_cache/cache_hits"


@dataclasses.dataclass
class PhaseProfile:
    """One phase: wall time, the compile-side parts of it, and the programs compiled / loaded from the cache."""

    wall_s: float = 0.0
    trace_s: float = 0.0
    lower_s: float = 0.0
    compile_s: float = 0.0
    compiled: int = 0
    cache_hits: int = 0

    @property
    def rest_s(self) -> float:
        """Wall time not spent tracing, lowering or compiling: execution, data movement and Python."""
        return max(0.0, self.wall_s - self.trace_s - self.lower_s - self.compile_s)


@dataclasses.dataclass
class Profile:
    """Per-phase profiles of one run, in the order the phases ran."""

    phases: dict[str, PhaseProfile] = dataclasses.field(default_factory=dict)
    current: str | None = None
    _t0: float = 0.0

    def enter(self, phase: str) -> None:
        self.leave()
        self.current, self._t0 = phase, time.perf_counter()
        self.phases.setdefault(phase, PhaseProfile())

    def leave(self) -> None:
        if self.current is not None:
            self.phases[self.current].wall_s += time.perf_counter() - self._t0
            self.current = None

    def total(self) -> PhaseProfile:
        out = PhaseProfile()
        for p in self.phases.values():
            for f in dataclasses.fields(PhaseProfile):
                setattr(out, f.name, getattr(out, f.name) + getattr(p, f.name))
        return out

    def to_json(self) -> dict:
        return {name: {**dataclasses.asdict(p), "rest_s": p.rest_s} for name, p in self.phases.items()}


_ACTIVE: list[Profile] = []
_REGISTERED = False


def _on_duration(event: str, duration_secs: float, **_) -> None:
    field = DURATIONS.get(event)
    if field is None or not _ACTIVE or _ACTIVE[-1].current is None:
        return
    phase = _ACTIVE[-1].phases[_ACTIVE[-1].current]
    setattr(phase, field, getattr(phase, field) + duration_secs)
    if field == "compile_s":
        phase.compiled += 1


def _on_event(event: str, **_) -> None:
    if event == CACHE_HIT and _ACTIVE and _ACTIVE[-1].current is not None:
        _ACTIVE[-1].phases[_ACTIVE[-1].current].cache_hits += 1


@contextlib.contextmanager
def profiling() -> Iterator[Profile]:
    """A :class:`Profile` collecting JAX's compile events while the block runs (phases set by ``enter``)."""
    global _REGISTERED
    if not _REGISTERED:
        jax.monitoring.register_event_duration_secs_listener(_on_duration)
        jax.monitoring.register_event_listener(_on_event)
        _REGISTERED = True
    profile = Profile()
    _ACTIVE.append(profile)
    try:
        yield profile
    finally:
        profile.leave()
        _ACTIVE.remove(profile)


def format_profile(name: str, profile: Profile) -> str:
    """A plain-text table: per phase wall, trace, lower, compile and rest (seconds), programs compiled, cache hits."""
    head = (
        f"{'phase':<8} {'wall s':>8} {'trace s':>8} {'lower s':>8} {'compile s':>9} {'rest s':>8} "
        f"{'compiled':>8} {'cached':>7}"
    )
    lines = [f"profile of {name}:", "  " + head]
    rows = [*profile.phases.items(), ("total", profile.total())]
    for phase, p in rows:
        lines.append(
            f"  {phase:<8} {p.wall_s:>8.2f} {p.trace_s:>8.2f} {p.lower_s:>8.2f} {p.compile_s:>9.2f} {p.rest_s:>8.2f} "
            f"{p.compiled:>8d} {p.cache_hits:>7d}"
        )
    return "\n".join(lines)


BEFORE_2026_12_04 = {  # full-preset run times on 2 cores before the speed-ups (manifests of 2026-12-04)
    "tv_distance": 2204,
    "interpolation": 1442,
    "sparse_attention": 320,
    "tiny_lm": 258,
    "speed_scaling": 245,
    "river_valley_lm": 195,
    "aldrift": 148,
    "zoe_grad": 70,
    "quantization": 36,
    "teacher_student": 17,
    "river_valley": 14,
}


def run_times_table(manifests: list[dict]) -> str:
    """A Markdown table of the committed full presets' run times from their manifests: the run phase's wall and
    CPU time, XLA's compile time, the programs compiled and those loaded from the persistent compilation cache
    (when the run was profiled), the device, the
    revision, and the time before the speed-ups of 2026-12 for comparison."""
    head = (
        "| result | run wall s | before s | CPU s | compile s | programs | from cache | device | revision |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"
    )
    rows, total = [], 0.0
    for m in sorted(manifests, key=lambda m: -m.get("wall_time_s", 0)):
        prof = m.get("profile_run") or {}
        total += m.get("wall_time_s", 0)

        def cell(v, fmt="{:.0f}"):
            return fmt.format(v) if isinstance(v, (int, float)) else "-"

        rows.append(
            f"| {m['result']} | {cell(m.get('wall_time_s'))} | {cell(BEFORE_2026_12_04.get(m['result']))} "
            f"| {cell(m.get('cpu_time_s'))} | {cell(prof.get('compile_s'))} | {cell(prof.get('compiled'), '{:d}')} "
            f"| {cell(prof.get('cache_hits'), '{:d}')} "
            f"| {m.get('backend', '-')} | `{m.get('git_revision', '-')}` |"
        )
    before = sum(BEFORE_2026_12_04.get(m["result"], 0) for m in manifests)
    rows.append(f"| **total** | **{total:.0f}** | **{before:.0f}** | | | | | | |")
    return "\n".join([head, *rows])
