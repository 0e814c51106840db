"""The one lowering helper of the kernel tests (public ``jax.sharding`` APIs only, no ``jax._src``).

``lower_text(f, *specs, platform="cuda" | "tpu")`` lowers ``jax.jit(f)`` for that platform from a CPU host,
under an abstract one-device mesh of an H100 (CUDA: the Triton lowering) or a TPU v5e (Mosaic), and returns
the StableHLO text; ``kernel_calls(text, platform)`` counts the Pallas custom calls in it. Lowering runs the
Pallas -> Triton-IR / Mosaic lowering (block shapes, dot dims, index maps); not the device compilers.
"""

from __future__ import annotations

import jax
from jax.sharding import AbstractDevice, AbstractMesh, AxisType

MESHES = {
    "cuda": AbstractMesh(
        (1,),
        ("x",),
        (AxisType.Explicit,),
        abstract_device=AbstractDevice(device_kind="NVIDIA H100 80GB HBM3", num_cores=None, platform="cuda"),
    ),
    "tpu": AbstractMesh(
        (1,),
        ("x",),
        (AxisType.Explicit,),
        abstract_device=AbstractDevice(device_kind="TPU v5 lite", num_cores=1, platform="tpu"),
    ),
}
MARKER = {"cuda": "__gpu$xla.gpu.triton", "tpu": "tpu_custom_call"}
BACKEND = {"cuda": "gpu", "tpu": "tpu"}  # the ops' ``backend=`` / ``platform=`` for each lowering platform
KERNEL = {"cuda": "triton", "tpu": "mosaic_tpu"}  # the ops' ``implementation=`` of each lowering platform


def lower_text(f, *specs, platform: str) -> str:
    with jax.sharding.use_abstract_mesh(MESHES[platform]):
        return jax.jit(f).trace(*specs).lower(lowering_platforms=(platform,)).as_text()


def kernel_calls(text: str, platform: str) -> int:
    """Number of Pallas custom calls for ``platform``; asserts none for the other platform."""
    other = "tpu" if platform == "cuda" else "cuda"
    assert text.count(MARKER[other]) == 0, f"a {other} kernel in the {platform} lowering"
    return text.count(MARKER[platform])
