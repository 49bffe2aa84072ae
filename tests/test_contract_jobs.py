"""No dict crosses as a compile job's result or a profile (issue 35): engine/validate.py reads the compile job's
JSON once into a `CompileResult` (a job that failed keeps its envelope as the trace, as before the type), and
a profile is a `ProfileResult` from `profile_file` and every executor to the store and the views, which read
its fields; only a profiler reads its own keys (core/profilers/), through the record's mapping view. The
reference's analysis is an `AnalysisResult` from the job, the cache and every executor to the verdicts."""

from __future__ import annotations

import ast
import re
import json
import typing
from pathlib import Path

import pytest

import trialtui
from trialtui.core.analysis_result import AnalysisResult
from trialtui.core.compile_result import CompileResult
from trialtui.core.executor import Executor
from trialtui.core.model import Trial
from trialtui.core.profile_result import ProfileResult
from trialtui.core.result import ResultError
from trialtui.core.store import Store
from trialtui.engine import profile
from trialtui.engine.executors.local import LocalExecutor
from trialtui.engine.executors.remote import RemoteExecutor

from test_contract_types import reads_by_key
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


@pytest.mark.parametrize("function", [Executor.profile, LocalExecutor.profile, RemoteExecutor.profile,
                                      profile.profile_file], ids=lambda f: f.__qualname__)
def test_every_profile_returns_the_typed_profile(function):
    assert typing.get_type_hints(function)["return"] is ProfileResult


def test_a_trial_holds_the_typed_profile_and_the_store_refuses_a_dict(tmp_path):
    assert typing.get_type_hints(Trial)["profile"] == ProfileResult | None
    body = {"source": "ncu", "available": False, "reason": "ERR_NVGPUCTRPERM", "kernels": [], "log": None}
    trial = Trial("t1", "k.py", "x", 0.0, profile=ProfileResult.from_json(body))
    assert trial.to_dict()["profile"] == body and list(trial.to_dict()["profile"]) == list(body)  # key for key
    assert Trial.from_dict(json.loads(json.dumps(trial.to_dict()))) == trial
    with Store.open(tmp_path, writer=True) as store:
        made = store.add_trial("k.py", b"x")
        with pytest.raises(TypeError, match="ProfileResult"):
            store.update(made.id, profile=body)
        store.update(made.id, profile=ProfileResult.from_json(body))
        assert store.get(made.id).profile.reason == "ERR_NVGPUCTRPERM"


def test_a_profile_that_is_not_an_object_or_has_a_wrong_type_is_refused():
    with pytest.raises(ResultError):
        ProfileResult.from_json(["ncu"])
    with pytest.raises(ResultError, match="available"):
        ProfileResult.from_json({"source": "ncu", "available": "yes"})
    lost = ProfileResult.unavailable("the connection was lost")
    assert lost.to_json() == {"available": False, "reason": "the connection was lost", "skipped": []}


def test_nothing_but_a_profiler_reads_a_trials_profile_by_key():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if {"runner", "profilers"} & set(path.relative_to(PACKAGE).parts):
            continue  # the job builds the JSON; a profiler reads its own body
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if reads_by_key(node, "profile"):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, f"a profile read as a dict: {found}"


@pytest.mark.parametrize("function", [Executor.analyze, LocalExecutor.analyze, RemoteExecutor.analyze,
                                      profile.analyze, profile.cached_analysis], ids=lambda f: f.__qualname__)
def test_every_analysis_is_the_typed_analysis(function):
    assert typing.get_type_hints(function)["return"] in (AnalysisResult, AnalysisResult | None)


def test_an_analysis_reads_back_key_for_key_and_a_malformed_one_is_an_error():
    data = {"device": "meta", "flops": 2.0, "min_bytes": 8, "ops": [], "case": {"n": 4}, "version": 1, "state": "ok",
            "dtype": "float32", "roofline": None}
    analysis = AnalysisResult.read(data)
    assert analysis.ok and analysis.flops == 2.0 and analysis.to_json() == data and list(analysis.to_json()) == list(data)
    for bad in (["ok"], {"flops": 1.0}, {"state": "ok", "flops": "many"}):
        got = AnalysisResult.read(bad)
        assert not got.ok and "malformed" in got.message, bad


