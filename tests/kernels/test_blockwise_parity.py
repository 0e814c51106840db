"""Every block format's public ops under each implementation (tests/kernels/conftest.py) equal the XLA
reference bit for bit: codes, scale bytes, dequantized values (one test for NVFP4, MXFP4 and both RaZeR
variants, over ragged and multi-axis shapes and extreme magnitudes)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kernels.formats import FORMAT_OPS as FORMATS

# (shape in blocks, log10 scale, seed): a scalar row, ragged rows, 3-D, a wide row; tiny and huge values
CASES = [((1,), 0, 0), ((3, 2), -20, 1), ((2, 2, 3), 20, 2), ((5, 16), 0, 3)]


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("blocks,log_scale,seed", CASES)
def test_equals_reference(fmt, blocks, log_scale, seed, kernel_implementation):
    quantize, dequantize, block = FORMATS[fmt]
    shape = (*blocks[:-1], blocks[-1] * block)
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * np.float32(10.0**log_scale)
    a = quantize(x, implementation="xla")
    b = quantize(x, implementation=kernel_implementation)
    assert b.codes.shape == (*shape[:-1], shape[-1] // 2) and b.scales.shape == (*shape[:-1], shape[-1] // block)
    np.testing.assert_array_equal(np.asarray(a.codes), np.asarray(b.codes))
    np.testing.assert_array_equal(np.asarray(a.scales), np.asarray(b.scales))
    da = dequantize(a, implementation="xla")
    db = dequantize(a, implementation=kernel_implementation)
    assert db.shape == shape
    np.testing.assert_array_equal(np.asarray(da), np.asarray(db))
