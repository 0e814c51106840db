"""Figure builders for the panels the results draw again and again.

Each builder draws one kind of panel on a given matplotlib ``Axes`` (made by ``style.figure``) and returns it:

* ``errorbars``: per-seed samples as mean and 95% Student-t interval (optionally with the seeds as dots);
* ``measured_vs_predicted``: error bars of a measurement with its prediction beside it, dashed in the same colour
  (a curve over ``x`` or a horizontal level; ``ratio_panel`` is the case "measured / reference vs a parameter");
* ``slope_panel``: log-log points with error bars, the least-squares power law with its exponent in the legend and
  the predicted power law dashed;
* ``stability_map``: a heat map of a quantity over two parameters, the unstable cells grey and the predicted
  stability edge dashed;
* ``grouped_bars``: bars of several series side by side per group (methods x settings), with their intervals;
* ``band`` / ``quantile_band`` / ``ci_band``: a line with a shaded interval (a CI or a spread over seeds);
* ``prediction_key``, ``finish``, ``integer_ticks``: the legend entry of dashed predictions, the axis labels and
  legend in one call, and ticks at measured values;
* ``Figures``: a result's figures by name (its ``plot``), each builder registered where it is defined.

Predictions are drawn with ``style.prediction`` (dashed), measurements solid or as markers, so a reader tells them
apart in every figure. Shapes are NumPy conventions: ``(N,)`` for N points along the x axis, ``(S, N)`` for S seeds
(or repetitions) of N points.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from jaxwb.sims.core import style
from jaxwb.sims.core.claims import mean_ci


def mean_ci_columns(samples, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and 95% Student-t half-width of ``samples`` along ``axis`` (the seeds), for every other index.

    ``samples``: any shape with the seeds on ``axis``; returns two arrays of the remaining shape (``claims.mean_ci``
    per column: finite samples only, an infinite half-width with fewer than two).
    """
    x = np.moveaxis(np.asarray(samples, np.float64), axis, -1)
    out = np.array([mean_ci(row)[:2] for row in x.reshape(-1, x.shape[-1])]).reshape(*x.shape[:-1], 2)
    return out[..., 0], out[..., 1]


def prediction_key(ax, label: str, **overrides):
    """A legend entry for dashed prediction lines drawn without labels (``style.prediction(**overrides)``)."""
    ax.plot([], [], **style.prediction(**overrides), label=label)
    return ax


def finish(ax, *, legend: float | dict | None = None, log: str = "", **settings):
    """``ax.set(**settings)`` and a legend: ``legend`` is its font size, or a dict of ``ax.legend`` keywords, or
    ``None`` for the style's default legend; ``legend=False`` draws none. ``log``: the axes on a log scale ("x",
    "y" or "xy": a power law is a line on "xy")."""
    settings = {**{f"{a}scale": "log" for a in log}, **settings}  # scales first: limits are set on them
    if settings:
        ax.set(**settings)
    if legend is not False:
        ax.legend(**(legend if isinstance(legend, dict) else {} if legend is None else {"fontsize": legend}))
    return ax


def integer_ticks(ax, values, axis: str = "x"):
    """Major ticks at the measured ``values`` (N,) labelled as integers, no minor ticks (for log axes over a few
    sizes: 64, 128, 256 instead of 10^2)."""
    import matplotlib.ticker

    values = np.asarray(values)
    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xticks if axis == "x" else ax.set_yticks)(values, [str(int(v)) for v in values])
    target.set_minor_locator(matplotlib.ticker.NullLocator())
    return ax


