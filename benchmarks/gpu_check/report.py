"""The results: the goals of issue 20 met or missed, the figure (png) and the table on stdout."""

from __future__ import annotations

import math
from pathlib import Path

from benchmarks.gpu_check.bench_attention import SPARSITIES


def _find(records, **kw):
    return [r for r in records if all(r.get(k) == v for k, v in kw.items())]


def goals(records, peaks, dry_run: bool) -> list[dict]:
    """Each goal: measured, target, met (None when not measured, not applicable, or a dry run)."""
    out = []

    def goal(name, measured, target, met, why=""):
        out.append(dict(goal=name, measured=measured, target=target, met=None if dry_run else met, note=why))

    for r in _find(records, section="quant", impl="pallas"):
        f = r.get("frac_peak_hbm")
        fm = r.get("frac_measured_hbm")
        goal(
            f"{r['op']} >= 70% of HBM peak",
            f,
            0.7,
            None if f is None else f >= 0.7,
            ("" if peaks else "peak unknown for this device")
            + ("" if fm is None else f" ({100 * fm:.0f}% of the measured copy bandwidth)"),
        )
    Lmax = max((r.get("L", 0) for r in _find(records, section="block_sparse")), default=0)
    for r in _find(records, section="block_sparse", L=Lmax):
        sp = r.get("speedup_vs_dense")
        target = 0.8 * r["ideal_speedup"]
        goal(
            f"block-sparse {r['impl']} L={Lmax} s={r['sparsity']}: speedup >= 0.8/(1-s)",
            sp,
            target,
            None if sp is None else sp >= target,
        )
    for r in _find(records, section="matmul", impl="pallas"):
        if r.get("M", 0) > 16 or not r.get("time_s"):
            continue
        peer = _find(records, section="matmul", impl="bf16_dense", shape=r["shape"])
        tb = peer[0].get("time_s") if peer else None
        goal(
            f"fp4_matmul faster than bf16 dense at {r['shape']}",
            None if tb is None else tb / r["time_s"],
            1.0,
            None if tb is None else tb > r["time_s"],
        )
    for r in _find(records, section="fwht", impl="pallas"):
        if r.get("d", 0) < 4096 or not r.get("time_s"):
            continue
        peer = _find(records, section="fwht", impl="dense_rotation", shape=r["shape"])
        td = peer[0].get("time_s") if peer else None
        sp = None if td is None else td / r["time_s"]
        goal(
            f"fwht speedup over dense rotation at d={r['d']} >= d/(4 log2 d)",
            sp,
            r["goal_speedup"],
            None if sp is None else sp >= r["goal_speedup"],
        )
    return out


SECTIONS = ("attention", "block_sparse", "quant", "fwht", "inquant", "matmul")


def _measured(records, section: str) -> bool:
    """Whether ``section`` has a timed record (it may not: not run, cut by a time limit, or failed)."""
    return any(r.get("time_s") for r in _find(records, section=section))


def _empty_note(ax, result: dict, section: str) -> None:
    """Say so on a panel whose section was not measured."""
    if not _measured(result["records"], section):
        ax.text(0.5, 0.5, f"{section}: not measured in this run", ha="center", va="center", transform=ax.transAxes)


def plot_attention(ax, result: dict) -> None:
    """Dense attention: FLOP/s (or the fraction of the bf16 peak) against L, per implementation."""
    recs = result["records"]
    peaks = result["peaks"]
    c = result.get("measured_ceilings") or {}
    key = "frac_peak_flops" if peaks else "tflops"
    for impl in ("pallas_triton", "mosaic_gpu", "xla", "cudnn", "jax_fa3_mgpu"):
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
    ax.legend(fontsize=8)