def test_the_cache_holds_the_analysis_json_and_reads_it_back(tmp_path):
    from conftest import write_problem
    from trialtui.core.problem_dir import load_problem

    problem = load_problem(write_problem(tmp_path / "p"))
    analysis = AnalysisResult.read({"version": 1, "state": "ok", "flops": 1.0, "min_bytes": 8.0, "dtype": "float32"})
    profile.store_analysis(problem, analysis)
    assert profile.cached_analysis(problem) == analysis
    cache = problem.state_dir / profile.ANALYSIS_NAME
    cache.write_text(json.dumps({"key": profile._analysis_key(problem), "analysis": ["not", "an", "analysis"]}))
    assert profile.cached_analysis(problem) is None  # unreadable: made again


def test_a_calibration_is_read_once_and_shown_beside_the_datasheet():
    from trialtui.core.calibration_result import CalibrationResult
    from trialtui.core.gpus import datasheet
    from trialtui.render import render_calibration

    assert typing.get_type_hints(profile.calibrate)["return"] is CalibrationResult
    measured = {**datasheet("NVIDIA H200").to_dict(), "hbm_gbps": 4300.0, "source": "calibrated", "driver": "580"}
    data = {"version": 1, "state": "ok", "ceilings": measured, "cache": "/c/ceilings.json"}
    result = CalibrationResult.read(data)
    assert result.ok and result.measured.hbm_gbps == 4300.0 and result.to_json() == data
    text = render_calibration(result)
    assert "NVIDIA H200 (driver 580)" in text and "4,300 GB/s" in text and "4,800 GB/s" in text and "/c/ceilings.json" in text
    for bad in (["ok"], {"version": 1, "state": "ok", "ceilings": "fast"}, {"version": 1, "state": "ok", "ceilings": {"gpu": "x"}}):
        got = CalibrationResult.read(bad)
        assert not got.ok and render_calibration(got).startswith("calibrate failed"), bad
    died = CalibrationResult.read({"version": 1, "state": "timeout", "message": "timed out after 600 s", "log_tail": "t"})
    assert render_calibration(died) == "calibrate failed: timed out after 600 s" and died.to_json()["log_tail"] == "t"


def test_every_job_the_engine_runs_is_read_into_a_type_where_it_returns():
    """Each `run_child(...)` is the argument of a type's reader (`from_json`, `read`, bench's `_read`): its
    JSON is a dict for that one call and never beyond (issue 35: no dict crosses from the runner)."""
    readers = {"from_json", "read", "_read"}
    calls, read = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name == "run_child":
                calls.append((f"{path.relative_to(PACKAGE)}:{node.lineno}", id(node)))
            elif name in readers and node.args:
                read.add(id(node.args[0]))
    assert len(calls) >= 5  # bench, compile, analyze, profile, calibrate
    assert [where for where, call in calls if call not in read] == []


def test_a_validation_is_the_typed_report_from_the_validator_to_the_trial_and_the_views(tmp_path):
    from trialtui.core.validation_report import ValidationReport
    from trialtui.engine.validate import validate_file

    for function in (Executor.validate, RemoteExecutor.validate, validate_file):
        assert typing.get_type_hints(function)["return"] is ValidationReport, function
    assert typing.get_type_hints(Trial)["validation"] == ValidationReport | None
    data = {"ok": False, "invalid": True, "file": "k.py", "errors": [{"severity": "error", "code": "syntax",
            "message": "invalid syntax", "line": 3}], "warnings": [], "kernels": [], "preview": None, "language": "triton"}
    report = ValidationReport.from_json(data)
    assert report.to_json() == data and list(report.to_json()) == list(data) and report.errors[0]["line"] == 3
    with pytest.raises(ResultError):
        ValidationReport.from_json({"errors": []})  # no `ok`
    assert report.rejects_file and not ValidationReport(ok=False, invalid=False).rejects_file  # ran, raised on the CPU
    assert ValidationReport(ok=False).rejects_file and not ValidationReport(ok=True).rejects_file  # said nothing: its ok
    with Store.open(tmp_path, writer=True) as store:
        made = store.add_trial("k.py", b"x")
        with pytest.raises(TypeError, match="ValidationReport"):
            store.update(made.id, validation=data)
        store.update(made.id, validation=report)
    with Store.open(tmp_path, writer=False) as store:
        assert store.get(made.id).validation == report


