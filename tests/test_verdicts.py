"""Every verdict rule fires on the problem it names and stays quiet otherwise.

Counter data starts from the real H200 profiles (tests/fixtures/ncu-h200: a bf16 4096³ matmul with
and without tl.dot); the other kernels are those launches with the numbers a copy, a strided load,
a register-heavy or a tiny kernel would show, changed in place.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from conftest import as_profile
from trialtui.core import ncu
from trialtui.core.analysis_result import AnalysisResult
from trialtui.core.gpus import CALIBRATED, Ceilings, datasheet
from trialtui.core.roofline import roofline
from trialtui.core.profilers import verdicts_for_profile
from trialtui.core.profilers.ncu import verdicts_from_ncu
from trialtui.core.verdicts import Context, context_for, profile_policy, theoretical_occupancy, verdicts_from_analytic
from trialtui.runner import profile_job

FIXTURES = Path(__file__).parent / "fixtures" / "ncu-h200"
H200_MEASURED = Ceilings("NVIDIA H200", 4300.0, {"bfloat16": 790.0, "float16": 790.0, "tf32": 400.0,
                                                 "float32": 51.0}, 62914560, 132, CALIBRATED, "580.159.04")
N = 4096
MATMUL = roofline(2 * N**3, 3 * N * N * 2, "bfloat16", H200_MEASURED)
COPY_BYTES = 2 * 2**28 * 4  # 2^28 fp32 read once and written once
COPY = roofline(0, COPY_BYTES, "float32", H200_MEASURED)

NAMES = {
    "sm": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "mem": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "ns": "gpu__time_duration.sum",
    "waves": "launch__waves_per_multiprocessor",
    "grid": "launch__grid_size",
    "issue_per_sm": "sm__inst_issued.avg.per_cycle_active",
    "read": "dram__bytes_read.sum",
    "write": "dram__bytes_write.sum",
    "load_use": "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "spills": "sass__inst_executed_register_spilling",
    "gmma": "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_elapsed",
    "hmma_inst": "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_elapsed",
    "alu": "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_elapsed",
    "alu_cycles": "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "lsu": "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed",
}


def launch(name: str) -> dict:
    raw = ncu.parse_raw((FIXTURES / f"{name}_raw.csv").read_text())
    details = ncu.parse_details((FIXTURES / f"{name}_details.csv").read_text())
    return ncu.merge(raw, details)[0]


DOT, NODOT = launch("mm_dot"), launch("mm_nodot")


def changed(kernel: dict, **values: float) -> dict:
    return {**kernel["metrics"], **{NAMES[k]: float(v) for k, v in values.items()}}


# A copy at 93 % of memory throughput: 2.15 GB in 520 µs, 4.1 TB/s; pipes idle.
STREAM = dict(sm=18, mem=93, dram=92, ns=520_000, waves=30, grid=524288, issue_per_sm=0.4,
              read=COPY_BYTES / 2, write=COPY_BYTES / 2, alu=3, alu_cycles=3, lsu=9)


def ids(verdicts) -> list[str]:
    return [v.id for v in verdicts]


def fired(id: str, metrics: dict, context: Context | None = None, rules=()) -> list:
    return [v for v in verdicts_from_ncu(metrics, rules, context) if v.id == id]


# ---- counter rules: one firing and one quiet case each -----------------------------------------


def test_at_sol_fires_for_tl_dot_matmul_against_measured_ceilings():
    (v,) = fired("at_sol", DOT["metrics"], Context(roofline=MATMUL, matmul_like=True))
    assert "0.84 of speed-of-light" in v.evidence and "calibrated NVIDIA H200" in v.evidence


def test_at_sol_quiet_for_same_matmul_against_datasheet_peak():
    sheet = roofline(2 * N**3, 3 * N * N * 2, "bfloat16", datasheet("NVIDIA H200"))
    assert not fired("at_sol", DOT["metrics"], Context(roofline=sheet, matmul_like=True))


def test_at_sol_from_counters_alone_when_a_unit_is_saturated():
    (v,) = fired("at_sol", changed(NODOT, **STREAM))
    assert "High Throughput" in v.evidence


def test_busy_but_wasteful_memory_is_not_speed_of_light():
    assert not fired("at_sol", changed(NODOT, **{**STREAM, "load_use": 12.5}))


def test_memory_low_bw_fires_when_useful_bandwidth_is_a_quarter_of_peak():
    metrics = changed(NODOT, **{**STREAM, "mem": 45, "dram": 30, "ns": 2_000_000})
    (v,) = fired("memory_low_bw", metrics, Context(roofline=COPY))
    assert "SM 18%, memory 45% (DRAM 30%)" in v.evidence and "use 25% of 4,300 GB/s" in v.evidence


def test_memory_low_bw_quiet_for_a_copy_near_peak():
    assert not fired("memory_low_bw", changed(NODOT, **STREAM), Context(roofline=COPY))


def test_extra_dram_fires_when_a_memory_bound_kernel_moves_three_times_the_minimum():
    metrics = changed(NODOT, **{**STREAM, "read": 3 * COPY_BYTES - COPY_BYTES / 2, "ns": 1_500_000})
    (v,) = fired("extra_dram", metrics, Context(roofline=COPY))
    assert "3.0× the 2.15 GB minimum" in v.evidence


def test_extra_dram_quiet_for_a_compute_bound_matmul_rereading_tiles():
    assert not fired("extra_dram", DOT["metrics"], Context(roofline=MATMUL, matmul_like=True))


def test_uncoalesced_fires_on_strided_loads_using_4_of_32_bytes():
    (v,) = fired("uncoalesced", changed(NODOT, **{**STREAM, "load_use": 12.5}))
    assert "4.0 of 32 bytes per sector (12%)" in v.evidence


def test_uncoalesced_quiet_for_full_sectors_no_loads_and_without_the_metric():
    assert not fired("uncoalesced", changed(NODOT, **{**STREAM, "load_use": 100}))
    assert not fired("uncoalesced", changed(NODOT, **{**STREAM, "load_use": 0}))
    assert not fired("uncoalesced", DOT["metrics"])


def test_compute_bound_names_alu_for_a_matmul_without_tl_dot():
    (v,) = fired("compute_bound", NODOT["metrics"], rules=NODOT["rules"])
    assert v.title == "Compute-bound: ALU pipe busiest" and "ALU 52.4%" in v.evidence
    assert "ncu HighPipeUtilization (INF)" in v.evidence  # NVIDIA's own reading attached


def test_compute_bound_quiet_for_a_memory_bound_copy():
    assert not fired("compute_bound", changed(NODOT, **STREAM), Context(roofline=COPY))


def test_tensor_cores_idle_fires_for_matmul_without_tl_dot():
    (v,) = fired("tensor_cores_idle", NODOT["metrics"], Context(roofline=MATMUL, matmul_like=True))
    assert v.severity == "warning" and "tensor pipe 0.0%" in v.evidence


def test_tensor_cores_quiet_when_wgmma_runs_or_the_problem_is_not_a_matmul():
    assert not fired("tensor_cores_idle", DOT["metrics"], Context(roofline=MATMUL, matmul_like=True))
    assert not fired("tensor_cores_idle", NODOT["metrics"], Context(matmul_like=False))


def test_hopper_matmul_on_mma_sync_only_is_told_to_reach_wgmma():
    (v,) = fired("mma_sync_on_hopper", changed(DOT, gmma=0, hmma_inst=5.0), Context(matmul_like=True))
    assert v.title == "Tensor cores used without wgmma on Hopper" and "wgmma instructions 0" in v.evidence
    assert not fired("mma_sync_on_hopper", DOT["metrics"], Context(matmul_like=True))  # the real one issues wgmma


def test_low_occupancy_names_registers_when_issue_slots_are_idle():
    metrics = changed(NODOT, sm=40, mem=45, issue_per_sm=1.0)
    (v,) = fired("low_occupancy", metrics, rules=NODOT["rules"])
    assert v.title == "Low occupancy: limited by registers"
    assert "theoretical occupancy 25%" in v.evidence and "128 registers/thread" in v.evidence
    assert "issue slots busy 25%" in v.evidence and "TheoreticalOccupancy" in v.evidence


def test_low_occupancy_quiet_while_issue_slots_are_busy():  # NVIDIA's IssueSlotUtilization gate
    assert not fired("low_occupancy", NODOT["metrics"])


def test_low_occupancy_quiet_for_wgmma_matmul_at_25_percent():  # tensor pipe 79 %: not the problem
    assert not fired("low_occupancy", DOT["metrics"])


def test_low_occupancy_quiet_when_memory_throughput_is_already_high():
    assert not fired("low_occupancy", changed(NODOT, sm=40, mem=85, issue_per_sm=1.0))


def test_small_grid_fires_for_half_a_wave():
    (v,) = fired("small_grid", changed(NODOT, sm=12, mem=20, waves=0.5, grid=66))
    assert v.severity == "warning" and "66 blocks for 132 SMs" in v.evidence


def test_tail_effect_fires_for_a_wave_and_a_tenth():
    (v,) = fired("small_grid", changed(NODOT, waves=1.1))
    assert v.severity == "info" and "45%" in v.evidence


def test_small_grid_quiet_for_whole_waves():
    assert not fired("small_grid", NODOT["metrics"]) and not fired("small_grid", DOT["metrics"])


def test_launch_bound_fires_for_a_4_us_kernel():
    (v,) = fired("launch_bound", changed(NODOT, ns=4000, sm=5, mem=8))
    assert "kernel time 4.0 µs" in v.evidence


def test_launch_bound_quiet_for_long_kernels():
    assert not fired("launch_bound", DOT["metrics"])


def test_latency_bound_fires_when_both_units_idle_over_full_waves():
    (v,) = fired("latency_bound", changed(NODOT, sm=30, mem=40, issue_per_sm=0.8))
    assert "SM 30%, memory 40%" in v.evidence


def test_latency_bound_quiet_for_busy_units_and_for_small_grids():
    assert not fired("latency_bound", NODOT["metrics"])
    assert not fired("latency_bound", changed(NODOT, sm=30, mem=40, waves=0.5, grid=66))


def test_spills_fire_on_local_memory_spilling():
    (v,) = fired("spills", changed(NODOT, spills=2048))
    assert "2,048 spill instructions" in v.evidence


def test_spills_quiet_without_spilling():
    assert not fired("spills", DOT["metrics"]) and not fired("spills", NODOT["metrics"])


def test_warnings_come_before_information():
    severities = [v.severity for v in verdicts_from_ncu(NODOT["metrics"], NODOT["rules"],
                                                        Context(roofline=MATMUL, matmul_like=True))]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)


# ---- analytic rules ---------------------------------------------------------------------------


def analytic(roof=COPY, us=520.0, matmul=False, **facts):
    return verdicts_from_analytic(Context(roofline=roof, measured_us=us, matmul_like=matmul), facts)


def test_analytic_at_sol_and_not_below_target():
    (v,) = analytic()
    assert v.id == "at_sol" and v.source == "analytic"
    assert "at_sol" not in ids(analytic(us=800.0))


def test_analytic_memory_low_bw_only_for_memory_bound_problems():
    (v,) = analytic(us=2000.0)
    assert v.id == "memory_low_bw" and "25% of 4,300 GB/s" in v.evidence
    assert "memory_low_bw" not in ids(analytic(roof=MATMUL, us=1000.0, matmul=True))


def test_analytic_compute_bound_only_for_compute_bound_problems():
    (v,) = analytic(roof=MATMUL, us=1000.0, matmul=True)
    assert v.id == "compute_bound" and "137 of 790 TFLOP/s" in v.evidence
    assert "compute_bound" not in ids(analytic(us=2000.0))


def test_analytic_tensor_cores_idle_from_compile_facts():
    assert "tensor_cores_idle" in ids(analytic(roof=MATMUL, us=1000.0, matmul=True, tensor_cores=False))
    assert "tensor_cores_idle" not in ids(analytic(roof=MATMUL, us=1000.0, matmul=True, tensor_cores=True))


def test_theoretical_occupancy_matches_the_occupancy_calculator():
    assert theoretical_occupancy(255, 4, 0, 90) == (12.5, "registers")
    assert theoretical_occupancy(32, 4, 0, 90)[0] == 100.0
    assert theoretical_occupancy(64, 8, 98304, 90)[1] == "shared_mem"


def test_analytic_low_occupancy_fires_for_register_heavy_memory_kernel():
    (v,) = [x for x in analytic(us=2000.0, registers=255, num_warps=4, arch="sm_90a") if x.id == "low_occupancy"]
    assert "theoretical occupancy 12%" in v.evidence and "registers" in v.title


def test_analytic_low_occupancy_quiet_for_lean_kernels_and_tensor_core_matmuls():
    assert "low_occupancy" not in ids(analytic(us=2000.0, registers=32, num_warps=4, arch="sm_90"))
    assert "low_occupancy" not in ids(analytic(roof=MATMUL, us=1000.0, matmul=True, registers=232, num_warps=8,
                                               arch="sm_90", tensor_cores=True))


def test_analytic_launch_bound_spills_and_narrow_loads_from_compile_facts():
    tiny = roofline(0, 4 * 2**20, "float32", H200_MEASURED)  # 4 MiB moved: a 1 µs floor
    found = ids(analytic(roof=tiny, us=3.0, spills=24, registers=255, vector_width=32))
    assert {"launch_bound", "spills", "narrow_loads"} <= set(found)
    quiet = ids(analytic(us=2000.0, spills=0, vector_width=128))
    assert not {"launch_bound", "spills", "narrow_loads"} & set(quiet)


# ---- the fallback: a profile without counters, each way ncu can fail --------------------------


def fake_ncu(tmp_path: Path, body: str) -> str:
    path = tmp_path / "ncu"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


WORKING_NCU = f"""
case "$*" in
  *"--page raw"*) cat {FIXTURES / "mm_nodot_raw.csv"} ;;
  *"--page details"*) cat {FIXTURES / "mm_nodot_details.csv"} ;;
  *) for a in "$@"; do [ "$prev" = "-o" ] && : > "$a.ncu-rep"; prev="$a"; done
     echo '==PROF== Profiling "mm": 0%....50%....100% - 13 passes' ;;
