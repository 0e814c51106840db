"""Bad calls into ``jaxwb.theory.mpq``: each raises a ValueError (or TypeError) whose message starts with the
parameter's name, in the style of ``tests/theory/test_bad_calls.py``.

``BAD_CALLS`` is the table (call -> error class and message fragment); ``python -m tests.theory.test_bad_calls_mpq``
prints it as markdown with the full message each call raises. Calls are strings evaluated in ``_ns()`` so the table
reads as what a user would type. Then: the same errors for traced values under ``jaxwb.theory.checked``, the scaled
forms (overflow refused by name or avoided, power-of-two rescaling exact), and ordinary calls unaffected.
"""

from __future__ import annotations

import functools
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxwb import theory
from jaxwb.theory import mpq as M
from jaxwb.theory.mpq import codebooks as cb
from jaxwb.theory.mpq import message_passing as mp
from jaxwb.theory.mpq import solvers as so
from tests.bad_calls import print_table, table_tests

nan, inf = math.nan, math.inf


@functools.cache
def _ns() -> dict:
    k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
    d = 16
    mix = jnp.eye(d) + 0.5 * jax.random.normal(k2, (d, d)) / np.sqrt(d)
    x = jax.random.normal(k1, (64, d)) @ mix
    w = jax.random.normal(k3, (4, d))
    h = M.proxy_hessian(x)
    book = M.int_codebook(w, bits=2, group=8)
    w32 = jax.random.normal(k3, (4, 32))
    fbook = M.fp4_codebook(w32, "nvfp4")
    combos, f = M.codeword_energies(w[0, :4], h[:4, :4], book.grid[0, :4])
    return dict(
        M=M, cb=cb, so=so, mp=mp, jnp=jnp, np=np, nan=nan, inf=inf, k=jax.random.key(1),
        x=x, w=w, h=h, book=book, grid=book.grid, codes=M.rtn(w, book), w32=w32, fbook=fbook,
        fcodes=M.rtn(w32, fbook), hsing=x[:4].T @ x[:4] / 4, lam=jnp.linspace(0.5, 2.0, 8),
        levels=jnp.array([-1.0, 0.0, 1.0]), combos=jnp.asarray(combos), f=jnp.asarray(f), Codebook=M.Codebook,
    )  # fmt: skip