def test_nothing_outside_the_runner_reads_a_trials_validation_by_key():
    found = [f"{path.relative_to(PACKAGE)}:{node.lineno}" for path in sorted(PACKAGE.rglob("*.py"))
             if "runner" not in path.relative_to(PACKAGE).parts
             for node in ast.walk(ast.parse(path.read_text(), str(path))) if reads_by_key(node, "validation")]
    assert not found, f"a validation read as a dict: {found}"


def _problem_spec(tmp_path):
    from conftest import KB_GOOD, write_problem
    from trialtui.core.problem_dir import load_problem

    problem = load_problem(write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD}))
    return problem, problem.job_spec(), str(problem.root / "kernel.py")


def test_every_job_spec_is_the_dict_the_engine_built_before_it_and_reads_back_as_written(tmp_path):
    """Each kind's wire, key for key and in order, as the engine's dicts were (`Problem.job_spec(...)` plus
    the kind's keys) before the types; then read back through JSON into the very spec."""
    from trialtui.core.job_spec import AnalyzeSpec, CalibrateSpec, CompileSpec
    from trialtui.core.profilers import get_profiler

    problem, keys, candidate = _problem_spec(tmp_path)
    report = str(problem.state_dir / "profiles" / "t1")
    before = [  # (the type as the engine builds it, the dict it built at 40b5fd8)
        (CompileSpec(**keys, candidate=candidate, arch=["sm_90", "sm_80"]), {**keys, "candidate": candidate, "arch": ["sm_90", "sm_80"]}),
        (AnalyzeSpec(**keys, gpu="NVIDIA H200", driver=None), {**keys, "gpu": "NVIDIA H200", "driver": None, "case": 0}),
        (get_profiler("ncu").spec(problem, candidate, report),
         {**keys, "candidate": candidate, "case": 0, "report": report, "ncu_timeout_s": 300.0}),
        (get_profiler("activity").spec(problem, candidate, report), {**keys, "candidate": candidate, "case": 0, "calls": 20}),
        (CalibrateSpec(), {"version": 1}),
        (CompileSpec(**keys, candidate=candidate, arch=["sm_90"]).trace("/tmp/l.json"),
         {**keys, "candidate": candidate, "launches": "/tmp/l.json"}),
    ]
    for spec, wire in before:
        assert json.dumps(spec.to_wire()) == json.dumps(wire), type(spec).__name__
        assert type(spec).from_wire(json.loads(json.dumps(spec.to_wire()))) == spec
        received = {**spec.to_wire(), "progress": "/dev/fd/5", "spec_path": "/s/job-spec.json"}  # what the run adds
        assert type(spec).from_wire(received).to_wire() == received


@pytest.mark.parametrize("change, named", [({"arch": "sm_90"}, "arch"), ({"candidate": None}, "candidate"),
                                           ({"launches": "x"}, "launches"), ({"atol": "1e-4"}, "atol")])
def test_a_compile_spec_with_a_wrong_or_unknown_key_is_refused_by_name(tmp_path, change, named):
    from trialtui.core.job_spec import CompileSpec

    _, keys, candidate = _problem_spec(tmp_path)
    with pytest.raises(ValueError, match=named):
        CompileSpec.from_wire({**CompileSpec(**keys, candidate=candidate, arch=["sm_90"]).to_wire(), **change})


def test_a_job_served_a_spec_it_cannot_read_answers_an_error_naming_the_key():
    from trialtui.core.job_spec import CalibrateSpec
    from trialtui.runner.child import typed

    result = typed(lambda spec: {"state": "ok"}, CalibrateSpec, {"version": 1, "copy_bytes": 4})
    assert result["state"] == "error" and "copy_bytes" in result["message"]


def test_run_child_and_a_warm_prepare_refuse_a_plain_dict(tmp_path):
    """A dict's keys and defaults would be the engine's own guess at what a job reads: only a spec type goes."""
    from trialtui.core.job_spec import BenchSpec, JobSpec
    from trialtui.engine.jobs import WarmChildren, run_child

    assert typing.get_type_hints(run_child)["spec"] is JobSpec
    assert typing.get_type_hints(WarmChildren.prepare)["problem"] is BenchSpec
    with pytest.raises(TypeError, match="dict"):
        run_child("trialtui.runner.calibrate_job", {"version": 1}, timeout_s=5, log_path=tmp_path / "log")
    assert not (tmp_path / "log").exists()  # refused before anything ran


