"""Interpolation-regime momentum: on consistent least squares, mini-batch heavy ball / Nesterov speed up
proportionally to the batch size B up to a saturation point tr H / sqrt(L mu), far beyond SGD's L_max / L.
Synthetic part of ``shared/papers/interpolation.md`` (Garg & Derezinski 2026).

Pipeline (``run``): one random consistent system (n x d, condition number ``cond``, "norm" sampling by
default);
for every batch size B and method (SGD, heavy ball, Nesterov) the step size and momentum are grid-optimised on
the *exact* mean-square rate rho(T) of eq. MS (``theory.interpolation.mean_square_rate``, float64); the simple
momentum rule (``momentum_rule``) is evaluated beside it; then every configuration is run by Monte Carlo
(seeds vmapped through ``sims.core.sweep.sweep``, float64) and compared with the exact E||e_t||^2 recursion.

Figures (``figures/interpolation/``):
  iterations_vs_batch.png  iterations to reach E||e||^2 <= eps ||e_0||^2 vs B (log-log), Monte Carlo and
  theory
  speedup.png              speedup over SGD at B = 1, T_SGD(1)/T(B), with the line y = B; acceleration over SGD
                           at the same B, T_SGD(B)/T(B), with the full-batch GD/Polyak ratio (95% CIs)
  rate_check.png           Monte-Carlo windowed decay vs the exact curve's on the same window (95% CIs)
  momentum_rule.png        grid-optimised vs rule (lr, beta) as functions of B, and the rule's cost
  kaczmarz_cd.png          randomized Kaczmarz (single row, block, block + momentum) and coordinate descent

Statistics. Monte Carlo runs in float64 (in float32, the B = 1 rule's momentum difference x_t - x_{t-1} at
beta ~ 0.998 loses enough precision to bias its measured decay by -2.5%, independently of the number of seeds:
this, not sampling, was the old "rule at B = 1" miss). Every Monte-Carlo statistic (iterations to eps, windowed
decay, speedups, saturation batch) carries a 95% percentile-bootstrap interval over seeds (``n_boot``
resamples); checks against the exact recursion use the "ci" comparison (exact value inside the interval, and
the interval at most 5% of it). The B = 1 optima run with ``n_seeds`` = 4096 seeds.

Claims (kinds). check: Monte-Carlo iterations to eps and windowed decay vs the exact E||e_t||^2 recursion
(eq. MS; the decay is compared with the *exact curve's fit on the same window*, not with rho(T): for the
critically damped rule the exact curve decays like t rho^t and reaches log rho only slowly, which was the old
"rule at B = 256" miss); acceleration over SGD at the same B, T_SGD(B)/T_HB(B); SGD's saturation batch
B* = T(1)/T(B_max) - 1 located in the Monte Carlo; SGD at B_max at full-batch GD's closed-form rate; the
operator's noiseless limit vs Polyak. bound: Kaczmarz / coordinate-descent decay >= sigma_min^2/||A||_F^2.
paper: speedup ~ B (log-log slope), T_SGD(1)/T_HB(B) within 2x of B, B* within 2x of L_max/L - 1 (Ma, Bassily &
Belkin's critical batch), SHB at B_max within 2x of full-batch Polyak, the rule within 2x of the tuned
optimum (all "within 2x" claims are two-sided: |log2 ratio| <= 1 with the interval).

Heavy tails. The mean of ||e_t||^2 over seeds is carried by ever rarer trajectories as t grows (the
mean-square rate is a large-deviation quantity of a product of random matrices), most at the B = 1 optima,
which sit on the edge of mean-square stability: there the sample mean decays faster than E||e_t||^2 and the
bootstrap interval, blind to what no seed sampled, is too narrow. Iterations to eps (reached after a few
e-folds) are far less affected than the asymptotic windowed decay. The quick preset checks B = 32 only (at
4096 seeds its Nesterov B = 1 optimum reaches eps 6% early, outside the interval: the heavy tail, not the
theory); the full preset checks B = 1, 16, 256, 1024 on both; the block + momentum
Kaczmarz / coordinate-descent decay (B = 4 or 8 at beta ~ 0.98) is checked on iterations to eps only.

Full preset, seed 0 (``python -m sims.core.cli run interpolation``): 46/56 claims pass (49 check, 2 bound,
5 paper). All four B = 1 windowed-decay checks now pass (the three old misses are resolved: heavy ball at its
B = 1 optimum 0.001869 +- 6.8e-5 vs the exact fit 0.001840 with 4096 seeds, the rule 0.0011623 +- 1.5e-5 vs
0.0011573 in float64, the rule at B = 256 0.08061 +- 0.0014 vs the exact curve's fit 0.08150 on the same
window). The 10 failures are all configurations whose grid optimum puts a mode on the edge of mean-square
stability, where the Monte-Carlo mean misses the tail: SGD at B = 16 and 256 (grid lr = 1.94/L and 1.99/L, the
top mode |1 - lr L| ~ 0.94-0.99 with batch noise: the sample mean sits 2.5-8x *below* the exact curve during
the transient, 18-22% fewer iterations to eps, 0.8% / 6.7% faster windowed decay; at B = 1024 the noise is
small and they agree to 0.1%), heavy ball at B = 1 and 16 (iterations to eps 1.5% / 4% early; the B = 16
decay interval is 9% wide, too wide to be informative), and the three SGD/HB acceleration ratios built on
those. They are not theory errors (the exact recursion matches enumeration and the dense operator in the unit
tests, and every configuration away from the edge agrees inside its interval); deciding them would need
rare-event sampling, not more seeds.
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from sims.core import style
from sims.core.audit import Mutant
from sims.core.harness import BenchRow, Claim, time_call
from sims.core.sweep import sweep
from theory import _validate as v
from theory import interpolation as ip

NAME = "interpolation"
TITLE = "Interpolation regime: mini-batch heavy ball / Nesterov speed up ~B until tr H / sqrt(L mu)"

METHODS = ("sgd", "hb", "nesterov", "hb_rule")  # grid-optimised SGD, HB, Nesterov; heavy ball with the B rule
GROUPS = (("sgd",), ("hb", "nesterov", "hb_rule"))  # run separately: SGD needs many more steps at large B
LABELS = {
    "sgd": "SGD (grid-opt lr)",
    "hb": "heavy ball (grid-opt lr, beta)",
    "nesterov": "Nesterov (grid-opt lr, beta)",
    "hb_rule": "heavy ball, rule lr=min(4mu(B/L_max)^2, 2/L), beta=(1-sqrt(lr mu))^2",
}
COLORS = {"sgd": "tab:blue", "hb": "tab:red", "nesterov": "tab:green", "hb_rule": "tab:purple"}


@dataclasses.dataclass(frozen=True)
class Config:
    n: int = 400
    d: int = 12
    cond: float = 1000.0
    decay: float = 1.0  # spectrum shape (1 = geometric)
    row_spread: float = 0.0
    sampling: str = "norm"
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024)
    # grid optimisation of (lr, beta) on the exact rate: coarse log grid, then zoom rounds
    n_grid: int = 12
    n_zoom: int = 4
    zoom_points: int = 5
    eps: float = 1e-4  # target E||e||^2 / ||e_0||^2
    fit_efolds: float = (
        4.0  # Monte-Carlo rate fitted over this many e-folds once the exact curve is asymptotic
    )
    n_seeds: int = 4096  # seeds at B = 1 (the B = 1 optima sit at the mean-square stability edge: many seeds)
    seed_budget: int = 16384  # seeds x B is capped at this (less sampling noise at large B)
    min_seeds: int = 64
    record_points: int = 300
    rate_check_batches: tuple[int, ...] = (1, 16, 256, 1024)
    linear_fraction: float = 0.25  # "below saturation" = B <= linear_fraction * tr H / sqrt(L mu)
    # Kaczmarz and coordinate-descent panels
    block: int = 8
    aux_seeds: int = 1024
    aux_eps: float = 1e-4
    n_boot: int = 400  # bootstrap replicates over seeds for every Monte-Carlo statistic's confidence interval

    def __post_init__(self):
        for name in ("n", "d", "n_grid", "n_zoom", "zoom_points", "n_seeds", "seed_budget", "min_seeds",
                     "record_points", "block", "aux_seeds", "n_boot"):
            v.positive_int(name, getattr(self, name))
        if self.n < self.d:
            raise ValueError(f"n must be >= d={self.d} (full column rank), got {self.n}")
        v.check("cond", self.cond, lambda a: np.isfinite(a) & (a > 1), "finite and > 1")
        v.check("decay", self.decay, lambda a: np.isfinite(a) & (a > 0), "finite and > 0")
        v.check("row_spread", self.row_spread, lambda a: np.isfinite(a) & (a >= 0), "finite and >= 0")
        v.one_of("sampling", self.sampling, ip.SAMPLINGS)
        for name in ("eps", "aux_eps"):
            v.in_interval(name, getattr(self, name), 1e-12, 1.0)
        v.check("fit_efolds", self.fit_efolds, lambda a: np.isfinite(a) & (a > 0), "finite and > 0")
        v.in_interval("linear_fraction", self.linear_fraction, 1e-6, 1.0, closed_hi=True)
        if len(self.batch_sizes) < 3 or any(not isinstance(b, int) or b < 1 for b in self.batch_sizes):
            raise ValueError(f"batch_sizes must be >= 3 positive ints, got {self.batch_sizes}")
        if self.batch_sizes[0] != 1 or list(self.batch_sizes) != sorted(set(self.batch_sizes)):
            raise ValueError(f"batch_sizes must start at 1 and increase strictly, got {self.batch_sizes}")
        if not set(self.rate_check_batches) <= set(self.batch_sizes) or not self.rate_check_batches:
            raise ValueError(f"rate_check_batches must be a non-empty subset of batch_sizes, got "
                             f"{self.rate_check_batches}")
        if self.min_seeds < 5 or self.aux_seeds < 5:
            raise ValueError(f"min_seeds and aux_seeds must be >= 5 (CIs over seeds), got {self.min_seeds}, "
                             f"{self.aux_seeds}")
        if self.zoom_points < 2:
            raise ValueError(f"zoom_points must be >= 2, got {self.zoom_points}")
        if self.n_boot < 50:
            raise ValueError(f"n_boot must be >= 50 (percentile intervals), got {self.n_boot}")


PRESETS = {
    "full": Config(),
    "quick": Config(
        n=80,
        d=5,
        cond=400.0,
        batch_sizes=(1, 4, 32),
        n_grid=6,
        n_zoom=2,
        zoom_points=5,
        eps=1e-3,
        fit_efolds=3.0,
        n_seeds=4096,
        # 4096 seeds at every B: at 2048, Nesterov's B = 32 iterations to eps fall outside their interval (66.37
        # +- 0.55 vs 67.16: the heavy tail of the module docstring) and the rule's "within 2x" paper claim at the
        # worst B is at the edge (0.77 +- 0.23 <= 1)
        seed_budget=131072,
        min_seeds=32,
        record_points=150,
        rate_check_batches=(32,),
        linear_fraction=0.25,
        block=4,
        # coordinate descent, single, needs the most: its iterations-to-eps interval is 9.2 (8192 seeds), 13.3
        # (4096) against the 5% tolerance 14.5
        aux_seeds=5120,
        aux_eps=1e-3,
        n_boot=200,
    ),
}


# ---------------------------------------------------------------------------------------------------------
# Grid optimisation of the exact rate
# ---------------------------------------------------------------------------------------------------------


_CHUNK = 128


@jax.jit
def _rate_chunk(h, K, lr, beta, nu, B):
    return jax.vmap(lambda a, b, c, e: ip._rate(h, K, a, b, c, e, 40, 2.0))(lr, beta, nu, B)


def rates(kernel, lr, beta, method, B):
    """rho(T) for flat arrays of (lr, beta, B) (broadcast), evaluated in fixed-size chunks so that one
    compiled
    function serves every call (float64 inside)."""
    lr, beta, B = np.broadcast_arrays(
        np.asarray(lr, np.float64), np.asarray(beta, np.float64), np.asarray(B, np.float64)
    )
    shape = lr.shape
    nu = np.full(shape, 1.0 if method == "nesterov" else 0.0)
    if method == "sgd":
        beta = np.zeros(shape)
    flat = [a.ravel() for a in (lr, beta, nu, B)]
    n = flat[0].size
    pad = (-n) % _CHUNK
    flat = [np.concatenate([a, np.repeat(a[-1:], pad)]) for a in flat]
    out = []
    with jax.enable_x64(True):
        h, K = jnp.asarray(kernel.h, jnp.float64), jnp.asarray(kernel.K, jnp.float64)
        for s in range(0, n + pad, _CHUNK):
            out.append(np.asarray(_rate_chunk(h, K, *[jnp.asarray(a[s : s + _CHUNK]) for a in flat])))
    return np.concatenate(out)[:n].reshape(shape)


def grid_optimise(kernel, batch_sizes, method, *, n_grid, n_zoom, zoom_points, L):
    """Minimise rho(T) over (log lr, log(1 - beta)) for every B: a coarse grid, then ``n_zoom`` rounds of a
    zoom_points^2 grid spanning +-1 previous spacing around the best point. Returns (lr, beta, rho), each
    (nB,)."""
    B = np.asarray(batch_sizes, np.float64)[:, None]
    sgd = method == "sgd"
    # coordinates: u = log(lr / (1 - beta)) (the effective step; the noise limit is a line u = const),
    # w = log(1 - beta)
    u = np.linspace(
        np.log(1e-3 / L), np.log(4.0 / L) if sgd else np.log(1e3 / L), 3 * n_grid if sgd else n_grid
    )
    w = np.zeros(1) if sgd else np.linspace(np.log(1e-4), 0.0, n_grid)
    U, W = (a.ravel()[None].repeat(len(B), 0) for a in np.meshgrid(u, w, indexing="ij"))
    du, dw = u[1] - u[0], (0.0 if sgd else w[1] - w[0])
    best = None
    for round_ in range(n_zoom + 1):  # noqa: B007
        r = rates(kernel, np.exp(U + W), 1.0 - np.exp(W), method, B)
        i = np.argmin(r, axis=1)
        cand = (U[np.arange(len(B)), i], W[np.arange(len(B)), i], r[np.arange(len(B)), i])
        if best is None:
            best = cand
        else:
            better = cand[2] < best[2]
            best = tuple(np.where(better, c_, b_) for c_, b_ in zip(cand, best, strict=True))
        off = np.linspace(-1.0, 1.0, zoom_points)
        ou, ow = np.meshgrid(off * du, off * dw if not sgd else np.zeros(1), indexing="ij")
        U = best[0][:, None] + ou.ravel()[None]
        W = np.minimum(best[1][:, None] + ow.ravel()[None], -1e-12) if not sgd else np.zeros_like(U)
        du, dw = du * 2.0 / (zoom_points - 1), dw * 2.0 / (zoom_points - 1)
    return np.exp(best[0] + best[1]), (np.zeros(len(B)) if sgd else 1.0 - np.exp(best[1])), best[2]


# ---------------------------------------------------------------------------------------------------------
# Monte Carlo (seeds vmapped)
# ---------------------------------------------------------------------------------------------------------


def _mc_row(row, *, problem, batch_size, steps, record_every):
    x0 = jnp.zeros_like(problem.x_star)
    errs, div = ip._run(
        problem, x0, row["lr"], row["beta"], row["gamma"], row["key"], batch_size, steps, record_every
    )
    return errs, div


def _cd_row(row, *, problem, batch_size, steps, record_every):
    x0 = jnp.zeros_like(problem.x_star)
    return ip._cd(
        problem.A,
        problem.b,
        problem.x_star,
        x0,
        row["lr"],
        row["beta"],
        row["gamma"],
        row["key"],
        batch_size,
        steps,
        record_every,
    )


def _hit(curve, t, level):
    """First recorded time after which curve / curve[0] stays <= level (inf if never)."""
    c = np.asarray(curve) / float(np.asarray(curve)[0])
    above = np.nonzero(c > level)[0]
    if len(above) == 0:
        return float(t[0])
    k = above[-1] + 1
    return float(t[k]) if k < len(t) else math.inf


def _asymptotic_window(exact, rho, span, tol=0.01, floor=1e-9):
    """(t_a, t_b) for the rate fit: the earliest window of ``span`` e-folds where the least-squares slope of
    log(exact curve) is within ``tol`` of log rho (exact curve at full resolution), restricted to levels
    >= ``floor`` x the initial value (the float32 Monte Carlo bottoms out near 1e-12). If no window qualifies,
    the best one above the floor is returned (the claim then shows the mismatch)."""
    c = np.asarray(exact, np.float64)
    lc = np.log(np.maximum(c / c[0], 1e-300))
    ef = float(-1.0 / np.log(rho))
    w = max(3, int(span * ef))
    above = np.nonzero(lc >= np.log(floor))[0]
    last = int(above[-1]) if len(above) else 0
    if last <= w:
        return 0, min(len(c) - 1, w)
    best, best_err = (0, w), math.inf
    step = max(1, (last - w) // 200)
    for ta in range(0, last - w + 1, step):
        tt = np.arange(ta, ta + w + 1, max(1, w // 50))
        slope = np.polyfit(tt, lc[tt], 1)[0]
        err = abs(slope / np.log(rho) - 1.0)
        if err < best_err:
            best, best_err = (ta, ta + w), err
        if err < tol:
            break
    return best


def _level_window(exact, span, start=1.0, floor=1e-9):
    """(t_a, t_b) for comparing Monte Carlo with the exact curve: from the first step where the exact
    E||e_t||^2 / ||e_0||^2 falls below e^-start to the first where it falls below e^-(start + span) (capped
    at ``floor``). Early on purpose: the Monte-Carlo mean of a product of random matrices is carried by ever
    rarer trajectories as t grows (its asymptotic rate is a large-deviation quantity), so an early window
    measures the same decay with a far smaller error; the prediction is the exact curve's fit on the same
    window, so the window needs no asymptotics."""
    c = np.asarray(exact, np.float64)
    lc = np.log(np.maximum(c / c[0], 1e-300))
    lo = max(-(start + span), math.log(floor))
    below_a = np.nonzero(lc <= -start)[0]
    below_b = np.nonzero(lc <= lo)[0]
    ta = int(below_a[0]) if len(below_a) else 0
    tb = int(below_b[0]) if len(below_b) else len(c) - 1
    return ta, max(tb, ta + 3)


def _fit(curve, t, ta, tb):
    """exp(slope) of log(curve) against t over ta <= t <= tb (nan if fewer than 3 recorded points)."""
    t = np.asarray(t, np.float64)
    sel = (t >= ta) & (t <= tb)
    c = np.asarray(curve, np.float64)[sel]
    if sel.sum() < 3 or not np.all(c > 0):
        return math.nan
    return float(np.exp(np.polyfit(t[sel], np.log(c), 1)[0]))


def _hits(curves, t, level):
    """First time after which each curve (rows of ``curves`` (..., P), normalised by its first value) stays
    <= ``level``: log-linear interpolation between the last recorded point above and the next one (inf if the
    last point is above, t[0] if none is)."""
    c = np.asarray(curves, np.float64)
    c = c / c[..., :1]
    t = np.asarray(t, np.float64)
    P = c.shape[-1]
    above = c > level
    last = P - 1 - np.argmax(above[..., ::-1], axis=-1)
    k = np.minimum(last + 1, P - 1)
    lc = np.log(np.maximum(c, 1e-300))
    l0, l1 = np.take_along_axis(lc, (k - 1)[..., None], -1)[..., 0], np.take_along_axis(lc, k[..., None], -1)[..., 0]
    frac = np.clip((l0 - np.log(level)) / np.where(l0 > l1, l0 - l1, np.inf), 0.0, 1.0)
    out = t[k - 1] + frac * (t[k] - t[k - 1])
    out = np.where(last + 1 >= P, np.inf, out)
    return np.where(above.any(-1), out, t[0])


def _fits(curves, t, ta, tb):
    """exp(slope) of log(curve) vs t over ta <= t <= tb for every row of ``curves`` (..., P) (nan if fewer
    than 3 points or a non-positive value)."""
    t = np.asarray(t, np.float64)
    sel = (t >= ta) & (t <= tb)
    c = np.asarray(curves, np.float64)[..., sel]
    if sel.sum() < 3:
        return np.full(c.shape[:-1], np.nan)
    ok = np.all(c > 0, axis=-1)
    y = np.log(np.where(c > 0, c, 1.0))
    x = t[sel] - t[sel].mean()
    slope = (y * x).sum(-1) / (x * x).sum()
    return np.where(ok, np.exp(slope), np.nan)


def _boot_means(errs, n_boot, rng):
    """Bootstrap replicates of the mean curve: errs (seeds, P) -> (n_boot, P), seeds resampled with
    replacement."""
    n = errs.shape[0]
    w = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot) / n
    return w @ errs


def boot_halfwidth(point, replicates):
    """Percentile-bootstrap 95% half-width around ``point`` (the larger distance to an end; inf if any
    replicate is not finite)."""
    r = np.asarray(replicates, np.float64)
    if not np.isfinite(point) or not np.all(np.isfinite(r)):
        return math.inf
    lo, hi = np.quantile(r, [0.025, 0.975])
    return float(max(point - lo, hi - point, 0.0))


def _to32(tree):
    return jax.tree.map(
        lambda a: jnp.asarray(np.asarray(a), jnp.float32) if np.asarray(a).dtype.kind == "f" else a, tree
    )


@partial(jax.jit, static_argnames=("steps",))
def _exact_batch(kernel, e0, lr, beta, nu, B, steps):
    f = lambda a, b, n_, c: ip._traj(kernel.h, kernel.U, kernel.K, e0, a, b, n_, c, steps)
    return jax.vmap(f)(lr, beta, nu, B)


def _steps_for(rhos, cfg_eps, extra_efolds, points):
    ef = max(float(ip.efold_time(r)) for r in rhos)
    steps = int(ef * (math.log(1 / cfg_eps) + extra_efolds)) + 20
    stride = max(1, steps // points)
    return stride * math.ceil(steps / stride), stride


def run(cfg: Config, *, key: jax.Array) -> dict:
    kp, kmc, kaux, kboot = jax.random.split(key, 4)
    Bs = list(cfg.batch_sizes)
    nB, nM = len(Bs), len(METHODS)
    out = {"batch_sizes": np.asarray(Bs)}
    NU = np.array([1.0 if m == "nesterov" else 0.0 for m in METHODS])

    # ---- theory in float64: problem, constants, grid-optimised and rule parameters, exact trajectories
    with jax.enable_x64(True):
        problem = ip.random_problem(
            cfg.n,
            cfg.d,
            cond=cfg.cond,
            decay=cfg.decay,
            row_spread=cfg.row_spread,
            sampling=cfg.sampling,
            key=kp,
        )
        c = ip.constants(problem)
        sat = ip.saturation_scales(problem)
        kernel = ip.noise_kernel(problem)
        mu, L, L_max = float(c.mu), float(c.L), float(c.L_max)
        Bf = np.asarray(Bs, np.float64)
        params = {}
        for m in ("sgd", "hb", "nesterov"):
            lr, beta, rho = grid_optimise(
                kernel, Bs, m, n_grid=cfg.n_grid, n_zoom=cfg.n_zoom, zoom_points=cfg.zoom_points, L=L
            )
            params[m] = {"lr": lr, "beta": beta, "rho": rho}
        lr_r, beta_r = (np.asarray(a) for a in ip.momentum_rule(mu, L, L_max, Bf, "hb"))
        params["hb_rule"] = {"lr": lr_r, "beta": beta_r, "rho": rates(kernel, lr_r, beta_r, "hb", Bf)}
        lr_n, beta_n = (np.asarray(a) for a in ip.momentum_rule(mu, L, L_max, Bf, "nesterov"))
        rho_n = rates(kernel, lr_n, beta_n, "nesterov", Bf)
        lr_p, beta_p, r_p = ip.hb_optimal_params(mu, L)
        rho_det = ip.mean_square_rate(
            problem, kernel=kernel, lr=lr_p, beta=beta_p, batch_size=jnp.inf, method="hb"
        ).rho
        gd_rho = ((L - mu) / (L + mu)) ** 2  # GD at lr = 2/(L + mu): ||e|| factor (k-1)/(k+1) per step
        e0 = -problem.x_star
        # exact curves, per B and per group (SGD runs much longer than momentum at large B)
        theory_curves, steps_B, stride_B = {}, {}, {}
        for j, B in enumerate(Bs):
            for g, group in enumerate(GROUPS):
                idx = [METHODS.index(m) for m in group]
                steps, stride = _steps_for(
                    [params[m]["rho"][j] for m in group], cfg.eps, cfg.fit_efolds + 3, cfg.record_points
                )
                steps_B[B, g], stride_B[B, g] = steps, stride
                theory_curves[B, g] = np.asarray(
                    _exact_batch(
                        kernel,
                        e0,
                        jnp.asarray([params[m]["lr"][j] for m in group]),
                        jnp.asarray([0.0 if m == "sgd" else params[m]["beta"][j] for m in group]),
                        jnp.asarray(NU[idx]),
                        jnp.full(len(group), float(B)),
                        steps,
                    )
                )
        # Kaczmarz and coordinate-descent problems (float64 theory)
        kz = ip.make_problem(problem.A, problem.b, sampling="norm")
        cdp = ip.coordinate_descent_problem(problem.A, problem.b)
        aux = {}
        for name, pr_ in (("kaczmarz", kz), ("cd", cdp)):
            kern, cc = ip.noise_kernel(pr_), ip.constants(pr_)
            lr_sgd_b, _ = ip.momentum_rule(float(cc.mu), float(cc.L), float(cc.L_max), cfg.block, "sgd")
            lr_hb_b, beta_hb_b = ip.momentum_rule(float(cc.mu), float(cc.L), float(cc.L_max), cfg.block, "hb")
            confs = {
                "single": (1.0 / float(cc.tr_H), 0.0, 1),
                "block": (float(lr_sgd_b), 0.0, cfg.block),
                "block_hb": (float(lr_hb_b), float(beta_hb_b), cfg.block),
            }
            rhos = {
                k: float(
                    ip.mean_square_rate(pr_, kernel=kern, lr=a, beta=b_, batch_size=float(B_), method="hb").rho
                )
                for k, (a, b_, B_) in confs.items()
            }
            steps, stride = _steps_for(
                list(rhos.values()), cfg.aux_eps, cfg.fit_efolds + 3, cfg.record_points
            )
            ex = np.asarray(
                _exact_batch(
                    kern,
                    -pr_.x_star,
                    jnp.asarray([v_[0] for v_ in confs.values()]),
                    jnp.asarray([v_[1] for v_ in confs.values()]),
                    jnp.zeros(3),
                    jnp.asarray([float(v_[2]) for v_ in confs.values()]),
                    steps,
                )
            )
            aux[name] = {
                "confs": confs,
                "rho": rhos,
                "steps": steps,
                "stride": stride,
                "exact": dict(zip(confs, ex, strict=True)),
                "bound_rate": float(ip.kaczmarz_rate_bound(pr_.A)),
            }

    out["constants"] = {
        "mu": mu,
        "L": L,
        "L_max": L_max,
        "tr_H": float(c.tr_H),
        "eff_rank": float(c.eff_rank),
        "row_spread": float(c.row_spread),
        "sat_sgd": float(sat["sgd"]),
        "sat_shb": float(sat["shb"]),
        "sat_rule": float(ip.rule_saturation(mu, L, L_max)),
        "residual": float(problem.residual),
    }
    out["deterministic"] = {"hb_rho": float(rho_det), "polyak_rate_sq": float(r_p) ** 2, "gd_rho": gd_rho}
    out["params"] = params
    out["nesterov_rule"] = {"lr": lr_n, "beta": beta_n, "rho": rho_n}

    # ---- Monte Carlo per B (float64: in float32 the momentum difference x_t - x_{t-1} at beta ~ 0.998 loses
    # enough precision to bias the B = 1 rule's measured decay by -2.5%; seeds x configurations vmapped in one
    # sweep). Every statistic gets bootstrap replicates over seeds (cfg.n_boot) for its confidence interval.
    rng = np.random.default_rng(int(jax.random.randint(kboot, (), 0, 2**31 - 1)))
    hits_mc, hits_th = np.full((nM, nB), np.nan), np.full((nM, nB), np.nan)
    rates_mc, rates_th_fit = np.full((nM, nB), np.nan), np.full((nM, nB), np.nan)
    hits_boot, rates_boot = np.full((nM, nB, cfg.n_boot), np.nan), np.full((nM, nB, cfg.n_boot), np.nan)
    windows = np.zeros((nM, nB, 2))
    diverged = np.zeros((nM, nB))
    seeds_B = np.zeros(nB, int)
    curves_out = {}
    keys = jax.random.split(kmc, nB * len(GROUPS))
    for j, B in enumerate(Bs):
        seeds = max(cfg.min_seeds, min(cfg.n_seeds, cfg.seed_budget // B))
        seeds_B[j] = seeds
        curves_out[f"B{B}"] = {"seeds": np.asarray(seeds)}
        for g, group in enumerate(GROUPS):
            idx = [METHODS.index(m) for m in group]
            k = len(group)
            steps, stride, th = steps_B[B, g], stride_B[B, g], theory_curves[B, g]
            rows = {
                "lr": np.repeat([params[m]["lr"][j] for m in group], seeds),
                "beta": np.repeat([0.0 if m == "sgd" else params[m]["beta"][j] for m in group], seeds),
                "gamma": np.repeat(NU[idx], seeds),
                "key": jax.random.split(keys[j * len(GROUPS) + g], k * seeds),
            }
            fn = partial(_mc_row, problem=problem, batch_size=B, steps=steps, record_every=stride)
            with jax.enable_x64(True):
                errs, div = sweep(fn, rows)
            errs = np.asarray(errs, np.float64).reshape(k, seeds, -1)
            mean = errs.mean(axis=1)
            div = np.asarray(div).reshape(k, seeds)
            t = np.arange(mean.shape[1]) * stride
            full_t = np.arange(th.shape[1])
            lo_band, hi_band = np.zeros_like(mean), np.zeros_like(mean)
            for r, i in enumerate(idx):
                rho = float(params[METHODS[i]]["rho"][j])
                ta, tb = _asymptotic_window(th[r], rho, cfg.fit_efolds)
                windows[i, j] = ta, tb
                boot = _boot_means(errs[r], cfg.n_boot, rng)
                hits_mc[i, j] = _hits(mean[r], t, cfg.eps)
                hits_th[i, j] = _hits(th[r], full_t, cfg.eps)
                hits_boot[i, j] = _hits(boot, t, cfg.eps)
                rates_mc[i, j] = _fits(mean[r], t, ta, tb)
                rates_boot[i, j] = _fits(boot, t, ta, tb)
                rates_th_fit[i, j] = _fits(th[r], full_t, ta, tb)
                diverged[i, j] = div[r].mean()
                lo_band[r], hi_band[r] = np.quantile(boot / boot[:, :1], [0.025, 0.975], axis=0)
            curves_out[f"B{B}"]["_".join(group)] = {"t": t, "mc_mean": mean, "theory": th[:, ::stride],
                                                    "mc_lo": lo_band, "mc_hi": hi_band}
    out["mc"] = {"hits": hits_mc, "rates": rates_mc, "diverged_fraction": diverged, "hits_boot": hits_boot,
                 "rates_boot": rates_boot, "seeds": seeds_B}
    out["theory"] = {
        "hits": hits_th,
        "rates_fit": rates_th_fit,
        "fit_window": windows,
        "rho": np.stack([params[m]["rho"] for m in METHODS]),
    }
    out["curves"] = curves_out

    # ---- Kaczmarz and coordinate descent panels
    k1, k2 = jax.random.split(kaux)
    for name, kk in (("kaczmarz", k1), ("cd", k2)):
        a = aux[name]
        res = {}
        for ci, (cname, (lr, beta, B)) in enumerate(a["confs"].items()):
            rows = {
                "lr": np.full(cfg.aux_seeds, lr),
                "beta": np.full(cfg.aux_seeds, beta),
                "gamma": np.zeros(cfg.aux_seeds),
                "key": jax.random.split(jax.random.fold_in(kk, ci), cfg.aux_seeds),
            }
            with jax.enable_x64(True):
                if name == "kaczmarz":
                    fn = partial(_mc_row, problem=kz, batch_size=B, steps=a["steps"], record_every=a["stride"])
                    errs = np.asarray(sweep(fn, rows)[0], np.float64)
                else:
                    # coordinate descent acts on x of the original problem; 2 (f - f*) = ||z||^2 of the
                    # equivalent one
                    fn = partial(_cd_row, problem=problem, batch_size=B, steps=a["steps"],
                                 record_every=a["stride"])
                    errs = 2.0 * np.asarray(sweep(fn, rows), np.float64)
            mean = errs.mean(axis=0)
            t = np.arange(mean.shape[0]) * a["stride"]
            ex = a["exact"][cname]
            ta, tb = _asymptotic_window(ex, a["rho"][cname], cfg.fit_efolds)
            boot = _boot_means(errs, cfg.n_boot, rng)
            res[cname] = {
                "t": t,
                "mc_mean": mean,
                "mc_lo": np.quantile(boot / boot[:, :1], 0.025, axis=0),
                "mc_hi": np.quantile(boot / boot[:, :1], 0.975, axis=0),
                "exact": ex[:: a["stride"]],
                "rho": a["rho"][cname],
                "rate_mc": float(_fits(mean, t, ta, tb)),
                "hit_mc": float(_hits(mean, t, cfg.aux_eps)),
                "hit_boot": _hits(boot, t, cfg.aux_eps),
                "hit_exact": float(_hits(ex, np.arange(len(ex)), cfg.aux_eps)),
                "rate_boot": _fits(boot, t, ta, tb),
                "rate_exact_fit": float(_fits(ex, np.arange(len(ex)), ta, tb)),
                "fit_window": np.array([ta, tb]),
                "lr": lr,
                "beta": beta,
                "B": B,
            }
        res["bound_rate"] = a["bound_rate"]
        out[name] = res
    return out


# ---------------------------------------------------------------------------------------------------------
# Claims
# ---------------------------------------------------------------------------------------------------------


def _speedup(hits):
    return hits[:, :1] / hits


def _with_boot(point, boot):
    """Stack a point estimate (...,) and its bootstrap replicates (..., n_boot) into (..., 1 + n_boot)."""
    return np.concatenate([np.asarray(point, np.float64)[..., None], np.asarray(boot, np.float64)], -1)


def _claim(statement, predicted, stat, tolerance, comparison, *, kind, n_seeds, source="theory"):
    """A claim on a statistic given as (1 + n_boot,) = (point, bootstrap replicates...)."""
    stat = np.asarray(stat, np.float64)
    return Claim(statement, float(predicted), float(stat[0]), tolerance, comparison, kind=kind,
                 ci=boot_halfwidth(stat[0], stat[1:]), n_seeds=int(n_seeds), source=source)


def _slope(x, Y):
    """Least-squares slope of Y (k, m) against x (k,), per column."""
    xc = x - x.mean()
    return (xc[:, None] * (Y - Y.mean(0))).sum(0) / (xc**2).sum()


def claims(results: dict, cfg: Config) -> list[Claim]:
    out = []
    Bs = np.asarray(results["batch_sizes"], dtype=float)
    c = results["constants"]
    mc, th = results["mc"], results["theory"]
    seeds = np.asarray(mc["seeds"])
    Hs = _with_boot(mc["hits"], mc["hits_boot"])  # (nM, nB, 1 + n_boot): iterations to eps
    Ds = -np.log(_with_boot(mc["rates"], mc["rates_boot"]))  # per-step decay of E||e||^2 on the fit window
    Es = 1.0 / Ds  # iterations per e-fold
    i_sgd, i_hb, i_nag, i_rule = (METHODS.index(m) for m in METHODS)
    boot_note = f"95% bootstrap CI over seeds ({cfg.n_boot} resamples)"

    # ---- speedup ~ B below saturation, against heavy ball itself and against SGD at B = 1
    lin = Bs <= cfg.linear_fraction * float(c["sat_shb"])
    if lin.sum() >= 2:
        n_lin = int(seeds[lin].min())
        slope = _slope(np.log(Bs[lin]), np.log(Hs[i_hb, :1] / Hs[i_hb, lin]))
        out.append(_claim(
            f"paper: heavy-ball speedup grows ~ B below saturation: log-log slope of T_HB(1)/T_HB(B) for "
            f"B <= {cfg.linear_fraction:g} tr H/sqrt(L mu) = {cfg.linear_fraction * c['sat_shb']:.0f} ({boot_note})",
            1.0, slope, 0.2, "abs", kind="paper", n_seeds=n_lin, source="paper"))
        log2_ratio = np.log2(Hs[i_sgd, :1] / Hs[i_hb, lin] / Bs[lin, None])
        worst = log2_ratio[np.argmax(np.abs(log2_ratio[:, 0]))]
        out.append(_claim(
            "paper: perfect parallelization against SGD: T_SGD(1)/T_HB(B) within 2x of B for every B below "
            "saturation (log2(speedup/B) at the worst B, |.| <= 1)", 0.0, worst, 1.0, "abs", kind="paper",
            n_seeds=n_lin, source="paper"))

    # ---- acceleration over SGD at the same B, against the exact recursion
    Th = np.asarray(th["hits"])
    for B in cfg.rate_check_batches:
        j = list(cfg.batch_sizes).index(B)
        out.append(_claim(
            f"acceleration over SGD at the same B: T_SGD(B)/T_HB(B) (Monte Carlo) = exact E||e||^2 recursion, "
            f"B={B} ({boot_note}; exact value inside the CI, CI <= 5%)", Th[i_sgd, j] / Th[i_hb, j],
            Hs[i_sgd, j] / Hs[i_hb, j], 0.05 * Th[i_sgd, j] / Th[i_hb, j], "ci", kind="check", n_seeds=seeds[j]))

    # ---- SGD saturation, located in the simulation: T(B) ~ T_inf (1 + B*/B)  =>  B* = T(1)/T(B_max) - 1
    bstar_exact = Th[i_sgd, 0] / Th[i_sgd, -1] - 1.0  # iterations to eps: early, so little heavy-tail bias
    bstar = Hs[i_sgd, 0] / Hs[i_sgd, -1] - 1.0
    bstar_asym = Es[i_sgd, 0] / Es[i_sgd, -1] - 1.0  # asymptotic e-fold times (the transient excluded)
    n_sat = int(min(seeds[0], seeds[-1]))
    out.append(_claim(
        f"SGD saturation batch B* = T(1)/T(B={Bs[-1]:g}) - 1 of the Monte-Carlo iterations to eps = the exact "
        f"operator's ({boot_note}; exact inside the CI, CI <= 10%)", bstar_exact, bstar, 0.1 * bstar_exact, "ci",
        kind="check", n_seeds=n_sat))
    mbb = float(c["sat_sgd"]) - 1.0
    out.append(_claim(
        f"paper: SGD saturates at B ~ L_max/L: lr*(B) = B/(L_max + (B-1)L) gives T(B) ~ L + (L_max-L)/B, i.e. "
        f"B* = L_max/L - 1 = {mbb:.2f} (Ma, Bassily & Belkin 2018); Monte-Carlo B* within 2x (log2 ratio, "
        "|.| <= 1; B* from the asymptotic Monte-Carlo e-fold times)", 0.0,
        np.log2(np.maximum(bstar_asym, 1e-12) / mbb), 1.0, "abs", kind="paper", n_seeds=n_sat,
        source="paper"))
    gd_ef = float(ip.efold_time(results["deterministic"]["gd_rho"]))
    out.append(_claim(
        f"SGD at B = {Bs[-1]:g} runs at full-batch GD's optimal rate: Monte-Carlo e-fold time = "
        f"-1/log(((k-1)/(k+1))^2) ({boot_note})", gd_ef, Es[i_sgd, -1], 0.05, "rel", kind="check",
        n_seeds=seeds[-1]))

    # ---- large B: SHB approaches full-batch accelerated heavy ball (Monte Carlo e-fold time)
    pol_ef = float(ip.efold_time(results["deterministic"]["polyak_rate_sq"]))
    out.append(_claim(
        f"paper: at B = {Bs[-1]:g} heavy ball is within 2x of full-batch Polyak heavy ball "
        "((sqrt k-1)/(sqrt k+1))^2: log2 of the Monte-Carlo e-fold-time ratio, |.| <= 1", 0.0,
        np.log2(Es[i_hb, -1] / pol_ef), 1.0, "abs", kind="paper", n_seeds=seeds[-1], source="paper"))
    out.append(Claim(
        "noiseless limit (B = inf) of the operator's spectral radius (root finding) at Polyak's parameters = "
        "closed form ((sqrt k-1)/(sqrt k+1))^2", results["deterministic"]["polyak_rate_sq"],
        results["deterministic"]["hb_rho"], 1e-6, "rel", kind="check", source="theory"))

    # ---- Monte-Carlo iterations to eps vs the exact recursion's (every method, at the rate-check B)
    for B in cfg.rate_check_batches:
        j = list(cfg.batch_sizes).index(B)
        for i, m in enumerate(METHODS):
            out.append(_claim(
                f"Monte-Carlo iterations until E||e||^2 <= {cfg.eps:g} ||e_0||^2 = exact recursion's: {m}, B={B} "
                "(exact inside the CI, CI <= 5%)", Th[i, j], Hs[i, j], 0.05 * Th[i, j], "ci", kind="check",
                n_seeds=seeds[j]))

    # ---- Monte-Carlo decay vs the exact curve's decay on the same window (per-step -log rate)
    rfit = -np.log(np.asarray(th["rates_fit"]))
    for B in cfg.rate_check_batches:
        j = list(cfg.batch_sizes).index(B)
        for i, m in enumerate(METHODS):
            out.append(_claim(
                f"Monte-Carlo decay -log(rate) of E||e||^2 = exact recursion's on the same window: {m}, B={B} "
                f"({boot_note}; exact inside the CI, CI <= 5%)", rfit[i, j], Ds[i, j], 0.05 * rfit[i, j], "ci",
                kind="check", n_seeds=seeds[j]))

    # ---- the simple momentum rule vs grid-optimised heavy ball (Monte Carlo e-fold times)
    log2_cost = np.log2(Es[i_rule] / Es[i_hb])
    worst = log2_cost[np.argmax(np.abs(log2_cost[:, 0]))]
    out.append(_claim(
        "paper (\"a simple momentum choice that works\", read as: within 2x of the tuned optimum): rule's "
        "Monte-Carlo e-fold time / grid-optimised heavy ball's at the worst B, log2, |.| <= 1", 0.0, worst, 1.0,
        "abs", kind="paper", n_seeds=int(seeds.min()), source="reconstruction"))

    # ---- Kaczmarz and coordinate descent
    for name, what in (
        ("kaczmarz", "randomized Kaczmarz E||e||^2"),
        ("cd", "randomized coordinate descent f-f*"),
    ):
        r = results[name]
        single = -np.log(_with_boot(r["single"]["rate_mc"], r["single"]["rate_boot"]))
        out.append(_claim(
            f"{what}: Monte-Carlo decay per step >= bound -log(1 - sigma_min^2/||A||_F^2) (single row)",
            -math.log(r["bound_rate"]), single, 0.0, "ge", kind="bound", n_seeds=cfg.aux_seeds, source="paper"))
        for cname in ("single", "block", "block_hb"):
            hit = _with_boot(r[cname]["hit_mc"], r[cname]["hit_boot"])
            out.append(_claim(
                f"{what}, {cname}: Monte-Carlo iterations to {cfg.aux_eps:g} = exact recursion's (exact inside "
                "the CI, CI <= 5%)", r[cname]["hit_exact"], hit, 0.05 * r[cname]["hit_exact"], "ci",
                kind="check", n_seeds=cfg.aux_seeds))
        for cname in ("single", "block"):  # block_hb: heavy-tailed at its asymptotic window (module docstring)
            out.append(_claim(
                f"{what}, {cname}: Monte-Carlo decay -log(rate) = exact recursion's on the same window (exact "
                "inside the CI, CI <= 5%)", -math.log(r[cname]["rate_exact_fit"]),
                -np.log(_with_boot(r[cname]["rate_mc"], r[cname]["rate_boot"])),
                -0.05 * math.log(r[cname]["rate_exact_fit"]), "ci", kind="check", n_seeds=cfg.aux_seeds))
    return out


# ---------------------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------------------


def _sat_lines(ax, c, ymax_text=None):
    ax.axvline(
        c["sat_sgd"], color="tab:blue", ls=":", lw=1.2, label=f"SGD saturation L_max/L = {c['sat_sgd']:.1f}"
    )
    ax.axvline(
        c["sat_shb"],
        color="tab:red",
        ls=":",
        lw=1.2,
        label=f"SHB saturation tr H/sqrt(L mu) = {c['sat_shb']:.0f}",
    )


def _err(point, boot):
    """Asymmetric error bars (lower, upper) from bootstrap replicates (..., n_boot) at the 95% level."""
    boot = np.asarray(boot, np.float64)
    with np.errstate(invalid="ignore"):
        lo, hi = np.nanquantile(np.where(np.isfinite(boot), boot, np.nan), [0.025, 0.975], axis=-1)
    return np.clip(point - lo, 0, None), np.clip(hi - point, 0, None)


def plot(results: dict, cfg: Config) -> dict:
    figs = {}
    Bs = np.asarray(results["batch_sizes"], dtype=float)
    c = results["constants"]
    hits = np.asarray(results["mc"]["hits"])
    th = np.asarray(results["theory"]["hits"])
    head = (
        f"n={cfg.n}, d={cfg.d}, kappa={cfg.cond:g}, {cfg.sampling} sampling, tr H/L={c['eff_rank']:.2f}, "
        f"eps={cfg.eps:g}"
    )

    # iterations to eps vs B
    fig, ax = style.figure(figsize=(11.5, 5.6))
    for i, m in enumerate(METHODS):
        lo_, hi_ = _err(hits[i], np.asarray(results["mc"]["hits_boot"])[i])
        ax.errorbar(Bs, hits[i], yerr=[lo_, hi_], fmt="o", color=COLORS[m], ms=6, capsize=3,
                    label=f"{LABELS[m]}: Monte Carlo (95% bootstrap CI)")
        ax.loglog(Bs, th[i], **style.prediction(color=COLORS[m]))
    ax.plot([], [], **style.PREDICTION, label="exact E||e_t||^2 recursion (theory, eq. MS)")
    lg = math.log(1 / cfg.eps)
    det = lg * float(ip.efold_time(results["deterministic"]["polyak_rate_sq"]))
    gd = lg * float(ip.efold_time(results["deterministic"]["gd_rho"]))
    ax.axhline(
        det,
        color="tab:red",
        lw=0.8,
        alpha=0.6,
        label=f"full-batch heavy ball (Polyak), ln(1/eps) x e-fold time: {det:.0f}",
    )
    ax.axhline(
        gd,
        color="tab:blue",
        lw=0.8,
        alpha=0.6,
        label=f"full-batch GD (lr = 2/(L+mu)), ln(1/eps) x e-fold time: {gd:.0f}",
    )
    ax.loglog(Bs, th[1, 0] / Bs, color="0.5", lw=1, ls="-.", label="perfect parallelization T(1)/B")
    _sat_lines(ax, c)
    ax.set(
        xlabel="batch size B (rows per step)",
        ylabel=f"iterations until E||e||^2 <= {cfg.eps:g} ||e_0||^2",
        title=f"Iterations to eps vs batch size\n{head}",
        ylim=(max(1, 0.5 * np.nanmin(hits)), None),
    )
    ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figs["iterations_vs_batch"] = fig

    # speedup: against SGD at B = 1 (perfect parallelization), and against SGD at the same B
    fig, (ax, ax2) = style.figure(1, 2, figsize=(14, 5.4))
    hb_boot = np.asarray(results["mc"]["hits_boot"])
    i_sgd = METHODS.index("sgd")
    for i, m in enumerate(METHODS):
        sp_b = hb_boot[i_sgd, :1] / hb_boot[i]
        sp = hits[i_sgd, 0] / hits[i]
        lo_, hi_ = _err(sp, sp_b)
        ax.errorbar(Bs, sp, yerr=[lo_, hi_], fmt="o", color=COLORS[m], capsize=3, label=LABELS[m])
        ax.loglog(Bs, th[i_sgd, 0] / th[i], **style.prediction(color=COLORS[m]))
        if m != "sgd":
            acc_b = hb_boot[i_sgd] / hb_boot[i]
            acc = hits[i_sgd] / hits[i]
            lo_, hi_ = _err(acc, acc_b)
            ax2.errorbar(Bs, acc, yerr=[lo_, hi_], fmt="o", color=COLORS[m], capsize=3, label=LABELS[m])
            ax2.loglog(Bs, th[i_sgd] / th[i], **style.prediction(color=COLORS[m]))
    ax.plot([], [], **style.PREDICTION, label="theory (exact recursion)")
    ax.loglog(Bs, Bs, color="0.4", lw=1, ls="-.", label="speedup = B (perfect parallelization)")
    lin = Bs <= cfg.linear_fraction * c["sat_shb"]
    ax.fill_between(Bs, Bs / 2, Bs * 2, where=lin, color="0.85", alpha=0.6,
                    label=f"band B/2..2B checked for B <= {cfg.linear_fraction:g} x SHB saturation")
    _sat_lines(ax, c)
    ax.set(xscale="log", yscale="log", xlabel="batch size B",
           ylabel="speedup T_SGD(B=1) / T(B)  (iterations to eps, Monte Carlo)",
           title=f"Speedup over SGD at B = 1\n{head}")
    ax.legend(fontsize=7, loc="upper left")
    lg = math.log(1 / cfg.eps)
    pol = lg * float(ip.efold_time(results["deterministic"]["polyak_rate_sq"]))
    gdh = lg * float(ip.efold_time(results["deterministic"]["gd_rho"]))
    ax2.axhline(gdh / pol, color="tab:red", lw=0.8, alpha=0.6,
                label=f"full batch: GD / Polyak heavy ball e-fold times = {gdh / pol:.1f}")
    ax2.plot([], [], **style.PREDICTION, label="theory (exact recursion)")
    _sat_lines(ax2, c)
    ax2.set(xscale="log", yscale="log", xlabel="batch size B",
            ylabel="acceleration T_SGD(B) / T(B)  (same B, Monte Carlo)",
            title="Acceleration over SGD at the same batch size")
    ax2.legend(fontsize=7, loc="upper left")
    figs["speedup"] = fig

    # predicted vs measured rate: Monte-Carlo fit against the exact curve's fit on the same window
    fig, ax = style.figure(figsize=(7.0, 5.8))
    rfit = np.asarray(results["theory"]["rates_fit"])
    rmc = np.asarray(results["mc"]["rates"])
    pe, me = -1 / np.log(rfit), -1 / np.log(rmc)
    me_b = -1 / np.log(np.asarray(results["mc"]["rates_boot"]))
    lo, hi = np.nanmin([np.nanmin(pe), np.nanmin(me)]) * 0.7, np.nanmax([np.nanmax(pe), np.nanmax(me)]) * 1.4
    xx = np.geomspace(lo, hi, 10)
    ax.loglog(xx, xx, **style.prediction(), label="measured = predicted")
    ax.fill_between(xx, xx / 1.05, xx * 1.05, color="0.8", alpha=0.7, label="+-5%")
    for i, m in enumerate(METHODS):
        lo_, hi_ = _err(me[i], me_b[i])
        ax.errorbar(pe[i], me[i], yerr=[lo_, hi_], fmt="o", color=COLORS[m], capsize=2, label=LABELS[m])
    for k, name in (("kaczmarz", "Kaczmarz"), ("cd", "coord. descent")):
        r = results[k]
        for cname, mk in (("single", "s"), ("block", "^"), ("block_hb", "D")):
            m_ = -1 / np.log(r[cname]["rate_mc"])
            lo_, hi_ = _err(np.atleast_1d(m_), -1 / np.log(np.asarray(r[cname]["rate_boot"]))[None])
            ax.errorbar(-1 / np.log(r[cname]["rate_exact_fit"]), m_, yerr=[lo_, hi_], fmt=mk, mfc="none",
                        color="tab:orange" if k == "kaczmarz" else "tab:brown", capsize=2,
                        label=f"{name}, {cname}")
    ax.set(
        xscale="log", yscale="log",
        xlabel="predicted: exact E||e||^2 recursion, -1/slope of log on the fit window (iterations per e-fold)",
        ylabel="measured: -1/slope of log(Monte-Carlo mean ||e||^2), same window",
        title=f"Exact mean-square decay vs Monte Carlo (95% bootstrap CI)\n(window: {cfg.fit_efolds:g} "
              "e-folds once the exact slope is within 1% of log rho(T))",
    )
    ax.legend(fontsize=7, loc="upper left")
    figs["rate_check"] = fig

    # momentum rule vs grid
    p = results["params"]
    fig, (ax1, ax2, ax3) = style.figure(1, 3, figsize=(14, 4.4))
    for m, mk in (("hb", "o-"), ("nesterov", "s-"), ("hb_rule", "D--")):
        ax1.loglog(Bs, 1 - np.asarray(p[m]["beta"]), mk, color=COLORS[m], label=LABELS[m])
        ax2.loglog(Bs, np.asarray(p[m]["lr"]) * c["L"], mk, color=COLORS[m], label=LABELS[m])
    nr = results["nesterov_rule"]
    ax1.loglog(Bs, 1 - np.asarray(nr["beta"]), "s:", color="tab:olive", label="Nesterov rule")
    ax2.loglog(Bs, np.asarray(nr["lr"]) * c["L"], "s:", color="tab:olive", label="Nesterov rule")
    ax2.loglog(Bs, np.asarray(p["sgd"]["lr"]) * c["L"], "o-", color=COLORS["sgd"], label=LABELS["sgd"])
    ax1.loglog(Bs, 4 * Bs * c["mu"] / c["L_max"], color="0.5", ls="-.", label="4 B mu / L_max (linear in B)")
    _sat_lines(ax1, c)
    ax1.set(xlabel="batch size B", ylabel="1 - beta", title="Momentum: 1 - beta grows ~ linearly in B")
    ax2.set(xlabel="batch size B", ylabel="lr x L", title="Step size")
    for m in ("hb", "nesterov", "hb_rule", "sgd"):
        ax3.loglog(
            Bs,
            np.asarray(ip.efold_time(p[m]["rho"])),
            "o-" if m != "hb_rule" else "D--",
            color=COLORS[m],
            label=LABELS[m],
        )
    ax3.loglog(Bs, np.asarray(ip.efold_time(nr["rho"])), "s:", color="tab:olive", label="Nesterov rule")
    ax3.set(
        xlabel="batch size B",
        ylabel="-1/log rho(T): iterations per e-fold of E||e||^2",
        title="Exact rate: rule vs grid optimum",
    )
    for a in (ax1, ax2, ax3):
        a.legend(fontsize=6.5)
    figs["momentum_rule"] = fig

    # Kaczmarz and coordinate descent
    fig, axes = style.figure(1, 2, figsize=(12.5, 4.8))
    for ax, k, title, ylab in (
        (axes[0], "kaczmarz", "Randomized Kaczmarz (rows ~ ||a_i||^2)", "E||x_t - x*||^2 / ||x_0 - x*||^2"),
        (
            axes[1],
            "cd",
            "Randomized coordinate descent (coordinates ~ G_jj)",
            "E[f(x_t) - f*] / (f(x_0) - f*)",
        ),
    ):
        r = results[k]
        for cname, col in (("single", "tab:blue"), ("block", "tab:green"), ("block_hb", "tab:red")):
            d = r[cname]
            t = np.asarray(d["t"])
            lab = {
                "single": "single row/coordinate, exact projection",
                "block": f"block of {d['B']} (averaged), lr from the SGD rule",
                "block_hb": f"block of {d['B']} + heavy ball (rule, beta={d['beta']:.3f})",
            }[cname]
            ax.semilogy(
                t,
                np.asarray(d["mc_mean"]) / np.asarray(d["mc_mean"])[0],
                color=col,
                lw=3,
                alpha=0.45,
                label=f"{lab}: Monte Carlo ({cfg.aux_seeds} seeds)",
            )
            ax.fill_between(t, np.asarray(d["mc_lo"]), np.asarray(d["mc_hi"]), color=col, alpha=0.2)
            ax.semilogy(t, np.asarray(d["exact"]) / np.asarray(d["exact"])[0], **style.prediction(color=col))
        tb = np.asarray(r["single"]["t"])
        ax.semilogy(
            tb,
            r["bound_rate"] ** tb,
            color="k",
            ls=":",
            lw=1.5,
            label="bound (1 - sigma_min^2/||A||_F^2)^t"
            if k == "kaczmarz"
            else "bound (1 - lambda_min(G)/tr G)^t (Leventhal-Lewis)",
        )
        ax.plot([], [], **style.PREDICTION, label="exact recursion (eq. MS)")
        ax.set(xlabel="iteration t", ylabel=ylab, title=title, ylim=(cfg.aux_eps * 0.05, 2))
        ax.legend(fontsize=7)
    figs["kaczmarz_cd"] = fig
    return figs


# ---------------------------------------------------------------------------------------------------------
# Benchmark: vmapped multi-seed Monte Carlo vs a NumPy loop over seeds
# ---------------------------------------------------------------------------------------------------------


def _numpy_mc(A, b, x_star, probs, weights, lr, beta, B, steps, seeds, rng):
    n, d = A.shape
    out = np.empty((seeds, steps + 1))
    for s in range(seeds):
        x = np.zeros(d)
        xp = x.copy()
        out[s, 0] = np.sum((x - x_star) ** 2)
        for t in range(steps):
            idx = rng.choice(n, size=B, p=probs)
            a = A[idx]
            g = a.T @ ((a @ x - b[idx]) * weights[idx]) / B
            x, xp = x - lr * g + beta * (x - xp), x
            out[s, t + 1] = np.sum((x - x_star) ** 2)
    return out


def bench(quick: bool = False) -> list[BenchRow]:
    cfg = PRESETS["quick" if quick else "full"]
    seeds, steps, B = (64, 300, 4) if quick else (256, 1000, 8)
    problem = _to32(
        ip.random_problem(cfg.n, cfg.d, cond=cfg.cond, sampling=cfg.sampling, key=jax.random.key(0))
    )
    c = ip.constants(problem)
    lr, beta = ip.momentum_rule(float(c.mu), float(c.L), float(c.L_max), B, "hb")
    lr, beta = float(lr), float(beta)
    rows = {
        "lr": np.full(seeds, lr, np.float32),
        "beta": np.full(seeds, beta, np.float32),
        "gamma": np.zeros(seeds, np.float32),
        "key": jax.random.split(jax.random.key(1), seeds),
    }
    fn = partial(_mc_row, problem=problem, batch_size=B, steps=steps, record_every=1)
    ours = time_call(lambda: sweep(fn, rows)[0], repeats=3)
    npp = [
        np.asarray(a, np.float64)
        for a in (problem.A, problem.b, problem.x_star, problem.probs, problem.weights)
    ]
    npp[3] = npp[3] / npp[3].sum()
    base_seeds = max(4, seeds // 8)
    base = (
        time_call(
            lambda: _numpy_mc(*npp, lr, beta, B, steps, base_seeds, np.random.default_rng(0)),
            repeats=1,
            warmup=0,
        )
        * seeds
        / base_seeds
    )
    ref = _numpy_mc(*npp, lr, beta, B, steps, 64, np.random.default_rng(1)).mean(0)
    mc = np.asarray(sweep(fn, rows)[0]).mean(0)
    dev = float(np.max(np.abs(np.log(mc[: steps // 2]) - np.log(ref[: steps // 2]))))
    return [
        BenchRow(
            f"SHB MC {seeds} seeds x {steps} steps, B={B}, d={cfg.d}",
            "jit(vmap) sweep",
            f"NumPy loop (timed on {base_seeds} seeds, scaled)",
            ours,
            base,
            note=f"max |log mean diff| first half {dev:.2f} (MC noise, 64 NumPy seeds)",
        )
    ]


# ---------------------------------------------------------------------------------------------------------
# Mutants: plausible bugs, each must make a claim fail on the quick preset (``workbench audit interpolation``)
# ---------------------------------------------------------------------------------------------------------


def _gradient_without_weights(f):
    def mutated(problem, x, idx):
        a = problem.A[idx]
        return a.T @ (a @ x - problem.b[idx]) / idx.shape[0]

    return mutated


def _uniform_sampler(f):
    def mutated(problem, batch_size, *, key):
        return jax.random.randint(key, (batch_size,), 0, problem.probs.shape[0])

    return mutated


def _traj_batch_off_by_one(f):
    def mutated(h, U, K, e0, lr, beta, nu, batch_size, steps):
        return f(h, U, K, e0, lr, beta, nu, batch_size + 1, steps)

    return mutated


def _nesterov_factor_dropped(f):
    def mutated(lr, beta, nu, h):
        M, c = f(lr, beta, nu, h)
        # M11 = 1 + beta - lr h - nu beta lr h  ->  drop the Nesterov term nu beta lr h
        return M.at[..., 0, 0].add(nu * beta * lr * h), c

    return mutated


# first: the cheapest (only the exact-recursion function recompiles: the step counts and the Monte Carlo are
# unchanged; the default suite runs it)
MUTANTS = [
    Mutant("exact_recursion_batch_off_by_one", "theory.interpolation.mean_square:_traj", _traj_batch_off_by_one,
           "exact E||e_t||^2 recursion divides the noise by B + 1 instead of B"),
    Mutant("gradient_missing_importance_weights", "theory.interpolation.iterations:_minibatch_gradient",
           _gradient_without_weights, "mini-batch gradient without the weights 1/(n p_i) of norm sampling"),
    Mutant("nesterov_factor_dropped_in_operator", "theory.interpolation.mean_square:_unified_mean", _nesterov_factor_dropped,
           "mean-square operator's Nesterov block without its -beta lr h term"),
    Mutant("sampler_uniform_instead_of_norm", "theory.interpolation.iterations:_sample_batch", _uniform_sampler,
           "rows drawn uniformly while the weights assume ||a_i||^2 sampling"),
]
