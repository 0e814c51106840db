"""The figure builders of ``jaxwb.sims.core.panels``: each draws on an Agg figure the artists and labels it
promises."""

import numpy as np
import pytest

from jaxwb.sims.core import panels, style


@pytest.fixture
def ax():
    fig, ax = style.figure()
    yield ax
    style.plt.close(fig)


def labels(ax):
    return ax.get_legend_handles_labels()[1]


def test_mean_ci_columns_matches_mean_ci():
    from jaxwb.sims.core.claims import mean_ci

    s = np.random.default_rng(0).normal(size=(6, 4, 3))
    m, h = panels.mean_ci_columns(s, axis=0)
    assert m.shape == h.shape == (4, 3)
    assert np.allclose((m[2, 1], h[2, 1]), mean_ci(s[:, 2, 1])[:2])
    m1, _ = panels.mean_ci_columns(s, axis=1)
    assert m1.shape == (6, 3)


def test_errorbars_draws_bars_and_seeds(ax):
    s = np.random.default_rng(1).normal(1.0, 0.1, size=(5, 4))
    assert panels.errorbars(ax, np.arange(4), s, show_seeds=True, color="tab:red", label="measured") is ax
    assert labels(ax) == ["measured"]
    assert len(ax.containers) == 1  # the error bars
    assert len(ax.lines[0].get_xdata()) == 20  # one dot per seed and point
    panels.errorbars(ax, [10.0], s[:, :1], show_seeds=True, seed_shift=0.5)
    dots = ax.lines[list(ax.lines).index(ax.containers[-1][0]) - 1]  # drawn just before the bar
    assert set(dots.get_xdata()) == {10.5}  # beside the bar
    panels.errorbars(ax, np.arange(4), s, geometric=True, show_seeds={"label": "seeds"}, label="geometric mean")
    assert labels(ax) == ["seeds", "measured", "geometric mean"]
    lo, hi = ax.containers[-1].lines[2][0].get_segments()[0][:, 1]
    m, h = panels.mean_ci_columns(np.log(s))
    assert (lo, hi) == pytest.approx((np.exp(m[0] - h[0]), np.exp(m[0] + h[0])))


def test_measured_vs_predicted_curve_and_level(ax):
    x = np.arange(1, 5)
    panels.measured_vs_predicted(ax, x, 2.0 * x, 2.0 * x, yerr=0.1 * x, color="C1", label="m", pred_label="theory")
    panels.measured_vs_predicted(ax, x, np.ones((5, 4)), 1.0, label="ratio", pred_label="level")
    assert labels(ax) == ["theory", "level", "m", "ratio"]
    dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert len(dashed) == 2  # both predictions dashed
    panels.finish(ax, xlabel="x (units)", ylabel="y (units)", legend=7, log="y", ylim=(0.5, 20))
    assert ax.get_xlabel() == "x (units)" and ax.get_legend() is not None
    assert (ax.get_xscale(), ax.get_yscale()) == ("linear", "log") and ax.get_ylim() == pytest.approx((0.5, 20))


def test_ratio_panel_reference_line(ax):
    panels.ratio_panel(ax, [0, 1], [1.01, 0.98], yerr=[0.02, 0.03], reference_label="agreement", label="measured")
    assert "agreement" in labels(ax)
    assert any(np.allclose(line.get_ydata(), 1.0) for line in ax.lines)


def test_slope_panel_fit_and_prediction(ax):
    x = np.geomspace(1, 100, 8)
    y = 3.0 * x**-0.5
    panels.slope_panel(ax, x, y, yerr=0.05 * y, predicted=-0.5, label="eps")
    lab = labels(ax)
    assert "fit: slope -0.500" in lab and "predicted slope -0.5" in lab and "eps" in lab
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert panels.power_law_fit(x, y)[0] == pytest.approx(-0.5)
    pred = [line for line in ax.lines if line.get_label() == "predicted slope -0.5"][0]
    assert np.allclose(pred.get_ydata(), 3.0 * pred.get_xdata() ** -0.5)  # through the fitted line


def test_slope_panel_fit_range_anchor_and_caller_points(ax):
    x = np.geomspace(1, 1000, 10)
    y = np.minimum(x, 30.0)  # a power law that saturates: fit the first five points only
    fit = x < 30
    panels.slope_panel(
        ax, x, y, fit=fit, points=False, predicted=1.0, anchor=(1.0, 1.0), color="tab:red",
        fit_label="slope {slope:.2f}", pred_label="paper: slope 1", fit_range_label="fit range",
    )  # fmt: skip
    assert sorted(labels(ax)) == ["fit range", "paper: slope 1", "slope 1.00"]
    assert not ax.containers  # no points drawn
    fitted = ax.lines[0]
    assert fitted.get_xdata().max() == pytest.approx(x[fit].max())
    fig, ax2 = style.figure()
    panels.slope_panel(ax2, x, y, fit=False, predicted=2.0, pred_x=[1.0, 10.0], pred_label="slope 2")
    assert labels(ax2) == ["slope 2", "measured"]
    assert [list(line.get_xdata()) for line in ax2.lines if line.get_label() == "slope 2"] == [[1.0, 10.0]]
    style.plt.close(fig)


def test_stability_map_greys_unstable_cells_and_draws_edge(ax):
    x, y = np.linspace(0, 0.9, 4), np.geomspace(0.1, 10, 5)
    vals = np.random.default_rng(2).uniform(size=(5, 4))
    unstable = y[:, None] > 2 * (1 + x[None, :])
    edge = (x, 2 * (1 + x))
    panels.stability_map(ax, x, y, vals, unstable=unstable, edge=edge, edge_label="edge", colorbar_label="progress")
    assert labels(ax) == ["edge"]
    assert len(ax.collections) == 2  # the values and the grey unstable cells
    assert len(ax.figure.axes) == 2  # the colour bar
    assert ax.figure.axes[1].get_ylabel() == "progress"


def test_bands(ax):
    x = np.arange(6)
    s = np.random.default_rng(3).normal(size=(7, 6))
    panels.quantile_band(ax, x, s, color="tab:blue", label="median, min-max")
    panels.ci_band(ax, x, s, color="tab:red", label="mean, 95% CI", ls=":")
    panels.band(ax, x, x, x - 1, x + 1, label="plain")
    assert labels(ax) == ["median, min-max", "mean, 95% CI", "plain"]
    assert len(ax.collections) == 3  # three shaded intervals
    assert ax.lines[1].get_linestyle() == ":"


def test_prediction_key_and_integer_ticks(ax):
    panels.prediction_key(ax, "closed form", color="0.3")
    assert labels(ax) == ["closed form"] and ax.lines[0].get_linestyle() == "--"
    ax.set_xscale("log")
    panels.integer_ticks(ax, [64, 128, 256])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["64", "128", "256"]


def test_grouped_bars(ax):
    vals = np.array([[1.0, 2.0, 3.0], [1.5, 2.5, 3.5]])
    panels.grouped_bars(ax, ["a", "b", "c"], vals, labels=["x", "y"], yerr=0.1 * vals, colors=["C0", "C1"], capsize=3)
    assert labels(ax) == ["x", "y"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    bars = [b for c in ax.containers if hasattr(c, "patches") for b in c.patches]
    assert len(bars) == 6
    centres = sorted(b.get_x() + b.get_width() / 2 for b in bars)
    assert centres[:2] == pytest.approx([-0.2, 0.2])  # the group's two bars around its tick
