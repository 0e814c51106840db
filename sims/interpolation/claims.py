"""Claims of the interpolation result (kinds and comparisons: the ``jaxwb.sims.interpolation`` docstring)."""

from __future__ import annotations

import math

import numpy as np

from jaxwb.sims.core.claims import Claim
from jaxwb.sims.interpolation.config import METHODS, TAIL_BOUNDS, TAIL_COVERAGE, Config
from jaxwb.sims.interpolation.statistics import boot_halfwidth
from jaxwb.theory import interpolation as ip

# ---------------------------------------------------------------------------------------------------------
# Claims
# ---------------------------------------------------------------------------------------------------------


def _speedup(hits):
    return hits[:, :1] / hits


def _with_boot(point, boot):
    """Stack a point estimate (...,) and its bootstrap replicates (..., n_boot) into (..., 1 + n_boot)."""
    return np.concatenate([np.asarray(point, np.float64)[..., None], np.asarray(boot, np.float64)], -1)


def _claim(statement, predicted, stat, tolerance, comparison, *, kind, n_seeds, source="theory", **extra):
    """A claim on a statistic given as (1 + n_boot,) = (point, bootstrap replicates...); ``extra``: expected,
    reason, wide_reason of :class:`Claim`."""
    stat = np.asarray(stat, np.float64)
    return Claim(
        statement,
        float(predicted),
        float(stat[0]),
        tolerance,
        comparison,
        kind=kind,
        ci=boot_halfwidth(stat[0], stat[1:]),
        n_seeds=int(n_seeds),
        source=source,
        **extra,
    )


def _seeds(mc) -> np.ndarray:
    """Seeds per (method, B), (nM, nB); outputs written before seeds were per configuration hold one count per B."""
    seeds = np.asarray(mc["seeds"])
    return np.broadcast_to(seeds, (len(METHODS), seeds.shape[-1])) if seeds.ndim == 1 else seeds


def _ci(stat):
    """95% half-width of a (1 + n_boot,) statistic."""
    stat = np.asarray(stat, np.float64)
    return boot_halfwidth(stat[0], stat[1:])


def _tail(cfg: Config, *pairs, what="hits") -> dict:
    """expected="fail" with the heavy-tail reason when a (method, B) of ``pairs`` is in ``cfg.tail_configs`` for
    the statistic ``what`` ("hits" or "decay")."""
    keys = [(m, int(B), what) for m, B in pairs if (m, int(B), what) in set(cfg.tail_configs)]
    if not keys:
        return {}
    measured = "; ".join(f"{m} at B={B}: {TAIL_COVERAGE[(m, B, w)]}" for m, B, w in keys if (m, B, w) in TAIL_COVERAGE)
    hit = ", ".join(f"{m} at B={B}" for m, B, _ in keys)
    return {"expected": "fail", "reason": TAIL_REASON.format(hit) + (f" Measured: {measured}." if measured else "")}


TAIL_REASON = (
    "known disagreement ({}): the grid optimum puts a mode on the edge of mean-square stability, where "
    "E||e_t||^2 is carried by rare trajectories that the seeds do not sample (a large-deviation quantity): the "
    "sample mean runs below the exact recursion and the bootstrap interval, blind to what no seed drew, is too "
    "narrow; more seeds do not fix it (rare-event sampling would). Not a theory error: the recursion matches the "
    "dense operator and enumeration in the unit tests, and every configuration away from the edge agrees."
)


def _tail_bound(cfg: Config, m: str, B: int, what: str) -> float | None:
    """The relative tolerance of (m, B, what) in ``cfg.tail_bounds``, else None."""
    return {(a, int(b), w): t for a, b, w, t in cfg.tail_bounds}.get((m, int(B), what))