def errorbars(
    ax,
    x,
    samples,
    *,
    axis: int = 0,
    geometric: bool = False,
    show_seeds=False,
    seed_shift: float = 0.0,
    fmt: str = "o",
    capsize=3,
    **kw,
):
    """Mean and 95% Student-t interval over the seeds of ``samples`` at ``x`` (N,).

    ``samples``: (S, N) with the S seeds on ``axis``. ``geometric``: the geometric mean and interval (the
    interval of the mean log, exponentiated; positive samples, for log axes). ``show_seeds`` also draws each seed
    as a small faint dot of the same colour (a dict: ``ax.plot`` keywords for the dots, e.g. a ``label``), moved
    right by ``seed_shift`` (x units) to stand beside the bar.
    Keywords go to ``ax.errorbar`` (``color``, ``label``, ``ms``, ...).
    """
    s = np.moveaxis(np.asarray(samples, np.float64), axis, 0)
    if geometric:
        m, h = mean_ci_columns(np.log(s))
        mean, yerr = np.exp(m), np.stack([np.exp(m) - np.exp(m - h), np.exp(m + h) - np.exp(m)])
    else:
        mean, yerr = mean_ci_columns(s)
    if show_seeds is not False:  # under the bars
        xs = np.broadcast_to(np.asarray(x, np.float64) + seed_shift, s.shape)
        dots = {"marker": ".", "ms": 3, "alpha": 0.35, "color": kw.get("color", "0.5")}
        dots.update(show_seeds if isinstance(show_seeds, dict) else {})
        ax.plot(xs.ravel(), s.ravel(), ls="none", **dots)
    ax.errorbar(x, mean, yerr=yerr, fmt=fmt, capsize=capsize, **kw)
    return ax


def measured_vs_predicted(
    ax,
    x,
    measured,
    predicted,
    *,
    yerr=None,
    pred_x=None,
    color=None,
    label: str | None = None,
    pred_label: str | None = None,
    fmt: str = "o",
    capsize=3,
    **kw,
):
    """A measurement with error bars and its prediction beside it, dashed in the same colour.

    ``x`` (N,); ``measured`` (N,) values, or (S, N) per-seed samples when ``yerr`` is None (then the mean and its 95%
    Student-t interval are drawn); ``yerr`` (N,) or (2, N) for a measurement with its own interval (bootstrap,
    Wilson). ``predicted`` (M,) on ``pred_x`` (M,) (default ``x``), or a scalar drawn as a horizontal line.
    Keywords go to ``ax.errorbar``.
    """
    measured = np.asarray(measured, np.float64)
    if yerr is None and measured.ndim == 2:
        measured, yerr = mean_ci_columns(measured, 0)
    ax.errorbar(x, measured, yerr=yerr, fmt=fmt, color=color, capsize=capsize, label=label, **kw)
    pred_kw = style.prediction(**({} if color is None else {"color": color}))
    if np.ndim(predicted) == 0:
        ax.axhline(float(predicted), **pred_kw, label=pred_label)
    else:
        ax.plot(x if pred_x is None else pred_x, predicted, **pred_kw, label=pred_label)
    return ax


def ratio_panel(ax, x, ratio, *, reference: float = 1.0, reference_label: str | None = None, **kw):
    """A dimensionless ratio (measured / reference) against a parameter, with the reference level dashed.

    ``x`` (N,); ``ratio`` (N,) with ``yerr`` in ``kw``, or (S, N) per-seed ratios; ``reference`` the predicted level
    (1 when measurement and prediction agree). The rest is ``measured_vs_predicted``'s.
    """
    kw.setdefault("color", "k")
    return measured_vs_predicted(ax, x, ratio, reference, pred_label=reference_label, **kw)


def power_law_fit(x, y) -> tuple[float, float]:
    """Least-squares line through (log x, log y) of positive ``x``, ``y`` (N,): (exponent, log prefactor)."""
    slope, icpt = np.polyfit(np.log(np.asarray(x, np.float64)), np.log(np.asarray(y, np.float64)), 1)
    return float(slope), float(icpt)


