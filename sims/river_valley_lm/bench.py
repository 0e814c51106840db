"""river_valley_lm: the benchmark, the vmapped (lr, beta) grid vs a Python loop of jitted single runs."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxwb.models import corpus
from jaxwb.models import train as tr
from jaxwb.models.tiny_lm import TinyLM
from jaxwb.sims.core.sweep import grid, sweep
from jaxwb.sims.core.timing import BenchRow, time_call
from jaxwb.sims.river_valley_lm import dynamics as dyn
from jaxwb.sims.river_valley_lm.config import PRESETS


def bench(quick: bool = False) -> list[BenchRow]:
    cfg = PRESETS["quick"]
    mc = cfg.model
    model = TinyLM(mc, key=jax.random.key(0))
    flat0, unravel, static = dyn.split(model)
    tok, val = corpus.load_corpus(max_bytes=cfg.corpus_bytes)
    data = jnp.asarray(tok)
    ex, ey = tr.eval_windows(val, mc.ctx, cfg.eval_windows)
    steps = 30 if quick else 100

    def fn(row):
        return dyn.minibatch_run(
            row, unravel=unravel, static=static, data=data, ex=ex, ey=ey, steps=steps, batch_size=cfg.batch_size,
            blowup=cfg.blowup,
        )  # fmt: skip

    g = grid(lr=jnp.geomspace(0.01, 0.3, 4), beta=jnp.asarray([0.0, 0.5, 0.9]))
    n = g["lr"].shape[0]
    g.update(theta0=jnp.tile(flat0, (n, 1)), key=jnp.stack([jax.random.key(1)] * n), adam=jnp.zeros(n, bool))
    ours = time_call(lambda: sweep(fn, g)["final_loss"], repeats=2)
    one = jax.jit(fn)
    base = time_call(lambda: [one({k: x[i] for k, x in g.items()})["final_loss"] for i in range(n)], repeats=2)
    return [
        BenchRow(f"{n}-point (lr, beta) grid x {steps} steps", "jit(vmap) sweep", "loop of jitted runs", ours, base)
    ]
