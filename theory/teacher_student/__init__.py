"""Teacher-student feature learning at extensive width: a decoupled fixed-point model (OUR RECONSTRUCTION).

A package by concept; this module re-exports the public API (``from theory import teacher_student as ts``):
  kernel        amplitudes a2_i (eq. A), overlap kernels g (eq. G)
  closed_forms  g = m^3: m+(c), f(m; c) (eq. f), c_IT, the threshold and effective-width laws (eq. kc)
  phi           the potential Phi (eq. Phi), its differences, each feature's best branch
  prefix        the solver's cubic fast path: prefix errors and potential sums in lane sums
  solver        the global maximiser of Phi (``solve``, ``solve_grid``) and its convergence checks
  observables   Bayes/Gibbs errors, effective width, per-feature thresholds, jump detection
Mutants (sims/teacher_student) patch a name in the submodule that looks it up: a constant patched on a
re-export here (e.g. C_IT) changes nothing the solver reads; it reads ``closed_forms.C_IT`` at trace time.

Paper: Barbier & Nguyen, "Sharp feature-learning transitions and Bayes-optimal neural scaling laws in
extensive-width networks" (arXiv 2605.10395, 2026). The paper's equations are not public. Everything below is the
leave-one-out *decoupled* model (our own derivation, labelled "reconstruction" everywhere it is used): it
reproduces the laws the paper states, it is not the paper's exact replica formula.

Setting: a one-hidden-layer teacher f*(x) = sum_{i<=k} a_i sigma(w_i . x / sqrt d) with k ~ d hidden units,
hierarchical readout amplitudes a_i^2 ~ i^(-2 beta) (beta > 1/2), n = alpha d noisy samples (noise variance
Delta), Gaussian prior on the w_i. Notation:

  a2_i    = i^(-2 beta) / Z,  Z = sum_{j<=k} j^(-2 beta)              (eq. A, ``amplitudes``; sum_i a2_i = 1)
  g(m)    = sum_l mu_l^2 m^l / sum_l mu_l^2                             (eq. G, overlap kernel; activation
            sigma = sum_l mu_l He_l / sqrt(l!); default sigma = He_3/sqrt 6, g(m) = m^3)
  D       = Delta_eff = Delta + sum_j a2_j (1 - g(m_j))                  (eq. D, effective noise)
  c_i     = alpha a2_i / D                                              (per-feature signal-to-noise ratio)
  s_i     = c_i g'(m_i),   m_i = s_i / (1 + s_i)                         (eq. FP, Gaussian-prior scalar channel)
  Phi     = sum_i [psi(s_i) - s_i m_i / 2] - (alpha/2) log D,  psi(r) = (r - log(1 + r))/2      (eq. Phi)
          = sum_i (m_i + log(1 - m_i))/2 - (alpha/2) log D(m)   at a fixed point (the form used here: it needs
            no s, is stationary exactly at eq. FP, and gives the variational per-feature potential below)
  f(m; c) = (m + log(1 - m) + c g(m)) / 2                               (eq. f, per-feature potential, D frozen)
  eps_BO  = sum_i a2_i (1 - g(m_i)) = D - Delta                         (eq. BO, Bayes error)
  eps_G   = sum_i a2_i (g(1) + g(1) - 2 g(m_i)) = 2 eps_BO              (eq. Gibbs, Nishimori: q = m)

Global maximiser (``solve``). -log is convex, so Phi(m) = max_D L(m; D) with L the potential with log D
linearised at D, and max_m Phi = max_D G(D), G(D) = sum_i max_m f(m; alpha a2_i/D) - (alpha/2)(log D +
(Delta + sum a2)/D - 1): a one-dimensional problem. G'(D) = (alpha/(2 D^2)) (T(D) - D), T(D) = Delta + eps(D) with
every feature on its best branch; T is non-decreasing with upward jumps only, so every local maximiser of G is a
continuous downward crossing of T(D) - D: a self-consistent point with every feature on its best branch, the
learned set a prefix {1..j} (a2 decreasing). ``solve`` brackets all of them between the two extreme self-consistent
points (monotone iteration from D = Delta and D = Delta + sum a2), solves for every learned count j in between the
continuous equation on the D-interval where exactly j features are learned (bisection in log(D - Delta): roots
are never taken at jumps), evaluates Phi on every point found and keeps the largest. Tested against an
independent float64 method (dense starting points, plain iteration, no branch selection). Non-cubic kernels:
only the two extreme points are compared.

Closed forms for g = m^3 (D frozen): non-trivial branch m+(c) = (1 + sqrt(1 - 4/(3 c)))/2 for c >= 4/3
(spinodal c_sp = 4/3, m+ = 1/2 there); information-theoretic threshold c_IT = 1.4558 where f(m+(c); c) = 0,
jump 0 -> m+(c_IT) = 0.645. Hence feature i is learned once alpha a2_i / D >= c_IT: alpha_i ~ c_IT D Z i^(2 beta),
and the effective width is k_c ~ (alpha / (c_IT D Z))^(1/(2 beta)) (eq. kc). Bayes error: learned features
contribute ~D/alpha each, the unlearned tail ~k_c^(1-2 beta): eps_BO = Theta(k_c D / alpha) ~
alpha^(1/(2 beta) - 1) while k_c < k, ~k D / alpha once every feature is learned (refinement).

Numerics: the state is x = Delta_eff - Delta = eps (not D, whose float32 ulp would swamp a small eps), the
learned branch is carried as (m, u = 1 - m) with u+ = (2/(3c))/(1 + sqrt(1 - 4/(3c))) and 1 - g(m) = u sum_l c2_l
(1 + ... + m^(l-1)), so errors down to 1e-12 are exact in float32; the residual is |eps(D) - x|/x. The cubic
loops evaluate eps with the first j features learned as (2D/(3 alpha)) sum_{i<j} (t_i/4 + 1/2 + 1/t_i) + sum_{i>=j}
a2_i, t_i = 1 + sqrt(1 - 4 D w_i/3), w_i = 1/(alpha a2_i) precomputed (``prefix_eps``: one sqrt and one division
per feature, terms in [3/2, 7/4], no cancellation), summed as ``LANES`` partial sums (XLA vectorises those; a
plain float reduction is latency-bound), and the potential from its feature sums (``phi_gap``), computed only
where two or more points are valid (no output depends on it otherwise). Learned counts #{i: D <= alpha a2_i/c_IT}
and k_c are binary searches on sorted vectors (``count_down``: exact, as rounding is monotone). Near the
thresholds of features with a_i^2 below float32 resolution the competing points are numerically tied (harmless
for eps_BO). Every function is jit/vmap compatible; ``solve`` raises ``NotConvergedError`` (a RuntimeError)
when called eagerly and did not converge, and returns a ``converged`` flag that vmapped callers check with
``check_converged``.
"""

