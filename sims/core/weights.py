"""Trained language-model weights shipped with the workbench, so that a fresh clone's runs do not train them first.

tiny_lm, mpq, zoe_grad and sparse_attention study language models trained by the project's own loop
(:func:`jaxwb.models.train.trained_model`), which keeps each trained model in the model cache
(``jaxwb.models.train.weights_dir()``) under a name made from its model and training configuration and the JAX
version. This package ships the files of every model the quick and full presets use (``shipped_models/*.eqx``, the
ones the committed runs were made with) and a record of them (``shipped_models/weights.json``: per file its sha256,
size, configurations, the results and presets that use it, and the JAX version that trained it).

:func:`seed_model_cache` (called by the harness before a result runs, and by ``workbench audit``) copies a
result's shipped files into the model cache when the cache lacks them and the installed JAX is the one that trained
them; the result then loads them instead of training. With another JAX version the cache names differ and the
result trains as before. A shipped file whose sha256 differs from its record is a ``ValueError``: never a silent
retrain from a damaged file.

Regenerate the shipped files (training what the cache lacks) with ``python -m jaxwb.sims.core.weights --export``;
check that training one again reproduces it bit for bit with ``python -m jaxwb.sims.core.weights --retrain NAME``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import jax
from filelock import FileLock

from jaxwb.models import diffusion_lm as dl
from jaxwb.models import train as tr
from jaxwb.sims.core.paths import sha256_file

WEIGHTS_DIR = Path(__file__).resolve().parent / "shipped_models"
RECORD = WEIGHTS_DIR / "weights.json"
RESULTS = ("tiny_lm", "mpq", "zoe_grad", "sparse_attention")
PRESET_NAMES = ("quick", "full")


@dataclasses.dataclass(frozen=True)
class Model:
    """One trained model a preset uses: ``kind`` "tiny_lm" (``TinyLM``) or "diffusion_lm" (``DiffusionLM``),
    its model and training configurations."""

    kind: str
    model: Any  # jaxwb.models.tiny_lm.LMConfig or jaxwb.models.diffusion_lm.DLMConfig
    train: tr.TrainConfig

    @property
    def path(self) -> Path:
        """Where the model cache keeps it (``jaxwb.models.train.cache_path``)."""
        tag = dl.CACHE_TAG if self.kind == "diffusion_lm" else ""
        return tr.cache_path(self.model, self.train, tag=tag)

    def trained(self, *, use_cache: bool = True):
        """``(model, losses)``: loaded from the model cache, or trained (and cached when ``use_cache``)."""
        if self.kind == "diffusion_lm":
            return dl.trained_diffusion_lm(self.model, self.train, use_cache=use_cache, desc="train diffusion LM")
        return tr.trained_model(self.model, self.train, use_cache=use_cache, desc="train tiny LM")


def models(result: str, preset: str) -> list[Model]:
    """The trained models ``result``'s ``preset`` loads, in the order its run loads them (empty for a result that
    trains none). ``result`` in :data:`RESULTS` or any other result name; ``preset`` "quick" or "full"."""
    if preset not in PRESET_NAMES:
        raise ValueError(f"preset must be one of {PRESET_NAMES}, got {preset!r}")
    if result == "tiny_lm":
        from jaxwb.sims.tiny_lm.config import PRESETS as T

        c = T[preset]
        return [
            Model("tiny_lm", mc, c.train_config(s, seed)) for s, mc in enumerate(c.models) for seed in range(c.seeds)
        ]
    if result == "mpq":
        from jaxwb.sims.mpq.config import PRESETS as M

        c = M[preset]
        n = min(c.lm_seeds, c.lm_models) if c.with_lm else 0
        return [Model("tiny_lm", c.lm.models[0], c.lm.train_config(0, m)) for m in range(n)]
    if result == "zoe_grad":
        from jaxwb.sims.zoe_grad.config import PRESETS as Z

        c = Z[preset]
        return [Model("tiny_lm", c.model, c.pretrain)]
    if result == "sparse_attention":
        from jaxwb.sims.sparse_attention.config import PRESETS as S

        c = S[preset]
        return [Model("diffusion_lm", c.model, c.train)] if c.denoiser == "train" else []
    return []


def read_record() -> dict:
    """The shipped record ``{file name: {...}}`` (empty when nothing is shipped)."""
    return json.loads(RECORD.read_text()) if RECORD.is_file() else {}


def seed_model_cache(result: str) -> list[str]:
    """Copy ``result``'s shipped weights into the model cache where it lacks them or holds other bytes under their
    name; return the file names copied.

    Only files trained by the installed JAX version are copied (the cache names carry it). A cache entry of the same
    name but other bytes was trained by this JAX elsewhere or with other XLA flags (the test suite compiles without
    LLVM's optimizations, which changes trained weights in their last bits; the cache name does not record flags):
    it is replaced by the shipped file, the model the committed outputs were made with. Each copy goes through
    a temporary file and one ``os.replace`` under the cache entry's own lock (``<name>.lock``, the lock the model
    cache takes), so a process training or loading the same entry never sees half a file. A shipped file whose
    sha256 differs from the record raises ``ValueError``.
    """
    if not isinstance(result, str):
        raise ValueError(f"result must be a result name (str), got {type(result).__name__}")
    copied = []
    for name, rec in read_record().items():
        if result not in rec["results"] or rec["jax_version"] != jax.__version__:
            continue
        dest = tr.weights_dir() / name
        if dest.is_file() and sha256_file(dest) == rec["sha256"]:
            continue
        src = WEIGHTS_DIR / name
        if not src.is_file() or sha256_file(src) != rec["sha256"]:
            raise ValueError(f"shipped weights {src} are missing or differ from weights.json's sha256 {rec['sha256']}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(dest.with_name(dest.name + ".lock"), thread_local=False):
            if dest.is_file() and sha256_file(dest) == rec["sha256"]:
                continue
            fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{name}.", suffix=".tmp")
            os.close(fd)
            try:
                shutil.copyfile(src, tmp)
                os.replace(tmp, dest)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        copied.append(name)
    return copied


def export(results=RESULTS, presets=PRESET_NAMES) -> dict:
    """Train (or load from the cache) every model of ``results`` x ``presets`` and write them with their record
    into :data:`WEIGHTS_DIR`, replacing what was shipped. Returns the record."""
    record: dict = {}
    for result in results:
        for preset in presets:
            for m in models(result, preset):
                name = m.path.name
                if name not in record:
                    m.trained()  # loaded from the cache, or trained into it
                rec = record.setdefault(
                    name,
                    {
                        "kind": m.kind,
                        "model": dataclasses.asdict(m.model),
                        "train": dataclasses.asdict(m.train),
                        "jax_version": jax.__version__,
                        "results": [],
                        "presets": [],
                    },
                )
                rec["results"] = sorted({*rec["results"], result})
                rec["presets"] = sorted({*rec["presets"], preset})
    WEIGHTS_DIR.mkdir(parents=True, exist_ok=True)
    for old in WEIGHTS_DIR.glob("*.eqx"):
        if old.name not in record:
            old.unlink()
    for name, rec in record.items():
        shutil.copyfile(tr.weights_dir() / name, WEIGHTS_DIR / name)
        rec["sha256"] = sha256_file(WEIGHTS_DIR / name)
        rec["bytes"] = (WEIGHTS_DIR / name).stat().st_size
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def retrain(name: str) -> bool:
    """Train the shipped model ``name`` again from scratch into an empty model cache (a temporary
    ``WORKBENCH_CACHE``, restored after) and compare the file the cache writes with the shipped one byte for byte.
    Returns True when they are equal."""
    rec = read_record()
    if name not in rec:
        raise ValueError(f"name must be a shipped weights file, one of {sorted(rec)}; got {name!r}")
    match = [m for r in rec[name]["results"] for p in rec[name]["presets"] for m in models(r, p) if m.path.name == name]
    if not match:
        raise ValueError(f"no preset of {rec[name]['results']} uses {name} any more: run --export")
    old = os.environ.get("WORKBENCH_CACHE")
    with tempfile.TemporaryDirectory() as d:
        os.environ["WORKBENCH_CACHE"] = d
        try:
            match[0].trained()
            return sha256_file(match[0].path) == rec[name]["sha256"]
        finally:
            if old is None:
                os.environ.pop("WORKBENCH_CACHE", None)
            else:
                os.environ["WORKBENCH_CACHE"] = old


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m jaxwb.sims.core.weights", description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--export", action="store_true", help="write every preset's trained models into the package")
    g.add_argument("--retrain", metavar="NAME", help="train a shipped model again and compare it byte for byte")
    args = p.parse_args(argv)
    if args.export:
        rec = export()
        print(f"wrote {len(rec)} files, {sum(r['bytes'] for r in rec.values()) / 1e6:.1f} MB, into {WEIGHTS_DIR}")
        return 0
    same = retrain(args.retrain)
    print(f"{args.retrain}: {'identical to' if same else 'DIFFERS from'} the shipped file")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