V, T = ValueError, TypeError
# (call, error class, fragment of the message; the fragment always starts with the parameter's name)
BAD_CALLS = [
    # ---- codebooks: int_codebook, fp4_codebook, make_codebook
    ("M.int_codebook(w.at[0, 0].set(nan), bits=2, group=8)", V, "w must be finite"),
    ("M.int_codebook(w.at[1, 2].set(-inf), bits=2, group=8)", V, "w must be finite"),
    ("M.int_codebook(w[0], bits=2, group=8)", V, "w must have rank 2"),
    ("M.int_codebook(w.astype(jnp.complex64), bits=2, group=8)", V, "w must be real"),
    ("M.int_codebook(jnp.zeros((0, 16)), bits=2, group=8)", V, "w must be non-empty"),
    ("M.int_codebook('weights', bits=2, group=8)", V, "w must be an array"),
    ("M.int_codebook(w, bits=0, group=8)", V, "bits must be an integer in [1, 8]"),
    ("M.int_codebook(w, bits=9, group=8)", V, "bits must be an integer in [1, 8]"),
    ("M.int_codebook(w, bits=True, group=8)", V, "bits must be an integer in [1, 8]"),
    ("M.int_codebook(w, bits=2.0, group=8)", V, "bits must be an integer in [1, 8]"),
    ("M.int_codebook(w, bits=2, group=5)", V, "group must divide d=16"),
    ("M.int_codebook(w, bits=2, group=0)", V, "group must be a positive integer"),
    ("M.int_codebook(w, bits=2, group=8.0)", V, "group must be a positive integer"),
    ("M.fp4_codebook(w32, 'razer')", V, "fmt must be 'nvfp4' or 'mxfp4'"),
    ("M.fp4_codebook(w32, None)", V, "fmt must be 'nvfp4' or 'mxfp4'"),
    ("M.fp4_codebook(w, 'mxfp4')", V, "w.shape[1] must be a multiple of 32"),
    ("M.fp4_codebook(w32.at[0, 0].set(inf))", V, "w must be finite"),
    ("M.fp4_codebook(None)", V, "w must be an array"),
    ("M.fp4_codebook(w32[None])", V, "w must have rank 2"),
    ("M.make_codebook(w, 'int8')", V, "fmt must be 'int', 'nvfp4' or 'mxfp4'"),
    ("M.make_codebook(w, 4)", V, "fmt must be 'int', 'nvfp4' or 'mxfp4'"),
    ("M.make_codebook(w, 'int', bits=2, group=3)", V, "group must divide d=16"),
    # ---- nearest, values, pack_fp4, grid_spread
    ("M.nearest(jnp.array([0.1, nan]), grid[0, :2])", V, "x must be finite"),
    ("M.nearest(0.3 + 1j, jnp.zeros(3))", V, "x must be real"),
    ("M.nearest(w, grid[:, :8])", V, "grid must have shape (4, 16) + (K,)"),
    ("M.nearest(w, grid.at[0, 0, 0].set(nan))", V, "grid must be finite"),
    ("M.nearest(0.3, jnp.zeros((0,)))", V, "grid must be non-empty"),
    ("M.nearest(None, grid)", V, "x must be a real number or array"),
    ("M.values(codes.at[0, 0].set(-1), grid)", V, "codes must be in [0, 4)"),
    ("M.values(codes.at[0, 0].set(4), grid)", V, "codes must be in [0, 4)"),
    ("M.values(codes.astype(jnp.float32), grid)", V, "codes must be an integer array"),
    ("M.values(codes[:, :8], grid)", V, "codes must have shape (4, 16)"),
    ("M.values(codes, grid.at[0, 0, 0].set(inf))", V, "grid must be finite"),
    ("M.values(codes, 1.0)", V, "grid must have at least 1 axis"),
    ("cb.pack_fp4(fcodes.at[0, 0].set(20), fbook)", V, "codes must be in [0, 16)"),
    ("cb.pack_fp4(fcodes.at[0, 0].set(-1), fbook)", V, "codes must be in [0, 16)"),
    ("cb.pack_fp4(fcodes[:, :16], fbook)", V, "codes must have shape (4, 32)"),
    ("cb.pack_fp4(fcodes.astype(jnp.float32), fbook)", V, "codes must be an integer array"),
    ("cb.pack_fp4(codes, book)", V, "book must be an FP4 codebook"),
    ("cb.pack_fp4(fcodes, fbook.grid)", T, "book must be a Codebook"),
    ("cb.pack_fp4(fcodes, fbook._replace(scales=fbook.scales[:, :1]))", V, "book must be an FP4 codebook of"),
    ("cb.grid_spread(grid)", T, "book must be a Codebook"),
    ("cb.grid_spread(Codebook(grid.at[0, 0, 0].set(nan)))", V, "book.grid must be finite"),
    # ---- proxy_hessian, damp, objective
    ("M.proxy_hessian(x.at[0, 0].set(nan))", V, "x must be finite"),
    ("M.proxy_hessian(x * 1e25)", V, "x must be small enough that X^T X / n is finite"),
    ("M.proxy_hessian(x * 1e-25)", V, "x must be large enough that X^T X / n keeps its precision"),
    ("M.proxy_hessian(x, damping=inf)", V, "damping must be finite"),
    ("M.proxy_hessian(x, damping=nan)", V, "damping must be >= 0"),
    ("M.proxy_hessian(x, damping=-1.0)", V, "damping must be >= 0"),
    ("M.proxy_hessian(x, damping=jnp.ones(2))", V, "damping must be a real number (a scalar)"),
    ("M.proxy_hessian(x, damping='0.01')", V, "damping must be a real number"),
    ("M.proxy_hessian(x, damping=0.01j)", V, "damping must be real"),
    ("M.proxy_hessian(x[0])", V, "x must have rank 2"),
    ("M.proxy_hessian(jnp.zeros((0, 16)))", V, "x must be non-empty"),
    ("M.proxy_hessian(x.astype(jnp.complex64))", V, "x must be real"),
    ("M.damp(h, inf)", V, "lam must be finite"),
    ("M.damp(h, -0.1)", V, "lam must be >= 0"),
    ("M.damp(h * 1e36, 1e3)", V, "lam must be small enough that lam * mean(diag h)"),
    ("M.damp(h[:4], 0.01)", V, "h must be square"),
    ("M.damp(h.at[0, 0].set(nan), 0.01)", V, "h must be finite"),
    ("M.objective(w, w[:2], h)", V, "q must have the shape of w"),
    ("M.objective(w, w, h[:4, :4])", V, "h must have shape (16, 16)"),
    ("M.objective(w.at[0, 0].set(nan), w, h)", V, "w must be finite"),
    ("M.objective(w, w.at[0, 0].set(inf), h)", V, "q must be finite"),
    ("M.objective(w * 1e20, 0 * w, h)", V, "w - q must be small enough that (w - q)^T h (w - q) is finite"),
    # ---- rtn, gptq, ldlq, udu, gptq_factor
    ("M.rtn(w, grid)", T, "book must be a Codebook"),
    ("M.rtn(w[:2], book)", V, "book.grid must have shape (2, 16) + (K,)"),
    ("M.rtn(w.at[0, 0].set(inf), book)", V, "w must be finite"),
    ("M.gptq(w, h.at[0, 0].set(nan), book)", V, "h must be finite"),
    ("M.gptq(w, -h, book)", V, "h must be positive definite"),
    ("M.gptq(w, h.at[0, 0].set(-1.0), book)", V, "h must be positive definite"),
    ("M.gptq(w, hsing, book)", V, "h must be positive definite"),
    ("M.gptq(w, jnp.zeros((16, 16)), book)", V, "h must be positive definite"),
    ("M.gptq(w, M.proxy_hessian(x[:8], damping=0.0), book)", V, "h must be positive definite"),
    ("M.gptq(w, h.at[0, 1].add(1.0), book)", V, "h must be symmetric"),
    ("M.gptq(w, h, book, block=0)", V, "block must be a positive integer"),
    ("M.gptq(w, h, book, block=2.5)", V, "block must be a positive integer"),
    ("M.gptq(w, h[:8, :8], book)", V, "h must have shape (16, 16)"),
    ("M.gptq(w, h, (grid,))", T, "book must be a Codebook"),
    ("M.gptq(w, h, book._replace(grid=grid.at[0, 0, 0].set(nan)))", V, "book.grid must be finite"),
    ("M.gptq(w, h, book._replace(fmt='int4'))", V, "book.fmt must be 'int', 'nvfp4' or 'mxfp4'"),
    ("M.gptq(w.at[0, 0].set(nan), h, book)", V, "w must be finite"),
    ("M.ldlq(w, hsing, book)", V, "h must be positive definite"),
    ("M.ldlq(w, h.at[3, 2].add(0.5), book)", V, "h must be symmetric"),
    ("M.ldlq(w, h.at[0, 0].set(inf), book)", V, "h must be finite"),
    ("M.udu(-h)", V, "h must be positive definite"),
    ("M.udu(h[:, :8])", V, "h must be square"),
    ("so.gptq_factor(jnp.zeros((4, 4)))", V, "h must be positive definite"),
    # ---- bcd, enumeration
    ("M.bcd(w, h, book, codes.at[0, 0].set(7))", V, "init must be in [0, 4)"),
    ("M.bcd(w, h, book, codes.at[0, 0].set(-1))", V, "init must be in [0, 4)"),
    ("M.bcd(w, h, book, codes, max_sweeps=-1)", V, "max_sweeps must be an integer >= 0"),
    ("M.bcd(w, h, book, codes, max_sweeps=1.5)", V, "max_sweeps must be an integer >= 0"),
    ("M.bcd(w, h, book, codes, block=3)", V, "block must divide d=16"),
    ("M.bcd(w, h, book, codes, block=8)", V, "block must keep K^block <= 4096"),
    ("M.bcd(w, h, book, codes, block=0)", V, "block must be a positive integer"),
    ("M.bcd(w, h, book, codes[:2])", V, "init must have shape (4, 16)"),
    ("M.bcd(w, h, book, codes.astype(jnp.float32))", V, "init must be an integer array"),
    ("M.bcd(w, -h, book, codes)", V, "h must be positive definite"),
    ("M.codeword_energies(w[0, :4], h[:4, :4], grid[0, :3])", V, "grid must have shape (4,) + (K,)"),
    ("M.codeword_energies(w[0, :4].at[0].set(nan), h[:4, :4], grid[0, :4])", V, "w must be finite"),
    ("M.codeword_energies(w[0, :4], h[:4, :4].at[0, 1].add(1.0), grid[0, :4])", V, "h must be symmetric"),
    ("M.exact_minimum(w[0], h, grid[0])", V, "grid: K^d = 4^16 codewords is too many"),
    ("M.exact_minimum(w[:2], h, grid[0])", V, "w must have rank 1"),
    ("so.all_codewords(0, 2)", V, "d must be a positive integer"),
    ("so.all_codewords(30, 4)", V, "d must keep k^d <= 2^22"),
    ("so.all_codewords(3, -1)", V, "k must be a positive integer"),
    # ---- vamp
    ("M.vamp(w, h, grid, beta=nan)", V, "beta must be > 0"),
    ("M.vamp(w, h, grid, beta=-1.0)", V, "beta must be > 0"),
    ("M.vamp(w, h, grid, beta=inf)", V, "beta must be finite"),
    ("M.vamp(w, h, grid, beta=1e-45)", V, "beta must be a normal number"),
    ("M.vamp(w, h, grid, beta=1e38)", V, "beta must be small enough that beta * the largest eigenvalue of h"),
    ("M.vamp(w, h.at[0, 0].set(nan), grid, beta=1.0)", V, "h must be finite"),
    ("M.vamp(w, -h, grid, beta=1.0)", V, "h must be positive semidefinite"),
    ("M.vamp(w, h.at[0, 1].add(1.0), grid, beta=1.0)", V, "h must be symmetric"),
    ("M.vamp(w, h, grid[:, :8], beta=1.0)", V, "grid must have shape (4, 16) + (K,)"),
    ("M.vamp(w, h, grid.at[0, 0, 0].set(nan), beta=1.0)", V, "grid must be finite"),
    ("M.vamp(w, h, grid, beta=1.0, rho=0.0)", V, "rho must be in (0, 1]"),
    ("M.vamp(w, h, grid, beta=1.0, rho=1.5)", V, "rho must be in (0, 1]"),
    ("M.vamp(w, h, grid, beta=1.0, rho=nan)", V, "rho must be in (0, 1]"),
    ("M.vamp(w, h, grid, beta=1.0, iters=0)", V, "iters must be a positive integer"),
    ("M.vamp(w, h, grid, beta=1.0, logprior=jnp.zeros((4, 16, 3)))", V, "logprior must have shape (4, 16, 4)"),
    ("M.vamp(w, h, grid, beta=1.0, logprior=jnp.full(grid.shape, nan))", V, "logprior must be a log weight"),
    ("M.vamp(w, h, grid, beta=1.0, logprior=jnp.full(grid.shape, inf))", V, "logprior must be a log weight"),
    ("M.vamp(w, h, grid, beta=1.0, logprior=jnp.full(grid.shape, -inf))", V, "logprior must be above -inf"),
    ("M.vamp(w.at[0, 0].set(nan), h, grid, beta=1.0)", V, "w must be finite"),
    ("M.vamp(w, h, grid, beta=1.0, precision='full')", V, "precision must be one of ('diagonal', 'scalar')"),
    ("M.vamp(w, h, grid, beta=1.0, precision=None)", V, "precision must be one of ('diagonal', 'scalar')"),
    ("M.vamp(w, h, grid, beta=1.0, anneal=0.0)", V, "anneal must be in (0, 1]"),
    ("M.vamp(w, h, grid, beta=1.0, anneal=1.5)", V, "anneal must be in (0, 1]"),
    ("M.vamp(w, h, grid, beta=1.0, anneal=nan)", V, "anneal must be in (0, 1]"),
    ("M.vamp(w, h, grid, beta=1.0, anneal=1e-45)", V, "anneal must be zero or a normal number"),
    ("M.vamp(w, h, grid, beta=1.0, anneal='slow')", V, "anneal must be a real number"),
    ("M.vamp(w, h, grid, beta=1.0, anneal=jnp.ones(2))", V, "anneal must be a real number (a scalar)"),
    # ---- state evolution, planted problems, exact marginals
    ("M.state_evolution(jnp.array([1.0, nan]), levels, beta=1.0, iters=3)", V, "eigenvalues must be finite"),
    ("M.state_evolution(jnp.array([1.0, -1.0]), levels, beta=1.0, iters=3)", V, "eigenvalues must be >= 0"),
    ("M.state_evolution(jnp.ones((2, 2)), levels, beta=1.0, iters=3)", V, "eigenvalues must have rank 1"),
    ("M.state_evolution(lam, jnp.array([1.0, 1.0]), beta=1.0, iters=3)", V, "levels must hold at least 2 distinct"),
    ("M.state_evolution(lam, levels.at[0].set(inf), beta=1.0, iters=3)", V, "levels must be finite"),
    ("M.state_evolution(lam, levels, beta=0.0, iters=3)", V, "beta must be > 0"),
    ("M.state_evolution(lam, levels, beta=nan, iters=3)", V, "beta must be > 0"),
    ("M.state_evolution(lam, levels, beta=1.0, iters=0)", V, "iters must be a positive integer"),
    ("mp.scalar_mmse(-1.0, levels)", V, "gamma must be > 0"),
    ("mp.scalar_mmse(1.0, levels, n_quad=0)", V, "n_quad must be a positive integer"),
    ("M.planted_problem(0, 2.0, levels, beta=1.0, rows=2, key=k)", V, "d must be a positive integer"),
    ("M.planted_problem(8, 0.5, levels, beta=1.0, rows=2, key=k)", V, "n_ratio must be >= 1"),
    ("M.planted_problem(8, nan, levels, beta=1.0, rows=2, key=k)", V, "n_ratio must be finite"),
    ("M.planted_problem(8, 2.0, levels, beta=-1.0, rows=2, key=k)", V, "beta must be > 0"),
    ("M.planted_problem(8, 2.0, levels, beta=1.0, rows=0, key=k)", V, "rows must be a positive integer"),
    ("M.planted_problem(8, 2.0, levels, beta=1.0, rows=2, key=0)", V, "key must be a PRNG key"),
    ("M.planted_problem(8, 2.0, jnp.array([nan]), beta=1.0, rows=2, key=k)", V, "levels must be finite"),
    ("M.exact_marginals(w[0, :4], h[:4, :4], grid[0, :4], beta=-1.0)", V, "beta must be > 0"),
    ("M.exact_marginals(w[0, :4], h[:4, :4].at[0, 0].set(nan), grid[0, :4], beta=1.0)", V, "h must be finite"),
    ("M.exact_marginals(w[0], h, grid[0], beta=1.0)", V, "grid: K^d = 4^16 codewords is too many"),
    ("M.marginals_from_energies(combos, f.at[0].set(nan), 4, beta=1.0)", V, "f must be finite"),
    ("M.marginals_from_energies(combos, f[:3], 4, beta=1.0)", V, "f must have shape (256,)"),
    ("M.marginals_from_energies(combos, f, 3, beta=1.0)", V, "combos must be in [0, 3)"),
    ("M.marginals_from_energies(combos, f, 0, beta=1.0)", V, "k must be a positive integer"),
    ("M.marginals_from_energies(combos.astype(float), f, 4, beta=1.0)", V, "combos must be an integer array"),
    ("M.marginals_from_energies(combos, f, 4, beta=nan)", V, "beta must be > 0"),
    # ---- mpq, absolute_beta, quantize_layer
    ("M.mpq(w, jnp.zeros((16, 16)), book)", V, "h must be positive definite"),
    ("M.mpq(w, h.at[0, 0].set(nan), book)", V, "h must be finite"),
    ("M.mpq(w, -h, book)", V, "h must be positive definite"),
    ("M.mpq(w, h.at[0, 1].add(1.0), book)", V, "h must be symmetric"),
    ("M.mpq(w, h, book, beta=0.0)", V, "beta must be > 0"),
    ("M.mpq(w, h, book, beta=inf)", V, "beta must be finite"),
    ("M.mpq(w, h, book, rho=2.0)", V, "rho must be in (0, 1]"),
    ("M.mpq(w, h, book, iters=-3)", V, "iters must be a positive integer"),
    ("M.mpq(w, h, book, block=3)", V, "block must divide d=16"),
    ("M.mpq(w, h, book, max_sweeps=-1)", V, "max_sweeps must be an integer >= 0"),
    ("M.mpq(w, h, 'int')", T, "book must be a Codebook"),
    ("M.mpq(w, h, book, start='gptq')", V, "start must be one of ('best', 'map')"),
    ("M.mpq(w, h, book, start=1)", V, "start must be one of ('best', 'map')"),
    ("M.mpq(w, h, book, precision='dense')", V, "precision must be one of ('diagonal', 'scalar')"),
    ("M.mpq(w, h, book, anneal=2.0)", V, "anneal must be in (0, 1]"),
    ("M.mpq(w, h, book, anneal=-0.01)", V, "anneal must be in (0, 1]"),
    ("M.mpq_start(w, h, 'int')", T, "book must be a Codebook"),
    ("M.mpq_start(w, h.at[0, 0].set(nan), book)", V, "h must be finite"),
    ("M.mpq_start(w, hsing, book)", V, "h must be positive definite"),
    ("M.mpq_start(w[:, :8], h, book)", V, "book.grid must have shape (4, 8) + (K,)"),
    ("M.mpq_start(w, h, book, beta=-2.0)", V, "beta must be > 0"),
    ("M.mpq_start(w, h, book, iters=0)", V, "iters must be a positive integer"),
    ("M.mpq_start(w, h, book, rho=0.0)", V, "rho must be in (0, 1]"),
    ("M.mpq_start(w, h, book, anneal=0.0)", V, "anneal must be in (0, 1]"),
    ("M.mpq_start(w, h, book, precision='')", V, "precision must be one of ('diagonal', 'scalar')"),
    ("M.mpq_start(w, h, book, start='rtn')", V, "start must be one of ('best', 'map')"),
    ("M.quantize_layer(w, h, 'int', 'gptq', anneal=0.0)", V, "anneal must be in (0, 1]"),
    ("M.quantize_layer(w, h, 'int', 'rtn', start='map ')", V, "start must be one of ('best', 'map')"),
    ("M.quantize_layer(w, h, 'int', 'mpq', precision='Diagonal')", V, "precision must be one of"),
    # ---- incoherence: hadamard, rht, incoherent, coherent
    ("M.hadamard(6)", V, "n must be 2^a or 2^a (q + 1)"),
    ("M.hadamard(28)", V, "n must be 2^a or 2^a (q + 1)"),
    ("M.hadamard(0)", V, "n must be a positive integer"),
    ("M.hadamard(4.0)", V, "n must be a positive integer"),
    ("M.hadamard(True)", V, "n must be a positive integer"),
    ("M.rht(12, key=0)", V, "key must be a PRNG key"),
    ("M.rht(36, key=k)", V, "n must be 2^a or 2^a (q + 1)"),
    ("M.incoherent(w, h, key=None)", V, "key must be a PRNG key"),
    ("M.incoherent(w[:, :6], h[:6, :6], key=k)", V, "w.shape[1] must be a size hadamard supports"),
    ("M.incoherent(w[:3], h, key=k)", V, "w.shape[0] must be a size hadamard supports"),
    ("M.incoherent(w, h, key=k, sides='left')", V, "sides must be one of ('both', 'inputs')"),
    ("M.incoherent(w.at[0, 0].set(nan), h, key=k)", V, "w must be finite"),
    ("M.incoherent(w[0], h, key=k)", V, "w must have rank 2"),
    ("M.incoherent(w, h.at[0, 1].add(1.0), key=k)", V, "h must be symmetric"),
    ("M.incoherent(w, h[:8, :8], key=k)", V, "h must have shape (16, 16)"),
    ("M.coherent(w, jnp.eye(4), 2.0 * jnp.eye(16))", V, "v must be orthogonal"),
    ("M.coherent(w, jnp.ones((4, 4)), jnp.eye(16))", V, "u must be orthogonal"),
    ("M.coherent(w, jnp.eye(3), jnp.eye(16))", V, "u must have shape (4, 4)"),
    ("M.coherent(w, jnp.eye(4), jnp.eye(16).at[0, 0].set(nan))", V, "v must be finite"),
    ("M.coherent(w.at[0, 0].set(inf), jnp.eye(4), jnp.eye(16))", V, "q must be finite"),
    ("M.coherent(w[0], jnp.eye(4), jnp.eye(16))", V, "q must have rank 2"),
    ("mp.absolute_beta(4.0, jnp.zeros((16, 16)), book)", V, "h must be of mean diagonal > 0"),
    ("mp.absolute_beta(4.0, h, Codebook(jnp.zeros((4, 16, 4))))", V, "book must hold two distinct values"),
    ("mp.absolute_beta(-4.0, h, book)", V, "beta must be > 0"),
    ("M.quantize_layer(w, h, 'int', 'sgd')", V, "method must be one of"),
    ("M.quantize_layer(w, None, 'int', 'gptq', group=8)", V, "h (the proxy Hessian) is required"),
    ("M.quantize_layer(w, h, 'int', 'gptq', beta=-1.0)", V, "beta must be > 0"),
    ("M.quantize_layer(w, h, 'int', 'ldlq', rho=0.0)", V, "rho must be in (0, 1]"),
    ("M.quantize_layer(w, h.at[0, 0].set(nan), 'int', 'rtn', group=8)", V, "h must be finite"),
    ("M.quantize_layer(w, hsing, 'int', 'ldlq', group=8)", V, "h must be positive definite"),
    ("M.quantize_layer(w, h, 'int', 'ldlq', bits=9)", V, "bits must be an integer in [1, 8]"),
    ("M.quantize_layer(w, h, 'fp8', 'rtn')", V, "fmt must be 'int', 'nvfp4' or 'mxfp4'"),
    ("M.quantize_layer(w, h, 'int', 'mpq', block=0)", V, "block must be a positive integer"),
]