def slope_panel(
    ax,
    x,
    y,
    *,
    yerr=None,
    fit=None,
    predicted: float | None = None,
    anchor: tuple[float, float] | None = None,
    pred_x=None,
    color=None,
    label: str | None = "measured",
    fit_label: str = "fit: slope {slope:.3f}",
    pred_label: str | None = None,
    fit_range_label: str | None = None,
    pred_style: dict | None = None,
    points: bool = True,
    fmt: str = "o",
    **kw,
):
    """Log-log points of a power law, the fitted line with its exponent in the legend, and the predicted line.

    ``x``, ``y`` (N,) positive; ``yerr`` None, (N,) or (2, N); ``points=False`` leaves the points to the caller
    (drawn already, e.g. by ``measured_vs_predicted``). ``fit``: boolean mask (N,) of the points the least-squares
    line of log y on log x is fitted to and drawn over (None: all; False: no fitted line); ``fit_label`` formats
    its ``slope``; ``fit_range_label`` also shades the fit range. ``predicted``: the predicted exponent, drawn
    dashed through ``anchor`` (x0, y0) (default: the fitted line's point, or the data's geometric mean, at the
    geometric centre of the fit range) over ``pred_x`` (M,) (default: the whole x range), in the points' colour
    unless ``pred_style`` (line keywords) says otherwise. Keywords go to ``ax.errorbar``. Sets both axes to log
    scale.
    """
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    mask = np.ones(x.shape, bool) if fit is None or fit is False else np.asarray(fit, bool)
    if points:
        color = ax.errorbar(x, y, yerr=yerr, fmt=fmt, color=color, capsize=3, label=label, **kw)[0].get_color()
    lo, hi = float(x[mask].min()), float(x[mask].max())
    x0, y0 = float(np.sqrt(lo * hi)), float(np.exp(np.mean(np.log(y[mask]))))
    if fit is not False:
        slope, icpt = power_law_fit(x[mask], y[mask])
        xs = np.geomspace(lo, hi, 20)
        ax.plot(xs, np.exp(icpt) * xs**slope, color=color, lw=2.5, alpha=0.45, label=fit_label.format(slope=slope))
        y0 = float(np.exp(icpt) * x0**slope)
        if fit_range_label is not None:
            ax.axvspan(lo, hi, color="0.9", zorder=0, label=fit_range_label)
    if predicted is not None:
        ax0, ay0 = anchor if anchor is not None else (x0, y0)
        px = np.geomspace(x.min(), x.max(), 50) if pred_x is None else np.asarray(pred_x, np.float64)
        lab = pred_label if pred_label is not None else f"predicted slope {predicted:g}"
        pred_kw = style.prediction(**{**({} if color is None else {"color": color}), **(pred_style or {})})
        ax.plot(px, ay0 * (px / ax0) ** predicted, **pred_kw, label=lab)
    ax.set(xscale="log", yscale="log")
    return ax


def stability_map(
    ax,
    x,
    y,
    values,
    *,
    unstable,
    edge=None,
    edge_label: str | None = None,
    colorbar_label: str | None = None,
    cmap: str = "viridis",
    vmin=None,
    vmax=None,
):
    """A heat map of ``values`` over two parameters with the unstable cells grey and the predicted edge dashed.

    ``x`` (NX,) and ``y`` (NY,) the cell centres; ``values`` (NY, NX), NaN where nothing was measured; ``unstable``
    (NY, NX) boolean or the fraction of seeds that diverged (grey darkens with it; 0 leaves the colour). ``edge``:
    (xs, ys) of the predicted stability edge. Adds a colour bar labelled ``colorbar_label`` to the figure.
    """
    frac = np.asarray(unstable, np.float64)
    vals = np.where(frac > 0, np.nan, np.asarray(values, np.float64))
    mesh = ax.pcolormesh(x, y, np.ma.masked_invalid(vals), shading="nearest", cmap=cmap, vmin=vmin, vmax=vmax)
    ax.pcolormesh(x, y, np.ma.masked_where(frac == 0, frac), shading="nearest", cmap="Greys", vmin=0, vmax=1.4)
    if edge is not None:
        ax.plot(*edge, **style.PREDICTION, label=edge_label)
    ax.figure.colorbar(mesh, ax=ax, label=colorbar_label)
    return ax


