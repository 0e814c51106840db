"""The results: the kernel goals (``docs/kernels.md``) met or missed, the figure (png) and the table on stdout."""

from __future__ import annotations

import math
from pathlib import Path

from benchmarks.gpu_check.bench_attention import SPARSITIES


def _find(records, **kw):
    return [r for r in records if all(r.get(k) == v for k, v in kw.items())]


MATMUL_IMPLS = ("triton", "triton_bitplace", "triton_dequant_dot")  # fp4_matmul: old and new variants
QUANT_IMPLS = ("triton", "triton_masked")


def _best(records, impls, **kw):
    """The fastest timed record among ``impls`` matching ``kw`` (None if none was timed)."""
    timed = [r for impl in impls for r in _find(records, impl=impl, **kw) if r.get("time_s")]
    return min(timed, key=lambda r: r["time_s"], default=None)


def _goals_matmul(records, goal):
    for M in sorted({r.get("M") for r in _find(records, section="matmul") if r.get("M")}):
        best = _best(records, MATMUL_IMPLS, section="matmul", M=M)
        peer = _best(records, ("bf16_dense",), section="matmul", M=M)
        ratio = best["time_s"] / peer["time_s"] if best and peer else None
        which = f" ({best['impl']} {best.get('config') or ''})" if best else ""
        if M <= 16:
            note = which + ("" if ratio is None else f"; stretch <= 0.35 (Marlin-class): {ratio <= 0.35}")
            goal(f"fp4_matmul M={M}: time <= 0.6x bf16 matmul", ratio, 0.6, None if ratio is None else ratio <= 0.6,
                 note, le=True)  # fmt: skip
        elif M >= 128:
            goal(f"fp4_matmul M={M}: time <= 1.2x bf16 matmul", ratio, 1.2, None if ratio is None else ratio <= 1.2,
                 which, le=True)  # fmt: skip


def _goals_quant(records, goal):
    for op in sorted({r["op"] for r in _find(records, section="quant")}):
        best = _best(records, QUANT_IMPLS, section="quant", op=op)
        f = best.get("frac_measured_hbm") if best else None
        datasheet = best.get("frac_peak_hbm") if best else None
        note = "" if datasheet is None else f"{100 * datasheet:.0f}% of the data sheet"
        if op == "razer_activation_quantize":
            xla = _best(records, ("xla",), section="quant", op=op)
            ratio = xla["time_s"] / best["time_s"] if best and xla else None
            goal(f"{op}: at least as fast as its XLA path", ratio, 1.0, None if ratio is None else ratio >= 1.0)
        target = 0.7 if op.endswith("_quantize") else 0.85
        goal(
            f"{op} >= {100 * target:.0f}% of the measured ceiling", f, target, None if f is None else f >= target, note
        )


def _goals_fwht(records, goal):
    for r in _find(records, section="fwht", impl="triton"):
        d = r.get("d", 0)
        if d > 4096:
            continue
        f = r.get("frac_measured_hbm") if r.get("time_s") else None
        dense = _best(records, ("dense_rotation",), section="fwht", d=d)
        ratio = dense["time_s"] / r["time_s"] if dense and r.get("time_s") else None
        note = "" if ratio is None else f"dense-rotation time / fwht time {ratio:.2f} (physical ~d/490 = {d / 490:.2f})"
        goal(f"fwht f32 d={d} >= 75% of the measured ceiling", f, 0.75, None if f is None else f >= 0.75, note)
        e = r.get("rel_err_f64")
        goal(f"fwht f32 d={d}: rel. error vs float64 <= 1e-6", e, 1e-6, None if e is None else e <= 1e-6, le=True)


def _goals_block_sparse(records, goal):
    Lmax = max((r.get("L", 0) for r in _find(records, section="block_sparse")), default=0)
    dense_best = _best(records, ("triton", "triton_exp2", "mosaic_gpu", "xla", "cudnn", "jax_fa3_mgpu"),
                       section="attention", L=Lmax)  # fmt: skip
    for r in _find(records, section="block_sparse", L=Lmax):
        sp, ideal, s = r.get("speedup_vs_dense"), r["ideal_speedup"], r["sparsity"]
        if s > 0.95:
            continue
        frac = None if sp is None else sp / ideal
        t = 0.85 if s <= 0.9 else 0.7
        goal(f"block-sparse {r['impl']} L={Lmax} s={s}: >= {t} of ideal vs its dense kernel", frac, t,
             None if frac is None else frac >= t, "dense kernel of the same family (autotuned tiles)")  # fmt: skip
        user = dense_best["time_s"] / r["time_s"] if dense_best and r.get("time_s") else None
        tu = (0.8 if s <= 0.9 else 0.65) * ideal
        why = f"best dense: {dense_best['impl']}" if dense_best else ""
        goal(f"block-sparse {r['impl']} L={Lmax} s={s}: >= {tu / ideal:.2f}/(1-s) vs the best dense", user, tu,
             None if user is None else user >= tu, why)  # fmt: skip


