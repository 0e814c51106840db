"""Teacher-student: the mutants, plausible bugs each of which some claim must catch
(``workbench audit teacher_student``)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxwb.sims.core.audit import Mutant

# targets name the module where the solver or the run looks the name up (theory.teacher_student is a package that
# re-exports; the audit also patches every alias of a patched function, but not of a float: C_IT is patched where
# the theory reads it, closed_forms, so the sims' predictions, which read the re-export, keep the true constant).
# keep_best and phi_gap are looked up in solver; first_crossing by jaxwb.sims.teacher_student.run, through the package.
# each mutant costs one quick run (every jit cache is cleared); the first (run in the default suite) was the cheapest
# measured (~19 s of CPU vs ~21 s for the others, at load 14 on 2 cores)
MUTANTS = [
    Mutant(
        "c_it_off_5pct",
        "jaxwb.theory.teacher_student.closed_forms:C_IT",
        lambda c: 1.05 * c,
        "the information-theoretic threshold constant 5% off",
    ),
    Mutant(
        "wrong_branch_kept",
        "jaxwb.theory.teacher_student.solver:keep_best",
        lambda f: lambda phi, valid: f(-phi, valid),
        "the self-consistent point with the SMALLEST potential is kept",
    ),
    Mutant(
        "potential_missing_half",
        "jaxwb.theory.teacher_student.solver:phi_gap",
        lambda f: lambda ta, ea, tb, eb, alpha, delta: f(ta, ea, tb, eb, 2.0 * alpha, delta),
        "the (alpha/2) log Delta_eff term of Phi without its 1/2 when candidates are compared",
    ),
    Mutant(
        "learned_error_3pct_high",
        "jaxwb.theory.teacher_student.prefix:_lane_sum",
        lambda f: lambda x: 1.03 * f(x),
        "the prefix sums over learned features 3% high (a mis-normalised lane sum): every learned feature's error is "
        "3% high, the refinement slope stays -1 (the old claim passed), eps alpha/(k Delta_eff) = 1.03 (the new "
        "claim fails)",
    ),
    Mutant(
        "jump_one_step_late",
        "jaxwb.theory.teacher_student:first_crossing",
        lambda f: lambda y, level: jnp.minimum(f(y, level) + 1, jnp.shape(y)[-1]),
        "jumps detected one alpha-grid step late",
    ),
]
