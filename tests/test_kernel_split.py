"""Library work weighed from kernel records the candidate's process does not shape through trialtui's recorder
(issue 33): the profile every new best gets splits its GPU time into the kernels its source defines and the rest,
and where the rest did most of the work the trial is `fallback` (never best), however the library was reached.
On real H200 records (tests/fixtures/gpu/profiles-h200-2026-12-01.json: Nsight Compute's and CUPTI's)."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import json
from pathlib import Path

import pytest

from conftest import KB_GOOD, as_profile, as_validation, no_analysis, write_problem
from trialtui.core import kernel_split, tree
from trialtui.core.config import ExecutorSettings
from trialtui.core.executor import parse_target
from trialtui.core.flags import disqualifications
from trialtui.core.problem_dir import load_problem
from trialtui.engine import events as ev
from trialtui.engine.executors.local import LocalExecutor
from trialtui.engine.lanes import Lane, Lanes
from trialtui.engine.loop import Engine

HERE = Path(__file__).parent
RUN = json.loads((HERE / "fixtures" / "gpu" / "profiles-h200-2026-12-01.json").read_text())
SAMPLES = HERE.parent / "sample_kernels"
NVJET = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"  # cuBLAS's bf16 GEMM on the H200 (h200-2026-12-02)


def jit_kernels(path: Path) -> list[str]:
    """The @triton.jit functions a source defines, read from its text (not from any record)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
            found.append(node.name)
    return found


def rows(sample: str, file: str) -> list[dict]:
    return [r for r in RUN["rows"] if r["sample"] == sample and r["file"] == file]


def test_the_honest_samples_kernels_are_their_own_in_both_profilers_records():
    honest = [r for r in RUN["rows"] if r["file"] == "kernel.py"]
    assert {r["source"] for r in honest} == {"ncu", "activity"} and len(honest) >= 6
    for row in honest:
        own = jit_kernels(SAMPLES / row["sample"] / "kernel.py")
        found = kernel_split.split(row["kernels"], own, row["source"])
        assert found is not None and found.own_share == 1.0 and found.fallback() is None, (row["sample"], row["source"])


def test_the_references_own_aten_kernels_are_library_work_and_flag_a_token_kernel_beside_them():
    """rmsnorm's eager forward as a candidate (CUPTI's records: ATen's kernels only), with the honest kernel's
    record beside it standing for a token kernel of its own: library work, `fallback`, the top kernel named."""
    (eager,) = rows("rmsnorm", "eager.py")
    (own,) = [r for r in rows("rmsnorm", "kernel.py") if r["source"] == "ncu"]
    token = [{**own["kernels"][0], "duration_ns": 3000.0}]
    found = kernel_split.split(eager["kernels"] + token, ["_rmsnorm_kernel"], "CUPTI kernel records")
    assert found.own_us == pytest.approx(3.0)
    assert found.library_us == pytest.approx(sum(k["duration_ns"] for k in eager["kernels"]
                                                 if "copy_kernel" not in k["name"]) / 1e3)  # copies weigh on neither side
    fallback = found.fallback()
    assert fallback["code"] == "fallback" and "library kernels did 100%" in fallback["message"]
    assert "(at::native::elementwise_kernel, at::native::vectorized_elementwise_kernel, at::native::reduce_kernel)" \
        in fallback["message"] and fallback["message"].startswith("CUPTI kernel records")
    assert kernel_split.split(eager["kernels"], ["_rmsnorm_kernel"], "x").own_share == 0.0


def test_a_token_kernel_named_after_the_library_kernel_it_calls_is_not_taken_for_it():
    records = [{"name": "token", "duration_ns": 2000.0}, {"name": NVJET, "duration_ns": 180000.0}]
    assert kernel_split.split(records, ["token", NVJET], "ncu").own_share == pytest.approx(2 / 182)
    gemv = [{"name": "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>(float)",
             "duration_ns": 9000.0}]  # cuBLAS's gemv, named without a namespace
    assert kernel_split.split(gemv, ["gemv2T_kernel_val"], "ncu").own_share == 0.0
    aten = [{"name": "void at::native::reduce_kernel<512, 1>(int)", "duration_ns": 9000.0}]
    assert kernel_split.split(aten, ["reduce_kernel"], "ncu").own_share == 0.0
    mine = [{"name": "void my::reduce_kernel<512>(const float *, float *)", "duration_ns": 9000.0}]
    assert kernel_split.split(mine, ["reduce_kernel"], "ncu").own_share == 1.0  # a CUDA C++ kernel of its own


