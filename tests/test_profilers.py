"""Profiler plug-ins: which one the engine picks and says, the fall back down the ranks when ncu
is blocked, and the counter-free profiler's verdicts from (fake) CUPTI kernel records."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import as_profile
from trialtui.core import ncu, plugins
from trialtui.core.gpus import CALIBRATED, Ceilings
from trialtui.core.profilers import all_profilers, candidates, get_profiler, verdicts_for_profile
from trialtui.core.profilers.activity import kernel_us, verdicts_from_records
from trialtui.core.profilers.base import Profiler
from trialtui.core.roofline import roofline
from trialtui.core.verdicts import Context
from trialtui.engine import profile as engine_profile

H200 = Ceilings("NVIDIA H200", 4300.0, {"bfloat16": 790.0, "float16": 790.0, "tf32": 400.0, "float32": 51.0},
                62914560, 132, CALIBRATED, "580.159.04")
COPY = roofline(0, 2 * 2**28 * 4, "float32", H200)  # 2^28 fp32 read and written once: floor ≈ 500 µs
ERR = "ERR_NVGPUCTRPERM: no permission to read GPU performance counters"
PLUGIN_DIR = Path(__file__).parent / "plugins"


def records(*kernels, calls=10, wall_us=None, reference=()) -> dict:
    """An activity body: kernels as (name, launches per call, µs per launch), totals over `calls`."""
    rows = [{"name": n, "launches": per_call * calls, "duration_ns": per_call * us * 1e3 * calls}
            for n, per_call, us in kernels]
    gpu_us = sum(per_call * us for _, per_call, us in kernels)
    return {"source": "activity", "available": True, "calls": calls, "wall_us": wall_us or gpu_us * 1.05,
            "kernels": rows, "reference_kernels": list(reference)}


def ids(verdicts) -> list[str]:
    return [v.id for v in verdicts]


# ---- which profiler --------------------------------------------------------------------------


def test_built_ins_are_profilers_best_first():
    found = all_profilers()
    assert list(found)[:2] == ["ncu", "activity"] and list(found)[-1] == "analytic"
    assert all(isinstance(p, Profiler) for p in found.values())


def test_without_a_gpu_only_the_analytic_profiler_runs():
    usable, skipped = candidates("cpu")
    assert [p.name for p in usable] == ["analytic"]
    assert {s["source"] for s in skipped} == {"ncu", "activity"}


def test_without_a_gpu_the_advice_is_a_gpu_machine_and_what_the_roofline_means_not_permissions():
    body = as_profile({"source": "analytic", "available": True, "skipped": candidates("cpu")[1]})
    note = verdicts_for_profile(body, Context(roofline=COPY))[0]
    assert note.id == "counters_unavailable" and "ncu needs a GPU" in note.evidence
    assert "no GPU" in note.hint and "machine with an NVIDIA GPU" in note.hint and "a floor no kernel beats" in note.hint
    assert "NVreg" not in note.hint and "root" not in note.hint
    blocked = as_profile({**body.to_json(), "skipped": [{"source": "ncu", "reason": ERR}]})  # a GPU, no permission
    assert "NVreg_RestrictProfilingToAdminUsers=0" in verdicts_for_profile(blocked, Context(roofline=COPY))[0].hint


def test_ncu_switched_off_or_missing_leaves_the_counter_free_profiler_first(monkeypatch):
    monkeypatch.setattr(ncu, "find_ncu", lambda explicit=None: "/opt/ncu")
    assert [p.name for p in candidates("cuda")[0]] == ["ncu", "activity", "analytic"]
    monkeypatch.setenv("TRIALTUI_NO_NCU", "1")
    usable, skipped = candidates("cuda")
    assert usable[0].name == "activity"
    assert skipped == [{"source": "ncu", "reason": "ncu disabled: TRIALTUI_NO_NCU is set"}]
    monkeypatch.delenv("TRIALTUI_NO_NCU")
    monkeypatch.setattr(ncu, "find_ncu", lambda explicit=None: None)
    assert candidates("cuda")[1][0]["reason"].startswith("ncu not found")


class FakeProblem:
    def __init__(self, root: Path):
        self.root, self.state_dir = root, root / ".trialtui"

    def job_spec(self):
        return {"root": str(self.root), "reference": str(self.root / "reference.py"), "form": "kernelbench",
                "entry_point": "ModelNew", "dtype": "float32", "atol": 1e-4, "rtol": 1e-4, "allow_tf32": False,
                "explicit_tolerance": False, "test_cases": [{}], "bench_cases": [{}], "support_files": []}


def test_blocked_ncu_falls_back_to_kernel_records_and_is_not_tried_again(tmp_path, monkeypatch):
    monkeypatch.setattr(ncu, "find_ncu", lambda explicit=None: "/opt/ncu")
    monkeypatch.setattr(engine_profile, "_MACHINE_WIDE", {})
    ran = []

    def fake_run_child(module, spec, **kw):
        ran.append(module)
        if module == "trialtui.runner.profile_job":
            return {"version": 1, "state": "ok", "available": False, "reason": ERR, "blocked": True}
        assert spec.calls > 0 and spec.candidate.endswith("k.py")
        return {"version": 1, "state": "ok", **records(("k", 1, 600.0))}

    monkeypatch.setattr(engine_profile, "run_child", fake_run_child)
    problem = FakeProblem(tmp_path)
    body = engine_profile.profile_file(problem, tmp_path / "k.py", name="t1")
    assert body["source"] == "activity" and body["available"]
    assert body["skipped"] == [{"source": "ncu", "reason": ERR}]
    label = engine_profile.profile_label(body)
    assert label.startswith("CUPTI kernel records") and ERR in label
    again = engine_profile.profile_file(problem, tmp_path / "k.py", name="t2")
    assert ran == ["trialtui.runner.profile_job", "trialtui.runner.activity_job", "trialtui.runner.activity_job"]
    assert again["skipped"] == [{"source": "ncu", "reason": ERR}]


def test_a_passing_ncu_failure_is_tried_again_and_every_failure_ends_analytic(tmp_path, monkeypatch):
    monkeypatch.setattr(ncu, "find_ncu", lambda explicit=None: "/opt/ncu")
    monkeypatch.setattr(engine_profile, "_MACHINE_WIDE", {})
    ran = []

    def failing(module, spec, **kw):
        ran.append(module)
        return {"version": 1, "state": "error", "message": f"{module} crashed"}

    monkeypatch.setattr(engine_profile, "run_child", failing)
    for name in ("t1", "t2"):
        body = engine_profile.profile_file(FakeProblem(tmp_path), tmp_path / "k.py", name=name)
    assert body["source"] == "analytic" and [s["source"] for s in body["skipped"]] == ["ncu", "activity"]
    assert ran.count("trialtui.runner.profile_job") == 2
    verdicts = verdicts_for_profile(body, Context(roofline=COPY, measured_us=2000.0))
    assert verdicts[0].id == "counters_unavailable" and "profile_job crashed" in verdicts[0].evidence
    assert "memory_low_bw" in ids(verdicts) and all(v.source == "analytic" for v in verdicts)


def test_verdicts_of_a_profile_come_from_the_profiler_that_made_it():
    body = as_profile({**records(("copy_kernel", 1, 2000.0)), "skipped": [{"source": "ncu", "reason": ERR}]})
    verdicts = verdicts_for_profile(body, Context(roofline=COPY, measured_us=2010.0))
    assert verdicts[0].id == "counters_unavailable" and ERR in verdicts[0].evidence
    assert all(v.source == "activity" for v in verdicts) and "memory_low_bw" in ids(verdicts)
    gone = as_profile({**body, "source": "uninstalled"})
    assert "'uninstalled' is not installed" in verdicts_for_profile(gone, Context(roofline=COPY))[0].evidence


def test_a_third_party_profiler_is_one_module_and_an_entry_point(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    plugins.reload_entry_points()
    try:
        assert [p.name for p in candidates("cpu")[0]] == ["testprof", "analytic"]
        verdicts = verdicts_for_profile(as_profile({"source": "testprof", "available": True}), Context(roofline=COPY,
                                                                                           measured_us=520.0))
        assert ids(verdicts) == ["at_sol"] and verdicts[0].source == "testprof"
    finally:
        monkeypatch.undo()
        plugins.reload_entry_points()
    assert get_profiler("testprof") is None


def test_an_object_that_is_not_a_profiler_is_reported_and_skipped(monkeypatch):
    monkeypatch.setitem(plugins._builtin["trialtui.profilers"], "half", SimpleNamespace(name="half"))
    assert "half" not in all_profilers()
    assert any("'half' is a SimpleNamespace, not a Profiler" in e for e in plugins.errors("trialtui.profilers"))


# ---- the counter-free profiler's verdicts ------------------------------------------------------


def test_many_tiny_launches_are_launch_bound():
    body = records(("add", 4, 2.0), ("mul", 4, 2.0), wall_us=80.0)
    verdicts = verdicts_from_records(body, Context())
    (launch,) = [v for v in verdicts if v.id == "launch_bound"]
    assert "8 launches per call" in launch.evidence and "GPU busy 20%" in launch.evidence
    assert launch.source == "activity"


def test_one_long_kernel_with_a_busy_gpu_is_not_launch_bound():
    assert "launch_bound" not in ids(verdicts_from_records(records(("k", 1, 400.0)), Context()))


def test_one_kernel_of_several_dominating_is_named():
    verdicts = verdicts_from_records(records(("big", 1, 900.0), ("small", 2, 50.0)), Context())
    (dominant,) = [v for v in verdicts if v.id == "dominant_kernel"]
    assert "big" in dominant.title and "90% of GPU time" in dominant.evidence
    assert "dominant_kernel" not in ids(verdicts_from_records(records(("a", 1, 500.0), ("b", 1, 500.0)), Context()))


def test_library_kernels_only_mean_no_kernel_of_the_candidates_own():
    gemm = "sm90_xmma_gemm_bf16bf16_bf16f32"
    body = records((gemm, 1, 300.0), ("void at::native::vectorized_elementwise_kernel<4>", 1, 20.0),
                   reference=[gemm])
    (own,) = [v for v in verdicts_from_records(body, Context()) if v.id == "no_own_kernel"]
    assert own.title == "No kernel of the candidate's own" and "100% of GPU time" in own.evidence
    with_own = records((gemm, 1, 300.0), ("fused_epilogue_kernel", 1, 100.0), reference=[gemm])
    assert "no_own_kernel" not in ids(verdicts_from_records(with_own, Context()))


def test_no_kernel_at_all_is_said():
    (verdict,) = verdicts_from_records(records(), Context())
    assert verdict.id == "no_own_kernel" and verdict.title == "No GPU kernel launched"


def test_kernel_time_far_above_the_bandwidth_floor_is_low_bandwidth():
    verdicts = verdicts_from_records(records(("copy", 1, 2000.0)), Context(roofline=COPY, measured_us=2010.0))
    (low,) = [v for v in verdicts if v.id == "memory_low_bw"]
    assert low.evidence.startswith("kernel time 2.00 ms per call (CUPTI)") and "25% of 4,300 GB/s" in low.evidence


def test_launch_gaps_never_pass_for_low_bandwidth():
    """Kernels at the floor inside a call four times longer: launch-bound, not memory_low_bw, not at_sol."""
    body = records(("copy", 1, 520.0), wall_us=2100.0)
    verdicts = verdicts_from_records(body, Context(roofline=COPY, measured_us=2100.0))
    assert "launch_bound" in ids(verdicts)
    assert not {"memory_low_bw", "at_sol"} & set(ids(verdicts))
    assert kernel_us(body) == pytest.approx(520.0)


def test_a_copy_at_the_floor_is_at_speed_of_light():
    verdicts = verdicts_from_records(records(("copy", 1, 520.0)), Context(roofline=COPY, measured_us=530.0))
    assert ids(verdicts) == ["at_sol"]


def test_the_activity_job_counts_device_kernels_only():
    torch_profiler = pytest.importorskip("torch.autograd")
    from trialtui.runner.activity_job import device_kernels

    cuda, cpu = torch_profiler.DeviceType.CUDA, torch_profiler.DeviceType.CPU

    def event(name, device, us):
        return SimpleNamespace(name=name, device_type=device, time_range=SimpleNamespace(elapsed_us=lambda: us))

    found = device_kernels([event("k", cuda, 3.0), event("k", cuda, 5.0), event("aten::add", cpu, 9.0),
                            event("cudaLaunchKernel", cpu, 1.0), event("other", cuda, 1.5)])
    assert found == {"k": {"launches": 2, "duration_ns": 8000.0}, "other": {"launches": 1, "duration_ns": 1500.0}}
    assert "trialtui.runner.activity_job" in sys.modules
