"""The prepared GPU check (``python -m benchmarks.gpu_check``) is known to work before a GPU is there:
its dry run (CPU, interpret mode, tiny sizes) runs end to end through the same code path and writes the json
and png; the interpret -> triton forcing of the pytest step, the peak table and the goal logic are unit-tested.
"""

from __future__ import annotations

import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest

from benchmarks import gpu_check
from benchmarks.gpu_check import plugin


def test_peaks_table():
    assert gpu_check.peaks_for("NVIDIA H100 80GB HBM3") == ("H100 SXM", gpu_check.PEAKS["H100 SXM"])
    assert gpu_check.peaks_for("NVIDIA H200")[0] == "H200"
    assert gpu_check.peaks_for("NVIDIA H100 PCIe") == ("unknown", None)
    assert gpu_check.peaks_for("cpu") == ("unknown", None)
    assert gpu_check.PEAKS["H200"]["hbm_bytes_per_s"] > gpu_check.PEAKS["H100 SXM"]["hbm_bytes_per_s"]


def _has_pallas_call(fn, *args) -> bool:
    return "pallas_call" in str(jax.make_jaxpr(fn)(*args))


def test_forced_implementation_maps_interpret_and_restores():
    """Inside the context every public op (and every module that imported it) runs the forced implementation
    for implementation="interpret"; outside it the kernel runs again."""
    import jaxwb.pallas_kernels.quant as quant
    from jaxwb.pallas_kernels.quant import hadamard

    x = jnp.ones((4, 64), jnp.float32)
    # fresh lambdas for every trace: make_jaxpr caches traces per function object
    assert _has_pallas_call(lambda x: quant.fwht(x, implementation="interpret"), x)
    with gpu_check.forced_implementation("xla") as n:
        assert n >= 10  # attention, quantizers, matmul, fwht, rht, inquant ...
        assert not _has_pallas_call(lambda x: quant.fwht(x, implementation="interpret"), x)
        assert not _has_pallas_call(lambda x: hadamard.fwht(x, implementation="interpret"), x)
    assert _has_pallas_call(lambda x: quant.fwht(x, implementation="interpret"), x)
    assert _has_pallas_call(lambda x: hadamard.fwht(x, implementation="interpret"), x)
    assert not hasattr(quant.fwht, "__wrapped_for_gpu_check__")


def test_package_entry_points():
    """The package keeps the module's entry points: ``-p benchmarks.gpu_check`` finds the pytest hooks on the
    package, ``python -m benchmarks.gpu_check`` runs ``__main__``, and the check's own adapters (which take
    ``implementation=``) are not patched as public ops."""
    assert gpu_check.pytest_configure is plugin.pytest_configure
    assert gpu_check.pytest_unconfigure is plugin.pytest_unconfigure
    mods = {m.__name__ for m, _, _ in plugin._public_ops()}
    assert "jaxwb.pallas_kernels.quant.hadamard" in mods
    assert not any(m.startswith("benchmarks") for m in mods), mods
    p = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_check", "--help"],
        cwd=gpu_check.REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0 and "--dry-run" in p.stdout and "prepared hardware check" in p.stdout, p.stderr


def _block_sparse_record(L, sparsity, *, ideal, got):
    return dict(
        section="block_sparse",
        impl="triton",
        L=L,
        sparsity=sparsity,
        ideal_speedup=ideal,
        speedup_vs_dense=got,
    )


