"""Teacher-student at extensive width: sharp feature-learning jumps and Bayes-optimal scaling laws.

Paper: Barbier & Nguyen, *Sharp feature-learning transitions and Bayes-optimal neural scaling laws in
extensive-width networks* (NeurIPS 2026; arXiv 2605.10395). The paper's
equations are not public: every theory curve here comes from OUR RECONSTRUCTION, the decoupled fixed-point model
of ``theory/teacher_student/`` (package) (labelled "reconstruction" in titles and claims), whose ``solve`` returns the
global maximiser of the potential over all self-consistent points.

Evidence that does not go through the fixed-point solver:
  * an independent float64 NumPy solver (``reference_solve``: a dense set of starting points - every "first j
    features learned" pattern and informed starts at a grid of noise levels - each iterated with the plain
    fixed-point equations to convergence, Phi evaluated on every converged point, the largest kept; no branch
    selection, no root detection by sign changes) against ``ts.solve`` across the first thresholds;
  * AMP run on data: the reconstruction's per-feature channel is a spiked cubic tensor with Gaussian prior at
    SNR c = alpha a2/Delta_eff (the potential f(m; c) equals its replica free entropy at lambda = 3c);
    ``jaxwb.models.teacher_student.spiked_tensor_amp`` runs AMP on sampled tensors (n^3 entries) from the learned side
    and its MSE is compared over seeds with 1 - m+(c) and with the refinement slope;
  * Adam/MAP students on data from a teacher drawn from the reconstruction's prior.

The Adam gap (what the data says; ``student`` in the results, student.png). At alpha = 16, k/d = 1/4,
Delta = 0.25, beta = 1, teacher drawn from the prior (w ~ N(0, I_d)), d = 24 -> 48 -> 96 (full preset, 5 seeds):
random-init students (Adam on the MAP objective, early-stopped by validation) reach 7.2x, 4.2x, 4.8x (+-2.3)
eps_BO: the gap does not close with d. The same objective started AT THE TEACHER (optimisation cannot fail there)
and trained to the end reaches 3.5x, 3.4x, 1.9x (+-0.15): part of the gap is there even in the teacher's basin
(finite d, and MAP is not the posterior mean), but that part shrinks towards 1 as d grows, so the data give no
sign that the reconstruction's eps_BO is too optimistic; at d = 96 the remaining factor ~2.5 between random and
warm start is optimisation failure. The paper's "small gap" claim is not reproduced at the d we can afford; it
stays a failing ``paper`` claim.

The jump LOCATION c_IT is not simulated. No check here puts the jump at c_IT = 1.456 from data: AMP from the
learned side follows the branch only down to the spinodal c = 4/3 (the information-theoretic jump is where the
potentials of two branches cross, a property of the posterior, not of AMP), and AMP from an uninformed start
never leaves m = 0 as n -> infinity (g'(0) = 0: c_alg is infinite for g = m^3; at finite n a start of overlap
~n^-1/2 escapes once it exceeds the unstable branch m-(c) = 1 - m+(c), i.e. c ~ sqrt(n)/3, a finite-size
effect). Measured (AMP from m0 = 0.9, 60 iterations, 8 spikes per tensor): at n = 96 (6 tensors) the mean
final overlap over c = 1.20, 1.26, 1.30, 1.36, 1.40, 1.46, 1.55 is 0.16, 0.18, 0.23, 0.32, 0.36, 0.41, 0.46; at
n = 200 (4 tensors) 0.06, 0.13, 0.19, 0.28, 0.35, 0.40, 0.53, against m+(c) = 0, 0, 0, 0.57, 0.61, 0.65, 0.69: a
smooth crossover wider than c_IT - 4/3 = 0.12, so even the spinodal is not resolved at n <= 200 on CPU. A
posterior sampler (planted start, Nishimori) would stay in the learned basin below c_IT (the barrier grows with n),
and at the n where it mixes the crossover is wider still. The c_IT claims stay those of the reconstruction
(thresholds, jump height m+(c_IT) = 0.645, solver vs the float64 reference).

beta = 0.75: the fitted slope (-0.378 at k = 4000 in the window 10 <= k_c <= 200) is not the asymptotic
1/(2 beta) - 1 = -1/3 because the unlearned tail sum_{k_c < i <= k} a2_i is truncated at k:
eps ~ (D/alpha) k_c [K1 + c_IT/(2beta - 1) (1 - (k_c/k)^(2beta - 1))], with K1 = int_0^1 c(u)(1 - m+(c(u))^3) du,
c(u) = c_IT u^(-2 beta); for beta = 0.75
(k_c/k)^(1/2) is 0.05..0.22 in the fit window. ``asymptotic_eps`` evaluates that formula (continuum, no solver)
and its fitted slope over the same window (-0.382) is the prediction claimed for every beta.

Figures (``figures/teacher_student/``):
  staircase.png     overlaps m_i vs alpha = n/d: features jump one by one, 0 -> >= m+(c_IT) = 0.645
  scaling.png       eps_BO vs alpha for beta in {0.75, 1, 1.5}: fitted slopes, the asymptotic (finite-k) formula
  effective_width.png  k_c vs alpha from the solver against (alpha / (c_IT Delta_eff Z))^(1/(2 beta))
  reference.png     solver vs the independent float64 multi-start reference across the first thresholds
  amp.png           AMP on sampled spiked cubic tensors (MSE vs c, seeds) against 1 - m+(c)
  student.png       MAP students (random init / warm start at the teacher) vs eps_BO as d grows
"""

from __future__ import annotations

from jaxwb.sims.teacher_student.bench import bench
from jaxwb.sims.teacher_student.claims import claims
from jaxwb.sims.teacher_student.config import DISPLAY_ONLY, NAME, PRESETS, TITLE, Config
from jaxwb.sims.teacher_student.figures import plot
from jaxwb.sims.teacher_student.mutants import MUTANTS
from jaxwb.sims.teacher_student.run import run

__all__ = ["DISPLAY_ONLY", "MUTANTS", "NAME", "PRESETS", "TITLE", "Config", "bench", "claims", "plot", "run"]
