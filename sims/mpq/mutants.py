"""mpq: the mutants, plausible bugs each of which some claim must catch (``workbench audit mpq``)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxwb.sims.core.audit import Mutant


def _scale_after_solve(f):
    """The scales re-derived from the solved weights (e.g. the solved float weights re-quantized when packing)."""
    from jaxwb.theory.mpq import codebooks

    def mutated(w, h, fmt, method, **kw):
        codes, book = f(w, h, fmt, method, **kw)
        q = codebooks.values(codes, book.grid)
        from jaxwb.theory.mpq.pipeline import make_codebook

        book2 = make_codebook(q, fmt, bits=kw.get("bits", 4), group=kw.get("group", 32))
        return codebooks.nearest(q, book2.grid), book2

    return mutated


def _diagonal_averaged(f):
    """Diagonal VAMP's LMMSE precisions replaced by one per row, 1 / mean_j C_jj (the scalar form's, with its
    first-order error on an unequal diagonal)."""

    def mutated(cov):
        eta = f(cov)
        return jnp.broadcast_to(1.0 / jnp.mean(1.0 / eta, axis=-1, keepdims=True), eta.shape)

    return mutated


def _start_from_gptq(f):
    """MPQ's start is GPTQ's codes on every row (the VAMP MAP never used: MPQ = GPTQ + coordinate descent)."""

    def mutated(*args, **kw):
        out = f(*args, **kw)
        return {**out, "codes": out["gptq"]}

    return mutated


MUTANTS = [
    Mutant(
        "onsager_dropped",
        "jaxwb.theory.mpq.message_passing:extrinsic",
        lambda f: lambda eta, x, gamma, r: (f(eta, x, gamma, r)[0], x),
        "VAMP passes the posterior mean instead of the Onsager-corrected extrinsic mean",
    ),
    Mutant(
        "diagonal_precisions_averaged",
        "jaxwb.theory.mpq.message_passing:lmmse_precision",
        _diagonal_averaged,
        "diagonal VAMP reads one averaged precision for every coordinate from its LMMSE stage",
    ),
    Mutant(
        "start_from_gptq_only",
        "jaxwb.theory.mpq.message_passing:_start_run",
        _start_from_gptq,
        "MPQ starts coordinate descent from GPTQ's solution on every row, never from VAMP's MAP",
    ),
    Mutant(
        "feedback_one_column_late",
        "jaxwb.theory.mpq.solvers:column_feedback",
        lambda f: lambda u, i: jnp.roll(f(u, i), 1),
        "GPTQ pushes each column's error onto the columns one position too far right",
    ),
    Mutant(
        "damping_twice",
        "jaxwb.theory.mpq.solvers:damp",
        lambda f: lambda h, lam: f(f(h, lam), lam),
        "the proxy Hessian's dampening added twice",
    ),
    Mutant(
        "scale_after_solve",
        "jaxwb.sims.mpq.run:M.quantize_layer",
        _scale_after_solve,
        "group scales chosen from the solved weights (after the solve) instead of from the float weights",
    ),
]