from jaxwb.theory.teacher_student.closed_forms import (
    C_IT,
    M_JUMP,
    SPINODAL_C,
    feature_potential,
    information_threshold,
    k_c_closed_form,
    m_plus,
    threshold_closed_form,
)
from jaxwb.theory.teacher_student.kernel import (
    Kernel,
    amplitudes,
    cubic_kernel,
    g,
    g_prime,
    hermite_kernel,
    normaliser,
    one_minus_g_from_s,
)
from jaxwb.theory.teacher_student.observables import (
    bayes_error,
    effective_width,
    first_crossing,
    gibbs_error,
    thresholds,
)
from jaxwb.theory.teacher_student.phi import best_branch, phi_gap, potential, potential_gap, potential_notes_form
from jaxwb.theory.teacher_student.prefix import (
    LANES,
    count_down,
    fast_terms,
    prefix_eps,
    prefix_err,
    prefix_overlaps,
    prefix_phi,
    prefix_sums,
)
from jaxwb.theory.teacher_student.solver import (
    BISECT_STEPS,
    EXTREME_STEPS,
    LEARNABLE_SLACK,
    N_CANDIDATES,
    Converged,
    NotConvergedError,
    Solution,
    check_converged,
    default_tol,
    keep_best,
    learnable_heads,
    solve,
    solve_fixed_point,
    solve_fixed_point_grid,
    solve_grid,
)

__all__ = [
    "BISECT_STEPS",
    "C_IT",
    "EXTREME_STEPS",
    "LANES",
    "LEARNABLE_SLACK",
    "M_JUMP",
    "N_CANDIDATES",
    "SPINODAL_C",
    "Kernel",
    "NotConvergedError",
    "Solution",
    "count_down",
    "fast_terms",
    "prefix_eps",
    "prefix_err",
    "prefix_overlaps",
    "prefix_phi",
    "prefix_sums",
    "solve_fixed_point",
    "solve_fixed_point_grid",
    "amplitudes",
    "bayes_error",
    "best_branch",
    "check_converged",
    "Converged",
    "cubic_kernel",
    "default_tol",
    "effective_width",
    "feature_potential",
    "first_crossing",
    "g",
    "g_prime",
    "gibbs_error",
    "hermite_kernel",
    "information_threshold",
    "k_c_closed_form",
    "keep_best",
    "learnable_heads",
    "m_plus",
    "normaliser",
    "one_minus_g_from_s",
    "phi_gap",
    "potential",
    "potential_gap",
    "potential_notes_form",
    "solve",
    "solve_grid",
    "threshold_closed_form",
    "thresholds",
]
