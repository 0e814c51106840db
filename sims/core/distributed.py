"""Several processes (hosts) through ``jax.distributed``: one call to initialize, and who writes the outputs.

``workbench run NAME --distributed`` calls :func:`initialize` before anything touches a device. The coordinator
address, process count and process id come from the flags, else the standard environment variables
(``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``), else JAX's own cluster detection (Slurm,
Open MPI, TPU pods, GKE). After it, ``jax.devices()`` lists every process's devices, so
:func:`jaxwb.sims.core.sweep.sweep` shards its batch over all of them; every process computes the same results and only
process 0 (:func:`is_writer`) writes figures and data.
"""

from __future__ import annotations

import os
from typing import Any

from jaxwb.sims.core.errors import WorkbenchError

ENV = {"coordinator": "JAX_COORDINATOR_ADDRESS", "num_processes": "JAX_NUM_PROCESSES", "process_id": "JAX_PROCESS_ID"}


def settings(coordinator=None, num_processes=None, process_id=None) -> dict:
    """The keyword arguments for ``jax.distributed.initialize`` from flags, else the environment (None: auto)."""
    out: dict[str, Any] = {"coordinator_address": coordinator or os.environ.get(ENV["coordinator"]) or None}
    for key, value in (("num_processes", num_processes), ("process_id", process_id)):
        if value is None and os.environ.get(ENV[key], "").strip():
            text = os.environ[ENV[key]].strip()
            try:
                value = int(text)
            except ValueError:
                raise WorkbenchError(f"${ENV[key]} must be an integer, got {text!r}") from None
        out[key] = value
    n, i = out["num_processes"], out["process_id"]
    if n is not None and n < 1:
        raise WorkbenchError(f"the number of processes must be >= 1, got {n}")
    if n is not None and i is not None and not 0 <= i < n:
        raise WorkbenchError(f"process id must be in [0, {n}), got {i}")
    if out["coordinator_address"] is not None and ":" not in out["coordinator_address"]:
        raise WorkbenchError(f"coordinator address must be HOST:PORT, got {out['coordinator_address']!r}")
    return out


def initialize(coordinator=None, num_processes=None, process_id=None) -> None:
    """``jax.distributed.initialize`` with :func:`settings`; CPU processes talk through gloo collectives."""
    import jax

    kwargs = settings(coordinator, num_processes, process_id)
    # CPU devices of different processes talk through gloo (GPU/TPU backends use their own collectives)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(**{k: v for k, v in kwargs.items() if v is not None})
    except (ValueError, RuntimeError) as err:
        raise WorkbenchError(f"jax.distributed.initialize failed: {err}") from None


def is_writer() -> bool:
    """True on process 0 (and always without ``jax.distributed``)."""
    import jax

    return jax.process_index() == 0