def _check_or_bound(
    cfg: Config, m: str, B: int, what: str, statement: str, exact, stat, n_seeds, note: str = ""
) -> Claim | None:
    """The check of a Monte-Carlo statistic (1 + n_boot,) against the exact recursion: ``ci`` (exact inside the
    interval at the family's level, interval <= 5%), expected to fail for ``cfg.tail_configs``; the bound the data
    support (whole interval within the tolerance, relative) for ``cfg.tail_bounds``; None for ``cfg.unclaimed``."""
    if (m, int(B), what) in set(cfg.unclaimed):
        return None
    tol = _tail_bound(cfg, m, B, what)
    if tol is None:
        return _claim(
            statement + f" ({note + '; ' if note else ''}exact inside the CI, CI <= 5%)",
            exact,
            stat,
            0.05 * exact,
            "ci",
            kind="check",
            n_seeds=n_seeds,
            **_tail(cfg, (m, B), what=what),
        )
    return _claim(
        statement
        + f" ({note + '; ' if note else ''}heavy tail: the whole CI within {100 * tol:g}%, the bound the data "
        "support)",
        exact,
        stat,
        tol,
        "rel",
        kind="check",
        n_seeds=n_seeds,
        wide_reason=(
            "a configuration at the edge of mean-square stability, where the bootstrap interval is too narrow and "
            "the check flips between seeds; the tolerance is what its replicate studies bound: "
            + TAIL_BOUNDS[(m, int(B), what)]
        ),
    )


WIDE_ORDER = (
    "the paper gives saturation scales only up to a constant factor (an order-of-magnitude statement); the value "
    "itself is decided by the check against the exact recursion beside it"
)


def _slope(x, Y):
    """Least-squares slope of Y (k, m) against x (k,), per column."""
    xc = x - x.mean()
    return (xc[:, None] * (Y - Y.mean(0))).sum(0) / (xc**2).sum()


def speedup_claims(results: dict, cfg: Config) -> list[Claim]:
    """Speedup ~ B below saturation (paper), the same log-log slope in the exact recursion (check)."""
    out = []
    Bs = np.asarray(results["batch_sizes"], dtype=float)
    c = results["constants"]
    mc, th = results["mc"], results["theory"]
    seeds = _seeds(mc)
    Hs = _with_boot(mc["hits"], mc["hits_boot"])  # (nM, nB, 1 + n_boot): iterations to eps
    Th = np.asarray(th["hits"])
    i_hb = METHODS.index("hb")
    boot_note = f"95% bootstrap CI over seeds (scipy.stats.bootstrap, percentile, {cfg.n_boot} resamples)"
    lin = Bs <= cfg.linear_fraction * float(c["sat_shb"])
    if lin.sum() < 2:
        raise ValueError(f"batch_sizes must hold >= 2 values <= linear_fraction x tr H/sqrt(L mu), got {Bs}")
    n_lin = int(seeds[i_hb, lin].min())
    slope = _slope(np.log(Bs[lin]), np.log(Hs[i_hb, :1] / Hs[i_hb, lin]))
    exact_slope = float(_slope(np.log(Bs[lin]), np.log(Th[i_hb, :1, None] / Th[i_hb, lin, None]))[0])
    rng_note = f"B <= {cfg.linear_fraction:g} tr H/sqrt(L mu) = {cfg.linear_fraction * c['sat_shb']:.1f}"
    out.append(
        _claim(
            f"heavy-ball speedup T_HB(1)/T_HB(B) for {rng_note}: Monte-Carlo log-log slope = the exact "
            f"recursion's ({boot_note}; exact inside the CI, CI <= 0.05)",
            exact_slope,
            slope,
            0.05,
            "ci",
            kind="check",
            n_seeds=n_lin,
        )
    )
    # the paper's perfect parallelization, with its simple momentum choice (our rule: critically damped slowest
    # mode, step ~ B^2 up to 2/L): the grid optimum's slope above bends below 1 (0.83-0.98 exact over the quick
    # preset's problems, 0.945 full) because the grid finds a relatively better optimum at B = 1, while the rule's
    # exact slope is 1.003-1.007 (quick) and 0.996 (full)
    i_rule = METHODS.index("hb_rule")
    n_rule = int(seeds[i_rule, lin].min())
    rule_slope = _slope(np.log(Bs[lin]), np.log(Hs[i_rule, :1] / Hs[i_rule, lin]))
    rule_exact = float(_slope(np.log(Bs[lin]), np.log(Th[i_rule, :1, None] / Th[i_rule, lin, None]))[0])
    out.append(
        _claim(
            f"heavy-ball rule's speedup T_rule(1)/T_rule(B) for {rng_note}: Monte-Carlo log-log slope = the exact "
            f"recursion's ({boot_note}; exact inside the CI, CI <= 0.05)",
            rule_exact,
            rule_slope,
            0.05,
            "ci",
            kind="check",
            n_seeds=n_rule,
        )
    )
    out.append(
        _claim(
            f"paper: perfect parallelization with a simple momentum choice, speedup directly proportional to B below "
            f"saturation: the heavy-ball rule's log-log slope of T_rule(1)/T_rule(B) = 1 for {rng_note} (1 inside "
            f"the CI, CI <= 0.05; {boot_note})",
            1.0,
            rule_slope,
            0.05,
            "ci",
            kind="paper",
            n_seeds=n_rule,
            source="paper",
        )
    )
    i_sgd, b_hi = METHODS.index("sgd"), int(np.nonzero(lin)[0][-1])
    out.append(
        _claim(
            f"speedup over SGD at B = 1, T_SGD(1)/T_HB(B) at B = {Bs[b_hi]:g} (the largest B below "
            f"{cfg.linear_fraction:g} tr H/sqrt(L mu)): Monte Carlo = exact recursion ({boot_note}; exact inside the "
            "CI, CI <= 5%)",
            Th[i_sgd, 0] / Th[i_hb, b_hi],
            Hs[i_sgd, 0] / Hs[i_hb, b_hi],
            0.05 * Th[i_sgd, 0] / Th[i_hb, b_hi],
            "ci",
            kind="check",
            n_seeds=min(seeds[i_sgd, 0], seeds[i_hb, b_hi]),
            **_tail(cfg, ("sgd", 1), ("hb", Bs[b_hi])),
        )
    )
    return out


