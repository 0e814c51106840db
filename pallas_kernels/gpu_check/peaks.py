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
