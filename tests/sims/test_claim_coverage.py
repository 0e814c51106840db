"""Claim coverage (``jaxwb.sims.core.coverage``): arrays of a result's committed run that no claim reads and that
the result does not declare display-only. Many remain (issue: "every computed quantity claimed"); this test is a
ratchet: a result may not gain unclaimed arrays, and a result whose count drops must lower its entry here."""

from __future__ import annotations

import pytest

from jaxwb.sims.core import coverage, registry
from jaxwb.sims.core.outputs import load_results

# unclaimed, undeclared arrays in figures/<name>/data.npz on 2026-12-05 (after the move to the template)
KNOWN_UNCLAIMED = {
    "aldrift": 39,
    "interpolation": 202,
    "quantization": 57,
    "river_valley": 32,
    "river_valley_lm": 22,
    "sparse_attention": 47,
    "speed_scaling": 44,
    "teacher_student": 17,
    "tiny_lm": 22,
    "tv_distance": 106,
    "zoe_grad": 59,
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
