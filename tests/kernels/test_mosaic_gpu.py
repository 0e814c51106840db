"""The Mosaic GPU (Hopper) flash / block-sparse attention kernel: Mosaic GPU interpret mode on CPU equals the
pure-jnp reference, and the hardware form (register P, in-place wgmma accumulate, TMA pipeline) lowers for an
H100/H200 target on a CPU-only machine.

The interpreter simulates SMEM, TMA copies, mbarriers and wgmma on the host; lowering runs Pallas -> Mosaic GPU
dialect (wgmma, TMA, mbarrier ops) into the ``mosaic_gpu_v2`` custom call. Neither runs ptxas or the GPU: the
kernel's speed and the last compile step are only checked on hardware (``python -m benchmarks.gpu_check``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AbstractDevice, AbstractMesh, AxisType

from jaxwb.pallas_kernels.attention import (
    AttentionBlockSizes,
    attention_reference,
    block_lists_to_mask,
    expand_block_mask,
)
from jaxwb.pallas_kernels.attention.mosaic_gpu import (
    MosaicBlockSizes,
    block_sparse_attention_mgpu,
    flash_attention_mgpu,
    is_hopper,
    unsupported_reason,
)

H100 = AbstractMesh(
    (1,),
    ("x",),
    (AxisType.Explicit,),
    abstract_device=AbstractDevice(device_kind="NVIDIA H100 80GB HBM3", num_cores=None, platform="cuda"),
)
H200 = AbstractMesh(
    (1,),
    ("x",),
    (AxisType.Explicit,),
    abstract_device=AbstractDevice(device_kind="NVIDIA H200", num_cores=None, platform="cuda"),
)
TOL = {jnp.bfloat16: 2e-2, jnp.float16: 4e-3}  # P is rounded to the input dtype before the PV wgmma


def _qkv(B, L, H, Hkv, D, dtype, seed=0):
    kq, kk, kv = jax.random.split(jax.random.key(seed), 3)
    q = jax.random.normal(kq, (B, L, H, D), jnp.float32).astype(dtype)
    k = jax.random.normal(kk, (B, L, Hkv, D), jnp.float32).astype(dtype)
    v = jax.random.normal(kv, (B, L, Hkv, D), jnp.float32).astype(dtype)
    return q, k, v


def _ref(q, k, v, **kw):  # float32 reference on the same (rounded) inputs
    f = lambda x: x.astype(jnp.float32)
    return np.asarray(attention_reference(f(q), f(k), f(v), **kw))


def _close(out, want, dtype):
    out = np.asarray(out.astype(jnp.float32))
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, want, atol=TOL[dtype], rtol=TOL[dtype])


@pytest.mark.parametrize(
    "causal, dtype, block_k, L",
    [(False, jnp.float16, 64, 128), (True, jnp.bfloat16, 128, 256)],
)
def test_flash_interpret_equals_reference(causal, dtype, block_k, L):
    """Dense: GQA (2 query heads on 1 kv head), several query blocks; causal with block_k > block_q so the
    diagonal block is partly masked and the dynamic step count differs per query block."""
    q, k, v = _qkv(1, L, 2, 1, 64, dtype)
    out = flash_attention_mgpu(q, k, v, is_causal=causal, block_sizes=MosaicBlockSizes(64, block_k, 2), interpret=True)
    _close(out, _ref(q, k, v, is_causal=causal), dtype)


def test_block_sparse_interpret_equals_masked_dense():
    """Block-sparse, causal, GQA: an empty row gives 0, lists in reverse order, a listed block above the
    diagonal contributes nothing; equal to dense attention under the expanded block mask."""
    B, L, H, Hkv, D, bq, bk = 1, 256, 2, 1, 64, 64, 64
    dtype = jnp.bfloat16
    q, k, v = _qkv(B, L, H, Hkv, D, dtype, seed=1)
    nq, nk = L // bq, L // bk
    bm = np.array(jax.random.bernoulli(jax.random.key(2), 0.6, (B, H, nq, nk)))
    bm[0, 0, 0] = False  # an empty row
    bm[0, 1, 1, 3] = True  # a block entirely above the diagonal (masked by causality)
    cnt = bm.sum(-1).astype(np.int32)
    idx = np.zeros((B, H, nq, nk), np.int32)
    for b, h, i in np.ndindex(B, H, nq):
        listed = np.flatnonzero(bm[b, h, i])[::-1]  # reverse order: the result must not depend on it
        idx[b, h, i, : len(listed)] = listed
    np.testing.assert_array_equal(block_lists_to_mask(cnt, idx, nk), bm)
    out = block_sparse_attention_mgpu(
        q, k, v, jnp.asarray(cnt), jnp.asarray(idx), block_q=bq, block_k=bk, is_causal=True, interpret=True
    )
    want = _ref(q, k, v, is_causal=True, mask=expand_block_mask(jnp.asarray(bm), bq, bk))
    _close(out, want, dtype)
    np.testing.assert_array_equal(np.asarray(out[0, :bq, 0].astype(jnp.float32)), 0.0)


def test_accepts_public_block_sizes():
    """The public op's ``AttentionBlockSizes`` gives the very same kernel as ``MosaicBlockSizes`` (same jaxpr)."""
    q, k, v = _qkv(1, 128, 1, 1, 64, jnp.float16, seed=3)
    a = jax.make_jaxpr(
        lambda q, k, v: flash_attention_mgpu(
            q, k, v, is_causal=True, block_sizes=AttentionBlockSizes(64, 64), interpret=True
        )
    )(q, k, v)
    b = jax.make_jaxpr(
        lambda q, k, v: flash_attention_mgpu(
            q, k, v, is_causal=True, block_sizes=MosaicBlockSizes(64, 64), interpret=True
        )
    )(q, k, v)
    assert str(a) == str(b)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(dtype=jnp.float32), "bfloat16 or float16"),
        (dict(D=32), "head_dim"),
        (dict(block_sizes=MosaicBlockSizes(128, 64)), "block_q"),
        (dict(block_sizes=MosaicBlockSizes(64, 96)), "block_k"),
        (dict(L=96), "multiples"),
        (dict(is_causal=True, L=128, block_sizes=MosaicBlockSizes(64, 64), k_len=64), "Lq == Lk"),
    ],
)
def test_rejects_bad_inputs(kw, match):
    kw = dict(kw)
    L, D, dtype = kw.pop("L", 128), kw.pop("D", 64), kw.pop("dtype", jnp.bfloat16)
    Lk = kw.pop("k_len", L)
    q = jnp.zeros((1, L, 1, D), dtype)
    k = v = jnp.zeros((1, Lk, 1, D), dtype)
    with pytest.raises(ValueError, match=match):
        flash_attention_mgpu(q, k, v, interpret=True, **kw)