def acceleration_claims(results: dict, cfg: Config) -> list[Claim]:
    """Acceleration over SGD at the same B, against the exact recursion."""
    out = []
    mc, th = results["mc"], results["theory"]
    seeds = _seeds(mc)
    Hs = _with_boot(mc["hits"], mc["hits_boot"])  # (nM, nB, 1 + n_boot): iterations to eps
    i_sgd, i_hb, i_nag, i_rule = (METHODS.index(m) for m in METHODS)
    boot_note = f"95% bootstrap CI over seeds ({cfg.n_boot} resamples)"
    Th = np.asarray(th["hits"])
    for B in cfg.rate_check_batches:
        j = list(cfg.batch_sizes).index(B)
        out.append(
            _claim(
                f"acceleration over SGD at the same B: T_SGD(B)/T_HB(B) (Monte Carlo) = exact E||e||^2 recursion, "
                f"B={B} ({boot_note}; exact value inside the CI, CI <= 5%)",
                Th[i_sgd, j] / Th[i_hb, j],
                Hs[i_sgd, j] / Hs[i_hb, j],
                0.05 * Th[i_sgd, j] / Th[i_hb, j],
                "ci",
                kind="check",
                n_seeds=min(seeds[i_sgd, j], seeds[i_hb, j]),
                **_tail(cfg, ("sgd", B), ("hb", B)),
            )
        )
    return out + acceleration_growth_claims(results, cfg)


