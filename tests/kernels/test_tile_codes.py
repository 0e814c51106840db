"""The GPU kernels' tile encoders and decoders (``pallas_kernels/quant/tile_codes.py``) equal the reference block
rules bit for bit, called directly (pure jnp) on adversarial tiles: elements on every E2M1 midpoint and grid
value of their block's scale and one float either side, RaZeR's special-value windows and their edges, blocks
whose two candidates' errors tie, zeros, -0, float32 subnormals, tiny global scales (so the flush floor ``F`` is
large) and huge values; the scale-byte codecs over their whole input ranges; the decoders exhaustively over
every packed byte and scale byte. (XLA:CPU flushes subnormal products, so here the flush floor's GPU case, a
subnormal x times a large fl(1/g), is argued in the module docstring rather than exercised.)"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from jaxwb.pallas_kernels.quant import fp4, tile_codes
from jaxwb.pallas_kernels.quant import reference as ref

F32 = np.float32
MIDS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)
GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
SPECIAL = (4.5, 5.5, 7.0, 8.0)  # RaZeR's windows (+-5 at s6, +-8 at s8) and values


def _scale(amax, fmt):
    """The block scale the reference gives a block of amax (global scale 1)."""
    if fmt == "razer_weight":
        return float(fp4.e3m3_decode(ref.e3m3_scale_code(jnp.float32(amax), 6.0)))
    return float(fp4.e4m3_decode(ref.nvfp4_scale_code(jnp.float32(amax))))


def adversarial_tile(rng, rows: int, cols: int, fmt: str, inv_g: float = 1.0):
    """(rows, cols) float32: per 16-block an amax and elements at t s (t a midpoint, a grid value or a special
    window edge, for the scale s the reference derives) +- one float, random values, zeros, -0, subnormals."""
    x = np.zeros((rows, cols), F32)
    for r in range(rows):
        for b0 in range(0, cols, 16):
            amax = F32(rng.choice([1.0, 6.0, 7.3, 448.0 * 6, 1e-3, 3e-5, rng.uniform(0.1, 100)]))
            s = _scale(amax * inv_g, fmt) / inv_g
            ts = np.array([*MIDS, *GRID, *SPECIAL, *(t * 6 / 8 for t in (7.0, 8.0))], np.float64)
            base = (rng.choice(ts, 16) * s).astype(F32)
            wiggle = rng.integers(-1, 2, 16)
            vals = np.where(wiggle > 0, np.nextafter(base, F32(np.inf)), base)
            vals = np.where(wiggle < 0, np.nextafter(base, F32(0)), vals).astype(F32)
            kind = rng.random(16)
            vals = np.where(kind < 0.15, rng.uniform(0, amax, 16).astype(F32), vals)
            vals = np.where((kind >= 0.15) & (kind < 0.2), F32(0.0), vals)
            vals = np.where((kind >= 0.2) & (kind < 0.25), F32(1e-40), vals)  # float32 subnormal
            sign = np.where(rng.random(16) < 0.5, F32(-1.0), F32(1.0))
            vals = np.minimum(vals, amax) * sign
            vals[0] = amax * sign[0]
            vals[rng.integers(1, 16)] = F32(-0.0)
            x[r, b0 : b0 + 16] = vals
    return x


def _ref_bytes(x, fmt, inv_g):
    block = fp4.BLOCK_SIZE[fmt]
    xb = jnp.asarray(x).reshape(x.shape[0], x.shape[1] // block, block)
    fn = {
        "nvfp4": lambda: ref.nvfp4_block_codes(xb, jnp.float32(inv_g)),
        "mxfp4": lambda: ref.mxfp4_block_codes(xb),
        "razer_activation": lambda: ref.razer_activation_block_codes(xb, jnp.float32(inv_g)),
        "razer_weight": lambda: ref.razer_weight_block_codes(xb, jnp.float32(inv_g)),
    }[fmt]
    codes, sc = fn()
    return np.asarray(fp4.pack_nibbles(codes.reshape(x.shape))), np.asarray(sc).reshape(x.shape[0], -1)


TILE = {
    "nvfp4": tile_codes.nvfp4_tile,
    "mxfp4": lambda x, inv_g: tile_codes.mxfp4_tile(x),
    "razer_activation": tile_codes.razer_activation_tile,
    "razer_weight": tile_codes.razer_weight_tile,
}


@pytest.mark.parametrize("fmt", list(TILE))
@pytest.mark.parametrize("inv_g", [1.0, 2.0**-10, 2.0**100, 2.0**126], ids=["g1", "g2^10", "g2^-100", "g2^-126"])
def test_tile_encoders_equal_the_reference(fmt, inv_g):
    rng = np.random.default_rng(hash((fmt, inv_g)) % 2**32)
    x = adversarial_tile(rng, 24, 128, fmt, inv_g=1.0 if inv_g >= 2.0**100 else inv_g)
    if inv_g >= 2.0**100:  # tiny global scales: elements near and below 2^-126 (flushed)
        x = (x * F32(2.0**-120)).astype(F32)
    byte, sc = TILE[fmt](jnp.asarray(x), jnp.float32(inv_g))
    want_byte, want_sc = _ref_bytes(x, fmt, inv_g)
    np.testing.assert_array_equal(np.asarray(byte).astype(np.uint8), want_byte)
    np.testing.assert_array_equal(np.asarray(sc).astype(np.uint8), want_sc.astype(np.uint8))


@pytest.mark.parametrize("fmt", ["razer_activation", "razer_weight"])
def test_razer_choice_ties_and_windows(fmt):
    """Blocks built so the special-value candidates' errors tie (+5 / the first candidate must win) and
    elements sit exactly on the windows' open edges."""
    rng = np.random.default_rng(1)
    rows = []
    for _ in range(32):
        s = _scale(F32(6.0), fmt)
        blk = np.full(16, F32(6.0))
        edge = rng.choice([4.5, 5.5, 7.0, 5.0]) * s
        blk[1:5] = [edge, -edge, F32(np.nextafter(F32(edge), F32(9))), -F32(np.nextafter(F32(edge), F32(0)))]
        blk[5:9] = [F32(5 * s), -F32(5 * s), F32(4.75 * s), -F32(4.75 * s)]  # symmetric: err(+5) == err(-5)
        blk[9:] = rng.choice(GRID, 7) * s * rng.choice([-1, 1], 7)
        rows.append(blk)
    x = np.asarray(rows, F32).reshape(4, 128)
    byte, sc = TILE[fmt](jnp.asarray(x), jnp.float32(1.0))
    want_byte, want_sc = _ref_bytes(x, fmt, 1.0)
    np.testing.assert_array_equal(np.asarray(byte).astype(np.uint8), want_byte)
    np.testing.assert_array_equal(np.asarray(sc).astype(np.uint8), want_sc.astype(np.uint8))


