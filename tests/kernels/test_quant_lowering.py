"""Every quant kernel lowers for CUDA (Triton) and TPU (Mosaic) on a CPU-only machine.

"Lowers" means the Pallas kernel is translated to Triton IR (embedded as ``__gpu$xla.gpu.triton``) or to
Mosaic MLIR (``tpu_custom_call``) inside the StableHLO module; the device compilers that run after that
(Triton -> PTX, Mosaic -> TPU) need the hardware and are not exercised here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxwb.pallas_kernels.quant import blockwise
from jaxwb.pallas_kernels.quant import reference as ref
from jaxwb.pallas_kernels.quant.matmul import fp4_matmul_pallas
from tests.kernels.formats import quantized_spec
from tests.kernels.lowering import kernel_calls, lower_text

FORMATS = ["nvfp4", "mxfp4", "razer_activation", "razer_weight"]


@pytest.mark.parametrize("platform", ["cuda", "tpu"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_quantize_dequantize_matmul_lower(fmt, platform):
    x = jax.ShapeDtypeStruct((64, 512), jnp.float32)
    g = jax.ShapeDtypeStruct((), jnp.float32)
    assert (
        kernel_calls(
            lower_text(
                lambda x, g: blockwise.quantize_pallas(x, g, fmt=fmt, platform=platform), x, g, platform=platform
            ),
            platform,
        )
        == 1
    )
    q = quantized_spec(fmt, (64, 512))
    assert (
        kernel_calls(
            lower_text(
                lambda q: blockwise.dequantize_pallas(q, dtype=jnp.bfloat16, platform=platform), q, platform=platform
            ),
            platform,
        )
        == 1
    )
    a = jax.ShapeDtypeStruct((8, 512), jnp.bfloat16)
    w = quantized_spec(fmt, (128, 512))
    assert (
        kernel_calls(
            lower_text(lambda a, w: fp4_matmul_pallas(a, w, platform=platform), a, w, platform=platform), platform
        )
        == 1
    )


@pytest.mark.parametrize("fmt", ["razer_weight"])
def test_tpu_tiling_in_interpret_mode_equals_reference(fmt):
    """The TPU tiling (32-row panels, whole rows; one K chunk in the matmul) runs through the interpreter on
    CPU and gives the reference's codes bit for bit (the CPU/GPU tiling is covered in the per-op tests)."""
    import numpy as np

    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((40, 96)), jnp.float32)
    g = ref.global_scale_from_amax(jnp.max(jnp.abs(x)), 2688.0 if fmt == "nvfp4" else 168.0)
    a = blockwise._ref_jit(x, g, fmt)
    b = blockwise.quantize_pallas(x, g, fmt=fmt, interpret=True, platform="tpu")
    np.testing.assert_array_equal(np.asarray(a.codes), np.asarray(b.codes))
    np.testing.assert_array_equal(np.asarray(a.scales), np.asarray(b.scales))
    np.testing.assert_array_equal(
        np.asarray(ref.dequantize(a)), np.asarray(blockwise.dequantize_pallas(a, interpret=True, platform="tpu"))
    )
    act = jnp.asarray(rng.standard_normal((5, 96)), jnp.bfloat16)
    y_ref = np.asarray(ref.fp4_matmul(act, a, out_dtype=jnp.float32), np.float64)
    y = fp4_matmul_pallas(act, a, out_dtype=jnp.float32, interpret=True, platform="tpu")
    y = np.asarray(y, np.float64)
    np.testing.assert_allclose(y, y_ref, rtol=1e-5, atol=1e-5 * np.abs(y_ref).max())


@pytest.mark.filterwarnings("ignore:The Pallas Triton backend is deprecated:DeprecationWarning")
@pytest.mark.parametrize("fmt", FORMATS)
def test_default_on_gpu_follows_the_measurements(fmt):
    """implementation=None on a GPU (the CUDA abstract mesh of the lowering): the quantize kernel except where
    the H200 measured XLA faster (RaZeR's activation variant: dispatch.MEASURED); the dequantize kernel for
    every format."""
    from jaxwb.pallas_kernels import dispatch

    x = jax.ShapeDtypeStruct((64, 512), jnp.float32)
    entry = dispatch.MEASURED.get((f"{fmt}_quantize", "triton"))
    want = 0 if entry is not None and entry.faster == "xla" and entry.when == "always" else 1
    assert want == (0 if fmt == "razer_activation" else 1)
    g = jax.ShapeDtypeStruct((), jnp.float32)
    quantize = lambda x, g: blockwise.quantize(x, g, fmt=fmt, implementation=None).codes
    assert kernel_calls(lower_text(quantize, x, g, platform="cuda"), "cuda") == want
    dequantize = lambda q: blockwise.dequantize(q, dtype=jnp.float32, implementation=None)
    assert kernel_calls(lower_text(dequantize, quantized_spec(fmt, (64, 512)), platform="cuda"), "cuda") == 1


@pytest.mark.filterwarnings("ignore:The Pallas Triton backend is deprecated:DeprecationWarning")
def test_fp4_matmul_default_on_gpu_is_xla_for_one_row():
    """implementation=None on a GPU: XLA for a single row (M = 1, where the H200 measured XLA faster:
    dispatch.MEASURED[("fp4_matmul", "triton")]), the kernel from M = 16 on; "triton" always the kernel."""
    from jaxwb.pallas_kernels.quant import fp4_matmul

    w = quantized_spec("nvfp4", (128, 256))
    for lead, impl, count in (((1,), None, 0), ((2, 8), None, 1), ((1,), "triton", 1)):
        x = jax.ShapeDtypeStruct((*lead, 256), jnp.bfloat16)
        text = lower_text(lambda x, w: fp4_matmul(x, w, implementation=impl), x, w, platform="cuda")  # noqa: B023
        assert kernel_calls(text, "cuda") == count, (lead, impl)
