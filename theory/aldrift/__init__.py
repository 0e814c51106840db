"""ALDRIFT: zeroth-order optimisation over a generative prior by annealed, corrected refitting.

Reference: Awasthi, Gollapudi, Kumar, Munagala, "Sample-efficient optimization over generative priors via coarse
learnability" (arXiv 2503.06917).

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
parameters raise ValueError naming the parameter (under ``jit`` through ``jaxwb.theory.checked``).
Costs and models are NamedTuples (pytrees), so one compiled function serves every parameter value (vmap over
settings, sliders without recompiling).

Package layout (by concept): ``costs`` (d and L0), ``schedule`` (temperatures), ``models`` (Gaussian / KDE
families, sampling, fitting), ``coverage`` (coverage ratio, importance ESS), ``quadratic`` (closed forms),
``imh`` (IMH kernel and chains), ``algorithms`` (ALDRIFT, TOPIFT), ``baselines`` (random search, DOO). Every
public name is re-exported here (``from theory import aldrift as al; al.aldrift(...)``).
"""

from jaxwb.theory.aldrift.algorithms import History, aldrift, aldrift_jit, initial_model, topift
from jaxwb.theory.aldrift.baselines import (
    aldrift_evals_per_efold,
    doo,
    evaluations_to_reach,
    random_search,
    random_search_expected_evals,
)
from jaxwb.theory.aldrift.costs import (
    GaussianPrior,
    RastriginEnvelope,
    envelope_constants,
    gaussian_prior,
    rastrigin_envelope,
)
from jaxwb.theory.aldrift.coverage import (
    coverage_tail_mass,
    gaussian_importance_ess,
    gaussian_log_sup_ratio,
    importance_ess,
    log_coverage_sup,
)
from jaxwb.theory.aldrift.imh import imh_chains, imh_transition_matrix, imh_tv_bound
from jaxwb.theory.aldrift.models import (
    FAMILIES,
    KDE,
    Gaussian,
    fit_gaussian_empirical,
    fit_gaussian_fixed,
    fit_kde,
    log_prob,
    log_prob_fn,
    pooled_std,
    sample,
)
from jaxwb.theory.aldrift.quadratic import quadratic_expected_cost, quadratic_tempered, separable_tempered_moments
from jaxwb.theory.aldrift.schedule import SCHEDULES, num_temperatures, temperature_schedule

__all__ = [
    "FAMILIES", "KDE", "SCHEDULES", "Gaussian", "GaussianPrior", "History", "RastriginEnvelope",
    "aldrift", "aldrift_evals_per_efold", "coverage_tail_mass", "doo", "envelope_constants", "evaluations_to_reach",
    "fit_gaussian_empirical", "fit_gaussian_fixed", "fit_kde", "gaussian_importance_ess", "gaussian_log_sup_ratio",
    "gaussian_prior", "imh_chains", "imh_transition_matrix", "imh_tv_bound", "importance_ess", "initial_model",
    "log_coverage_sup", "log_prob", "log_prob_fn", "num_temperatures", "pooled_std", "quadratic_expected_cost",
    "quadratic_tempered", "random_search", "random_search_expected_evals", "rastrigin_envelope", "sample",
    "separable_tempered_moments", "temperature_schedule", "topift", "aldrift_jit",
]  # fmt: skip
