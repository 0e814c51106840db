"""``workbench new NAME``: a new result on the template (``jaxwb.sims.core.contract``), ready to be edited.

:func:`write_result` writes, under a root folder (the repository for the CLI, a temporary tree in the tests):

    sims/NAME/__init__.py      the docstring to fill in (paper, figures, what agrees and what does not); the exports
    sims/NAME/config.py        NAME, TITLE, DISPLAY_ONLY, a frozen Config validating its fields, PRESETS read from
    sims/NAME/presets.toml     the quick and full presets: the fields each sets, with why
    sims/NAME/run.py           run(cfg, *, key): the sample mean of n Gaussian draws per seed, vmapped over the seeds
    sims/NAME/claims.py        one claim against a closed form (E[sample mean] = loc), decided on the seeds' interval
    sims/NAME/figures.py       one labelled figure: per-seed measurements with error bars beside the prediction
    sims/NAME/mutants.py       one mutant (the mean divided by n - 1) that the claim catches
    tests/sims/test_NAME.py    the quick preset end to end, the Config's validation
    notebooks/NAME.py          the notebook (jupytext percent format) on ``jaxwb.sims.core.notebook``

The generated files pass ``ruff check`` and ``ruff format --check`` with the project's settings, and the result
passes its claim and catches its mutant as written (``tests/sims/test_scaffold.py``): what is left is to replace
the example by the paper's statement. A name must be a lowercase Python identifier, not a result of this
repository nor of ``root``, not reserved (``core``, ``bench``); an existing file is never overwritten.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path

from jaxwb.sims.core.notebook import notebook_opening
from jaxwb.sims.core.registry import INFRASTRUCTURE, result_names

NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*")
MAX_NAME_LENGTH = 40  # the generated import lines stay within the 120-character line length

INIT = '''"""__NAME__: TODO one sentence: what the paper claims, what this result measures.

Paper: TODO authors, *title* (venue, year), the section, theorem or equation reproduced here.

Figures (``figures/__NAME__/``):
  sample_means.png  each seed's sample mean with its standard error, the mean over seeds with its 95% interval,
                    and the prediction E[mean] = loc

Predictions are independent of the simulation: the expectation of a sample mean is the location of the
distribution drawn from (a closed form), never computed from the draws.

The seed (``--seed``) draws every sample: ``n_seeds`` keys split from it, one sample of ``n_draws`` per key.

Claims (kinds): E[sample mean] = loc, decided on the interval over the seeds (check). TODO: what agrees with the
paper, what does not and why (a known disagreement stays failing, with its measured reason).
"""

from __future__ import annotations

from jaxwb.sims.__NAME__.claims import claims
from jaxwb.sims.__NAME__.config import DISPLAY_ONLY, NAME, PRESETS, TITLE, Config
from jaxwb.sims.__NAME__.figures import plot
from jaxwb.sims.__NAME__.mutants import MUTANTS
from jaxwb.sims.__NAME__.run import run

__all__ = ["DISPLAY_ONLY", "MUTANTS", "NAME", "PRESETS", "TITLE", "Config", "claims", "plot", "run"]
'''

CONFIG = '''"""__NAME__: the Config and its presets (what is measured: the package docstring)."""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxwb.sims.core.presets import load_presets
from jaxwb.theory import validate as v

NAME = "__NAME__"
TITLE = "TODO one line for `workbench list`: the sample mean of n Gaussian draws is unbiased"

# Arrays of ``run`` that no claim reads, and why (tests/sims/test_claim_coverage.py)
DISPLAY_ONLY = ("std",)  # each seed's sample standard deviation: the figure's per-seed error bars


@dataclasses.dataclass(frozen=True)
class Config:
    loc: float = 3.0  # location of the Gaussian drawn from (the predicted mean)
    scale: float = 1.0  # its standard deviation
    n_draws: int = 10  # draws per seed (>= 2: the sample standard deviation)
    n_seeds: int = 256  # independent samples, one key each (>= 5: the claim's interval)

    def __post_init__(self):
        v.check("loc", self.loc, np.isfinite, "finite")
        v.positive("scale", self.scale)
        v.positive_int("n_draws", self.n_draws)
        v.positive_int("n_seeds", self.n_seeds)
        if self.n_draws < 2:
            raise ValueError(f"n_draws must be >= 2 (the sample standard deviation), got {self.n_draws}")
        if self.n_seeds < 5:
            raise ValueError(f"n_seeds must be >= 5 (the claim's interval over seeds), got {self.n_seeds}")


PRESETS = load_presets(Config)
'''

PRESETS_TOML = """# __NAME__: the presets, each the fields it sets over the Config's defaults (config.py, whose field
# comments say what each is); read by config.py with jaxwb.sims.core.presets.load_presets.

