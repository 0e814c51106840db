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


def test_one_cache_folder_for_models_and_sims(tmp_path, monkeypatch):
    from jaxwb.models import cache
    from jaxwb.sims.core import paths

    assert paths.cache_dir is cache.cache_dir  # one function, not two with different defaults
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    assert paths.cache_dir() == tmp_path and tr.weights_dir() == tmp_path / "tiny_lm"
    assert tr.cache_path(MC, TC).parent == tmp_path / "tiny_lm"
    monkeypatch.delenv("WORKBENCH_CACHE")
    assert cache.cache_dir().name == "workbench"


def test_the_weights_lock_is_a_filelock(tmp_path):
    import filelock

    path = tmp_path / "w.eqx"
    with tr._cache_lock(path):
        other = filelock.FileLock(str(path) + ".lock")
        try:
            other.acquire(timeout=0.05)
            held_elsewhere = False
        except filelock.Timeout:
            held_elsewhere = True
        assert held_elsewhere, "the weights lock did not exclude a second lock on the same file"
    with filelock.FileLock(str(path) + ".lock", timeout=1.0):  # released on exit
        pass
