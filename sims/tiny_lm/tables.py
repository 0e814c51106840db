"""Text tables of the tiny-LM study (for the notebook and the tests): per size, the perplexities and RaZeR's
fractions with their bootstrap intervals (``summary``); the per-layer errors (``layer_table``)."""

from __future__ import annotations

import numpy as np

from jaxwb.sims.core.claims import bootstrap_ci
from jaxwb.sims.tiny_lm.config import FORMATS, Config


def _a(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def summary(results: dict, cfg: Config) -> str:
    """Per size: mean perplexity +- 95% bootstrap half-width over seeds, and the three RaZeR fractions."""
    rows = []
    for s, size in enumerate(cfg.size_labels):
        cells = {"fp32": _a(results["fp_ppl"])[s]}
        cells.update({f: _a(results["ppl"][f])[s] for f in FORMATS})
        cells.update({f"W4A4 {f}": _a(v)[s] for f, v in results["ppl_wa"].items()})
        cells.update({f"outlier {f}": _a(v)[s] for f, v in results["ppl_outlier"].items()})
        rows.append(
            f"{size}: " + ", ".join(f"{k} {bootstrap_ci(v)[0]:.4f}+-{bootstrap_ci(v)[1]:.4f}" for k, v in cells.items())
        )
        rows.append(
            f"{size}: RaZeR fraction "
            + ", ".join(
                f"{k} {bootstrap_ci(_a(v)[s])[0]:.3f}+-{bootstrap_ci(_a(v)[s])[1]:.3f}"
                for k, v in results["reduction"].items()
            )
        )
    return "\n".join(rows)


def layer_table(results: dict) -> str:
    """The per-layer error table as text (relative weight MSE and ppl increase per format; seed 0, first size)."""
    fp = float(np.asarray(results["fp_ppl"])[0, 0])
    names = [str(n) for n in np.asarray(results["layer_names"])]
    head = f"{'layer':<18}" + "".join(f"{f + ' mse':>12}{f + ' dppl':>12}" for f in FORMATS)
    rows = [head]
    for i, n in enumerate(names):
        rows.append(
            f"{n:<18}"
            + "".join(
                f"{float(results['layer_rel_mse'][f][i]):>12.2e}{float(results['layer_ppl'][f][i]) - fp:>12.4f}"
                for f in FORMATS
            )
        )
    return "\n".join(rows)
