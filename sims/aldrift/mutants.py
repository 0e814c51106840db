"""ALDRIFT sim: the mutants, plausible bugs the claims must catch (``workbench audit aldrift``)."""

from __future__ import annotations

import math

from jaxwb.sims.core.audit import Mutant


def _evals_m_times_M(f):
    """ALDRIFT's evaluation count without the m initial states per temperature: m M instead of m (M + 1)."""

    def aldrift(*args, **kwargs):
        hist, xs, model = f(*args, **kwargs)
        M = kwargs["M"]
        return hist._replace(evals=hist.evals * M / (M + 1)), xs, model

    return aldrift


# First (the one the default suite runs): it changes a prediction, no simulated program. All four cost about one
# quick run (49-62 s wall each in one `audit` at load ~4 on 2 cores; this one was the fastest of the four in an
# earlier audit under load 12, 147 s vs 166-226 s).
MUTANTS = [
    Mutant(
        "random_search_missing_gamma",
        "jaxwb.theory.aldrift.baselines:random_search_expected_evals",
        lambda f: lambda eps, L_d, lo, hi, n: f(eps, L_d, lo, hi, n) / math.gamma(0.5 * n + 1.0),
        "1/P(ball) without the Gamma(n/2 + 1) of the ball volume",
    ),
    Mutant(
        "schedule_off_by_one",
        "jaxwb.theory.aldrift.schedule:num_temperatures",
        lambda f: lambda *a, **k: max(1, f(*a, **k) - 1),
        "geometric schedule one temperature short: stops at T/(1+1/n) instead of T",
    ),
    Mutant(
        "imh_missing_proposal_correction",
        "jaxwb.theory.aldrift.models:log_prob_fn",
        lambda f: lambda model: lambda x, g=f(model): 0.0 * g(x),
        "IMH acceptance min(1, w(y)/w(x)) without the proposal ratio L_prev(x)/L_prev(y)",
    ),
    Mutant(
        "mle_inflation_dropped",
        "jaxwb.theory.aldrift.algorithms:aldrift",
        lambda f: lambda *a, **k: f(*a, **{**k, "inflation": 1.0}),
        "fitted proposal variance 1/mu_tau instead of the inflated 2/mu_tau (proposal lighter than p_tau)",
    ),
    Mutant(
        "evals_without_initial_states",
        "jaxwb.theory.aldrift.algorithms:aldrift",
        _evals_m_times_M,
        "ALDRIFT counts m M evaluations per temperature instead of m (M + 1) (the e-fold slope ~M/(M+1) low)",
    ),
]