def test_goals_met_and_missed():
    """The kernels' performance goals against the measured ceilings: the best W4A16 variant against bf16 (<= 0.6x at
    decode, <= 1.2x from M = 128), quantize >= 70% / dequantize >= 85% of the ceiling, RaZeR activation at least
    as fast as XLA, FWHT >= 75% and error <= 1e-6, block-sparse against ideal and against the best dense,
    attention against cuDNN; not measured -> met None."""
    peaks = gpu_check.PEAKS["H200"]
    mm = dict(section="matmul", op="fp4_matmul")
    recs = [
        dict(mm, impl="triton", M=1, time_s=2.0),
        dict(mm, impl="triton_bitplace", M=1, time_s=0.5),  # the best variant counts: 0.5 <= 0.6 x 1.0
        dict(mm, impl="bf16_dense", M=1, time_s=1.0),
        dict(mm, impl="triton", M=4096, time_s=6.0),
        dict(mm, impl="triton_dequant_dot", M=4096, time_s=1.3),  # 1.3 > 1.2 x 1.0
        dict(mm, impl="bf16_dense", M=4096, time_s=1.0),
        dict(section="quant", op="nvfp4_quantize", impl="triton", time_s=1.0, frac_measured_hbm=0.6),
        dict(section="quant", op="nvfp4_quantize", impl="triton_masked", time_s=0.8, frac_measured_hbm=0.75),
        dict(section="quant", op="nvfp4_dequantize", impl="triton", time_s=1.0, frac_measured_hbm=0.8),
        dict(section="quant", op="razer_activation_quantize", impl="triton", time_s=1.0, frac_measured_hbm=0.7),
        dict(section="quant", op="razer_activation_quantize", impl="xla", time_s=0.9),
        dict(section="fwht", op="fwht", impl="triton", d=4096, time_s=1.0, frac_measured_hbm=0.8, rel_err_f64=2e-6),
        dict(section="fwht", op="fwht", impl="dense_rotation", d=4096, time_s=5.0),
        _block_sparse_record(16384, 0.9, ideal=10.0, got=9.0) | dict(time_s=1.0),
        dict(section="attention", op="flash_attention", impl="cudnn", L=16384, time_s=9.0),
        dict(section="attention", op="flash_attention", impl="triton", L=16384, time_s=12.0),
    ]
    got = {g["goal"]: g["met"] for g in gpu_check.goals(recs, peaks, dry_run=False)}
    want = {
        "fp4_matmul M=1: time <= 0.6x bf16 matmul": True,
        "fp4_matmul M=4096: time <= 1.2x bf16 matmul": False,
        "nvfp4_dequantize >= 85% of the measured ceiling": False,
        "nvfp4_quantize >= 70% of the measured ceiling": True,
        "razer_activation_quantize: at least as fast as its XLA path": False,
        "razer_activation_quantize >= 70% of the measured ceiling": True,
        "fwht f32 d=4096 >= 75% of the measured ceiling": True,
        "fwht f32 d=4096: rel. error vs float64 <= 1e-6": False,
        "block-sparse triton L=16384 s=0.9: >= 0.85 of ideal vs its dense kernel": True,
        "block-sparse triton L=16384 s=0.9: >= 0.80/(1-s) vs the best dense": True,  # 9 x 1 >= 8
        "attention bf16 L=16384: mosaic_gpu >= 0.9x cuDNN": None,  # not measured
        "attention bf16 L=16384: triton >= 0.65x cuDNN": True,  # 0.75
    }
    assert got == want, got
    assert all(g["met"] is None for g in gpu_check.goals(recs, peaks, dry_run=True))


def test_ptx_counts_by_entry(tmp_path):
    """The instruction dump's PTX counter: instructions per .entry by class, directives and labels skipped."""
    from benchmarks.gpu_check.dump import ptx_counts

    (tmp_path / "m.ptx").write_text(
        ".version 8.4\n.visible .entry nvfp4_matmul(\n.param .u64 p\n)\n{\n.reg .b32 %r<9>;\n"
        "ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1];\nand.b32 %r5, %r1, 15;\nshl.b32 %r6, %r5, 6;\n"
        "lop3.b32 %r7, %r5, %r6, 8, 0xEA;\ncvt.rn.bf16.f32 %rs1, %f1;\nmma.sync.aligned.m16n8k16 ...;\n"
        "$L__BB0_1:\n@%p1 bra $L__BB0_1;\nst.global.b32 [%rd2], %r7;\nret;\n}\n"
    )
    c = ptx_counts(tmp_path)["nvfp4_matmul"]
    assert (c["load"], c["int"], c["cvt"], c["mma"], c["store"]) == (1, 3, 1, 1, 1)
    assert c["total"] == 8  # ld, and, shl, lop3, cvt, mma, st, ret (the predicated branch line starts with @)