test_bad_call_raises_naming_the_parameter, test_the_table_is_large_and_unique = table_tests(
    BAD_CALLS, _ns, at_least=110
)


# ---------------------------------------------------------------------------------------------------------
# Traced values: the same errors under jaxwb.theory.checked; plain jit unchecked
# ---------------------------------------------------------------------------------------------------------


def _checked_cases():
    ns = _ns()
    w, h, book, codes, grid = ns["w"], ns["h"], ns["book"], ns["codes"], ns["grid"]
    return [
        ("gptq-nan", lambda hh: M.gptq(w, hh, book), (h.at[0, 0].set(nan),), "h must be finite", (h,)),
        ("gptq-indefinite", lambda hh: M.gptq(w, hh, book), (-h,), "h must be positive definite", (h,)),
        ("gptq-asymmetric", lambda hh: M.gptq(w, hh, book), (h.at[0, 1].add(1.0),), "h must be symmetric", (h,)),
        ("ldlq-singular", lambda hh: M.ldlq(w, hh, book), (ns["hsing"],), "h must be positive definite", (h,)),
        ("values-negative", lambda cc: M.values(cc, grid), (codes.at[0, 0].set(-1),), "codes must be in [0, 4)",
         (codes,)),
        ("nearest-nan", lambda xx: M.nearest(xx, grid), (w.at[0, 0].set(nan),), "x must be finite", (w,)),
        ("proxy_hessian-nan", lambda xx: M.proxy_hessian(xx), (ns["x"].at[0, 0].set(nan),), "x must be finite",
         (ns["x"],)),
        ("rtn-inf", lambda ww: M.rtn(ww, book), (w.at[0, 0].set(inf),), "w must be finite", (w,)),
    ]  # fmt: skip