def plot_block_sparse(ax, result: dict) -> None:
    """Block-sparse attention: speedup over the same family's dense kernel against block sparsity."""
    import numpy as np

    recs = result["records"]
    sp = np.array(SPARSITIES)
    ax.plot(sp, 1 / (1 - sp), "k--", label="ideal 1/(1-s)")
    ax.plot(sp, 0.8 / (1 - sp), "k:", label="goal 0.8/(1-s)")
    for impl, mk in (("pallas_triton", "o-"), ("mosaic_gpu", "s-")):
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
    """Memory-bound kernels (quantizers, FWHT, InQuant): achieved bandwidth, Pallas vs XLA."""
    import numpy as np

    recs = result["records"]
    peaks = result["peaks"]
    c = result.get("measured_ceilings") or {}
    key = "frac_peak_hbm" if peaks else "gbps"
    ops = []
    for sec in ("quant", "fwht", "inquant"):
        for r in _find(recs, section=sec):
            if r.get(key) and r["impl"] in ("pallas", "xla"):
                ops.append((f"{r['op']}\n{r['shape']}" if sec == "fwht" else r["op"], r["impl"], r[key]))
    labels = list(dict.fromkeys(o[0] for o in ops))
    for j, impl in enumerate(("pallas", "xla")):
        vals = [next((o[2] for o in ops if o[0] == lab and o[1] == impl), 0.0) for lab in labels]
        ax.barh(np.arange(len(labels)) + 0.4 * j, vals, height=0.4, label=impl)
    if peaks:
        ax.axvline(0.7, color="k", ls=":", label="goal 70% (quantizers)")
        if c.get("copy_bytes_per_s"):
            ax.axvline(c["copy_bytes_per_s"] / peaks["hbm_bytes_per_s"], color="gray", ls="--", label="measured copy")
    _empty_note(ax, result, "quant")
    ax.set_yticks(np.arange(len(labels)) + 0.2, labels, fontsize=6)
    ax.set(xlabel="fraction of HBM peak" if peaks else "GB/s", title="memory-bound kernels: achieved bandwidth")
    ax.legend(fontsize=8)


def plot_fwht(ax, result: dict) -> None:
    """FWHT: speedup over the dense rotation x @ H against d, with the d / (4 log2 d) goal."""
    import numpy as np

    recs = result["records"]
    ds = sorted({r["d"] for r in _find(recs, section="fwht")})
    for impl, mk in (("pallas", "o-"), ("xla", "s--")):
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
    ax.legend(fontsize=8)


def plot_matmul(ax, result: dict) -> None:
    """fp4_matmul (W4A16, NVFP4 weight) vs a bf16 dense matmul: time per call against M."""
    recs = result["records"]
    for impl in ("pallas", "xla", "bf16_dense"):
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
    ax.legend(fontsize=8)


def plot_goals(ax, result: dict) -> None:
    """The goals of issue 20 (met / missed), the sections not measured and the test summary, as text."""
    recs = result["records"]
    ax.axis("off")
    lines = []
    for g in result["goals"]:
        mark = {True: "MET ", False: "MISS", None: " -- "}[g["met"]]
        m = "n/a" if g["measured"] is None else f"{g['measured']:.3g}"
        lines.append(f"[{mark}] {g['goal'][:60]}: {m} (target {g['target']:.3g})")
    missing = [sec for sec in SECTIONS if not _measured(recs, sec)]
    if missing:
        lines.append(f"not measured in this run: {', '.join(missing)}")
    t = result.get("tests") or {}
    lines.append(
        f"tests ({t.get('forced', '')}): {t.get('summary') or ('skipped' if t.get('skipped') else t.get('rc'))}"
    )
    ax.text(0, 1, "\n".join(lines[:34]) or "no goals", va="top", family="monospace", fontsize=6.5)
    ax.set_title("goals of issue 20")


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
            f"; measured: copy {c['copy_bytes_per_s'] / 1e12:.2f} TB/s, bf16 matmul "
            f"{c['bf16_matmul_flops'] / 1e12:.0f} TFLOP/s"
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
        mark = {True: "MET", False: "MISSED", None: "not evaluated"}[g["met"]]
        m = "n/a" if g["measured"] is None else f"{g['measured']:.3g}"
        rows.append(f"goal: {g['goal']}: measured {m}, target {g['target']:.3g}: {mark} {g['note']}")
    c = result.get("measured_ceilings") or {}
    if c.get("copy_bytes_per_s"):
        rows.append(
            f"measured ceilings: copy {c['copy_bytes_per_s'] / 1e12:.2f} TB/s (read + write), bf16 matmul "
            f"{c['bf16_matmul_flops'] / 1e12:.0f} TFLOP/s; %peak is of the data sheet, %meas of these"
        )
    return "\n".join(rows)
