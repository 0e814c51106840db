"""mpq: the measurements over the stored results that the claims compare (the fitted exponent of VAMP's marginal
error in beta, the weakest layer of a per-layer gain)."""

from __future__ import annotations

import numpy as np

from jaxwb.sims.core.claims import mean_ci


def fitted_exponents(tiny: dict, which: str, betas) -> np.ndarray:
    """The exponent p of max |p_VAMP - p_exact| / max |p_exact - prior| ~ beta^p, fitted per problem (least-squares
    slope of log ratio vs log beta) on ``tiny``'s ``{which}_err`` / ``{which}_dist`` (problems, betas), float64.
    Returns (problems,)."""
    ratios = np.asarray(tiny[f"{which}_err"], np.float64) / np.asarray(tiny[f"{which}_dist"], np.float64)
    return np.array([np.polyfit(np.log(np.asarray(betas)), np.log(r), 1)[0] for r in ratios])


def weakest_layer(gains: dict) -> tuple[str, np.ndarray]:
    """Of per-layer per-seed gains ``{name: (seeds,)}``, the layer whose t-interval's lower end is lowest (the first
    such): (name, its gains)."""
    name = min(gains, key=lambda n: mean_ci(gains[n])[0] - mean_ci(gains[n])[1])
    return name, gains[name]
