"""Claims that can fail: kinds, confidence intervals over seeds, slack of bounds.

A :class:`Claim` is one sentence of the paper (or of theory) compared with the simulation. Every claim has a
``kind`` (see ``docs/architecture.md``, "Claims"):

``check``
    a measurement compared with an *independent* prediction: a closed form, an exact enumeration, a solver that
    shares no code with what is measured.
``bound``
    a measurement under (``comparison="le"``) or over (``"ge"``) a proven bound. The claim reports its
    ``slack`` = bound / measured (inverse for lower bounds); a bound with slack > :data:`LOOSE_SLACK` is
    ``loose`` and needs a ``check`` on the same quantity beside it.
``paper``
    a measurement compared with a number printed in the paper; the statement says why the tolerance is what
    it is.

What holds by construction (``identity``) is a unit test, never a claim: constructing one raises.

**Expected outcomes.** A known disagreement between the paper and the simulation is kept as it is, never
loosened or re-seeded: the claim carries ``expected="fail"`` and its ``reason``. Its outcome is then ``XFAIL``
when it fails as expected and ``XPASS`` (an unexpected pass, reported like a regression, as pytest's strict
xfail) when it passes; ``workbench run / all / claims`` exit 0 exactly when every claim's outcome equals its
expectation (:attr:`Claim.as_expected`).

**Wide tolerances.** A passing ``rel``/``abs`` claim whose allowed deviation is more than
:data:`WIDE_CI_FACTOR` times its confidence half-width (a deterministic claim: more than :data:`WIDE_ERROR_FACTOR`
times its observed error) is ``wide``: the tolerance was not set from the noise. Tighten it, or say why in
``wide_reason`` (shown beside the flag). One-sided comparisons (``le``/``ge``) report their slack whatever their
kind, and are ``loose`` above :data:`LOOSE_SLACK`.

**Orderings.** "A beats B" is decided on the interval of the paired per-seed differences, not on two separate
means: :meth:`Claim.ordering`; a one-sided claim with an interval reports its :attr:`Claim.margin` (distance to
the threshold in half-widths).

**Decided for the family, not for one claim.** An exact-expectation claim (``comparison="ci"``) fails when its
prediction lies outside its interval, so with many such claims a correct result would fail one at some seed by
chance. Each result's ``ci`` claims are therefore decided together (:func:`decide_family`, applied wherever claims
are evaluated: :func:`evaluate`): with ``m`` of them, each is decided at level ``1 - RESULT_ALPHA / m``
(Bonferroni), so that a correct result fails any of them at no more than :data:`RESULT_ALPHA` of seeds, and a whole
``workbench all`` over up to 20 results at no more than 5%. The claim still reports its own interval (95%, its
``level``); a prediction outside that interval but inside the family's is a miss *within chance*: reported in the
table, not failed. Claims of the other comparisons pass only when their whole interval meets the criterion: a
correct result fails them when the effect is too small for the samples (a power problem), which the seed sweep
(``workbench audit --seeds``) shows and more seeds fix.

Random quantities are decided on a confidence interval over seeds: build the claim with
:meth:`Claim.from_samples` (or pass ``ci`` = the half-width and ``n_seeds``), and the claim passes only if the
*whole interval* meets the criterion (for ``rel``/``abs``/``le``/``ge``). For a Monte Carlo mean against its exact
expectation use ``comparison="ci"``: it passes when the prediction lies inside the interval **and** the interval
is narrow enough to be informative (half-width <= ``tolerance``), so it fails both on bias and on imprecision.

**Builders.** The shapes claims recur in have a builder each, so that a result's claims read as statements with
their predictions: :func:`agreement` (a deterministic value), :func:`array_agreement` (two arrays, by
:func:`largest_difference`), :func:`worst_agreement` (every element), :func:`upper_bound` / :func:`lower_bound` (a
bound with its slack, on the worst element or a mean over seeds), :func:`seed_mean` (a mean over seeds with its
interval), :func:`scaling_exponent` (a log-log slope over seeds), :meth:`Claim.ordering` and
:meth:`Claim.from_interval` (any estimate with its interval).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

KINDS = ("check", "bound", "paper")
COMPARISONS = ("rel", "abs", "le", "ge", "ci")
LOOSE_SLACK = 10.0
MIN_SEEDS = 5
EXPECTATIONS = ("pass", "fail")
WIDE_CI_FACTOR = 5.0  # allowed deviation / confidence half-width above which a passing claim is "wide"
WIDE_ERROR_FACTOR = 100.0  # the same for a deterministic claim: allowed deviation / observed error
RESULT_ALPHA = 0.0025  # how often a correct result may fail any of its "ci" claims by chance (0.05 / 20 results)


def mean_ci(samples, *, level: float = 0.95) -> tuple[float, float, int]:
    """Mean, Student-t confidence half-width and count of the finite ``samples`` (one per seed).

    Returns ``(mean, halfwidth, n)``; with fewer than two finite samples the half-width is ``inf``.
    """
    from scipy import stats

    x = np.asarray(samples, dtype=np.float64).ravel()
    n_all = x.size
    x = x[np.isfinite(x)]
    if x.size < n_all or x.size < 2:
        return (float(np.mean(x)) if x.size else float("nan")), float("inf"), int(x.size)
    half = stats.t.ppf(0.5 + level / 2, x.size - 1) * np.std(x, ddof=1) / math.sqrt(x.size)
    return float(np.mean(x)), float(half), int(x.size)


def bootstrap_ci(samples, statistic=np.mean, *, level: float = 0.95, n_boot: int = 2000, seed: int = 0):
    """Percentile-bootstrap interval of ``statistic`` over the first axis of ``samples`` (``scipy.stats.bootstrap``,
    ``method="percentile"``, ``n_boot`` resamples of the indices, ``np.random.default_rng(seed)``).

    Returns ``(estimate, halfwidth, n)`` with ``halfwidth`` the larger distance from the estimate to an end of
    the percentile interval (a symmetric summary for the table; the claim uses it conservatively).
    """
    from scipy import stats

    x = np.asarray(samples, dtype=np.float64)
    n = x.shape[0]
    est = float(statistic(x))
    if n < 2 or not np.all(np.isfinite(x)):
        return est, float("inf"), int(n)
    res = stats.bootstrap(
        (np.arange(n),),
        lambda i: statistic(x[i]),
        vectorized=False,
        n_resamples=n_boot,
        confidence_level=level,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    lo, hi = res.confidence_interval
    return est, float(max(est - lo, hi - est)), int(n)


@dataclasses.dataclass(frozen=True)
class Claim:
    """One sentence checked against the simulation.

    ``comparison`` says how ``measured`` (with confidence half-width ``ci``, 0 for a deterministic quantity)
    is judged against ``predicted``; the whole interval ``[measured - ci, measured + ci]`` must satisfy it:

      "rel"  |measured - predicted| + ci <= tolerance * |predicted|
      "abs"  |measured - predicted| + ci <= tolerance
      "le"   measured + ci <= predicted + tolerance        (an upper bound)
      "ge"   measured - ci >= predicted - tolerance        (a lower bound)
      "ci"   |measured - predicted| <= ci  and  0 < ci <= tolerance   (an exact expectation inside the interval;
             identical samples, a zero-width interval, decide nothing and fail)

    A NaN or infinite measurement, prediction or interval always fails.
    """

    statement: str
    predicted: float
    measured: float
    tolerance: float
    comparison: str = "rel"
    source: str = "paper"  # "paper", "theory" (a consequence we derived) or "reconstruction"
    kind: str = "unclassified"  # pass kind=, ci=, n_seeds= by keyword
    ci: float = 0.0
    n_seeds: int = 1
    expected: str = "pass"  # "fail" for a known disagreement, with its reason
    reason: str = ""  # why a claim is expected to fail (required with expected="fail")
    wide_reason: str = ""  # why a tolerance wider than the noise is right (shown beside the WIDE flag)
    is_ordering: bool = False  # an ordering of two measurements (Claim.ordering): margin in CIs, no slack
    level: float = 0.95  # the confidence level of the interval ``ci``
    family: int = 0  # "ci" claims decided together in this result (decide_family); 0: decided alone at ``level``

    def __post_init__(self):
        if self.comparison not in COMPARISONS:
            raise ValueError(f"comparison must be one of {'/'.join(COMPARISONS)}, got {self.comparison!r}")
        if self.kind == "identity":
            raise ValueError(
                f"identity {self.statement!r} holds by construction: make it a unit test in tests/, not a claim"
            )
        if self.kind not in KINDS + ("unclassified",):
            raise ValueError(f"kind must be one of {'/'.join(KINDS)}, got {self.kind!r}")
        if self.kind == "bound" and self.comparison not in ("le", "ge"):
            raise ValueError(f"a bound compares with 'le' or 'ge', got {self.comparison!r} ({self.statement!r})")
        if self.is_ordering and (self.comparison not in ("le", "ge") or self.kind == "bound"):
            raise ValueError(f"an ordering compares with 'le'/'ge' and is not a bound: {self.statement!r}")
        if self.comparison == "ci" and self.n_seeds < 2:
            raise ValueError(f"comparison 'ci' needs an interval over seeds (n_seeds >= 2): {self.statement!r}")
        for name in ("predicted", "measured", "tolerance", "ci"):
            object.__setattr__(self, name, float(getattr(self, name)))
        object.__setattr__(self, "n_seeds", int(self.n_seeds))
        object.__setattr__(self, "level", float(self.level))
        object.__setattr__(self, "family", int(self.family))
        if not 0.5 <= self.level < 1:
            raise ValueError(f"level must be in [0.5, 1), got {self.level} ({self.statement!r})")
        if self.family < 0:
            raise ValueError(f"family must be >= 0, got {self.family} ({self.statement!r})")
        if self.ci < 0:
            raise ValueError(f"ci is a half-width and must be >= 0, got {self.ci}")
        if self.expected not in EXPECTATIONS:
            raise ValueError(f"expected must be 'pass' or 'fail', got {self.expected!r} ({self.statement!r})")
        if self.expected == "fail" and not self.reason.strip():
            raise ValueError(f"a claim expected to fail needs its reason: {self.statement!r}")

    @classmethod
    def from_samples(
        cls, statement: str, predicted: float, samples, tolerance: float, comparison: str = "rel", **options: Any
    ) -> Claim:
        """A claim on the mean of per-seed ``samples`` with its Student-t interval (:func:`mean_ci` at ``level``);
        ``options``: the keywords of :meth:`from_interval` (``kind`` required).

        >>> Claim.from_samples("mean = 1", 1.0, [0.99, 1.01, 1.0], 0.05, kind="check").n_seeds
        3
        """
        interval = mean_ci(samples, level=options.get("level", 0.95))
        return cls.from_interval(statement, predicted, interval, tolerance, comparison, **options)

    @classmethod
    def from_interval(
        cls,
        statement: str,
        predicted: float,
        interval: tuple[float, float, int],
        tolerance: float,
        comparison: str = "rel",
        *,
        kind: str,
        level: float = 0.95,
        source: str = "paper",
        wide_reason: str = "",
        expected: str = "pass",
        reason: str = "",
        is_ordering: bool = False,
    ) -> Claim:
        """A claim on an estimate with its interval, ``interval = (estimate, halfwidth, n)`` as :func:`mean_ci` and
        :func:`bootstrap_ci` return it (``n`` seeds or samples behind it).

        >>> c = Claim.from_interval("x = 1", 1.0, (1.02, 0.01, 8), 0.05, kind="check")
        >>> c.passed, c.ci, c.n_seeds
        (True, 0.01, 8)
        """
        estimate, half, n = interval
        return cls(
            statement,
            predicted,
            estimate,
            tolerance,
            comparison,
            kind=kind,
            ci=half,
            n_seeds=n,
            source=source,
            level=level,
            wide_reason=wide_reason,
            expected=expected,
            reason=reason,
            is_ordering=is_ordering,
        )

    @property
    def decision_level(self) -> float:
        """The level at which an exact-expectation claim's location is decided: ``1 - RESULT_ALPHA / family``
        when it is decided with its result's family (:func:`decide_family`), else its own ``level``."""
        if self.comparison != "ci" or self.family < 1:
            return self.level
        return max(self.level, 1 - RESULT_ALPHA / self.family)

    @property
    def decision_halfwidth(self) -> float:
        """``ci`` rescaled from ``level`` to :attr:`decision_level` (Student t with ``n_seeds - 1`` degrees of
        freedom, the interval of :func:`mean_ci`; normal above 1000 seeds)."""
        if self.decision_level == self.level or not math.isfinite(self.ci):
            return self.ci
        return self.ci * _quantile(self.decision_level, self.n_seeds) / _quantile(self.level, self.n_seeds)

    @property
    def chance_miss(self) -> bool:
        """A passing exact-expectation claim whose prediction lies outside its own (95%) interval but inside the
        family's: a miss within chance, reported, not failed."""
        return self.comparison == "ci" and self.passed and abs(self.measured - self.predicted) > self.ci

    @property
    def passed(self) -> bool:
        m, p, tol, h = self.measured, self.predicted, self.tolerance, self.ci
        if not (math.isfinite(m) and math.isfinite(p) and math.isfinite(h)):
            return False
        if self.comparison == "rel":
            return abs(m - p) + h <= tol * abs(p)
        if self.comparison == "abs":
            return abs(m - p) + h <= tol
        if self.comparison == "le":
            return m + h <= p + tol
        if self.comparison == "ge":
            return m - h >= p - tol
        # a zero-width interval (identical samples) decides nothing; the location at the family's level
        return 0 < h <= tol and abs(m - p) <= self.decision_halfwidth

    @property
    def as_expected(self) -> bool:
        """The outcome equals the expectation: passes when expected to pass, fails when expected to fail."""
        return self.passed == (self.expected == "pass")

    @property
    def status(self) -> str:
        """``PASS``, ``FAIL`` (a regression), ``XFAIL`` (fails as expected) or ``XPASS`` (passes unexpectedly)."""
        if self.expected == "fail":
            return "XPASS" if self.passed else "XFAIL"
        return "PASS" if self.passed else "FAIL"

    @property
    def wide(self) -> bool:
        """A passing ``rel``/``abs`` claim whose allowed deviation exceeds :data:`WIDE_CI_FACTOR` x its interval's
        half-width (with an interval) or :data:`WIDE_ERROR_FACTOR` x its observed error (deterministic)."""
        if not self.passed or self.comparison not in ("rel", "abs"):
            return False
        allowed = self.tolerance * abs(self.predicted) if self.comparison == "rel" else self.tolerance
        if self.ci > 0:
            return allowed > WIDE_CI_FACTOR * self.ci
        return allowed > WIDE_ERROR_FACTOR * abs(self.measured - self.predicted)

    @property
    def slack(self) -> float | None:
        """For a one-sided comparison (``le``/``ge``, a bound or not): bound / measured (upper) or measured / bound
        (lower), measured at the interval's worst end. ``None`` for two-sided comparisons; ``inf`` when the
        measured side is <= 0."""
        if self.comparison not in ("le", "ge") or self.is_ordering:
            return None
        if self.comparison == "le":
            bound, meas = self.predicted + self.tolerance, self.measured + self.ci
        else:
            bound, meas = self.measured - self.ci, self.predicted - self.tolerance
        if not (math.isfinite(bound) and math.isfinite(meas)):
            return float("nan")
        if meas <= 0:
            return float("inf") if bound > 0 else float("nan")
        return bound / meas

    @property
    def margin(self) -> float | None:
        """For a one-sided comparison decided on an interval (``le``/``ge`` with ``ci > 0``): how far the measured
        mean lies from the threshold, in half-widths of its interval, positive on the passing side (it passes when
        ``margin >= 1``). ``None`` otherwise. An ordering of two measurements (:meth:`ordering`) reports it."""
        if self.comparison not in ("le", "ge") or not self.ci > 0:
            return None
        gap = (self.predicted + self.tolerance - self.measured) if self.comparison == "le" else None
        if gap is None:
            gap = self.measured - (self.predicted - self.tolerance)
        return gap / self.ci

    @classmethod
    def ordering(
        cls,
        statement: str,
        larger,
        smaller,
        *,
        kind: str = "check",
        level: float = 0.95,
        source: str = "paper",
        at_least: float = 0.0,
        expected: str = "pass",
        reason: str = "",
    ) -> Claim:
        """``larger > smaller + at_least``, decided on the Student-t interval of the per-seed differences
        ``larger - smaller`` (paired samples, one per seed): the whole interval must clear ``at_least``. The claim
        reports the difference, its interval and the :attr:`margin` in half-widths.

        >>> c = Claim.ordering("A beats B", [3.0, 3.2, 2.9, 3.1], [1.0, 1.1, 0.9, 1.0])
        >>> c.passed, round(c.measured, 3), c.margin > 1
        (True, 2.05, True)
        """
        a = np.asarray(larger, dtype=np.float64).ravel()
        b = np.asarray(smaller, dtype=np.float64).ravel()
        if a.shape != b.shape:
            raise ValueError(f"ordering needs paired samples of one shape, got {a.shape} and {b.shape}")
        interval = mean_ci(a - b, level=level)
        options: dict[str, Any] = {"kind": kind, "source": source, "expected": expected, "reason": reason}
        return cls.from_interval(statement, at_least, interval, 0.0, "ge", is_ordering=True, **options)

    @property
    def loose(self) -> bool:
        s = self.slack
        return s is not None and (s > LOOSE_SLACK)

    @property
    def criterion(self) -> str:
        return {
            "rel": f"within {100 * self.tolerance:g}%",
            "abs": f"within +-{self.tolerance:g}",
            "le": f"<= predicted + {self.tolerance:g}",
            "ge": f">= predicted - {self.tolerance:g}",
            "ci": f"in CI, CI <= {self.tolerance:g}",
        }[self.comparison]

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["passed"] = self.passed
        d["criterion"] = self.criterion
        d["slack"] = self.slack
        d["margin"] = self.margin
        d["loose"] = self.loose
        d["status"] = self.status
        d["wide"] = self.wide
        d["decision_level"] = self.decision_level
        d["chance_miss"] = self.chance_miss
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Claim:
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in fields})


