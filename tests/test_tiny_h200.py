"""Tiny kernels' headlines against Nsight Compute on the H200 (`benches/gpu_tiny.py`, issue 34), kept runs:
h200-2026-12-02d (the L2 flush wrote its buffer: kb_add 7-14 % over ncu, 3 of 4 sizes outside 10 %),
h200-2026-12-02g and h (the flush reads it, leaving L2 clean as ncu's does: seven of eight kernels within
10 %, 0.4-9.3 %; a 512³ bf16 GEMM at 10.2 %, still open). Read with the bench's own parsing of ncu's CSV."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("gpu_tiny", HERE.parent / "benches" / "gpu_tiny.py")
gpu_tiny = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_tiny)


def rows(run: str) -> list[dict]:
    return json.loads((HERE / "fixtures" / "gpu" / run / "tiny.json").read_text())["rows"]


def test_a_flush_that_leaves_l2_clean_brings_tiny_kernels_to_ncus_kernel_time():
    before = {r["n"]: r["ratio"] for r in rows("h200-2026-12-02d")}
    after = {r["case"]: r for r in rows("h200-2026-12-02g") + rows("h200-2026-12-02h")}
    assert set(after) == set(gpu_tiny.CASES)  # every case measured across the two runs
    for row in after.values():
        assert row["state"] == "correct" and row["confirmed"] is True, row
        assert row["ok"] == (abs(row["ratio"] - 1) <= gpu_tiny.TOL), row
    # the same add kernel at the same sizes, written flush against read flush (at 4096 elements, 48 KB of
    # traffic, there is next to nothing to write back: 1.071 then 1.074)
    for n, case in ((65536, "add-64k"), (1048576, "add-1m"), (16777216, "add-16m")):
        assert after[case]["ratio"] < before[n], (case, before[n], after[case]["ratio"])
    assert sum(before[n] - 1 > gpu_tiny.TOL for n in before) == 3
    assert [name for name, r in after.items() if not r["ok"]] == ["matmul-512"]  # 1.102: the one left


def test_ncus_csv_is_read_as_its_median_in_microseconds():
    csv = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n' + "".join(
        f'"{i}","add_kernel","gpu__time_duration.sum","nsecond","{v}"\n' for i, v in enumerate(["2,240", "2,180", "9,000"]))
    assert gpu_tiny.median_duration_us(csv) == 2.24


def test_the_512_cubed_gemm_is_within_ten_percent_of_ncu_in_the_latest_run():
    # h200-2026-12-03b (main at 1d94e18): 13.34 against ncu's 12.42 µs, 1.075 (02h: 1.102)
    latest = {r["case"]: r for r in rows("h200-2026-12-03b")}
    assert set(latest) == {"matmul-512", "add-4k"}
    for row in latest.values():
        assert row["state"] == "correct" and row["confirmed"] is True and row["ok"], row
        assert abs(row["ratio"] - 1) <= gpu_tiny.TOL, row


def test_every_tiny_kernel_within_ten_percent_of_ncu_at_the_sessions_last_commit():
    # h200-2026-12-03d (main at 22b157b), tiny_b: all seven cases, the two smallest twice, 1.013-1.095.
    # tiny_a, minutes before on the same code and machine: add-4k 1.129 (flagged `noisy`: its loop was
    # disturbed twice) and softmax-256x4k 1.121; ncu's own figure for the 4,096-element add moved 1.98-2.24 µs
    # across these runs, so one run is not the kernel's last word at 2 µs.
    run = json.loads((HERE / "fixtures" / "gpu" / "h200-2026-12-03d" / "tiny_b.json").read_text())["rows"]
    assert {r["case"] for r in run} == set(gpu_tiny.CASES) and len(run) == 9
    for row in run:
        assert row["state"] == "correct" and row["confirmed"] is True and row["ok"], row
        assert abs(row["ratio"] - 1) <= gpu_tiny.TOL and row["ok"] == (abs(row["ratio"] - 1) <= gpu_tiny.TOL), row
    before = json.loads((HERE / "fixtures" / "gpu" / "h200-2026-12-03d" / "tiny_a.json").read_text())["rows"]
    assert [(r["case"], r["ok"]) for r in before] == [("add-4k", False), ("softmax-256x4k", False)]
    assert "noisy" in before[0]["flags"]


def test_under_cuda_graphs_tiny_kernels_read_a_constant_half_microsecond_over_ncu():
    # h200-2026-12-03g (main at d3fb0ad): every timed call's sequence a CUDA graph, its events recorded by the
    # graph. Every case confirmed (the host's launches are out of the events: the eager loop without a wait,
    # h200-2026-12-03f, read add-4k at 30.8 µs against ncu's 2.2), but each reads 0.5-0.8 µs over ncu's kernel
    # time: an edge of the graph between the start event and the kernel that the empty pair, recorded with
    # nothing between, does not hold. 1.01-1.27; the ten-percent bound of 03d is not met below 6 µs (issue 34).
    run = {r["case"]: r for r in rows("h200-2026-12-03g")}
    eager = {r["case"]: r for r in rows("h200-2026-12-03f")}
    assert eager["add-4k"]["ratio"] > 10 and run["add-4k"]["ratio"] < 1.3
    for case, row in run.items():
        assert row["state"] == "correct" and row["confirmed"] is True and "CUDA graph" in row["label"], case
        assert 0 <= row["headline_us"] - row["ncu_us"] <= 0.9, (case, row["headline_us"], row["ncu_us"])
    assert run["add-16m"]["ratio"] < 1.02
    # h200-2026-12-03h (2dd7b5f, the chain's hash no sum; two of its kernels after each call): the same
    # picture, and the 512³ bf16 GEMM reached: 13.79 against 12.58 µs (1.097); 1.02-1.27 over all seven
    again = {r["case"]: r for r in rows("h200-2026-12-03h")}
    assert set(again) == set(run) | {"matmul-512"}
    for case, row in again.items():
        assert row["state"] == "correct" and row["confirmed"] is True and "CUDA graph" in row["label"], case
        assert 0 <= row["headline_us"] - row["ncu_us"] <= 1.25, (case, row["headline_us"], row["ncu_us"])
    assert again["matmul-512"]["ratio"] < 1.1 and again["add-16m"]["ratio"] < 1.03


def test_a_flush_of_l2s_size_reads_tiny_kernels_as_the_flush_of_twice_l2_did():
    # h200-2026-12-03i (main at 7548c71, the flush reading twice L2) and 03j (the same code with L2's size, the
    # next minutes on the same machine): every case confirmed in both, its ratio to ncu within 0.06 of the
    # other's, the largest (add-16m, 45 µs) within 1 % of ncu in both: the smaller flush leaves the inputs as
    # cold as the larger. Both still read 0.5-1.0 µs over ncu below 14 µs (issue 34's edge of the graph).
    twice = {r["case"]: r for r in rows("h200-2026-12-03i")}
    once = {r["case"]: r for r in rows("h200-2026-12-03j")}
    assert set(twice) == set(once) == set(gpu_tiny.CASES)
    for case in gpu_tiny.CASES:
        for row in (twice[case], once[case]):
            assert row["state"] == "correct" and row["confirmed"] is True and "CUDA graph" in row["label"], case
            assert -0.4 <= row["headline_us"] - row["ncu_us"] <= 1.05, (case, row["headline_us"], row["ncu_us"])
        assert abs(once[case]["ratio"] - twice[case]["ratio"]) <= 0.06, case
    assert abs(once["add-16m"]["ratio"] - 1) <= 0.01 and abs(twice["add-16m"]["ratio"] - 1) <= 0.01
    assert once["matmul-512"]["ratio"] < twice["matmul-512"]["ratio"] < 1.1


def test_a_graph_reads_one_kernel_as_ncu_does_once_its_empty_pair_is_off():
    # h200-2026-12-03k (benches/gpu_graph_edges.py at 5f14c1f): one graph of the harness's flush, the start
    # event, m kernels and the end event, replayed 400 times. With one kernel between the events the reading
    # less the empty one (1.28 µs, the harness's pair) is ncu's kernel time within 0.15 µs for a null kernel,
    # torch's sleep and adds of 4 K and 1 M elements (0.64 for 16 M, 1.4 %): the half microsecond the
    # harness reads over ncu (03i, 03j) is not the events' own. Kernels back to back overlap their edges:
    # the second adds less than ncu's time (null: 0.67 against 1.38), so no per-kernel correction is right.
    edges = {r["kernel"]: r for r in json.loads((HERE / "fixtures" / "gpu" / "h200-2026-12-03k" / "edges.json").read_text())["rows"]}
    assert set(edges) == {"sleep0", "null", "add-4k", "add-1m", "add-16m"}
    for name, row in edges.items():
        reading = row["readings_us"]
        assert 1.2 <= reading["0"] <= 1.4, name
        assert abs(reading["1"] - reading["0"] - row["ncu_us"]) <= (0.15 if name != "add-16m" else 0.02 * row["ncu_us"]), name
    assert edges["null"]["readings_us"]["2"] - edges["null"]["readings_us"]["1"] < 0.6 * edges["null"]["ncu_us"]


def test_the_loops_half_microsecond_is_its_graphs_back_to_back_not_its_events():
    # h200-2026-12-03l (benches/gpu_graph_edges.py at 094a165): an add between the events in the timed loop's
    # arrangements, each less its own empty reading (1.28 µs in every arrangement, the harness's pair too).
    # Alone (one graph of flush, start, add, end, waited for) add 4 K reads 2.43 against ncu's 2.11; with the
    # output's copy and read after the end event and the graphs replayed back to back, as the loop does,
    # 2.82, the harness's own headline for that add (2.80 in 03j). Graphs back to back add 0.35 µs to a
    # kernel between events, none to the empty pair: a correction must be measured with a kernel, not the pair.
    shapes = json.loads((HERE / "fixtures" / "gpu" / "h200-2026-12-03l" / "edges.json").read_text())["arrangements"]
    for name in ("add-4k", "add-1m"):
        got = {shape: shapes[f"{name}/{shape}"] for shape in ("alone", "head", "tail", "series", "loop")}
        assert all(1.2 <= row["empty_us"] <= 1.4 for row in got.values()), name
        kernel = {shape: row["reading_us"] - row["empty_us"] for shape, row in got.items()}
        assert 0.25 <= kernel["series"] - kernel["alone"] <= 0.45 and kernel["loop"] >= kernel["series"], (name, kernel)
        assert 0.5 <= kernel["loop"] - got["loop"]["ncu_us"] <= 0.8, (name, kernel)
    once = {r["case"]: r for r in rows("h200-2026-12-03j")}
    assert abs(once["add-4k"]["headline_us"] - (shapes["add-4k/loop"]["reading_us"] - shapes["add-4k/loop"]["empty_us"])) <= 0.1


def test_the_keyed_flush_costs_the_harness_microseconds_and_the_tiny_kernels_nothing():
    # h200-2026-12-03m (main at f048ba5, the plain flush) and 03n (b667b5f: the loop flushes through the
    # checker's words, keyed by the previous call's hash, its fold in the chain): every case confirmed in
    # both, the headline within 0.45 µs of the other's (events bracket the call, not the flush), and the
    # harness's own cost per call, taken off the checker's clock, 6-9 µs more with the keyed flush. Both
    # read 0.4-1.1 µs over ncu below 14 µs (the loop's graphs back to back, above).
    plain = {r["case"]: r for r in rows("h200-2026-12-03m")}
    keyed = {r["case"]: r for r in rows("h200-2026-12-03n")}
    assert set(plain) == set(keyed) == set(gpu_tiny.CASES)
    for case in gpu_tiny.CASES:
        for row in (plain[case], keyed[case]):
            assert row["state"] == "correct" and row["confirmed"] is True and row["graphed"] is True, case
            assert -0.4 <= row["headline_us"] - row["ncu_us"] <= 1.15, (case, row["headline_us"], row["ncu_us"])
        assert abs(keyed[case]["headline_us"] - plain[case]["headline_us"]) <= 0.45, case
        assert 4 <= keyed[case]["overhead_us"] - plain[case]["overhead_us"] <= 12, case
    assert abs(keyed["add-16m"]["ratio"] - 1) <= 0.015


def test_the_typed_job_contract_reads_tiny_kernels_as_before():
    # h200-2026-12-04a (main at e2ccf69: every job reads a typed spec through runner/child.serve, the bench job's
    # result card typed): every case confirmed and graphed, each headline within 0.25 µs of 03n's (the same
    # keyed flush, the dict-built jobs) and 0.4-1.2 µs over ncu, as every run since the loop's graphs (03g).
    before = {r["case"]: r for r in rows("h200-2026-12-03n")}
    typed = {r["case"]: r for r in rows("h200-2026-12-04a")}
    assert set(typed) == set(before) == set(gpu_tiny.CASES)
    for case, row in typed.items():
        assert row["state"] == "correct" and row["confirmed"] is True and row["graphed"] is True, case
        assert 0.4 <= row["headline_us"] - row["ncu_us"] <= 1.2, (case, row["headline_us"], row["ncu_us"])
        assert abs(row["headline_us"] - before[case]["headline_us"]) <= 0.25, case
    assert abs(typed["add-16m"]["ratio"] - 1) <= 0.02