@pytest.mark.parametrize("case", _checked_cases(), ids=lambda c: c[0])
def test_checked_raises_the_eager_error_for_traced_values(case):
    _, fn, bad, fragment, good = case
    with pytest.raises(ValueError, match=re.escape(fragment)):
        fn(*bad)
    checked_fn = theory.checked(fn)
    with pytest.raises(ValueError, match=re.escape(fragment)):
        checked_fn(*bad)
    np.testing.assert_array_equal(np.asarray(checked_fn(*good)), np.asarray(fn(*good)))
    jax.block_until_ready(jax.jit(fn)(*good))  # plain jit: unchecked, and not broken by the checked trace


def test_checks_see_the_primal_under_grad_and_every_member_under_vmap():
    ns = _ns()
    w, h = ns["w"], ns["h"]
    with pytest.raises(ValueError, match="x must be finite"):
        jax.grad(lambda s: M.proxy_hessian(ns["x"] * s).sum())(nan)
    hs = jnp.stack([h, h.at[0, 0].set(nan)])
    with pytest.raises(ValueError, match=r"h must be finite.*member 1"):
        jax.vmap(lambda hh: M.objective(w, w * 0.5, hh))(hs)
    g = jax.grad(lambda s: M.objective(w * s, w * 0.5, h).sum())(1.0)
    assert np.isfinite(float(g))


