"""Instruction dump of one old and one new call of the W4A16 matmul and of the NVFP4 quantizer.

    python -m benchmarks.gpu_check.dump CASE --out DIR [--dry-run]      (CASE in CASES; one case per process)

XLA's dump flags are process-wide and must be set before jax starts, so each case runs in its own process
(``.ci/gpu_check.sh`` loops over :data:`CASES`, each with its own ``timeout``). The case's jitted call is lowered
and compiled (not run) with ``--xla_dump_to=DIR/CASE``: on a GPU XLA writes the module's LLVM IR and PTX,
which hold the Pallas Triton kernel, so the kernel's PTX instructions are counted per ``.entry`` by class
(``DIR/CASE/summary.json``); beside them the Triton-IR ops per element of the same call from its CPU-style
lowering (``tests/kernels/opcount.py``), so the model and the device compiler's output can be compared. A dry
run (CPU) dumps the HLO only, with tiny shapes.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
from pathlib import Path

CASES = ("w4a16_old", "w4a16_new", "nvfp4_quantize_old", "nvfp4_quantize_new")
PTX_CLASSES = {
    "load": ("ld.", "cp.async", "ldmatrix"),
    "store": ("st.",),
    "mma": ("mma.", "wgmma."),
    "cvt": ("cvt.",),
    "int": ("and.", "or.", "xor.", "shl.", "shr.", "add.s", "add.u", "sub.s", "sub.u", "mul.lo", "mad.lo", "lop3.",
            "prmt.", "selp.", "setp.", "bfe.", "bfi.", "min.s", "min.u", "max.s", "max.u", "not."),
    "float": ("add.f", "add.rn", "sub.f", "mul.f", "mul.rn", "fma.", "min.f", "max.f", "neg.", "abs.", "div.", "rcp."),
}  # fmt: skip


def _call(case: str, dry: bool):
    """(jitted function, args, Triton-IR elements per program) of a case."""
    import jax
    import jax.numpy as jnp

    from jaxwb.pallas_kernels.quant import QuantBlockSizes, fp4_matmul, nvfp4_quantize
    from jaxwb.pallas_kernels.quant import reference as ref

    impl = "interpret" if dry else "triton"
    if case.startswith("w4a16"):
        n = k = 256 if dry else 16384
        w = jax.jit(ref.nvfp4_quantize)(jax.random.normal(jax.random.key(0), (n, k), jnp.float32))
        x = jax.random.normal(jax.random.key(1), (16, k), jnp.float32).astype(jnp.bfloat16)
        decode = "bitplace" if case.endswith("new") else "interleaved"
        f = jax.jit(lambda x, w: fp4_matmul(x, w, implementation=impl, decode=decode))
        return f, (x, w)
    m = k = 64 if dry else 8192
    x = jax.random.normal(jax.random.key(2), (m, k), jnp.float32).astype(jnp.bfloat16)
    bs = QuantBlockSizes(16, 512, num_warps=8, edge="mask") if case.endswith("new") else QuantBlockSizes()
    f = jax.jit(lambda x: nvfp4_quantize(x, implementation=impl, block_sizes=bs).codes)
    return f, (x,)


def ptx_counts(folder: Path) -> dict:
    """{entry name: {class: count, "total": count}} over every ``*.ptx`` under ``folder``."""
    out: dict = {}
    for path in sorted(folder.rglob("*.ptx")):
        entry = None
        for line in path.read_text(errors="replace").splitlines():
            m = re.match(r"\s*\.(?:visible\s+)?\.?entry\s+(\S+?)\s*\(", line) or re.match(
                r"\.visible \.entry (\S+)\(", line
            )
            if m:
                entry = m.group(1)
                out[entry] = collections.Counter()
                continue
            op = line.strip().split(maxsplit=1)[0] if line.strip() else ""
            if entry is None or not op or op.startswith((".", "//", "{", "}", "(", ")", "$", "@")) or op.endswith(":"):
                continue
            out[entry]["total"] += 1
            for cls, prefixes in PTX_CLASSES.items():
                if op.startswith(prefixes):
                    out[entry][cls] += 1
                    break
    return {k: dict(v) for k, v in out.items()}


def model_counts(case: str) -> dict:
    """The Triton-IR per-element counts of the case's kernel at the op-budget test's tile (tests/kernels)."""
    try:
        from tests.kernels.test_op_budget import counts

        name = {
            "w4a16_old": "fp4_matmul_nvfp4",
            "w4a16_new": "fp4_matmul_nvfp4_bitplace",
            "nvfp4_quantize_old": "quantize_nvfp4",
            "nvfp4_quantize_new": "quantize_nvfp4",
        }[case]
        return {k: round(v, 3) for k, v in counts(name).items() if k in ("alu", "cvt", "layout", "addr", "dot")}
    except Exception as e:  # the model is a side note: never let it cost the dump
        return {"error": f"{type(e).__name__}: {e}"[:200]}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check.dump", description=__doc__.split("\n")[0])
    ap.add_argument("case", choices=CASES)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--dry-run", action="store_true", help="CPU, interpret mode, tiny shapes (HLO only)")
    a = ap.parse_args(argv)
    folder = (a.out / a.case).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    if "jax" in sys.modules:
        print("[dump] jax already imported: XLA dump flags may not apply", file=sys.stderr)
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + f" --xla_dump_to={folder} --xla_dump_hlo_as_text"
    ).strip()
    import jax

    f, args = _call(a.case, a.dry_run)
    compiled = f.lower(*args).compile()
    (folder / "compiled_hlo.txt").write_text(compiled.as_text() or "")
    summary = dict(
        case=a.case,
        device=str(jax.devices()[0]),
        dry_run=a.dry_run,
        ptx=ptx_counts(folder),
        files=sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())[:200],
        triton_ir_per_element=model_counts(a.case),
    )
    (folder / "summary.json").write_text(json.dumps(summary, indent=1))
    kernels = {k: v for k, v in summary["ptx"].items() if "matmul" in k or "quantize" in k} or summary["ptx"]
    print(f"[dump] {a.case}: {len(summary['files'])} files; PTX per kernel entry: {kernels or 'none (no GPU)'}; "
          f"Triton-IR model per element: {summary['triton_ir_per_element']}")  # fmt: skip
    return summary


if __name__ == "__main__":
    main()
