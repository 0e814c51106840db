"""Consistency distillation and memorisation in a random-feature score model.

Papers: the seed abstract "Consistency distillation and memorisation" (NeurIPS 2026; its
equations are not public) and the model it builds on,
Bonnaire, Urfin, Biroli & Mezard, "Why Diffusion Models Don't Memorize: The Role of Implicit Dynamical
Regularization in Training", NeurIPS 2025 (arXiv 2505.17638), section 4 (random-feature score model).

A package by concept; this module re-exports the public API (``from jaxwb.theory import distillation as dm``):
  model      the score model s_A(x) = A sigma(W x / sqrt d + b) / sqrt p, the OU schedule, the exact noise-averaged
             moments U, V of the denoising loss on a training set and on the data law, the loss, the Bayes loss
  dynamics   gradient descent on A: closed form in the eigenbasis of the Gram U (each direction relaxes in
             1/(lr lam) steps) and the iterated reference; tau_gen, tau_mem from the Gaussian-equivalent spectrum;
             the teacher's generalising / memorised direction classes; crossing times of loss curves
  distill    consistency distillation of a teacher into a student of the same model (RECONSTRUCTION): the loss,
             the expected student, the retained fraction of each eigen-direction
  sampling   probability-flow sampler, nearest / second-nearest distances, copy fraction, energy distance

What is from Bonnaire et al.: the model, the loss, the linear GD dynamics in the Gram eigenbasis, the timescale
picture tau_gen ~ const, tau_mem ~ n, the memorisation measure d1/d2 < 1/3. What is ours (reconstruction): the
random-phase sine activation with its closed-form moments, the constants of ``gaussian_equivalent`` for it, the
consistency-distillation loss and its prediction (``distill``).
"""

from jaxwb.theory.distillation.distill import (
    consistency_distillation_loss,
    distill_solution,
    predicted_group_retention,
    predicted_retention,
    retention,
)
from jaxwb.theory.distillation.dynamics import (
    crossing_time,
    direction_classes,
    eigen_directions,
    gaussian_equivalent,
    gd_filter,
    gd_iterate,
    gd_solution,
    predicted_timescales,
    relaxation_steps,
    spectral_solution,
)
from jaxwb.theory.distillation.model import (
    RandomFeatures,
    bayes_loss,
    check_features,
    check_moments,
    check_readout,
    dsm_loss,
    features,
    init_features,
    population_moments,
    schedule,
    score,
    time_of_angle,
    train_moments,
)
from jaxwb.theory.distillation.sampling import copy_fraction, energy_distance, nearest_two, pf_ode_sample, pf_step

__all__ = [
    "RandomFeatures",
    "bayes_loss",
    "check_features",
    "check_moments",
    "check_readout",
    "consistency_distillation_loss",
    "copy_fraction",
    "crossing_time",
    "direction_classes",
    "distill_solution",
    "dsm_loss",
    "eigen_directions",
    "energy_distance",
    "features",
    "gaussian_equivalent",
    "gd_filter",
    "gd_iterate",
    "gd_solution",
    "init_features",
    "nearest_two",
    "pf_ode_sample",
    "pf_step",
    "population_moments",
    "predicted_group_retention",
    "predicted_retention",
    "predicted_timescales",
    "relaxation_steps",
    "retention",
    "schedule",
    "score",
    "spectral_solution",
    "time_of_angle",
    "train_moments",
]
