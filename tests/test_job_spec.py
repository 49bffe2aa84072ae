"""The bench job's spec as a type (core/job_spec.py): the wire format the child gets is the one the dicts
before it gave, it reads back as it was written, bad input is refused by name, and the runner reads
fields rather than keys with defaults of their own."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import KB_GOOD, write_problem

from trialtui.core.job_spec import BenchSpec
from trialtui.core.problem_dir import load_problem
from trialtui.engine.bench import heldout_spec, problem_spec

# captured from engine/bench.py's dict-building code before BenchSpec (commit 7942846), `{root}` for the problem
BEFORE = {
    "root": "{root}", "reference": "{root}/reference.py", "form": "kernelbench", "entry_point": "ModelNew",
    "dtype": "float32", "atol": 0.0001, "rtol": 0.0001, "allow_tf32": False, "explicit_tolerance": False,
    "test_cases": [{}], "bench_cases": [{}], "support_files": [], "device": "cpu", "seeds": 5,
    "baselines": ["eager"], "cuda_graph": False, "timeout_s": 120.0, "candidate": "{root}/kernel.py",
    "given_baselines": {}, "candidate_as": None,
}
BEFORE_HELDOUT = {
    **BEFORE, "test_cases": [], "bench_cases": [], "timeout_s": 150.0,
    "heldout": [{"sizes": {}, "seed": 3, "layout": "x"}], "heldout_budget_s": 30.0, "correctness_only": True,
}
BEFORE_PREPARED = {k: v for k, v in BEFORE.items() if k not in ("candidate", "given_baselines", "candidate_as")}
RUNNER = Path(__file__).parents[1] / "trialtui" / "runner"
BENCH_MODULES = ("bench_job.py", "prepared.py", "timed_phase.py", "cpu_timing.py", "heldout.py", "judging.py")


@pytest.fixture
def problem(tmp_path):
    return load_problem(write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD}))


def _wire(spec: BenchSpec, root: Path) -> str:
    """The JSON as the child reads it, the problem's directory written `{root}`."""
    return json.dumps(spec.to_wire()).replace(str(root), "{root}")


def test_the_wire_format_is_the_one_the_dicts_gave(problem):
    spec = problem_spec(problem, "cpu", candidate=str(problem.root / "kernel.py"), given_baselines={},
                        candidate_as=None)
    assert _wire(spec, problem.root) == json.dumps(BEFORE)  # the same keys, values and order
    held = heldout_spec(problem, spec, [{"sizes": {}, "seed": 3, "layout": "x"}])
    assert _wire(held, problem.root) == json.dumps(BEFORE_HELDOUT)
    assert _wire(problem_spec(problem, "cpu"), problem.root) == json.dumps(BEFORE_PREPARED)


def test_a_spec_reads_back_as_it_was_written(problem):
    spec = problem_spec(problem, "cpu", candidate=str(problem.root / "kernel.py"), candidate_as="k.py",
                        given_baselines={"eager": {"median_us": 3.0, "rse": 0.0, "given": True}})
    for variant in (spec, spec.problem_part(), heldout_spec(problem, spec, [{"sizes": {"n": 3}, "seed": 1}]),
                    replace(spec, reference_source="x = 1\n", support_sources={}, progress="/dev/fd/5")):
        assert BenchSpec.from_wire(json.loads(json.dumps(variant.to_wire()))) == variant


def test_the_problem_part_leaves_the_candidate_out(problem):
    spec = replace(problem_spec(problem, "cpu", candidate=str(problem.root / "kernel.py"), correctness_only=True),
                   timeout_s=5.0)
    assert spec.problem_part() == problem_spec(problem, "cpu")
    assert replace(spec, seeds=2).problem_part() != spec.problem_part()


@pytest.mark.parametrize("change, named", [
    ({"seed": 5}, "seed"),  # a misspelt key is not a default
    ({"seeds": "5"}, "seeds"),
    ({"seeds": True}, "seeds"),  # a bool is no count
    ({"baselines": "eager"}, "baselines"),
    ({"test_cases": [3]}, "test_cases"),
    ({"candidate": 7}, "candidate"),
])
def test_an_unknown_key_or_a_wrong_type_is_refused_by_name(problem, change, named):
    wire = {**problem_spec(problem, "cpu").to_wire(), **change}
    with pytest.raises(ValueError, match=named):
        BenchSpec.from_wire(wire)


def test_a_missing_required_key_is_refused_by_name(problem):
    wire = problem_spec(problem, "cpu").to_wire()
    del wire["dtype"]
    with pytest.raises(ValueError, match="dtype"):
        BenchSpec.from_wire(wire)



def test_the_bench_runner_reads_fields_not_keys_with_defaults():
    """`spec.get("seeds", 5)` wrote a default again wherever it was read: BenchSpec holds them all."""
    for name in BENCH_MODULES:
        source = (RUNNER / name).read_text()
        assert not re.search(r"\bspec\.get\(|\bspec\[", source), f"runner/{name} reads the spec as a dict"


def test_a_job_given_a_spec_it_cannot_read_says_so_rather_than_guessing(problem):
    from trialtui.core.job_spec import BenchSpec
    from trialtui.runner import bench_job
    from trialtui.runner.child import typed

    result = typed(bench_job.run, BenchSpec, {**problem_spec(problem, "cpu").to_wire(), "seed": 5})
    assert result["state"] == "error" and "seed" in result["message"]
