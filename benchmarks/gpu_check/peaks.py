"""Device peaks: dense (non-sparse) bf16 tensor-core FLOP/s and HBM bandwidth in bytes/s, from NVIDIA's data
sheets. Any other device is "unknown" and only raw GB/s, TFLOP/s are reported."""

from __future__ import annotations

# H100 SXM5 80GB: 989.4 TFLOP/s bf16 dense (1979 "with sparsity"), 3.35 TB/s HBM3 (NVIDIA H100 data sheet).
# H200 SXM 141GB: 989.4 TFLOP/s bf16 dense, 4.8 TB/s HBM3e (NVIDIA H200 data sheet).
PEAKS = {
    "H100 SXM": {"bf16_flops": 989.4e12, "hbm_bytes_per_s": 3.35e12},
    "H200": {"bf16_flops": 989.4e12, "hbm_bytes_per_s": 4.8e12},
}


def peaks_for(device_kind: str) -> tuple[str, dict | None]:
    """(name, peaks) for a jax ``device_kind``; ("unknown", None) for anything not in ``PEAKS``."""
    kind = device_kind.upper()
    if "H200" in kind:
        return "H200", PEAKS["H200"]
    if "H100" in kind and ("SXM" in kind or "HBM3" in kind) and "PCIE" not in kind and "NVL" not in kind:
        return "H100 SXM", PEAKS["H100 SXM"]
    return "unknown", None


def _pallas_copy(x2, block=(16, 512), interpret: bool = False):
    """A Pallas copy (sign flip, exact) of a 2-D bf16 array with the quantizers' default tile (16 x 512): the
    bandwidth a Pallas kernel with these tiles can reach on this device."""
    import jax
    from jax.experimental import pallas as pl

    from jaxwb.pallas_kernels.quant.blockwise import compiler_params

    def kernel(x_ref, o_ref):
        o_ref[...] = -x_ref[...]

    r, c = x2.shape
    bm, bk = block
    return pl.pallas_call(
        kernel,
        grid=(r // bm, c // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j: (i, j))],
        out_specs=pl.BlockSpec((bm, bk), lambda i, j: (i, j)),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x2.dtype),
        interpret=interpret,
        compiler_params=None if interpret else compiler_params("gpu"),  # Triton, as the quantizers
        name="ceiling_copy",
    )(x2)


def measure_ceilings(dry_run: bool) -> dict:
    """The ceilings measured on the device itself (the data sheet's are leads), each on random data, the best
    of a few timed batches, each in its own ``try`` (a failure is recorded, the others still measured):

    * ``copy_bytes_per_s``: an XLA elementwise copy (bytes read + written per second);
    * ``pallas_copy_bytes_per_s``: a Pallas copy with the quantizers' tile (16 x 512 bf16);
    * ``gemv_read_bytes_per_s``: cuBLAS/XLA bf16 GEMV (M = 1, 16384^2 weight): weight bytes read per second;
    * ``ceiling_bytes_per_s``: the largest of these three, the bandwidth goals' denominator;
    * ``bf16_matmul_flops``: a bf16 matmul (FLOP/s).
    A dry run measures tiny sizes on CPU (the Pallas copy in interpret mode): numbers for the code path only."""
    import jax
    import jax.numpy as jnp

    from benchmarks.gpu_check.autotune import error_line, time_fn

    reps = dict(reps=3 if dry_run else 10, trials=3)
    n = 2**16 if dry_run else 2**30  # bf16 elements: 2 GiB read + 2 GiB written on a GPU (many times the L2)
    m = 256 if dry_run else 8192
    nk = 256 if dry_run else 16384
    out: dict = dict(copy_elements=n, matmul_size=m, gemv_size=nk)

    def attempt(name, fn):
        try:
            out[name] = fn()
        except Exception as e:  # a ceiling that fails is named, the others are still measured
            out[f"{name}_error"] = error_line(e)

    def xla_copy():
        x = jax.random.normal(jax.random.key(0), (n,), jnp.float32).astype(jnp.bfloat16)
        copy = jax.jit(lambda x: x * jnp.bfloat16(-1))  # a copy the compiler cannot elide; a sign flip is exact
        return 2 * n * 2 / time_fn(copy, x, **reps)

    def pallas_copy():
        x = jax.random.normal(jax.random.key(0), (n // 512, 512), jnp.float32).astype(jnp.bfloat16)
        f = jax.jit(lambda x: _pallas_copy(x, interpret=dry_run))
        return 2 * n * 2 / time_fn(f, x, **reps)

    def gemv():
        w = jax.random.normal(jax.random.key(2), (nk, nk), jnp.float32).astype(jnp.bfloat16)
        x = jax.random.normal(jax.random.key(3), (1, nk), jnp.float32).astype(jnp.bfloat16)
        f = jax.jit(lambda x, w: jnp.dot(x, w.T, preferred_element_type=jnp.float32).astype(jnp.bfloat16))
        return nk * nk * 2 / time_fn(f, x, w, **reps)

    def matmul():
        a, b = (
            jax.random.normal(k, (m, m), jnp.float32).astype(jnp.bfloat16) for k in jax.random.split(jax.random.key(1))
        )
        mm = jax.jit(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32).astype(jnp.bfloat16))
        return 2 * m**3 / time_fn(mm, a, b, **reps)

    for name, fn in (
        ("copy_bytes_per_s", xla_copy),
        ("pallas_copy_bytes_per_s", pallas_copy),
        ("gemv_read_bytes_per_s", gemv),
        ("bf16_matmul_flops", matmul),
    ):
        attempt(name, fn)
    bw = [out[k] for k in ("copy_bytes_per_s", "pallas_copy_bytes_per_s", "gemv_read_bytes_per_s") if k in out]
    if bw:
        out["ceiling_bytes_per_s"] = max(bw)
    return out
