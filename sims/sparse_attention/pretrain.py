"""The quick preset's denoiser, trained once by the project's own loop and shipped in the package.

The quick preset's model (d_model 32, 2 layers, 4 heads, 64-byte context) learns beyond the byte marginals only
with the full preset's training recipe (2500 AdamW steps of batch 32 at lr 5e-3: ~1.5 min on a 2-core CPU, 5x the
quick run). Rather than train that on every quick run, the weights are trained once with

    python -m jaxwb.sims.sparse_attention.pretrain --preset quick

which trains ``DiffusionLM(cfg.model)`` with ``cfg.train`` through ``jaxwb.models.diffusion_lm.trained_diffusion_lm``
(no cache: always from scratch) and writes ``data/<preset>_denoiser.eqx`` (the model's leaves, equinox
serialisation) and ``data/<preset>_denoiser.json`` (the sha256 of that file, the exact model and training
configuration, the JAX version and the training losses' first and last values). A preset with
``Config.denoiser == "shipped"`` loads that file (:func:`load_shipped`): its configuration must equal the
preset's and its sha256 the recorded one, else a ValueError (never a silent retrain, never a download).
The training path stays exercised by the full preset (``denoiser == "train"``) and by the tests.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import equinox as eqx
import jax
import numpy as np

from jaxwb.models import diffusion_lm as dl
from jaxwb.sims.core.paths import sha256_file
from jaxwb.sims.sparse_attention.config import PRESETS, Config

DATA_DIR = Path(__file__).resolve().parent / "data"


def weights_path(preset: str) -> Path:
    """The shipped weights of ``preset``'s denoiser: ``data/<preset>_denoiser.eqx`` in this package."""
    return DATA_DIR / f"{preset}_denoiser.eqx"


def record_path(preset: str) -> Path:
    """The record beside them (sha256, configurations, JAX version, losses): ``data/<preset>_denoiser.json``."""
    return DATA_DIR / f"{preset}_denoiser.json"


def configs(cfg: Config) -> dict:
    """The model and training configuration of ``cfg``, as the record stores them (plain JSON types)."""
    return {"model": dataclasses.asdict(cfg.model), "train": dataclasses.asdict(cfg.train)}


def train(cfg: Config) -> tuple[dl.DiffusionLM, np.ndarray]:
    """``DiffusionLM(cfg.model)`` trained from scratch with ``cfg.train`` by the project's loop (no weight cache):
    (model, per-step training losses float32[train_steps])."""
    model, losses = dl.trained_diffusion_lm(cfg.model, cfg.train, use_cache=False, desc="train diffusion LM")
    return model, np.asarray(losses)


def save(model: dl.DiffusionLM, losses: np.ndarray, cfg: Config, preset: str, *, data_dir: Path | None = None):
    """Write ``model``'s weights and their record for ``preset`` (into ``data_dir``, default this package's
    ``data/``); returns the weights' path."""
    d = DATA_DIR if data_dir is None else Path(data_dir)
    d.mkdir(parents=True, exist_ok=True)
    path = d / weights_path(preset).name
    eqx.tree_serialise_leaves(path, model)
    record = {
        "preset": preset,
        "sha256": sha256_file(path),
        "bytes": path.stat().st_size,
        "command": f"python -m jaxwb.sims.sparse_attention.pretrain --preset {preset}",
        **configs(cfg),
        "jax_version": jax.__version__,
        "loss_first": float(losses[0]),
        "loss_last_100_mean": float(np.mean(losses[-100:])),
    }
    (d / record_path(preset).name).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return path


def load_shipped(cfg: Config, preset: str = "quick") -> dl.DiffusionLM:
    """The shipped denoiser of ``preset`` for ``cfg``: checks that the record's configuration is ``cfg``'s and the
    file's sha256 the recorded one (ValueError naming what differs), then deserialises the leaves into
    ``DiffusionLM(cfg.model)``."""
    path, rec_path = weights_path(preset), record_path(preset)
    if not path.is_file() or not rec_path.is_file():
        raise ValueError(
            f"denoiser='shipped' but {path.name} / {rec_path.name} are missing from {DATA_DIR} (package data); "
            f"recreate them with `python -m jaxwb.sims.sparse_attention.pretrain --preset {preset}`"
        )
    record = json.loads(rec_path.read_text())
    want = configs(cfg)
    for part in ("model", "train"):
        if record[part] != want[part]:
            raise ValueError(
                f"cfg.{part} {want[part]} differs from the shipped {preset} denoiser's {record[part]}: retrain it "
                f"(`python -m jaxwb.sims.sparse_attention.pretrain --preset {preset}`) or use denoiser='train'"
            )
    digest = sha256_file(path)
    if digest != record["sha256"]:
        raise ValueError(f"{path.name}: sha256 {digest} differs from the recorded {record['sha256']}")
    skeleton = dl.DiffusionLM(cfg.model, key=jax.random.key(cfg.train.seed))
    return eqx.tree_deserialise_leaves(path, skeleton)


def max_weight_difference(a: dl.DiffusionLM, b: dl.DiffusionLM) -> float:
    """Largest absolute difference over all array leaves of two models of one configuration."""
    la, lb = jax.tree.leaves(eqx.filter(a, eqx.is_array)), jax.tree.leaves(eqx.filter(b, eqx.is_array))
    if len(la) != len(lb):
        raise ValueError(f"a and b have different structures ({len(la)} and {len(lb)} array leaves)")
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(la, lb, strict=True))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="quick", choices=sorted(PRESETS))
    p.add_argument("--data-dir", default=None, help="where to write (default: this package's data/)")
    a = p.parse_args(argv)
    cfg = PRESETS[a.preset]
    model, losses = train(cfg)
    path = save(model, losses, cfg, a.preset, data_dir=a.data_dir)
    print(f"wrote {path} ({path.stat().st_size} bytes, sha256 {sha256_file(path)})")


if __name__ == "__main__":
    main()
