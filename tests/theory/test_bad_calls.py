"""Bad calls into theory/ and models/: each raises a ValueError (or TypeError) that names the parameter.

``BAD_CALLS`` is the table (call -> message fragment); ``python -m tests.theory.test_bad_calls`` prints it as
markdown with the full message each call raises. Calls are strings evaluated in ``_ns()`` so the table reads as
what a user would type. The second half checks the same errors for traced values under
``jaxwb.theory.checked`` (one function per module at least) and that plain ``jit`` is unaffected.
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
from jaxwb.models import teacher_student as tsm
from jaxwb.models import train as tr
from jaxwb.theory import aldrift as al
from jaxwb.theory import dithered_quant as dq
from jaxwb.theory import hessian as hs
from jaxwb.theory import interpolation as ip
from jaxwb.theory import river_valley as rv
from jaxwb.theory import sparse_attention as sa
from jaxwb.theory import speed_scaling as ss
from jaxwb.theory import teacher_student as ts
from jaxwb.theory import tv_distance as tv
from jaxwb.theory import zoe_grad as zg
from tests.bad_calls import print_table

nan, inf = math.nan, math.inf


@functools.cache
def _ns() -> dict:
    k = jax.random.key(0)
    A = jax.random.normal(jax.random.key(1), (12, 3))
    b = A @ jnp.ones(3)
    pr = ip.make_problem(A, b)
    kz = ip.make_problem(A, b, sampling="norm")
    p = tv.random_ngram(3, 1, key=jax.random.key(2))
    q = tv.perturb(p, 0.5, key=jax.random.key(3))
    q_nan = tv.ARModel(p.step_fn, p.params.at[0, 0].set(nan), p.K, p.all_fn)
    d = tv.decode(p, q, jnp.zeros(4, bool), key=k, n=3, m=4)
    c = jnp.ones((4, 3))
    levels = zg.int_levels(3)
    return dict(
        tsm=tsm, sa=sa, q3=jnp.ones((2, 8, 4)), imp=jnp.full((2, 4, 4), 0.25), m3=jnp.ones((2, 4, 4), bool),
        rv=rv, ip=ip, tv=tv, dq=dq, zg=zg, ss=ss, ts=ts, al=al, jnp=jnp,
        cost=al.rastrigin_envelope(1.0, 0.0, 1.0, jnp.zeros(2)), prior=al.gaussian_prior(jnp.zeros(2), 1.0),
        g2=al.Gaussian.from_cov(jnp.zeros(2), jnp.eye(2)), I2=jnp.eye(2),
        r=jnp.array([0.0, 1.0]), dl=jnp.array([2.0, 3.0]), nan=nan, inf=inf, k=k,
        valley=rv.straight_valley(0.1, 10.0), A=A, b=b, pr=pr, kz=kz, x0=jnp.zeros(3),
        p=p, q=q, q_nan=q_nan, other=tv.random_ngram(4, 1, key=k), d=d, c=c,
        est=tv.Estimate(jnp.float32(0.1), jnp.float32(0.01), 10), levels=levels,
        q_fn=lambda z: zg.quantize(z, levels), hs=hs, tr=tr, jax=jax, np=np, theory=theory,
    )  # fmt: skip


# (call, fragment of the ValueError message; the fragment always starts with the parameter's name)
BAD_CALLS = [
    # ---- models.teacher_student (the model layer's inputs are checked the same way)
    ("tsm.make_teacher(0, jnp.ones(2), key=k)", "d must be a positive integer"),
    ("tsm.make_teacher(4, jnp.array([1.0, nan]), key=k)", "a2 must be finite"),
    ("tsm.make_teacher(4, -jnp.ones(2), key=k)", "a2 must be >= 0"),
    ("tsm.make_teacher(4, jnp.ones((2, 2)), key=k)", "a2 must have rank 1"),
    ("tsm.init_student(4, jnp.ones(3), key=k, v_scale=-1.0)", "v_scale must be >= 0"),
    ("tsm.sample(tsm.make_teacher(4, jnp.ones(2), key=k), 0, 0.1, key=k)", "n must be a positive integer"),
    ("tsm.sample(tsm.make_teacher(4, jnp.ones(2), key=k), 8, nan, key=k)", "delta must be"),
    ("tsm.prior_teacher(4, jnp.zeros(0), key=k)", "a2 must be non-empty"),
    ("tsm.symmetric_noise(-2, key=k)", "n must be a positive integer"),
    # ---- sparse_attention
    ("sa.block_importance(jnp.ones((8, 4)), q3, block_q=2, block_k=2)", "q must have rank 3"),
    ("sa.block_importance(q3, jnp.ones((2, 8, 5)), block_q=2, block_k=2)", "k must share heads and head_dim"),
    ("sa.block_importance(q3.at[0, 0, 0].set(nan), q3, block_q=2, block_k=2)", "q must be finite"),
    ("sa.block_importance(q3, q3, block_q=3, block_k=2)", "block_q must divide"),
    ("sa.block_importance(q3.astype(jnp.complex64), q3, block_q=2, block_k=2)", "q must be real"),
    ("sa.block_attention_mass(q3, jnp.ones((2, 4, 4)), 2)", "k must have the shape of q"),
    ("sa.block_attention_mass(q3, q3, 0)", "block must be"),
    ("sa.pool_blocks(jnp.ones(8), 2)", "x must have at least 2 axes"),
    ("sa.select_blocks(imp, 5.0)", "budget must be in (0, 1]"),
    ("sa.select_blocks(imp, nan)", "budget must be"),
    ("sa.select_blocks(imp, 0.5, allocation='random')", "allocation must be one of"),
    ("sa.select_blocks(-imp, 0.5)", "importance must be >= 0"),
    ("sa.select_blocks(imp[0], 0.5)", "importance must have rank 3"),
    ("sa.head_concentration(jnp.ones((2, 4, 1)))", "importance must have >= 2 key blocks"),
    ("sa.topk_mass(imp, 5)", "k must be <= the number of key blocks"),
    ("sa.anchor_steps(0, 2)", "num_steps must be"),
    ("sa.anchor_steps(8, 1.5)", "period must be an integer >= 1"),
    ("sa.mask_trajectory(imp[None], jnp.array([False]), 0.5)", "anchors must be True at step 0"),
    ("sa.mask_trajectory(imp[None], jnp.array([True, True]), 0.5)", "anchors must have one entry per step"),
    ("sa.masked_attention(q3, q3, q3, jnp.ones((2, 3, 4), bool))", "block_mask must have shape"),
    ("sa.masked_attention(q3, q3, q3, imp)", "block_mask must be a bool array"),
    ("sa.mask_overlap(m3, m3[:, :2])", "b must have the shape of a"),
    ("sa.evaluate_masks(q3[None], q3[None], q3[None], m3[None].repeat(2, 0))", "k, v and masks must share"),
    # ---- river_valley
    ("rv.spectral_radius(nan, 100.0, 0.5)", "lr must be > 0, got nan"),
    ("rv.spectral_radius(-0.1, 100.0, 0.5)", "lr must be > 0, got -0.1"),
    ("rv.spectral_radius(inf, 100.0, 0.5)", "lr must be finite"),
    ("rv.spectral_radius(0.1, 100.0, 1.0)", "beta must be in [0.0, 1.0)"),
    ("rv.spectral_radius(0.1, -1.0, 0.5)", "lam must be >= 0"),
    ("rv.spectral_radius(0.1, 1.0, 0.5, method='adam')", "method must be one of"),
    ("rv.spectral_radius(0.1 + 1j, 1.0, 0.5)", "lr must be real"),
    ("rv.gd_threshold(-1.0)", "lam must be > 0"),
    ("rv.gd_threshold(inf)", "lam must be finite"),
    ("rv.hb_threshold(1.0, 1.5)", "beta must be in [0.0, 1.0)"),
    ("rv.nesterov_threshold(jnp.array([1.0, -2.0]), 0.5)", "lam must be > 0, got an array with 1 offending"),
    ("rv.straight_valley(-1.0, 1.0)", "mu must be >= 0"),
    ("rv.curved_valley(0.1, 1.0, nan, 1.0)", "a must be finite"),
    ("rv.high_dim_valley(0.1, jnp.zeros((0,)))", "lams must be non-empty"),
    ("rv.high_dim_valley(0.1, jnp.ones((2, 2)))", "lams must have rank 0 or 1"),
    ("rv.valley_spectrum(0, 1.0, 2.0)", "d must be a positive integer"),
    ("rv.valley_spectrum(3, 2.0, 1.0)", "lam_max must be >= lam_min"),
    ("rv.optimize(valley, jnp.array([nan, 1.0]), lr=0.1, steps=5)", "theta0 must be finite"),
    ("rv.optimize(valley, jnp.ones(3), lr=0.1, steps=5)", "theta0 must have last axis 1 + d = 2"),
    ("rv.optimize(valley, jnp.ones(2), lr=0.1, steps=0)", "steps must be a positive integer"),
    ("rv.optimize(valley, jnp.ones(2, jnp.complex64), lr=0.1, steps=5)", "theta0 must be real"),
    ("rv.optimize(valley, jnp.ones(2), lr=0.1, steps=5, blowup=-1.0)", "blowup must be > 0"),
    ("rv.optimize(valley._replace(mu=jnp.float32(nan)), jnp.ones(2), lr=0.1, steps=5)", "valley.mu must be finite"),
    ("rv.quadratic_roots(nan, 0.5)", "c1 must be finite"),
    ("rv.linear_river_transient(-1, 0.0, 0.1, 1.0, 0.5)", "t must be >= 0"),
    ("rv.hb_guidance(1.0, 2.0)", "mu_river must be < lam_valley"),
    ("rv.hb_guidance(1.0, 0.1, safety=0.0)", "safety must be > 0"),
    ("rv.quadratic_closed_form(3, inf, 0.1, 1.0, 0.5)", "x0 must be finite"),
    ("rv.valley_loss(jnp.ones(3), valley)", "theta must have last axis"),
    ("rv.hb_optimal_params(1.0, 0.5)", "L must be >= mu"),
    ("rv.momentum_step(lambda z: z, jnp.ones(2), jnp.ones(3), lr=0.1, beta=0.5, method='hb')", "x_prev must have"),
    # ---- interpolation
    ("ip.make_problem(jnp.ones(3), jnp.ones(3))", "A must have rank 2"),
    ("ip.make_problem(A.at[0, 0].set(nan), b)", "A must be finite"),
    ("ip.make_problem(A, b[:-1])", "b must have one entry per row of A (12)"),
    ("ip.make_problem(A.astype(jnp.complex64), b)", "A must be real"),
    ("ip.make_problem(jnp.zeros((0, 3)), jnp.zeros(0))", "A must be non-empty"),
    ("ip.make_problem(A, b, sampling='random')", "sampling must be one of"),
    ("ip.make_problem(A, b, rtol=-1.0)", "rtol must be > 0"),
    ("ip.make_problem(A, b.at[0].add(1.0))", "b must be in the range of A"),
    ("ip.make_problem(jnp.ones((5, 2)), jnp.ones(5))", "A must have full column rank"),
    ("ip.spectrum(4, 0.5)", "cond must be >= 1"),
    ("ip.spectrum(4, inf)", "cond must be >= 1, got inf"),
    ("ip.random_problem(3, 5, cond=10.0, key=k)", "n must be >= d=5"),
    ("ip.run(pr, jnp.full(3, nan), lr=0.1, batch_size=1, steps=4, key=k)", "x0 must be finite"),
    ("ip.run(pr, x0, lr=-0.1, batch_size=1, steps=4, key=k)", "lr must be > 0"),
    ("ip.run(pr, x0, lr=0.1, batch_size=0, steps=4, key=k)", "batch_size must be a positive integer"),
    ("ip.run(pr, x0, lr=0.1, batch_size=1, steps=10, record_every=3, key=k)", "steps must be a multiple of"),
    ("ip.run(pr, x0, lr=0.1, beta=1.0, batch_size=1, steps=4, key=k)", "beta must be in [0.0, 1.0)"),
    ("ip.run(pr, jnp.zeros(4), lr=0.1, batch_size=1, steps=4, key=k)", "x0 must have shape (3)"),
    ("ip.run(pr.A, x0, lr=0.1, batch_size=1, steps=4, key=k)", "problem must be a Problem"),
    ("ip.coordinate_descent(pr, jnp.zeros(2), lr=0.1, steps=4, key=k)", "x0 must have shape (3)"),
    ("ip.mean_square_rate(pr, lr=0.1, beta=0.5, batch_size=0)", "batch_size must be > 0"),
    ("ip.mean_square_rate(pr, lr=0.1, beta=0.5, batch_size=1, cap=0.5)", "cap must be > 1"),
    ("ip.mean_square_rate(pr, lr=nan, beta=0.5, batch_size=1)", "lr must be > 0, got nan"),
    ("ip.mean_square_rate(pr, kernel='K', lr=0.1, beta=0.5, batch_size=1)", "kernel must be a NoiseKernel"),
    ("ip.mean_square_rate(ip.noise_kernel(pr), lr=0.1, beta=0.5, batch_size=1)", "problem must be a Problem"),
    ("ip.expected_sq_error(pr, jnp.ones(4), lr=0.1, beta=0.5, batch_size=1, steps=3)", "e0 must have shape (3)"),
    ("ip.second_moment_trajectory(pr, jnp.ones(3), lr=0.1, beta=-0.5, batch_size=1, steps=3)", "beta must be in"),
    ("ip.momentum_rule(-1.0, 1.0, 1.0, 1)", "mu must be > 0"),
    ("ip.stable_sufficient(0.1, 0.5, 1, jnp.array([-1.0, 1.0]), 2.0)", "h must be > 0"),
    ("ip.efold_time(-0.5)", "rho must be >= 0"),
    ("ip.kaczmarz_rate_bound(jnp.zeros((3, 2)))", "A must be non-zero"),
    ("ip.kaczmarz_bound(A, -1)", "t must be >= 0"),
    ("ip.minibatch_gradient(pr, x0, jnp.array([0, 12]))", "idx must be row indices in [0, 12)"),
    ("ip.minibatch_gradient(pr, x0, jnp.array([0.5]))", "idx must be an integer array"),
    ("ip.operator_apply(pr, jnp.zeros((3, 3)), lr=0.1, beta=0.5, batch_size=1)", "S must have shape (6, 6)"),
    ("ip.kaczmarz(pr, x0, steps=4, key=k)", "problem must use 'norm' sampling"),
    ("ip.rule_saturation(1.0, 1.0, 1.0, method='sgd')", "method must be one of"),
    # ---- tv_distance
    ("tv.ngram_model(jnp.array([[0.0, nan], [0.0, 0.0], [0.0, 0.0]]))", "logits must be finite"),
    ("tv.ngram_model(jnp.zeros((3, 3)))", "logits must have shape (4, 3)"),
    ("tv.ngram_model(jnp.zeros(()))", "logits must have at least 1 axes"),
    ("tv.ngram_model(jnp.zeros((4, 3), jnp.complex64))", "logits must be real"),
    ("tv.markov_model(jnp.zeros(2), jnp.zeros((3, 3)))", "trans_logits must have shape (2, 2)"),
    ("tv.random_ngram(0, key=k)", "K must be a positive integer"),
    ("tv.random_ngram(3, -1, key=k)", "order must be a non-negative integer"),
    ("tv.random_ngram(3, 1, inf, key=k)", "scale must be finite"),
    ("tv.perturb(p, 0.1)", "key must be given when direction is None"),
    ("tv.perturb(p, -0.1, key=k)", "size must be >= 0"),
    ("tv.perturb(p, 0.1, jnp.ones((2, 2)))", "direction must have shape (4, 3)"),
    ("tv.exact_tv(p, q_nan, 3)", "q.params must be finite"),
    ("tv.exact_kl(p, q, 0)", "n must be a positive integer"),
    ("tv.exact_tv(p, other, 3)", "p and q must share the vocabulary size K"),
    ("tv.exact_tv(p, q, 40)", "n too large for enumeration"),
    ("tv.tv_logit(p, q, 3, 0, key=k)", "m must be a positive integer"),
    ("tv.tv_logit(p, q, 3, 8, kind='bogus', key=k)", "kind must be one of"),
    ("tv.tv_logit(p, q_nan, 3, 8, key=k)", "q.params must be finite"),
    ("tv.tv_noisy_logit(p, q, 3, 8, -1.0, key=k)", "sigma must be >= 0"),
    ("tv.tv_noisy_logit(p, q, 3, 8, 0.1, 0, key=k)", "r must be a positive integer"),
    ("tv.tv_sample(p, q, 3, 8, 0, key=k)", "s must be a positive integer"),
    ("tv.decode(p, q, jnp.zeros(3), key=k, n=3, m=3)", "from_q must be a boolean array"),
    ("tv.decode(p, q, jnp.zeros(4, bool), key=k, n=3, m=3)", "from_q must have shape (3)"),
    ("tv.logit_z_from_decoded(d, 'plain', length=0)", "length must be in [1, n=3]"),
    ("tv.noisy_z_from_decoded(d, 0.1, 0.0, key=k)", "r must be > 0"),
    ("tv.smoothed_z(nan, 0.1)", "mu must be finite"),
    ("tv.smoothed_z(0.1, -1.0)", "s2 must be >= 0"),
    ("tv.correct(jnp.ones(3), -1.0)", "var must be >= 0"),
    ("tv.sample_z_from_counts(c, c[:, :2], 4.0)", "c_q must have the shape of c_p"),
    ("tv.sample_z_from_counts(-c, c, 4.0)", "c_p must be counts in [0, s]"),
    ("tv.sample_z_from_counts(c, c, 4.0, mask=jnp.ones(2))", "mask must have shape (3)"),
    ("tv.sample_counts(d, 2.5, key=k)", "s must be a whole number >= 1"),
    ("tv.hoeffding_m(0.0, 0.1)", "eps must be > 0"),
    ("tv.plain_z(nan)", "L must be > -inf"),
    ("tv.sequence_logprob(p, jnp.array([[0, 5]]))", "tokens must be token ids in [0, K=3)"),
    ("tv.round_bf16(jnp.array([inf]))", "x must be finite"),
    ("tv.random_transformer(4, 4, d_model=6, n_heads=4, key=k)", "d_model must be divisible by n_heads"),
    ("est.halfwidth(1.5)", "level must be in [0.0, 1.0)"),
    ("tv.noisy_plugin_bias_bound(0.1, 0, 1)", "n must be > 0"),
    # ---- dithered_quant
    ("dq.rademacher_exp_moment(jnp.zeros(4))", "a must be not all zero"),
    ("dq.rademacher_exp_moment(jnp.ones(21))", "a must have at most 20 entries"),
    ("dq.rademacher_exp_moment(jnp.ones((2, 3)))", "a must have rank 1"),
    ("dq.rademacher_exp_moment(jnp.array([1.0, nan]))", "a must be finite"),
    ("dq.rademacher_exp_moment(jnp.ones(3), inf)", "lam must be finite"),
    ("dq.mse_bound(0)", "bits must be >= 1"),
    ("dq.mse_bound(inf)", "bits must be >= 1, got inf"),
    ("dq.finite_level_factor(jnp.array([2.0, nan]))", "bits must be >= 1, got an array with 1 offending"),
    ("dq.gaussian_exp_moment(0.5)", "lam must be < 1/2"),
    ("dq.gaussian_exp_moment(-inf)", "lam must be < 1/2, got -inf"),
    ("dq.high_resolution_mse(4, -1.0)", "moment must be > 0"),
    ("dq.dither_error_density(nan, 4)", "t must be finite"),
    ("dq.uniform_grid_mse(4, 1)", "d must be >= 2"),
    ("dq.o1_term(-0.1, 4)", "measured_mse must be >= 0"),
    # ---- zoe_grad
    ("zg.surrogate_grad(0.0, levels, 0.0, law='gaussian')", "sigma must be > 0"),
    ("zg.surrogate_grad(0.0, levels, inf, law='gaussian')", "sigma must be finite"),
    ("zg.surrogate_grad(0.0, jnp.array([1.0, 0.0]), 0.5, law='gaussian')", "levels must be strictly increasing"),
    ("zg.surrogate_grad(0.0, jnp.array([1.0]), 0.5, law='gaussian')", "levels must have a last axis of length >= 2"),
    ("zg.surrogate_grad(nan, levels, 0.5, law='gaussian')", "x must be finite"),
    ("zg.surrogate_grad(0.0, levels, 0.5, law='cauchy')", "law must be one of"),
    ("zg.smoothed(0.0, levels.astype(jnp.complex64), 0.5, law='gaussian')", "levels must be real"),
    ("zg.smoothed(0.0, levels.at[1].set(inf), 0.5, law='gaussian')", "levels must be finite"),
    ("zg.quantize(jnp.array([inf]), levels)", "x must be finite"),
    ("zg.score(nan, 'gaussian')", "u must be finite"),
    ("zg.pdf(nan, 'gaussian')", "t must be a real number (not NaN)"),
    ("zg.cdf(0.0, 'student')", "law must be one of"),
    ("zg.char_fn(inf, 'logistic')", "t must be finite"),
    ("zg.sample((-1,), 'gaussian', key=k)", "shape must be a tuple of non-negative integers"),
    ("zg.score_estimator(q_fn, 0.0, 0.5, law='uniform', key=k, n=4)", "law must be one of"),
    ("zg.two_point_estimator(q_fn, 0.0, 0.5, law='gaussian', key=k, n=0)", "n must be a positive integer"),
    ("zg.two_point_estimator(q_fn, jnp.array([nan]), 0.5, law='gaussian', key=k, n=4)", "x must be finite"),
    ("zg.grid_ripple(0.5, law='gaussian', at='middle')", "at must be one of"),
    ("zg.grid_ripple(-0.5, law='gaussian')", "sigma must be > 0"),
    ("zg.int_levels(1)", "bits must be >= 2"),
    ("zg.bias_bound(jnp.ones((2, 3)), 0.5, law='gaussian')", "levels must have rank 1"),
    ("zg.bias_bound(levels, 0.5, law='gaussian', lf=0.0)", "lf must be > 0"),
    ("zg.convergence_bound(1.0, eta=1.0, smooth=1.0, steps_t=10, bias_sq=0.0, var=0.0)", "eta must be <="),
    ("zg.convergence_bound(nan, eta=0.1, smooth=1.0, steps_t=10, bias_sq=0.0, var=0.0)", "gap must be >= 0"),
    ("zg.sup_on_grid(jnp.abs, levels, n=1)", "n must be >= 2"),
    ("zg.score_second_moment(0.0, levels, 0.5, law='triangular')", "law must be one of"),
    # ---- speed_scaling, teacher_student (merged before this branch; extended at rebase)
    ("ss.yds(r, dl, jnp.array([1.0, inf]))", "work must be finite"),
    ("ss.yds(r, jnp.array([2.0, inf]), jnp.ones(2))", "deadline must be finite"),
    ("ss.yds(jnp.zeros(0), jnp.zeros(0), jnp.zeros(0))", "release must be non-empty"),
    ("ss.yds(r, dl, jnp.ones(2, jnp.complex64))", "work must be real"),
    ("ss.yds(r, jnp.array([2.0, 0.5]), jnp.ones(2))", "deadline must be > release for every job"),
    ("ss.yds(r, dl, jnp.array([1.0, -1.0]))", "work must be >= 0"),
    ("ss.las(r, dl, jnp.ones(2), jnp.ones(2), eps=0.5, alpha=3.0, n_slots=2)", "n_slots must cover every deadline"),
    ("ss.las(r, dl, jnp.ones(2), jnp.ones(3), eps=0.5, alpha=3.0)", "predicted_work must have the shape of work"),
    ("ss.las(r, dl, jnp.ones(2), jnp.array([1.0, nan]), eps=0.5, alpha=3.0)", "predicted_work must be finite"),
    ("ss.las(r, dl, jnp.ones(2), jnp.ones(2), eps=0.0, alpha=3.0)", "eps must be > 0"),
    ("ss.avr(r, dl, jnp.ones(2), n_slots=0)", "n_slots must be a positive integer"),
    ("ss.oa(r, dl, jnp.ones(2), dt=-1.0)", "dt must be > 0"),
    ("ss.online_schedules(r, dl, jnp.ones(2), alpha=inf)", "alpha must be finite"),
    ("ss.speed_prediction_schedule(r, dl, jnp.ones(2), jnp.ones(4), alpha=3.0, n_slots=5)", "n_slots must equal"),
    ("ss.speed_prediction_schedule(r, dl, jnp.ones(2), jnp.ones(2), alpha=3.0)", "n_slots must cover every"),
    ("ss.speed_prediction_schedule(r, dl, jnp.ones(2), jnp.ones((2, 2)), alpha=3.0)", "predicted_speed must have rank"),
    ("ss.speed_prediction_schedule(r, dl, jnp.ones(2), jnp.full(4, -1.0), alpha=3.0)", "predicted_speed must be >= 0"),
    ("ss.speed_prediction_schedule(r, dl, jnp.ones(2), jnp.ones(4), alpha=3.0, kappa=0.5)", "kappa must be >= 1"),
    ("ss.edf_schedule(r, dl, jnp.ones(2), jnp.array([1.0, nan, 1.0, 1.0]))", "speed must be finite"),
    ("ss.prediction_error(jnp.ones(3), jnp.ones(4), 3.0)", "pred must have the shape of truth"),
    ("ss.prediction_error(jnp.ones(3), jnp.zeros(3), 3.0)", "truth must be not all zero"),
    ("ss.predict_speed(jnp.ones(4), 'noisy', 0.1)", "key must be a PRNG key"),
    ("ss.predict_work(jnp.ones(4), 'misleading', low=80.0, high=20.0)", "high must be >= low"),
    ("ss.random_instance(4, 10, max_window=20, key=k)", "max_window must be in [min_window, 10]"),
    ("ss.avr_lower_bound_ratio(3.0, 1.5)", "kappa must be in [0.0, 1.0)"),
    ("ss.sp_robustness_bound(3.0, inf)", "kappa must be finite"),
    ("ss.shrink_slots(r, dl, 0.5, 3.0, 0.0)", "dt must be > 0"),
    # ---- aldrift
    ("al.Gaussian.from_chol(jnp.zeros(2), jnp.array([[1.0, 0.5], [0.0, 1.0]]))", "chol must be lower-triangular"),
    ("al.Gaussian.from_chol(jnp.zeros(2), jnp.array([[1.0, 0.0], [0.5, -1.0]]))", "chol must be a Cholesky factor"),
    ("al.Gaussian.from_chol(jnp.zeros(2), jnp.eye(3))", "chol must have shape (2, 2)"),
    ("al.Gaussian.from_cov(jnp.zeros(2), jnp.array([[1.0, 2.0], [2.0, 1.0]]))", "cov must be positive definite"),
    ("al.Gaussian.from_cov(jnp.zeros(2), jnp.array([[1.0, 0.5], [0.0, 1.0]]))", "cov must be symmetric"),
    ("al.Gaussian.from_cov(jnp.array([0.0, nan]), I2)", "mean must be finite"),
    ("al.Gaussian.from_cov(jnp.zeros((2, 1)), I2)", "mean must have rank 1"),
    ("al.Gaussian.from_cov(jnp.zeros(2), jnp.eye(2, dtype=jnp.complex64))", "cov must be real"),
    ("al.gaussian_prior(jnp.array([0.0, inf]), 1.0)", "x0 must be finite"),
    ("al.gaussian_prior(jnp.zeros(2), 0.0)", "mu0 must be > 0"),
    ("al.rastrigin_envelope(1.0, -1.0, 1.0, jnp.zeros(2))", "A must be >= 0"),
    ("al.rastrigin_envelope(1.0, 0.0, 1.0, jnp.zeros(0))", "x_star must be non-empty"),
    ("al.num_temperatures('geometric', inf, tau1=0.1, n=2)", "T must be finite"),
    ("al.num_temperatures('cosine', 10.0, D=1.0)", "schedule must be one of"),
    ("al.temperature_schedule('additive', 10.0)", "D must be > 0"),
    ("al.aldrift(cost, prior, jnp.array([1.0, inf]), m=4, M=2, mu_d=1.0, key=k)", "taus must be finite"),
    ("al.aldrift(cost, prior, jnp.zeros(0), m=4, M=2, mu_d=1.0, key=k)", "taus must be non-empty"),
    ("al.aldrift(cost, prior, jnp.ones(3), m=4, M=2, key=k)", "mu_d must be given"),
    ("al.aldrift(cost, prior, jnp.ones(3), m=0, M=2, mu_d=1.0, key=k)", "m must be a positive integer"),
    ("al.topift(cost, prior, m=4, M=2, rounds=2, family='mle', key=k)", "family must be one of"),
    ("al.imh_chains(cost, prior, 1.0, g2, m=3, M=2, key=k, init=jnp.zeros((4, 2)))", "init must have shape (3, 2)"),
    ("al.imh_chains(cost, prior, 1.0, g2, m=2, M=2, key=k, init=jnp.full((2, 2), nan))", "init must be finite"),
    ("al.imh_chains(cost, prior, -1.0, g2, m=2, M=2, key=k)", "tau must be >= 0"),
    (
        "al.imh_chains(cost, prior, 1.0, al.Gaussian.from_cov(jnp.zeros(3), jnp.eye(3)), m=2, M=2, key=k)",
        "model must have the prior's dimension n = 2",
    ),
    ("al.log_prob(g2, jnp.zeros((5, 3)))", "x must have last axis n = 2"),
    ("al.sample(g2, (-1,), key=k)", "shape[0] must be a non-negative integer"),
    ("al.fit_gaussian_fixed(jnp.zeros(4), 1.0)", "samples must have rank 2"),
    ("al.fit_kde(jnp.ones((4, 2)), 1.0)", "sigma must be > 0"),
    ("al.fit_gaussian_empirical(jnp.full((4, 2), nan))", "samples must be finite"),
    ("al.imh_transition_matrix(jnp.array([0.5, 0.5]), jnp.array([1.0, 0.0]))", "q must be > 0"),
    ("al.imh_transition_matrix(jnp.array([0.5, 0.5]), jnp.array([0.2, 0.3, 0.5]))", "q must have the shape of p"),
    ("al.imh_tv_bound(0.5, 10)", "W must be >= 1"),
    ("al.importance_ess(jnp.full(4, -inf))", "log_w must be not all -inf"),
    ("al.importance_ess(jnp.array([0.0, nan]))", "log_w must be free of NaN"),
    ("al.gaussian_log_sup_ratio(0.0, 0.0, 0.0, 1.0)", "s1 must be > 0"),
    ("al.gaussian_importance_ess(jnp.array([nan]), 1.0, 0.0, 1.0, 1)", "mean_p must be finite"),
    ("al.coverage_tail_mass(jnp.zeros(4), jnp.zeros(3), 0.1, 2.0)", "log_L must broadcast with log_p"),
    ("al.quadratic_tempered(jnp.zeros(2), 1.0, jnp.zeros(3), 1.0, 1.0)", "x_star must have the shape of x0"),
    ("al.quadratic_expected_cost(jnp.zeros(2), 1.0, jnp.zeros(2), 1.0, nan)", "T must be >= 0"),
    ("al.random_search(cost, 0.0, inf, n=2, budget=10, key=k)", "hi must be finite"),
    ("al.random_search_expected_evals(0.1, 1.0, 1.0, -1.0, 2)", "hi must be > lo=1.0"),
    ("al.evaluations_to_reach(jnp.array([1.0, 2.0]), 0.5)", "best_curve must be non-increasing"),
    ("al.doo(cost, nan, 1.0, n=2, L_d=1.0, expansions=3)", "lo must be finite"),
    ("ts.feature_potential(1.5, 2.0)", "m must be in [0.0, 1.0)"),
    ("ts.feature_potential(0.5, nan)", "c must be finite"),
    ("ts.amplitudes(0, 1.0)", "k must be a positive integer"),
    ("ts.amplitudes(10, 0.4)", "beta must be > 1/2"),
    ("ts.normaliser(10, nan)", "beta must be > 1/2"),
    ("ts.hermite_kernel([0.0, 0.0])", "mu must be a non-zero vector"),
    ("ts.m_plus(nan)", "c must be finite"),
    ("ts.g(jnp.array([0.5, inf]))", "m must be finite"),
    ("ts.threshold_closed_form(1, 1.0, 5, 0.0)", "delta_eff must be > 0"),
    ("ts.k_c_closed_form(-1.0, 1.0, 5, 1.0)", "alpha must be >= 0"),
    ("ts.solve(nan, ts.amplitudes(5, 1.0), 1.0)", "alpha must be >= 0"),
    ("ts.solve(inf, ts.amplitudes(5, 1.0), 1.0)", "alpha must be finite"),
    ("ts.solve(1.0, ts.amplitudes(5, 1.0), 0.0)", "delta must be > 0"),
    ("ts.solve(1.0, ts.amplitudes(5, 1.0), inf)", "delta must be finite"),
    ("ts.solve(1.0, jnp.array([0.1, 0.5]), 1.0)", "a2 must be non-increasing"),
    ("ts.solve(1.0, jnp.array([0.5, -0.1]), 1.0)", "a2 must be >= 0"),
    ("ts.solve(1.0, jnp.zeros(0), 1.0)", "a2 must be a non-empty 1-D array"),
    ("ts.solve(1.0, jnp.ones((2, 2)), 1.0)", "a2 must be a non-empty 1-D array"),
    ("ts.solve(1.0, ts.amplitudes(5, 1.0), 1.0, tol=-1.0)", "tol must be > 0"),
    ("ts.solve_grid(jnp.ones((2, 2)), ts.amplitudes(5, 1.0), 1.0)", "alphas must have shape"),
    ("ts.thresholds(jnp.array([7]), ts.amplitudes(5, 1.0), 1.0)", "idx must be in [0, 5)"),
    ("ts.thresholds(jnp.array([0]), ts.amplitudes(5, 1.0), 1.0, lo=10.0, hi=1.0)", "hi must be > lo"),
    # ---- outside-audit cases (silently wrong or internal errors before)
    ("ts.g_prime(nan)", "m must be finite"),
    ("ts.g_prime(jnp.array([0.5, nan]))", "m must be finite"),
    ("ts.one_minus_g_from_s(-1.0)", "s must be >= 0"),
    ("ts.one_minus_g_from_s(inf)", "s must be finite"),
    ("hs.lanczos_warm(lambda u: u, jnp.array([nan, 1.0]), iters=2)", "q0 must be finite"),
    ("hs.lanczos_warm(lambda u: u, jnp.zeros(2), iters=2)", "q0 must be a nonzero start vector"),
    ("hs.lanczos_warm(lambda u: u, jnp.ones((2, 2)), iters=2)", "q0 must have rank 1"),
    ("hs.power_top(lambda u: u, jnp.zeros(2), iters=2)", "u0 must be a nonzero start vector"),
    ("hs.power_top(lambda u: u, jnp.array([inf, 0.0]), iters=2)", "u0 must be finite"),
    ("hs.lanczos_top(lambda u: u, 3, key=None, iters=2, k=1)", "key must be a PRNG key"),
    ("hs.hvp(lambda x: jnp.sum(x**2), jnp.ones(3), jnp.ones(4))", "u must have the shape of x"),
    ("hs.hvp(lambda x: jnp.sum(x**2), jnp.ones(3), jnp.ones(3, jnp.complex64))", "u must be real"),
    ("ss.grid_profile(jnp.array([1.0, -1.0]), 0.5)", "speed must be >= 0"),
    ("ss.robustify_energy_bound(jnp.array([-3, 2]), 3.0)", "width must be >= 0"),
    ("ts.effective_width(jnp.full(4, 0.7), threshold=nan)", "threshold must be finite"),
    ("ts.gibbs_error(jnp.full(3, 0.5), jnp.ones(3), q_self=-1.0)", "q_self must be in [0.0, 1.0]"),
    ("ts.phi_gap(0.1, 0.2, 0.0, 0.1, -1.0, 1.0)", "alpha must be >= 0"),
    ("ts.phi_gap(nan, 0.2, 0.0, 0.1, 1.0, 1.0)", "t_a must be finite"),
    ("ts.phi_gap(0.1, -0.2, 0.0, 0.1, 1.0, 1.0)", "e_a must be >= 0"),
    ("ts.phi_gap(0.1, 0.2, 0.0, 0.1, 1.0, 0.0)", "delta must be > 0"),
    ("ts.learnable_heads(jnp.array([nan]), ts.amplitudes(5, 1.0), 1.0)", "alphas must be finite"),
    ("ts.learnable_heads(jnp.array([1.0]), jnp.array([nan, 0.1]), 1.0)", "a2 must be finite"),
    ("ts.learnable_heads(jnp.array([1.0]), ts.amplitudes(5, 1.0), -1.0)", "delta must be > 0"),
    ("ts.bayes_error(jnp.full(3, 0.5), jnp.ones(4))", "m must have last axis k = 4"),
    ("ts.gibbs_error(jnp.full(3, 0.5), jnp.ones(4))", "m must have last axis k = 4"),
    ("ts.potential(jnp.full(3, 0.5), 1.0, jnp.ones(4), 1.0)", "a2 must have shape (3)"),
    ("ts.potential(jnp.full(3, 0.5), -1.0, jnp.ones(3), 1.0)", "alpha must be >= 0"),
    ("ts.thresholds(jnp.array([0.5]), ts.amplitudes(5, 1.0), 1.0)", "idx must be an integer array"),
    ("ip.kaczmarz(kz, x0, steps=4, block_size=0, key=k)", "block_size must be a positive integer"),
    ("rv.high_dim_valley(0.1, jnp.array([1.0, -1.0]))", "lams must be > 0"),
    ("tv.exact_tv(p, q, 16)", "n too large for enumeration"),
    ("tr.get_batch(jnp.arange(100), 0, 8, key=k)", "batch_size must be a positive integer"),
    ("tr.get_batch(jnp.arange(100.0), 2, 8, key=k)", "data must be an integer array"),
    ("tr.get_batch(jnp.arange(100), 2, 0, key=k)", "ctx must be a positive integer"),
    ("tr.get_batch(jnp.arange(5), 2, 8, key=k)", "data must have at least ctx + 2 = 10 tokens"),
    ("tr.get_batch(jnp.arange(100), 2, 8, key=None)", "key must be a PRNG key"),
    ("tr.get_batch(jnp.arange(100).reshape(10, 10), 2, 4, key=k)", "data must have rank 1"),
    ("tr.eval_windows(np.arange(100), 8, 0)", "n_windows must be a positive integer"),
    ("tr.eval_windows(np.arange(100), 0, 4)", "ctx must be a positive integer"),
    ("tr.eval_windows(np.arange(5), 8, 4)", "data must have at least ctx + 1 = 9 tokens"),
    ("tr.eval_windows(np.arange(100.0), 8, 4)", "data must be an integer array"),
    # ---- PRNG keys
    ("tv.random_ngram(3, 1, key=None)", "key must be a PRNG key"),
    ("zg.sample((3,), 'gaussian', key=None)", "key must be a PRNG key"),
    ("zg.sample((3,), 'gaussian', key=1)", "key must be a PRNG key"),
    ("ip.run(pr, x0, lr=0.1, batch_size=1, steps=4, key=None)", "key must be a PRNG key"),
    ("ip.random_problem(8, 3, cond=10.0, key=None)", "key must be a PRNG key"),
    ("tsm.make_teacher(4, jnp.ones(2), key=None)", "key must be a PRNG key"),
    ("tsm.init_student(4, jnp.ones(3), key=None)", "key must be a PRNG key"),
    ("ss.random_instance(4, 10, key=None)", "key must be a PRNG key"),
    ("al.aldrift(cost, prior, jnp.ones(3), m=4, M=2, mu_d=1.0, key=None)", "key must be a PRNG key"),
    # ---- subnormal positive parameters (below np.finfo(dtype).tiny of the compute dtype)
    ("dq.rademacher_exp_moment(jnp.array([1e-45]))", "a must be zero or a normal number"),
    ("dq.rademacher_exp_moment(jnp.array([1.0, 1e-40]))", "a must be zero or a normal number"),
    ("zg.surrogate_grad(0.0, levels, 1e-45, law='gaussian')", "sigma must be a normal number"),
    ("ts.solve(10.0, ts.amplitudes(5, 1.0), 1e-45)", "delta must be a normal number"),
    ("rv.gd_threshold(1e-45)", "lam must be a normal number"),
    ("rv.gd_threshold(jnp.float16(1e-6))", "lam must be a normal number >= 6.104e-05"),
    ("rv.spectral_radius(1e-40, 1.0, 0.5)", "lr must be a normal number"),
    ("tv.hoeffding_m(1e-42, 0.1)", "eps must be a normal number"),
    ("ip.run(pr, x0, lr=1e-44, batch_size=1, steps=4, key=k)", "lr must be a normal number"),
    ("al.gaussian_prior(jnp.zeros(2), 1e-45)", "mu0 must be a normal number"),
    # ---- 1e30: overflow rejected by name where not computed in a scaled form
    ("rv.spectral_radius(1e30, 1e30, 0.5)", "lr * lam must be <= 3.403e+38"),
    ("rv.char_coeffs(1e20, 1e20, 0.5)", "lr * lam must be <= 3.403e+38"),
    ("rv.gd_threshold(inf)", "lam must be finite"),
    # ---- complex, never cast
    ("ts.solve_grid(jnp.array([1.0 + 1j]), ts.amplitudes(5, 1.0), 1.0)", "alphas must be real"),
    ("ts.solve_grid(jnp.array([1.0]), ts.amplitudes(5, 1.0).astype(jnp.complex64), 1.0)", "a2 must be real"),
    ("ts.solve(1.0 + 1j, ts.amplitudes(5, 1.0), 1.0)", "alpha must be real"),
    ("ts.solve(1.0, ts.amplitudes(5, 1.0), 1.0 + 0j)", "delta must be real"),
    ("rv.gd_threshold(1j)", "lam must be real"),
    ("dq.rademacher_exp_moment(jnp.ones(3, jnp.complex64))", "a must be real"),
    ("zg.surrogate_grad(0.0, levels, 0.5 + 0j, law='gaussian')", "sigma must be real"),
    ("tv.smoothed_z(0.1 + 0j, 0.5)", "mu must be real"),
    ("al.gaussian_prior(jnp.zeros(2), 1.0 + 1j)", "mu0 must be real"),
    ("ss.grid_profile(jnp.ones(2, jnp.complex64), 0.5)", "speed must be real"),
    ("sa.select_blocks(imp, 0.5 + 0j)", "budget must be real"),
    ("ts.g(jnp.array([0.5 + 0j]))", "m must be real"),
    ("ts.thresholds(jnp.array([0]), ts.amplitudes(5, 1.0).astype(jnp.complex64), 1.0)", "a2 must be real"),
    ("ip.make_problem(A, b.astype(jnp.complex64))", "b must be real"),
    ("ss.yds(r.astype(jnp.complex64), dl, jnp.ones(2))", "release must be real"),
    ("al.gaussian_prior(jnp.zeros(2, jnp.complex64), 1.0)", "x0 must be real"),
    ("zg.quantize(jnp.zeros(2, jnp.complex64), levels)", "x must be real"),
    ("ip.run(pr, x0, lr=0.1 + 0j, batch_size=1, steps=4, key=k)", "lr must be real"),
    ("tsm.make_teacher(4, jnp.ones(2, jnp.complex64), key=k)", "a2 must be real"),
    ("dq.gaussian_exp_moment(0.2 + 0j)", "lam must be real"),
    # ---- other dtypes: float16, bfloat16, int, bool
    ("rv.gd_threshold(jnp.array(-1.0, jnp.float16))", "lam must be > 0"),
    ("rv.gd_threshold(jnp.array(-1.0, jnp.bfloat16))", "lam must be > 0"),
    ("rv.gd_threshold(-1)", "lam must be > 0, got -1"),
    ("rv.gd_threshold(False)", "lam must be > 0, got False"),
    ("rv.gd_threshold(jnp.array([1, 0]))", "lam must be > 0"),
    ("zg.surrogate_grad(0.0, levels, jnp.float16(inf), law='gaussian')", "sigma must be finite"),
    ("ss.yds(r, dl, jnp.array([1, -1]))", "work must be >= 0"),
    ("tv.smoothed_z(0.1, jnp.array(-1.0, jnp.bfloat16))", "s2 must be >= 0"),
    ("ip.make_problem(A.astype(jnp.float16), b.astype(jnp.float16), rtol=-1.0)", "rtol must be > 0"),
    ("dq.mse_bound(jnp.array([False]))", "bits must be >= 1, got False"),
    ("ts.thresholds(jnp.array([True]), ts.amplitudes(5, 1.0), 1.0)", "idx must be an integer array"),
    # ---- empty and size-1 arrays
    ("ss.yds(jnp.zeros(1), jnp.ones(1), jnp.array([-1.0]))", "work must be >= 0, got -1.0"),
    ("ss.yds(jnp.zeros(1), jnp.zeros(1), jnp.ones(1))", "deadline must be > release"),
    ("dq.rademacher_exp_moment(jnp.zeros(0))", "a must be non-empty"),
    ("dq.rademacher_exp_moment(jnp.zeros(1))", "a must be not all zero"),
    ("ts.solve_grid(jnp.ones(1), jnp.zeros(0), 1.0)", "a2 must be"),
    ("zg.surrogate_grad(0.0, jnp.zeros(0), 0.5, law='gaussian')", "levels must"),
    ("hs.power_top(lambda u: u, jnp.zeros(0), iters=2)", "u0 must be non-empty"),
    ("ip.make_problem(jnp.ones((1, 1)), jnp.ones(2))", "b must have one entry per row of A (1)"),
    ("tv.plain_z(jnp.array([-inf]))", "L must be > -inf"),
    ("al.importance_ess(jnp.zeros(0))", "log_w must"),
    # ---- one NaN among finite values
    ("rv.nesterov_threshold(jnp.array([1.0, nan, 2.0]), 0.5)", "lam must be > 0, got an array with 1 offending"),
    ("zg.quantize(jnp.array([0.0, nan, 1.0]), levels)", "x must be finite"),
    ("ss.yds(r, jnp.array([nan, 3.0]), jnp.ones(2))", "deadline must be finite"),
    ("dq.finite_level_factor(jnp.array([2.0, 3.0, nan]))", "bits must be >= 1"),
    ("ts.solve_grid(jnp.array([1.0, nan]), ts.amplitudes(5, 1.0), 1.0)", "alphas must be"),
    ("tv.correct(jnp.array([0.1, nan]), 0.1)", "L_hat must be finite"),
    ("ip.minibatch_gradient(pr, jnp.array([0.0, nan, 0.0]), jnp.array([0]))", "x must be finite"),
    ("sa.select_blocks(imp.at[0, 0, 0].set(nan), 0.5)", "importance must be"),
    # ---- under jax.grad / vjp / jvp / hessian of an eager call: the primal is checked
    ("jax.grad(rv.gd_threshold)(-1.0)", "lam must be > 0, got -1.0"),
    ("jax.grad(lambda lr: rv.spectral_radius(lr, 100.0, 0.5))(-0.1)", "lr must be > 0, got -0.1"),
    ("jax.vjp(rv.gd_threshold, -1.0)", "lam must be > 0"),
    ("jax.jvp(rv.gd_threshold, (-1.0,), (1.0,))", "lam must be > 0"),
    ("jax.hessian(rv.gd_threshold)(-1.0)", "lam must be > 0"),
    ("jax.grad(jax.grad(rv.gd_threshold))(nan)", "lam must be > 0, got nan"),
    ("jax.grad(lambda s: zg.surrogate_grad(0.0, levels, s, law='gaussian'))(-0.5)", "sigma must be > 0"),
    ("jax.grad(lambda s: zg.surrogate_grad(0.0, levels, s, law='gaussian'))(1e-45)", "sigma must be a normal"),
    ("jax.grad(dq.gaussian_exp_moment)(0.7)", "lam must be < 1/2"),
    ("jax.grad(lambda x: tv.smoothed_z(0.1, x))(-1.0)", "s2 must be >= 0"),
    ("jax.grad(lambda w: ss.yds(r, dl, w).energy(3.0))(jnp.array([1.0, -1.0]))", "work must be >= 0"),
    ("jax.grad(lambda m: ts.g(m).sum())(jnp.array([0.5, nan]))", "m must be finite"),
    ("jax.grad(lambda a: ts.potential(jnp.full(3, 0.5), a, jnp.ones(3), 1.0))(-1.0)", "alpha must be >= 0"),
    ("jax.grad(lambda mu: al.quadratic_expected_cost(jnp.zeros(2), mu, jnp.ones(2), 1.0, 2.0))(-1.0)", "mu0 must"),
    ("jax.jacfwd(lambda lr: ip.mean_square_rate(pr, lr=lr, beta=0.5, batch_size=1).rho)(-0.1)", "lr must be > 0"),
    ("jax.grad(lambda b: sa.select_blocks(imp, b).sum())(5.0)", "budget must be in (0, 1]"),
    # ---- under an eager jax.vmap: every member is checked
    ("jax.vmap(rv.gd_threshold)(jnp.array([1.0, -1.0]))", "lam must be > 0, got -1.0 (in member 1 of a jax.vmap"),
    ("jax.vmap(lambda s: zg.surrogate_grad(0.0, levels, s, law='gaussian'))(jnp.array([0.5, 0.0]))", "sigma must"),
    ("jax.vmap(lambda w: ss.yds(r, dl, w).job_speed)(jnp.array([[1.0, 2.0], [1.0, -1.0]]))", "work must be >= 0"),
    ("jax.vmap(dq.rademacher_exp_moment)(jnp.array([[1.0, 2.0], [0.0, 0.0]]))", "a must be not all zero"),
    ("jax.vmap(lambda lv: zg.quantize(0.3, lv))(jnp.array([[0.0, 1.0], [1.0, 0.0]]))", "levels must be strictly"),
    ("jax.vmap(jax.grad(rv.gd_threshold))(jnp.array([1.0, nan]))", "lam must be > 0, got nan"),
    ("jax.vmap(jax.vmap(rv.gd_threshold))(jnp.array([[1.0, 2.0], [3.0, -4.0]]))", "(in member 3 of a jax.vmap"),
    ("jax.vmap(rv.gd_threshold, in_axes=1)(jnp.array([[1.0, 2.0], [3.0, -4.0]]))", "(in member 1 of a jax.vmap"),
    ("jax.vmap(lambda x: tv.smoothed_z(x, 0.5))(jnp.array([0.0, inf]))", "mu must be finite"),
    ("jax.vmap(lambda s: ts.solve(1.0, ts.amplitudes(5, 1.0), s).m)(jnp.array([1.0, 0.0]))", "delta must be > 0"),
    # ---- under theory.checked (jit + checkify)
    ("theory.checked(rv.gd_threshold)(-1.0)", "lam must be > 0"),
    ("theory.checked(jax.grad(rv.gd_threshold))(-1.0)", "lam must be > 0"),
    ("theory.checked(lambda s: zg.surrogate_grad(0.0, levels, s, law='gaussian'))(1e-45)", "sigma must be"),
    ("theory.checked(jax.vmap(lambda w: ss.yds(r, dl, w).job_speed))(jnp.ones((2, 2)))", "fn must not be a jax.vmap"),
    ("theory.checked(jax.vmap(rv.gd_threshold))(jnp.array([1.0, -1.0]))", "lam must be > 0"),
]


@pytest.mark.parametrize(("call", "fragment"), BAD_CALLS, ids=[c for c, _ in BAD_CALLS])
def test_bad_call_raises_naming_the_parameter(call, fragment):
    with pytest.raises((ValueError, TypeError), match=re.escape(fragment)):
        eval(call, _ns())


def test_table_is_large_enough_and_covers_every_module():
    assert len(BAD_CALLS) >= 300
    assert {c.split(".")[0] for c, _ in BAD_CALLS} >= {"rv", "ip", "tv", "dq", "zg", "ss", "ts", "al", "sa"}


# ---------------------------------------------------------------------------------------------------------
# No NaN/inf out of an accepted input; divergence is flagged
# ---------------------------------------------------------------------------------------------------------


def test_optimize_divergence_is_flagged_and_finite():
    traj, diverged = rv.optimize(rv.straight_valley(0.1, 10.0), jnp.ones(2), lr=1.0, beta=0.0, steps=200)
    assert bool(diverged) and bool(jnp.all(jnp.isfinite(traj)))


def test_run_divergence_is_flagged_and_finite():
    ns = _ns()
    errs, div = ip.run(ns["pr"], ns["x0"], lr=50.0, batch_size=1, steps=200, key=ns["k"])
    assert bool(div) and bool(jnp.all(jnp.isfinite(errs)))


def test_mean_square_rate_flags_the_cap():
    ns = _ns()
    c = ip.constants(ns["pr"])
    far = ip.mean_square_rate(ns["pr"], lr=50.0 / float(c.L), beta=0.0, batch_size=1, method="sgd")
    assert bool(far.at_cap) and float(far.rho) == 2.0
    ok = ip.mean_square_rate(ns["pr"], lr=0.5 / float(c.L_max), beta=0.0, batch_size=1, method="sgd")
    assert not bool(ok.at_cap) and float(ok.rho) < 1.0


def test_exact_tv_of_finite_models_is_finite():
    ns = _ns()
    assert np.isfinite(float(tv.exact_tv(ns["p"], ns["q"], 3)))


# ---------------------------------------------------------------------------------------------------------
# The same errors for traced values under theory.checked
# ---------------------------------------------------------------------------------------------------------


def _checked_cases():
    levels = zg.int_levels(3)
    A = jax.random.normal(jax.random.key(1), (12, 3))
    pr = ip.make_problem(A, A @ jnp.ones(3))
    valley = rv.straight_valley(0.1, 10.0)
    cost2, prior2 = al.rastrigin_envelope(1.0, 0.0, 1.0, jnp.zeros(2)), al.gaussian_prior(jnp.zeros(2), 1.0)
    g2 = al.Gaussian.from_cov(jnp.zeros(2), jnp.eye(2))
    imp = jax.nn.softmax(jax.random.normal(jax.random.key(4), (2, 4, 4)), axis=-1)
    return [
        (
            "sa.select_blocks",
            lambda budget: sa.select_blocks(imp, budget),
            (5.0,),
            "budget must be in (0, 1]",
            (0.5,),
        ),
        ("rv.gd_threshold", rv.gd_threshold, (-1.0,), "lam must be > 0, got -1.0", (2.0,)),
        ("rv.spectral_radius", lambda lr: rv.spectral_radius(lr, 100.0, 0.5), (-0.1,), "lr must be > 0", (0.01,)),
        (
            "rv.optimize",
            lambda th: rv.optimize(valley, th, lr=0.1, steps=5)[0],
            (jnp.array([nan, 1.0]),),
            "theta0 must be finite",
            (jnp.array([1.0, 1.0]),),
        ),
        (
            "ip.mean_square_rate",
            lambda lr: ip.mean_square_rate(pr, lr=lr, beta=0.5, batch_size=1).rho,
            (-0.1,),
            "lr must be > 0",
            (0.1,),
        ),
        (
            "ip.run",
            lambda x0: ip.run(pr, x0, lr=0.1, batch_size=1, steps=4, key=jax.random.key(0))[0],
            (jnp.array([0.0, inf, 0.0]),),
            "x0 must be finite",
            (jnp.zeros(3),),
        ),
        ("tv.smoothed_z", lambda s2: tv.smoothed_z(0.1, s2), (-1.0,), "s2 must be >= 0, got -1.0", (0.5,)),
        ("tv.plain_z", tv.plain_z, (jnp.array([0.1, nan]),), "L must be > -inf", (jnp.array([0.1, 2.0]),)),
        ("dq.gaussian_exp_moment", dq.gaussian_exp_moment, (0.7,), "lam must be < 1/2, got 0.", (0.25,)),
        (
            "dq.rademacher_exp_moment",
            dq.rademacher_exp_moment,
            (jnp.zeros(4),),
            "a must be not all zero",
            (jnp.ones(4),),
        ),  # fmt: skip
        (
            "zg.surrogate_grad",
            lambda s: zg.surrogate_grad(0.3, levels, s, law="gaussian"),
            (-0.5,),
            "sigma must be > 0, got -0.5",
            (0.5,),
        ),
        (
            "zg.quantize",
            lambda lv: zg.quantize(0.3, lv),
            (jnp.array([1.0, 0.0, 2.0]),),
            "levels must be strictly increasing",
            (jnp.array([0.0, 1.0, 2.0]),),
        ),
        (
            "ss.yds",
            lambda w: ss.yds(jnp.array([0.0, 1.0]), jnp.array([2.0, 3.0]), w).job_speed,
            (jnp.array([1.0, inf]),),
            "work must be finite",
            (jnp.array([1.0, 2.0]),),
        ),
        (
            "ss.yds-deadline",
            lambda d: ss.yds(jnp.array([0.0, 1.0]), d, jnp.ones(2)).job_speed,
            (jnp.array([2.0, 0.5]),),
            "deadline must be > release for every job",
            (jnp.array([2.0, 3.0]),),
        ),
        (
            "ss.las",
            lambda pw: (
                ss.las(
                    jnp.array([0.0, 1.0]), jnp.array([2.0, 3.0]), jnp.ones(2), pw, eps=0.5, alpha=3.0, n_slots=3
                ).profile.speed
            ),
            (jnp.array([1.0, -1.0]),),
            "predicted_work must be >= 0",
            (jnp.array([1.0, 2.0]),),
        ),
        (
            "al.quadratic_expected_cost",
            lambda mu0: al.quadratic_expected_cost(jnp.zeros(2), mu0, jnp.ones(2), 1.0, 2.0),
            (-1.0,),
            "mu0 must be > 0, got -1.0",
            (0.5,),
        ),
        (
            "al.imh_chains-init",
            lambda x0: al.imh_chains(cost2, prior2, 1.0, g2, m=2, M=3, key=jax.random.key(0), init=x0)[0],
            (jnp.array([[0.0, nan], [0.0, 0.0]]),),
            "init must be finite",
            (jnp.zeros((2, 2)),),
        ),
        (
            "al.Gaussian.from_chol",
            lambda ch: al.log_prob(al.Gaussian.from_chol(jnp.zeros(2), ch), jnp.ones(2)),
            (jnp.array([[1.0, 0.0], [0.5, -1.0]]),),
            "chol must be a Cholesky factor with a positive diagonal",
            (jnp.array([[1.0, 0.0], [0.5, 2.0]]),),
        ),
    ]


@pytest.mark.parametrize("case", _checked_cases(), ids=lambda c: c[0])
def test_checked_raises_the_eager_error_for_traced_values(case):
    _, fn, bad, fragment, good = case
    with pytest.raises(ValueError, match=re.escape(fragment)):
        fn(*bad)  # eager
    # one checked wrapper for the bad and the good call: same shapes and dtypes, so one trace and compile
    checked_fn = theory.checked(fn)
    with pytest.raises(ValueError, match=re.escape(fragment)):
        checked_fn(*bad)  # traced under jit + checkify
    np.testing.assert_allclose(np.asarray(checked_fn(*good)), np.asarray(fn(*good)), rtol=1e-6)
    # plain jit stays unchecked (as documented) and is not broken by the checked trace before it
    jax.block_until_ready(jax.jit(fn)(*good))


def test_checked_and_plain_jit_share_no_trace():
    f = jax.jit(rv.gd_threshold)
    assert float(f(-1.0)) == -2.0  # plain jit: not checked (documented), traced first
    with pytest.raises(ValueError, match="lam must be > 0"):
        theory.checked(f)(-1.0)  # re-traced with the checks although f was traced before
    assert float(f(-1.0)) == -2.0  # and the plain trace does not pick the checks up


if __name__ == "__main__":  # print the table: call -> message
    print_table([call for call, _ in BAD_CALLS], _ns)


# ---------------------------------------------------------------------------------------------------------
# Numeric edges that return a value: each checked against a float64 reference
# ---------------------------------------------------------------------------------------------------------


def _ref_spectral_radius(lr, lam, beta):
    c1, c0 = 1.0 + beta - lr * lam, beta
    return max(abs(r) for r in np.roots([1.0, -c1, c0]))


EDGE_VALUES = [
    # (call, float64 reference, rtol)
    ("rv.spectral_radius(1e30, 1.0, 0.5)", _ref_spectral_radius(1e30, 1.0, 0.5), 1e-6),
    ("rv.spectral_radius(1e20, 1e10, 0.9)", _ref_spectral_radius(1e20, 1e10, 0.9), 1e-6),
    ("rv.hb_optimal_params(1e-30, 1e30)[0]", 4.0 / (1e15 + 1e-15) ** 2, 1e-6),
    ("rv.hb_optimal_params(1e-30, 1e30)[2]", (1e30 - 1.0) / (1e30 + 1.0), 1e-6),
    ("dq.rademacher_exp_moment(jnp.array([1e30, 1e30]))", (math.exp(2.0 / 3.0) + 1.0) / 2.0, 1e-6),
    ("dq.rademacher_exp_moment(jnp.array([1e-20, 1e-20]))", (math.exp(2.0 / 3.0) + 1.0) / 2.0, 1e-6),
    ("dq.rademacher_exp_moment(jnp.array([3.0]))", math.exp(1.0 / 3.0), 1e-6),  # size 1
    ("rv.gd_threshold(jnp.array(4.0, jnp.float16))", 0.5, 1e-3),
    ("rv.gd_threshold(jnp.array(4.0, jnp.bfloat16))", 0.5, 1e-2),
    ("rv.gd_threshold(4)", 0.5, 0.0),
    ("jax.grad(rv.gd_threshold)(2.0)", -0.5, 1e-6),
    ("jax.vmap(rv.gd_threshold)(jnp.array([1.0, 4.0]))[1]", 0.5, 1e-6),
    ("jax.vmap(jax.grad(rv.gd_threshold))(jnp.array([1.0, 2.0]))[1]", -0.5, 1e-6),
    ("ss.yds(jnp.zeros(1), jnp.ones(1), jnp.ones(1)).job_speed[0]", 1.0, 1e-6),
    ("ip.make_problem(A.astype(jnp.float16), b.astype(jnp.float16)).x_star[0]", 1.0, 5e-2),
    ("ip.make_problem(A.astype(jnp.bfloat16), b.astype(jnp.bfloat16)).x_star[0]", 1.0, 5e-2),
    ("ts.effective_width(jnp.zeros((0,)))", 0.0, 0.0),  # empty: no feature above the threshold
    ("ts.one_minus_g_from_s(0.0)", 1.0, 1e-6),
]


@pytest.mark.parametrize(("call", "ref", "rtol"), EDGE_VALUES, ids=[c for c, _, _ in EDGE_VALUES])
def test_edge_value_matches_reference(call, ref, rtol):
    got = float(np.asarray(eval(call, _ns()), dtype=np.float64))
    assert math.isclose(got, ref, rel_tol=rtol, abs_tol=1e-30), (got, ref)


def test_scaled_forms_are_bit_identical_on_ordinary_inputs():
    """The overflow-safe forms select the plain formula wherever it does not overflow: same floats."""
    lr, lam, beta = np.meshgrid(np.geomspace(1e-4, 1e3, 24), np.geomspace(1e-4, 1e4, 24), np.linspace(0, 0.99, 6))
    lr, lam, beta = (jnp.asarray(x, jnp.float32) for x in (lr, lam, beta))
    for method in rv.METHODS:
        c1, c0 = rv.char_coeffs(lr, lam, beta, method)
        disc = (c1**2 - 4.0 * c0).astype(jnp.complex64)
        s = jnp.sqrt(disc)
        r1, r2 = (c1 + s) / 2.0, (c1 - s) / 2.0
        plain = jnp.abs(jnp.where(jnp.abs(r2) > jnp.abs(r1), r2, r1))
        np.testing.assert_array_equal(np.asarray(rv.spectral_radius(lr, lam, beta, method)), np.asarray(plain))
    mu, big = np.meshgrid(np.geomspace(1e-6, 1e2, 20), np.geomspace(1.0, 1e6, 20))
    mu, L = jnp.asarray(mu, jnp.float32), jnp.asarray(mu * big, jnp.float32)
    sk = jnp.sqrt(L / mu)
    np.testing.assert_array_equal(np.asarray(rv.hb_optimal_params(mu, L)[2]), np.asarray((sk - 1.0) / (sk + 1.0)))
    rng = np.random.default_rng(0)
    for k in (1, 3, 8):
        a = jnp.asarray(rng.normal(size=k) * 10.0 ** rng.uniform(-6, 6), jnp.float32)
        u = a / jnp.linalg.norm(a)
        bits = (jnp.arange(2**k)[:, None] >> jnp.arange(k)[None, :]) & 1
        t = (1.0 - 2.0 * bits.astype(jnp.float32)) @ u
        assert float(dq.rademacher_exp_moment(a)) == float(jnp.mean(jnp.exp((1.0 / 3.0) * t * t)))


def test_checks_do_not_change_valid_results_under_transformations():
    f = lambda s: zg.surrogate_grad(0.3, zg.int_levels(3), s, law="gaussian")
    sig = jnp.array([0.2, 0.5, 1.0])
    np.testing.assert_array_equal(np.asarray(jax.vmap(f)(sig)), np.asarray(jax.jit(jax.vmap(f))(sig)))
    np.testing.assert_allclose(float(jax.grad(f)(0.5)), float(jax.jit(jax.grad(f))(0.5)), rtol=1e-6)


def test_scaled_roots_keep_finite_gradients():
    """The overflow guard of the quadratic roots must not put inf * 0 = NaN into ordinary gradients."""
    assert float(jax.grad(lambda lr: rv.spectral_radius(lr, 1.0, 0.0, "gd"))(0.5)) == -1.0  # c0 = 0
    assert np.isfinite(float(jax.grad(lambda lr: rv.spectral_radius(lr, 1.0, 0.5))(0.01)))
    assert float(jax.grad(lambda lr: rv.spectral_radius(lr, 1.0, 0.5))(1e30)) == 1.0  # d(lr - 1.5)/dlr, scaled
