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


def measure_ceilings(dry_run: bool) -> dict:
    """The two ceilings measured on the device itself (the data sheet's are leads): a device-to-device copy
    (bytes read + written per second) and a bf16 matmul (FLOP/s), each on random data, the best of a few timed
    batches. A dry run measures tiny sizes on CPU: numbers for the code path only."""
    import jax
    import jax.numpy as jnp

    from benchmarks.gpu_check.autotune import time_fn

    n = 2**16 if dry_run else 2**30  # bf16 elements: 2 GiB read + 2 GiB written on a GPU (many times the L2)
    m = 256 if dry_run else 8192
    x = jax.random.normal(jax.random.key(0), (n,), jnp.float32).astype(jnp.bfloat16)
    copy = jax.jit(lambda x: x * jnp.bfloat16(-1))  # a copy the compiler cannot elide; a sign flip is exact
    t_copy = time_fn(copy, x, reps=3 if dry_run else 10, trials=3)
    del x
    a, b = (jax.random.normal(k, (m, m), jnp.float32).astype(jnp.bfloat16) for k in jax.random.split(jax.random.key(1)))
    mm = jax.jit(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32).astype(jnp.bfloat16))
    t_mm = time_fn(mm, a, b, reps=3 if dry_run else 10, trials=3)
    return dict(
        copy_bytes_per_s=2 * n * 2 / t_copy,
        bf16_matmul_flops=2 * m**3 / t_mm,
        copy_elements=n,
        matmul_size=m,
    )