def _goals_attention(records, goal):
    for L in sorted({r.get("L") for r in _find(records, section="attention") if 4096 <= (r.get("L") or 0) <= 16384}):
        cudnn = _best(records, ("cudnn",), section="attention", L=L)
        for impls, t in ((("mosaic_gpu",), 0.9), (("triton", "triton_exp2"), 0.65)):
            impl = impls[0]
            ours = _best(records, impls, section="attention", L=L)
            ratio = cudnn["time_s"] / ours["time_s"] if cudnn and ours else None
            goal(f"attention bf16 L={L}: {impl} >= {t}x cuDNN", ratio, t, None if ratio is None else ratio >= t)


def goals(records, peaks, dry_run: bool) -> list[dict]:
    """The kernel goals (``docs/kernels.md``) against the ceilings measured in the same run: each with measured,
    target, met (None when not measured or a dry run) and a note. Bandwidth goals use ``frac_measured_hbm``
    (bytes / time / the largest measured ceiling: XLA copy, Pallas copy with the quantizers' tile, bf16 GEMV
    read rate); the data-sheet fraction is in the note. Ratios are time ratios (<= goals say ``le``)."""
    out = []

    def goal(name, measured, target, met, why="", le=False):
        out.append(dict(goal=name, measured=measured, target=target, met=None if dry_run else met, note=why, le=le))

    for section_goals in (_goals_matmul, _goals_quant, _goals_fwht, _goals_block_sparse, _goals_attention):
        section_goals(records, goal)
    if not peaks:
        for g in out:
            g["note"] = (g["note"] + "; " if g["note"] else "") + "data-sheet peak unknown for this device"
    return out


SECTIONS = ("attention", "block_sparse", "quant", "fwht", "inquant", "matmul")


def _measured(records, section: str) -> bool:
    """Whether ``section`` has a timed record (it may not: not run, cut by a time limit, or failed)."""
    return any(r.get("time_s") for r in _find(records, section=section))


def _empty_note(ax, result: dict, section: str) -> None:
    """Say so on a panel whose section was not measured."""
    if not _measured(result["records"], section):
        ax.text(0.5, 0.5, f"{section}: not measured in this run", ha="center", va="center", transform=ax.transAxes)


def legend_if_drawn(ax) -> None:
    """The panel's legend, unless nothing was drawn (an empty record draws no line)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def plot_attention(ax, result: dict) -> None:
    """Dense attention: FLOP/s (or the fraction of the bf16 peak) against L, per implementation."""
    recs = result["records"]
    peaks = result["peaks"]
    c = result.get("measured_ceilings") or {}
    key = "frac_peak_flops" if peaks else "tflops"
    for impl in ("triton", "triton_exp2", "mosaic_gpu", "xla", "cudnn", "jax_fa3_mgpu"):
        pts = [(r["L"], r[key]) for r in _find(recs, section="attention", impl=impl) if r.get(key)]
        if pts:
            ax.plot(*zip(*pts, strict=True), "o-", label=impl)
    if peaks and c.get("bf16_matmul_flops"):
        ax.axhline(c["bf16_matmul_flops"] / peaks["bf16_flops"], color="k", ls=":", label="measured bf16 matmul")
    _empty_note(ax, result, "attention")
    ax.set(
        xscale="log",
        xlabel="sequence length L (tokens)",
        ylabel="fraction of bf16 peak FLOP/s" if peaks else "TFLOP/s",
        title="dense attention (non-causal)",
    )
    legend_if_drawn(ax)


def plot_block_sparse(ax, result: dict) -> None:
    """Block-sparse attention: speedup over the same family's dense kernel against block sparsity."""
    import numpy as np

    recs = result["records"]
    sp = np.array(SPARSITIES)
    ax.plot(sp, 1 / (1 - sp), "k--", label="ideal 1/(1-s)")
    ax.plot(sp, 0.8 / (1 - sp), "k:", label="goal 0.8/(1-s)")
    for impl, mk in (("triton", "o-"), ("mosaic_gpu", "s-")):
        for L in sorted({r["L"] for r in _find(recs, section="block_sparse", impl=impl)}):
            pts = [
                (r["sparsity"], r["speedup_vs_dense"])
                for r in _find(recs, section="block_sparse", impl=impl, L=L)
                if r.get("speedup_vs_dense")
            ]
            if pts:
                ax.plot(*zip(*pts, strict=True), mk, label=f"{impl} L={L}")
    ax.set(
        yscale="log",
        xlabel="block sparsity s",
        ylabel="speedup over the same family's dense kernel",
        title="block-sparse attention",
    )
    ax.legend(fontsize=7)


