"""Sweeps over seeds and parameter grids: vmap, shard the batch axis over every device, show progress.

``sweep(fn, batch)`` evaluates ``fn`` on every row of ``batch`` (a pytree whose leaves share a leading batch
axis). On one device it is ``jit(vmap(fn))``. With several devices the batch is padded to a multiple of the
device count and placed with ``NamedSharding(jax.make_mesh((n,), ("batch",)), P("batch"))``, so XLA runs each
device's slice in parallel: how a sweep scales from a laptop to a GPU/TPU pod. ``chunk_size`` splits a very
large batch into host-level chunks with a tqdm progress bar (shown only on a terminal, see
:func:`jaxwb.sims.core.progress.progress_enabled`).

Several processes (``workbench run NAME --distributed``, :mod:`jaxwb.sims.core.distributed`): ``jax.devices()`` then
lists every process's devices, the batch is sharded over all of them, and the output is gathered back so every
process holds the whole result (the same arrays as a single-process run).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def batch_mesh(devices=None) -> jax.sharding.Mesh:
    """A 1-D mesh named "batch" over ``devices`` (default: all)."""
    devices = list(devices) if devices is not None else jax.devices()
    # Auto axes: XLA (GSPMD) propagates the batch sharding through the vmapped computation, whatever it does.
    return jax.make_mesh((len(devices),), ("batch",), axis_types=(AxisType.Auto,), devices=devices)


def _batch_size(batch) -> int:
    sizes = {np.shape(leaf)[0] for leaf in jax.tree.leaves(batch)}
    if len(sizes) != 1:
        raise ValueError(f"every leaf of the sweep batch must share its leading axis, got sizes {sorted(sizes)}")
    return sizes.pop()


def _pad(batch, to: int):
    def pad_leaf(x):
        x = jnp.asarray(x)
        extra = to - x.shape[0]
        if extra == 0:
            return x
        return jnp.concatenate([x, jnp.repeat(x[-1:], extra, axis=0)])  # repeat a real row: no NaN traps

    return jax.tree.map(pad_leaf, batch)


@partial(jax.jit, static_argnums=0)
def _vmapped(fn, batch):
    return jax.vmap(fn)(batch)


def _progress_on(progress, n_chunks: int) -> bool:
    from jaxwb.sims.core.progress import progress_enabled

    if progress is None:  # auto: several chunks, on a terminal
        return n_chunks > 1 and progress_enabled()
    return bool(progress) and progress_enabled()


def _gather(tree):
    """Every process's shards of a global array, as one array on this process (multi-process sweeps)."""
    from jax.experimental import multihost_utils

    def one(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            return jnp.asarray(multihost_utils.process_allgather(x, tiled=True))
        return x

    return jax.tree.map(one, tree)


def sweep(
    fn: Callable[[Any], Any],
    batch: Any,
    *,
    devices=None,
    chunk_size: int | None = None,
    progress: bool | str | None = None,
) -> Any:
    """Evaluate ``fn(row)`` for every row of ``batch``; returns the stacked outputs (leading axis = batch).

    ``fn`` must be hashable and stable across calls (a module-level function or ``functools.partial`` of one
    with hashable arguments) so the compiled sweep is cached. ``progress`` (True or a description) shows a tqdm
    bar over chunks on a terminal; None (default) shows it when there are several chunks. Results are identical
    whatever the device and process count (tested with 8 fake CPU devices and with 2 CPU processes).
    """
    n = _batch_size(batch)
    devices = list(devices) if devices is not None else jax.devices()
    ndev = len(devices)
    chunk = n if chunk_size is None else max(1, min(chunk_size, n))
    chunk = math.ceil(chunk / ndev) * ndev
    sharding = NamedSharding(batch_mesh(devices), P("batch")) if ndev > 1 else None
    starts = range(0, n, chunk)
    if _progress_on(progress, len(starts)):
        from tqdm.auto import tqdm

        starts = tqdm(starts, desc=progress if isinstance(progress, str) else "sweep", unit="chunk")
    outs = []
    for s in starts:
        part = jax.tree.map(lambda x, s=s: jnp.asarray(x)[s : s + chunk], batch)
        m = _batch_size(part)
        part = _pad(part, chunk)
        if sharding is not None:
            part = jax.device_put(part, sharding)
        out = _vmapped(fn, part)
        if jax.process_count() > 1:
            out = _gather(out)
        outs.append(jax.tree.map(lambda y, m=m: y[:m], out))
    if len(outs) == 1:
        return outs[0]
    return jax.tree.map(lambda *ys: jnp.concatenate(ys), *outs)


def grid(**axes) -> dict[str, jax.Array]:
    """Cartesian product of named 1-D axes, flattened: ``grid(lr=a, beta=b)["lr"].shape == (len(a)*len(b),)``.

    The first axis varies slowest (``indexing="ij"``); reshape outputs with ``(len(a), len(b))``.
    """
    names = list(axes)
    mesh = jnp.meshgrid(*[jnp.asarray(axes[k]) for k in names], indexing="ij")
    return {k: m.reshape(-1) for k, m in zip(names, mesh, strict=True)}


def scan_with_progress(
    step: Callable, carry: Any, num_steps: int, *, chunk: int = 1000, desc: str | None = None
) -> tuple[Any, Any]:
    """``lax.scan(step, carry, None, num_steps)`` run as jitted chunks of ``chunk`` steps under a tqdm bar.

    ``step(carry, None) -> (carry, y)``. Returns (final carry, stacked ys).
    """
    from tqdm.auto import tqdm

    @partial(jax.jit, static_argnums=1)
    def scan_chunk(c, length):
        return jax.lax.scan(step, c, None, length=length)

    from jaxwb.sims.core.progress import progress_enabled

    ys = []
    with tqdm(total=num_steps, desc=desc, disable=desc is None or not progress_enabled()) as bar:
        done = 0
        while done < num_steps:
            length = min(chunk, num_steps - done)
            carry, y = scan_chunk(carry, length)
            ys.append(y)
            done += length
            bar.update(length)
    return carry, jax.tree.map(lambda *a: jnp.concatenate(a), *ys)
