"""Which device a run uses (``workbench run/all --device cpu|gpu|tpu``) and the precision policy.

**Device.** ``None`` (the default) is the best device JAX sees: its default backend, which is a GPU or TPU when
one is installed and visible, else the CPU. A named platform that JAX does not see is an error naming it, before
anything runs. A named device's run executes under :func:`jax.default_device`, so every array a result creates
without an explicit placement, and every ``jit`` over them, lives on that device; the manifest records it.

**Precision policy (float64).** Results compute in float32 unless a claim needs more; the few stages that need
float64 (interpolation's spectral radii and Monte Carlo, river_valley's closed forms, speed_scaling's convex
program) ask for it explicitly with ``jax.enable_x64`` around that stage, on every device. The workbench never
downcasts such a stage silently on a GPU or TPU: on an H100/H200 float64 runs at about half the float32 rate of
the non-tensor-core units, which these small stages do not notice; on a TPU, float64 is emulated and slow, and
the run says so in a warning. A float64 stage that is too slow on some accelerator is moved to float32 only with
a check that each claim it feeds gives the same outcome in both precisions.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator

import jax

from jaxwb.sims.core.errors import WorkbenchError

PLATFORMS = ("cpu", "gpu", "tpu")


def check_platforms() -> None:
    """Start JAX's backends as ``$JAX_PLATFORMS`` asks, or raise :class:`WorkbenchError` naming the variable: an
    unknown or uninstalled platform there is one line before anything runs, not JAX's traceback."""
    value = os.environ.get("JAX_PLATFORMS", "")
    try:
        jax.devices()
    except (RuntimeError, AssertionError) as err:  # jax 0.12 raises AssertionError for an uninstalled plugin
        why = str(err).split(" (set JAX_PLATFORMS")[0].strip() or "JAX could start none of the platforms it names"
        raise WorkbenchError(
            f"JAX_PLATFORMS={value!r}: {why}; unset it, or name platforms installed here (e.g. cpu)"
        ) from None


def select_device(name: str | None = None) -> jax.Device:
    """The first device of platform ``name`` (``"cpu"``, ``"gpu"``, ``"tpu"``), or of JAX's default backend when
    ``name`` is None. Raises :class:`WorkbenchError` naming ``device`` when JAX sees no such device."""
    if name is None:
        return jax.devices()[0]
    if name not in PLATFORMS:
        raise WorkbenchError(f"device must be one of {', '.join(PLATFORMS)}, got {name!r}")
    try:
        found = jax.devices(name)
    except RuntimeError:
        found = []
    if not found:
        seen = sorted({d.platform for d in jax.devices()})
        raise WorkbenchError(f"device {name!r}: JAX sees no {name.upper()} here (it sees: {', '.join(seen)})")
    return found[0]


@contextlib.contextmanager
def on_device(name: str | None = None) -> Iterator[jax.Device]:
    """Run the block with :func:`select_device` ``(name)`` as JAX's default device; yields the device.

    With ``name=None`` JAX's own placement is left alone (so a multi-process run keeps its global device set) and
    the device yielded is this process's first local device."""
    device = jax.local_devices()[0] if name is None else select_device(name)
    if device.platform == "tpu":
        warnings.warn("float64 stages are emulated on a TPU and run slowly (see the precision policy)", stacklevel=3)
    if name is None:
        yield device
        return
    with jax.default_device(device):
        yield device


def describe(device: jax.Device) -> dict:
    """The manifest's record of the device a run used."""
    return {"platform": device.platform, "device_kind": device.device_kind, "id": int(device.id)}