def _quantile(level: float, n: int) -> float:
    """The two-sided ``level`` quantile of Student's t with ``n - 1`` degrees of freedom (normal above 1000)."""
    from scipy import stats

    q = 0.5 + level / 2
    return float(stats.norm.ppf(q) if n > 1000 or n < 2 else stats.t.ppf(q, n - 1))


def decide_family(claims: Sequence[Claim]) -> list[Claim]:
    """``claims`` with every exact-expectation (``"ci"``) claim decided together: its ``family`` set to the number
    of ``"ci"`` claims in ``claims`` (see the module docstring). Other claims are returned unchanged."""
    m = sum(c.comparison == "ci" for c in claims)
    return [dataclasses.replace(c, family=m) if c.comparison == "ci" else c for c in claims]


def evaluate(module: Any, results: Any, cfg: Any) -> list[Claim]:
    """A result's claims on ``results``: ``module.claims(results, cfg)`` decided as a family
    (:func:`decide_family`). Every place that judges a run (harness, audits, notebooks) calls this."""
    return decide_family(list(module.claims(results, cfg)))


class ClaimGroups:
    """A result's claims as groups, in the order they are registered: its claims module reads top to bottom as the
    statements it checks.

    ``CLAIMS = ClaimGroups()``; each group ``@CLAIMS.add`` above ``def some_claims(results, cfg) -> list[Claim]``;
    ``claims = CLAIMS.claims`` is the result's ``claims(results, cfg)``: every group's claims, concatenated.

    >>> groups = ClaimGroups()
    >>> @groups.add
    ... def exact(results, cfg):
    ...     return [agreement("two = 1 + 1", 2.0, results["one"] + 1.0, 1e-12)]
    >>> claims = groups.claims({"one": 1.0}, None)
    >>> len(claims), claims[0].passed
    (1, True)
    """

    def __init__(self) -> None:
        self.groups: list[Callable[[Any, Any], Sequence[Claim]]] = []

    def add(self, group: Callable[[Any, Any], Sequence[Claim]]) -> Callable[[Any, Any], Sequence[Claim]]:
        """Register ``group(results, cfg) -> [Claim, ...]`` after the groups already registered; returns it."""
        if group in self.groups:
            raise ValueError(f"group: {group.__name__} is registered twice")
        self.groups.append(group)
        return group

    def claims(self, results: Any, cfg: Any) -> list[Claim]:
        """Every registered group's claims on ``results``, in registration order."""
        return [c for group in self.groups for c in group(results, cfg)]