# the paper's scale: the Config's defaults
[full]

# seconds, for the tests and `workbench all --quick`; each value that differs says why it suffices
[quick]
# 64 seeds: the claim's 95% half-width ~ 1.96 scale / sqrt(n_draws n_seeds) = 0.077 scale, inside its 0.1 scale
n_seeds = 64
"""

RUN = '''"""__NAME__: the simulation (what is measured: the package docstring)."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

__IMPORTS__


def sample_mean(key: jax.Array, *, n: int, loc: float, scale: float) -> dict:
    """Mean and standard deviation (ddof 1) of ``n`` draws of N(loc, scale^2) from ``key``: ``mean``, ``std``,
    each of shape ()."""
    x = loc + scale * jax.random.normal(key, (n,))
    return {"mean": jnp.sum(x) / n, "std": jnp.std(x, ddof=1)}


def run(cfg: Config, *, key: jax.Array) -> dict:
    """One sample of ``cfg.n_draws`` per seed, over ``cfg.n_seeds`` keys split from ``key``, batched with
    ``sweep`` (jit(vmap), sharded over the devices): ``mean``, ``std``, each of shape (n_seeds,)."""
    keys = jax.random.split(key, cfg.n_seeds)
    return sweep(partial(sample_mean, n=cfg.n_draws, loc=cfg.loc, scale=cfg.scale), keys)
'''

CLAIMS = '''"""__NAME__: the claims (what is measured: the package docstring).

One registered group per kind of statement, decided in the order they are registered.
"""

from __future__ import annotations

import numpy as np

__IMPORTS__

CLAIMS = ClaimGroups()
claims = CLAIMS.claims


@CLAIMS.add
def mean_claims(results: dict, cfg: Config) -> list[Claim]:
    """E[sample mean] = loc, on the per-seed sample means (``results["mean"]``, shape (n_seeds,)): the prediction
    inside their interval (Student t; the family's level, ``claims.decide_family``) and the 95% half-width no
    wider than a tenth of the draws' scale (else the seeds are too few to decide anything)."""
    return [
        Claim.from_samples(
            f"E[mean of {cfg.n_draws} draws of N(loc, scale^2)] = loc = {cfg.loc:g} (closed form; "
            f"{cfg.n_seeds} seeds, 95% half-width <= scale / 10)",
            cfg.loc,
            np.asarray(results["mean"], np.float64),
            0.1 * cfg.scale,
            "ci",
            kind="check",
            source="theory",
        )
    ]
'''

FIGURES = '''"""__NAME__: the figures, drawn only from ``results`` and ``cfg``.

One registered function per figure, saved as ``<name>.png`` (the function's name without ``plot_``).
"""

from __future__ import annotations

import numpy as np

__IMPORTS__

FIGURES = panels.Figures()
plot = FIGURES.plot


@FIGURES.add
def plot_sample_means(results: dict, cfg: Config):
    """Each seed's sample mean with its standard error std / sqrt(n_draws), the mean over the seeds with its 95%
    interval (the claim's), and the prediction loc dashed. ``results["mean"]``, ``results["std"]``: (n_seeds,)."""
    means = np.asarray(results["mean"], np.float64)
    sem = np.asarray(results["std"], np.float64) / np.sqrt(cfg.n_draws)
    mean, half, n = mean_ci(means)
    fig, ax = style.figure(figsize=(7, 4.2))
    ax.errorbar(
        np.arange(n),
        means,
        yerr=sem,
        fmt="o",
        ms=3,
        capsize=2,
        alpha=0.4,
        label=f"one seed: mean of {cfg.n_draws} draws, +- standard error",
    )
    ax.errorbar([1.05 * n], [mean], yerr=[half], fmt="s", ms=6, capsize=4, color="C3", label="mean over seeds, 95% CI")
    ax.axhline(cfg.loc, **style.prediction(label=f"prediction E[mean] = loc = {cfg.loc:g}"))
    ax.set(
        xlabel="seed (index of the key split from the run's key)",
        ylabel="sample mean (units of the draws)",
        title=f"Sample mean of N({cfg.loc:g}, {cfg.scale:g}^2) draws over {n} seeds",
    )
    fig.legend(loc="outside lower center", ncols=2)
    return fig
'''

MUTANTS = '''"""__NAME__: the mutants, plausible bugs each of which must make a claim fail
on the quick preset (``workbench audit __NAME__``).

The project asks for at least three: a constant off by 10%, a missing factor, a dropped correction step, an
off-by-one, each in the code the claims measure (once the closed forms live in ``jaxwb.theory``, target them
there)."""

from __future__ import annotations