def acceleration_growth_claims(results: dict, cfg: Config) -> list[Claim]:
    """Acceleration over SGD at the same B grows with B (paper): A(B) = T_SGD(B)/T_HB(B), A(B_max)/A(1)."""
    mc, th = results["mc"], results["theory"]
    Bs = np.asarray(results["batch_sizes"], dtype=float)
    seeds = _seeds(mc)
    Hs = _with_boot(mc["hits"], mc["hits_boot"])
    Th = np.asarray(th["hits"])
    i_sgd, i_hb = METHODS.index("sgd"), METHODS.index("hb")
    A = Hs[i_sgd] / Hs[i_hb]  # (nB, 1 + n_boot)
    growth = np.log2(A[-1] / A[0])
    exact = float(np.log2((Th[i_sgd, -1] / Th[i_hb, -1]) / (Th[i_sgd, 0] / Th[i_hb, 0])))
    boot_note = f"95% bootstrap CI over seeds ({cfg.n_boot} resamples)"
    n = int(seeds[[i_sgd, i_hb]][:, [0, -1]].min())
    return [
        _claim(
            f"growth of the acceleration over SGD, log2(A({Bs[-1]:g})/A(1)) with A(B) = T_SGD(B)/T_HB(B): Monte Carlo "
            f"= exact recursion ({boot_note}; exact inside the CI, CI <= 0.1)",
            exact,
            growth,
            0.1,
            "ci",
            kind="check",
            n_seeds=n,
        ),
        Claim(
            f"paper: the acceleration of heavy ball over SGD grows with B: A({Bs[-1]:g}) > A(1), A(B) = "
            f"T_SGD(B)/T_HB(B), decided on the {boot_note} of log2 A({Bs[-1]:g})/A(1) (margin in CIs)",
            0.0,
            float(growth[0]),
            0.0,
            "ge",
            kind="paper",
            ci=_ci(growth),
            n_seeds=n,
            source="paper",
            is_ordering=True,
        ),
    ]


def saturation_claims(results: dict, cfg: Config) -> list[Claim]:
    """SGD saturation, located in the simulation: T(B) ~ T_inf (1 + B*/B)  =>  B* = T(1)/T(B_max) - 1."""
    out = []
    Bs = np.asarray(results["batch_sizes"], dtype=float)
    c = results["constants"]
    mc, th = results["mc"], results["theory"]
    seeds = _seeds(mc)
    Hs = _with_boot(mc["hits"], mc["hits_boot"])  # (nM, nB, 1 + n_boot): iterations to eps
    Ds = -np.log(_with_boot(mc["rates"], mc["rates_boot"]))  # per-step decay of E||e||^2 on the fit window
    Es = 1.0 / Ds  # iterations per e-fold
    i_sgd, i_hb, i_nag, i_rule = (METHODS.index(m) for m in METHODS)
    boot_note = f"95% bootstrap CI over seeds ({cfg.n_boot} resamples)"
    Th = np.asarray(th["hits"])
    bstar_exact = Th[i_sgd, 0] / Th[i_sgd, -1] - 1.0  # iterations to eps: early, so little heavy-tail bias
    bstar = Hs[i_sgd, 0] / Hs[i_sgd, -1] - 1.0
    bstar_asym = Es[i_sgd, 0] / Es[i_sgd, -1] - 1.0  # asymptotic e-fold times (the transient excluded)
    n_sat = int(min(seeds[i_sgd, 0], seeds[i_sgd, -1]))
    out.append(
        _claim(
            f"SGD saturation batch B* = T(1)/T(B={Bs[-1]:g}) - 1 of the Monte-Carlo iterations to eps = the exact "
            f"operator's ({boot_note}; exact inside the CI, CI <= 10%)",
            bstar_exact,
            bstar,
            0.1 * bstar_exact,
            "ci",
            kind="check",
            n_seeds=n_sat,
        )
    )
    mbb = float(c["sat_sgd"]) - 1.0
    out.append(
        _claim(
            f"paper: SGD saturates at B ~ L_max/L: lr*(B) = B/(L_max + (B-1)L) gives T(B) ~ L + (L_max-L)/B, i.e. "
            f"B* = L_max/L - 1 = {mbb:.2f} (Ma, Bassily & Belkin 2018); Monte-Carlo B* within 2x (log2 ratio, "
            "|.| <= 1; B* from the asymptotic Monte-Carlo e-fold times)",
            0.0,
            np.log2(np.maximum(bstar_asym, 1e-12) / mbb),
            1.0,
            "abs",
            kind="paper",
            n_seeds=n_sat,
            source="paper",
            wide_reason=WIDE_ORDER,
        )
    )
    gd_ef = float(ip.efold_time(results["deterministic"]["gd_rho"]))
    out.append(
        _claim(
            f"SGD at B = {Bs[-1]:g} runs at full-batch GD's optimal rate: Monte-Carlo e-fold time = "
            f"-1/log(((k-1)/(k+1))^2) ({boot_note})",
            gd_ef,
            Es[i_sgd, -1],
            0.05,
            "rel",
            kind="check",
            n_seeds=seeds[i_sgd, -1],
            wide_reason=(
                "at a finite B_max the rate exceeds GD's by O(B*/B_max) (2% at the quick preset's B = 32; E||e||^2 >= "
                "||E e||^2 makes it one-sided only asymptotically, the windowed fit may sit a CI below); the value at "
                "B_max is decided by the decay check against the exact recursion"
            ),
        )
    )
    return out


