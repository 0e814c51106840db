"""Claim coverage (``jaxwb.sims.core.coverage``): arrays of a result's committed run that no claim reads and that
the result does not declare display-only. Many remain (issue: "every computed quantity claimed"); this test is a
ratchet: a result may not gain unclaimed arrays, and a result whose count drops must lower its entry here."""

from __future__ import annotations

import pytest

from jaxwb.sims.core import coverage, registry
from jaxwb.sims.core.outputs import load_results

# unclaimed, undeclared arrays in figures/<name>/data.npz on 2026-12-06 (results not listed: 0)
KNOWN_UNCLAIMED = {
    "aldrift": 0,
    "interpolation": 0,
    "quantization": 0,
    "river_valley": 0,
    "river_valley_lm": 0,
    "sparse_attention": 0,
    "speed_scaling": 0,
    "teacher_student": 0,
    "tiny_lm": 0,
    "tv_distance": 0,
    "zoe_grad": 0,
}


@pytest.mark.parametrize("name", registry.result_names())
def test_no_result_gains_unclaimed_arrays(name):
    module = registry.get(name)
    results, cfg, _ = load_results(module)
    missing = coverage.unclaimed(module, results, cfg)
    known = KNOWN_UNCLAIMED.get(name, 0)
    assert len(missing) <= known, f"{name}: {len(missing) - known} new unclaimed arrays: {missing}"
    assert len(missing) == known, f"{name}: {known - len(missing)} fewer unclaimed arrays: lower KNOWN_UNCLAIMED"


def test_tracking_records_reads_through_dicts_lists_and_tree_maps():
    import jax
    import numpy as np

    results = {"a": {"x": np.ones(2), "y": np.zeros(2)}, "b": [np.ones(1), np.ones(1)], "c": np.ones(3)}

    class Fake:
        DISPLAY_ONLY = ("c",)

        @staticmethod
        def claims(r, cfg):
            _ = r["a"]["x"], r["b"][1]
            return []

    assert coverage.unclaimed(Fake, results, None) == ["a/y", "b/0"]

    class TreeMapper(Fake):
        @staticmethod
        def claims(r, cfg):
            jax.tree.map(np.sum, r["a"])
            return []

    assert coverage.unclaimed(TreeMapper, results, None) == ["b/0", "b/1"]