def grouped_bars(ax, groups, values, *, labels, yerr=None, colors=None, width: float = 0.8, tick_kw=None, **kw):
    """Bars of K series side by side in each of G groups, the groups' names under them.

    ``groups`` (G,) tick labels; ``values`` (K, G); ``labels`` (K,) legend entries; ``yerr`` None or (K, G) (an
    interval, e.g. 95% over seeds); ``colors`` (K,) or None (the colour cycle). The K bars of a group share
    ``width`` (x units, groups 1 apart) centred on the group's tick; ``tick_kw`` goes to ``ax.set_xticks``
    (``rotation``, ``fontsize``, ...), the rest to ``ax.bar`` (``capsize``, ``hatch``, ``edgecolor``, ...).
    """
    x, n = np.arange(len(groups)), len(values)
    for k, vals in enumerate(values):
        err = None if yerr is None else yerr[k]
        color = None if colors is None else colors[k]
        ax.bar(x + (k - (n - 1) / 2) * width / n, vals, width / n, yerr=err, color=color, label=labels[k], **kw)
    ax.set_xticks(x, list(groups), **(tick_kw or {}))
    return ax


def band(ax, x, mid, lo, hi, *, color=None, label: str | None = None, fill_alpha: float = 0.2, **line_kw):
    """A line ``mid`` with the interval [``lo``, ``hi``] shaded in its colour (opacity ``fill_alpha``); all (N,)
    over ``x`` (N,). Keywords go to the line (``ls``, ``lw``, ``alpha``, ...)."""
    (line,) = ax.plot(x, mid, color=color, label=label, **line_kw)
    ax.fill_between(x, lo, hi, color=line.get_color(), alpha=fill_alpha, lw=0)
    return ax


def quantile_band(ax, x, samples, q=(0.0, 0.5, 1.0), **kw):
    """The middle quantile of ``samples`` (S, N) over the S seeds as a line and the outer two shaded (default: the
    median and the min-max range); keywords as ``band``."""
    lo, mid, hi = np.quantile(np.asarray(samples, np.float64), q, axis=0)
    return band(ax, x, mid, lo, hi, **kw)


def ci_band(ax, x, samples, *, axis: int = 0, **kw):
    """The mean of ``samples`` (S, N) over the seeds (``axis``) with its 95% Student-t interval shaded; keywords as
    ``band``."""
    mean, half = mean_ci_columns(samples, axis)
    return band(ax, x, mean, mean - half, mean + half, **kw)


class Figures:
    """A result's figures by name, in the order they are registered.

    ``FIGURES = panels.Figures()``; each figure ``@FIGURES.add`` above ``def plot_spectrum(results, cfg) -> Figure``
    (saved as ``spectrum.png``: the name without ``plot_``; ``@FIGURES.add(name="...")`` to name it otherwise);
    ``plot = FIGURES.plot`` is the result's ``plot(results, cfg) -> {name: Figure}``. A builder that returns ``None``
    draws nothing (a figure the config does not make, e.g. one that needs a trained model).

    >>> figs = Figures()
    >>> @figs.add
    ... def plot_line(results, cfg):
    ...     return "a figure"
    >>> figs.plot(None, None)
    {'line': 'a figure'}
    """

    def __init__(self) -> None:
        self.builders: dict[str, Callable[[Any, Any], Any]] = {}

    def add(self, builder: Callable[[Any, Any], Any] | None = None, *, name: str | None = None):
        """Register ``builder(results, cfg) -> Figure`` under ``name`` (default: its name without ``plot_``); as
        ``@add`` or ``@add(name=...)``. Returns the builder (or, without one, the decorator)."""

        def register(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
            key = name or fn.__name__.removeprefix("plot_")
            if key in self.builders:
                raise ValueError(f"name: a figure {key!r} is already registered")
            self.builders[key] = fn
            return fn

        return register if builder is None else register(builder)

    def plot(self, results: Any, cfg: Any) -> dict[str, Any]:
        """Every registered figure drawn from ``results``: ``{name: Figure}`` in registration order, without the
        builders that returned ``None``."""
        figs = {key: build(results, cfg) for key, build in self.builders.items()}
        return {key: fig for key, fig in figs.items() if fig is not None}
