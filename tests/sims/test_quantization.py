"""Quantization result end to end on the quick preset, and the Hadamard benchmark in quick mode."""

from __future__ import annotations

import numpy as np

from jaxwb.sims import quantization as sim
from jaxwb.sims.core import harness
from jaxwb.sims.quantization.measures import t_halfwidth
from jaxwb.sims.quantization.run import format_datasets, format_stats, synthetic_kv
from tests.sims.expected import assert_config_refuses, assert_outputs


def test_quick_preset_end_to_end(tmp_path):
    outcome = harness.execute(sim, preset="quick", seed=0, out_dir=tmp_path, verbose=False)
    # every claim passes: the RHT/dense ratio at b=8 is claimed against the finite-d moment ratio (docs)
    failed = [(c.statement, c.predicted, c.measured) for c in outcome.claims if not c.as_expected]
    assert not failed, failed
    manifest = assert_outputs(tmp_path, sim.NAME)
    assert manifest["claims_passed"] == manifest["claims_total"] and manifest["nonfinite_arrays"] == []
    r = outcome.results
    # the measured MSE really falls ~4x per bit at high b (not only the claims' ratios)
    m = np.asarray(r["rht"]["64"]["mse"]).max(0)
    assert 3.0 < m[-2] / m[-1] < 5.0
    iq = {k: float(v) for k, v in r["inquant"]["mse"].items()}
    assert iq["8-bit"] < iq["InQuant (4.0x)"] < iq["plain 4-bit"]


def test_bench_quick_runs():
    from jaxwb.sims.bench.hadamard import bench

    rows = bench(quick=True)
    assert {r.op.split()[0] for r in rows} >= {"fwht", "rht_quantize"}
    assert all(r.ours_s > 0 and r.baseline_s > 0 for r in rows)


# identities (not claims): they hold by construction, so they are unit tests


def ties_and_edges(rows: int, cols: int):
    """A matrix of exact E2M1 midpoints, zeros, subnormals and values at RaZeR's windows (4.5, 5.5, 7, 8) times
    powers of two, each block's amax on the grid (so the midpoints stay exact): where a rounding rule or the
    strictly-closer test could differ. The global amax 10.5 makes both global scales powers of two (10.5 / 2688 =
    2^-8, 10.5 / 168 = 2^-4), so the ties stay exact after scaling."""
    rng = np.random.default_rng(0)
    mids = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 4.5, 5.5, 7.0, 8.0, 0.0, 1e-40, 6.0])
    x = rng.choice(mids, (rows, cols)) * rng.choice([-1.0, 1.0], (rows, cols)) * 2.0 ** rng.integers(-3, 1, (rows, 1))
    x[:, ::16] = 6.0 * 2.0 ** rng.integers(-3, 1, (rows, 1))
    x[0, 0] = 10.5
    return x.astype(np.float32)


def test_razer_never_worse_than_nvfp4_per_block_and_eden_unbiased_and_independent_decoder():
    """Identities of the formats, and the claims' independent decoder (theory.quantization.fp4_formats) equal to
    the kernels on the datasets and on ties and edges (the same compiled program: one shape)."""
    import jax
    import jax.numpy as jnp

    from jaxwb.theory.quantization import fp4_formats as ff

    x_all = {**format_datasets(jax.random.key(0), 16, 128), "ties": jnp.asarray(ties_and_edges(16, 128))}
    for name, x in x_all.items():
        st, xhat = format_stats(x, jax.random.key(1), 64)
        assert float(st["block_gap"]) <= 1e-6, name  # RaZeR keeps NVFP4's candidate when it is better
        assert float(st["unbiased_inner"]) <= 1e-4, name  # EDEN: <x_hat, x> = ||x||^2 exactly
        for label in ff.ROUNDTRIPS:
            assert np.array_equal(np.asarray(xhat[label]), ff.roundtrip(label, np.asarray(x))), (name, label)
    table = ff.e3m3_values()  # E3M3 ties go to the even code
    assert ff.e3m3(np.array([(table[8] + table[9]) / 2, (table[9] + table[10]) / 2])).tolist() == [
        table[8],
        table[10],
    ]


def test_inquant_exact_4x_and_finds_planted_outliers():
    import jax

    from jaxwb.pallas_kernels.quant.inquant import inquant_pack

    cfg = sim.PRESETS["quick"]
    kv = synthetic_kv(jax.random.key(2), cfg)
    q = inquant_pack(kv, key=jax.random.key(3), n_outliers=len(cfg.kv_outliers), n_samples=cfg.kv_samples)
    assert q.nbytes()["payload_ratio"] == 4.0
    assert set(np.asarray(q.outliers).tolist()) == set(cfg.kv_outliers)


def test_config_validation():
    bad = (
        ("dims", (63,)),
        ("bits", (1, 2)),
        ("n_signs", 3),
        ("kv_outliers", (500,)),
        ("kv_outlier_scale", float("inf")),
        ("fmt_cols", 100),
    )
    assert_config_refuses(sim.PRESETS["quick"], bad)


def test_t_halfwidth():
    from scipy import stats

    x = np.random.default_rng(0).standard_normal(20)
    se = x.std() / np.sqrt(20)
    assert t_halfwidth(se, 20) == __import__("pytest").approx(
        stats.t.ppf(0.975, 19) * x.std(ddof=1) / np.sqrt(20), rel=1e-12
    )
