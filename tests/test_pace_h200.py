"""Issue 34 on the H200 (`benches/loop_latency.py --parts pace,contention`, main at 33a9609, kept in
tests/fixtures/gpu/h200-2026-12-02d/loop_pace.json): the same kernel gets the same number at every editing
pace and beside other trialtui processes. Read with the bench's own summary code, so a change to how it
computes its percentiles or offsets is checked against real rows. Latency (save → final p50 ≤ 2 s at 5 s)
was not met in this run (3.50 s); it is not asserted here."""

from __future__ import annotations

import importlib.util
import json
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("loop_latency", HERE.parent / "benches" / "loop_latency.py")
loop_latency = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(loop_latency)
RUN = json.loads((HERE / "fixtures" / "gpu" / "h200-2026-12-02d" / "loop_pace.json").read_text())


def test_the_same_kernel_gets_its_cold_number_at_every_pace_and_the_preliminary_is_the_finals_quantity():
    cold = statistics.median(RUN["pace"]["cold_us"])
    assert {g["gap_s"] for g in RUN["pace"]["gaps"]} == {5.0, 8.0, 20.0}
    for gap in RUN["pace"]["gaps"]:
        for save in gap["saves"]:
            assert save["state"] == "correct" and save["confirmed"] is True and not save["flags"], save
            assert abs(loop_latency.off(save["final_us"], cold)) <= 0.02, (gap["gap_s"], save)
            assert abs(loop_latency.off(save["preliminary_us"], save["final_us"])) <= 0.10, (gap["gap_s"], save)
        later = [s["final_s"] for s in gap["saves"] if s["save"] > 0]
        assert loop_latency.percentile(later, 0.5) == gap["final_p50_s"]


def test_three_processes_on_one_gpu_each_get_their_number_alone_and_say_what_they_waited_for():
    alone, together = RUN["contention"]["alone"], RUN["contention"]["together"]
    assert set(alone) == set(together) == {"kb_softmax", "matmul", "rowsoftmax"}
    for name, row in together.items():
        assert row["state"] == "correct" and row["confirmed"] is True and not row["flags"], (name, row)
        assert abs(loop_latency.off(row["median_us"], alone[name]["median_us"])) <= 0.03, (name, row)
        assert all(w.startswith("trialtui: waiting for gpu0: held by trialtui ") for w in row["waits"]), row["waits"]
    assert sum(bool(r["waits"]) for r in together.values()) >= 2  # one lane: the others queued behind it


def test_an_honest_kernels_events_are_confirmed_on_every_save_whatever_the_clocks_scatter():
    # h200-2026-12-03g (main at d3fb0ad; every timed call a CUDA graph, no wait): the clock's per-call figure
    # less the harness's work read 135.2-142.9 µs for a softmax whose events said 127.5-127.8 µs, every
    # save confirmed, and so under today's 10 % and 10 µs band. (Under the millisecond GPU wait, h200-2026-12-02g,
    # the same figure scattered over 116-177 µs: the band was 20 % and 25 µs then.)
    from trialtui.runner import timing

    run = json.loads((HERE / "fixtures" / "gpu" / "h200-2026-12-03g" / "loop_pace.json").read_text())
    saves = [s for gap in run["pace"]["gaps"] for s in gap["saves"] if s.get("checker_us_per_call")]
    assert len(saves) >= 5 and all(s["confirmed"] and s["graphed"] for s in saves)
    for save in saves:
        headline, confirmed = timing.confirm(save["final_us"], save["checker_us_per_call"], save["overhead_us"])
        assert confirmed and headline == save["final_us"], save
        assert abs(save["final_vs_cold"]) < 0.01 and abs(save["preliminary_vs_final"]) < 0.01
    # a report a fifth under the truth is the clock's to overrule
    for save in saves:
        assert not timing.confirm(save["final_us"] * 0.8, save["checker_us_per_call"], save["overhead_us"])[1]


def test_a_save_at_typing_pace_reaches_its_number_in_two_seconds_from_a_prepared_checker():
    # h200-2026-12-03b (main at 1d94e18): no CUPTI start in the waiting candidate's process (it held
    # saves 1.5-4.1 s at 5 s apart in 02h), the harness's own cost per call measured while preparing
    run = json.loads((HERE / "fixtures" / "gpu" / "h200-2026-12-03b" / "loop_pace.json").read_text())
    cold = statistics.median(run["pace"]["cold_us"])
    gaps = {g["gap_s"]: g for g in run["pace"]["gaps"]}
    assert set(gaps) == {5.0, 8.0, 20.0}
    for gap in gaps.values():
        later = [s for s in gap["saves"] if s["save"] > 0]
        for save in gap["saves"]:
            assert save["state"] == "correct" and save["confirmed"] is True and not save["flags"], save
            assert abs(loop_latency.off(save["final_us"], cold)) <= 0.02, save
            assert abs(loop_latency.off(save["preliminary_us"], save["final_us"])) <= 0.10, save
            assert save["queued_s"] < 0.1, save  # never queued while the GPU idles
        for save in later:  # the prepared checker had measured the overhead; the candidate's process was ready at once
            assert save["phases_s"]["timing.overhead"] == 0.0 and save["phases_s"]["candidate.ready"] < 1.5, save
            assert "finishes preparing" not in save["waited_for"], save
        finals = [s["final_s"] for s in later]
        assert loop_latency.percentile(finals, 0.5) == gap["final_p50_s"]
    assert gaps[5.0]["final_p50_s"] <= 2.0 and gaps[5.0]["final_p95_s"] <= 3.0
    assert len(gaps[5.0]["saves"]) >= 6


def test_the_sessions_last_code_keeps_a_save_at_typing_pace_under_two_seconds():
    # h200-2026-12-03e (main at b80e3da: the garbage collector's freeze in every fork, the candidate's
    # kernel-time reply without kernel_us): five saves 5 s apart, p50 1.78 s, p95 1.85 s
    run = json.loads((HERE / "fixtures" / "gpu" / "h200-2026-12-03e" / "loop_pace.json").read_text())
    cold = statistics.median(run["pace"]["cold_us"])
    (gap,) = run["pace"]["gaps"]
    assert gap["gap_s"] == 5.0 and gap["final_p50_s"] <= 2.0 and gap["final_p95_s"] <= 3.0
    for save in gap["saves"]:
        assert save["state"] == "correct" and save["confirmed"] is True and not save["flags"], save
        assert abs(loop_latency.off(save["final_us"], cold)) <= 0.02, save
