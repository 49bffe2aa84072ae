"""The phase breakdown a person reads in the log tab: whole phases, their steps, the candidate's own clock apart."""

from __future__ import annotations

from trialtui.core.phases import breakdown_lines


def test_breakdown_names_each_phase_its_steps_and_the_exchange():
    lines = breakdown_lines({"load": 0.1, "correctness": 3.7, "timing": 1.2, "correctness.compare": 0.4,
                             "correctness.candidate_and_transfer": 3.1, "timing.loop": 1.0, "candidate.run": 2.9,
                             "exchange.send": 0.2, "exchange.recv": 0.3, "exchange.mb": 1536.0})
    assert lines[0] == "job 5.00 s: load 0.10, correctness 3.70, timing 1.20"
    assert "  correctness: compare 0.40, candidate and transfer 3.10" in lines
    assert "  timing: loop 1.00" in lines
    assert any(line.startswith("  candidate's process (its own clock): run 2.90") for line in lines)
    assert lines[-1] == "  tensors exchanged: 1536 MB, sending 0.20 s, receiving 0.30 s"


def test_no_phases_no_lines():
    assert breakdown_lines(None) == [] and breakdown_lines({}) == []


def test_a_real_h200_save_reads_as_its_phases():
    """benches/loop_latency.py on the H200 (2026-12-01): each save's breakdown, from the fixture."""
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).parent / "fixtures" / "gpu" / "h200-2026-12-01c" / "loop_latency.json").read_text())
    save = data["problems"]["kb_softmax"]["saves"][0]
    lines = breakdown_lines(save["phases_s"])
    assert lines[0].startswith("job ") and "correctness" in lines[0] and "timing" in lines[0]
    assert any(line.startswith("  candidate's process (its own clock): ") and "run.first_call" in line for line in lines)
    assert lines[-1].startswith("  tensors exchanged: 6912 MB")


def test_a_step_timed_inside_a_marked_one_is_summed_without_moving_the_clock():
    """The timed batches' request and copy (timing.batches.*) sit inside timing.loop: added, they leave the
    next mark its own seconds."""
    from trialtui.runner.job_progress import Splits

    splits = Splits(sync=False)
    splits.add("timing.batches.request", 0.25)
    splits.add("timing.batches.request", 0.5)
    started = splits.started
    splits.mark("timing.loop")
    assert splits.seconds["timing.batches.request"] == 0.75
    assert splits.started > started and splits.seconds["timing.loop"] < 0.25  # the mark's own time only