def plot_bandwidth(ax, result: dict) -> None:
    """Memory-bound kernels (quantizers, FWHT, InQuant): achieved bandwidth as a fraction of the largest ceiling
    measured in the run (GB/s when none was measured), old and new variants and XLA, with the goals."""
    import numpy as np

    recs = result["records"]
    measured = any(r.get("frac_measured_hbm") for r in recs)
    key = "frac_measured_hbm" if measured else "gbps"
    impls = ("triton", "triton_masked", "xla", "xla_kron")
    ops = []
    for sec in ("quant", "fwht", "inquant"):
        for r in _find(recs, section=sec):
            if r.get(key) and r["impl"] in impls:
                ops.append((f"{r['op']}\n{r['shape']}" if sec == "fwht" else r["op"], r["impl"], r[key]))
    labels = list(dict.fromkeys(o[0] for o in ops))
    h = 0.8 / len(impls)
    for j, impl in enumerate(impls):
        vals = [next((o[2] for o in ops if o[0] == lab and o[1] == impl), 0.0) for lab in labels]
        ax.barh(np.arange(len(labels)) + h * j, vals, height=h, label=impl)
    if measured:
        for x, ls, what in ((0.7, ":", "quantize"), (0.85, "--", "dequantize"), (0.75, "-.", "FWHT")):
            ax.axvline(x, color="k", ls=ls, lw=0.8, label=f"goal {100 * x:.0f}% ({what})")
    _empty_note(ax, result, "quant")
    ax.set_yticks(np.arange(len(labels)) + 0.4 - h / 2, labels, fontsize=6)
    ax.set(
        xlabel="fraction of the measured bandwidth ceiling" if measured else "GB/s",
        title="memory-bound kernels: achieved bandwidth",
    )
    ax.legend(fontsize=7)


def plot_fwht(ax, result: dict) -> None:
    """FWHT: speedup over the dense rotation x @ H against d, with the d / (4 log2 d) goal."""
    import numpy as np

    recs = result["records"]
    ds = sorted({r["d"] for r in _find(recs, section="fwht")})
    for impl, mk in (("triton", "o-"), ("xla", "s--"), ("xla_kron", "d--")):
        spd = []
        for d in ds:
            p = [r for r in _find(recs, section="fwht", impl=impl, d=d) if r.get("time_s")]
            q = [r for r in _find(recs, section="fwht", impl="dense_rotation", d=d) if r.get("time_s")]
            spd.append(q[0]["time_s"] / p[0]["time_s"] if p and q else np.nan)
        if ds:
            ax.plot(ds, spd, mk, label=f"{impl} fwht: dense rotation time / fwht time")
    if ds:
        ax.plot(ds, [d / (4 * math.log2(d)) for d in ds], "k^:", label="goal d / (4 log2 d)")
        ax.axhline(1.0, color="gray", lw=0.8)
    _empty_note(ax, result, "fwht")
    ax.set(
        xscale="log", yscale="log", xlabel="transform length d", ylabel="speedup", title="FWHT vs dense rotation x @ H"
    )
    legend_if_drawn(ax)


def plot_matmul(ax, result: dict) -> None:
    """fp4_matmul (W4A16, NVFP4 weight) vs a bf16 dense matmul: time per call against M."""
    recs = result["records"]
    for impl in (*MATMUL_IMPLS, "xla", "bf16_dense"):
        pts = [(r["M"], r["time_s"] * 1e6) for r in _find(recs, section="matmul", impl=impl) if r.get("time_s")]
        if pts:
            ax.plot(*zip(*pts, strict=True), "o-", label=impl)
    _empty_note(ax, result, "matmul")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="rows M of x (1, 16 = decode)",
        ylabel="time per call (us)",
        title="fp4_matmul (W4A16, NVFP4 weight) vs bf16 dense",
    )
    legend_if_drawn(ax)


