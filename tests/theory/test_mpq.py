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


# ---------------------------------------------------------------------------------------------------------
# Diagonal-precision VAMP, MPQ's start, incoherence processing
# ---------------------------------------------------------------------------------------------------------


def unequal_problem(seed: int, d: int = 6):
    """One row, INT-2, H with an unequal diagonal (columns of X scaled by exp(0.5 N(0, 1))), unit mean diagonal."""
    k1, k2, k3, k4 = jax.random.split(jax.random.key(seed), 4)
    mix = jnp.eye(d) + 0.5 * jax.random.normal(k2, (d, d)) / np.sqrt(d)
    x = jax.random.normal(k1, (2 * d, d)) @ mix * jnp.exp(0.5 * jax.random.normal(k4, (d,)))[None]
    h = M.proxy_hessian(x)
    h = h / jnp.mean(jnp.diag(h))
    w = jax.random.normal(k3, (1, d))
    return w, h, M.int_codebook(w, bits=2, group=d)


def marginal_error_ratio(w, h, grid, beta, precision):
    """max |p_VAMP - p_exact| / max |p_exact - prior| of one row."""
    ex = M.exact_marginals(w[0], h, grid[0], beta=beta)
    vm = np.asarray(M.vamp(w, h, grid, beta=beta, iters=30, precision=precision)["marginals"][0])
    return float(np.max(np.abs(vm - ex)) / np.max(np.abs(ex - 0.25)))


@pytest.mark.parametrize("seed", range(3))
def test_diagonal_vamp_is_exact_to_first_order_on_an_unequal_diagonal(seed):
    """Against exact enumeration (float64): the diagonal form's error / departure-from-prior falls at least as fast
    as beta (measured: as beta^2) and is tiny; the scalar form's stays ~0.1 as beta -> 0 (the first-order error of
    one precision for unequal H_jj)."""
    with jax.enable_x64(True):
        w, h, book = unequal_problem(seed)
        w, h, grid = (jnp.asarray(np.asarray(a, np.float64)) for a in (w, h, book.grid))
        assert float(jnp.max(jnp.diag(h)) / jnp.min(jnp.diag(h))) > 1.5
        diag = [marginal_error_ratio(w, h, grid, b, "diagonal") for b in (0.02, 0.2)]
        scal = [marginal_error_ratio(w, h, grid, b, "scalar") for b in (0.02, 0.2)]
    assert diag[0] < 1e-3 and diag[0] < diag[1] * 0.1, diag  # -> 0, faster than beta
    assert scal[0] > 0.02 and scal[0] > 20 * diag[0], scal  # the scalar form's first-order error stays


def test_both_vamp_forms_are_exact_when_h_is_the_identity():
    """H = I decouples the coordinates: the LMMSE stage returns r1 = w with precision beta exactly (either form),
    so the denoiser's marginals are the exact posterior p_j(c) ~ exp(-beta/2 (c - w_j)^2)."""
    w, _, _ = problem(7, m=3, d=8)
    grid = jnp.broadcast_to(jnp.array([-1.5, -0.5, 0.5, 1.5]), (3, 8, 4))
    ex = np.asarray(jax.nn.softmax(-1.0 * (grid - w[..., None]) ** 2, axis=-1))  # beta = 2
    for precision in ("diagonal", "scalar"):
        out = M.vamp(w, jnp.eye(8), grid, beta=2.0, iters=5, precision=precision)
        assert np.allclose(np.asarray(out["marginals"]), ex, atol=1e-5), precision


def test_inv_spd_matches_the_inverse():
    from jaxwb.theory.mpq.message_passing import _inv_spd

    for d in (5, 16, 37, 64):
        _, x, h = problem(8, d=d, n=4 * d)
        a = h[None] + jnp.linspace(0.1, 2.0, 3)[:, None, None] * jnp.eye(d)[None]
        ref = np.linalg.inv(np.asarray(a, np.float64))
        assert np.allclose(np.asarray(_inv_spd(a)), ref, rtol=1e-4, atol=1e-5 * np.abs(ref).max()), d