# ---------------------------------------------------------------------------------------------------------
# Numeric edges: scaled forms
# ---------------------------------------------------------------------------------------------------------


def test_proxy_hessian_scaled_form_exact_and_plain_inside_the_range():
    ns = _ns()
    x = ns["x"]
    h = M.proxy_hessian(x)
    for k in (-40, -20, 20, 40):  # outside [2^-32, 2^32] the scaled form is used: still H * 4^k exactly
        hk = M.proxy_hessian(x * 2.0**k)
        np.testing.assert_array_equal(np.asarray(hk), np.asarray(h * 4.0**k))
    # an x whose sum of squares overflows float32 but whose H fits: computed, not inf
    xb = x * 2.0**61
    assert not bool(jnp.all(jnp.isfinite(xb.T @ xb)))
    big = M.proxy_hessian(xb)
    assert bool(jnp.all(jnp.isfinite(big)))
    np.testing.assert_array_equal(np.asarray(big / 2.0**100 / 2.0**22), np.asarray(h))
    # inside the range: the plain formula, bit for bit
    plain = so.damp(x.T @ x / x.shape[0], 0.01)
    np.testing.assert_array_equal(np.asarray(h), np.asarray(plain))


@pytest.mark.parametrize("solver", ["gptq", "ldlq", "bcd", "mpq"])
def test_solvers_codes_do_not_depend_on_the_scale_of_h(solver):
    ns = _ns()
    w, h, book, codes = ns["w"], ns["h"], ns["book"], ns["codes"]
    run = {
        "gptq": lambda hh: M.gptq(w, hh, book),
        "ldlq": lambda hh: M.ldlq(w, hh, book),
        "bcd": lambda hh: M.bcd(w, hh, book, codes),
        "mpq": lambda hh: M.mpq(w, hh, book, iters=10),
    }[solver]
    base = np.asarray(run(h))
    for k in (-60, -45, 45, 60):  # H * 4^k spans float32 from 1e-36 to 1e36: beyond [2^-32, 2^32] rescaled
        np.testing.assert_array_equal(np.asarray(run(h * 4.0**k)), base, err_msg=f"4^{k}")


