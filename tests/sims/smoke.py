"""Smoke-sized configurations: each result's quick preset shrunk until its run costs a few seconds.

A smoke run goes through every stage, claim and figure of the quick preset on fewer seeds, shorter runs and
smaller grids. It decides nothing: its claims are evaluated (finite measurements), not judged, because its
samples are too small for the intervals the claims are decided on. The quick preset decides them
(``workbench all --quick``, and each result's quick-preset test under ``pytest -m slow``).

A smoke run is also small enough to run one mutant against in the default suite
(``tests/sims/test_smoke.py``): :data:`MUTANT` names, per result, a mutant that a claim catches at smoke size by
a wide margin (a comparison with a closed form, an exact recursion or a NumPy reference, or an interval the mutant
widens several-fold), not by a close call between seeds.
"""

from __future__ import annotations

from typing import Any

from jaxwb.sims.core import registry
from jaxwb.sims.core.presets import get_config

# per result: the quick preset's fields that change at smoke size
# fmt: off
OVERRIDES: dict[str, dict[str, Any]] = {
    "aldrift": dict(
        m=20, M=20, runs=5, quad_runs=8, eps_m=20, eps_M=5, eps_runs=5, rs_runs=32, rs_budget=60000, doo_expansions=100,
        cov_seeds=6, cov_grid=401, kish_reps=20
    ),
    "interpolation": dict(n_seeds=512, seed_budget=4096, min_seeds=32, aux_seeds=256, n_boot=50, record_points=60),
    "zoe_grad": dict(
        mc_seeds=5, mc_samples=2000, n_x=7, kernel_points=15, kernel_samples=1000, toy_steps=30, toy_seeds=5,
        pretrain_steps=200, qat_steps=3, qat_seeds=5, eval_windows=16
    ),
    "distillation": dict(
        n_seeds=5, timescale_seeds=5, mc_samples=128, n_theta=4, distill_steps=20, distill_batch=32, n_samples=64
    ),
    "sparse_attention": dict(eval_windows=8, n_prompts=8, n_perm=50),
    "tv_distance": dict(coverage_reps=40, sep_reps=10, k_seeds=6, tf_m=64),
    "mpq": dict(with_lm=False, bits=(4,), rht=(False,), se_draws=5, se_rows=16),
    "tiny_lm": dict(eval_windows=32, tv_m=64, sample_tokens=40, outlier_draws=2, check_windows=4),
    "river_valley_lm": dict(
        corpus_bytes=50000, steps=10, n_lr=3, n_adam=2, eval_windows=32, lanczos_iters=10, n_seeds=5, eos_seeds=5,
        map_seeds=5, edge_iters=3, eos_steps=8, track_iters=5, scan_seeds=5
    ),
    "speed_scaling": dict(n_seeds=5, las_cal_seeds=5, robust_seeds=5, bound_seeds=5),
}
# fmt: on

# per result: the mutant (its name in the result's MUTANTS) that a claim catches at smoke size, and the claim
MUTANT: dict[str, str] = {
    "aldrift": "mle_inflation_dropped",  # the evaluation-count slope against its closed form
    "distillation": "gd_filter_off_by_one",  # GD in closed form against iterated GD
    "interpolation": "exact_recursion_batch_off_by_one",  # Monte-Carlo iteration counts against the recursion
    "mpq": "diagonal_precisions_averaged",  # diagonal VAMP's marginals against exact enumeration
    "river_valley_lm": "momentum_sign_flipped",  # the training against the float64 NumPy reference
    "sparse_attention": "head_budget_uniform",  # the budget's rank correlation with head concentration
    "speed_scaling": "sp_no_robust_fallback",  # SP's cap against the exact schedule
    "tiny_lm": "activations_not_quantized",  # W4A4 against W4A16, the activations' codes against the NumPy decoder
    "tv_distance": "hoeffding_eps_not_squared",  # m 20x too small, the estimators' intervals too wide
    "zoe_grad": "fake_quant_grad_times_scale",  # the kernel's custom_vjp against the bump sum
}


def config(name: str):
    """The smoke-sized configuration of result ``name``: its quick preset with :data:`OVERRIDES` applied
    (``get_config``, which refuses a field the Config lacks)."""
    return get_config(registry.get(name), "quick", **OVERRIDES.get(name, {}))


def mutant(name: str):
    """The :data:`MUTANT` of result ``name``, from its ``MUTANTS``."""
    return next(m for m in registry.get(name).MUTANTS if m.name == MUTANT[name])
