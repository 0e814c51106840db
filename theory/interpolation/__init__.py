"""Mini-batch SGD, heavy ball and Nesterov on consistent least squares (the interpolation regime).

Reference: Garg & Derezinski, "Perfect parallelization in mini-batch SGD with classical momentum acceleration"
(arXiv 2605.18609, 2026). Prior lines: Bollapragada, Chen & Ward (mini-batch heavy
ball = accelerated randomized Kaczmarz), Jain et al. 2018 (accelerated SGD for least squares), Lee, Cheng,
Paquette & Paquette 2022 (batch-size saturation).

Setup and notation (used throughout):
  A (n, d) with full column rank, b = A x* (consistent: b in range(A)), f(x) = 1/(2n) ||A x - b||^2,
  H = A^T A / n  (the Hessian), eigenvalues mu = lambda_min(H) <= ... <= L = lambda_max(H),  kappa = L / mu.
  Sampling: rows i ~ p_i iid with replacement, importance weights w_i = 1 / (n p_i):
     "uniform"  p_i = 1/n                       (w_i = 1)
     "norm"     p_i = ||a_i||^2 / ||A||_F^2     (the randomized-Kaczmarz distribution)
  X_i = w_i a_i a_i^T, so E[X] = H.  Mini-batch of B rows: Xbar = (1/B) sum_j X_{i_j}; the stochastic
  gradient is g(x) = (1/B) sum_j w_{i_j} a_{i_j} (a_{i_j}^T x - b_{i_j}) = Xbar (x - x*).
  L_max = lambda_max(H^{-1/2} E[X^2] H^{-1/2}): the tightest constant with E[X^2] <= L_max H ("expected
  smoothness"); it equals tr H for "norm" sampling and lies in [tr H, max_i ||a_i||^2] for "uniform".

Methods on the error e_t = x_t - x* (x_{-1} = x_0):
  SGD        e_{t+1} = e_t - lr Xbar_t e_t
  heavy ball e_{t+1} = e_t - lr Xbar_t e_t + beta (e_t - e_{t-1})
  Nesterov   y_t = e_t + beta (e_t - e_{t-1}),  e_{t+1} = y_t - lr Xbar_t y_t
One formula covers all three: y_t = e_t + gamma beta (e_t - e_{t-1}), e_{t+1} = e_t - lr Xbar_t y_t +
beta (e_t - e_{t-1}), with gamma = 0 (SGD, HB) or 1 (Nesterov).

Exact mean-square dynamics (eq. MS): the second moment S_t = E[z_t z_t^T] of z_t = (e_t, e_{t-1}) (2d x 2d)
evolves by the linear map
  S -> T(S) = M S M^T + (lr^2 / B) E1 N(C S C^T) E1^T,   N(Q) = E[X Q X] - H Q H,
  HB:        M = [[(1 + beta) I - lr H, -beta I], [I, 0]],          C = [I, 0]
  Nesterov:  M = [[(1 + beta)(I - lr H), -beta (I - lr H)], [I, 0]], C = [(1 + beta) I, -beta I]
E1 = [I; 0].  (1/B) N is the covariance of Xbar acting on Q (iid sampling).  B = 1, beta = 0 is exactly
SGD's recursion E[(I - lr X) S (I - lr X)].  The spectral radius rho(T) is the exact asymptotic rate of
E||e_t||^2 (per step); -1 / log rho(T) is the number of iterations per e-fold of E||e_t||^2.

Computing rho(T) without the (2d)^2 x (2d)^2 matrix (``mean_square_rate``): T = T0 + noise with T0(S) =
M S M^T. In H's eigenbasis T0 decouples into 2 x 2 blocks, so for lambda > rho(T0) = rho(M)^2 the reduced map
F(lambda) Q = (lr^2 / B) g(lambda) o N(Q),  g_ij(lambda) = (c (x) c)^T (lambda I_4 - M_i (x) M_j)^{-1} (e1
(x) e1)
(a Schur multiplier; c = (1, 0) for HB, (1 + beta, -beta) for Nesterov) is a positive map on d x d matrices
and
   lambda > rho(T)   <=>   lambda > rho(M)^2  and  (I - F(lambda))^{-1}(I) is positive definite.
(If x = (I - F)^{-1} I is PD then x = I + F(x) >= I and F(x) <= (1 - 1/lambda_max(x)) x, so rho(F) < 1; the
converse is the Neumann series.)  Bisection on lambda gives rho(T) to machine precision with d^2 x d^2
solves; the dense operator (``operator_matrix``) is kept as the reference for tests.

A sufficient mean-square stability condition (eq. STAB, from the same reduced map with F(1)(I) <= max_i(...) I
and N(I) <= L_max H - H^2): rho(M) < 1 and for every eigenvalue h of H
   (lr / B) (L_max - h) (1 + beta) / ((1 - beta) (2 (1 + beta) - lr h)) < 1       (heavy ball / SGD).
For SGD with B = 1 it reads lr < 2 / L_max (Kaczmarz's relaxation limit 2).

Special cases (all are instances of the same mini-batch iteration):
  randomized Kaczmarz = "norm" sampling, lr = 1 / tr H (lr X_i is the projection a a^T / ||a||^2), B = 1;
  block (averaged) Kaczmarz = the same with B rows, x moved by the average of the B projections (times a
     relaxation); with momentum it is mini-batch heavy ball / Nesterov;
  randomized coordinate descent on f (coordinate j ~ G_jj, G = H) is SGD on the equivalent problem with rows
     g_j = G^{1/2} e_j (``coordinate_descent_problem``), error z = G^{1/2} e, ||z||^2 = 2 (f(x) - f*).
Kaczmarz bound (Strohmer & Vershynin): E||e_t||^2 <= (1 - sigma_min(A)^2 / ||A||_F^2)^t ||e_0||^2.

Saturation scales: SGD's speedup from batching stops near B ~ L_max / L (then lr is limited by L, not by the
noise); accelerated SHB keeps a speedup proportional to B up to B ~ tr H / sqrt(L mu) (L_max / sqrt(L mu) with
uniform sampling), where its rate reaches full-batch heavy ball's (sqrt(kappa) - 1)/(sqrt(kappa) + 1).

Momentum rule (``momentum_rule``, eq. RULE): critically damped heavy ball with a step growing like B^2,
   lr_B = min(4 mu (B / L_max)^2, 2 / L),   beta_B = (1 - sqrt(lr_B mu))^2   (Nesterov: a / L with a = 1 and
   beta_B = (1 - sqrt(lr_B mu)) / (1 + sqrt(lr_B mu))).
Why: heavy ball's effective step along slow directions is lr / (1 - beta) ~= sqrt(lr / mu) / 2 at critical
damping;
eq. STAB for small lr h says the noise is tolerated while lr / (1 - beta) < 2 B / L_max. The rule puts the
effective step at B / L_max (half the limit), so the slowest mode contracts by 1 - sqrt(lr mu) = 1 - 2 B mu /
L_max
per step: a speedup proportional to B, with 1 - beta ~= 4 B mu / L_max growing linearly in B, until the step
reaches 2 / L at B = L_max / sqrt(2 L mu) (the saturation point, ~ tr H / sqrt(L mu)); beyond it the rule is
full-batch heavy ball critically damped on mu (rate 1 - sqrt(2 / kappa), within sqrt 2 in e-folds of Polyak's
optimum). Polyak's own parameters are NOT used: they put the top mode at the edge of the complex region
(lr L = (1 + sqrt beta)^2), where eq. STAB's denominator vanishes and any sampling noise makes SHB diverge.

Everything is a pure function; bad concrete parameters raise ValueError naming the parameter. Use float64
(``jax.enable_x64``) for the operator's spectral radius when rates are within ~1e-4 of 1.

Package layout (every public name is re-exported here: ``from theory import interpolation as ip; ip.X``):
  problem      Problem, Constants, spectrum, make_problem / random_problem, hessian, constants,
               saturation_scales; kaczmarz_problem / _lr / _rate_bound / _bound, coordinate_descent_problem
  rules        momentum_rule (eq. RULE), rule_saturation, stable_sufficient (eq. STAB)
  iterations   sample_batch, minibatch_gradient, run (SGD / HB / Nesterov), kaczmarz, coordinate_descent
  mean_square  mean_matrices, operator_apply / operator_matrix (dense reference), second_moment_trajectory,
               noise_kernel, mean_square_rate (rho(T) by the reduced map), expected_sq_error, efold_time
"""

