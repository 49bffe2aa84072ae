"""Nsight Compute CSV parsing on real H200 output (ncu 2025.3.1), plus the shapes ncu can take."""

from __future__ import annotations

from pathlib import Path

import pytest

from trialtui.core import ncu

FIXTURES = Path(__file__).parent / "fixtures" / "ncu-h200"


def page(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.fixture(scope="module")
def dot() -> list[dict]:
    return ncu.merge(ncu.parse_raw(page("mm_dot_raw.csv")), ncu.parse_details(page("mm_dot_details.csv")))


def test_raw_page_reads_one_launch_with_identity_columns_apart_from_metrics():
    (kernel,) = ncu.parse_raw(page("mm_dot_raw.csv"))
    assert kernel["id"] == 0 and kernel["name"] == "mm"
    assert kernel["grid"] == "(32, 32, 1)" and kernel["block"] == "(256, 1, 1)" and kernel["cc"] == "9.0"
    metrics = kernel["metrics"]
    assert "Kernel Name" not in metrics and not any(":" in name for name in metrics)  # NVTX columns
    assert len(metrics) == 732 - 13


def test_raw_page_strips_thousands_separators_and_keeps_base_units():
    (kernel,) = ncu.parse_raw(page("mm_dot_raw.csv"))
    m, units = kernel["metrics"], kernel["units"]
    assert m["gpu__time_duration.sum"] == 208_096.0 and units["gpu__time_duration.sum"] == "ns"
    assert m["dram__bytes_read.sum"] == 170_743_040.0
    assert m["device__attribute_clock_rate"] == 1_980_000.0
    assert m["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == 78.83


def test_raw_page_keeps_strings_and_turns_no_data_into_none():
    (kernel,) = ncu.parse_raw(page("mm_nodot_raw.csv"))
    assert kernel["metrics"]["device__attribute_display_name"] == "NVIDIA H200"
    assert kernel["metrics"]["launch__cluster_scheduling_policy"] == "PolicySpread"
    assert kernel["metrics"]["derived__local_spilling_requests_pct"] is None


def test_details_page_scales_auto_units_to_base():
    (kernel,) = ncu.parse_details(page("mm_dot_details.csv"))
    m = kernel["metrics"]
    assert m["gpu__time_duration.sum"] == pytest.approx(208_100.0)  # "208.10" us
    assert m["dram__bytes_read.sum"] == pytest.approx(170.74e6)  # "170.74" Mbyte
    assert m["dram__cycles_elapsed.avg.per_second"] == pytest.approx(3.20e9)  # Ghz
    assert m["launch__shared_mem_per_block_dynamic"] == pytest.approx(98_300.0)  # Kbyte/block
    assert kernel["sections"]["Occupancy"]["sm__maximum_warps_per_active_cycle_pct"] == 25.0
    (slow,) = ncu.parse_details(page("mm_nodot_details.csv"))
    assert slow["metrics"]["gpu__time_duration.sum"] == pytest.approx(16.68e6)  # "16.68" ms


def test_details_page_ingests_nvidia_rule_results():
    (kernel,) = ncu.parse_details(page("mm_dot_details.csv"))
    rules = {r["rule"]: r for r in kernel["rules"]}
    assert set(rules) == {"SOLBottleneck", "HighPipeUtilization", "LaunchConfiguration", "TheoreticalOccupancy"}
    occupancy = rules["TheoreticalOccupancy"]
    assert occupancy["type"] == "OPT" and occupancy["section"] == "Occupancy"
    assert occupancy["speedup"] == 75.0 and occupancy["speedup_type"] == "local"
    assert "theoretical occupancy (25.0%)" in occupancy["description"]
    assert rules["SOLBottleneck"]["speedup"] is None and rules["SOLBottleneck"]["type"] == "INF"
    assert "Tensor is the highest-utilized pipeline" in rules["HighPipeUtilization"]["description"]


def test_merge_keeps_raw_numbers_and_attaches_rules(dot):
    (kernel,) = dot
    assert kernel["metrics"]["gpu__time_duration.sum"] == 208_096.0  # raw's exact value wins
    assert {r["rule"] for r in kernel["rules"]} >= {"TheoreticalOccupancy"}


def test_several_launches_and_interleaved_program_output_parse():
    text = "\n".join([
        "==PROF== Connected to process 42 (python3)",
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
        '"Grid Size","Device","CC","dram__bytes_read.sum","gpu__time_duration.sum","launch__grid_size"',
        '"","","","","","","","","","","","Mbyte","ms",""',
        "hello from the candidate",
        '"0","42","python3","h","add","1","7","(128, 1, 1)","(1, 1, 1)","0","9.0","1.50","0.01","1"',
        '"1","42","python3","h","reduce","1","7","(256, 1, 1)","(4,096, 1, 1)","0","9.0","2,048.00","1.25","4,096"',
        "==PROF== Disconnected from process 42",
    ])
    kernels = ncu.parse_raw(text)
    assert [k["name"] for k in kernels] == ["add", "reduce"]
    assert kernels[1]["metrics"]["dram__bytes_read.sum"] == pytest.approx(2.048e9)
    assert kernels[1]["metrics"]["gpu__time_duration.sum"] == pytest.approx(1.25e6)
    assert kernels[1]["metrics"]["launch__grid_size"] == 4096.0
    assert ncu.dominant(kernels)["name"] == "reduce"


@pytest.mark.parametrize("unit, factor, base", [
    ("nsecond", 1.0, "ns"), ("usecond", 1e3, "ns"), ("us", 1e3, "ns"), ("msecond", 1e6, "ns"),
    ("Kbyte", 1e3, "byte"), ("Gbyte/s", 1e9, "byte/s"), ("Tbyte/s", 1e12, "byte/s"), ("Mhz", 1e6, "hz"),
    ("inst/usecond", 1e6, "inst/s"), ("Kbyte/block", 1e3, "byte/block"), ("%", 1.0, "%"),
    ("register/thread", 1.0, "register/thread"), ("", 1.0, ""),
])
def test_units_convert_to_base(unit, factor, base):
    assert ncu.unit_factor(unit) == (pytest.approx(factor), base)


def test_garbage_or_empty_pages_give_no_launches():
    assert ncu.parse_raw("") == [] and ncu.parse_details("==ERROR== nothing here") == []


def test_key_metrics_keep_what_rules_read_and_every_pipe(dot):
    keep = ncu.key_metrics(dot[0]["metrics"])
    assert "launch__occupancy_limit_registers" in keep and "device__attribute_l2_cache_size" not in keep
    assert "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_elapsed" in keep
    assert len(keep) < 120


def test_pipes_name_the_tensor_pipe_busiest_for_a_tl_dot_matmul(dot):
    pipes = ncu.pipes(dot[0]["metrics"])
    assert max(pipes, key=pipes.get) in ("tensor", "tensor_op_hmma") and pipes["tensor"] == 78.83
    assert "shared" not in pipes  # FP64 + tensor aggregate on sm_90, never "the busiest pipe"


# ---- counters unavailable: each signature as ncu prints it ------------------------------------

PERM = ("==PROF== Connected to process 7\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to "
        "access NVIDIA GPU Performance Counters on the target device 0.\n")


@pytest.mark.parametrize("returncode, output, timed_out, expected", [
    (127, "", False, "ncu not found"),
    (1, PERM, False, "ERR_NVGPUCTRPERM"),
    (1, "==ERROR== Failed to initialize the profiler: LibraryNotLoaded\n", False, "LibraryNotLoaded"),
    (0, "==PROF== Disconnected from process 7\n==WARNING== No kernels were profiled.\n", False,
     "No kernels were profiled"),
    (None, "", True, "timeout"),
    (1, "==ERROR== Failed to profile \"mm\" in process 7: another process is concurrently collecting "
        "profiling data\n", False, "another profiler"),
    (2, "==ERROR== The application returned an error code (2).\n", False, "exited with code 2"),
])
def test_each_unavailable_signature_gives_its_reason(returncode, output, timed_out, expected):
    reason = ncu.counters_unavailable(returncode, output, timed_out)
    assert reason is not None and expected in reason


def test_a_clean_run_has_no_unavailable_reason():
    out = "==PROF== Connected to process 7\n==PROF== Profiling \"mm\": 0%....50%....100% - 13 passes\n"
    assert ncu.counters_unavailable(0, out) is None
