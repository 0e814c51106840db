"""The workbench's matplotlib style (Agg backend, one style file) and small plotting helpers."""

from __future__ import annotations

import contextlib
from pathlib import Path

import matplotlib

if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
    matplotlib.use("Agg")

import matplotlib.pyplot as plt

STYLE_FILE = Path(__file__).with_name("workbench.mplstyle")
PREDICTION = dict(color="black", linestyle="--", linewidth=1.3)  # how a paper's prediction is drawn


def prediction(**overrides) -> dict:
    """Line keywords for a theory/paper prediction (dashed), e.g. ``ax.plot(x, y, **prediction(color=c))``."""
    return {**PREDICTION, **overrides}


@contextlib.contextmanager
def context():
    """Apply the workbench style for the figures made inside the block."""
    with plt.style.context(str(STYLE_FILE)):
        yield


def figure(*args, **kwargs):
    """``plt.subplots`` under the workbench style (``layout="constrained"`` by default)."""
    kwargs.setdefault("layout", "constrained")
    with context():
        return plt.subplots(*args, **kwargs)
