"""Unit tests of ``jaxwb.theory.mpq``: GPTQ = LDLQ, BCD never increases the objective, a diagonal H reduces every
solver to RTN, tiny problems against exact enumeration, GPTQ against the NumPy port, FP4 codebooks bit-compatible
with the kernels' dequantizer, and bad inputs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxwb.pallas_kernels.quant import reference as qref
from jaxwb.sims.mpq.reference_np import gptq_numpy
from jaxwb.theory import mpq as M
from jaxwb.theory.mpq.codebooks import pack_fp4


def problem(seed: int, m: int = 6, d: int = 16, n: int = 64):
    k1, k2, k3 = jax.random.split(jax.random.key(seed), 3)
    mix = jnp.eye(d) + 0.7 * jax.random.normal(k2, (d, d)) / np.sqrt(d)
    x = jax.random.normal(k1, (n, d)) @ mix
    return jax.random.normal(k3, (m, d)), x, M.proxy_hessian(x)


def obj(w, codes, book, h):
    return np.asarray(M.objective(w, M.values(codes, book.grid), h))


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 10_000), bits=st.sampled_from([2, 3, 4]), block=st.sampled_from([1, 4, 16]))
def test_gptq_equals_ldlq(seed, bits, block):
    """QuIP's theorem: GPTQ (Cholesky of H^-1, any lazy-batch size) and LDLQ (H = U D U^T) give the same codes;
    in float64 so that no near-tie flips."""
    with jax.enable_x64(True):
        w, x, _ = problem(seed)
        h = M.proxy_hessian(jnp.asarray(x, jnp.float64))
        book = M.int_codebook(w, bits=bits, group=8)
        g = M.gptq(w, h, book, block=block)
        lq = M.ldlq(w, h, book)
    assert np.array_equal(np.asarray(g), np.asarray(lq))


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 10_000), block=st.sampled_from([1, 2]))
def test_bcd_never_increases_the_objective(seed, block):
    w, _, h = problem(seed)
    book = M.int_codebook(w, bits=2, group=16)
    init = M.rtn(w, book)
    out = M.bcd(w, h, book, init, block=block)
    assert np.all(obj(w, out, book, h) <= obj(w, init, book, h) * (1 + 1e-6))
    again = M.bcd(w, h, book, out, block=block)  # a fixed point: one more sweep changes nothing
    assert np.array_equal(np.asarray(again), np.asarray(out))


def test_diagonal_h_reduces_every_solver_to_rtn():
    w, _, _ = problem(1)
    h = jnp.diag(jnp.linspace(0.5, 2.0, w.shape[1]))
    book = M.int_codebook(w, bits=3, group=8)
    r = np.asarray(M.rtn(w, book))
    for method in ("gptq", "ldlq", "mpq"):
        codes, _ = M.quantize_layer(w, h, "int", method, bits=3, group=8)
        assert np.array_equal(np.asarray(codes), r), method
    assert np.array_equal(np.asarray(M.bcd(w, h, book, r)), r)


@pytest.mark.parametrize("seed", range(2))
def test_tiny_problems_vs_exact_enumeration(seed):
    """d = 8, INT-2: every solver >= the exact minimum; exact BCD from the exact minimiser stays there."""
    w, _, h = problem(seed, m=1, d=8, n=16)
    book = M.int_codebook(w, bits=2, group=8)
    fmin, cmin = M.exact_minimum(w[0], h, book.grid[0])
    for codes in (M.rtn(w, book), M.gptq(w, h, book), M.ldlq(w, h, book), M.mpq(w, h, book)):
        assert obj(w, codes, book, h)[0] >= fmin * (1 - 1e-5)
    stay = M.bcd(w, h, book, jnp.asarray(cmin)[None], block=2)
    assert obj(w, stay, book, h)[0] == pytest.approx(fmin, rel=1e-5)


def test_exact_marginals_sum_to_one_and_vamp_matches_at_tiny_beta():
    w, _, h = problem(2, m=1, d=6, n=12)
    dg = jnp.sqrt(jnp.diag(h))
    h = h / dg[:, None] / dg[None, :]
    book = M.int_codebook(w, bits=2, group=6)
    ex = M.exact_marginals(w[0], h, book.grid[0], beta=0.01)
    assert np.allclose(ex.sum(-1), 1.0)
    vm = np.asarray(M.vamp(w, h, book.grid, beta=0.01, iters=20)["marginals"][0])
    assert np.max(np.abs(vm - ex)) < 0.1 * np.max(np.abs(ex - 0.25))


@pytest.mark.parametrize(("bits", "group", "block"), [(3, 8, 128), (2, 32, 5)])
def test_gptq_matches_the_numpy_port(bits, group, block):
    w, x, h = problem(3, m=12, d=32, n=128)
    codes, book = M.quantize_layer(w, h, "int", "gptq", bits=bits, group=group)
    if block != 128:
        codes = M.gptq(w, h, book, block=block)
    q = np.asarray(M.values(codes, book.grid), np.float64)
    qn = gptq_numpy(np.asarray(w), np.asarray(x), bits=bits, group=group, blocksize=block)
    assert np.allclose(q, qn, atol=1e-5 * np.abs(qn).max())


@pytest.mark.parametrize("fmt", ["nvfp4", "mxfp4"])
def test_fp4_codebook_is_bit_compatible_with_the_kernels(fmt):
    w, _, h = problem(4, m=8, d=64, n=128)
    book = M.fp4_codebook(w, fmt)
    rtn = pack_fp4(M.rtn(w, book), book)
    kernel = qref.nvfp4_quantize(w) if fmt == "nvfp4" else qref.mxfp4_quantize(w)
    # the kernels' own rounding (RNE) agrees with nearest-on-the-grid except at exact ties
    assert np.mean(np.asarray(qref.dequantize(rtn)) == np.asarray(qref.dequantize(kernel))) > 0.99
    codes = M.gptq(w, h, book)
    assert np.array_equal(np.asarray(qref.dequantize(pack_fp4(codes, book))), np.asarray(M.values(codes, book.grid)))


def test_udu_factorisation():
    _, _, h = problem(5)
    u, dd = M.udu(h)
    assert np.allclose(np.asarray(u @ jnp.diag(dd) @ u.T), np.asarray(h), rtol=1e-4, atol=1e-4)
    assert np.allclose(np.tril(np.asarray(u), -1), 0) and np.allclose(np.diag(np.asarray(u)), 1)


def test_state_evolution_is_monotone_and_bounded():
    lam = np.linspace(0.2, 3.0, 50)
    e = M.state_evolution(lam, (-1.0, 0.0, 1.0), beta=2.0, iters=6)
    assert np.all(e > 0) and np.all(e <= np.var([-1.0, 0.0, 1.0]) + 1e-12) and np.all(np.diff(e) <= 1e-9)


def test_bad_inputs_raise_naming_the_parameter():
    w, _, h = problem(6)
    with pytest.raises(ValueError, match="bits"):
        M.int_codebook(w, bits=0, group=8)
    with pytest.raises(ValueError, match="group"):
        M.int_codebook(w, bits=2, group=5)
    with pytest.raises(ValueError, match="fmt"):
        M.fp4_codebook(w, "razer")
    with pytest.raises(ValueError, match="damping"):
        M.proxy_hessian(np.ones((4, 16)), damping=-1.0)
    book = M.int_codebook(w, bits=2, group=8)
    with pytest.raises(ValueError, match="h must have shape"):
        M.gptq(w, h[:4, :4], book)
    with pytest.raises(ValueError, match="block"):
        M.bcd(w, h, book, M.rtn(w, book), block=3)
    with pytest.raises(ValueError, match="beta"):
        M.vamp(w, h, book.grid, beta=-1.0)
    with pytest.raises(ValueError, match="method"):
        M.quantize_layer(w, h, "int", "sgd")