@pytest.mark.parametrize("name, base", [
    ("_add_kernel", "_add_kernel"),
    ("token_kernel(float const*, float const*, float*)", "token_kernel"),
    ("void ns::add_kernel<float, 4>(const float *, int)", "add_kernel"),
    ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*, int)",
     "softmax_warp_forward"),
])
def test_a_records_demangled_signature_reads_as_the_name_its_source_gives(name, base):
    assert kernel_split.base_name(name) == base


def test_a_candidates_own_kernels_are_its_validations_and_every_one_its_text_declares():
    """A kernel the CPU's trace never launched (one chosen at bench sizes only) is still its own: else its own
    work would be weighed as a library's."""
    text = (SAMPLES / "bias_gelu_residual" / "kernel.py").read_text() + (
        '\ncuda = """__global__ void __launch_bounds__(256) tail_kernel(float* x) {}"""\n')
    validated = as_validation({"ok": True, "errors": [], "warnings": [], "kernels": [{"name": "_add_kernel"}]})
    assert kernel_split.own_kernels(validated, text) == {"_add_bias_kernel", "_gelu_tanh_kernel", "_add_kernel",
                                                         "tail_kernel"}
    assert kernel_split.own_kernels(validated, "def broken(:") == {"_add_kernel"}


def test_nothing_to_weigh_gives_no_split():
    copies = [{"name": "void at::native::direct_copy_kernel_cuda(int)", "duration_ns": 5000.0}]
    assert kernel_split.split(copies, ["k"], "ncu") is None  # copies and fills only
    assert kernel_split.split([{"name": "k", "duration_ns": 1.0}], [], "ncu") is None  # no kernel of its own known
    assert kernel_split.split([{"name": "k", "duration_ns": "n/a"}], ["k"], "ncu") is None
    assert kernel_split.split([{"name": "k", "duration_ns": float("nan")}, {"name": "x", "duration_ns": -5.0}], ["k"],
                              "ncu") is None  # records are data


class Profiled(LocalExecutor):
    """This machine's executor, but its profile job answers with kernel records from the H200."""

    def __init__(self, kernels: list[dict]):
        super().__init__(parse_target("local"), ExecutorSettings(), "cuda")
        self.kernels = kernels

    def profile(self, problem, path, *, name, env=None, handle=None, device="cuda"):
        return as_profile({"source": "ncu", "label": "Nsight Compute counters", "available": True,
                           "kernels": self.kernels})


def gpu_result(problem, path, **kw):
    from conftest import as_result

    return as_result({"state": "correct", "message": "", "correctness": {"passed": True},
                      "timing": {"median_us": 100.0, "rse": 0.001}, "baselines": {"eager": {"median_us": 150.0}},
                      "speedup": {"eager": 1.5}, "flags": [], "env": {"device": "cuda", "gpu": "NVIDIA H200"},
                      "dtype": "float32", "sizes": [{}]})


def validated(problem, path, compile=True, **kw):
    return as_validation({"ok": True, "errors": [], "warnings": [], "preview": None, "elapsed_ms": 1.0,
                          "kernels": [{"name": "_relu_bias_kernel", "arch": "sm_90"}]})


@pytest.mark.parametrize("library", [True, False])
def test_a_best_whose_profile_shows_library_work_is_flagged_and_loses_best(tmp_path, library):
    """The bench's recorder saw no library call (a decoy through ctypes, or DisableTorchFunction); the profile
    that a first correct trial gets does: the trial keeps its number and its state, and is flagged, never best."""
    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})
    kernels = [{"name": "_relu_bias_kernel", "duration_ns": 3000.0}]
    kernels += [{"name": NVJET, "duration_ns": 97000.0}] if library else []
    engine = Engine(load_problem(root), device="cuda", lanes=Lanes([Lane("gpu0", "0")]), bench=gpu_result,
                    validate=validated, analyze=no_analysis, executor=Profiled(kernels))
    seen: list[ev.Event] = []
    engine.subscribe(seen.append)
    asyncio.run(engine.run(once=True))
    trial = engine.store.get("t1")
    engine.close()
    assert trial.state == "correct" and trial.profile is not None and trial.median_us == 100.0
    flags = [f for f in trial.result.flags or [] if f["code"] == "fallback"]
    if not library:
        assert not flags and tree.best([trial], "eager") is not None
        return
    assert len(flags) == 1 and "library kernels did 97%" in flags[0]["message"] and NVJET in flags[0]["message"]
    assert tree.best([trial], "eager") is None and disqualifications(trial.result, None)
    assert any(isinstance(e, ev.Notice) and "t1 flagged fallback" in e.message for e in seen)


