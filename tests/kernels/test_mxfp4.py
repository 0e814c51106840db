"""MXFP4: reference vs an ml_dtypes model and jax.nn's mxfp4 scale rule; Pallas (interpret) vs reference."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxwb.pallas_kernels.quant import mxfp4_dequantize, mxfp4_quantize, nvfp4_quantize
from tests.kernels import quant_np
from tests.kernels.quant_np import KINDS
from tests.kernels.quant_np import adversarial as _adversarial

SHAPES = [(32,), (3, 64), (2, 2, 96), (4, 256)]


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")  # near_max: the NumPy model's cast
@pytest.mark.parametrize("kind", KINDS)
def test_reference_matches_ml_dtypes_model(kind):
    x = _adversarial(kind, (4, 64))
    q = mxfp4_quantize(x, implementation="xla")
    c, code, deq = quant_np.mxfp4(x)
    assert q.scales.shape == (4, 2) and q.codes.shape == (4, 32) and float(q.global_scale) == 1.0
    np.testing.assert_array_equal(quant_np.unpack(q.codes), c.reshape(4, 64))
    np.testing.assert_array_equal(np.asarray(q.scales), code)
    np.testing.assert_array_equal(np.asarray(mxfp4_dequantize(q)), deq.reshape(4, 64))


def test_scale_rounds_up_so_nothing_clips():
    x = _adversarial("normal", (16, 128), seed=5)
    q = mxfp4_quantize(x)
    codes = quant_np.unpack(q.codes).reshape(16, 4, 32)
    scale = np.ldexp(1.0, np.asarray(q.scales).astype(int) - 127)
    amax = np.abs(quant_np.blocks(x, 32)).max(-1)
    assert np.all(amax <= 6 * scale) and np.all(amax > 3 * scale)  # 2^e is the smallest with amax <= 6 2^e
    err = np.abs(quant_np.blocks(x, 32) - quant_np.blocks(np.asarray(mxfp4_dequantize(q)), 32))
    assert np.all(err <= scale[..., None])  # half the widest gap (2) times the scale: no clipping error
    assert codes.max() <= 15


def test_scale_bytes_match_jax_nn_rule_away_from_powers_of_two():
    """jax.nn's mxfp4 rule rounds fl(amax * fl(1/6)) up to a power of two; ours rounds the exact amax / 6.
    They agree on every block whose fl(amax / 6) is not a power of two (checked independently)."""
    from jax._src.cudnn.scaled_matmul_stablehlo import cast_to_e8m0_with_rounding_up

    x = _adversarial("huge_range", (16, 256), seed=6)
    q = mxfp4_quantize(x)
    amax = np.abs(quant_np.blocks(x, 32)).max(-1)
    theirs = np.asarray(cast_to_e8m0_with_rounding_up(jnp.asarray(amax) * np.float32(1 / 6)))
    r = (amax * np.float32(1 / 6)).astype(np.float32)
    pow2 = np.frexp(r)[0] == 0.5
    np.testing.assert_array_equal(np.asarray(q.scales)[~pow2], theirs[~pow2])


def test_errors():
    with pytest.raises(ValueError, match="multiple of the block size 32"):
        mxfp4_quantize(np.ones((2, 16), np.float32))
    with pytest.raises(ValueError, match="non-finite"):
        mxfp4_quantize(np.full((1, 32), np.nan, np.float32))
    with pytest.raises(ValueError, match="format"):
        mxfp4_dequantize(nvfp4_quantize(np.ones((2, 32), np.float32)))
    q = jax.jit(mxfp4_quantize)(jnp.ones((2, 32)))  # tracers skip the finiteness check, not the shape check
    assert q.format == "mxfp4"
