"""The one execution helper every ``notebooks/<name>.py`` uses.

A notebook opens from the committed outputs, not by rerunning the simulation::

    from jaxwb.sims.core import notebook
    nb = notebook.open_result(sim)       # figures/<name>/data.npz -> the results pytree (seconds)
    nb.show()                            # every figure: the committed PNGs, sim.plot after a recompute
    nb.show_claims()                     # sim.claims(results, cfg): the claims table (no wrapping)
    nb.controls()                        # sliders for the Config + a "recompute" button (reruns the simulation)
    notebook.interact(explore, beta=(0.0, 0.98, 0.01))   # the cheap live explorations (labels not cut)

The notebook therefore depends on the result's ``plot`` and ``claims``, never on the array keys of
``data.npz``: whoever changes a result changes its data and its plots together. ``nb.recompute(...)`` runs
:func:`jaxwb.sims.core.harness.execute` without writing, and the figures/claims shown afterwards are the new run's.

Headless (``WORKBENCH_QUICK=1``, the notebook tests), :func:`interact` calls the function once with the
default values (errors surface as cell errors instead of disappearing into a widget), ``controls`` only builds
its widgets, and ``show`` draws through ``sim.plot`` instead of showing the committed PNGs (so the suite catches
committed data the current ``plot`` cannot draw).
"""

from __future__ import annotations

import dataclasses
import html
import math
import os
import sys
import time
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

from jaxwb.sims.core import claims as core_claims
from jaxwb.sims.core import harness, outputs, paths, presets

LABEL_STYLE = {"description_width": "initial"}


def enable_compilation_cache() -> Path | None:
    """JAX's persistent compilation cache for a notebook kernel (``paths.enable_compilation_cache``: the folder
    ``<cache>/jax``, shared with the tests and CLI runs; left alone when the user configured one, off with
    ``WORKBENCH_JAX_CACHE=0``);
    done on import inside a Jupyter kernel. Opening a notebook runs the result's ``plot`` and the closed forms
    eagerly, i.e. dozens of small XLA compilations, so every compilation is cached: a second opening compiles
    nothing (river_valley: 2.4 s -> 0.6 s of CPU for open + figures + claims). Returns the folder, or None."""
    import jax

    if jax.config.jax_compilation_cache_dir:  # the user's own cache settings are left as they are
        return None
    return paths.enable_compilation_cache(min_compile_time_s=0.0)


def headless() -> bool:
    """True under ``WORKBENCH_QUICK`` (the suite executes notebooks with nobody at the sliders)."""
    return presets.quick_from_env()