def test_mpq_codes_do_not_depend_on_the_scale_of_the_weights():
    ns = _ns()
    w, h = ns["w"], ns["h"]
    book = M.int_codebook(w, bits=2, group=8)
    base = np.asarray(M.mpq(w, h, book, iters=10))
    for k in (-40, -12, 12, 40):  # w and its grid scaled together: VAMP's precisions would clip without rescaling
        bk = M.int_codebook(w * 2.0**k, bits=2, group=8)
        np.testing.assert_array_equal(np.asarray(M.mpq(w * 2.0**k, h, bk, iters=10)), base, err_msg=f"2^{k}")


def test_degenerate_grid_and_overflowing_energies():
    ns = _ns()
    w, h = ns["w"], ns["h"]
    flat = M.Codebook(jnp.zeros((4, 16, 4)))  # every coordinate has one value: nothing to choose
    assert np.array_equal(np.asarray(M.mpq(w, h, flat)), np.zeros((4, 16)))
    combos, f = ns["combos"], ns["f"]
    p = M.marginals_from_energies(combos, f, 4, beta=1e308)  # -beta/2 f overflows float64: the limit, no NaN
    assert np.all(np.isfinite(p)) and np.allclose(p.sum(-1), 1.0)
    i = int(np.argmin(np.asarray(f)))
    assert np.allclose(p[np.arange(combos.shape[1]), combos[i]], 1.0)


if __name__ == "__main__":  # print the table: call -> message
    print_table([call for call, _, _ in BAD_CALLS], _ns)
