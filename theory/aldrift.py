"""ALDRIFT: zeroth-order optimisation over a generative prior by annealed, corrected refitting.

Reference: Awasthi, Gollapudi, Kumar, Munagala, "Sample-efficient optimization over generative priors via coarse
learnability" (arXiv 2503.06917); notes in ``shared/papers/aldrift.md``.

Notation (used throughout):
  ``d(x)``        the cost, queried zeroth-order (values only), d* = min d, x* = argmin d;
  ``L0``          the prior (here Gaussian N(x0, I/mu0) on R^n);
  ``tau``         a temperature, the tempered target is  p_tau(x) ∝ w_tau(x) = L0(x) exp(-tau d(x));
  ``L``           a fitted model (the proposal of the next temperature);
  ``m``           number of independent IMH chains (= samples the model is fitted on), ``M`` steps per chain;
  ``mu_d, L_d``   the quadratic envelope  mu_d/2 ||x - x*||^2 <= d(x) - d* <= L_d/2 ||x - x*||^2;
  ``W = sup p/L`` the coverage ratio; coarse learnability: Pr_{s~p}[p(s)/L(s) > K] <= eps.

ALDRIFT (eq. ALDRIFT): for tau_1 < tau_2 < ... < tau_N = T, run m independent independent-Metropolis-Hastings
chains of M steps with proposal L_{k-1} and target w_{tau_k}; accept s' from s with probability
    min(1, w(s') L_{k-1}(s) / (w(s) L_{k-1}(s')))                                                  (eq. IMH)
keep each chain's last state, fit L_k on these m states. TOPIFT (the cross-entropy-method baseline): draw m*M
samples from the current model, keep the m cheapest, refit.

Quadratic closed form (eq. pT): for d = mu_d/2 ||x - x*||^2 and L0 = N(x0, I/mu0),
    p_T = N((mu0 x0 + T mu_d x*)/(mu0 + T mu_d), I/(mu0 + T mu_d)),
    E_{p_T}[d] = mu_d/2 (n/(mu0 + T mu_d) + ||mean_T - x*||^2).
Finite-space IMH bound (eq. IMH-TV): TV(delta_x P^M, p) <= (1 - 1/W)^M with W = max p/q.
Gaussian importance ESS (eq. ESS): for p = N(a, s1^2 I_n), q = N(b, s2^2 I_n), 2 s2^2 > s1^2,
    1/E_q[(p/q)^2] = (s1 sqrt(2 s2^2 - s1^2) / s2^2)^n exp(-||a - b||^2 / (2 s2^2 - s1^2)).

Everything here is a pure function, jit/vmap-compatible; randomness only through a keyword ``key``; bad concrete
parameters raise ValueError naming the parameter. Costs and models are NamedTuples (pytrees), so one compiled
function serves every parameter value (vmap over settings, sliders without recompiling).
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.special import logsumexp

from theory import _validate as v

FAMILIES = ("mle", "empirical", "kde")
SCHEDULES = ("additive", "geometric")
_LOG2PI = math.log(2.0 * math.pi)


def _f(x):
    return jnp.asarray(x, dtype=jnp.result_type(float))


# ---------------------------------------------------------------------------------------------------------
# Costs and prior
# ---------------------------------------------------------------------------------------------------------


class RastriginEnvelope(NamedTuple):
    """d(x) = mu_d/2 ||x - x*||^2 + A sum_i (1 - cos(w (x_i - x*_i))),  d* = 0 at x*  (paper's experiment).

    Computed as 2 sin^2(u/2) instead of 1 - cos(u) (no cancellation in float32 near x*). Call on x of shape
    (..., n); returns shape (...). A = 0 is the pure quadratic. Non-convex for A w^2 > mu_d.
    """

    mu_d: jax.Array
    A: jax.Array
    w: jax.Array
    x_star: jax.Array  # (n,)

    def __call__(self, x):
        z = x - self.x_star
        ripple = 2.0 * jnp.sin(0.5 * self.w * z) ** 2
        return 0.5 * self.mu_d * jnp.sum(z**2, axis=-1) + self.A * jnp.sum(ripple, axis=-1)


def rastrigin_envelope(mu_d, A, w, x_star) -> RastriginEnvelope:
    """Validated constructor; ``x_star`` shape (n,)."""
    v.positive("mu_d", mu_d)
    v.nonnegative("A", A)
    v.nonnegative("w", w)
    x_star = jnp.atleast_1d(_f(x_star))
    v.check("x_star", x_star, lambda a: np.isfinite(a), "finite")
    return RastriginEnvelope(_f(mu_d), _f(A), _f(w), x_star)


def envelope_constants(mu_d, A, w):
    """(mu_lower, L_d) with mu_d/2 |z|^2 <= d - d* <= L_d/2 |z|^2 for the Rastrigin envelope.

    Lower: 1 - cos >= 0 gives mu_lower = mu_d. Upper: 1 - cos u <= u^2/2 gives L_d = mu_d + A w^2 (paper's note);
    both are tight (the upper one as z -> 0 along any axis, the lower one where cos(w z_i) = 1).
    """
    v.positive("mu_d", mu_d)
    v.nonnegative("A", A)
    v.nonnegative("w", w)
    return mu_d, mu_d + A * w**2


class GaussianPrior(NamedTuple):
    """L0 = N(x0, I/mu0); x0 shape (n,)."""

    x0: jax.Array
    mu0: jax.Array

    def log_prob(self, x):
        n = self.x0.shape[-1]
        return (-0.5 * self.mu0 * jnp.sum((x - self.x0) ** 2, axis=-1)
                + 0.5 * n * (jnp.log(self.mu0) - _LOG2PI))


def gaussian_prior(x0, mu0) -> GaussianPrior:
    v.positive("mu0", mu0)
    return GaussianPrior(jnp.atleast_1d(_f(x0)), _f(mu0))


# ---------------------------------------------------------------------------------------------------------
# Temperature schedules
# ---------------------------------------------------------------------------------------------------------


def num_temperatures(schedule: str, T: float, *, D: float | None = None, tau1: float | None = None,
                     n: int | None = None) -> int:
    """N, the number of temperatures.

    additive:  tau_k = k / D, k = 1..N, N = ceil(T D)            (D = the range of d; step 1/D)
    geometric: tau_1 given (paper: mu0 / L_d), tau_{k+1} = (1 + 1/n) tau_k, stopped at T:
               N = 1 + ceil(ln(T / tau_1) / ln(1 + 1/n))        (last temperature clipped to T)
    """
    v.one_of("schedule", schedule, SCHEDULES)
    v.positive("T", T)
    if schedule == "additive":
        v.positive("D", D if D is not None else -1.0)
        return max(1, math.ceil(T * D - 1e-9))
    v.positive("tau1", tau1 if tau1 is not None else -1.0)
    v.positive_int("n", n)
    if tau1 >= T:
        return 1
    return 1 + math.ceil(math.log(T / tau1) / math.log1p(1.0 / n) - 1e-9)


def temperature_schedule(schedule: str, T: float, *, D: float | None = None, tau1: float | None = None,
                         n: int | None = None) -> np.ndarray:
    """The temperatures tau_1..tau_N (NumPy float array of length ``num_temperatures``), ending exactly at T."""
    N = num_temperatures(schedule, T, D=D, tau1=tau1, n=n)
    if schedule == "additive":
        taus = np.arange(1, N + 1) / D
    else:
        taus = tau1 * (1.0 + 1.0 / n) ** np.arange(N)
    return np.minimum(taus, T)


# ---------------------------------------------------------------------------------------------------------
# Model families: Gaussian (fixed inflated variance or empirical covariance) and KDE
# ---------------------------------------------------------------------------------------------------------


class Gaussian(NamedTuple):
    """N(mean, chol chol^T); mean (n,), chol (n, n) lower-triangular."""

    mean: jax.Array
    chol: jax.Array


class KDE(NamedTuple):
    """(1/m) sum_i N(centers_i, h^2 I); centers (m, n), h scalar bandwidth."""

    centers: jax.Array
    h: jax.Array


def log_prob_fn(model):
    """A function x (..., n) -> log L(x) with the model's factorisation done once (the inverse Cholesky factor
    of a Gaussian is computed here, not per evaluation: a batched triangular solve per point is slow on CPU)."""
    if isinstance(model, Gaussian):
        n = model.mean.shape[-1]
        inv = jnp.linalg.inv(model.chol)
        const = -jnp.sum(jnp.log(jnp.abs(jnp.diagonal(model.chol)))) - 0.5 * n * _LOG2PI

        def f(x):
            return -0.5 * jnp.sum(((x - model.mean) @ inv.T) ** 2, axis=-1) + const

        return f
    return partial(log_prob, model)


def log_prob(model, x):
    """log L(x) for a Gaussian or KDE model; x (..., n) -> (...)."""
    if isinstance(model, Gaussian):
        n = model.mean.shape[-1]
        z = x - model.mean
        flat = z.reshape(-1, n).T
        sol = jax.scipy.linalg.solve_triangular(model.chol, flat, lower=True).T.reshape(z.shape)
        logdet = jnp.sum(jnp.log(jnp.abs(jnp.diagonal(model.chol))))
        return -0.5 * jnp.sum(sol**2, axis=-1) - logdet - 0.5 * n * _LOG2PI
    if isinstance(model, KDE):
        m, n = model.centers.shape
        sq = jnp.sum((x[..., None, :] - model.centers) ** 2, axis=-1)  # (..., m)
        return (logsumexp(-0.5 * sq / model.h**2, axis=-1) - jnp.log(m)
                - n * jnp.log(model.h) - 0.5 * n * _LOG2PI)
    raise TypeError(f"model must be Gaussian or KDE, got {type(model).__name__}")


def sample(model, key, shape=()):
    """Draw samples of shape ``shape + (n,)`` from a Gaussian or KDE model."""
    if isinstance(model, Gaussian):
        n = model.mean.shape[-1]
        z = jax.random.normal(key, (*shape, n), dtype=model.mean.dtype)
        return model.mean + z @ model.chol.T
    if isinstance(model, KDE):
        m, n = model.centers.shape
        ki, kz = jax.random.split(key)
        idx = jax.random.randint(ki, shape, 0, m)
        return model.centers[idx] + model.h * jax.random.normal(kz, (*shape, n), dtype=model.centers.dtype)
    raise TypeError(f"model must be Gaussian or KDE, got {type(model).__name__}")


def fit_gaussian_fixed(samples, var) -> Gaussian:
    """MLE mean with a fixed (inflated) isotropic variance ``var``: N(mean(samples), var I). samples (m, n)."""
    v.positive("var", var)
    n = samples.shape[-1]
    return Gaussian(jnp.mean(samples, axis=0), jnp.sqrt(var) * jnp.eye(n, dtype=samples.dtype))


def fit_gaussian_empirical(samples, jitter: float = 1e-6) -> Gaussian:
    """MLE mean and MLE (1/m) covariance, plus ``jitter`` I for a valid Cholesky. samples (m, n)."""
    mean = jnp.mean(samples, axis=0)
    z = samples - mean
    cov = z.T @ z / samples.shape[0] + jitter * jnp.eye(samples.shape[-1], dtype=samples.dtype)
    return Gaussian(mean, jnp.linalg.cholesky(cov))


def pooled_std(samples):
    """sqrt of the mean per-coordinate (MLE) variance of samples (m, n): the sigma of the KDE bandwidth."""
    return jnp.sqrt(jnp.mean(jnp.var(samples, axis=0)))


def fit_kde(samples, c, sigma=None) -> KDE:
    """KDE on the samples with bandwidth h = c * sigma (sigma defaults to ``pooled_std(samples)``)."""
    v.positive("c", c)
    sigma = pooled_std(samples) if sigma is None else sigma
    return KDE(samples, c * sigma)


def _fit(family, samples, *, var, c):
    if family == "mle":
        return fit_gaussian_fixed(samples, var)
    if family == "empirical":
        return fit_gaussian_empirical(samples)
    return fit_kde(samples, c)


# ---------------------------------------------------------------------------------------------------------
# Coverage diagnostics (coarse learnability)
# ---------------------------------------------------------------------------------------------------------


def log_coverage_sup(log_p, log_L):
    """log sup_grid p/L: the largest log ratio over grid values log_p (..., G), log_L (..., G) -> (...)."""
    return jnp.max(log_p - log_L, axis=-1)


def coverage_tail_mass(log_p, log_L, dx, K):
    """Pr_{s~p}[p(s)/L(s) > K] by a Riemann sum on a uniform 1-D grid of spacing dx. (..., G) -> (...)."""
    v.positive("K", K)
    v.positive("dx", dx)
    return jnp.sum(jnp.exp(log_p) * (log_p - log_L > jnp.log(K)), axis=-1) * dx


def gaussian_log_sup_ratio(m1, s1, m2, s2):
    """log sup_x N(x; m1, s1^2) / N(x; m2, s2^2) in 1-D (closed form): finite iff s2 > s1 (or equal means
    and variances). For s2 > s1: log(s2/s1) + (m1 - m2)^2 / (2 (s2^2 - s1^2)); +inf if s2 < s1."""
    gap = s2**2 - s1**2
    finite = jnp.log(s2 / s1) + (m1 - m2) ** 2 / (2.0 * jnp.where(gap > 0, gap, 1.0))
    same = (gap == 0) & (m1 == m2)
    return jnp.where(gap > 0, finite, jnp.where(same, 0.0, jnp.inf))


def gaussian_importance_ess(mean_p, var_p, mean_q, var_q, n: int, mean_var=0.0):
    """Population importance ESS fraction 1/E_q[(p/q)^2] (eq. ESS) for target p = N(mean_p, var_p I_n) and
    proposal q = N(mean_q, var_q I_n): the limit of ``importance_ess`` over N -> inf proposals. Per coordinate
        E_q[(p/q)^2] = var_q / (sqrt(var_p) sqrt(2 var_q - var_p)) exp((mean_p - mean_q)^2 / (2 var_q - var_p)),
    finite iff var_q > var_p / 2 (the fraction is 0 otherwise). ``mean_var`` > 0 averages the result over a
    random proposal mean mean_q + N(0, mean_var I) (a mean fitted on samples): the exponential factor becomes
    (1 + 2 mean_var/D)^(-1/2) exp(-(mean_p - mean_q)^2 / (D + 2 mean_var)) per coordinate, D = 2 var_q - var_p.
    mean_p, mean_q: (..., n), or (..., 1) / scalars for the same value in every coordinate; returns (...)."""
    v.positive_int("n", n)
    v.positive("var_p", var_p)
    v.positive("var_q", var_q)
    v.nonnegative("mean_var", mean_var)
    var_p, var_q, mean_var = _f(var_p), _f(var_q), _f(mean_var)
    D = 2.0 * var_q - var_p
    Ds = jnp.where(D > 0, D, 1.0)
    delta2 = jnp.atleast_1d(_f(mean_p) - _f(mean_q)) ** 2
    sq = jnp.sum(jnp.broadcast_to(delta2, jnp.broadcast_shapes(delta2.shape, (n,))), axis=-1)
    log_ess = (0.5 * n * (jnp.log(var_p) + jnp.log(Ds)) - n * jnp.log(var_q)
               - 0.5 * n * jnp.log1p(2.0 * mean_var / Ds) - sq / (Ds + 2.0 * mean_var))
    return jnp.where(D > 0, jnp.exp(log_ess), 0.0)


# ---------------------------------------------------------------------------------------------------------
# Closed forms for pure quadratic costs
# ---------------------------------------------------------------------------------------------------------


def quadratic_tempered(x0, mu0, x_star, mu_d, T):
    """p_T for d = mu_d/2 ||x - x*||^2, L0 = N(x0, I/mu0) (eq. pT): returns (mean (n,), var scalar)."""
    v.positive("mu0", mu0)
    v.positive("mu_d", mu_d)
    v.nonnegative("T", T)
    prec = mu0 + T * mu_d
    return (mu0 * _f(x0) + T * mu_d * _f(x_star)) / prec, 1.0 / prec


def quadratic_expected_cost(x0, mu0, x_star, mu_d, T):
    """E_{p_T}[d] = mu_d/2 (n / (mu0 + T mu_d) + ||mean_T - x*||^2) (eq. pT); x0, x_star shape (n,)."""
    mean, var = quadratic_tempered(x0, mu0, x_star, mu_d, T)
    n = jnp.shape(jnp.atleast_1d(x0))[-1]
    return 0.5 * mu_d * (n * var + jnp.sum((mean - _f(x_star)) ** 2, axis=-1))


def separable_tempered_moments(cost1d, x0, mu0, tau, grid):
    """Exact per-coordinate mean and E[cost1d] of p_tau ∝ exp(-mu0/2 (x - x0)^2 - tau cost1d(x)) by quadrature
    on the 1-D ``grid`` (G,). A separable cost d(x) = sum_i cost1d(x_i) with an isotropic Gaussian prior makes
    p_tau a product of these 1-D laws, so E[x] and E[d] = sum_i E[cost1d] follow exactly. Returns (mean, Ecost)."""
    logw = -0.5 * mu0 * (grid - x0) ** 2 - tau * cost1d(grid)
    p = jnp.exp(logw - jnp.max(logw))
    p = p / jnp.sum(p)
    return jnp.sum(p * grid), jnp.sum(p * cost1d(grid))


# ---------------------------------------------------------------------------------------------------------
# Independent Metropolis-Hastings: exact finite-space kernel and the JAX chains
# ---------------------------------------------------------------------------------------------------------


def imh_transition_matrix(p, q):
    """Exact IMH kernel on a finite space (eq. IMH): P[x, y] = q(y) min(1, p(y) q(x) / (p(x) q(y))) for y != x,
    P[x, x] = 1 - sum_{y != x} P[x, y]. p, q (K,) probability vectors with q > 0. Returns (K, K)."""
    r = p / q  # importance ratio
    rx = r[:, None]
    acc = jnp.where(rx > 0, jnp.minimum(1.0, r[None, :] / jnp.where(rx > 0, rx, 1.0)), 1.0)  # leave p(x) = 0
    P = q[None, :] * acc
    P = P * (1.0 - jnp.eye(p.shape[0], dtype=P.dtype))
    return P + jnp.diag(1.0 - jnp.sum(P, axis=1))


def imh_tv_bound(W, M):
    """(1 - 1/W)^M: the TV bound of M IMH steps from any start, W = max p/q >= 1 (eq. IMH-TV)."""
    return (1.0 - 1.0 / W) ** M


def _noise(model, key, shape):
    """The standard noise behind ``sample(model, key, shape)``: (normals (*shape, n), component indices)."""
    if isinstance(model, Gaussian):
        return jax.random.normal(key, (*shape, model.mean.shape[-1]), dtype=model.mean.dtype), None
    ki, kz = jax.random.split(key)
    m, n = model.centers.shape
    return (jax.random.normal(kz, (*shape, n), dtype=model.centers.dtype),
            jax.random.randint(ki, shape, 0, m))


def _from_noise(model, z, idx):
    if isinstance(model, Gaussian):
        return model.mean + z @ model.chol.T
    return model.centers[idx] + model.h * z


def _imh_chain(cost, prior, tau, model, key, M):
    """One IMH chain of M steps (lax.scan). Starts from a proposal draw. Returns (x_M, n_accepted, best cost).

    All the chain's randomness is drawn before the scan (one PRNG call site per kind, a much smaller program to
    compile than a key split per step)."""
    logq = log_prob_fn(model)

    def logw(x):
        dx = cost(x)
        return prior.log_prob(x) - tau * dx - logq(x), dx

    kz, ku = jax.random.split(key)
    z, idx = _noise(model, kz, (M + 1,))
    props = _from_noise(model, z, idx)  # (M + 1, n): the initial state and the M proposals
    logu = jnp.log(jax.random.uniform(ku, (M,), dtype=props.dtype))
    x = props[0]
    lw, dx = logw(x)

    def step(carry, inp):
        x, lw, best = carry
        y, lu = inp
        lwy, dy = logw(y)
        accept = lu < lwy - lw
        return (jnp.where(accept, y, x), jnp.where(accept, lwy, lw), jnp.minimum(best, dy)), (accept, lwy)

    (x, _, best), (acc, lws) = lax.scan(step, (x, lw, dx), (props[1:], logu))
    return x, jnp.sum(acc), best, lws


def importance_ess(log_w):
    """Kish effective sample size fraction (sum w)^2 / (N sum w^2) of importance weights given as logs (any
    shape, N = their count); 1 when the proposal is the target, ~1/E_q[(p/q)^2] otherwise."""
    lw = jnp.ravel(log_w)
    return jnp.exp(2.0 * logsumexp(lw) - logsumexp(2.0 * lw)) / lw.size


def imh_chains(cost, prior, tau, model, *, m: int, M: int, key, return_ess: bool = False):
    """m independent IMH chains (vmap) of M steps (lax.scan), target w_tau = L0 exp(-tau d), proposal ``model``.

    Returns (final states (m, n), acceptance rate over all m*M proposals, best cost seen), and with
    ``return_ess`` also the importance-sampling ESS fraction of the m*M proposals against the target
    (``importance_ess``: how well the fitted proposal covers p_tau). Uses m (M + 1) evaluations of d (each
    chain's initial draw plus M proposals).
    """
    v.positive_int("m", m)
    v.positive_int("M", M)
    v.nonnegative("tau", tau)
    xs, acc, best, lws = jax.vmap(lambda k: _imh_chain(cost, prior, tau, model, k, M))(jax.random.split(key, m))
    out = (xs, jnp.sum(acc) / (m * M), jnp.min(best))
    return (*out, importance_ess(lws)) if return_ess else out


# ---------------------------------------------------------------------------------------------------------
# ALDRIFT and TOPIFT
# ---------------------------------------------------------------------------------------------------------


class History(NamedTuple):
    """Per-iteration record (leading axis = iteration, length N): fitted mean (N, n), mean cost of the m fitted
    samples (N,), best cost seen so far (N,), cumulative evaluations of d (N,), IMH acceptance rate (N,) (NaN-free;
    TOPIFT reports 1/M, the fraction kept), importance ESS fraction of the proposals against the target (N,)
    (``importance_ess``; TOPIFT reports 1: it does not weight)."""

    mean: jax.Array
    sample_cost: jax.Array
    best: jax.Array
    evals: jax.Array
    acceptance: jax.Array
    ess: jax.Array


def initial_model(family: str, prior: GaussianPrior, *, m: int, c: float = 1.0, key):
    """The model at tau = 0: the prior itself for the Gaussian families, a KDE of m prior draws for "kde"."""
    n = prior.x0.shape[-1]
    if family == "kde":
        draws = prior.x0 + jax.random.normal(key, (m, n), dtype=prior.x0.dtype) / jnp.sqrt(prior.mu0)
        return fit_kde(draws, c)
    return Gaussian(prior.x0, jnp.eye(n, dtype=prior.x0.dtype) / jnp.sqrt(prior.mu0))


@partial(jax.jit, static_argnames=("m", "M", "family"))
def _aldrift(cost, prior, taus, mu_d, inflation, c, key, m, M, family):
    kinit, krun = jax.random.split(key)
    model = initial_model(family, prior, m=m, c=c, key=kinit)

    def level(carry, inp):
        model, best, evals = carry
        tau, k = inp
        xs, acc, b, ess = imh_chains(cost, prior, tau, model, m=m, M=M, key=k, return_ess=True)
        var = inflation / (prior.mu0 + tau * mu_d)
        new = _fit(family, xs, var=var, c=c)
        best = jnp.minimum(best, b)
        evals = evals + m * (M + 1)
        rec = History(jnp.mean(xs, axis=0), jnp.mean(cost(xs)), best, evals, acc, ess)
        return (new, best, evals), (rec, xs)

    keys = jax.random.split(krun, taus.shape[0])
    init = (model, jnp.array(jnp.inf, taus.dtype), jnp.array(0.0, taus.dtype))
    (model, _, _), (hist, xs) = lax.scan(level, init, (taus, keys))
    return hist, xs[-1], model


def aldrift(cost, prior: GaussianPrior, taus, *, m: int, M: int, family: str = "mle", mu_d=None,
            inflation: float = 2.0, c: float = 1.0, key):
    """ALDRIFT over the temperatures ``taus`` (N,) (eq. ALDRIFT).

    At each tau_k: m IMH chains of M steps with proposal L_{k-1}, target L0 exp(-tau_k d); fit L_k on the m final
    states with ``family``:
      "mle"        N(sample mean, inflation / (mu0 + tau_k mu_d) I)   (paper: inflation 2, mu_tau = mu0 + tau mu_d)
      "empirical"  N(sample mean, sample covariance)                   (not coarse-learnable: tails too light)
      "kde"        KDE with bandwidth h = c * pooled sample std
    L_0 is the prior. Returns (History, final samples (m, n), final model). Uses N m (M + 1) evaluations of d.
    """
    v.one_of("family", family, FAMILIES)
    v.positive_int("m", m)
    v.positive_int("M", M)
    v.positive("inflation", inflation)
    v.positive("c", c)
    taus = _f(taus)
    v.check("taus", taus, lambda a: (a.ndim == 1) & (a.size > 0) & np.all(a >= 0), "a non-empty 1-D array >= 0")
    if family == "mle":
        if mu_d is None:
            raise ValueError("mu_d must be given for family='mle' (the variance is inflation/(mu0 + tau mu_d))")
        v.positive("mu_d", mu_d)
    mu_d = _f(0.0 if mu_d is None else mu_d)
    return _aldrift(cost, prior, taus, mu_d, _f(inflation), _f(c), key, m, M, family)


@partial(jax.jit, static_argnames=("m", "M", "rounds", "family"))
def _topift(cost, prior, c, key, m, M, rounds, family):
    kinit, krun = jax.random.split(key)
    model = initial_model(family, prior, m=m, c=c, key=kinit)

    def rnd(carry, k):
        model, best, evals = carry
        xs = sample(model, k, (m * M,))
        dx = cost(xs)
        _, idx = lax.top_k(-dx, m)
        elite = xs[idx]
        new = _fit(family, elite, var=1.0, c=c)
        best = jnp.minimum(best, jnp.min(dx))
        evals = evals + m * M
        rec = History(jnp.mean(elite, axis=0), jnp.mean(dx[idx]), best, evals, jnp.asarray(1.0 / M, dx.dtype),
                      jnp.asarray(1.0, dx.dtype))
        return (new, best, evals), rec

    init = (model, jnp.array(jnp.inf, prior.x0.dtype), jnp.array(0.0, prior.x0.dtype))
    (model, _, _), hist = lax.scan(rnd, init, jax.random.split(krun, rounds))
    return hist, model


def topift(cost, prior: GaussianPrior, *, m: int, M: int, rounds: int, family: str = "empirical",
           c: float = 1.0, key):
    """TOPIFT (cross-entropy method): each round draw m*M samples from the current model (round 1: the prior),
    keep the m cheapest, refit with ``family`` ("empirical" = Gaussian MLE mean and covariance, "kde").
    Same budget as ALDRIFT with the same (m, M, N = rounds). Returns (History, final model)."""
    v.one_of("family", family, ("empirical", "kde"))
    v.positive_int("m", m)
    v.positive_int("M", M)
    v.positive_int("rounds", rounds)
    v.positive("c", c)
    return _topift(cost, prior, _f(c), key, m, M, rounds, family)


# ---------------------------------------------------------------------------------------------------------
# Baselines: random search and DOO (Munos 2011)
# ---------------------------------------------------------------------------------------------------------


@partial(jax.jit, static_argnames=("n", "budget"))
def _random_search(cost, lo, hi, key, n, budget):
    x = jax.random.uniform(key, (budget, n), minval=lo, maxval=hi)
    return lax.cummin(cost(x))


def random_search(cost, lo, hi, *, n: int, budget: int, key):
    """Uniform random search on the box [lo, hi]^n: the best-so-far cost after 1..budget evaluations (budget,)."""
    v.positive_int("n", n)
    v.positive_int("budget", budget)
    v.check("hi", hi, lambda a: a > lo, f"> lo={lo}")
    return _random_search(cost, _f(lo), _f(hi), key, n, budget)


def random_search_expected_evals(eps, L_d, lo, hi, n: int):
    """1/P[d - d* <= eps] for one uniform draw on [lo, hi]^n when the sublevel set is the ball of radius
    r = sqrt(2 eps / L_d) (exact as eps -> 0, and an upper bound on the mean at every eps since
    d - d* <= L_d/2 |x - x*|^2): (hi - lo)^n Gamma(n/2 + 1) / (pi^(n/2) r^n). Grows as eps^(-n/2)."""
    v.positive("eps", eps)
    v.positive("L_d", L_d)
    r = jnp.sqrt(2.0 * _f(eps) / L_d)
    log_ball = 0.5 * n * math.log(math.pi) - math.lgamma(0.5 * n + 1.0) + n * jnp.log(r)
    return jnp.exp(n * jnp.log(_f(hi - lo)) - log_ball)


def evaluations_to_reach(best_curve, eps, evals=None):
    """First evaluation count at which a non-increasing best-so-far curve (B,) is <= eps (E,).

    ``evals`` (B,) gives the evaluation count of each curve entry (default 1..B). Returns (counts (E,), reached
    (E,) bool); an unreached eps gets count = evals[-1] and reached = False (flagged, never silently inf)."""
    B = best_curve.shape[0]
    evals = jnp.arange(1, B + 1, dtype=best_curve.dtype) if evals is None else evals
    idx = jnp.searchsorted(-best_curve, -_f(eps), side="left")
    reached = idx < B
    return evals[jnp.minimum(idx, B - 1)], reached


@partial(jax.jit, static_argnames=("n", "expansions"))
def _doo(cost, lo, hi, L_d, n, expansions):
    K = 1 + 2 * expansions
    dt = jnp.result_type(float)
    centers = jnp.zeros((K, n), dt).at[0].set(jnp.full((n,), 0.5 * (lo + hi), dt))
    half = jnp.zeros((K, n), dt).at[0].set(jnp.full((n,), 0.5 * (hi - lo), dt))
    vals = jnp.full((K,), jnp.inf, dt).at[0].set(cost(centers[0]))
    alive = jnp.zeros((K,), bool).at[0].set(True)

    def body(i, state):
        centers, half, vals, alive = state
        delta = 0.5 * L_d * jnp.sum(half**2, axis=-1)  # sup of the semi-metric L_d/2 |x - c|^2 over the cell
        j = jnp.argmin(jnp.where(alive, vals - delta, jnp.inf))  # most optimistic leaf (min f - delta)
        k = jnp.argmax(half[j])
        new_half = half[j].at[k].divide(3.0)
        step = jnp.zeros((n,), dt).at[k].set(2.0 * new_half[k])
        a, b = 1 + 2 * i, 2 + 2 * i
        ca, cb = centers[j] - step, centers[j] + step
        centers = centers.at[a].set(ca).at[b].set(cb)
        half = half.at[j].set(new_half).at[a].set(new_half).at[b].set(new_half)
        vals = vals.at[a].set(cost(ca)).at[b].set(cost(cb))
        alive = alive.at[a].set(True).at[b].set(True)
        return centers, half, vals, alive

    centers, half, vals, alive = lax.fori_loop(0, expansions, body, (centers, half, vals, alive))
    return lax.cummin(vals), centers, half


def doo(cost, lo, hi, *, n: int, L_d, expansions: int):
    """Deterministic Optimistic Optimisation (Munos 2011) of d on [lo, hi]^n, minimisation form.

    Cells are boxes split in 3 along their widest side (the middle child keeps the parent's centre, so each
    expansion costs 2 evaluations); the leaf expanded is argmin d(centre) - L_d/2 |half-diagonal|^2, optimistic
    under the local smoothness d(x) - d* <= L_d/2 |x - x*|^2 (the quadratic envelope). With d - d* >= mu_d/2
    |x - x*|^2 the near-optimality dimension is 0, so the regret falls exponentially in the evaluations
    (O(log 1/eps) evaluations). Returns (best-so-far (1 + 2 expansions,), centres, half-widths); entry i is the
    best after i + 1 evaluations.
    """
    v.positive_int("n", n)
    v.positive_int("expansions", expansions)
    v.positive("L_d", L_d)
    v.check("hi", hi, lambda a: a > lo, f"> lo={lo}")
    return _doo(cost, _f(lo), _f(hi), _f(L_d), n, expansions)


def aldrift_evals_per_efold(m: int, M: int, n: int):
    """Predicted slope of ALDRIFT's evaluations vs ln(1/eps) on a geometric schedule: each temperature costs
    m (M + 1) evaluations and multiplies tau by 1 + 1/n, while E_{p_tau}[d] -> n/(2 tau) (Laplace: p_tau is
    ~N(x*, I/(tau L)) near x*, E[d] = n/(2 tau) whatever L). Hence d evals / d ln(1/eps) = m (M+1)/ln(1 + 1/n)."""
    v.positive_int("m", m)
    v.positive_int("M", M)
    v.positive_int("n", n)
    return m * (M + 1) / math.log1p(1.0 / n)