def _display(obj) -> None:
    try:
        from IPython.display import display
    except ImportError:  # plain Python: print what can be printed
        print(obj)
        return
    display(obj)


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def claims_html(title: str, claims) -> str:
    """The claims as an HTML table: the statement wraps inside its own column, the numbers never wrap, so every
    row stays one aligned row at any notebook width (a plain-text table either wraps mid-row or hides the measured
    column behind a sideways scroll)."""
    from jaxwb.sims.core.claims import format_counts

    esc = html.escape
    num = "style='white-space: pre; text-align: right; font-family: var(--jp-code-font-family, monospace)'"
    rows = []
    for c in claims:
        ok = c.status
        color = "var(--jp-success-color1, green)" if c.as_expected else "var(--jp-error-color1, red)"
        measured = f"{c.measured:.5g}" + (f" \u00b1 {c.ci:.2g} (n={c.n_seeds})" if c.ci else "")
        slack = "" if c.slack is None else f"{c.slack:.3g}" + (" LOOSE" if c.loose else "")
        rows.append(
            f"<tr><td style='color: {color}; font-weight: bold'>{ok}</td><td>{esc(c.kind)}</td>"
            f"<td style='text-align: left; white-space: normal; min-width: 24em'>{esc(c.statement)}</td>"
            f"<td {num}>{c.predicted:.5g}</td><td {num}>{esc(measured)}</td>"
            f"<td {num}>{esc(c.criterion)}</td><td {num}>{esc(slack)}</td></tr>"
        )
    head = "".join(
        f"<th style='text-align: {a}'>{h}</th>"
        for h, a in (
            ("", "left"),
            ("kind", "left"),
            ("claim", "left"),
            ("predicted", "right"),
            ("measured", "right"),
            ("criterion", "right"),
            ("slack", "right"),
        )
    )
    summary = f"{sum(c.passed for c in claims)}/{len(claims)} claims pass ({format_counts(claims)})"
    return (
        f"<div><p style='margin: 0 0 4px 0'><b>{esc(title)}</b>: {esc(summary)}</p>"
        f"<table style='border-collapse: collapse; font-size: 90%'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


class Result:
    """A result's data in a notebook: the committed run on opening, the latest recomputation afterwards."""

    def __init__(self, sim: ModuleType, folder: str | Path | None = None):
        self.sim = sim
        self.folder = Path(folder) if folder is not None else paths.FIGURES_DIR / sim.NAME
        self._figures: dict[str, Any] | None = None
        self._claims: list[core_claims.Claim] | None = None
        self._recomputed = False
        t0 = time.perf_counter()
        self.results, self.cfg, self.manifest = outputs.load_results(sim, self.folder)
        self.preset = self.manifest.get("preset", "full")
        self.seed = self.manifest.get("seed", 0)
        self.source = (
            f"committed {self._rel(self.folder)} ({self.preset} preset, seed {self.seed}, "
            f"git {self.manifest.get('git_revision', '?')})"
        )
        self.load_s = time.perf_counter() - t0
        problems = outputs.verify_outputs(self.folder)
        self.problems = [p for p in problems if "no content hash" not in p]

    @staticmethod
    def _rel(path: Path) -> str:
        try:
            return str(path.resolve().relative_to(paths.REPO_ROOT))
        except ValueError:
            return str(path)

    # -- what the notebook shows ------------------------------------------------------------------------

    @property
    def claims(self):
        if self._claims is None:
            self._claims = core_claims.evaluate(self.sim, self.results, self.cfg)
        return self._claims

    def figures(self) -> dict[str, Any]:
        """``sim.plot(results, cfg)`` (cached until the next recompute), in the workbench style."""
        if self._figures is None:
            import matplotlib.pyplot as plt

            from jaxwb.sims.core import style

            with style.context():
                self._figures = dict(self.sim.plot(self.results, self.cfg))
            for fig in self._figures.values():
                plt.close(fig)  # shown through display() only, not again by the inline backend
        return self._figures

    def committed_pngs(self) -> dict[str, Path] | None:
        """The committed ``<figure>.png`` files of the data shown, when they provably belong to it: the data is the
        committed run (not a recomputation), the manifest lists every figure and records its SHA-256, and every
        hash matches (``outputs.verify_outputs``). None otherwise, and headless (the notebook tests draw through
        ``sim.plot``, so committed data that the current ``plot`` can no longer draw fails the suite)."""
        if self._recomputed or self.problems or headless():
            return None
        names = self.manifest.get("figures")
        hashes = self.manifest.get("content_sha256")
        if not names or not isinstance(hashes, dict) or any(n not in hashes for n in names):
            return None
        return {Path(n).stem: self.folder / n for n in names}

    def show(self, *names: str, redraw: bool = False) -> None:
        """Display the named figures (all when none are named). On opening, these are the committed PNGs (hashed
        in the manifest beside the data: what ``sim.plot`` drew from this very data), so opening draws nothing:
        rendering the figures again costs more CPU than everything else a notebook does when it opens
        (zoe_grad: 7 of 9.5 s). After ``recompute``, or with ``redraw=True``, ``sim.plot`` draws them."""
        pngs = None if redraw else self.committed_pngs()
        try:
            from IPython.display import Image
        except ImportError:  # plain Python without IPython: draw
            pngs = None
        figs = self.figures() if pngs is None else {k: Image(filename=str(v)) for k, v in pngs.items()}
        unknown = [n for n in names if n not in figs]
        if unknown:
            raise KeyError(f"{self.sim.NAME} has no figure(s) {unknown}; figures: {sorted(figs)}")
        for name in names or list(figs):
            _display(figs[name])

    def show_claims(self) -> None:
        """The claims of the data shown (``sim.claims`` on it), as one table that does not wrap."""
        title = f"{self.sim.NAME} [{self.source}]"
        for p in self.problems:
            print(f"warning: {self._rel(self.folder)}: {p}", file=sys.stderr)
        if _in_kernel():
            from IPython.display import HTML

            _display(HTML(claims_html(title, self.claims)))
        else:
            print(core_claims.format_claims(title, self.claims))

    # -- recomputing ----------------------------------------------------------------------------------------

    def recompute(self, cfg=None, *, preset: str = "quick", seed: int = 0, **overrides) -> Result:
        """Rerun the simulation (``preset``'s Config, or ``cfg``, with ``overrides``) without writing anything;
        the figures and claims shown afterwards are this run's."""
        if cfg is None:
            cfg = presets.get_config(self.sim, preset, **overrides)
        elif overrides:
            cfg = dataclasses.replace(cfg, **overrides)
        outcome = harness.execute(
            self.sim, cfg=cfg, preset=preset, seed=seed, write=False, verbose=False, progress=False
        )
        self.results, self.cfg, self.preset, self.seed = outcome.results, cfg, preset, seed
        self._claims, self._figures, self.problems = outcome.claims, None, []
        self._recomputed = True
        self.source = f"recomputed: {preset} preset, seed {seed}, {outcome.wall_s:.1f} s"
        return self

    def controls(self, fields: typing.Sequence[str] | None = None, *, preset: str = "quick") -> None:
        """Widgets for the scalar Config fields (starting from ``preset``) and a "recompute" button that reruns
        the simulation and redraws every figure and the claims table below it. The box is displayed, kept as
        ``self.controls_box`` and not returned (a returned widget is displayed a second time by the cell)."""
        import ipywidgets as widgets

        base = presets.get_config(self.sim, preset)
        hints = typing.get_type_hints(type(base))
        names = (
            list(fields)
            if fields is not None
            else [f.name for f in dataclasses.fields(base) if hints.get(f.name) in (int, float, bool)]
        )
        inputs = {name: _field_widget(name, hints[name], getattr(base, name)) for name in names}
        preset_w = widgets.Dropdown(
            options=list(self.sim.PRESETS), value=preset, description="preset", style=LABEL_STYLE
        )
        seed_w = widgets.BoundedIntText(
            value=0, min=0, max=2**31 - 1, description="seed", style=LABEL_STYLE, layout=widgets.Layout(width="160px")
        )
        button = widgets.Button(description="recompute", button_style="primary", icon="refresh")
        status = widgets.HTML(value=f"showing: {html.escape(self.source)}")
        out = widgets.Output()

        def on_preset(change):
            cfg = presets.get_config(self.sim, change["new"])
            for name, w in inputs.items():
                w.value = getattr(cfg, name)

        def on_click(_):
            button.disabled = True
            status.value = "running ..."
            try:
                with out:
                    out.clear_output(wait=True)
                    values = {name: w.value for name, w in inputs.items()}
                    try:
                        cfg = dataclasses.replace(presets.get_config(self.sim, preset_w.value), **values)
                    except (ValueError, TypeError) as err:  # the Config's validation of the user's values
                        print(f"invalid settings: {err}")
                        return
                    self.recompute(cfg, preset=preset_w.value, seed=int(seed_w.value))
                    self.show()
                    self.show_claims()
                status.value = f"showing: {html.escape(self.source)}"
            finally:
                button.disabled = False

        preset_w.observe(on_preset, names="value")
        button.on_click(on_click)
        box = widgets.VBox(
            [
                widgets.HBox([preset_w, seed_w, button]),
                widgets.GridBox(list(inputs.values()), layout=widgets.Layout(grid_template_columns="repeat(3, 1fr)")),
                status,
                out,
            ]
        )
        self.controls_box = box
        _display(box)


def _field_widget(name: str, tp, value):
    import ipywidgets as widgets

    layout = widgets.Layout(width="auto")
    if tp is bool:
        return widgets.Checkbox(value=bool(value), description=name, style=LABEL_STYLE, layout=layout)
    if tp is int:
        return widgets.IntText(value=int(value), description=name, style=LABEL_STYLE, layout=layout)
    return widgets.FloatText(
        value=float(value) if math.isfinite(value) else 0.0, description=name, style=LABEL_STYLE, layout=layout
    )


def open_result(sim: ModuleType, folder: str | Path | None = None) -> Result:
    """The committed run of ``sim`` (``figures/<name>/``), loaded without recomputing anything."""
    return Result(sim, folder)


def interact(fn, *, live: bool = True, **controls) -> None:
    """``ipywidgets.interact`` with readable labels (every label as wide as the longest name) and sliders that
    update on release. ``live=False`` adds a "recompute" button instead of rerunning on every change (expensive ``fn``).
    The widget is displayed, not returned (a cell's returned widget would show twice). Headless, ``fn`` runs once
    with the defaults (so an error fails the notebook test)."""
    import ipywidgets as widgets

    quiet = headless() or not _in_kernel()
    w = widgets.interactive(fn, {"manual": quiet or not live, "manual_name": "recompute"}, **controls)
    # one label width for all controls, from the longest name: nothing is cut and the sliders line up
    label_ch = max((len(getattr(c, "description", "") or "") for c in w.kwargs_widgets), default=0) + 2
    for c in w.kwargs_widgets:
        if hasattr(c, "style") and hasattr(c.style, "description_width"):
            c.style.description_width = f"{label_ch}ch"
        if hasattr(c, "continuous_update"):
            c.continuous_update = False
        if hasattr(c, "layout") and not isinstance(c, widgets.Dropdown):
            c.layout.width = "480px"
    if quiet:  # nobody at the sliders: run once with the defaults, errors propagate
        fn(**{c._kwarg: c.get_interact_value() for c in w.kwargs_widgets})
        return
    if not live:  # drawn when "recompute" is pressed: say so instead of leaving an empty space under the button
        with w.out:
            print('Set the controls and press "recompute" to draw (the first call, and a new shape, compiles).')
    _display(w)  # live: already drawn once with the defaults


def fixed(value):
    """``ipywidgets.fixed``: an argument of :func:`interact` without a control."""
    import ipywidgets as widgets

    return widgets.fixed(value)


JUPYTEXT_HEADER = """# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: -all
#     notebook_metadata_filter: kernelspec,jupytext,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---
"""
"""The jupytext header of every ``notebooks/<name>.py`` (percent format; the version line left out, so a save by
another jupytext leaves the file unchanged)."""

COLAB_CELL = """# %%
# On Colab: clone the repository (code and committed figures) and install it; elsewhere this does nothing.
import os
import subprocess
import sys

if "google.colab" in sys.modules and not os.path.isdir("figures"):
    REPO = os.environ.get("WORKBENCH_REPO", "https://github.com/jax-theory-workbench/jax-theory-workbench")
    if not os.path.isdir("workbench"):
        subprocess.run(["git", "clone", "--depth", "1", REPO, "workbench"], check=True)
    os.chdir("workbench")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", ".[notebook]"], check=True)
    sys.path.insert(0, os.getcwd())
"""
"""The first code cell of every notebook: on Colab it clones the repository and installs it, elsewhere it does
nothing. The notebooks spell it out (it runs before ``jaxwb`` can be imported); ``workbench new`` writes it from
here, and ``tests/sims/test_scaffold.py`` checks that every committed notebook has it verbatim."""


def notebook_opening(intro: str) -> str:
    """The opening of a notebook ``.py``: :data:`JUPYTEXT_HEADER`, the markdown cell ``intro`` (its lines already
    commented, ``# # Title``, ``#``, ``# text``; no trailing newline) and :data:`COLAB_CELL`, each cell followed by
    a blank line. What follows is the notebook's own (its imports, ``notebook.open_result(sim)``, ...)."""
    return f"{JUPYTEXT_HEADER}\n# %% [markdown]\n{intro}\n\n{COLAB_CELL}\n"


LAB_CONFIG_DIR = paths.REPO_ROOT / ".jupyter"
"""A Jupyter config directory shipped in the repository: ``labconfig/default_setting_overrides.json`` changes
JupyterLab's *defaults* (Jupytext Notebook as the default viewer of ``.py`` files; no "fetch Jupyter news?" popup,
no update check). ``workbench notebook`` puts it first on ``JUPYTER_CONFIG_PATH``; JupyterLab layers these defaults
under the user's own settings (``~/.jupyter/lab/user-settings``), which therefore still win."""


def lab_env(environ: typing.Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for ``jupyter lab`` so the repository's defaults apply without hiding the user's settings:
    :data:`LAB_CONFIG_DIR` prepended to ``JUPYTER_CONFIG_PATH`` (jupyterlab_server reads
    ``<each config path>/labconfig/default_setting_overrides.json`` as a layer of defaults; the user settings
    folder is left where it is), and the repository on ``PYTHONPATH`` (``workbench notebook`` sets it)."""
    environ = os.environ if environ is None else environ

    def prepend(var: str, path: Path) -> str:
        rest = [p for p in environ.get(var, "").split(os.pathsep) if p and p != str(path)]
        return os.pathsep.join([str(path), *rest])

    return {
        "JUPYTER_CONFIG_PATH": prepend("JUPYTER_CONFIG_PATH", LAB_CONFIG_DIR),
        "JUPYTERLAB_WORKSPACES_DIR": str(paths.REPO_ROOT / ".cache" / "jupyterlab-workspaces"),
        "PYTHONPATH": prepend("PYTHONPATH", paths.REPO_ROOT),
    }


def lab_command(target: str = "notebooks", *lab_args: str, as_root: bool | None = None) -> list[str]:
    """``jupyter lab`` rooted at the repository (so JupyterLab's Jupytext finds ``jupytext.toml`` and the file
    browser reaches ``figures/`` and ``docs/``), opening at ``target`` (a folder or a notebook, relative to the
    repository root); ``lab_args`` are passed on (``workbench notebook NAME -- ARGS``). Run as root (a container,
    Colab-like VMs), Jupyter refuses to start without ``--allow-root``: it is added (``as_root`` None: detected
    with ``os.geteuid``) unless the user passed it."""
    if as_root is None:
        as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    root_flag = ["--allow-root"] if as_root and not any(a.startswith("--allow-root") for a in lab_args) else []
    return [
        "jupyter",
        "lab",
        f"--ServerApp.root_dir={paths.REPO_ROOT}",
        f"--LabApp.default_url=/lab/tree/{target}",
        *root_flag,
        *lab_args,
    ]


if _in_kernel():
    enable_compilation_cache()
