"""One backend switch: ``implementation = None | "xla" | "triton" | "mosaic_gpu" | "mosaic_tpu" | "interpret"`` on
every public op (``jaxwb.pallas_kernels.dispatch``).

* Every op accepts every name its platform supports and rejects the others with a ``ValueError`` whose message
  starts "implementation": on this CPU host (eager calls), and traced under the abstract CUDA and TPU meshes
  the lowering tests use (a CPU host lowering for a GPU or a TPU): None, "xla" and "interpret" everywhere,
  "triton" (and "mosaic_gpu" for the attention ops) for a GPU, "mosaic_tpu" for a TPU.
* Every op lowers for TPU under ``implementation="mosaic_tpu"`` (a Mosaic custom call; ``inquant_pack`` has no
  kernel and packs with XLA whatever the name).
* ``None`` follows the platform and :data:`dispatch.MEASURED`, the table keyed by (op, backend).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxwb.pallas_kernels import dispatch, quant
from jaxwb.pallas_kernels.attention import (
    AttentionBlockSizes,
    block_sparse_attention,
    flash_attention,
    threshold_attention,
    threshold_retrieve,
)
from jaxwb.pallas_kernels.quant import (
    fake_quant,
    fp4_matmul,
    fwht,
    inquant_pack,
    inquant_unpack,
)
from tests.kernels.formats import quantized_spec
from tests.kernels.lowering import MESHES, kernel_calls, lower_text

SD = jax.ShapeDtypeStruct
KEY = jax.random.key(0)
NAMES = (None, "xla", "triton", "mosaic_gpu", "mosaic_tpu", "interpret")
ALL_PLATFORMS = (None, "xla", "interpret")  # names every platform supports
X = SD((64, 512), jnp.float32)
XA = SD((1, 128, 2, 64), jnp.bfloat16)  # the attention ops (Mosaic GPU takes bf16, D a multiple of 64)
CNT, IDX = SD((1, 2, 2), jnp.int32), SD((1, 2, 2, 2), jnp.int32)
BS = AttentionBlockSizes(64, 64)


def _q(fmt):
    return quantized_spec(fmt, X.shape)


def _inq():
    return jax.eval_shape(lambda x: inquant_pack(x, key=KEY, n_outliers=4), SD((64, 128), jnp.bfloat16))


def _rhtq():
    return jax.eval_shape(lambda x: quant.rht_quantize(x, key=KEY, bits=4), SD((3, 64), jnp.bfloat16))


# name -> (kernel backends, impl -> (function of arrays, their specs)). Specs are shapes every backend takes.
OPS = {
    "nvfp4_quantize": (dispatch.QUANT_BACKENDS, lambda i: (
        lambda x: quant.nvfp4_quantize(x, implementation=i).codes, (X,))),
    "nvfp4_dequantize": (dispatch.QUANT_BACKENDS, lambda i: (lambda q: quant.nvfp4_dequantize(q, implementation=i),
                                                             (_q("nvfp4"),))),
    "mxfp4_quantize": (dispatch.QUANT_BACKENDS, lambda i: (
        lambda x: quant.mxfp4_quantize(x, implementation=i).codes, (X,))),
    "mxfp4_dequantize": (dispatch.QUANT_BACKENDS, lambda i: (lambda q: quant.mxfp4_dequantize(q, implementation=i),
                                                             (_q("mxfp4"),))),
    "razer_quantize activation": (dispatch.QUANT_BACKENDS, lambda i: (
        lambda x: quant.razer_quantize(x, implementation=i).codes, (X,))),
    "razer_quantize weight": (dispatch.QUANT_BACKENDS, lambda i: (
        lambda x: quant.razer_quantize(x, variant="weight", implementation=i).codes, (X,))),
    "razer_dequantize": (dispatch.QUANT_BACKENDS, lambda i: (lambda q: quant.razer_dequantize(q, implementation=i),
                                                             (_q("razer_weight"),))),
    "fp4_matmul": (dispatch.QUANT_BACKENDS, lambda i: (lambda x, w: fp4_matmul(x, w, implementation=i),
                                                       (SD((8, 512), jnp.bfloat16), _q("nvfp4")))),
    "fwht": (dispatch.QUANT_BACKENDS, lambda i: (lambda x: fwht(x, implementation=i), (SD((4, 128), jnp.float32),))),
    "rht_quantize": (dispatch.QUANT_BACKENDS, lambda i: (
        lambda x: quant.rht_quantize(x, key=KEY, bits=4, implementation=i).codes, (SD((3, 64), jnp.bfloat16),))),
    "rht_dequantize": (dispatch.QUANT_BACKENDS, lambda i: (
        lambda q: quant.rht_dequantize(q, implementation=i), (_rhtq(),))),
    "inquant_pack": (dispatch.QUANT_BACKENDS, lambda i: (
        lambda x: inquant_pack(x, key=KEY, n_outliers=4, implementation=i).packed, (SD((64, 128), jnp.bfloat16),))),
    "inquant_unpack": (dispatch.QUANT_BACKENDS, lambda i: (lambda q: inquant_unpack(q, implementation=i), (_inq(),))),
    "fake_quant": (dispatch.QUANT_BACKENDS, lambda i: (lambda x: fake_quant(x, implementation=i), (X,))),
    "flash_attention": (dispatch.ATTENTION_BACKENDS, lambda i: (
        lambda q, k, v: flash_attention(q, k, v, implementation=i), (XA, XA, XA))),
    "block_sparse_attention": (dispatch.ATTENTION_BACKENDS, lambda i: (
        lambda q, k, v, c, x: block_sparse_attention(q, k, v, c, x, block_sizes=BS, implementation=i),
        (XA, XA, XA, CNT, IDX))),
    "threshold_retrieve": (dispatch.QUANT_BACKENDS, lambda i: (
        lambda q, k: threshold_retrieve(q, k, 1.0, implementation=i).block_mask, (XA, XA))),
    "threshold_attention": (dispatch.QUANT_BACKENDS, lambda i: (
        lambda q, k, v: threshold_attention(q, k, v, 1.0, implementation=i)[0], (XA, XA, XA))),
}  # fmt: skip
NO_KERNEL = {"inquant_pack"}


def _concrete(spec, seed=0):
    """A concrete array (or container) for a spec: small normal floats, valid block lists, real packings."""
    if isinstance(spec, jax.ShapeDtypeStruct):
        if jnp.issubdtype(spec.dtype, jnp.integer):  # block lists: count 1, key block 0
            return jnp.zeros(spec.shape, spec.dtype) + (1 if spec.ndim == 3 else 0)
        return jax.random.normal(jax.random.key(seed), spec.shape, jnp.float32).astype(spec.dtype)
    return None


def _args(name, specs):
    if name == "nvfp4_dequantize":
        return (quant.nvfp4_quantize(_concrete(X)),)
    if name == "mxfp4_dequantize":
        return (quant.mxfp4_quantize(_concrete(X)),)
    if name == "razer_dequantize":
        return (quant.razer_quantize(_concrete(X), variant="weight"),)
    if name == "fp4_matmul":
        return _concrete(specs[0]), quant.nvfp4_quantize(_concrete(X, 1))
    if name == "rht_dequantize":
        return (quant.rht_quantize(_concrete(SD((3, 64), jnp.bfloat16)), key=KEY, bits=4),)
    if name == "inquant_unpack":
        return (inquant_pack(_concrete(SD((64, 128), jnp.bfloat16)), key=KEY, n_outliers=4),)
    return tuple(_concrete(s, i) for i, s in enumerate(specs))


def _supported(backends, plat):
    return set(ALL_PLATFORMS) | {b for b in backends if dispatch.BACKEND_PLATFORM[b] == plat}


def test_every_op_is_listed():
    """The registry above holds every public op with an ``implementation`` parameter (the layers forward it)."""
    import inspect

    from jaxwb.pallas_kernels import attention

    public = {
        n
        for mod in (quant, attention)
        for n in mod.__all__
        if n not in getattr(mod, "LAYER_NAMES", ())
        and inspect.isfunction(getattr(mod, n))
        and "implementation" in inspect.signature(getattr(mod, n)).parameters
    }
    assert public == {n.split(" ")[0] for n in OPS}


@pytest.mark.parametrize("name", list(OPS))
def test_cpu_accepts_its_names_and_rejects_the_others(name):
    """On this CPU host: None, "xla", "interpret" run; "triton", "mosaic_gpu", "mosaic_tpu", the old "pallas"
    and an unknown name raise ValueError starting "implementation" (eager calls)."""
    backends, make = OPS[name]
    for impl in (*NAMES, "pallas", "cuda"):
        fn, specs = make(impl)
        args = _args(name, specs)
        if impl in ALL_PLATFORMS:
            for leaf in jax.tree.leaves(fn(*args)):
                assert np.all(np.isfinite(np.asarray(leaf, np.float32))), (name, impl)
        else:
            with pytest.raises(ValueError, match="^implementation") as e:
                fn(*args)
            if impl in backends:
                assert "compiles for a" in str(e.value) and "'cpu'" in str(e.value), (name, impl, str(e.value))
            elif impl in dispatch.KERNEL_BACKENDS:
                assert f"not a backend of {name.split(' ')[0]}" in str(e.value) or "not a backend of" in str(e.value)


@pytest.mark.filterwarnings("ignore:The Pallas Triton backend is deprecated:DeprecationWarning")
@pytest.mark.parametrize("mesh", ["cuda", "tpu"])
@pytest.mark.parametrize("name", list(OPS))
def test_accelerator_accepts_its_names_and_rejects_the_others(name, mesh):
    """Traced under the abstract mesh of an H100 (a GPU) or a TPU v5e, as a CPU host lowers for them: the
    platform's backends and None / "xla" / "interpret" trace; the other platform's backends raise."""
    backends, make = OPS[name]
    plat = {"cuda": "gpu", "tpu": "tpu"}[mesh]
    ok = _supported(backends, plat)
    for impl in NAMES:
        fn, specs = make(impl)
        with jax.sharding.use_abstract_mesh(MESHES[mesh]):
            if impl in ok:
                jax.jit(fn).trace(*specs)
            else:
                with pytest.raises(ValueError, match="^implementation"):
                    jax.jit(fn).trace(*specs)


@pytest.mark.parametrize("name", list(OPS))
def test_every_op_lowers_for_tpu_under_mosaic_tpu(name):
    _, make = OPS[name]
    fn, specs = make("mosaic_tpu")
    calls = kernel_calls(lower_text(fn, *specs, platform="tpu"), "tpu")
    assert calls == 0 if name in NO_KERNEL else calls >= 1, (name, calls)


def test_measured_table_is_keyed_by_op_and_backend():
    for (op, backend), m in dispatch.MEASURED.items():
        assert backend in dispatch.KERNEL_BACKENDS and m.platform == dispatch.BACKEND_PLATFORM[backend], op
        assert m.faster == "xla" or dispatch.BACKEND_PLATFORM.get(m.faster) == m.platform, op
        assert m.when and m.measurement and callable(m.holds), op


def test_none_follows_the_platform_and_the_measurements():
    choose = dispatch.measured_choice
    ok = lambda b: None
    q = dispatch.QUANT_BACKENDS
    a = dispatch.ATTENTION_BACKENDS
    assert choose("fwht", "cpu", q, ok, dict(d=128)) == "xla"
    assert choose("fwht", "gpu", q, ok, dict(d=4096)) == "triton"
    assert choose("fwht", "gpu", q, ok, dict(d=8192)) == "xla"
    assert choose("fwht", "tpu", q, ok, dict(d=8192)) == "mosaic_tpu"
    assert choose("fwht", "gpu", q, lambda b: "no", dict(d=64)) == "xla"  # the kernel refuses: XLA
    assert choose("nvfp4_quantize", "gpu", q, ok, {}) == "triton"
    assert choose("razer_activation_quantize", "gpu", q, ok, {}) == "xla"
    assert choose("fp4_matmul", "gpu", q, ok, dict(rows=1)) == "xla"
    assert choose("fp4_matmul", "gpu", q, ok, dict(rows=16)) == "triton"
    facts = dict(dtype="bfloat16", head_dim=128, length=4096)
    assert choose("flash_attention", "gpu", a, ok, facts) == "mosaic_gpu"
    assert choose("flash_attention", "gpu", a, lambda b: "no" if b == "mosaic_gpu" else None, facts) == "triton"
    assert choose("flash_attention", "gpu", a, ok, dict(facts, length=2048)) == "triton"
    assert choose("block_sparse_attention", "tpu", a, ok, facts) == "mosaic_tpu"


def test_interpret_is_the_triton_form_and_pallas_is_gone():
    """ "interpret" resolves to the GPU (Triton) form on any platform; the old name "pallas" names its
    replacements."""
    assert dispatch.resolve("interpret", op="fwht") == ("interpret", "gpu")
    with pytest.raises(ValueError, match="^implementation='pallas' is no longer a name.*'triton'.*'mosaic_tpu'"):
        dispatch.resolve("pallas", op="fwht")
    assert dispatch.IMPLEMENTATIONS == NAMES