# --- builders: the shapes the results' claims recur in ---------------------------------------------------------------
#
# Each returns a Claim (or the number one is decided on). They default to ``kind="check"`` (a bound builder:
# ``kind="bound"``) and ``source="theory"`` (CHECK); the fields of Claim they do not compute (kind, source,
# wide_reason, expected, reason, ...) they take by keyword (``options``).

CHECK: Mapping[str, Any] = MappingProxyType({"kind": "check", "source": "theory"})  # the builders' defaults (read-only)


def largest_difference(measured, reference, *, relative: str | float | None = "max") -> float:
    """Largest ``|measured - reference|`` over the elements (broadcast against each other), in float64: divided by
    ``max |reference|`` (``relative="max"``: the JAX-vs-NumPy "max |a - b| / max |b|"), element by element by
    ``|reference|`` (``"each"``), by a given number (a float: a scale such as lambda_max), or not at all (``None``).
    ``inf`` when the result is not finite (a NaN anywhere, a zero reference element with ``"each"``).

    >>> largest_difference([1.0, 2.0, 4.1], [1.0, 2.0, 4.0])
    0.02499999999999991
    >>> largest_difference([1.0, 2.2], [1.0, 2.0], relative="each"), largest_difference([1.0, np.nan], [1.0, 2.0])
    (0.10000000000000009, inf)
    """
    a, b = np.asarray(measured, np.float64), np.asarray(reference, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero or NaN denominator: inf, judged below
        value = _largest(a, b, relative)
    return float(value) if np.isfinite(value) else float("inf")


def _largest(a: np.ndarray, b: np.ndarray, relative: str | float | None):
    """:func:`largest_difference` before the finiteness check."""
    if relative == "each":
        return np.max(np.abs(a - b) / np.abs(b))
    if relative == "max":
        return np.max(np.abs(a - b)) / np.max(np.abs(b))
    if relative is None:
        return np.max(np.abs(a - b))
    if isinstance(relative, str):
        raise ValueError(f"relative must be 'max', 'each', a number or None, got {relative!r}")
    return np.max(np.abs(a - b)) / relative


def farthest(values, target: float) -> float:
    """The element of ``values`` (any shape, compared in its own dtype) farthest from ``target``: the worst seed of
    a quantity that must equal ``target``.

    >>> farthest([[1.0, 0.99], [1.002, 1.0]], 1.0)
    0.99
    """
    v = np.ravel(np.asarray(values))
    return float(v[np.argmax(np.abs(v - target))])


def agreement(
    statement: str, predicted: float, measured: float, tolerance: float, comparison: str = "rel", **options: Any
) -> Claim:
    """A deterministic measurement (no interval) against its prediction, ``comparison`` ``"rel"`` (``|measured -
    predicted| <= tolerance |predicted|``) or ``"abs"`` (``<= tolerance``); ``options``: Claim's other fields.

    >>> c = agreement("energy = closed form", 2.0, 2.0000001, 1e-6)
    >>> c.passed, c.kind, c.source, c.ci
    (True, 'check', 'theory', 0.0)
    """
    return Claim(statement, predicted, measured, tolerance, comparison, **{**CHECK, **options})


def array_agreement(
    statement: str, measured, reference, tolerance: float, *, relative: str | float | None = "max", **options: Any
) -> Claim:
    """Two arrays that must agree (a run's float32 numbers against a float64 NumPy reference): predicted 0, measured
    :func:`largest_difference` ``(measured, reference, relative=relative)``, ``"abs"`` within ``tolerance``.

    >>> c = array_agreement("JAX = NumPy reference", np.float32([1, 2, 4]), np.array([1.0, 2.0, 4.0]), 1e-6)
    >>> c.passed, c.predicted, c.measured, c.comparison
    (True, 0.0, 0.0, 'abs')
    """
    diff = largest_difference(measured, reference, relative=relative)
    return agreement(statement, 0.0, diff, tolerance, "abs", **options)


def worst_agreement(
    statement: str, predicted: float, values, tolerance: float, comparison: str = "rel", **options: Any
) -> Claim:
    """Every element of ``values`` (one per seed, configuration, ...) equals ``predicted``: the element
    :func:`farthest` from it, against it (``"rel"`` or ``"abs"`` within ``tolerance``).

    >>> c = worst_agreement("every ratio = 1", 1.0, [1.0, 1.00002, 0.99999], 1e-4)
    >>> c.passed, c.measured
    (True, 1.00002)
    """
    return agreement(statement, predicted, farthest(values, predicted), tolerance, comparison, **options)


def _pooled(measured):
    """``measured`` as one float64 array: a list or tuple of arrays of any shapes is concatenated."""
    if isinstance(measured, (list, tuple)):
        return np.concatenate([np.ravel(np.asarray(x, np.float64)) for x in measured])
    return np.asarray(measured, np.float64)


def one_sided(
    statement: str,
    bound: float,
    measured,
    comparison: str = "le",
    *,
    tolerance: float = 0.0,
    over_seeds: bool = False,
    kind: str = "bound",
    source: str = "theory",
    level: float = 0.95,
) -> Claim:
    """A bound with its slack: ``measured <= bound + tolerance`` (``comparison="le"``) or ``measured >= bound -
    tolerance`` (``"ge"``), on the worst element of ``measured`` (any shape, or a list of arrays of any shapes: the
    worst seed, configuration, ...; the largest for ``"le"``, the smallest for ``"ge"``), or with ``over_seeds=True``
    on the mean of the per-seed samples ``measured`` over its whole Student-t interval (:func:`mean_ci`).
    :func:`upper_bound` and :func:`lower_bound` name the two comparisons.

    >>> c = one_sided("ratio <= 1 + eps", 1.1, [[1.02, 1.05], [1.03, 1.01]])
    >>> c.measured, c.kind, round(c.slack, 4)
    (1.05, 'bound', 1.0476)
    >>> one_sided("mean ratio <= 1", 1.0, [0.8, 0.9, 0.85, 0.95], over_seeds=True).n_seeds
    4
    """
    if over_seeds:
        interval = mean_ci(measured, level=level)
        return Claim.from_interval(
            statement, bound, interval, tolerance, comparison, kind=kind, source=source, level=level
        )
    x = _pooled(measured)
    worst = float(np.max(x)) if comparison == "le" else float(np.min(x))
    return Claim(statement, bound, worst, tolerance, comparison, kind=kind, source=source)


def upper_bound(statement: str, bound: float, measured, **options: Any) -> Claim:
    """``measured <= bound``: :func:`one_sided` with ``comparison="le"`` (``options``: its keywords).

    >>> upper_bound("worst ratio <= 2", 2.0, [1.0, 1.5]).slack
    1.3333333333333333
    """
    return one_sided(statement, bound, measured, "le", **options)


def lower_bound(statement: str, bound: float, measured, **options: Any) -> Claim:
    """``measured >= bound``: :func:`one_sided` with ``comparison="ge"`` (``options``: its keywords).

    >>> c = lower_bound("OPT is a lower bound: ratio >= 1", 1.0, [np.array([1.2, 1.5]), np.array([1.1])])
    >>> c.measured, c.comparison, c.passed
    (1.1, 'ge', True)
    """
    return one_sided(statement, bound, measured, "ge", **options)


def seed_mean(
    statement: str, predicted: float, samples, tolerance: float, comparison: str = "ci", **options: Any
) -> Claim:
    """The mean over seeds of ``samples`` (one per seed) with its Student-t interval against ``predicted``:
    :meth:`Claim.from_samples` with a check's defaults (``options``: the keywords of :meth:`Claim.from_interval`,
    such as ``level``, ``wide_reason``, ``expected`` and ``reason``). By default an exact expectation inside the
    interval, half-width <= ``tolerance``.

    >>> c = seed_mean("Monte Carlo mean = exact 0.5", 0.5, [0.49, 0.51, 0.5, 0.52, 0.48], 0.05)
    >>> c.passed, c.comparison, c.n_seeds
    (True, 'ci', 5)
    """
    return Claim.from_samples(statement, predicted, samples, tolerance, comparison, **{**CHECK, **options})


def clears(statement: str, end: float, interval, comparison: str = "ge", **options: Any) -> Claim:
    """An ordering against a fixed ``end``: the whole ``interval = (estimate, halfwidth, n)`` (:func:`mean_ci`,
    :func:`bootstrap_ci`, or one combined by hand) above ``end`` (``"ge"``) or below it (``"le"``), reported with its
    margin in half-widths and no slack (``is_ordering``); ``options``: the keywords of :meth:`Claim.from_interval`.
    :meth:`Claim.ordering` is the same on paired samples.

    >>> c = clears("MPQ beats GPTQ: the per-seed gain clears 0", 0.0, (0.3, 0.1, 8))
    >>> c.passed, c.is_ordering, round(c.margin, 6)
    (True, True, 3.0)
    """
    return Claim.from_interval(statement, end, interval, 0.0, comparison, is_ordering=True, **{**CHECK, **options})


def loglog_slopes(x, curves):
    """Per-curve least-squares slope of ``log curves`` against ``log x``: ``x`` (k,), ``curves`` (..., k) ->
    (...,), the exponent ``a`` of ``curve ~ x^a`` fitted on each seed's curve.

    >>> loglog_slopes([1.0, 2.0, 4.0], [[1.0, 4.0, 16.0], [3.0, 3.0, 3.0]])
    array([2., 0.])
    """
    lx = np.log(np.asarray(x, np.float64))
    y = np.log(np.asarray(curves, np.float64))
    xc = lx - lx.mean()
    return (y - y.mean(axis=-1, keepdims=True)) @ xc / (xc @ xc)


def pooled_slope(x, curves, *, level: float = 0.95) -> tuple[float, float, int]:
    """Least-squares slope of ``log curves`` on ``log x`` over every (x, seed) pooled, with its Student-t
    half-width (``scipy.stats.linregress``, ``n - 2`` degrees of freedom): ``x`` (k,), ``curves`` (k, seeds).
    Returns ``(slope, halfwidth, n)`` with ``n`` the points fitted.

    >>> slope, half, n = pooled_slope([1.0, 2.0, 4.0], [[1.0, 1.1], [2.0, 2.2], [4.0, 4.4]])
    >>> round(slope, 6), n
    (1.0, 6)
    """
    from scipy import stats

    y = np.log(np.asarray(curves, np.float64))
    lx = np.repeat(np.log(np.asarray(x, np.float64)), y.shape[1])
    fit = stats.linregress(lx, y.ravel())
    return float(fit.slope), float(stats.t.ppf(0.5 + level / 2, y.size - 2) * fit.stderr), int(y.size)


def scaling_exponent(
    statement: str,
    predicted: float,
    x,
    curves,
    tolerance: float,
    comparison: str = "ci",
    *,
    pooled: bool = False,
    **options: Any,
) -> Claim:
    """The exponent ``a`` of ``curve ~ x^a`` against ``predicted``: the mean over seeds of the per-seed log-log
    slopes (:func:`loglog_slopes`, ``curves`` (seeds, k)) with its Student-t interval, or with ``pooled=True`` one
    fit over every (x, seed) (:func:`pooled_slope`, ``curves`` (k, seeds)) with the slope's interval; ``options``:
    the keywords of :meth:`Claim.from_interval`.

    >>> rng = np.random.default_rng(1)
    >>> n = np.array([10.0, 20.0, 40.0, 80.0])
    >>> curves = n**0.5 * np.exp(0.01 * rng.standard_normal((6, 4)))
    >>> c = scaling_exponent("tau ~ n^(1/2)", 0.5, n, curves, 0.05)
    >>> c.passed, c.n_seeds
    (True, 6)
    >>> scaling_exponent("tau ~ n^(1/2), pooled", 0.5, n, curves.T, 0.05, pooled=True).n_seeds
    24
    """
    level = options.get("level", 0.95)  # the interval at the level the claim records
    interval = pooled_slope(x, curves, level=level) if pooled else mean_ci(loglog_slopes(x, curves), level=level)
    return Claim.from_interval(statement, predicted, interval, tolerance, comparison, **{**CHECK, **options})


def kind_counts(claims: Sequence[Claim]) -> dict[str, int]:
    """Counts per kind (``check``/``bound``/``paper``/``unclassified``) and of ``loose`` bounds."""
    out = {k: 0 for k in KINDS}
    for c in claims:
        out[c.kind] = out.get(c.kind, 0) + 1
    out["loose"] = sum(c.loose for c in claims if c.kind == "bound")
    out["loose_one_sided"] = sum(c.loose for c in claims if c.kind != "bound")  # le/ge outside `bound`, slack > 10
    out["wide"] = sum(c.wide for c in claims)
    out["wide_justified"] = sum(c.wide and bool(c.wide_reason) for c in claims)
    out["xfail"] = sum(c.expected == "fail" for c in claims)
    return out


def format_counts(claims: Sequence[Claim]) -> str:
    """``"12 check, 3 bound (1 loose), 2 paper; 2 wide (1 justified); 1 expected to fail"`` (zero counts after
    the kinds, and unclassified, shown only when present)."""
    k = kind_counts(claims)
    parts = [
        f"{k['check']} check",
        f"{k['bound']} bound" + (f" ({k['loose']} loose)" if k["loose"] else ""),
        f"{k['paper']} paper",
    ]
    if k.get("unclassified"):
        parts.append(f"{k['unclassified']} unclassified")
    extra = []
    if k["wide"]:
        extra.append(f"{k['wide']} wide" + (f" ({k['wide_justified']} justified)" if k["wide_justified"] else ""))
    if k["loose_one_sided"]:
        extra.append(f"{k['loose_one_sided']} one-sided non-bound with slack > {LOOSE_SLACK:g}")
    if k["xfail"]:
        extra.append(f"{k['xfail']} expected to fail")
    return ", ".join(parts) + ("; " + ", ".join(extra) if extra else "")


@dataclasses.dataclass(frozen=True)
class ChanceFailures:
    """How many exact-expectation claims miss their own interval, against what chance predicts.

    Only ``comparison="ci"`` claims (an exact expectation inside an interval) have a known miss rate under a
    correct prediction: ``1 - level`` each. ``failed`` counts those (expected to pass) whose prediction lies
    outside their own 95% interval, whether they pass at the family's level (a miss within chance,
    :attr:`Claim.chance_miss`) or not; ``family_failed`` counts those that fail at the family's level (what makes a
    result fail). Claims expected to fail (known disagreements, each with its reason) are not chance and are left
    out of ``n`` (counted in ``known``). ``p_value`` is the binomial probability of at least ``failed`` misses among
    ``n`` when every prediction is right; a small value (say < 0.05) means the misses are more than chance and
    each needs an explanation. ``p_low`` is the probability of at most ``failed``; a small value means fewer
    misses than chance predicts (intervals wider than their coverage, or claims revised after a miss).
    """

    n: int
    failed: int
    expected: float
    p_value: float
    p_low: float = 1.0
    known: int = 0
    family_failed: int = 0

    def __str__(self) -> str:
        known = f" ({self.known} expected to fail, not counted)" if self.known else ""
        if not self.n:
            return "no exact-expectation interval claims" + known
        text = (
            f"{self.failed} of {self.n} exact-expectation claims lie outside their 95% interval{known}; "
            f"{self.expected:.2g} expected by chance, P(>= {self.failed} by chance) = {self.p_value:.2g}"
        )
        if self.p_low < 0.05:
            text += f", P(<= {self.failed}) = {self.p_low:.2g}: fewer misses than chance predicts"
        return text + f"; {self.family_failed} fail at their family's level"


def chance_failures(claims: Sequence[Claim], *, level: float = 0.95) -> ChanceFailures:
    """:class:`ChanceFailures` of the ``comparison="ci"`` claims among ``claims`` (see there)."""
    from scipy import stats

    ci = [c for c in claims if c.comparison == "ci" and c.expected != "fail"]
    known = sum(c.comparison == "ci" and c.expected == "fail" for c in claims)
    failed = sum(not c.passed or c.chance_miss for c in ci)
    family_failed = sum(not c.passed for c in ci)
    if not ci:
        return ChanceFailures(0, 0, 0.0, 1.0, 1.0, known)
    p = float(stats.binom.sf(failed - 1, len(ci), 1 - level))
    p_low = float(stats.binom.cdf(failed, len(ci), 1 - level))
    return ChanceFailures(len(ci), failed, len(ci) * (1 - level), p, p_low, known, family_failed)


def _measured_text(c: Claim) -> str:
    if c.ci:
        return f"{c.measured:.5g} +- {c.ci:.2g} (n={c.n_seeds})"
    return f"{c.measured:.5g}"


def outcome_summary(claims: Sequence[Claim]) -> str:
    """``"12/14 claims pass (...)"`` followed by the expected failures and any outcome that differs from its
    expectation (a regression or an unexpected pass)."""
    text = f"{sum(c.passed for c in claims)}/{len(claims)} claims pass ({format_counts(claims)})"
    xfail = sum(c.status == "XFAIL" for c in claims)
    regressions = sum(c.status == "FAIL" for c in claims)
    xpass = sum(c.status == "XPASS" for c in claims)
    if xfail:
        text += f"; {xfail} fail as expected"
    if regressions or xpass:
        text += f"; NOT AS EXPECTED: {regressions} regression(s), {xpass} unexpected pass(es)"
    return text


def format_claims(name: str, claims: Sequence[Claim]) -> str:
    """A plain-text table: status, kind, statement, predicted, measured (+- CI), criterion, slack, WIDE; the
    reason under each claim expected to fail."""
    lines = [f"{name}: {outcome_summary(claims)}"]
    chance = chance_failures(claims)
    if chance.n:
        lines.append(f"  ({chance})")
    width = min(72, max((len(c.statement) for c in claims), default=10))
    for c in claims:
        stmt = c.statement if len(c.statement) <= width else c.statement[: width - 3] + "..."
        slack = "" if c.slack is None else f"  slack {c.slack:.3g}" + (" LOOSE" if c.loose else "")
        if c.margin is not None:
            slack += f"  margin {c.margin:.3g} CI"
        wide = ("  WIDE" + (f" ({c.wide_reason})" if c.wide_reason else "")) if c.wide else ""
        if c.chance_miss:
            wide += f"  outside its {100 * c.level:g}% CI, within its family's ({c.decision_level:.4g})"
        lines.append(
            f"  [{c.status:<5}] {c.kind:<6} {stmt:<{width}}  predicted {c.predicted:>11.5g}  measured "
            f"{_measured_text(c):>24}  ({c.criterion}){slack}{wide}"
        )
        if c.expected == "fail":
            lines.append(f"          expected to fail: {c.reason}")
    return "\n".join(lines)


# --- references recomputed by claims, remembered on their inputs ---------------------------------------------------


def _fingerprint(value: Any) -> Any:
    """A hashable digest of ``value``: arrays by dtype, shape and a BLAKE2 hash of their bytes, sequences element by
    element, anything else as itself (it must be hashable)."""
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, *(_fingerprint(v) for v in value))
    if hasattr(value, "__array__") and not isinstance(value, (int, float, complex, bool, str)):
        a = np.ascontiguousarray(np.asarray(value))
        return ("array", a.dtype.str, a.shape, hashlib.blake2b(a.tobytes(), digest_size=16).digest())
    return value


def memoized(fn: Callable, size: int = 64) -> Callable:
    """``fn``, a pure function of arrays and hashable values (a NumPy reference a claim recomputes from stored
    arrays), remembered on its arguments' contents: a call with the same bytes returns the earlier result (the
    ``size`` most recent are kept). The claims of a run are evaluated many times on nearly the same data (the
    claim-coverage test perturbs one array at a time); a reference whose inputs did not change is not recomputed.
    The result is shared between calls: do not modify it.

    >>> calls = []
    >>> @memoized
    ... def total(x):
    ...     calls.append(1)
    ...     return float(np.sum(x))
    >>> total(np.ones(3)), total(np.ones(3)), total(np.zeros(3)), len(calls)
    (3.0, 3.0, 0.0, 2)
    """
    cache: OrderedDict[Any, Any] = OrderedDict()

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        key = (_fingerprint(args), _fingerprint(tuple(sorted(kwargs.items()))))
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
        out = fn(*args, **kwargs)
        cache[key] = out
        if len(cache) > size:
            cache.popitem(last=False)
        return out

    return wrapper
