"""The headline number is never the candidate's own: timed calls are checked, and its timing report is a claim.

Two classes, each tested through more than one way in: a candidate that computes something else only
when it is timed (recognised by its call count, or by the timing code on its stack) is `incorrect`;
a candidate that forges the report of its timing (a timer patched through a name built at run time,
or the protocol's writer swapped to rewrite the samples on their way out) never moves the headline:
the median comes from the checker's own clock and the forged figure is kept under `claimed`.
"""

from __future__ import annotations

import pytest

from trialtui.core.problem_dir import load_problem
from trialtui.engine.bench import bench_file

from conftest import KB_GOOD, write_problem

FAST = "seeds = 2\nbench_timeout_s = 60\n"
FORWARD = "        out = torch.empty_like(x)\n"
WRONG_WHEN_TIMED = {
    # 1 case x 2 seeds of correctness, then the timed calls
    "by_call_count": KB_GOOD.replace("    def forward(self, x):\n", "    calls = 0\n\n    def forward(self, x):\n"
                                     "        type(self).calls += 1\n").replace(
        "        return out\n", "        return out * 0.5 if type(self).calls > 2 else out\n"),
    "by_stack": KB_GOOD.replace("        return out\n",
                                "        import inspect\n"
                                "        timed = any('time' in f.function for f in inspect.stack())\n"
                                "        return out * 0.5 if timed else out\n"),
}
FORGED_REPORT = {
    "timer_patched_by_runtime_name": KB_GOOD + (
        "\nimport importlib\n_t = importlib.import_module('ti' + 'me')\n"
        "setattr(_t, 'perf_' + 'counter', lambda: 0.0)\n"),
    "writer_swapped": KB_GOOD + (
        "\nimport sys\n_wire = sys.modules['trialtui.runner.wire']\n_send = _wire.Channel.send\n\n"
        "def _forged(self, header, payload=None):\n"
        "    if 'samples' in header:\n"
        "        header = {**header, 'samples': [0.5 for _ in header['samples']]}\n"
        "    return _send(self, header, payload)\n\n"
        "_wire.Channel.send = _forged\n"),
}


def run(tmp_path, source: str) -> dict:
    root = write_problem(tmp_path / "p", files={"cand.py": source}, config=FAST)
    return bench_file(load_problem(root), root / "cand.py", device="cpu", use_cache=False).to_json()


@pytest.mark.parametrize("way", sorted(WRONG_WHEN_TIMED))
def test_a_candidate_that_differs_when_timed_is_incorrect(tmp_path, way):
    result = run(tmp_path, WRONG_WHEN_TIMED[way])
    assert result["state"] == "incorrect", result.get("message")
    assert "when timed" in result["message"] and result["timing"] is None


@pytest.mark.parametrize("way", sorted(FORGED_REPORT))
def test_a_forged_timing_report_never_moves_the_headline(tmp_path, way):
    result = run(tmp_path, FORGED_REPORT[way])
    assert result["state"] == "correct", result.get("message")
    timing = result["timing"]
    assert timing["confirmed"] is False
    assert timing["claimed"]["median_us"] <= 0.5  # what it said
    assert timing["median_us"] > 100.0  # what the checker's clock saw: an interpreted Triton call takes far longer


def test_an_honest_candidate_keeps_its_own_figure(tmp_path):
    timing = run(tmp_path, KB_GOOD)["timing"]
    assert timing["confirmed"] is True and "claimed" not in timing