def plot_goals(ax, result: dict) -> None:
    """The kernel goals (met / missed), the sections not measured and the test summary, as text."""
    recs = result["records"]
    ax.axis("off")
    lines = []
    for g in result["goals"]:
        mark = {True: "MET ", False: "MISS", None: " -- "}[g["met"]]
        m = "not measured" if g["measured"] is None else f"{g['measured']:.3g}"
        lines.append(f"[{mark}] {g['goal'][:64]}: {m} ({'<=' if g.get('le') else '>='} {g['target']:.3g})")
    missing = [sec for sec in SECTIONS if not _measured(recs, sec)]
    if missing:
        lines.append(f"not measured in this run: {', '.join(missing)}")
    t = result.get("tests") or {}
    lines.append(
        f"tests ({t.get('forced', '')}): {t.get('summary') or ('skipped' if t.get('skipped') else t.get('rc'))}"
    )
    ax.text(0, 1, "\n".join(lines[:34]) or "no goals", va="top", family="monospace", fontsize=6.5)
    ax.set_title("kernel goals (against the ceilings measured in this run)")


def plot(result: dict, path: Path):
    """The 2 x 3 summary figure of a run (one panel function per concept) saved as ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(2, 3, figsize=(17, 9.5))
    title = f"Kernels on {result['device']['kind']} ({result['device']['peak_table']}), jax {result['jax_version']}"
    c = result.get("measured_ceilings") or {}
    if c.get("copy_bytes_per_s"):
        title += (
            f"; measured: copy {c['copy_bytes_per_s'] / 1e12:.2f} TB/s, Pallas copy "
            f"{(c.get('pallas_copy_bytes_per_s') or 0) / 1e12:.2f}, bf16 GEMV read "
            f"{(c.get('gemv_read_bytes_per_s') or 0) / 1e12:.2f}, bf16 matmul "
            f"{(c.get('bf16_matmul_flops') or 0) / 1e12:.0f} TFLOP/s"
        )
    if result["dry_run"]:
        title = "DRY RUN (CPU, interpret mode, tiny sizes): timings are meaningless. " + title
    fig.suptitle(title, fontsize=11)
    for ax, panel in zip(
        axs.flat, (plot_attention, plot_block_sparse, plot_bandwidth, plot_fwht, plot_matmul, plot_goals), strict=True
    ):
        panel(ax, result)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(result: dict) -> str:
    rows = [
        f"{'section':<12} {'op':<26} {'impl':<15} {'shape':<28} {'time':>10} {'TFLOP/s':>8} {'GB/s':>8} "
        f"{'%peak':>6} {'%meas':>6} {'x dense':>7} {'err':>8}  config / note"
    ]
    for r in result["records"]:
        t = f"{r['time_s'] * 1e6:.1f}us" if r.get("time_s") else "-"
        frac = r.get("frac_peak_flops") or r.get("frac_peak_hbm")
        fmeas = r.get("frac_measured_flops") or r.get("frac_measured_hbm")
        err = r.get("max_abs_err_vs_xla")
        rows.append(
            f"{r['section']:<12} {r['op']:<26} {r['impl']:<15} {r['shape']:<28} {t:>10} "
            f"{r.get('tflops', 0) or 0:>8.2f} {r.get('gbps', 0) or 0:>8.1f} "
            f"{'' if frac is None else f'{100 * frac:.1f}':>6} "
            f"{'' if fmeas is None else f'{100 * fmeas:.1f}':>6} "
            f"{'' if r.get('speedup_vs_dense') is None else f'{r["speedup_vs_dense"]:.2f}':>7} "
            f"{'' if err is None else f'{err:.1e}':>8}  {r.get('config') or ''} {r.get('error') or r.get('note') or ''}"
        )
    for g in result["goals"]:
        mark = {True: "MET", False: "MISSED", None: "not evaluated (dry run)" if result["dry_run"] else "NOT MEASURED"}[
            g["met"]
        ]
        m = "n/a" if g["measured"] is None else f"{g['measured']:.3g}"
        rows.append(
            f"goal: {g['goal']}: measured {m}, target {'<=' if g.get('le') else '>='} {g['target']:.3g}: {mark} "
            f"{g['note']}"
        )
    c = result.get("measured_ceilings") or {}
    if c.get("copy_bytes_per_s"):
        bw = ", ".join(
            f"{k.removesuffix('_bytes_per_s')} {c[k] / 1e12:.3g} TB/s"
            for k in ("copy_bytes_per_s", "pallas_copy_bytes_per_s", "gemv_read_bytes_per_s", "ceiling_bytes_per_s")
            if c.get(k)
        )
        rows.append(
            f"measured ceilings: {bw}; bf16 matmul {(c.get('bf16_matmul_flops') or 0) / 1e12:.3g} TFLOP/s; "
            "%peak is of the data sheet, %meas of the largest bandwidth ceiling (or the matmul)"
        )
    return "\n".join(rows)