def test_unsupported_reason_for_a_fallback():
    ok = jnp.zeros((1, 128, 2, 64), jnp.bfloat16)
    assert unsupported_reason(ok, ok, ok) is None
    assert unsupported_reason(ok, ok, ok, AttentionBlockSizes(64, 64)) is None
    assert "bfloat16 or float16" in unsupported_reason(ok.astype(jnp.float32), ok, ok)
    assert "block_q" in unsupported_reason(ok, ok, ok, AttentionBlockSizes(32, 64))
    assert not is_hopper(jax.devices("cpu")[0])


def test_block_sparse_rejects_bad_lists():
    q = jnp.zeros((1, 128, 1, 64), jnp.bfloat16)
    cnt = jnp.ones((1, 1, 2), jnp.int32)
    with pytest.raises(ValueError, match="kv_indices must lie"):
        block_sparse_attention_mgpu(q, q, q, cnt, jnp.full((1, 1, 2, 1), 5, jnp.int32), block_q=64, block_k=64)
    with pytest.raises(ValueError, match="kv_num_blocks must have shape"):
        block_sparse_attention_mgpu(q, q, q, cnt[..., :1], jnp.zeros((1, 1, 1, 1), jnp.int32), block_q=64, block_k=64)


SD = jax.ShapeDtypeStruct


def _lower(mesh, f, *specs):
    with jax.sharding.use_abstract_mesh(mesh):
        return jax.jit(f).trace(*specs).lower(lowering_platforms=("cuda",)).as_text()