def test_gpu_check_script_is_one_prepared_job():
    """.ci/gpu_check.sh: valid bash; ceilings first, then the instruction dump (old and new W4A16 and NVFP4
    quantize), main, mosaic, tests, merge; every step through `timeout`; limits adding up to ~8 minutes."""
    import re

    script = gpu_check.REPO_ROOT / ".ci" / "gpu_check.sh"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    text = script.read_text()
    order = [text.index(f"step {name}") for name in ("ceilings", '"dump_$c"', "main", "mosaic", "tests", "merge")]
    assert order == sorted(order)
    assert 'timeout "$limit"' in text and "--ceilings-json" in text
    for case in ("w4a16_old", "w4a16_new", "nvfp4_quantize_old", "nvfp4_quantize_new"):
        assert case in text
    limits = {k: int(v) for k, v in re.findall(r"\$\{(T_[A-Z]+):-(\d+)\}", text)}
    total = (
        limits["T_CEIL"] + 4 * limits["T_DUMP"] + sum(limits[k] for k in ("T_MAIN", "T_MOSAIC", "T_TESTS", "T_MERGE"))
    )
    assert total <= 8 * 60, limits


@pytest.mark.slow
@pytest.mark.skipif(jax.default_backend() == "gpu", reason="the dry run is the CPU stand-in for the GPU run")
def test_gpu_check_script_dry_run(tmp_path):
    """The device job itself on CPU (DRY=--dry-run, tiny sizes; ~15 s of CPU): ceilings, one dump case, the
    W4A16 section with its old and new variants, and the merge with the goals printed."""
    env = dict(
        __import__("os").environ,
        OUT=str(tmp_path),
        DRY="--dry-run",
        PYTHON=sys.executable,
        MAIN_ARGS="--sections matmul",
        T_MOSAIC="0",
        T_TESTS="0",
        DUMP_CASES="w4a16_new",
    )
    p = subprocess.run(
        ["bash", ".ci/gpu_check.sh"], cwd=gpu_check.REPO_ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr[-2000:]
    for name in ("ceilings", "dump_w4a16_new", "main", "merge"):
        assert f"[gpu_check.sh] {name}: rc=0" in p.stdout, p.stdout[-3000:]
    ceilings = json.loads((tmp_path / "ceilings" / "ceilings.json").read_text())
    assert {"copy_bytes_per_s", "pallas_copy_bytes_per_s", "gemv_read_bytes_per_s", "ceiling_bytes_per_s"} <= set(
        ceilings
    )
    merged = json.loads((tmp_path / "merged" / "kernels_gpu.json").read_text())
    impls = {r["impl"] for r in merged["records"] if r["section"] == "matmul"}
    assert {"triton", "triton_bitplace", "triton_dequant_dot", "bf16_dense"} <= impls
    assert merged["measured_ceilings"] == ceilings
    assert "goal: fp4_matmul M=1" in p.stdout
    summary = json.loads((tmp_path / "dump" / "w4a16_new" / "summary.json").read_text())
    assert summary["triton_ir_per_element"]["alu"] <= 16


@pytest.mark.skipif(jax.default_backend() == "gpu", reason="the dry run is the CPU stand-in for the GPU run")
def test_dry_run_end_to_end(tmp_path):
    """The whole script on CPU: every section measured, kernels agree with their XLA paths, the pytest step
    passes with the forcing plugin loaded, json (device, jax version) and png written."""
    res = gpu_check.main(["--dry-run", "--out", str(tmp_path), "--budget-s", "1"])
    saved = json.loads((tmp_path / "kernels_gpu.json").read_text())
    assert (tmp_path / "kernels_gpu.png").stat().st_size > 10_000
    assert saved["device"]["platform"] == "cpu" and saved["jax_version"] == jax.__version__
    assert saved["dry_run"] is True and saved["peaks"] is None
    recs = res["records"]
    assert {r["section"] for r in recs} == {"attention", "block_sparse", "quant", "fwht", "inquant", "matmul"}
    kernels = [r for r in recs if r["impl"] in ("triton", "mosaic_gpu")]
    assert kernels and all(r["error"] is None and r["time_s"] > 0 for r in kernels), [
        (r["op"], r["impl"], r["error"]) for r in kernels if r["error"]
    ]
    assert {r["impl"] for r in recs if r["section"] == "attention"} >= {"triton", "mosaic_gpu", "xla", "cudnn"}
    checked = [r for r in kernels if r.get("max_abs_err_vs_xla") is not None]
    assert len(checked) >= 7 and all(r["max_abs_err_vs_xla"] < 2e-2 for r in checked)
    assert any(r.get("speedup_vs_dense") for r in recs if r["section"] == "block_sparse")
    assert res["tests"]["rc"] == 0, res["tests"]
    assert "in " in res["tests"]["tail"] and "public ops" in res["tests"]["tail"]
    assert all(g["met"] is None for g in res["goals"])


def test_split_run_merges_and_keeps_what_a_killed_step_measured(tmp_path):
    """The device job (.ci/gpu_check.sh) runs the check in steps: each saves its json after every record, so a
    step killed by its time limit keeps what it measured; ``--merge`` joins the steps' json and the pytest -v
    log into one result (goals recomputed, failures named once each)."""
    main_out, mosaic_out = tmp_path / "main", tmp_path / "mosaic"
    gpu_check.main(["--dry-run", "--skip-tests", "--no-plot", "--sections", "quant", "--out", str(main_out)])
    assert not (main_out / "kernels_gpu.png").exists()
    seen = []
    rec = gpu_check.Recorder(gpu_check.Settings(dry_run=True, out=tmp_path, budget_s=1.0), None)
    rec.on_add = lambda: seen.append(len(rec.records))
    rec.add("quant", "op", "triton", "s", time_s=1.0)
    rec.add("quant", "op", "xla", "s", time_s=2.0)
    assert seen == [1, 2]
    gpu_check.main(
        ["--dry-run", "--skip-tests", "--no-plot", "--sections", "attention", "--skip-impls", "xla,triton"]
        + ["--out", str(mosaic_out)]
    )
    log = tmp_path / "tests.log"
    log.write_text(
        "[gw0] [ 50%] PASSED tests/kernels/test_a.py::test_x \n"
        "[gw1] [100%] FAILED tests/kernels/test_a.py::test_y \n"
        "FAILED tests/kernels/test_a.py::test_y - AssertionError\n"
        "========================= 1 failed, 1 passed in 1.00s =========================\n"
    )
    merged = gpu_check.main(
        ["--merge", str(main_out / "kernels_gpu.json"), str(mosaic_out / "kernels_gpu.json")]
        + ["--tests-log", str(log), "--out", str(tmp_path / "merged")]
    )
    assert {r["section"] for r in merged["records"]} == {"quant", "attention"}
    attention_impls = {r["impl"] for r in merged["records"] if r["section"] == "attention"}
    assert "mosaic_gpu" in attention_impls and not attention_impls & {"xla", "triton"}
    assert merged["tests"]["counts"]["FAILED"] == 1 and merged["tests"]["counts"]["PASSED"] == 1
    assert merged["tests"]["failed"] == ["tests/kernels/test_a.py::test_y"]
    assert merged["tests"]["summary"] == "1 failed, 1 passed in 1.00s"
    assert len(merged["runs"]) == 2 and (tmp_path / "merged" / "kernels_gpu.png").stat().st_size > 10_000
    assert merged["measured_ceilings"]["copy_bytes_per_s"] > 0


def test_merge_keeps_the_latest_record_of_a_re_run(tmp_path):
    """A follow-up run of part of the check (``MAIN_ARGS``) replaces the earlier records of the same section,
    op, implementation and shape; the others stay; every record names the part it came from."""
    import json

    from benchmarks.gpu_check.cli import merge

    first = gpu_check.main(["--dry-run", "--skip-tests", "--no-plot", "--sections", "fwht", "--out", str(tmp_path)])
    redo = dict(next(r for r in first["records"] if r["impl"] == "triton"), time_s=1e-9)
    paths = [tmp_path / "kernels_gpu.json", tmp_path / "second.json"]
    paths[1].write_text(json.dumps(dict(first, records=[redo])))
    merged = merge(paths, None, tmp_path / "merged")
    assert len(merged["records"]) == len(first["records"])
    for r in merged["records"]:
        assert (r["part"], r["time_s"]) == ((1, 1e-9) if r["impl"] == "triton" else (0, r["time_s"]))