def test_every_job_module_reads_its_spec_through_its_type():
    """`spec.get("calls", 20)` wrote a default again where it was read: the spec types hold them all, and
    every job of trialtui's is served its spec read into its type."""
    jobs = sorted((PACKAGE / "runner").glob("*_job.py")) + [PACKAGE / "runner" / "profile_target.py"]
    for path in jobs:
        source = path.read_text()
        assert not re.search(r"\bspec\.get\(|\bspec\[", source), f"{path.name} reads its spec as a dict"
        if path.name == "profile_target.py":  # ncu's target, not a served job: it reads its spec file itself
            assert "from_wire(" in source
        else:
            assert "__main__" not in source or "spec_type=" in source, path.name  # served typed, by runner/child.serve


def test_profile_candidate_answers_a_typed_report_whose_json_is_the_dicts(tmp_path):
    """`trialtui profile`'s answer crosses from the engine to the CLI as a ProfileReport; `--json` prints what
    the dict before it printed, key for key and in order."""
    from trialtui.core.profile_report import ProfileReport
    from trialtui.render import render_verdicts

    assert typing.get_type_hints(profile.profile_candidate)["return"] is ProfileReport
    assert ProfileReport(state="incorrect", message="0.4% differ", env=None).to_json() == {
        "state": "incorrect", "message": "0.4% differ", "env": None}
    body = ProfileResult.from_json({"source": "ncu", "label": "Nsight Compute counters", "available": True,
                                    "report": "/p/.trialtui/profiles/t1.ncu-rep"})
    report = ProfileReport(state="correct", env={"device": "cuda", "gpu": "NVIDIA H200"}, label="Nsight Compute counters",
                           profile=body, sol=0.5, median_us=12.0, gpu="NVIDIA H200", phases_s={"bench": 1.0})
    assert list(report.to_json()) == ["state", "analytic", "label", "profile", "verdicts", "sol", "roofline", "median_us",
                                      "env", "gpu", "reused_from", "phases_s", "library"]
    assert report.to_json()["profile"] == body.to_json()
    text = render_verdicts(report)
    assert text.startswith("NVIDIA H200: median 12.00 µs, 50% of speed-of-light; verdicts from Nsight Compute counters")
    assert "report: /p/.trialtui/profiles/t1.ncu-rep" in text


def test_finalize_answers_a_typed_card_from_the_engine_to_every_front_end(kb_problem, tmp_path):
    """Finalize's answer crosses as a `Finalized` (the card a `ReportCard`): the engine's function, the running
    engine, the attached one and the control channel's helper all say so; the card's JSON is report.json key
    for key, reads back the same, and a card without a key or with a wrong type is refused, not half-read."""
    from trialtui.core.report import build_report
    from trialtui.core.report_card import Finalized, ReportCard, ReportCardError
    from trialtui.core.problem_dir import load_problem
    from trialtui.engine import attach, control_ops, finalize, loop

    from test_cli_trials import GPU_RESULT
    from conftest import as_result

    for function in (finalize.finalize, control_ops.finalize_running, loop.Engine.finalize, attach.RemoteEngine.finalize,
                     control_ops.RunningEngine.finalize):
        assert typing.get_type_hints(function)["return"] is Finalized, function
    with Store.open(kb_problem) as store:
        store.record("kernel.py", (kb_problem / "kernel.py").read_bytes())
        trial = store.update("t1", state="correct", result=as_result(GPU_RESULT))
    text, card = build_report(load_problem(kb_problem), trial, as_result(GPU_RESULT))
    assert isinstance(card, ReportCard) and card.trial == "t1" and card["trial"] == "t1"
    json_card = card.to_json()
    assert list(json_card)[:3] == ["problem", "trial", "parent"] and list(json_card)[-2:] == ["ranked_on", "library"]
    assert ReportCard.from_json(json.loads(json.dumps(json_card))).to_json() == json_card
    more = card.adding({"recorded": {"run": "r1"}, "speedup": 2.0})
    assert more.to_json()["recorded"] == {"run": "r1"} and more.speedup == 2.0 and list(more.to_json())[-1] == "recorded"
    done = Finalized(text, card, tmp_path)
    assert Finalized.from_wire(json.loads(json.dumps(done.to_wire()))) == done
    for broken in ({k: v for k, v in json_card.items() if k != "trial"}, {**json_card, "gpu_timing": "yes"}, [json_card]):
        with pytest.raises(ReportCardError):
            ReportCard.from_json(broken)