def large_batch_claims(results: dict, cfg: Config) -> list[Claim]:
    """Large B: SHB approaches full-batch accelerated heavy ball (Monte Carlo e-fold time)."""
    out = []
    Bs = np.asarray(results["batch_sizes"], dtype=float)
    mc = results["mc"]
    seeds = _seeds(mc)
    Ds = -np.log(_with_boot(mc["rates"], mc["rates_boot"]))  # per-step decay of E||e||^2 on the fit window
    Es = 1.0 / Ds  # iterations per e-fold
    i_sgd, i_hb, i_nag, i_rule = (METHODS.index(m) for m in METHODS)
    pol_ef = float(ip.efold_time(results["deterministic"]["polyak_rate_sq"]))
    out.append(
        _claim(
            f"paper: at B = {Bs[-1]:g} heavy ball is within 2x of full-batch Polyak heavy ball "
            "((sqrt k-1)/(sqrt k+1))^2: log2 of the Monte-Carlo e-fold-time ratio, |.| <= 1",
            0.0,
            np.log2(Es[i_hb, -1] / pol_ef),
            1.0,
            "abs",
            kind="paper",
            n_seeds=seeds[i_hb, -1],
            source="paper",
            wide_reason=(
                "the paper says heavy ball 'approaches' the full-batch accelerated limit without a rate; the e-fold "
                "time at B_max is decided by the decay check against the exact recursion"
            ),
        )
    )
    out += momentum_saturation_claims(results, cfg)
    out.append(
        Claim(
            "noiseless limit (B = inf) of the operator's spectral radius (root finding) at Polyak's parameters = "
            "closed form ((sqrt k-1)/(sqrt k+1))^2",
            results["deterministic"]["polyak_rate_sq"],
            results["deterministic"]["hb_rho"],
            1e-6,
            "rel",
            kind="check",
            source="theory",
            wide_reason=(
                "deterministic: the root finder stops at ~1e-12 in the quick preset but ~1e-9 in the full one (cond "
                "1000, a double root at Polyak's parameters); 1e-6 is far below any effect a claim reads"
            ),
        )
    )
    return out


def momentum_saturation_claims(results: dict, cfg: Config) -> list[Claim]:
    """Heavy ball saturates at B ~ tr H / sqrt(L mu) (paper), located like SGD's: B*_HB = T_HB(1)/T_HB(B_max) - 1."""
    Bs = np.asarray(results["batch_sizes"], dtype=float)
    c = results["constants"]
    mc, th = results["mc"], results["theory"]
    seeds = _seeds(mc)
    Hs = _with_boot(mc["hits"], mc["hits_boot"])
    Th = np.asarray(th["hits"])
    i_hb = METHODS.index("hb")
    # T(B) ~ T_inf (1 + B*/B)  =>  B* = (r - 1) / (1 - r / B_max), r = T(1)/T(B_max) (B_max need not be >> B*)
    bstar_of = lambda r: (r - 1.0) / (1.0 - r / Bs[-1])
    bstar = bstar_of(Hs[i_hb, 0] / Hs[i_hb, -1])
    exact = float(bstar_of(Th[i_hb, 0] / Th[i_hb, -1]))
    n = int(min(seeds[i_hb, 0], seeds[i_hb, -1]))
    boot_note = f"95% bootstrap CI over seeds ({cfg.n_boot} resamples)"
    sat = float(c["sat_shb"])
    return [
        _claim(
            f"heavy-ball saturation batch B*_HB = (r - 1)/(1 - r/{Bs[-1]:g}), r = T_HB(1)/T_HB({Bs[-1]:g}) "
            "(iterations to eps; T(B) ~ T_inf (1 + B*/B)): Monte Carlo = "
            f"exact recursion ({boot_note}; exact inside the CI, CI <= 10%)",
            exact,
            bstar,
            0.1 * exact,
            "ci",
            kind="check",
            n_seeds=n,
        ),
        _claim(
            f"paper: heavy-ball momentum saturates at B ~ tr H / sqrt(L mu) = {sat:.1f}: B*_HB within 2x of it (log2 "
            f"ratio, |.| <= 1; {boot_note})",
            0.0,
            np.log2(np.maximum(bstar, 1e-12) / sat),
            1.0,
            "abs",
            kind="paper",
            n_seeds=n,
            source="paper",
            wide_reason=WIDE_ORDER,
        ),
    ]


