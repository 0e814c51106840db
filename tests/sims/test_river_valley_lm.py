"""River-valley study on the tiny LM: heavy ball against optax, edges bookkeeping, the quick preset end to end.
(Lanczos / power iteration / HVPs are tested against dense Hessians in tests/theory/test_hessian.py.)"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxwb.sims import river_valley_lm as sim
from jaxwb.sims.core import harness
from jaxwb.sims.river_valley_lm import dynamics as dyn
from jaxwb.sims.river_valley_lm.measures import bracket_gap, bracket_octaves, grid_edge, seed_edges
from jaxwb.sims.river_valley_lm.reference import linear_river_ratio, unigram_cross_entropy
from jaxwb.sims.river_valley_lm.run import eos_rows
from tests.sims.expected import assert_as_expected, assert_outputs


def test_heavy_ball_matches_optax_sgd_momentum():
    params = {"a": jnp.arange(3.0), "b": jnp.ones((2, 2))}
    grads = [jax.tree.map(lambda x, i=i: jnp.sin(x + i), params) for i in range(4)]
    ours, ref = dyn.heavy_ball(0.1, 0.7), optax.sgd(0.1, momentum=0.7)
    so, sr = ours.init(params), ref.init(params)
    for g in grads:
        uo, so = ours.update(g, so, params)
        ur, sr = ref.update(g, sr, params)
        for x, y in zip(jax.tree.leaves(uo), jax.tree.leaves(ur), strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-6)


@pytest.mark.parametrize("beta", [0.0, 0.9])
def test_hb_or_adam_matches_optax(beta):
    params = {"a": jnp.arange(3.0), "b": jnp.ones((2, 2))}
    grads = [jax.tree.map(lambda x, i=i: jnp.sin(x + i), params) for i in range(4)]
    for adam, ref in ((False, optax.sgd(0.1, momentum=beta)), (True, optax.adamw(0.1, b1=beta, weight_decay=0.0))):
        ours = dyn.hb_or_adam(jnp.float32(0.1), jnp.float32(beta), jnp.asarray(adam))
        so, sr = ours.init(params), ref.init(params)
        for g in grads:
            uo, so = ours.update(g, so, params)
            ur, sr = ref.update(g, sr, params)
            for x, y in zip(jax.tree.leaves(uo), jax.tree.leaves(ur), strict=True):
                np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-7)


def test_warm_lanczos_tracks_largest_algebraic_eigenvalue():
    """The EoS tracker's estimator (theory.hessian.lanczos_warm, restarted from its top Ritz vector) converges to
    lambda_max = 50 where a negative eigenvalue is larger in magnitude (-80): power iteration goes to -80."""
    from jaxwb.theory import hessian as hs

    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(60, 60)))
    spec = np.concatenate([[50.0, 45.0, -80.0], rng.uniform(-5.0, 5.0, 57)])
    a = jnp.asarray((q * spec) @ q.T, jnp.float32)
    u = jnp.ones(60)
    lam_p, _ = hs.power_top(lambda x: a @ x, u, iters=60)
    assert lam_p == pytest.approx(-80.0, rel=1e-2)
    restart = jax.jit(lambda v: hs.lanczos_warm(lambda x: (a @ x, jnp.sum(x)), v, iters=4, has_aux=True))
    lams = []
    for _ in range(6):  # restarts, as along a run (fixed H here): non-decreasing, <= lambda_max
        lam, vec, aux = restart(u)
        assert float(aux) == pytest.approx(float(jnp.sum(u / jnp.linalg.norm(u))), rel=1e-5)  # aux of the 1st call
        lams.append(float(lam[0]))
        u = vec[:, 0]
    assert all(b >= a_ - 1e-3 for a_, b in zip(lams, lams[1:], strict=False)) and max(lams) <= 50.0 + 1e-3
    assert lams[-1] == pytest.approx(50.0, rel=1e-3)


def test_bisect_edges_brackets_a_threshold():
    edge = np.array([3.0, 10.0, 1.0, 100.0])  # the last two are censored below / above the bracket
    e = dyn.bisect_edges(lambda m: m > edge, 2.0, 64.0, 4, 4)
    assert e["lo_ok"].tolist() == [True, True, False, True] and e["hi_div"].tolist() == [True, True, True, False]
    np.testing.assert_allclose(e["hi"] / e["lo"], 32.0 ** (1 / 16), rtol=1e-12)
    assert np.all((e["lo"][:2] <= edge[:2]) & (edge[:2] < e["hi"][:2]))


def test_config_validation():
    with pytest.raises(ValueError, match="top_k"):
        sim.Config(top_k=30, lanczos_iters=10, spectrum_k=5)
    with pytest.raises(ValueError, match="betas"):
        sim.Config(betas=(0.5, 0.9))
    with pytest.raises(ValueError, match="n_seeds"):
        sim.Config(n_seeds=1)
    with pytest.raises(ValueError, match="edge_bracket"):
        sim.Config(edge_bracket=(8.0, 2.0))
    with pytest.raises(ValueError, match="eos_steps"):
        sim.Config(eos_steps=15, eos_every=10)
    with pytest.raises(ValueError, match="spectrum_k"):
        sim.Config(spectrum_k=100)
    with pytest.raises(ValueError, match="map_seeds"):
        sim.Config(map_seeds=16)
    with pytest.raises(ValueError, match="eos_seeds"):
        sim.Config(eos_seeds=1)
    with pytest.raises(ValueError, match="scan_widths"):
        sim.Config(scan_widths=(32,))
    with pytest.raises(ValueError, match="scan_beta"):
        sim.Config(scan_beta=0.7)


def test_edge_is_first_divergence():
    lrs = np.array([1.0, 2.0, 4.0, 8.0])
    assert grid_edge(lrs, np.array([True, True, False, True])) == 2.0
    assert grid_edge(lrs, np.array([True] * 4)) == 8.0
    assert np.isnan(grid_edge(lrs, np.array([False, True, True, True])))


def test_seed_edges_marks_censored_brackets():
    r = {
        "edges": {
            "lo": np.array([[2.0, 4.0, 2.0]]),
            "hi": np.array([[8.0, 4.0, 4.0]]),
            "lo_ok": np.array([[True, True, False]]),
            "hi_div": np.array([[True, False, True]]),
        }
    }
    e = seed_edges(r)
    assert e[0, 0] == pytest.approx(4.0) and e[0, 1] == np.inf and np.isnan(e[0, 2])


def test_bracket_gap_counts_whole_brackets():
    """Two bisections of (1, 64) in 6 halvings end on one log grid (64^(1/64) apart): three brackets apart is
    exactly 3 x 0.09375 octaves, whatever the rounding of the midpoints sqrt(lo hi)."""
    res = bracket_octaves((1.0, 64.0), sim.Config(edge_iters=6))
    lo = 2.0 ** (37 * res)
    a, b = np.sqrt(lo * lo * 2**res), np.sqrt(lo * 2 ** (3 * res) * lo * 2 ** (4 * res))
    assert bracket_gap(a, b, res) == 3 * res and bracket_gap(b, a, res) == 3 * res
    assert bracket_gap(a, a, res) == 0.0


def test_unigram_cross_entropy_by_hand():
    """Add-one smoothing over a 3-symbol vocabulary: train counts (2, 1, 0) -> p = (3, 2, 1)/6; eval tokens (0, 1)
    -> cross-entropy -(log 1/2 + log 1/3)/2; an eval symbol never seen in training keeps probability 1/6."""
    assert unigram_cross_entropy(np.array([0, 0, 1]), np.array([0, 1]), 3) == pytest.approx(
        -(np.log(0.5) + np.log(1 / 3)) / 2, rel=1e-14
    )
    assert unigram_cross_entropy(np.array([0, 0, 1]), np.array([2]), 3) == pytest.approx(np.log(6.0), rel=1e-14)


def test_eos_rows_equal_raw_and_effective_lr():
    rows = eos_rows(sim.Config(eos_beta=0.5, eos_mults=(2.0,)))
    assert [(b, m) for _, b, m in rows] == [(0.0, 2.0), (0.5, 2.0), (0.5, 1.0)]


@pytest.mark.slow  # ~70 s on 2 idle cores; `workbench all --quick` decides the same claims (default run: test_smoke.py)
def test_quick_preset_end_to_end(tmp_path):
    """One quick-preset run, its outputs and its claims (one test, not two sharing a module fixture: pytest-xdist
    ran the two on different workers, each repeating the ~35 s run)."""
    outcome = harness.execute(sim, preset="quick", seed=0, out_dir=tmp_path, verbose=False)
    assert_outputs(tmp_path, sim.NAME)
    cfg = sim.PRESETS["quick"]
    # the clean quick run decides every claim as the full preset does: passes, and known disagreements fail
    assert_as_expected(sim.NAME, outcome.claims)
    assert all(c.n_seeds >= 5 for c in outcome.claims if c.ci > 0)
    assert all(np.isfinite(c.measured) for c in outcome.claims)
    r = outcome.results
    assert np.all(np.asarray(r["hessian"]["lambda_max_seeds"]) > 0)
    assert np.asarray(r["init_loss"]).shape == (cfg.n_seeds,)
    lam = np.asarray(r["eos"]["lam"])
    assert lam.shape == (len(eos_rows(cfg)), cfg.eos_seeds, cfg.eos_steps // cfg.eos_every + 1)
    assert np.all(np.isfinite(lam))
    # every beta trains at the smallest grid lr; GD diverges at the largest (effective = raw lr 32 x 2/lambda)
    div = np.asarray(r["sgd"]["diverged"])
    assert div.shape == (cfg.n_lr, len(cfg.betas), cfg.map_seeds)
    assert not div[0].any() and div[-1, cfg.betas.index(0.0)].all()
    assert r["scan"]["spectrum"].shape == (len(cfg.scan_widths), cfg.scan_seeds, cfg.spectrum_k)
    assert np.asarray(r["adam"]["final_loss"]).shape == (cfg.n_adam, len(cfg.adam_beta1s), cfg.map_seeds)


@pytest.mark.parametrize("beta", [0.0, 0.5, 0.9])
def test_linear_river_ratio_matches_recursion(beta):
    x, xp, t = 0.0, 0.0, 20
    for _ in range(t):  # heavy ball on a constant gradient g = 1, lr = 1
        x, xp = x - 1.0 + beta * (x - xp), x
    assert linear_river_ratio(beta, t) == pytest.approx(-x / t, rel=1e-12)


def test_linear_river_displacement_matches_the_exact_formula():
    """At lr = 1e-5 x 2/lambda_max the gradient stays constant over 20 steps (a linear river): the full-batch
    program's HB / GD displacement equals [T - beta(1-beta^T)/(1-beta)]/((1-beta)T) (paper's exact formula).
    Was a claim; it holds by construction of the update, so it is a test of ``dynamics.fullbatch_run``."""
    from jaxwb.models.tiny_lm import LMConfig, TinyLM
    from jaxwb.models.train import get_batch

    mc = LMConfig(d_model=16, n_layers=1, n_heads=2, ctx=8)
    flat0, unravel, static = dyn.split(TinyLM(mc, key=jax.random.key(0)))
    x, y = get_batch(jnp.arange(200) % 97, 4, mc.ctx, key=jax.random.key(1))
    V = jnp.zeros((flat0.size, 1)).at[0, 0].set(1.0)
    beta, steps = 0.9, 20

    def disp(b):
        row = {"theta0": flat0, "u0": V[:, 0], "V": V, "lr": jnp.float32(1e-6), "beta": jnp.float32(b)}
        out = dyn.fullbatch_run(
            row, unravel=unravel, static=static, x=x, y=y, steps=steps, every=steps, track_iters=2, mid=0
        )
        return float(out["disp"][-1])

    assert disp(beta) / disp(0.0) == pytest.approx(linear_river_ratio(beta, steps), rel=1e-3)


def test_locate_targets_finds_windows_and_counts_misaligned_targets():
    from jaxwb.sims.river_valley_lm.reference import locate_targets

    tok = np.arange(300) * 37 % 251
    x = np.stack([tok[10:18], tok[200:208]])
    starts, bad = locate_targets(tok, x, np.stack([tok[11:19], tok[201:209]]))
    assert starts.tolist() == [10, 200] and bad == 0
    _, bad = locate_targets(tok, x, np.stack([tok[12:20], tok[201:209]]))  # the first window's targets shifted by two
    assert bad == 8
    _, bad = locate_targets(tok, x, x)  # targets = inputs
    assert bad == 16


@pytest.mark.parametrize("beta", [0.0, 0.5, 0.9])
def test_quadratic_edge_is_the_heavy_ball_threshold(beta):
    """The simulated edge against 2(1+beta)/lambda_max; negative and tiny curvatures do not move it."""
    from jaxwb.sims.river_valley_lm.reference import quadratic_edge

    lams = np.array([7.0, 3.0, 1e-3, -2.0])
    assert quadratic_edge(lams, beta) == pytest.approx(2 * (1 + beta) / 7.0, rel=3e-5)


def test_bisect_edge_matches_the_runs_bisection():
    from jaxwb.sims.river_valley_lm.reference import bisect_edge

    for edge in (3.0, 10.0, 1.0, 100.0):
        lo, hi, lo_ok, hi_div = bisect_edge(lambda m, edge=edge: m > edge, 2.0, 64.0, 4)
        e = dyn.bisect_edges(lambda m, edge=edge: m > edge, 2.0, 64.0, 4, 1)
        assert (lo, hi, lo_ok, hi_div) == pytest.approx(
            (float(e["lo"][0]), float(e["hi"][0]), bool(e["lo_ok"][0]), bool(e["hi_div"][0])), rel=1e-12
        )


def test_dense_hessian_against_the_reference_hvp_and_its_flat_order():
    from jaxwb.models import reference_np as rnp
    from jaxwb.models.tiny_lm import LMConfig, TinyLM
    from jaxwb.sims.river_valley_lm import reference as rv

    mc = LMConfig(vocab=16, d_model=4, n_layers=1, n_heads=1, ctx=4)
    p = rnp.float64_params(TinyLM(mc, key=jax.random.key(0)))
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 16, (2, 4)), rng.integers(0, 16, (2, 4))
    fl = rv.Flat.of(p)
    assert all(np.array_equal(a, p[k]) for k, a in fl.unflat(fl.flat(p)).items())
    h = rv.dense_hessian(p, x, y, n_heads=1, rope_base=mc.rope_base)
    v = rng.normal(size=fl.size)
    v /= np.linalg.norm(v)
    hv = fl.flat(rv.fd_hvp(p, fl.unflat(v), x, y, n_heads=1, rope_base=mc.rope_base))
    np.testing.assert_allclose(h @ v, hv, atol=1e-6 * np.abs(hv).max())
    assert rv.rayleigh(p, fl.unflat(v), x, y, n_heads=1, rope_base=mc.rope_base) == pytest.approx(v @ h @ v, rel=1e-6)


def test_stream_starts_replay_the_training_batches():
    """The reference cuts its windows at the starts the run's random stream draws: the same windows as
    ``models.train.get_batch`` inside ``train_scan`` (keys split (k, kb) per step)."""
    from jaxwb.models import reference_np as rnp
    from jaxwb.models.train import get_batch
    from jaxwb.sims.river_valley_lm.run import stream_starts

    data = jnp.asarray(np.arange(500) * 7 % 256)
    key = jax.random.key_data(jax.random.key(3))
    starts = np.asarray(stream_starts(key, 3, 4, 500, 8))
    k = key
    for t in range(3):
        k, kb = jax.random.split(k)
        x, y = get_batch(data, 4, 8, key=kb)
        xr, yr = rnp.windows(np.asarray(data), starts[t], 8)
        np.testing.assert_array_equal(np.asarray(x), xr)
        np.testing.assert_array_equal(np.asarray(y), yr)


@pytest.mark.parametrize("adam", [False, True])
def test_reference_training_matches_the_runs_minibatch_program(adam):
    """A few steps of the reference's float64 training against ``dynamics.minibatch_run`` (float32): the same
    final validation loss, and the same divergence at a huge lr."""
    from jaxwb.models import reference_np as rnp
    from jaxwb.models.tiny_lm import LMConfig, TinyLM
    from jaxwb.sims.river_valley_lm import reference as rv
    from jaxwb.sims.river_valley_lm.run import stream_starts

    mc = LMConfig(d_model=16, n_layers=1, n_heads=2, ctx=8)
    model = TinyLM(mc, key=jax.random.key(0))
    flat0, unravel, static = dyn.split(model)
    tok = np.asarray((np.arange(3000) * 7919) % 97)
    ex, ey = rnp.windows(tok, np.array([0, 100, 200]), mc.ctx)
    key = jax.random.key_data(jax.random.key(1))
    steps, lr, beta = 5, (1e-2 if adam else 0.5), 0.9
    for lr_, diverges in ((lr, False), (1e4, True)):
        row = {
            "theta0": flat0,
            "key": key,
            "lr": jnp.float32(lr_),
            "beta": jnp.float32(beta),
            "adam": jnp.asarray(adam),
        }
        out = dyn.minibatch_run(
            row, unravel=unravel, static=static, data=jnp.asarray(tok), ex=jnp.asarray(ex), ey=jnp.asarray(ey),
            steps=steps, batch_size=4, blowup=2.0,
        )  # fmt: skip
        starts = np.asarray(stream_starts(key, steps, 4, tok.size, mc.ctx))
        div, p = rv.train(
            rnp.float64_params(model), tok, starts, mc.ctx, lr=lr_, beta=beta, adam=adam, n_heads=2,
            rope_base=mc.rope_base,
        )  # fmt: skip
        assert div == bool(out["diverged"]) == diverges
        if not diverges:
            ref = rnp.cross_entropy(p, ex, ey, n_heads=2, rope_base=mc.rope_base)
            assert float(out["final_loss"]) == pytest.approx(ref, abs=1e-4)
