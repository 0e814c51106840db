"""The weight cache of ``jaxwb.models.train.trained_model``: one training per configuration, whoever asks first.

Training itself is replaced by a stub here (the real loop is tested in test_tiny_lm.py): these tests are about
the cache's locking and files, and cost milliseconds.
"""

from __future__ import annotations

import threading
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.models import train as tr
from jaxwb.models.tiny_lm import LMConfig

MC = LMConfig(d_model=16, n_layers=1, n_heads=2, ctx=8)
TC = tr.TrainConfig(steps=4, batch_size=2, warmup=1)


def _stub_train(calls: list, delay: float):
    def train(skeleton, tc, *, desc, batch_loss):
        calls.append(threading.get_ident())
        time.sleep(delay)  # long enough for the other caller to arrive while this one trains
        leaves_bumped = jax.tree_util.tree_map(lambda a: a + 1 if isinstance(a, jax.Array) else a, skeleton)
        return leaves_bumped, jnp.arange(tc.steps, dtype=jnp.float32)

    return train


def test_concurrent_callers_train_once_and_load_the_same_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    calls: list = []
    monkeypatch.setattr(tr, "_train", _stub_train(calls, delay=0.5))
    out: dict = {}

    def worker(i):
        out[i] = tr.trained_model(MC, TC)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1, "the second caller trained again instead of waiting for the first"
    (m0, l0), (m1, l1) = out[0], out[1]
    np.testing.assert_array_equal(np.asarray(l0), np.asarray(l1))
    np.testing.assert_array_equal(np.asarray(m0.embed), np.asarray(m1.embed))
    assert tr.is_cached(MC, TC)
    assert not list(tmp_path.rglob("*.tmp")), "a temporary weight file was left behind"


def test_a_corrupt_cache_entry_is_retrained(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    calls: list = []
    monkeypatch.setattr(tr, "_train", _stub_train(calls, delay=0.0))
    path = tr.cache_path(MC, TC)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not weights")
    _, losses = tr.trained_model(MC, TC)
    assert len(calls) == 1 and losses.shape == (TC.steps,)
    tr.trained_model(MC, TC)  # now a valid entry: loaded
    assert len(calls) == 1


def test_use_cache_false_neither_reads_nor_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    calls: list = []
    monkeypatch.setattr(tr, "_train", _stub_train(calls, delay=0.0))
    tr.trained_model(MC, TC, use_cache=False)
    tr.trained_model(MC, TC, use_cache=False)
    assert len(calls) == 2 and not tr.is_cached(MC, TC)