esac
"""

FAILING = {
    "ERR_NVGPUCTRPERM": "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
                        "NVIDIA GPU Performance Counters on the target device 0.'; exit 1",
    "LibraryNotLoaded": "echo '==ERROR== Failed to initialize the profiler: LibraryNotLoaded'; exit 1",
    "No kernels were profiled": "echo '==WARNING== No kernels were profiled.'; exit 0",
    "timeout": "exec sleep 30",
}


def test_profile_job_with_working_ncu_gives_counter_verdicts(tmp_path):
    body = profile_job.profile(["true"], tmp_path / "t1", ncu_bin=fake_ncu(tmp_path, WORKING_NCU))
    assert body["available"] and body["reason"] is None
    (kernel,) = body["kernels"]
    assert kernel["name"] == "mm_nodot" and kernel["duration_ns"] == 16_678_080.0
    assert "launch__occupancy_limit_registers" in kernel["metrics"] and kernel["rules"]
    verdicts = verdicts_for_profile(as_profile(body), Context(roofline=MATMUL, matmul_like=True))
    assert ids(verdicts)[0] == "tensor_cores_idle" and all(v.source == "ncu" for v in verdicts)


def test_profile_command_uses_nvtx_range_sections_and_untouched_clocks():
    command = profile_job.ncu_command("ncu", "rep", ["python", "x.py"])
    text = " ".join(command)
    assert "--nvtx --nvtx-include trialtui_profile/ --clock-control none --target-processes all" in text
    assert f"--launch-count {profile_job.MAX_KERNELS}" in text
    for section in ("SpeedOfLight", "LaunchStats", "Occupancy", "ComputeWorkloadAnalysis", "MemoryWorkloadAnalysis"):
        assert f"--section {section}" in text
    assert "sm__inst_executed_pipe_tensor_op_gmma" in text and "dram__bytes_read.sum" in text
    assert command[-2:] == ["python", "x.py"]


@pytest.mark.parametrize("signature", sorted(FAILING))
def test_each_unavailable_signature_falls_back_to_the_analytic_profile(tmp_path, signature):
    ncu_bin = fake_ncu(tmp_path, FAILING[signature])
    body = profile_job.profile(["true"], tmp_path / "t1", ncu_bin=ncu_bin, timeout_s=1.0)
    assert not body["available"] and signature in body["reason"]
    verdicts = verdicts_for_profile(as_profile(body), Context(roofline=COPY, measured_us=2000.0))
    assert verdicts[0].id == "counters_unavailable" and signature in verdicts[0].evidence
    assert "memory_low_bw" in ids(verdicts) and all(v.source == "analytic" for v in verdicts)


def test_missing_ncu_falls_back_with_its_reason(tmp_path):
    body = profile_job.profile(["true"], tmp_path / "t1", ncu_bin=str(tmp_path / "no-ncu-here"))
    assert not body["available"] and body["reason"].startswith("ncu not found")
    assert verdicts_for_profile(as_profile(body), Context(roofline=COPY, measured_us=520.0))[0].id == "counters_unavailable"


def test_trial_never_profiled_gets_analytic_verdicts_only():
    assert ids(verdicts_for_profile(None, Context(roofline=COPY, measured_us=520.0))) == ["at_sol"]


def test_context_from_an_analysis_and_the_bench_gpu():
    analysis = AnalysisResult.from_json({"state": "ok", "flops": 2 * N**3, "min_bytes": 3 * N * N * 2, "dtype": "bfloat16",
                                         "matmul_like": True})
    ctx = context_for(analysis, H200_MEASURED, 208.1, sol_target=0.8)
    assert ctx.matmul_like and ctx.roofline == MATMUL and ctx.sol() == pytest.approx(MATMUL.floor_us / 208.1)
    assert context_for(AnalysisResult.failure("no trace"), H200_MEASURED, 208.1).roofline is None


def test_a_stored_context_gives_the_same_verdicts():
    stored = {"roofline": MATMUL.to_dict(), "measured_us": 208.1, "matmul_like": True}
    again = Context.from_dict(stored)
    assert verdicts_from_ncu(NODOT["metrics"], NODOT["rules"], again) == verdicts_from_ncu(
        NODOT["metrics"], NODOT["rules"], Context(roofline=MATMUL, measured_us=208.1, matmul_like=True))


# ---- when to profile --------------------------------------------------------------------------


@pytest.mark.parametrize("when, event, expected", [
    ("auto", "first_correct", True), ("auto", "new_best", True), ("auto", "plateau", True),
    ("auto", "correct", False), ("auto", "request", True),
    ("always", "correct", True), ("always", "first_correct", True),
    ("never", "first_correct", False), ("never", "new_best", False), ("never", "request", True),
])
def test_profile_policy(when, event, expected):
    assert profile_policy(when, event) is expected


def test_profile_policy_rejects_unknown_words():
    with pytest.raises(ValueError):
        profile_policy("sometimes", "new_best")
