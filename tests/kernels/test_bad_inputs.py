"""Bad inputs to every public kernel op and what each raises (eagerly; the table in the issue-18 report).

Each case is ``(id, call, message regex)``; every one must raise ``ValueError`` with that message, before
any kernel runs. The last tests check that the opt-in checkify path (``pallas_kernels.checked``) raises the
same errors under ``jit`` for the value checks an eager call makes (NaN, out-of-range block indices).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels import checked
from pallas_kernels.attention import (
    AttentionBlockSizes,
    block_sparse_attention,
    build_key_index,
    flash_attention,
    retrieval_block_lists,
    threshold_retrieve,
)
from pallas_kernels.quant import (
    HadamardBlockSizes,
    MatmulBlockSizes,
    QuantBlockSizes,
    fp4_matmul,
    fwht,
    inquant_pack,
    inquant_unpack,
    mxfp4_quantize,
    nvfp4_dequantize,
    nvfp4_quantize,
    razer_dequantize,
    razer_quantize,
    rht_dequantize,
    rht_quantize,
)
from pallas_kernels.quant.layers import QuantizedLinear, quantize_model, quantize_weight

Q = jnp.ones((1, 16, 2, 16), jnp.float32)
QNAN = Q.at[0, 3, 1, 2].set(jnp.nan)
CNT = jnp.ones((1, 2, 1), jnp.int32)
IDX = jnp.zeros((1, 2, 1, 1), jnp.int32)
X = jnp.ones((2, 32), jnp.float32)
XNAN = X.at[1, 5].set(jnp.nan)
KEY = jax.random.key(0)
W = nvfp4_quantize(jnp.ones((8, 32), jnp.float32))


def bsa(q=Q, k=Q, v=Q, cnt=CNT, idx=IDX, **kw):
    kw.setdefault("block_sizes", AttentionBlockSizes(16, 16))
    return block_sparse_attention(q, k, v, cnt, idx, **kw)


CASES = [
    # --- flash_attention -------------------------------------------------------------------------------
    ("flash complex q", lambda: flash_attention(Q.astype(jnp.complex64), Q, Q), "q must be a floating.*complex"),
    ("flash int q", lambda: flash_attention(Q.astype(jnp.int32), Q, Q), "q must be a floating.*integer"),
    ("flash bool k", lambda: flash_attention(Q, Q.astype(bool), Q), "k must be a floating.*boolean"),
    ("flash rank 3", lambda: flash_attention(Q[0], Q[0], Q[0]), "q must have rank 4"),
    ("flash empty", lambda: flash_attention(Q[:, :0], Q[:, :0], Q[:, :0]), "q must be non-empty"),
    ("flash mixed dtypes", lambda: flash_attention(Q, Q.astype(jnp.bfloat16), Q), "share a dtype"),
    ("flash k/v shapes", lambda: flash_attention(Q, Q, Q[:, :8]), "k and v must have the same shape"),
    ("flash head_dim", lambda: flash_attention(Q, Q[..., :8], Q[..., :8]), "share batch and head_dim"),
    ("flash GQA heads", lambda: flash_attention(jnp.ones((1, 16, 3, 16)), Q, Q), "multiple of kv heads"),
    ("flash NaN", lambda: flash_attention(QNAN, Q, Q), "q contains 1 non-finite"),
    ("flash inf v", lambda: flash_attention(Q, Q, Q.at[0, 0, 0, 0].set(jnp.inf)), "v contains 1 non-finite"),
    ("flash causal Lq != Lk", lambda: flash_attention(Q, Q[:, :8], Q[:, :8], is_causal=True), "Lq == Lk"),
    ("flash causal alias clash", lambda: flash_attention(Q, Q, Q, is_causal=True, causal=False), "contradicts"),
    ("flash nan scale", lambda: flash_attention(Q, Q, Q, scale=float("nan")), "scale must be a finite"),
    ("flash bad implementation", lambda: flash_attention(Q, Q, Q, implementation="cuda"), "implementation"),
    ("flash pallas on cpu", lambda: flash_attention(Q, Q, Q, implementation="pallas"), "needs backend"),
    (
        "flash block not dividing",
        lambda: flash_attention(Q, Q, Q, implementation="interpret", block_sizes=AttentionBlockSizes(16, 24)),
        "multiples of block_q",
    ),
    (
        "flash gpu block not pow2",
        lambda: flash_attention(
            jnp.ones((1, 48, 2, 16)),
            jnp.ones((1, 48, 2, 16)),
            jnp.ones((1, 48, 2, 16)),
            implementation="interpret",
            block_sizes=AttentionBlockSizes(16, 48),
        ),
        "power of two >= 16",
    ),
    ("AttentionBlockSizes(0, 512)", lambda: AttentionBlockSizes(0, 512), "block_q must be a positive integer"),
    ("AttentionBlockSizes(16, -1)", lambda: AttentionBlockSizes(16, -1), "block_k must be a positive integer"),
    ("flash block_sizes type", lambda: flash_attention(Q, Q, Q, block_sizes=(16, 16)), "AttentionBlockSizes"),
    # --- block_sparse_attention ------------------------------------------------------------------------
    ("bsa no blocks", lambda: block_sparse_attention(Q, Q, Q, CNT, IDX), "needs block_sizes"),
    ("bsa both block kwargs", lambda: bsa(block_q=16, block_k=16), "not both"),
    ("bsa L not multiple", lambda: bsa(block_sizes=AttentionBlockSizes(32, 16)), "multiples of block_q"),
    ("bsa float lists", lambda: bsa(cnt=CNT.astype(jnp.float32)), "kv_num_blocks must be an integer"),
    ("bsa count shape", lambda: bsa(cnt=jnp.ones((1, 2), jnp.int32)), "kv_num_blocks must have shape"),
    ("bsa index shape", lambda: bsa(idx=jnp.zeros((1, 2, 1), jnp.int32)), "kv_indices must have shape"),
    ("bsa zero capacity", lambda: bsa(idx=jnp.zeros((1, 2, 1, 0), jnp.int32)), "capacity"),
    ("bsa index out of range", lambda: bsa(idx=IDX + 1), r"kv_indices must lie in \[0, 1\), got range \[1, 1\]"),
    ("bsa negative index", lambda: bsa(idx=IDX - 1), "kv_indices must lie in"),
    ("bsa count > cap", lambda: bsa(cnt=CNT + 1), r"kv_num_blocks must lie in \[0, 2\)"),
    ("bsa NaN k", lambda: bsa(k=QNAN), "k contains 1 non-finite"),
    # --- threshold_retrieve / index ----------------------------------------------------------------------
    ("threshold bad bound", lambda: threshold_retrieve(Q, Q, 0.0, bound="cone"), "bound must be one of"),
    ("threshold block_size 0", lambda: threshold_retrieve(Q, Q, 0.0, block_size=0), "block_size must be a positive"),
    ("threshold block_size not dividing", lambda: threshold_retrieve(Q, Q, 0.0, block_size=5), "must divide Lk"),
    ("threshold NaN tau", lambda: threshold_retrieve(Q, Q, float("nan")), "tau contains 1 non-finite"),
    ("threshold tau shape", lambda: threshold_retrieve(Q, Q, jnp.zeros((3,))), "tau must be a scalar or broad"),
    ("threshold int q", lambda: threshold_retrieve(Q.astype(jnp.int8), Q, 0.0), "q must be a floating.*integer"),
    ("key index rank", lambda: build_key_index(Q[0]), "k must have rank 4"),
    (
        "retrieval lists block_q",
        lambda: retrieval_block_lists(threshold_retrieve(Q, Q, 0.0), block_q=0),
        "block_q must be a positive",
    ),
    # --- block quantizers --------------------------------------------------------------------------------
    ("nvfp4 complex", lambda: nvfp4_quantize(X.astype(jnp.complex64)), "x must be a floating.*complex"),
    ("nvfp4 int", lambda: nvfp4_quantize(jnp.ones((2, 16), jnp.int32)), "x must be a floating.*integer"),
    ("nvfp4 scalar", lambda: nvfp4_quantize(jnp.float32(1.0)), "at least one axis"),
    ("nvfp4 empty", lambda: nvfp4_quantize(jnp.ones((0, 16))), "x must be non-empty"),
    ("nvfp4 K not block", lambda: nvfp4_quantize(jnp.ones((2, 24))), "multiple of the block size 16"),
    ("nvfp4 NaN", lambda: nvfp4_quantize(XNAN), "x contains 1 non-finite"),
    ("nvfp4 global_scale inf", lambda: nvfp4_quantize(X, global_scale=np.inf), "global_scale must be a finite"),
    ("nvfp4 global_scale vector", lambda: nvfp4_quantize(X, global_scale=np.ones(2)), "global_scale must be a scalar"),
    ("nvfp4 int dequantize dtype", lambda: nvfp4_dequantize(W, dtype=jnp.int32), "dtype must be a floating"),
    ("nvfp4 dequantize wrong format", lambda: nvfp4_dequantize(mxfp4_quantize(X)), "format must be one of"),
    ("nvfp4 dequantize non-container", lambda: nvfp4_dequantize(X), "must be a QuantizedArray"),
    ("mxfp4 K not block", lambda: mxfp4_quantize(jnp.ones((2, 16))), "multiple of the block size 32"),
    ("mxfp4 inf", lambda: mxfp4_quantize(X.at[0, 0].set(jnp.inf)), "non-finite"),
    ("razer bad variant", lambda: razer_quantize(X, variant="kv"), "variant must be one of"),
    ("razer dequantize nvfp4", lambda: razer_dequantize(W), "format must be one of"),
    ("QuantBlockSizes(0, 512)", lambda: QuantBlockSizes(0, 512), "block_rows must be a positive"),
    ("QuantBlockSizes(16, 48)", lambda: QuantBlockSizes(16, 48), "block_cols must be a power of two"),
    ("quantize block_sizes type", lambda: nvfp4_quantize(X, block_sizes=(16, 512)), "QuantBlockSizes"),
    ("quantize bad implementation", lambda: nvfp4_quantize(X, implementation="gpu"), "implementation"),
    # --- fp4_matmul ---------------------------------------------------------------------------------------
    ("matmul K mismatch", lambda: fp4_matmul(jnp.ones((3, 16)), W), "x.shape.-1. must equal w.shape.1."),
    ("matmul int x", lambda: fp4_matmul(jnp.ones((3, 32), jnp.int32), W), "x must be a floating.*integer"),
    ("matmul NaN x", lambda: fp4_matmul(XNAN, W), "x contains 1 non-finite"),
    ("matmul empty x", lambda: fp4_matmul(jnp.ones((0, 32)), W), "x must be non-empty"),
    ("matmul 3-D weight", lambda: fp4_matmul(X, nvfp4_quantize(jnp.ones((2, 2, 32)))), "2-D"),
    ("matmul int out_dtype", lambda: fp4_matmul(X, W, out_dtype=jnp.int8), "dtype must be a floating"),
    ("MatmulBlockSizes(8, 64, 128)", lambda: MatmulBlockSizes(8, 64, 128), "block_m must be >= 16"),
    # --- Hadamard / RHT / InQuant -------------------------------------------------------------------------
    ("fwht complex", lambda: fwht(jnp.ones((2, 8), jnp.complex64)), "x must be a floating.*complex"),
    ("fwht int", lambda: fwht(jnp.arange(8)), "x must be a floating.*integer"),
    ("fwht non pow2", lambda: fwht(jnp.ones((2, 12))), "power of two"),
    ("fwht empty batch", lambda: fwht(jnp.ones((0, 8))), "x must be non-empty"),
    (
        "fwht blocks and block_sizes",
        lambda: fwht(X, block_sizes=HadamardBlockSizes(), blocks=HadamardBlockSizes()),
        "not both",
    ),
    ("HadamardBlockSizes(tile=24)", lambda: HadamardBlockSizes(tile=24), "block_sizes.tile must be a power"),
    ("rht NaN", lambda: rht_quantize(XNAN, key=KEY, bits=4), "x contains 1 non-finite"),
    ("rht bits 0", lambda: rht_quantize(X, key=KEY, bits=0), "bits must be an integer in"),
    ("rht bad scaling", lambda: rht_quantize(X, key=KEY, bits=4, scaling="max"), "scaling must be one of"),
    ("rht int key", lambda: rht_quantize(X, key=0, bits=4), "key must be a jax.random key"),
    ("rht complex", lambda: rht_quantize(X.astype(jnp.complex64), key=KEY, bits=4), "complex"),
    ("rht pallas d < 16", lambda: rht_quantize(jnp.ones((2, 8)), key=KEY, bits=4, implementation="interpret"), ">= 16"),
    ("rht dequantize non-container", lambda: rht_dequantize(X), "RHTQuantized"),
    ("inquant NaN", lambda: inquant_pack(XNAN, key=KEY), "x contains 1 non-finite"),
    ("inquant int", lambda: inquant_pack(jnp.ones((4, 32), jnp.int16), key=KEY), "x must be a floating.*integer"),
    ("inquant rank 1", lambda: inquant_pack(jnp.ones(32), key=KEY), "at least 2 axes"),
    ("inquant outliers > C/3", lambda: inquant_pack(X, key=KEY, n_outliers=11), "n_outliers"),
    ("inquant unpack block_rows", lambda: inquant_unpack(inquant_pack(X, key=KEY), block_rows=3), "power of two"),
    # --- layers -------------------------------------------------------------------------------------------
    ("from_linear non-linear", lambda: QuantizedLinear.from_linear(jnp.ones((3, 3))), "eqx.nn.Linear or an nnx"),
    ("quantize_weight bad fmt", lambda: quantize_weight(X, "int4"), "fmt must be one of"),
    ("quantize_model fmt alias clash", lambda: quantize_model({}, "nvfp4", format="mxfp4"), "disagree"),
]


def test_table_has_forty_cases():
    assert len(CASES) >= 40 and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("name,call,match", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises(name, call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_checkify_raises_the_eager_errors_under_jit():
    """Under jit the value checks are skipped; inside `checked` they raise the same ValueError."""
    f = lambda q, idx: bsa(q=q, idx=idx)  # noqa: E731
    with pytest.raises(ValueError, match=r"kv_indices must lie in \[0, 1\), got range \[1, 1\]"):
        checked(f)(Q, IDX + 1)
    with pytest.raises(ValueError, match="q contains 1 non-finite"):
        checked(f)(QNAN, IDX)
    with pytest.raises(ValueError, match="x contains 1 non-finite"):
        checked(lambda x: nvfp4_quantize(x).codes)(XNAN)
    with pytest.raises(ValueError, match="global_scale must be a finite"):
        checked(lambda g: nvfp4_quantize(X, global_scale=g).codes)(jnp.float32(np.inf))
    np.testing.assert_allclose(checked(f)(Q, IDX), jax.jit(f)(Q, IDX))  # a good input passes through
    assert jax.jit(f)(Q, IDX + 1).shape == Q.shape  # without checked: no check under jit (documented)


def test_checked_and_plain_jit_of_one_function_do_not_share_a_trace():
    """`checked(jit(f))` then plain `jit(f)` (and the reverse): the check switch is part of jit's trace context
    (theory._checkify), so neither call reuses the other's trace: checks are neither leaked nor skipped."""
    g = jax.jit(lambda x: nvfp4_quantize(x).codes)
    with pytest.raises(ValueError, match="x contains 1 non-finite"):
        checked(g)(XNAN)
    assert g(XNAN).shape == g(X).shape  # plain jit afterwards: no check, no "not functionalized" error
    h = jax.jit(lambda x: nvfp4_quantize(x).codes)
    assert h(XNAN).shape == h(X).shape  # plain jit first
    with pytest.raises(ValueError, match="x contains 1 non-finite"):
        checked(h)(XNAN)  # ... then checked: the check is not skipped
