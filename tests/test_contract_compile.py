"""No dict crosses as a compile job's result (issue 35): engine/validate.py reads the child's JSON once into a
`CompileResult` and reads its fields; a job that failed keeps its envelope as the trace, as before the type."""

from __future__ import annotations

import ast
from pathlib import Path

import trialtui
from trialtui.core.compile_result import CompileResult
from trialtui.core.model import NEEDS_RUNNER
from trialtui.engine import validate

PACKAGE = Path(trialtui.__file__).parent


def test_a_finished_job_gives_its_trace_build_and_findings():
    data = {"version": 1, "state": "ok", "trace": {"state": "ok", "launches": [{"kernel": "k"}]},
            "compile": {"state": "ok", "kernels": []}, "findings": [{"code": "x"}], "log_tail": "done"}
    result = CompileResult.from_json(data)
    assert not result.failed and result.trace["launches"] == [{"kernel": "k"}]
    assert result.compile == {"state": "ok", "kernels": []} and result.findings == [{"code": "x"}]
    assert result.log_tail == "done"
    triton_shaped = CompileResult.from_json({"version": 1, "state": "ok", "trace": {"state": "ok"}, "compile": {}})
    assert triton_shaped.findings == [] and triton_shaped.compile == {}


def test_a_failed_job_is_its_own_trace_with_no_launches():
    data = {"version": 1, "state": "error", "message": "no torch here", "needs_runner": True, "log_tail": "t"}
    result = CompileResult.from_json(data)
    assert result.failed and result.compile == {} and result.findings == []
    assert result.trace == {**data, "launches": []}  # needs_runner reaches trace_findings as it did
    found = validate.trace_findings(result.trace, "trace", 30, "ModelNew", ("no launch", "hint"))
    assert [f["code"] for f in found] == [NEEDS_RUNNER]


def test_a_malformed_result_is_an_error_not_a_crash():
    for data in ({"version": 1, "state": "ok", "compile": {}},  # no trace
                 {"version": 1, "state": "ok", "trace": ["not", "a", "dict"]},
                 {"version": 1, "state": "ok", "trace": {}, "findings": "several"}):
        result = CompileResult.from_json(data)
        assert result.failed and result.state == "error" and "malformed" in result.trace["message"], data
        assert result.trace["launches"] == []


def test_validate_reads_the_compile_jobs_result_only_through_the_type():
    tree = ast.parse((PACKAGE / "engine" / "validate.py").read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "run_child"]
    wrapped = {id(n.args[0]) for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "from_json" and getattr(n.func.value, "id", None) == "CompileResult" and n.args}
    assert calls and all(id(call) in wrapped for call in calls)
