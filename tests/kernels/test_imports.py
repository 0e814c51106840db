"""pallas_kernels stands on jax: the only project modules it imports are ``jaxwb.theory.checking`` (the one checkify
switch shared with ``theory``), ``jaxwb.theory.zoe_grad`` (the surrogate-gradient laws of ``fake_quant``) and
``jaxwb.theory.mpq`` (the GPTQ / MPQ solvers behind ``quantize_model(method=...)``, imported when a calibrated
method is asked for), and those (with what they import from ``theory``) import nothing but the standard library,
jax, numpy, jaxtyping and the kernels themselves (``theory.mpq`` takes the kernels' scales, so that its codes
dequantize bit-exactly). A static check (ast, no imports run): milliseconds, and it fails on a new import of
sims/models or of another theory module (docs/architecture.md, "Kernels")."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED_FROM_KERNELS = {"theory.checking", "theory.zoe_grad", "theory.mpq"}
THIRD_PARTY = {"jax", "jaxlib", "numpy", "jaxtyping"}
PROJECT = {"theory", "sims", "models", "pallas_kernels", "tests"}


def _imports(path: Path) -> set[str]:
    """Absolute module names imported by a file, the ``jaxwb.`` namespace dropped (``from a import b`` gives
    ``a.b`` when a is a package of the project, so ``from jaxwb.theory import zoe_grad`` is ``theory.zoe_grad``)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name.removeprefix("jaxwb.") for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            module = node.module.removeprefix("jaxwb.")
            if module == "jaxwb":
                out |= {a.name for a in node.names}
                continue
            out.add(module)
            if module in PROJECT:
                out |= {f"{module}.{a.name}" for a in node.names}
    return out


def _module_file(name: str) -> Path:
    p = ROOT.joinpath(*name.split("."))
    return p / "__init__.py" if p.is_dir() else p.with_suffix(".py")


def test_pallas_kernels_imports_only_the_two_jax_only_theory_modules():
    used = set()
    for path in sorted((ROOT / "pallas_kernels").rglob("*.py")):
        for name in _imports(path):
            top = name.split(".")[0]
            if top in PROJECT - {"pallas_kernels"}:
                if top == "theory" and name == "theory":
                    continue  # "from theory import x": checked as theory.x
                assert name in ALLOWED_FROM_KERNELS, f"{path.relative_to(ROOT)} imports {name}"
                used.add(name)
    assert used == ALLOWED_FROM_KERNELS, used  # an allowance no longer used is deleted here


def test_the_theory_modules_it_imports_stand_on_jax_alone():
    todo, seen = ["theory", *sorted(ALLOWED_FROM_KERNELS)], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for imp in _imports(_module_file(name)):
            top = imp.split(".")[0]
            if top == "theory":
                if _module_file(imp).exists():
                    todo.append(imp)
                continue
            if top == "pallas_kernels":
                continue  # the kernels themselves (their imports are the test above)
            assert top in THIRD_PARTY or top in sys.stdlib_module_names or top == "__future__", f"{name} imports {imp}"
    assert {n for n in seen if not n.startswith("theory.mpq")} <= {
        "theory",
        "theory.checking",
        "theory.validate",
        "theory.zoe_grad",
    }, seen