def iterations_claims(results: dict, cfg: Config) -> list[Claim]:
    """Monte-Carlo iterations to eps vs the exact recursion's (every method, at the rate-check B)."""
    out = []
    mc, th = results["mc"], results["theory"]
    seeds = _seeds(mc)
    Hs = _with_boot(mc["hits"], mc["hits_boot"])  # (nM, nB, 1 + n_boot): iterations to eps
    Th = np.asarray(th["hits"])
    for B in cfg.rate_check_batches:
        j = list(cfg.batch_sizes).index(B)
        for i, m in enumerate(METHODS):
            c = _check_or_bound(
                cfg,
                m,
                B,
                "hits",
                f"Monte-Carlo iterations until E||e||^2 <= {cfg.eps:g} ||e_0||^2 = exact recursion's: {m}, B={B}",
                Th[i, j],
                Hs[i, j],
                seeds[i, j],
            )
            out += [c] if c is not None else []
    return out


def decay_claims(results: dict, cfg: Config) -> list[Claim]:
    """Monte-Carlo decay vs the exact curve's decay on the same window (per-step -log rate)."""
    out = []
    mc, th = results["mc"], results["theory"]
    seeds = _seeds(mc)
    Ds = -np.log(_with_boot(mc["rates"], mc["rates_boot"]))  # per-step decay of E||e||^2 on the fit window
    boot_note = f"95% bootstrap CI over seeds ({cfg.n_boot} resamples)"
    rfit = -np.log(np.asarray(th["rates_fit"]))
    for B in cfg.rate_check_batches:
        j = list(cfg.batch_sizes).index(B)
        for i, m in enumerate(METHODS):
            c = _check_or_bound(
                cfg,
                m,
                B,
                "decay",
                f"Monte-Carlo decay -log(rate) of E||e||^2 = exact recursion's on the same window: {m}, B={B}",
                rfit[i, j],
                Ds[i, j],
                seeds[i, j],
                note=boot_note,
            )
            out += [c] if c is not None else []
    return out


def rule_claims(results: dict, cfg: Config) -> list[Claim]:
    """The simple momentum rule vs grid-optimised heavy ball (Monte Carlo e-fold times)."""
    out = []
    mc = results["mc"]
    seeds = _seeds(mc)
    Ds = -np.log(_with_boot(mc["rates"], mc["rates_boot"]))  # per-step decay of E||e||^2 on the fit window
    Es = 1.0 / Ds  # iterations per e-fold
    i_sgd, i_hb, i_nag, i_rule = (METHODS.index(m) for m in METHODS)
    log2_cost = np.log2(Es[i_rule] / Es[i_hb])
    # the worst B chosen on the exact curves' fits (the argmax of noisy Monte-Carlo values picks the noisiest B)
    exact_cost = np.log2(
        np.log(np.asarray(results["theory"]["rates_fit"])[i_hb]) / np.log(results["theory"]["rates_fit"][i_rule])
    )
    j = int(np.argmax(np.abs(exact_cost)))
    Bs = np.asarray(results["batch_sizes"])
    out.append(
        _claim(
            'paper ("a simple momentum choice that works", read as: within 2x of the tuned optimum): rule\'s '
            f"Monte-Carlo e-fold time / grid-optimised heavy ball's at the exact recursion's worst B = {Bs[j]:g} "
            f"(exact: {exact_cost[j]:.3f}), log2, |.| <= 1",
            0.0,
            log2_cost[j],
            1.0,
            "abs",
            kind="paper",
            n_seeds=int(min(seeds[i_hb, j], seeds[i_rule, j])),
            source="reconstruction",
            wide_reason=(
                "the rule is ours (the paper only says a simple choice works): 'works' read as within 2x of the "
                "tuned optimum; its e-fold times per B are decided by the decay checks against the exact recursion"
            ),
        )
    )
    return out