from jaxwb.sims.core.audit import Mutant


def mean_over_n_minus_1(sample_mean):
    """``sample_mean`` with its sum divided by n - 1 (the unbiased variance's denominator) instead of n."""

    def mutated(key, *, n, loc, scale):
        out = sample_mean(key, n=n, loc=loc, scale=scale)
        return {**out, "mean": out["mean"] * n / (n - 1)}

    return mutated


MUTANTS = [
    Mutant(
        "mean_over_n_minus_1",
        "jaxwb.sims.__NAME__.run:sample_mean",
        mean_over_n_minus_1,
        "the sample mean divides the sum of the draws by n - 1 instead of n",
    ),
]
'''

TEST = '''"""__NAME__ end to end on the quick preset, and its Config validation."""

from __future__ import annotations

import dataclasses
import json

import jax
import numpy as np
import pytest

from jaxwb.sims import __NAME__ as sim
from jaxwb.sims.core import harness


def test_quick_preset_end_to_end(tmp_path):
    outcome = harness.execute(sim, preset="quick", seed=0, out_dir=tmp_path, verbose=False)
    failed = [c.statement for c in outcome.claims if not c.passed]
    assert not failed, failed
    for fname in ("data.npz", "claims.json", "manifest.json", "sample_means.png"):
        assert (tmp_path / fname).stat().st_size > 0, fname
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["preset"] == "quick" and manifest["claims_passed"] == manifest["claims_total"]
    assert manifest["nonfinite_arrays"] == []
    assert outcome.results["mean"].shape == (sim.PRESETS["quick"].n_seeds,)


def test_the_seed_draws_the_samples():
    cfg = sim.PRESETS["quick"]
    a = np.asarray(sim.run(cfg, key=jax.random.key(0))["mean"])
    b = np.asarray(sim.run(cfg, key=jax.random.key(1))["mean"])
    assert not np.allclose(a, b)