@pytest.mark.parametrize("mesh", [H100, H200], ids=["h100", "h200"])
def test_lowers_for_hopper(mesh):
    """The hardware form (P from registers, in-place accumulate) lowers to one Mosaic GPU custom call with
    wgmma and TMA, dense causal (bf16, D=128, block_k=128, 3 K/V slots) and block-sparse (cap 3)."""
    L, H, HKV, D = 512, 4, 2, 128
    q, k = SD((1, L, H, D), jnp.bfloat16), SD((1, L, HKV, D), jnp.bfloat16)
    cnt, idx = SD((1, H, L // 64), jnp.int32), SD((1, H, L // 64, 3), jnp.int32)
    dense = functools.partial(flash_attention_mgpu, is_causal=True, block_sizes=MosaicBlockSizes(64, 128, 3))
    sparse = functools.partial(block_sparse_attention_mgpu, block_q=64, block_k=64, is_causal=True)
    for txt in (_lower(mesh, dense, q, k, k), _lower(mesh, sparse, q, k, k, cnt, idx)):
        assert "stablehlo.custom_call @mosaic_gpu_v2" in txt
        assert txt.count("custom_call") == 1
        low = txt.lower()
        assert "wgmma" in low and "tma" in low and "mbarrier" in low  # the Hopper ops are in the module


@pytest.mark.skipif(not is_hopper(), reason="needs a Hopper GPU (sm_90): run by python -m benchmarks.gpu_check")
@pytest.mark.parametrize("causal", [False, True])
def test_hardware_equals_reference(causal):
    """On a Hopper GPU the compiled kernel (register P, in-place accumulate) equals the reference, dense and
    block-sparse (half the key blocks listed)."""
    B, L, H, Hkv, D = 2, 1024, 4, 2, 128
    q, k, v = _qkv(B, L, H, Hkv, D, jnp.bfloat16, seed=4)
    out = flash_attention_mgpu(q, k, v, is_causal=causal, block_sizes=MosaicBlockSizes(64, 128, 2))
    _close(out, _ref(q, k, v, is_causal=causal), jnp.bfloat16)
    nq, nk = L // 64, L // 128
    bm = jax.random.bernoulli(jax.random.key(5), 0.5, (B, H, nq, nk))
    from jaxwb.pallas_kernels.attention import mask_to_block_lists

    cnt, idx = mask_to_block_lists(bm)
    out = block_sparse_attention_mgpu(q, k, v, cnt, idx, block_q=64, block_k=128, is_causal=causal)
    _close(out, _ref(q, k, v, is_causal=causal, mask=expand_block_mask(bm, 64, 128)), jnp.bfloat16)


@pytest.mark.filterwarnings("ignore:The Pallas Triton backend is deprecated:DeprecationWarning")
def test_public_ops_dispatch_to_mosaic_gpu():
    """``implementation="mosaic_gpu"`` reaches this kernel (the CUDA lowering holds its custom call and no
    Triton kernel), dense and block-sparse; ``None`` picks it where the H200 measured it faster than Triton
    (bfloat16, head_dim 128, L >= 4096: ``dispatch.MEASURED``) and Triton elsewhere; on this CPU host the name
    is rejected; ``gpu_kernel=`` is gone."""
    from jaxwb.pallas_kernels import dispatch
    from jaxwb.pallas_kernels.attention import block_sparse_attention, flash_attention

    def lowered(fn, *specs):
        txt = _lower(H100, fn, *specs)
        return txt.count("@mosaic_gpu_v2"), txt.count("__gpu$xla.gpu.triton")

    for L, impl, want in ((512, "mosaic_gpu", (1, 0)), (4096, None, (1, 0)), (512, None, (0, 1))):
        q = SD((1, L, 2, 128), jnp.bfloat16)
        assert lowered(functools.partial(flash_attention, implementation=impl), q, q, q) == want, (L, impl)
        cnt, idx = SD((1, 2, L // 64), jnp.int32), SD((1, 2, L // 64, 2), jnp.int32)
        bsa = functools.partial(block_sparse_attention, block_sizes=AttentionBlockSizes(64, 64), implementation=impl)
        assert lowered(bsa, q, q, q, cnt, idx) == want, ("block_sparse", L, impl)
    q = SD((1, 4096, 2, 128), jnp.float32)  # float32: outside the measured regime, and Mosaic refuses it
    assert lowered(flash_attention, q, q, q) == (0, 1)
    assert dispatch.MEASURED[("flash_attention", "triton")].faster == "mosaic_gpu"
    x = jnp.zeros((1, 128, 2, 64), jnp.bfloat16)
    with pytest.raises(ValueError, match="^implementation='mosaic_gpu' compiles for a GPU"):
        flash_attention(x, x, x, implementation="mosaic_gpu")
    with pytest.raises(TypeError, match="gpu_kernel"):
        flash_attention(x, x, x, gpu_kernel="mosaic")