@pytest.mark.parametrize("seed", range(2))
def test_mpq_start_best_is_never_worse_than_gptq_and_mpq_never_worse_than_its_start(seed):
    w, _, h = problem(seed, m=8, d=32, n=128)
    book = M.int_codebook(w, bits=3, group=16)
    st = M.mpq_start(w, h, book)
    og = obj(w, M.gptq(w, h, book), book, h)
    assert np.array_equal(np.asarray(st["gptq"]), np.asarray(M.gptq(w, h, book)))
    assert np.all(obj(w, st["codes"], book, h) <= og * (1 + 1e-6))
    om, fm = obj(w, st["map"], book, h), np.asarray(st["from_map"])
    assert np.array_equal(fm, om < og)
    codes = M.mpq(w, h, book)
    assert np.all(obj(w, codes, book, h) <= obj(w, st["codes"], book, h) * (1 + 1e-6))
    only_map = M.mpq_start(w, h, book, start="map")
    assert np.array_equal(np.asarray(only_map["codes"]), np.asarray(st["map"]))


def test_annealing_schedule():
    from jaxwb.theory.mpq.message_passing import _schedule

    s = np.asarray(_schedule(jnp.float32(100.0), jnp.float32(0.01), 5))
    assert np.allclose(s, [1.0, 100**0.25, 10.0, 100**0.75, 100.0], rtol=1e-5)
    assert np.allclose(np.asarray(_schedule(jnp.float32(3.0), jnp.float32(0.5), 1)), [3.0])


def test_library_defaults_are_the_documented_ones():
    """docs/papers/mpq.md states MPQ's defaults: relative beta 1024 reached by annealing from beta/100 over 30
    iterations, damping 0.5, diagonal precisions, start "best"; quantize_layer (quantize_model's solver) and the
    result's Config use the same."""
    import inspect

    from jaxwb.sims.mpq.config import Config

    want = {"beta": 1024.0, "iters": 30, "rho": 0.5, "anneal": 0.01, "precision": "diagonal", "start": "best"}
    for fn in (M.mpq, M.mpq_start, M.quantize_layer):
        got = {k: p.default for k, p in inspect.signature(fn).parameters.items() if k in want}
        assert got == want, (fn.__name__, got)
    cfg = Config()
    assert (cfg.beta, cfg.vamp_iters, cfg.rho, cfg.anneal, cfg.precision, cfg.mpq_start) == tuple(want.values())


@pytest.mark.parametrize("n", [1, 2, 12, 20, 24, 44, 64, 192])
def test_hadamard_is_orthonormal(n):
    had = np.asarray(M.hadamard(n), np.float64)
    assert np.allclose(had @ had.T, np.eye(n), atol=1e-6)
    assert np.allclose(np.abs(had) * np.sqrt(n), 1.0)


def test_incoherence_round_trip_and_objective():
    """W~ = U W V^T, H~ = V H V^T: coherent undoes it, and tr((W - Q) H (W - Q)^T) is the same in either basis;
    the rotated weight is incoherent (its largest entry over its RMS shrinks) and H~'s diagonal evens out."""
    k1, k2 = jax.random.split(jax.random.key(3))
    w = jax.random.normal(k1, (192, 64)) * jnp.exp(jax.random.normal(k2, (64,)))[None]
    w = w.at[3, 5].set(40.0)
    x = jax.random.normal(jax.random.key(5), (256, 64)) * jnp.exp(jax.random.normal(jax.random.key(6), (64,)))
    h = M.proxy_hessian(x)
    r = M.incoherent(w, h, key=jax.random.key(4))
    assert np.allclose(np.asarray(M.coherent(r["w"], r["u"], r["v"])), np.asarray(w), atol=1e-4)
    q = jnp.round(r["w"])
    lhs = float(jnp.sum(M.objective(r["w"], q, r["h"])))
    wq = M.coherent(q, r["u"], r["v"])
    rhs = float(jnp.sum(M.objective(w, wq, h)))
    assert lhs == pytest.approx(rhs, rel=1e-4)
    mu = lambda a: float(jnp.max(jnp.abs(a)) / jnp.sqrt(jnp.mean(a**2)))
    assert mu(r["w"]) < 0.5 * mu(w)
    dg, dgr = np.diag(np.asarray(h)), np.diag(np.asarray(r["h"]))
    assert dgr.max() / dgr.min() < dg.max() / dg.min()
    only_inputs = M.incoherent(w, h, key=jax.random.key(4), sides="inputs")
    assert np.array_equal(np.asarray(only_inputs["u"]), np.eye(192))
