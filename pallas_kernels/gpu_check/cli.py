"""The command line: ``python -m pallas_kernels.gpu_check [--dry-run] [--out DIR] ...`` (see the package doc)."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
from pathlib import Path

from pallas_kernels.gpu_check.autotune import Recorder, Settings, _err
from pallas_kernels.gpu_check.bench_attention import bench_attention, bench_block_sparse
from pallas_kernels.gpu_check.bench_quant import bench_fwht, bench_inquant, bench_matmul, bench_quant
from pallas_kernels.gpu_check.peaks import peaks_for
from pallas_kernels.gpu_check.plugin import REPO_ROOT, run_tests
from pallas_kernels.gpu_check.report import goals, plot, table

# Share of the benchmark budget each section may spend autotuning (the first config always runs).
SECTION_SHARES = dict(attention=0.25, block_sparse=0.25, quant=0.2, fwht=0.1, inquant=0.05, matmul=0.15)


def _description() -> str:
    """The first line of the package's docstring."""
    return (importlib.import_module(__package__).__doc__ or "").split("\n")[0]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m pallas_kernels.gpu_check", description=_description())
    ap.add_argument("--dry-run", action="store_true", help="CPU: interpret mode, tiny sizes, temp output dir")
    ap.add_argument("--out", type=Path, default=None, help="output dir (default figures/kernels_gpu, dry: temp)")
    ap.add_argument("--skip-tests", action="store_true", help="do not run the pytest step")
    ap.add_argument("--budget-s", type=float, default=None, help="benchmark wall budget (default 270 s GPU)")
    ap.add_argument("--test-timeout-s", type=float, default=None, help="pytest step timeout (default 180 s GPU)")
    ap.add_argument("--sections", default="attention,block_sparse,quant,fwht,inquant,matmul")
    ap.add_argument("pytest_args", nargs="*", help="after --: pytest arguments replacing the default selection")
    a = ap.parse_args(argv)

    import jax

    dev = jax.devices()[0]
    on_gpu = dev.platform == "gpu" and not a.dry_run
    if dev.platform != "gpu" and not a.dry_run:
        ap.error(f"no GPU (platform {dev.platform!r}): run with --dry-run on CPU")
    out = a.out or (Path(tempfile.mkdtemp(prefix="kernels_gpu_")) if a.dry_run else REPO_ROOT / "figures/kernels_gpu")
    s = Settings(
        dry_run=a.dry_run,
        out=Path(out),
        budget_s=a.budget_s or (60.0 if a.dry_run else 270.0),
        skip_tests=a.skip_tests,
        pytest_args=tuple(a.pytest_args),
        reps=1 if a.dry_run else 10,
        trials=1 if a.dry_run else 3,
    )
    table_name, peaks = peaks_for(dev.device_kind)
    rec = Recorder(s, peaks)
    sections = set(a.sections.split(","))
    t_start = time.perf_counter()
    dense = {}
    import jaxlib

    def make_result(tests, bench_s, partial):
        return dict(
            device=dict(kind=dev.device_kind, platform=dev.platform, name=str(dev), peak_table=table_name),
            jax_version=jax.__version__,
            jaxlib_version=jaxlib.__version__,
            dry_run=s.dry_run,
            partial=partial,
            peaks=peaks,
            records=rec.records,
            tuned=rec.tuned,
            goals=goals(rec.records, peaks, s.dry_run),
            tests=tests,
            bench_wall_s=bench_s,
            wall_s=time.perf_counter() - t_start,
            command=" ".join(["python -m pallas_kernels.gpu_check", *(argv if argv is not None else sys.argv[1:])]),
        )

    s.out.mkdir(parents=True, exist_ok=True)
    save = lambda r: (s.out / "kernels_gpu.json").write_text(json.dumps(r, indent=1, default=str))
    for name, fn in (
        ("attention", lambda: bench_attention(rec, s, on_gpu)),
        ("block_sparse", lambda: bench_block_sparse(rec, s, on_gpu, dense)),
        ("quant", lambda: bench_quant(rec, s)),
        ("fwht", lambda: bench_fwht(rec, s)),
        ("inquant", lambda: bench_inquant(rec, s)),
        ("matmul", lambda: bench_matmul(rec, s)),
    ):
        if name not in sections:
            continue
        t, c = time.perf_counter(), time.process_time()
        s.start_section(SECTION_SHARES[name])
        try:
            res = fn()
            if name == "attention":
                dense.update(res)
        except Exception as e:  # noqa: BLE001 - one broken section must not lose the others
            rec.add(name, name, "-", "-", error=_err(e))
        print(
            f"[gpu_check] {name}: {time.perf_counter() - t:.1f}s ({time.process_time() - c:.1f}s CPU)", file=sys.stderr
        )
        save(make_result(None, time.perf_counter() - t_start, partial=True))  # a crash later keeps what was measured
    bench_s = time.perf_counter() - t_start
    tests = run_tests(s, a.test_timeout_s or (120.0 if a.dry_run else 180.0))
    result = make_result(tests, bench_s, partial=False)
    save(result)
    plot(result, s.out / "kernels_gpu.png")
    print(table(result))
    print(f"[gpu_check] wrote {s.out}/kernels_gpu.{{json,png}} in {result['wall_s']:.1f}s", file=sys.stderr)
    return result
