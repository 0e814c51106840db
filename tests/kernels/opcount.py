"""Per-element operation counts of a Pallas kernel's Triton IR, from its CUDA lowering on a CPU host.

``triton_modules(f, *specs)`` lowers ``jax.jit(f)`` for CUDA (:func:`tests.kernels.lowering.lower_text`'s
abstract H100 mesh), takes the Triton-IR bytecode that each ``__gpu$xla.gpu.triton`` custom call carries and
parses it (``jaxlib.mlir`` with the Triton dialect registered). ``count_ops(module)`` walks it and weights every
operation by the number of elements of its result (a ``tensor<64x128xi32>`` add counts 8192), ops inside an
``scf.for`` by the loop's constant trip count, and the combiner of a ``tt.reduce`` by the elements reduced.
Divided by the elements a program processes, this is the instruction-class count per element that predicted
the H200 times within 15-20% (``/work/shared/notes/kernels_gpu.md``); Triton's own passes (CSE, LICM,
constant folding) and the PTX compiler remove some of it, so the numbers are an upper-bound *model*, compared
only with themselves (a recorded budget) to catch an instruction regression.

Classes:
  * ``alu``: ``arith.*`` and ``math.*`` compute ops (add, mul, and, shift, compare, select, min/max, fma, ...)
    on the *data* path; ``arith.constant`` excluded;
  * ``cvt``: numeric conversions (``arith.ext*/trunc*/*itofp/fpto*``, ``tt.fp_to_fp``);
  * ``layout``: ``tt.reshape``, ``tt.trans``, ``tt.broadcast``, ``tt.expand_dims``, ``tt.join``, ``tt.split``
    (each a register shuffle or a shared-memory round trip once Triton assigns layouts);
  * ``addr``: ALU ops that only compute pointers and masks (the backward slice of ``tt.addptr`` offsets and of
    load/store masks that no data value uses: affine index math that Triton folds into its address registers),
    reported apart and not in ``alu``;
  * ``dot``: multiply-accumulates of ``tt.dot`` (M * N * K), reported apart;
  * ``extern``: ``tt.extern_elementwise`` calls (libdevice: ``exp`` -> ``__nv_expf``, ``exp2`` -> ``__nv_exp2f``),
    each several instructions once compiled, reported apart (and by symbol, ``extern:__nv_expf``).
Bitcasts (``arith.bitcast``, ``tt.bitcast``) are free and not counted.
"""

from __future__ import annotations

import collections
import math

import jax
from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _triton_ext

from tests.kernels.lowering import MESHES

CVT = {
    "arith.extui", "arith.extsi", "arith.extf", "arith.trunci", "arith.truncf", "arith.sitofp", "arith.uitofp",
    "arith.fptosi", "arith.fptoui", "tt.fp_to_fp",
}  # fmt: skip
LAYOUT = {"tt.reshape", "tt.trans", "tt.broadcast", "tt.expand_dims", "tt.join", "tt.split"}
FREE = {"arith.constant", "arith.bitcast", "tt.bitcast"}


def triton_modules(f, *specs) -> list[ir.Module]:
    """The Triton-IR module of every Pallas Triton call in ``jax.jit(f)`` lowered for CUDA (on any host)."""
    with jax.sharding.use_abstract_mesh(MESHES["cuda"]):
        low = jax.jit(f).trace(*specs).lower(lowering_platforms=("cuda",))
    blobs: list[bytes] = []

    def walk(op):
        for region in op.regions:
            for block in region.blocks:
                for o in block.operations:
                    if o.name == "stablehlo.custom_call" and "mhlo.backend_config" in o.attributes:
                        cfg = o.attributes["mhlo.backend_config"]
                        if "ir" in cfg:
                            blobs.append(ir.StringAttr(cfg["ir"]).value_bytes)
                    walk(o)

    walk(low.compiler_ir("stablehlo").operation)
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    _triton_ext.register_dialect(ctx)
    with ctx:
        return [ir.Module.parse(b) for b in blobs]


def _numel(value) -> int:
    return math.prod(_shape(value.type))


def _shape(t) -> list[int]:
    """The shape of a ranked tensor type, [] for a scalar."""
    try:
        return list(ir.RankedTensorType(t).shape)
    except ValueError:
        return []


