"""Speed-scaling sim: the figures, one function per figure, registered in ``FIGURES``."""

from __future__ import annotations

import numpy as np

from jaxwb.sims.core import panels, style
from jaxwb.sims.speed_scaling.claims import ROBUST_GROWTH, eps_kappas, i0_noise
from jaxwb.sims.speed_scaling.config import ADVERSARIAL, BASELINES, COLORS, LABELS, PUBLISHED, PUBLISHED_LAS, Config
from jaxwb.sims.speed_scaling.measures import las_eps_interval, robust_growth
from jaxwb.theory import speed_scaling as ss

FIGURES = panels.Figures()
X_FLOOR = 0.02  # zero prediction error drawn at this left edge of the log axis
AT_FLOOR = f"eta = 0 drawn at {X_FLOOR}"


def _setup(cfg: Config) -> str:
    return f"{cfg.n_jobs} jobs, D={cfg.window}, a={cfg.alpha:g}, {cfg.n_seeds} seeds"


def _error_axis(eta) -> tuple[np.ndarray, np.ndarray]:
    """The mean errors ``eta`` with zero drawn at X_FLOOR, and a fine grid over them for the predicted curves."""
    x = np.where(eta > 0, eta, X_FLOOR)
    return x, np.geomspace(X_FLOOR, max(x.max(), 1.0), 100)


def _sp_bounds(ax, results: dict, cfg: Config, label: str) -> None:
    """SP's proved bound kappa^a E(AVR)/OPT per eps (E over the seeds), dashed in the eps colour; ``label`` formats
    ``e`` (eps) and ``b`` (the bound)."""
    avr_mean = float(np.mean(results["main"]["avr"]))
    for j, (e, k) in eps_kappas(results):
        b = k**cfg.alpha * avr_mean
        ax.axhline(b, **style.prediction(color=f"C{j}"), label=label.format(e=e, b=b))


@FIGURES.add
def plot_ratio_vs_error(results: dict, cfg: Config):
    """SP's ratio vs the prediction error (zero error drawn at the left edge of the log axis)."""
    main, noise = results["main"], results["main"]["sp_noise"]
    fig, ax = style.figure(figsize=(9, 6))
    x, xs = _error_axis(noise["error"].mean(0))
    for j, (e, k) in eps_kappas(results):
        for mode, fmt in (("dynamic", "o-"), ("offline", "s--")):
            label = f"SP {mode}, eps={e:g} (kappa={k:g})"
            panels.errorbars(ax, x, noise[mode][:, :, j], fmt=fmt, color=f"C{j}", ms=4, capsize=2, label=label)
    _sp_bounds(ax, results, cfg, "bound kappa^a E(AVR)/OPT = {b:.3g} (eps={e:g})")
    label = "pure prediction-following (no cap)"
    panels.errorbars(ax, x, noise["follow"], fmt="^:", color="0.4", ms=4, capsize=2, label=label)
    ax.plot(xs, (1 + xs) ** cfg.alpha, color="black", lw=1.2, ls="-.", label="smoothness function (1 + eta)^a")
    for name in BASELINES:
        label = f"{LABELS[name]} (no prediction), mean"
        ax.axhline(np.mean(main[name]), color=COLORS[name], lw=2, alpha=0.5, label=label)
    ax.axhline(1.0, color="black", lw=0.8)
    xlabel = f"relative prediction error eta = ||s_hat - s*||_a / ||s*||_a  (mean over seeds; {AT_FLOOR})"
    title = f"SP with noisy speed predictions s_hat = s* exp(sigma z - sigma^2/2)  ({_setup(cfg)})"
    legend, ylabel = {"fontsize": 7, "ncol": 3, "loc": "upper left"}, "energy / OPT (mean, 95% CI over seeds)"
    panels.finish(ax, legend=legend, log="xy", ylim=(0.9, None), xlabel=xlabel, ylabel=ylabel, title=title)
    return fig


