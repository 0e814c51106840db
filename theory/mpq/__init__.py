"""Message-passing post-training quantization (MPQ) against GPTQ / LDLQ / RTN: row-wise PTQ as posterior
inference over discrete codebooks (A RECONSTRUCTION of the seed abstract; the
paper's algorithm and numbers are not public).

Submodules (re-exported here):
  codebooks  per-coordinate grids: INT-b with per-group min-max scales (GPTQ's quantizer), NVFP4 / MXFP4 with
             the kernels' global and block scales (``jaxwb.pallas_kernels.quant.reference``), nearest rounding
  solvers    proxy Hessian H = X^T X / n + damping, the objective (w - q)^T H (w - q), RTN, GPTQ (blocked, Cholesky
             of H^-1; Frantar et al. 2023, Alg. 1), LDLQ (H = U D U^T; Chee et al. 2023, QuIP), exact block
             coordinate descent, exact enumeration for tiny problems
  message_passing  VAMP (Rangan, Schniter, Fletcher 2019, Alg. 1) for the posterior
             p(q | w) ~ exp(-beta/2 (w - q)^T H (w - q)) prod_j 1[q_j in C_j], Onsager-corrected, damped and
             annealed, with one precision per stage ("scalar", their algorithm; its state evolution for
             rotationally invariant H, their Thm. 1) or per coordinate ("diagonal": exact to first order in beta
             for any H), and MPQ = VAMP marginals -> MAP, the better of it and GPTQ's solution per row as the
             hard-decision initialisation -> exact block coordinate descent
  incoherence  random Hadamard rotations on both sides of a layer (QuIP / QuIP#): W -> U W V^T, H -> V H V^T

Every public function checks its inputs and raises ``ValueError`` (``TypeError`` for a ``book`` that is not a
:class:`Codebook`) whose message starts with the parameter's name: NaN/inf, shapes and ranks, codes outside the
grid, integer options, and an H that is not symmetric positive definite where a solver factors it (refused, never
regularised silently: damp it first). Under ``jit`` the value checks run only inside ``jaxwb.theory.checked``. An H
or a weight scale near the ends of the float range is rescaled by a power of two (exact; the codes do not depend
on it); inputs inside the ordinary range give the same floats as without the checks.
"""

from __future__ import annotations

from jaxwb.theory.mpq import codebooks, incoherence
from jaxwb.theory.mpq.codebooks import (
    Codebook,
    fp4_codebook,
    int_codebook,
    nearest,
    values,
)
from jaxwb.theory.mpq.incoherence import coherent, hadamard, incoherent, rht
from jaxwb.theory.mpq.message_passing import (
    exact_marginals,
    marginals_from_energies,
    mpq,
    mpq_start,
    planted_problem,
    state_evolution,
    vamp,
)
from jaxwb.theory.mpq.pipeline import METHODS, make_codebook, quantize_layer
from jaxwb.theory.mpq.solvers import (
    bcd,
    codeword_energies,
    damp,
    exact_minimum,
    gptq,
    ldlq,
    objective,
    proxy_hessian,
    rtn,
    udu,
)

__all__ = [
    "METHODS",
    "Codebook",
    "make_codebook",
    "quantize_layer",
    "bcd",
    "codebooks",
    "codeword_energies",
    "coherent",
    "damp",
    "exact_marginals",
    "exact_minimum",
    "fp4_codebook",
    "gptq",
    "hadamard",
    "incoherence",
    "incoherent",
    "int_codebook",
    "ldlq",
    "marginals_from_energies",
    "mpq",
    "mpq_start",
    "nearest",
    "objective",
    "planted_problem",
    "proxy_hessian",
    "rht",
    "rtn",
    "state_evolution",
    "udu",
    "values",
    "vamp",
]
