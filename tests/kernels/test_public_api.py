"""Every documented public name imports from its documented path, every ``__all__`` entry resolves, and every
dotted ``jaxwb.pallas_kernels...`` path written in the package's docstrings and comments names something that
exists. Importing ``jaxwb.pallas_kernels.quant`` / ``.attention`` does not load equinox or flax (the drop-in
layers are imported on first access)."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

DOCUMENTED = {
    "jaxwb.pallas_kernels": [
        "checked",
        "IMPLEMENTATIONS",
        "Implementation",
        "QuantizedLinear",
        "quantize_model",
        "make_attention_fn",
        "swap_attention",
    ],
    "jaxwb.pallas_kernels.quant": [
        "nvfp4_quantize",
        "nvfp4_dequantize",
        "mxfp4_quantize",
        "mxfp4_dequantize",
        "razer_quantize",
        "razer_dequantize",
        "fp4_matmul",
        "fwht",
        "rht_quantize",
        "rht_dequantize",
        "inquant_pack",
        "inquant_unpack",
        "fake_quant",
        "QuantizedArray",
        "RHTQuantized",
        "InQuantPacked",
        "QuantBlockSizes",
        "MatmulBlockSizes",
        "HadamardBlockSizes",
        "QuantizedLinear",
        "quantize_model",
        "quantize_weight",
    ],
    "jaxwb.pallas_kernels.attention": [
        "flash_attention",
        "block_sparse_attention",
        "threshold_retrieve",
        "threshold_attention",
        "build_key_index",
        "retrieval_block_lists",
        "attention_reference",
        "mask_to_block_lists",
        "block_lists_to_mask",
        "expand_block_mask",
        "AttentionBlockSizes",
        "Retrieval",
        "make_attention_fn",
        "swap_attention",
        "EqxSparseAttention",
        "NnxSparseAttention",
    ],
}


@pytest.mark.parametrize("module", sorted(DOCUMENTED))
def test_documented_names_import_from_their_documented_path(module):
    mod = importlib.import_module(module)
    for name in DOCUMENTED[module]:
        assert name in mod.__all__, f"{module}.__all__ lacks {name}"
        exec(f"from {module} import {name}", {})


@pytest.mark.parametrize("module", sorted(DOCUMENTED))
def test_every_all_entry_resolves(module):
    mod = importlib.import_module(module)
    assert len(set(mod.__all__)) == len(mod.__all__)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, f"{module}.{name}"


def _resolve(dotted: str) -> bool:
    parts = dotted.split(".")
    for i in range(len(parts), 1, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for p in parts[i:]:
                obj = getattr(obj, p)
        except AttributeError:
            return False
        return True
    return False


def test_dotted_paths_in_the_package_sources_exist():
    pattern = re.compile(r"jaxwb\.pallas_kernels(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
    missing = []
    for path in sorted((ROOT / "pallas_kernels").rglob("*.py")):
        for dotted in sorted(set(pattern.findall(path.read_text()))):
            if not _resolve(dotted):
                missing.append(f"{path.relative_to(ROOT)}: {dotted}")
    assert not missing, missing


def test_importing_the_ops_does_not_load_equinox_or_flax():
    code = (
        "import sys, jaxwb.pallas_kernels, jaxwb.pallas_kernels.quant, jaxwb.pallas_kernels.attention; "
        "print(sorted(m for m in ('equinox', 'flax') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
