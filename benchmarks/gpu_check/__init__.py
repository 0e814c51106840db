"""The prepared hardware check: one command that tests, benchmarks and autotunes every kernel on a GPU.

    python -m benchmarks.gpu_check                  # on a GPU: ~8 min on an H200, writes figures/kernels_gpu/
    python -m benchmarks.gpu_check --dry-run        # on CPU: interpret mode, tiny sizes, a temp dir (~30 s)
    python -m benchmarks.gpu_check --out DIR --skip-tests

What it does, in this order (benchmarks first, so a slow test step cannot cost the numbers):
  1. device, jax version and the device's peaks (``PEAKS``: bf16 dense tensor-core FLOP/s and HBM bytes/s from
     NVIDIA's data sheets; any other device is "unknown" and only raw GB/s, TFLOP/s are reported);
  2. benchmarks, each op against its XLA path and the best peer on the machine, with a correctness check of
     the kernel against the XLA path at the first shape:
       - dense attention: Pallas (Triton), Mosaic GPU (``attention/mosaic_gpu.py``), XLA,
         ``jax.nn.dot_product_attention(implementation="cudnn")``, JAX's FA3 ``attention_mgpu``; FLOP/s;
       - block-sparse attention at L = 4K/8K/16K, sparsity 0.5/0.75/0.9/0.95: speedup over the project's
         dense flash kernel (same kernel family, same L), against 1/(1-s);
       - NVFP4 / MXFP4 / RaZeR quantize and dequantize, FWHT (vs a dense rotation ``x @ H``), InQuant unpack:
         achieved HBM bandwidth (bytes read + written / time) as a fraction of peak;
       - ``fp4_matmul`` (W4A16) at decode (M = 1, 16) and prefill (M = 4096) shapes vs a bf16 dense matmul;
     block sizes are autotuned over a small grid per shape (the best is kept and written to the json) while
     the time budget lasts;
  3. the kernel test suite with ``implementation="triton"``: a pytest subprocess over ``tests/kernels`` with
     this module loaded as a plugin (``-p benchmarks.gpu_check``) and ``PALLAS_KERNELS_FORCE_IMPLEMENTATION``
     set, which maps every ``implementation="interpret"`` of the public ops to ``"triton"`` (the compiled kernel);
  4. ``figures/kernels_gpu/kernels_gpu.{png,json}`` (device name, jax version, every measurement, the tuned
     configs, the kernel goals met or missed) and a table on stdout.

``--dry-run`` runs the very same code path on CPU: "triton" means the Pallas interpreter, the Mosaic GPU kernel
runs in Mosaic GPU interpret mode, peers that need a GPU are recorded as unavailable, sizes are tiny, and the
pytest step runs a small selection. Its timings mean nothing; it exists so the script is known to work before
a GPU is there (``tests/kernels/test_gpu_check.py``).

The package, one concept a module:
  peaks.py            the device peak table (``PEAKS``, ``peaks_for``);
  adapters.py         every call into the public ops: when an op's name or keyword changes (``causal`` ->
                      ``is_causal``, ``blocks`` -> ``block_sizes``, a renamed kernel library), fix it there;
  autotune.py         settings, timing, the budget and ``Recorder`` (autotune over a grid, keep the best);
  bench_attention.py  dense and block-sparse attention;
  bench_quant.py      quantizers, FWHT, InQuant, ``fp4_matmul``;
  plugin.py           ``forced_implementation``, the pytest hooks (re-exported here, so ``-p
                      benchmarks.gpu_check`` loads them) and the pytest step ``run_tests``;
  report.py           the kernel goals, the png and the table;
  cli.py, __main__.py ``main`` and ``python -m benchmarks.gpu_check``.
"""

from benchmarks.gpu_check.autotune import Recorder, Settings, time_fn
from benchmarks.gpu_check.bench_attention import (
    DRY_SPARSITIES,
    SPARSITIES,
    bench_attention,
    bench_block_sparse,
)
from benchmarks.gpu_check.bench_quant import bench_fwht, bench_inquant, bench_matmul, bench_quant
from benchmarks.gpu_check.cli import SECTION_SHARES, main
from benchmarks.gpu_check.peaks import PEAKS, peaks_for
from benchmarks.gpu_check.plugin import (
    FORCE_ENV,
    REPO_ROOT,
    forced_implementation,
    pytest_configure,
    pytest_unconfigure,
    run_tests,
)
from benchmarks.gpu_check.report import goals, plot, table

__all__ = [
    "DRY_SPARSITIES",
    "FORCE_ENV",
    "PEAKS",
    "REPO_ROOT",
    "SECTION_SHARES",
    "SPARSITIES",
    "Recorder",
    "Settings",
    "bench_attention",
    "bench_block_sparse",
    "bench_fwht",
    "bench_inquant",
    "bench_matmul",
    "bench_quant",
    "forced_implementation",
    "goals",
    "main",
    "peaks_for",
    "plot",
    "pytest_configure",
    "pytest_unconfigure",
    "run_tests",
    "table",
    "time_fn",
]
