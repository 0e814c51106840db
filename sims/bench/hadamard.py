"""``workbench bench hadamard``: the FWHT against its XLA butterfly reference and against a dense rotation
matmul (the Theta(d^2) peer), the XLA Kronecker-einsum variant (``fwht(..., xla_method="kron")``) against
the butterfly with both formulations' float32 error against a float64 reference, and the fused RHT quantizer
against its reference.

On CPU the default implementation is the XLA reference, so there "ours" is ``fwht(implementation=None)`` =
the butterfly; on a GPU/TPU it is the Pallas kernel, and the row notes the achieved HBM bandwidth fraction
when the chip's peak is known.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.pallas_kernels.quant.hadamard import fwht, fwht_reference, hadamard_matrix, hadamard_matrix_np
from jaxwb.pallas_kernels.quant.rht import rht_quantize, rht_quantize_reference, rht_randomness
from jaxwb.sims.core.timing import BenchRow, time_call

PEAK_HBM_GBS = {"H100": 3350.0, "H200": 4800.0, "A100": 2039.0, "TPU v5": 819.0, "TPU v4": 1200.0}


def _peak():
    kind = jax.devices()[0].device_kind
    return next((v for k, v in PEAK_HBM_GBS.items() if k in kind), None)


def _errors(x, butterfly, kron, rows: int = 16) -> str:
    """Max error / max |y| of both float32 XLA paths against float64 on the first ``rows`` rows (d <= 8192)."""
    d = x.shape[-1]
    if d > 8192:
        return "float64 reference skipped (d > 8192)"
    xs = x[:rows]
    exact = np.asarray(xs, np.float64) @ hadamard_matrix_np(d).astype(np.float64) / np.sqrt(d)
    err = {
        k: np.abs(np.asarray(f(xs), np.float64) - exact).max() / np.abs(exact).max()
        for k, f in (("kron", kron), ("butterfly", butterfly))
    }
    return f"rel. error vs float64: kron {err['kron']:.1e}, butterfly {err['butterfly']:.1e} (goal <= 1e-6)"


def bench(quick: bool = False) -> list[BenchRow]:
    rows = []
    backend = jax.default_backend()
    impl = {"gpu": "default (triton; xla above d = 4096)", "tpu": "default (mosaic_tpu)"}.get(
        backend, "xla (CPU default)"
    )
    shapes = [(256, 1024)] if quick else [(4096, 128), (512, 4096), (32, 32768)]
    peak = _peak()
    for n, d in shapes:
        x = jax.random.normal(jax.random.key(0), (n, d), jnp.float32)
        ours = jax.jit(lambda x: fwht(x))
        ref = jax.jit(lambda x: fwht_reference(x))
        t_ours = time_call(ours, x, repeats=3)
        gbs = 2 * x.size * 4 / t_ours / 1e9
        note = f"{gbs:.1f} GB/s" + (f" = {100 * gbs / peak:.0f}% of HBM peak" if peak else "")
        t_ref = time_call(ref, x, repeats=3)
        rows.append(BenchRow(f"fwht {n}x{d}", impl, "XLA butterfly", t_ours, t_ref, note))
        kron = jax.jit(lambda x: fwht(x, implementation="xla", xla_method="kron"))
        t_kron = time_call(kron, x, repeats=3)
        rows.append(BenchRow(f"fwht {n}x{d}", "xla kron einsum", "XLA butterfly", t_kron, t_ref, _errors(x, ref, kron)))
        if d <= 8192:  # a dense d x d rotation needs d^2 * 4 bytes (4.3 GB at d = 32768): peer skipped there
            h = hadamard_matrix(d)
            dense = jax.jit(lambda x, h=h: jnp.dot(x, h, precision=jax.lax.Precision.HIGHEST))
            t_dense = time_call(dense, x, repeats=3)
            note = f"flops ratio d/(2 log2 d) = {d / (2 * d.bit_length() - 2):.0f}"
            rows.append(BenchRow(f"fwht {n}x{d}", impl, "dense H matmul", t_ours, t_dense, note))
        key = jax.random.key(1)
        signs, u = rht_randomness(key, d, (n,))
        q_ours = jax.jit(lambda x, key=key: rht_quantize(x, key=key, bits=4).codes)
        q_ref = jax.jit(lambda x, s=signs, u=u: rht_quantize_reference(x, s, u, bits=4)[0])
        rows.append(
            BenchRow(
                f"rht_quantize b=4 {n}x{d}",
                impl,
                "XLA reference",
                time_call(q_ours, x, repeats=3),
                time_call(q_ref, x, repeats=3),
            )
        )
    return rows
