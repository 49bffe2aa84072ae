"""`BenchResult`, the bench job's result as a type: read from JSON with the schema's checks, written back
exactly as it was read (keys, nulls, order), failures made one way."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from trialtui.core.bench_result import BenchResult
from trialtui.core.result import ResultError

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = FIXTURES / "golden" / "fa11b31"
RESULTS = [
    *sorted(GOLDEN.glob("bench_*.json")),  # the CPU's, as fa11b31 wrote them
    *sorted((FIXTURES / "gpu").glob("result_*.json")), *sorted((FIXTURES / "gpu").glob("bad_*.json")),  # the H200's
]


def stored_results() -> list[dict]:
    trials = json.loads((GOLDEN / "store" / "trials.json").read_text())["trials"]
    return [doc["result"] for doc in trials.values() if doc["result"] is not None]


@pytest.mark.parametrize("data", [json.loads(p.read_text()) for p in RESULTS] + stored_results(),
                         ids=[p.name for p in RESULTS] + [f"stored-{i}" for i in range(len(stored_results()))])
def test_a_result_is_written_back_exactly_as_it_was_read(data):
    result = BenchResult.from_json(data)
    assert json.dumps(result.to_json()) == json.dumps(data)  # keys, nulls and their order
    assert result.state == data["state"] and result.timing == data.get("timing")


def test_a_key_the_type_does_not_name_is_kept():
    result = BenchResult.from_json({"version": 1, "state": "error", "message": "no", "a_plugins_key": [1]})
    assert result.extra == {"a_plugins_key": [1]}
    assert result.to_json() == {"version": 1, "state": "error", "message": "no", "a_plugins_key": [1]}


def test_a_key_set_later_is_written_after_those_read_and_one_taken_away_is_gone():
    result = BenchResult.from_json({"version": 1, "state": "correct", "log_tail": "...", "timing": None})
    later = dataclasses.replace(result, log="logs/t1.log").without("log_tail")
    assert later.to_json() == {"version": 1, "state": "correct", "timing": None, "log": "logs/t1.log"}
    assert list(later.to_json()) == ["version", "state", "timing", "log"]


@pytest.mark.parametrize("bad", [
    [],
    {"state": "correct"},
    {"version": 2, "state": "correct"},
    {"version": 1, "state": "exploded"},
    {"version": 1, "state": "incorrect", "speedup": {"eager": 3.0}},
    {"version": 1, "state": "error", "timing": [1, 2]},
    {"version": 1, "state": "error", "message": 7},
    {"version": 1, "state": "correct", "prepared": "3"},
    {"version": 1, "state": "correct", "sizes": {"n": 1}},
    {"version": 1, "state": "correct", "wall_s": True},
])
def test_a_malformed_result_is_refused_naming_what_is_wrong(bad):
    with pytest.raises(ResultError):
        BenchResult.from_json(bad)


def test_a_failure_judged_nothing():
    result = BenchResult.failure("error", "needs a GPU", needs_gpu=True, env={"device": "cpu"})
    assert result.to_json() == {"version": 1, "state": "error", "message": "needs a GPU", "needs_gpu": True,
                                "env": {"device": "cpu"}, "flags": [], "correctness": None, "timing": None,
                                "speedup": None}
    assert BenchResult.from_json(result.to_json()) == result


def test_a_script_that_reads_a_result_by_key_reads_its_json():
    data = json.loads((GOLDEN / "bench_correct.json").read_text())
    result = BenchResult.from_json(data)
    assert dict(result) == data and result["timing"] == data["timing"] and result.get("traceback") is None
    assert (result or {}).get("prepared", 0) == 0  # as benches/loop_latency.py reads a trial's result
