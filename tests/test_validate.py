"""validate_file on bad input: every case is a clear finding and a normal return, never a
traceback or a hang; and the rules that turn compile facts into findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_compile_stage import copy_problem, line_of
from trialtui.engine.validate import compile_findings, kernel_findings, parse_archs, validate_file
from trialtui.runner.ptx import ptx_facts

GOOD = (Path(__file__).parent / "problems" / "kb_add" / "add.py").read_text()


def candidate(tmp_path: Path, text: str | bytes, problem: str = "kb_add") -> tuple[Path, Path]:
    root = copy_problem(problem, tmp_path)
    path = root / "cand.py"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return root, path


def after_imports(code: str) -> str:
    """The good candidate with `code` at module level, right after its imports."""
    anchor = "import triton.language as tl\n"
    return GOOD.replace(anchor, anchor + code + "\n")


def codes(report: dict, kind: str = "errors") -> list[str]:
    return [f["code"] for f in report[kind]]


def assert_static_only(report: dict) -> None:
    """Static errors stop validation before any child process starts."""
    assert not report["ok"]
    assert report["compile_ms"] is None and report["kernels"] == [] and report["preview"] is None


# --- bad input caught before any child process -------------------------------------------------


def test_empty_file_is_an_error(tmp_path):
    root, path = candidate(tmp_path, "")
    r = validate_file(root, path)
    assert_static_only(r)
    assert codes(r) == ["empty"]


def test_binary_garbage_is_an_error(tmp_path):
    root, path = candidate(tmp_path, bytes(range(256)) * 64)
    r = validate_file(root, path)
    assert_static_only(r)
    assert codes(r) == ["binary"] and r["errors"][0]["line"] == 1


def test_non_utf8_bytes_are_an_error_with_their_line(tmp_path):
    root, path = candidate(tmp_path, GOOD.encode() + b"\nname = 'caf\xe9'\n")
    r = validate_file(root, path)
    assert_static_only(r)
    assert codes(r) == ["encoding"]
    assert r["errors"][0]["line"] == GOOD.count("\n") + 2


def test_five_megabyte_file_is_refused_before_any_child_process(tmp_path):
    root, path = candidate(tmp_path, GOOD + "# padding\n" * 500_000)
    assert path.stat().st_size > 5_000_000
    r = validate_file(root, path)
    assert_static_only(r)  # refused on its size by the static stage (benches/validate.py times that stage)
    assert codes(r) == ["too-large"]


def test_missing_file_is_an_error(tmp_path):
    root = copy_problem("kb_add", tmp_path)
    r = validate_file(root, root / "nope.py")
    assert_static_only(r)
    assert codes(r) == ["unreadable"]


def test_import_of_a_package_outside_the_allowed_set_is_a_static_error(tmp_path):
    root, path = candidate(tmp_path, after_imports("import numpyy"))
    r = validate_file(root, path)
    assert_static_only(r)
    assert "import-not-allowed" in codes(r)


def test_reference_without_get_inputs_is_a_problem_finding():
    r = validate_file(Path(__file__).parent / "problems" / "kb_no_get_inputs", "add.py")
    assert not r["ok"] and codes(r) == ["problem"]
    assert "get_inputs" in r["errors"][0]["message"]


def test_unknown_arch_is_an_error_not_an_exception(tmp_path):
    root = copy_problem("kb_add", tmp_path)
    r = validate_file(root, root / "add.py", arch="sm_9x")
    assert not r["ok"] and codes(r) == ["arch"] and "sm_9x" in r["errors"][0]["message"]


def test_no_compile_runs_the_static_stage_only(tmp_path):
    root = copy_problem("kb_add", tmp_path)
    r = validate_file(root, root / "add.py", compile=False)
    assert r["ok"] and r["errors"] == []
    assert r["compile_ms"] is None and r["kernels"] == [] and r["preview"] is None
    assert r["static_ms"] < 1000
    assert not (root / ".trialtui").exists()


def test_archs_parse_from_the_cli_spelling():
    assert parse_archs("sm_90,sm_80", ["sm_90"]) == ["sm_90", "sm_80"]
    assert parse_archs(None, ["sm_90"]) == ["sm_90"]
    assert parse_archs(["90", "sm_90a", "8.0"], []) == ["sm_90", "sm_90a", "sm_80"]
    with pytest.raises(ValueError, match="hopper"):
        parse_archs("hopper", [])


# --- bad candidates caught by the compile stage's child processes ------------------------------


@pytest.mark.slow
def test_infinite_loop_at_top_level_times_out_and_says_where(tmp_path):
    """The budget runs out inside the candidate's import, so the message must name that phase. The job
    is a warm one (torch imported before the clock starts, as in the engine), so a busy machine's slow
    torch import cannot spend the budget first and make the message name another phase."""
    from procs import warm_job_waiting
    from trialtui.engine.jobs import WarmChildren
    from trialtui.core.languages import language_of_file
    from trialtui.engine.validate import compile_env

    root, path = candidate(tmp_path, after_imports("import time\nwhile True:\n    time.sleep(60)"))  # no core spent
    warm = WarmChildren()
    try:
        language = language_of_file(path)
        warm.prime(language.compile_job, compile_env(language))
        warm_job_waiting(warm, language.compile_job)
        r = validate_file(root, path, timeout_s=8, warm=warm)
    finally:
        warm.close()
    assert codes(r) == ["timeout"]  # a normal return, not a hang
    assert "importing the candidate" in r["errors"][0]["message"] and "8 s" in r["errors"][0]["message"]
    assert r["preview"]["correct"] is None


@pytest.mark.slow
def test_sys_exit_at_top_level_is_an_error_at_its_line(tmp_path):
    root, path = candidate(tmp_path, after_imports("import sys\nsys.exit(3)"))
    r = validate_file(root, path)
    assert codes(r) == ["sys-exit"]
    assert "sys.exit(3)" in r["errors"][0]["message"]
    assert r["errors"][0]["line"] == line_of(path, "sys.exit(3)")


@pytest.mark.slow
def test_os_exit_at_top_level_is_a_crash_finding(tmp_path):
    root, path = candidate(tmp_path, after_imports("import os\nos._exit(7)"))
    r = validate_file(root, path)
    assert codes(r) == ["crash"] and "code 7" in r["errors"][0]["message"]


@pytest.mark.slow
def test_import_of_a_missing_module_is_an_error_at_its_line(tmp_path):
    root, path = candidate(tmp_path, after_imports("import torch.no_such_module"))
    r = validate_file(root, path)
    assert codes(r) == ["import-error"]
    assert "No module named 'torch.no_such_module'" in r["errors"][0]["message"]
    assert r["errors"][0]["line"] == line_of(path, "import torch.no_such_module")


@pytest.mark.slow
def test_candidate_that_launches_nothing_is_warned(tmp_path):
    text = GOOD.replace("        add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256, num_warps=2)\n",
                        "        torch.add(x, y, out=out)\n")
    assert text != GOOD
    root, path = candidate(tmp_path, text)
    r = validate_file(root, path)
    assert r["ok"] and r["kernels"] == []
    assert codes(r, "warnings") == ["no-launch"]
    assert r["preview"]["correct"] is True


@pytest.mark.slow
def test_exception_in_host_code_is_a_run_error_at_its_line(tmp_path):
    text = GOOD.replace("        n = x.numel()\n", "        n = x.numel()\n        raise ValueError('bad shape')\n")
    root, path = candidate(tmp_path, text)
    r = validate_file(root, path)
    assert codes(r) == ["run-error"] and "ValueError: bad shape" in r["errors"][0]["message"]
    assert r["errors"][0]["line"] == line_of(path, "raise ValueError")


@pytest.mark.slow
def test_candidate_that_needs_cuda_gets_a_warning_not_an_error(tmp_path):
    text = GOOD.replace("out = torch.empty_like(x)", "out = torch.empty_like(x, device='cuda')")
    root, path = candidate(tmp_path, text)
    r = validate_file(root, path)
    assert r["ok"], r["errors"]
    assert codes(r, "warnings") == ["preview-unavailable"]


# --- compile facts → findings -----------------------------------------------------------------


def test_shared_memory_over_the_arch_limit_is_an_error_and_spills_a_warning():
    kernels = [
        {"name": "mm", "arch": "sm_80", "line": 7, "shared_bytes": 196608, "spills": 0, "registers": 128},
        {"name": "mm", "arch": "sm_90", "line": 7, "shared_bytes": 196608, "spills": 12, "local_bytes": 48,
         "registers": 255},
    ]
    found = kernel_findings(kernels)
    assert [(f["code"], f["severity"]) for f in found] == [("shared-memory", "error"), ("spills", "warning")]
    assert "sm_80" in found[0]["message"] and "166912" in found[0]["message"]
    assert "48 bytes" in found[1]["message"] and found[1]["line"] == 7


def test_one_compile_error_per_kernel_and_message_names_every_arch():
    compiled = {"state": "ok", "errors": [
        {"name": "k", "arch": "sm_90", "line": 12, "error": "input and other must have equal reduction dimensions"},
        {"name": "k", "arch": "sm_80", "line": 12, "error": "input and other must have equal reduction dimensions"},
    ], "skipped": ["helper: argument x is a tuple"]}
    found = compile_findings(compiled)
    assert [f["code"] for f in found] == ["compile-error", "not-compiled"]
    assert "sm_90, sm_80" in found[0]["message"] and found[0]["line"] == 12


def test_ptx_facts_read_tensor_core_ops_and_the_widest_global_load():
    hopper = "\twgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {...};\n" \
             "\tcp.async.cg.shared.global [ %r1 + 0 ], [ %rd2 + 0 ], 0x10, %r3;\n"
    assert ptx_facts(hopper) == {"tensor_cores": True, "tensor_core_op": "wgmma", "vector_width": 128,
                                 "widest_load": "cp.async 0x10", "tma": False}
    ampere = "\t@%p1 mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {...};\n\t@%p2 ld.global.v2.b32 { %r1, %r2 }, [ %rd1 + 0 ];\n"
    assert ptx_facts(ampere)["tensor_core_op"] == "mma" and ptx_facts(ampere)["vector_width"] == 64
    scalar = "\t@%p1 ld.global.b16 { %rs1 }, [ %rd1 + 0 ];\n\tst.global.v4.b32 [ %rd2 + 0 ], { %r1, %r2, %r3, %r4 };\n"
    facts = ptx_facts(scalar)
    assert facts["tensor_cores"] is False and facts["vector_width"] == 16
    assert ptx_facts("\tret;\n")["vector_width"] is None
