"""The claim builders of ``jaxwb.sims.core.claims``: their doctests, and what the doctests do not show."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from jaxwb.sims.core import claims as core
from jaxwb.sims.core.claims import Claim


def test_doctests():
    """Every example in the module's docstrings (the builders', ``memoized``'s) holds as written."""
    result = doctest.testmod(core, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_largest_difference_modes():
    a, b = np.array([1.0, 2.5]), np.array([1.0, 2.0])
    assert core.largest_difference(a, b, relative=None) == 0.5
    assert core.largest_difference(a, b, relative=0.25) == 2.0
    assert core.largest_difference(a, b, relative="each") == 0.25
    assert core.largest_difference([1.0, 1.0], [0.0, 1.0], relative="each") == float("inf")
    with pytest.raises(ValueError):
        core.largest_difference(a, b, relative="mean")


def test_bounds_decide_on_the_worst_element_or_the_interval():
    assert not core.upper_bound("all <= 1", 1.0, [0.5, 1.01]).passed
    assert core.upper_bound("all <= 1", 1.0, [0.5, 1.01], tolerance=0.02).passed
    c = core.upper_bound("mean <= 1", 1.0, [0.99, 1.0, 0.98, 0.97], over_seeds=True, kind="check")
    assert c.ci > 0 and c.kind == "check" and not c.passed  # the interval's upper end reaches past 1
    assert core.lower_bound("all >= 1", 1.0, (np.ones(3), np.array([0.9]))).measured == 0.9


def test_builders_pass_expectations_through():
    c = core.seed_mean("known miss", 1.0, [2.0, 2.1, 1.9], 0.1, expected="fail", reason="why")
    assert c.status == "XFAIL"
    o = Claim.ordering("b beats a", [1.0, 1.1, 0.9], [2.0, 2.0, 2.0], expected="fail", reason="why")
    assert o.status == "XFAIL" and o.is_ordering
    w = core.worst_agreement("ratios = 1", 1.0, np.float32([1.0, 1.5]), 0.1, wide_reason="float32")
    assert w.measured == 1.5 and not w.passed and w.wide_reason == "float32"


def test_clears_needs_the_whole_interval_past_its_end():
    assert core.clears("gain > 0", 0.0, (0.3, 0.29, 6)).passed
    assert not core.clears("gain > 0", 0.0, (0.3, 0.31, 6)).passed  # the interval reaches below 0
    below = core.clears("loss < 1", 1.0, (0.8, 0.1, 6), "le")
    assert below.passed and below.is_ordering and below.slack is None and below.margin == pytest.approx(2.0)
    c = core.clears("paper: A beats B", 0.0, (0.3, 0.1, 8), kind="paper", source="paper")
    assert (c.kind, c.source, c.tolerance) == ("paper", "paper", 0.0)
    with pytest.raises(ValueError, match="ordering"):
        core.clears("an ordering is no bound", 0.0, (0.3, 0.1, 8), kind="bound")