def _trip_count(op) -> int:
    """Constant trip count of an ``scf.for`` (1 when a bound is not a constant)."""
    vals = []
    for operand in list(op.operands)[:3]:
        owner = operand.owner
        if not isinstance(owner, ir.Block) and owner.name == "arith.constant":
            vals.append(ir.IntegerAttr(owner.attributes["value"]).value)
        elif not isinstance(owner, ir.Block) and owner.name == "arith.addi":
            a, b = (o.owner for o in owner.operands)
            if all(not isinstance(x, ir.Block) and x.name == "arith.constant" for x in (a, b)):
                vals.append(sum(ir.IntegerAttr(x.attributes["value"]).value for x in (a, b)))
            else:
                return 1
        else:
            return 1
    lo, hi, step = vals
    return max(0, -(-(hi - lo) // step))


def _ops(module):
    """(op, weight multiplier) for every op, loops unrolled by their trip count."""
    out = []

    def walk(block, mult):
        for op in block.operations:
            out.append((op, mult))
            inner = mult * (_trip_count(op) if op.name == "scf.for" else 1)
            if op.name == "tt.reduce":
                inner = mult * _numel(op.operands[0])  # the combiner runs once per element reduced
            for region in op.regions:
                for b in region.blocks:
                    walk(b, inner)

    for op in module.body.operations:
        for region in op.regions:
            for b in region.blocks:
                walk(b, 1)
    return out


def _address_only(ops) -> set:
    """Ops whose results feed only pointer offsets and masks (see the module docstring)."""
    data_roots, addr_roots = [], []
    for op, _ in ops:
        operands = list(op.operands)
        if op.name == "tt.addptr":
            addr_roots.append(operands[1])
        elif op.name in ("tt.load", "tt.store"):
            addr_roots.extend(operands[2 if op.name == "tt.store" else 1 :])  # masks (and other)
            if op.name == "tt.store":
                data_roots.append(operands[1])
        elif op.name not in FREE and not op.name.startswith("arith.") and not op.name.startswith("math."):
            if op.name not in CVT and op.name not in LAYOUT and op.name not in ("tt.splat", "tt.make_range"):
                data_roots.extend(operands)  # dot, reduce, yield, for iter args, ...

    def slice_of(roots, stop=()):
        seen, stack = set(), list(roots)
        while stack:
            v = stack.pop()
            owner = v.owner
            if isinstance(owner, ir.Block):
                continue
            key = owner
            if key in seen:
                continue
            seen.add(key)
            if owner.name not in stop:
                stack.extend(owner.operands)
        return seen

    data = slice_of(data_roots, stop=("tt.load", "tt.addptr"))  # a loaded value's pointer is no data
    return {op for op in slice_of(addr_roots) if op not in data}


def count_ops(module) -> collections.Counter:
    """Weighted op counts by class (``alu``, ``cvt``, ``layout``, ``addr``, ``dot``) and by op name."""
    ops = _ops(module)
    addr = _address_only(ops)
    c: collections.Counter = collections.Counter()
    for op, mult in ops:
        name = op.name
        if name in FREE or not op.results:
            continue
        n = _numel(op.results[0]) * mult
        if name == "tt.dot":
            c["dot"] += mult * math.prod(_shape(op.results[0].type)) * _shape(op.operands[0].type)[-1]
            continue
        if name == "tt.extern_elementwise":
            c["extern"] += n
            c["extern:" + ir.StringAttr(op.attributes["symbol"]).value] += n
            continue
        if name in CVT:
            cls = "cvt"
        elif name in LAYOUT:
            cls = "layout"
        elif name.startswith("arith.") or name.startswith("math."):
            cls = "addr" if op in addr else "alu"
        else:
            continue
        c[cls] += n
        if cls != "addr":
            c[name] += n
    return c


def per_element(f, *specs, elements: int) -> dict[str, float]:
    """Op counts of the single Triton kernel in ``f`` divided by ``elements`` (what one program processes)."""
    mods = triton_modules(f, *specs)
    assert len(mods) == 1, f"expected one Triton kernel, got {len(mods)}"
    return {k: v / elements for k, v in count_ops(mods[0]).items()}
