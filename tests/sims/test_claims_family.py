"""The project's decision rule for a family of claims (``claims.decide_family``) against scipy's quantiles."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from jaxwb.sims.core.claims import RESULT_ALPHA, Claim, chance_failures, decide_family


def _ci_claim(measured, half, n=5, **kw):
    return Claim("mean = 1", 1.0, measured, 0.5, "ci", kind="check", ci=half, n_seeds=n, **kw)


@pytest.mark.parametrize("n", [5, 20, 2048])
@pytest.mark.parametrize("m", [1, 7, 53])
def test_a_family_of_m_decides_each_claim_at_bonferroni_level(n, m):
    family = decide_family([_ci_claim(1.0, 0.1, n)] * m + [Claim("other", 1.0, 1.0, 0.1, kind="check")])
    assert [c.family for c in family] == [m] * m + [0]  # only the "ci" claims are counted and decided together
    c = family[0]
    assert c.decision_level == pytest.approx(1 - RESULT_ALPHA / m)
    q = (lambda p: stats.t.ppf(p, n - 1)) if n <= 1000 else stats.norm.ppf
    assert c.decision_halfwidth == pytest.approx(0.1 * q(1 - RESULT_ALPHA / (2 * m)) / q(0.975))
    inside = decide_family([_ci_claim(1.0 + 0.999 * c.decision_halfwidth, 0.1, n)] * m)[0]
    outside = decide_family([_ci_claim(1.0 + 1.001 * c.decision_halfwidth, 0.1, n)] * m)[0]
    assert inside.passed and inside.chance_miss and not outside.passed and not outside.chance_miss


def test_a_claim_decided_alone_keeps_its_own_level_and_precision_still_decides():
    alone = _ci_claim(1.15, 0.1)
    assert alone.family == 0 and alone.decision_level == 0.95 and not alone.passed
    assert decide_family([alone])[0].passed  # 1.5 half-widths: inside the family's (here a family of one)
    too_wide = decide_family([_ci_claim(1.0, 0.6)])[0]  # the interval must still be narrower than the tolerance
    assert not too_wide.passed
    far = decide_family([_ci_claim(3.0, 0.1)] * 50)[0]  # a bug (20 half-widths) fails at any family size
    assert not far.passed


def test_the_family_level_bounds_the_false_failure_rate_of_a_correct_result():
    """Simulated: 30 exact-expectation claims on 8 normal seeds each, all predictions right; over 20,000 results
    the share with any claim outside the family's half-width (``Claim.decision_halfwidth`` of each claim's own
    Student-t interval) is at most RESULT_ALPHA (Bonferroni), up to Monte Carlo error; at the claims' own 95% level
    it would be 1 - 0.95^30 = 79%."""
    rng = np.random.default_rng(0)
    trials, m, n = 20_000, 30, 8
    x = rng.normal(1.0, 1.0, size=(trials, m, n))
    half = stats.t.ppf(0.975, n - 1) * x.std(axis=-1, ddof=1) / np.sqrt(n)
    factor = decide_family([_ci_claim(1.0, 1.0, n)] * m)[0].decision_halfwidth  # per unit of 95% half-width
    outside = np.abs(x.mean(axis=-1) - 1.0) > factor * half
    assert outside.any(axis=-1).mean() <= RESULT_ALPHA + 3 * np.sqrt(RESULT_ALPHA / trials)
    assert outside.any(axis=-1).mean() >= RESULT_ALPHA / 3  # and Bonferroni is not far from it here
    assert (np.abs(x.mean(axis=-1) - 1.0) > half).any(axis=-1).mean() == pytest.approx(1 - 0.95**m, abs=0.02)


def test_chance_failures_reports_misses_outside_the_95_interval_and_family_failures():
    family = decide_family([_ci_claim(1.0, 0.1)] * 18 + [_ci_claim(1.15, 0.1)] * 2)
    got = chance_failures(family)
    assert (got.n, got.failed, got.family_failed) == (20, 2, 0)
    assert "2 of 20 exact-expectation claims lie outside their 95% interval" in str(got)
    assert "0 fail at their family's level" in str(got)
    assert Claim.from_json(family[-1].to_json()) == family[-1]  # the family is recorded in claims.json
