"""zoe_grad: ``run``, the five studies in turn, each timed (what is measured: the package docstring)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxwb.sims.zoe_grad.config import Config
from jaxwb.sims.zoe_grad.estimators import run_estimators, run_sweep
from jaxwb.sims.zoe_grad.kernel_check import run_kernel_check
from jaxwb.sims.zoe_grad.qat import run_qat
from jaxwb.sims.zoe_grad.toy import run_toy


def run(cfg: Config, *, key) -> dict:
    k1, k2, k3, k4 = jax.random.split(key, 4)
    parts: tuple[tuple[str, Callable[[], Any]], ...] = (
        ("estimators", lambda: run_estimators(cfg, k1)),
        ("sweep", lambda: run_sweep(cfg, jax.random.fold_in(key, 5))),
        ("kernel", lambda: run_kernel_check(cfg, k2)),
        ("toy", lambda: run_toy(cfg, k3)),
    )
    if cfg.qat:
        parts += (("qat", lambda: run_qat(cfg, k4)),)
    out, wall = {}, {}
    for name, fn in parts:
        t0 = time.perf_counter()
        out[name] = jax.block_until_ready(fn())
        wall[name] = jnp.asarray(time.perf_counter() - t0)
    out["wall_s"] = wall
    return out
