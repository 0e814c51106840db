"""Mutants of the sparse-attention result: plausible bugs in the Step-dLLM policy that a claim must catch
(``workbench audit``)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxwb.sims.core.audit import Mutant


def _uniform_budgets(f):
    def head_budgets(importance, budget):
        kb = importance.shape[-1]
        return jnp.full((importance.shape[0],), jnp.clip(jnp.round(budget * kb).astype(jnp.int32), 1, kb))

    return head_budgets


def _one_extra_block(f):
    def head_budgets(importance, budget):
        return jnp.minimum(f(importance, budget) + 1, importance.shape[-1])

    return head_budgets


MUTANTS = [
    Mutant(
        "anchor_refresh_disabled",
        "jaxwb.theory.sparse_attention:anchor_steps",
        lambda f: lambda num_steps, period: f(num_steps, num_steps),
        "anchor refresh disabled: only step 0 computes a mask, every policy is first-step-only",
    ),
    Mutant(
        "head_budget_uniform",
        "jaxwb.theory.sparse_attention:head_budgets",
        _uniform_budgets,
        "head-adaptive budget replaced by the uniform round(rho Kb) blocks for every head",
    ),
    Mutant(
        "mask_from_wrong_step",
        "jaxwb.theory.sparse_attention:mask_trajectory",
        lambda f: lambda imp, anchors, budget, **kw: f(imp[::-1], anchors, budget, **kw),
        "the mask of step t computed from step T-1-t's maps (step index confused with diffusion time)",
    ),
    Mutant(
        "head_budget_one_extra_block",
        "jaxwb.theory.sparse_attention:head_budgets",
        _one_extra_block,
        "the head-adaptive split hands every head one block more than its share (the reserved block counted twice): "
        "'at equal density' no longer holds",
    ),
]