@FIGURES.add
def plot_las_smoothness(results: dict, cfg: Config):
    """LAS with noisy job-workload predictions."""
    eps, main = results["eps"], results["main"]
    fig, ax = style.figure(figsize=(7, 4.5))
    xw, xs = _error_axis(main["las_noise_error"].mean(0))
    labels = {"label": f"LAS, eps={eps.min():g} (mean, 95% CI)", "pred_label": "(1 + eps)(1 + eta_w)^a"}
    pred = (1 + eps.min()) * (1 + xs) ** cfg.alpha
    panels.measured_vs_predicted(ax, xw, main["las_noise"], pred, pred_x=xs, fmt="o-", color="C0", **labels)
    ax.axhline(np.mean(main["avr"]), color=COLORS["avr"], lw=2, alpha=0.5, label="AVR, mean")
    title = f"LAS with noisy workloads w_hat = w (1 + sigma z)^+ ({_setup(cfg)})"
    xlabel = f"relative workload error eta_w = ||w_hat - w||_a / ||w||_a ({AT_FLOOR})"
    ylim, ylabel = (0.95, None), "energy / OPT"
    return panels.finish(ax, legend=8, log="xy", ylim=ylim, xlabel=xlabel, ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_profiles(results: dict, cfg: Config):
    """Speed profiles (seed 0, first 60 time units)."""
    eps, sp = results["eps"], results["profiles"]["speeds"]
    k_end = min(60 * cfg.substeps, sp["opt"].shape[0])  # the first 60 time units
    t = np.arange(k_end + 1) / cfg.substeps
    fig, axes = style.figure(2, 1, figsize=(10, 7), sharex=True)
    sigma_show = cfg.noise_levels[min(2, len(cfg.noise_levels) - 1)]
    groups = (
        {"avr": "AVR", "oa": "OA", "qoa": "qOA (commanded)", "bkp": "BKP (commanded)", "bkp_work": "BKP work done"},
        {
            "sp_prediction": f"predicted speed s_hat (sigma = {sigma_show:g})",
            "sp_dynamic": f"SP dynamic with that prediction, eps={eps[len(eps) // 2]:g}",
            "las": f"LAS with exact workloads, eps={eps[0]:g}",
        },
    )
    line_kw = {"sp_prediction": dict(color="0.6", lw=0.8), "bkp_work": dict(color="tab:red", lw=0.8, ls=":")}
    legend, ylabel = {"fontsize": 8, "loc": "upper right", "ncol": 2}, "speed s(t) (work / time)"
    for ax, names in zip(axes, groups, strict=True):
        ax.stairs(sp["opt"][:k_end], t, color="black", lw=2.4, label="OPT (YDS)")
        for key, label in names.items():
            ax.stairs(sp[key][:k_end], t, label=label, **line_kw.get(key, dict(lw=1.3)))
        panels.finish(ax, legend=legend, ylabel=ylabel, yscale="log")
    axes[0].set_title(
        f"Speed profiles on one instance (seed 0 of the LAS model, first {t[-1]:g} time units; "
        f"job i arrives at t = i, due at i + {cfg.window})"
    )
    axes[1].set(xlabel="time t")
    return fig


@FIGURES.add
def plot_robustness(results: dict, cfg: Config):
    """Worst ratio under adversarial predictions, SP per eps vs pure following, with the proved bound."""
    adv = results["main"]["sp_adv"]
    fig, ax = style.figure(figsize=(11, 5.5))
    worst = np.maximum(adv["dynamic"], adv["offline"]).max(axis=0)  # (predictions, eps)
    values = [*worst.T, adv["follow"].max(axis=0)]  # SP per eps, then pure following
    labels = [f"SP eps={e:g}, kappa={k:g} (worst over seeds and modes)" for _, (e, k) in eps_kappas(results)]
    colors = [f"C{j}" for j in range(len(labels))] + ["0.6"]
    labels.append("pure following (no cap)")
    groups = [k.replace("_", "\n") for k in ADVERSARIAL]
    panels.grouped_bars(ax, groups, values, labels=labels, colors=colors, tick_kw={"fontsize": 8})
    _sp_bounds(ax, results, cfg, "proved bound kappa^a E(AVR)/OPT (eps={e:g}, mean over seeds)")
    ax.axhline(ss.oa_bound(cfg.alpha), color="0.35", lw=1, ls="-.", label="OA's bound a^a")
    ax.axhline(1.0, color="black", lw=0.8)
    title = f"Robustness: SP under adversarial speed predictions ({_setup(cfg)})"
    legend = {"fontsize": 7, "ncol": 2, "loc": "upper left"}
    ylabel = "worst energy / OPT over seeds"
    return panels.finish(ax, legend=legend, log="y", ylim=(0.8, None), ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_las_experiment(results: dict, cfg: Config):
    """LAS's experiment: mean ratios of the baselines, LAS and SP beside the published ones."""
    eps, main = results["eps"], results["main"]
    fig, ax = style.figure(figsize=(13, 5.5))
    # (per-seed ratios, colour, bar keywords, tick label, gap after) for every bar, left to right
    bars: list[tuple] = [(main[name], COLORS[name], {}, LABELS[name], 0.0) for name in BASELINES]
    bkp_work = (main["bkp_work_only"], COLORS["bkp"], {"alpha": 0.35, "hatch": ".."}, "BKP\nwork-only\n(old bug)", 0.5)
    bars.append(bkp_work)
    per_eps: list[tuple] = [(main[f"las_{kind}"], {}, f"LAS\n{kind}") for kind in ss.WORK_PREDICTIONS]
    per_eps += [(main["sp_noise"][m][:, i0_noise(cfg)], {"hatch": "//"}, f"SP\n{m}\ns_hat=s*") for m in ss.SP_MODES]
    for vals, kw, name in per_eps:
        bars += [(vals[:, j], f"C{j}", kw, f"{name}\neps={e:g}", 0.5 * (j == len(eps) - 1)) for j, e in enumerate(eps)]
    ticks = np.cumsum([0.0] + [1 + gap for *_, gap in bars[:-1]])
    for pos, (vals, color, kw, _, _) in zip(ticks, bars, strict=True):
        m, h = panels.mean_ci_columns(vals)
        ax.bar(pos, m, yerr=h, color=color, capsize=3, **kw)
    published = [ticks[BASELINES.index(name)] for name in PUBLISHED]
    ax.plot(published, list(PUBLISHED.values()), "k*", ms=15, label="published mean (Bamas et al. 2020)")
    ax.axhspan(*PUBLISHED_LAS, color="0.75", zorder=0, label="published LAS-accurate range 1.008-1.026")
    ax.axhline(1.0, **style.prediction(), label="OPT = 1")
    ax.set_xticks(ticks, [b[3] for b in bars], fontsize=6)
    title = f"LAS's experiment: {_setup(cfg)} (random-walk workloads in [20, 80]); bars ours, stars published"
    ylabel, legend = "mean energy / OPT (95% CI over seeds)", {"fontsize": 8, "loc": "upper right"}
    return panels.finish(ax, legend=legend, log="y", ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_robust_n(results: dict, cfg: Config):
    """SP's worst adversarial ratio vs the number of jobs, per eps, with the fitted growth (claim: <= 2)."""
    if "robust_n" not in results:
        return None
    n, sp = results["robust_n"]["n"], results["robust_n"]["sp"]  # sp (N, seeds, pred, eps)
    fig, ax = style.figure(figsize=(7, 4.5))
    for j, e in enumerate(results["eps"]):
        worst = sp[..., j].max(axis=2)
        m, h = panels.mean_ci_columns(worst, axis=1)
        g, gh = robust_growth(n, worst)
        label = f"eps={e:g}: growth {g:.2f} (+{gh:.2f}) over n"
        ax.errorbar(n, m, yerr=h, fmt="o-", capsize=3, color=f"C{j}", label=label)
        ax.plot(n, m[0] * ROBUST_GROWTH ** (np.log(n / n[0]) / np.log(n[-1] / n[0])), ":", color=f"C{j}")
    ax.plot([], [], "k:", label=f"claim's limit: growth {ROBUST_GROWTH:g} over the range")
    title = "SP's robustness does not grow with n (dynamic mode, adversarial predictions)"
    ylabel = "worst adversarial energy / OPT (mean over seeds, 95% CI)"
    return panels.finish(ax, legend=8, log="xy", xlabel="number of jobs n", ylabel=ylabel, title=title).figure


@FIGURES.add
def plot_las_eps(results: dict, cfg: Config):
    """LAS-accurate mean ratio vs eps (calibration instances) with the published range: which eps it belongs to."""
    if "las_calibration" not in results:
        return None
    grid = np.asarray(cfg.las_eps_grid)
    m, h = panels.mean_ci_columns(results["las_calibration"])
    lo, hi = las_eps_interval(grid, m)
    fig, ax = style.figure(figsize=(7, 4.5))
    label = f"LAS, exact workloads ({cfg.las_cal_seeds} calibration instances: mean, 95% CI)"
    pred_label = "consistency bound 1 + eps"
    panels.measured_vs_predicted(ax, grid, m, 1 + grid, yerr=h, fmt="o-", label=label, pred_label=pred_label)
    ax.axhspan(*PUBLISHED_LAS, color="0.8", label="published LAS-accurate range")
    if np.isfinite(lo):
        ax.axvspan(lo, hi, color="tab:blue", alpha=0.12, label=f"eps in [{lo:.2f}, {hi:.2f}] maps into it")
    # linear in the ratio: it spans 1 to ~1.2, where a log axis only garbles the tick labels
    ylim, title = (1.0, max(1.2, float(m.max()) * 1.05)), f"Which eps is the published LAS range? ({_setup(cfg)})"
    return panels.finish(ax, legend=8, xscale="log", ylim=ylim, xlabel="eps", ylabel="energy / OPT", title=title).figure


@FIGURES.add
def plot_avr_lower_bound(results: dict, cfg: Config):
    """AVR / OPT on the lower-bound family at alpha = 2 approaching alpha^alpha = 4."""
    if "avr_lb" not in results:
        return None
    lb = results["avr_lb"]
    fig, ax = style.figure(figsize=(7, 4.5))
    ax.plot(lb["curve_kappa"], lb["curve_ratio"], **style.prediction(), label="continuum limit (quadrature)")
    for y, mk, color, ms, label in (
        (lb["measured"][:, 0], "v", "tab:orange", 7, f"measured: exact AVR / YDS, n = {cfg.lb_jobs} x 0.4/kappa jobs"),
        (lb["measured"][:, 1], "^", "tab:orange", 7, "measured, 2n jobs"),
        (lb["extrapolated"], "o", "tab:blue", 8, "extrapolated 2 R(2n) - R(n)"),
    ):
        ax.plot(lb["kappa"], y, mk, color=color, ms=ms, ls="none", label=label)
    ax.axhline(4.0, color="tab:red", lw=1, label="alpha^alpha = 4 (kappa -> 0)")
    xlabel = "kappa (work density t^-gamma, gamma = (1 - kappa) / alpha)"
    title = "AVR on its lower-bound family at alpha = 2"
    return panels.finish(ax, xscale="log", xlabel=xlabel, ylabel="AVR / OPT", title=title).figure


plot = FIGURES.plot