def test_trialtui_profile_shows_the_split_of_its_records_and_says_fallback(tmp_path, monkeypatch):
    """`trialtui profile FILE`: the records it took weigh the candidate's own kernels (the @triton.jit ones its text
    declares) against the rest, and the text says where libraries did most of the work."""
    from trialtui.core.analysis_result import AnalysisResult
    from trialtui.engine import profile as profile_module
    from trialtui.render import render_verdicts

    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})
    records = [{"name": "bias_relu", "duration_ns": 3000.0}, {"name": NVJET, "duration_ns": 97000.0}]
    monkeypatch.setattr(profile_module, "detect_device", lambda: "cuda")
    monkeypatch.setattr(profile_module, "analyze", lambda problem, **kw: AnalysisResult.failure("not here"))
    monkeypatch.setattr(profile_module, "bench_file", lambda problem, path, **kw: gpu_result(problem, path))
    monkeypatch.setattr(profile_module, "profile_file", lambda problem, path, **kw: as_profile(
        {"source": "activity", "label": "CUPTI kernel records", "available": True, "kernels": records}))
    out = profile_module.profile_candidate(load_problem(root), root / "kernel.py")
    assert out.library["own_share"] == pytest.approx(0.03) and out.to_json()["library"] == out.library
    assert kernel_split.KernelSplit.from_dict(out.library).to_dict() == out.library  # as a card reads it back
    text = render_verdicts(out)
    assert "library: own kernels 3% of GPU time (3.0 µs a call), library 97% (97.0 µs), from CUPTI kernel records " \
        "(torch.profiler, no hardware counters); largest: " + NVJET in text
    assert "under half its own: `fallback`" in text
    records[1]["duration_ns"] = 1000.0
    text = render_verdicts(profile_module.profile_candidate(load_problem(root), root / "kernel.py"))
    assert "own kernels 75%" in text and "fallback" not in text


def test_a_one_off_bench_with_weigh_flags_a_library_doing_the_work_on_its_records(tmp_path, monkeypatch):
    """`trialtui bench FILE --weigh`: a correct GPU bench, then kernel records; libraries doing most of the GPU time
    flag it `fallback` as finalize would refuse it. Without --weigh no profile runs (the bench stays a bench)."""
    from click.testing import CliRunner

    from trialtui.cli import cli

    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})
    profiled = []
    records = [{"name": "bias_relu", "duration_ns": 3000.0}, {"name": NVJET, "duration_ns": 97000.0}]
    timed = {"median_us": 100.0, "p20_us": 99.0, "p80_us": 101.0, "n": 40, "rse": 0.001, "label": "GPU, CUDA events"}
    monkeypatch.setattr("trialtui.engine.bench.bench_file", lambda problem, path, **kw: dataclasses.replace(
        gpu_result(problem, path), timing=timed))
    monkeypatch.setattr("trialtui.engine.profile.profile_file", lambda problem, path, **kw: profiled.append(kw["name"])
                        or as_profile({"source": "activity", "label": "CUPTI kernel records", "available": True,
                                       "kernels": records}))
    out = CliRunner().invoke(cli, ["bench", str(root / "kernel.py"), "--device", "cuda", "--weigh"])
    assert out.exit_code == 0, out.output
    assert profiled == ["bench-kernel"] and "! fallback: CUPTI kernel records (torch.profiler, no hardware counters): " \
        "library kernels did 97%" in out.output
    assert "  records: own kernels 3% of GPU time (3.0 µs a call), library 97% (97.0 µs), from CUPTI kernel records" \
        in out.output
    out = CliRunner().invoke(cli, ["bench", str(root / "kernel.py"), "--device", "cuda"])
    assert profiled == ["bench-kernel"] and "fallback" not in out.output and "records:" not in out.output