def test_scale_codecs_over_their_ranges():
    codes = jnp.arange(256, dtype=jnp.uint32)
    np.testing.assert_array_equal(tile_codes.e4m3_value(codes), fp4.e4m3_decode(codes))
    np.testing.assert_array_equal(tile_codes.e3m3_value(codes), fp4.e3m3_decode(codes))
    vals = np.asarray(fp4.e4m3_decode(jnp.arange(1, 127, dtype=jnp.uint32)), F32)
    x = np.concatenate([vals, ((vals[1:] + vals[:-1]) / 2).astype(F32)])
    x = np.concatenate([x, np.nextafter(x, F32(0)), np.nextafter(x, F32(1e9))])
    x = np.concatenate([x, np.exp2(np.random.default_rng(0).uniform(-9, np.log2(448), 100_000)).astype(F32)])
    x = x[(x >= 2.0**-9) & (x <= 448)]
    np.testing.assert_array_equal(tile_codes.e4m3_code(jnp.asarray(x)), fp4.e4m3_encode(jnp.asarray(x)))


@pytest.mark.parametrize("fmt", ["nvfp4", "mxfp4", "razer_activation", "razer_weight"])
def test_dequantize_tile_exhaustive(fmt):
    """Every packed byte (both nibbles) with every scale byte: the tile decoder equals the reference."""
    block = fp4.BLOCK_SIZE[fmt]
    pairs = np.arange(256, dtype=np.uint8)
    scales = np.arange(256, dtype=np.uint8)
    if fmt == "mxfp4":
        scales = scales[scales <= 254]
    rows = len(scales)
    base = np.resize(pairs, block // 2 * 32)  # 32 blocks per row: every byte in every nibble position
    p = np.stack([np.roll(base, r % 7) for r in range(rows)])
    byte = np.repeat(scales[:, None], p.shape[1] * 2 // block, axis=1)
    g = jnp.float32(0.37)
    got = tile_codes.dequantize_tile(jnp.asarray(p), jnp.asarray(byte), g, fmt)
    codes = fp4.unpack_nibbles(jnp.asarray(p)).reshape(rows, -1, block)
    want = ref.dequantize_blocks(codes, jnp.asarray(byte), g, fmt).reshape(rows, -1)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    unscaled = tile_codes.dequantize_tile(jnp.asarray(p), jnp.asarray(byte), None, fmt)
    want_unscaled = ref.dequantize_blocks(codes, jnp.asarray(byte), jnp.float32(1.0), fmt).reshape(rows, -1)
    np.testing.assert_array_equal(np.asarray(unscaled), np.asarray(want_unscaled))