from __future__ import annotations

from jaxwb.theory.interpolation.iterations import (
    cd_curves_jit as cd_curves_jit,
)
from jaxwb.theory.interpolation.iterations import (
    coordinate_descent,
    kaczmarz,
    minibatch_gradient,
    run,
    sample_batch,
)
from jaxwb.theory.interpolation.iterations import (
    coordinate_descent_jit as coordinate_descent_jit,
)
from jaxwb.theory.interpolation.iterations import (
    curves_jit as curves_jit,
)
from jaxwb.theory.interpolation.iterations import (
    run_jit as run_jit,
)
from jaxwb.theory.interpolation.mean_square import (
    MeanSquareRate,
    NoiseKernel,
    efold_time,
    expected_sq_error,
    mean_matrices,
    mean_square_rate,
    noise_kernel,
    operator_apply,
    operator_matrix,
    second_moment_trajectory,
)
from jaxwb.theory.interpolation.mean_square import (
    rate_jit as rate_jit,
)
from jaxwb.theory.interpolation.mean_square import (
    trajectory_jit as trajectory_jit,
)
from jaxwb.theory.interpolation.problem import (
    METHODS,
    SAMPLINGS,
    Constants,
    Problem,
    constants,
    coordinate_descent_problem,
    hessian,
    kaczmarz_bound,
    kaczmarz_lr,
    kaczmarz_problem,
    kaczmarz_rate_bound,
    least_squares_residual,
    make_problem,
    random_problem,
    saturation_scales,
    spectrum,
)
from jaxwb.theory.interpolation.rules import (
    momentum_rule,
    rule_saturation,
    stable_sufficient,
)
from jaxwb.theory.river_valley import hb_optimal_params, spectral_radius

__all__ = [
    "SAMPLINGS",
    "METHODS",
    "Problem",
    "Constants",
    "spectrum",
    "make_problem",
    "random_problem",
    "least_squares_residual",
    "hessian",
    "constants",
    "saturation_scales",
    "kaczmarz_problem",
    "kaczmarz_lr",
    "kaczmarz_rate_bound",
    "kaczmarz_bound",
    "coordinate_descent_problem",
    "momentum_rule",
    "rule_saturation",
    "stable_sufficient",
    "sample_batch",
    "minibatch_gradient",
    "run",
    "kaczmarz",
    "coordinate_descent",
    "mean_matrices",
    "operator_matrix",
    "operator_apply",
    "second_moment_trajectory",
    "noise_kernel",
    "mean_square_rate",
    "MeanSquareRate",
    "efold_time",
    "expected_sq_error",
    "NoiseKernel",
    "hb_optimal_params",
    "spectral_radius",
]