def _aux_seeds(conf: dict, cfg: Config) -> int:
    """Seeds of a Kaczmarz / coordinate-descent configuration (outputs written before per-configuration counts: the
    preset's ``aux_seeds``)."""
    return int(conf["seeds"]) if "seeds" in conf else cfg.aux_seeds


def kaczmarz_claims(results: dict, cfg: Config) -> list[Claim]:
    """Kaczmarz and coordinate descent."""
    out = []
    for name, what in (
        ("kaczmarz", "randomized Kaczmarz E||e||^2"),
        ("cd", "randomized coordinate descent f-f*"),
    ):
        r = results[name]
        single = -np.log(_with_boot(r["single"]["rate_mc"], r["single"]["rate_boot"]))
        out.append(
            _claim(
                f"{what}: Monte-Carlo decay per step >= bound -log(1 - sigma_min^2/||A||_F^2) (single row)",
                -math.log(r["bound_rate"]),
                single,
                0.0,
                "ge",
                kind="bound",
                n_seeds=_aux_seeds(r["single"], cfg),
                source="paper",
            )
        )
        for cname in ("single", "block", "block_hb"):
            hit = _with_boot(r[cname]["hit_mc"], r[cname]["hit_boot"])
            out.append(
                _claim(
                    f"{what}, {cname}: Monte-Carlo iterations to {cfg.aux_eps:g} = exact recursion's (exact inside "
                    "the CI, CI <= 5%)",
                    r[cname]["hit_exact"],
                    hit,
                    0.05 * r[cname]["hit_exact"],
                    "ci",
                    kind="check",
                    n_seeds=_aux_seeds(r[cname], cfg),
                )
            )
        for cname in ("single", "block", "block_hb"):
            out.append(
                _claim(
                    f"{what}, {cname}: Monte-Carlo decay -log(rate) = exact recursion's on the same window (exact "
                    "inside the CI, CI <= 5%)",
                    -math.log(r[cname]["rate_exact_fit"]),
                    -np.log(_with_boot(r[cname]["rate_mc"], r[cname]["rate_boot"])),
                    -0.05 * math.log(r[cname]["rate_exact_fit"]),
                    "ci",
                    kind="check",
                    n_seeds=_aux_seeds(r[cname], cfg),
                )
            )
    return out


def divergence_claims(results: dict, cfg: Config) -> list[Claim]:
    """No Monte-Carlo run diverges at parameters whose exact mean-square rate is < 1."""
    rho = np.asarray(results["theory"]["rho"])
    frac = np.asarray(results["mc"]["diverged_fraction"])
    return [
        Claim(
            f"no Monte-Carlo trajectory diverges (||e_t||^2 > 1e10 ||e_0||^2) at the optimised parameters, whose exact "
            f"mean-square rate is < 1 (max rho = {rho.max():.5f}): largest diverged fraction over (method, B) = 0",
            0.0,
            float(frac.max()) if rho.max() < 1 else math.nan,
            0.0,
            "abs",
            kind="check",
            source="theory",
        )
    ]