@pytest.mark.parametrize(
    "field, value",
    [("loc", float("nan")), ("scale", 0.0), ("n_draws", 1), ("n_seeds", 4)],
)
def test_config_validation_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(sim.PRESETS["quick"], **{field: value})
'''

# the notebook: the opening every notebook shares (jaxwb.sims.core.notebook), then this result's own cells
NOTEBOOK_INTRO = """# # __NAME__
#
# TODO: the paper (authors, title, year) and its statement in a paragraph: what is predicted, under which
# assumptions, and what this notebook lets the reader try. The example measures the sample mean of `n` draws of
# `N(loc, scale^2)` against its expectation `loc`."""

NOTEBOOK_CELLS = """# %%
import jax
import matplotlib.pyplot as plt
import numpy as np

from jaxwb.sims import __NAME__ as sim
from jaxwb.sims.core import notebook, style

# %% [markdown]
# ## The simulation
# The committed full-preset run, loaded from `figures/__NAME__/data.npz`
# (`workbench run __NAME__` writes it; no recomputation: opening takes seconds);
# the figures are the committed PNGs `sim.plot` drew from it. The **recompute** controls at the end rerun the
# simulation and redraw.

# %%
nb = notebook.open_result(sim)
nb.show()

# %% [markdown]
# ## Explore
# The distribution of the sample mean over seeds against its closed form `N(loc, scale^2 / n)`. Press
# **recompute** after moving the sliders.


# %%
def explore(loc=3.0, scale=1.0, n_draws=10, n_seeds=256):
    cfg = sim.Config(loc=loc, scale=scale, n_draws=n_draws, n_seeds=n_seeds)
    means = np.asarray(sim.run(cfg, key=jax.random.key(0))["mean"])
    sd = scale / np.sqrt(n_draws)
    x = np.linspace(loc - 4 * sd, loc + 4 * sd, 200)
    fig, ax = style.figure(figsize=(7, 3.8))
    ax.hist(means, bins=30, density=True, alpha=0.6, label=f"sample means over {n_seeds} seeds")
    density = np.exp(-0.5 * ((x - loc) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))
    ax.plot(x, density, **style.prediction(label="closed form N(loc, scale^2 / n)"))
    ax.set(xlabel="sample mean (units of the draws)", ylabel="density (1 / units)")
    ax.legend()
    plt.show()


notebook.interact(explore, live=False, loc=(-5.0, 5.0, 0.5), scale=(0.1, 3.0, 0.1), n_draws=(2, 200, 1))

# %% [markdown]
# ## Recompute
# Pick a preset and seed, change Config fields and press **recompute**: the simulation reruns (nothing is written
# to `figures/`), and the figures and claims table below it are the new run's.
# `workbench run __NAME__ --help` explains each field.

# %%
nb.controls()

# %% [markdown]
# ## Claims
# `sim.claims` evaluated on the data `nb` holds: the committed run when the notebook opens, the latest
# recomputation once **recompute** was pressed.

# %%
nb.show_claims()
"""
NOTEBOOK = notebook_opening(NOTEBOOK_INTRO) + NOTEBOOK_CELLS


def _first_party(name: str, *lines: tuple[str, str]) -> str:
    """``from MODULE import NAMES`` lines sorted by module, as ruff's isort orders them (the result's own modules
    sort before or after ``jaxwb.sims.core`` depending on its name)."""
    full = [(module.replace("__NAME__", name), names) for module, names in lines]
    return "\n".join(f"from {module} import {names}" for module, names in sorted(full))


def files(name: str) -> dict[str, str]:
    """The files of a new result ``name``: path relative to the root -> text."""
    config = ("jaxwb.sims.__NAME__.config", "Config")
    imports = {
        "run": _first_party(name, config, ("jaxwb.sims.core.sweep", "sweep")),
        "claims": _first_party(name, config, ("jaxwb.sims.core.claims", "Claim, ClaimGroups")),
        "figures": _first_party(
            name, config, ("jaxwb.sims.core", "panels, style"), ("jaxwb.sims.core.claims", "mean_ci")
        ),
    }
    templates = {"__init__": INIT, "config": CONFIG, "run": RUN, "claims": CLAIMS, "figures": FIGURES}
    templates["mutants"] = MUTANTS
    out = {
        f"sims/{name}/{part}.py": text.replace("__IMPORTS__", imports.get(part, "")).replace("__NAME__", name)
        for part, text in templates.items()
    }
    out[f"sims/{name}/presets.toml"] = PRESETS_TOML.replace("__NAME__", name)
    out[f"tests/sims/test_{name}.py"] = TEST.replace("__NAME__", name)
    out[f"notebooks/{name}.py"] = NOTEBOOK.replace("__NAME__", name)
    return out


def check_name(name: str, root: str | Path) -> None:
    """Raise ``ValueError`` naming ``name`` unless it can name a new result under ``root``: a lowercase Python
    identifier (letters, digits, underscores; not starting with one), not a keyword, not reserved, at most
    :data:`MAX_NAME_LENGTH` characters, and not a result of this repository or of ``root``."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or keyword.iskeyword(name):
        raise ValueError(
            f"result name {name!r} must be a lowercase Python identifier (a-z, then a-z, 0-9 or _), e.g. 'my_result'"
        )
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"result name {name!r} is longer than {MAX_NAME_LENGTH} characters")
    if name in INFRASTRUCTURE:
        raise ValueError(f"result name {name!r} is reserved (sims/{name} holds the workbench's machinery)")
    sims = Path(root) / "sims"
    if name in result_names() or (sims / name).exists() or (sims / f"{name}.py").exists():
        raise ValueError(f"result name {name!r} is taken: sims/{name} is an existing result")


def write_result(name: str, root: str | Path) -> list[Path]:
    """Write a new result ``name`` under ``root`` (``sims/NAME/``, ``tests/sims/test_NAME.py``,
    ``notebooks/NAME.py``) and return the paths written. A bad or taken name raises ``ValueError``
    (:func:`check_name`); when any target file exists, ``FileExistsError`` names it and nothing is written."""
    check_name(name, root)
    root = Path(root)
    targets = {root / rel: text for rel, text in files(name).items()}
    existing = [str(p.relative_to(root)) for p in targets if p.exists() or p.is_symlink()]
    if existing:
        raise FileExistsError(f"new result {name!r}: refusing to overwrite {', '.join(existing)}")
    for path, text in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x") as f:  # "x": never replaces a file that appeared meanwhile
            f.write(text)
    return list(targets)


def next_steps(name: str, written: list[Path], root: str | Path) -> str:
    """What ``workbench new`` prints: the files written (relative to ``root``) and what to do next."""
    rel = [str(Path(p).relative_to(root)) for p in written]
    return "\n".join(
        [
            f"new result {name!r}: wrote",
            *(f"  {p}" for p in rel),
            "next steps (docs/architecture.md, 'Adding a result'):",
            f"  1. replace the example in sims/{name}/ by the paper's statement (docstring, Config, run, claims, "
            "figures, mutants)",
            f"  2. workbench run {name} --quick",
            f"  3. python -m pytest -n 0 -q tests/sims/test_{name}.py",
            f"  4. workbench audit {name}",
            f"  5. workbench run {name}   (the full preset: figures/{name}/, which `workbench notebook {name}` opens)",
            f"  6. docs/papers/{name}.md, mkdocs.yml's nav, docs/index.md, CITATION.cff and a README results row",
        ]
    )
