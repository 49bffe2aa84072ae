"""The compile stage on real Triton kernels: a trace under the interpreter, a real compile for
sm_90/sm_80 without a GPU, and the facts read back from the cubin and PTX."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from trialtui.core.problem_dir import load_problem
from trialtui.core.job_spec import TraceSpec
from trialtui.engine.jobs import run_child
from trialtui.engine.validate import validate_file

pytestmark = pytest.mark.slow

PROBLEMS = Path(__file__).parent / "problems"


def copy_problem(name: str, tmp_path: Path) -> Path:
    """A private copy of a fixture problem: validation writes .trialtui/ state into it."""
    return Path(shutil.copytree(PROBLEMS / name, tmp_path / name))


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def by_arch(report: dict) -> dict[str, dict]:
    return {k["arch"]: k for k in report["kernels"]}


def test_elementwise_kernel_compiles_for_sm90_with_registers_and_vector_loads(tmp_path):
    root = copy_problem("kb_add", tmp_path)
    r = validate_file(root, root / "add.py")
    assert r["ok"], r["errors"]
    assert r["form"] == "kernelbench" and r["arch"] == ["sm_90"]
    [k] = r["kernels"]
    assert (k["name"], k["qualname"], k["binding"], k["arch"]) == ("add_kernel", "add_kernel", "add_kernel", "sm_90")
    assert k["registers"] > 0 and k["spills"] == 0
    assert k["shared_bytes"] == 0 and k["tensor_cores"] is False
    assert k["num_warps"] == 2 and k["constexprs"] == {"BLOCK": 256}
    assert k["signature"] == {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    # n = 1024 and the pointers are 16-byte aligned: specialized as the JIT would, loads are 128-bit
    assert k["vector_width"] == 128 and k["widest_load"].startswith("ld.global.v4")
    assert k["grid"] == [4, 1, 1] and k["launches"] == 1
    assert k["line"] == line_of(root / "add.py", "def add_kernel")
    assert r["preview"]["correct"] is True and r["preview"]["max_abs_err"] == 0.0
    assert r["preview"]["case"] == {"n": 1024}
    assert r["static_ms"] is not None and 0 < r["compile_ms"] <= r["elapsed_ms"]
    assert Path(r["log"]).parent == root / ".trialtui" / "logs" and Path(r["log"]).exists()


def test_dot_kernel_uses_tensor_cores_on_sm90_and_sm80(tmp_path):
    root = copy_problem("kb_matmul", tmp_path)
    r = validate_file(root, root / "dot.py", arch="sm_90,sm_80")
    assert r["ok"], r["errors"]
    kernels = by_arch(r)
    assert set(kernels) == {"sm_90", "sm_80"}
    assert kernels["sm_90"]["tensor_cores"] and kernels["sm_90"]["tensor_core_op"] == "wgmma"
    assert kernels["sm_80"]["tensor_cores"] and kernels["sm_80"]["tensor_core_op"] == "mma"
    for k in kernels.values():
        assert k["registers"] > 0 and k["shared_bytes"] > 0  # pipelined tiles live in shared memory
        assert k["signature"]["a_ptr"] == "*fp16" and k["num_stages"] == 3
        assert k["constexprs"]["BM"] == 64 and k["constexprs"]["BK"] == 32
    assert r["preview"]["correct"] is True


def test_gpu_mode_elementwise_kernel_has_no_tensor_cores_and_scalar_loads_at_an_odd_size(tmp_path):
    root = copy_problem("gm_scale", tmp_path)
    r = validate_file(root, root / "scale.py", arch=["sm_90", "sm_80"])
    assert r["ok"], r["errors"]
    assert r["form"] == "gpumode"
    kernels = by_arch(r)
    assert set(kernels) == {"sm_90", "sm_80"}
    for k in kernels.values():
        assert k["name"] == "scale_kernel" and k["registers"] > 0
        assert k["tensor_cores"] is False and k["tensor_core_op"] is None
        # the first test case has size 1000, not a multiple of 16: no divisibility, no vector loads
        assert k["vector_width"] == 32
    assert r["preview"]["correct"] is True and r["preview"]["case"] == {"size": 1000, "seed": 4242}


def test_planted_dot_shape_mismatch_is_a_compile_error_at_its_line(tmp_path):
    root = copy_problem("kb_matmul", tmp_path)
    r = validate_file(root, root / "bad_dot.py", arch="sm_90,sm_80")
    assert not r["ok"] and r["kernels"] == []
    [error] = [e for e in r["errors"] if e["code"] == "compile-error"]
    assert "matmul_kernel" in error["message"] and "sm_90, sm_80" in error["message"]
    assert "reduction dimensions" in error["message"] and "Traceback" not in error["message"]
    assert error["line"] == line_of(root / "bad_dot.py", "acc += tl.dot(a, b)")
    assert "[M, K] @ [K, N]" in error["hint"]


def test_undefined_name_in_a_kernel_is_a_compile_error_at_its_line(tmp_path):
    root = copy_problem("kb_matmul", tmp_path)
    r = validate_file(root, root / "undefined_name.py")
    assert not r["ok"]
    [error] = [e for e in r["errors"] if e["code"] == "compile-error"]
    assert "scale_kernel" in error["message"] and "scale_factor" in error["message"]
    assert error["line"] == line_of(root / "undefined_name.py", "x * scale_factor")
    # the interpreter hit the same bug: a preview warning, not a second error
    assert [w["code"] for w in r["warnings"]] == ["preview-failed"]


def test_autotune_and_heuristics_record_the_config_that_ran(tmp_path):
    root = copy_problem("kb_add", tmp_path)
    r = validate_file(root, root / "autotuned.py")
    assert r["ok"], r["errors"]
    [k] = r["kernels"]
    assert k["constexprs"] == {"BLOCK": 512, "EVEN": True}  # the first config; 1024 % 512 == 0
    assert (k["num_warps"], k["num_stages"]) == (8, 2)
    assert k["tuning"] == {"autotune": {"configs": 2, "params": ["BLOCK"], "key": ["n"]}, "heuristics": ["EVEN"]}
    assert k["grid"] == [2, 1, 1] and k["launches"] == 1  # the tuner did not run every config
    assert r["preview"]["correct"] is True


def test_wrong_result_is_a_preview_warning_with_the_error_size(tmp_path):
    root = copy_problem("kb_add", tmp_path)
    path = root / "add.py"
    path.write_text(path.read_text().replace("x + y, mask=mask", "x - y, mask=mask"))
    r = validate_file(root, path)
    assert r["ok"] and r["kernels"]
    assert r["preview"]["correct"] is False and r["preview"]["max_abs_err"] > 0.1
    assert [w["code"] for w in r["warnings"]] == ["preview-incorrect"]


def test_output_the_kernel_never_wrote_fails_the_preview(tmp_path):
    root = copy_problem("kb_add", tmp_path)
    path = root / "add.py"
    path.write_text(path.read_text().replace("mask = offs < n", "mask = offs < n - 1"))
    r = validate_file(root, path)
    assert r["preview"]["correct"] is False and "NaN" in r["preview"]["message"]


def test_bfloat16_problem_compiles_bf16_pointers(tmp_path):
    # The loader runs bfloat16 as float32 under the interpreter; the compile must still see bf16.
    root = copy_problem("kb_add", tmp_path)
    (root / "trialtui.toml").write_text('dtype = "bfloat16"\n[test_sizes]\nn = 1024\n')
    r = validate_file(root, root / "add.py")
    assert r["ok"], r["errors"]
    [k] = r["kernels"]
    assert k["signature"]["x_ptr"] == "*bf16" and k["bf16_from_fp32"] == ["x_ptr", "y_ptr", "out_ptr"]
    assert k["registers"] > 0


def test_register_cap_is_compiled_in_and_spills_are_reported(tmp_path):
    root = copy_problem("kb_add", tmp_path)
    r = validate_file(root, root / "spill.py", arch="sm_90,sm_80")
    assert r["ok"], r["errors"]
    for k in r["kernels"]:
        assert k["registers"] == 64  # maxnreg=64 from the launch reached ptxas
        assert k["spills"] > 0 and k["local_bytes"] == 4 * k["spills"]
    assert sorted(w["code"] for w in r["warnings"]) == ["spills", "spills"]
    assert r["preview"]["correct"] is True


def test_trace_runs_as_a_child_job_of_its_own(tmp_path):
    root = copy_problem("kb_add", tmp_path)
    problem = load_problem(root)
    launches = tmp_path / "launches.json"
    spec = TraceSpec(**problem.job_spec(), candidate=str(root / "autotuned.py"), launches=str(launches))
    result = run_child("trialtui.runner.trace_job", spec, timeout_s=60, log_path=tmp_path / "trace.log")
    assert result["state"] == "ok", result["message"]
    [launch] = result["launches"]
    assert launch["attr"] == "add_kernel" and launch["signature"]["n"] == "i32"
    assert launch["divisible"] == ["x_ptr", "y_ptr", "out_ptr", "n"]
    assert launch["options"] == {"num_warps": 8, "num_stages": 2, "num_ctas": 1}
    assert launches.exists() and result["preview"]["correct"] is True