def constants_claims(results: dict, cfg: Config) -> list[Claim]:
    """The problem's constants against independent computations: the row-norm spread and (``"norm"`` sampling)
    L_max = tr H against numpy from A; the rule's saturation batch (``rule_saturation``) against where the steps
    ``momentum_rule`` returns stop growing."""
    c, ref = results["constants"], results["reference"]
    rounding = (
        "deterministic: two float64 computations of one quantity (d <= 12 eigen-solves and sums) agree to rounding "
        "(~1e-15 observed); 1e-9 is far below any effect a claim reads"
    )
    out = [
        Claim(
            "row-norm spread max||a_i||^2/mean||a_i||^2 of the problem (theory constants) = numpy's from the rows of A "
            "(np.linalg.norm)",
            ref["row_spread"],
            float(c["row_spread"]),
            1e-9,
            "rel",
            kind="check",
            source="theory",
            wide_reason=rounding,
        )
    ]
    if cfg.sampling == "norm":  # p_i ~ ||a_i||^2, w_i = 1/(n p_i): E[X^2] = (||A||_F^2/n) H, so L_max = tr H
        out.append(
            Claim(
                "rows sampled ~ ||a_i||^2 with weights 1/(n p_i): E[X^2] = tr(H) H, so L_max = lambda_max(H^-1/2 E[X^2]"
                " H^-1/2) (theory, eigen-solve) = tr H = ||A||_F^2/n (numpy)",
                ref["tr_H"],
                float(c["L_max"]),
                1e-9,
                "rel",
                kind="check",
                source="theory",
                wide_reason=rounding,
            )
        )
    # the rule's step grows like B^2 below saturation and is constant above: from the steps it returns at the smallest
    # B (growing) and the largest (saturated), the crossing is B_1 sqrt(lr(B_max)/lr(B_1)); NaN unless bracketed
    Bs = np.asarray(results["batch_sizes"], dtype=float)
    lr = np.asarray(results["params"]["hb_rule"]["lr"], np.float64)
    saturated = lr[-1] < lr[0] * (Bs[-1] / Bs[0]) ** 2 * (1 - 1e-9)
    growing = len(Bs) > 2 and abs(lr[1] / lr[0] - (Bs[1] / Bs[0]) ** 2) < 1e-9 * (Bs[1] / Bs[0]) ** 2
    crossing = Bs[0] * math.sqrt(lr[-1] / lr[0]) if saturated and growing else math.nan
    # critical damping of the slowest mode (the rule's design): z^2 - (1 + beta - lr mu) z + beta has a double root,
    # so the mean of its roots (1 + beta - lr mu)/2 equals the square root of their product, sqrt(beta)
    beta = np.asarray(results["params"]["hb_rule"]["beta"], np.float64)
    gap = np.abs((1.0 + beta - lr * float(c["mu"])) / 2.0 - np.sqrt(beta)) / np.sqrt(beta)
    out.append(
        Claim(
            "heavy-ball rule critically damps the slowest mode at every B: z^2 - (1 + beta - lr mu) z + beta has a "
            "double root, max_B |(1 + beta - lr mu)/2 - sqrt(beta)|/sqrt(beta) = 0 (lr, beta returned by "
            "momentum_rule)",
            0.0,
            float(gap.max()),
            1e-9,
            "abs",
            kind="check",
            source="theory",
            wide_reason=rounding,
        )
    )
    out.append(
        Claim(
            "heavy-ball rule's saturation batch L_max sqrt(a)/(2 sqrt(L mu)), a = 2 (rule_saturation) = where the "
            f"steps momentum_rule returns stop growing like B^2: B_1 sqrt(lr(B={Bs[-1]:g})/lr(B={Bs[0]:g})) (lr "
            f"saturated at B = {Bs[-1]:g}, lr(B_2)/lr(B_1) = (B_2/B_1)^2)",
            crossing,
            float(c["sat_rule"]),
            1e-9,
            "rel",
            kind="check",
            source="theory",
            wide_reason=rounding,
        )
    )
    return out


def claims(results: dict, cfg: Config) -> list[Claim]:
    return [
        *divergence_claims(results, cfg),
        *speedup_claims(results, cfg),
        *acceleration_claims(results, cfg),
        *saturation_claims(results, cfg),
        *large_batch_claims(results, cfg),
        *iterations_claims(results, cfg),
        *decay_claims(results, cfg),
        *rule_claims(results, cfg),
        *kaczmarz_claims(results, cfg),
        *constants_claims(results, cfg),
    ]
