"""No dict crosses as a bench job's result (issue 35): from the runner to the engine it is read once into a
`BenchResult`, and the engine, the store and every front end pass that type on. The annotations say so,
no module outside the runner reads a trial's result by key, and a real CPU bench returns the type with
fa11b31's JSON shape. A trial's verdicts and decision cross the same way, as `Verdict`s and a `Decision`; a remote
job's options as their kind's record (core/job_options.py); and the executor seam names every option it takes."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import re
import shutil
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import trialtui
from trialtui.core.bench_result import BenchResult
from trialtui.core.config import ExecutorSettings
from trialtui.core.executor import Executor, JobData, Slot, parse_target
from trialtui.core.job_options import AnalyzeOptions, BenchOptions, JobOptions, ProfileOptions, ValidateOptions
from trialtui.core.model import Decision, Trial, Verdict
from trialtui.core.problem_dir import load_problem
from trialtui.core.store import Store
from trialtui.demo.replay import ReplayBench
from trialtui.engine import bench, events, finalize, generalize
from trialtui.engine.executors.local import LocalExecutor
from trialtui.engine.executors.ray_cluster import RayExecutor
from trialtui.engine.executors.remote import RemoteExecutor
from trialtui.engine.executors.ssh import SshExecutor
from trialtui.engine.trial_jobs import TrialJobs

PACKAGE = Path(trialtui.__file__).parent
GOLDEN = Path(__file__).parent / "fixtures" / "golden" / "fa11b31"


@pytest.mark.parametrize("function", [
    Executor.bench, LocalExecutor.bench, RemoteExecutor.bench, RayExecutor.bench, ReplayBench.__call__,
    bench.bench_file, bench.needs_gpu,
], ids=lambda f: f.__qualname__)
def test_every_bench_returns_the_typed_result(function):
    assert typing.get_type_hints(function)["return"] is BenchResult


def test_what_takes_a_bench_result_names_its_type():
    assert typing.get_type_hints(TrialJobs._finish)["result"] is BenchResult
    assert typing.get_type_hints(bench.static_verdict)["return"] == BenchResult | None
    for function in (finalize.finalize, generalize.check_file):
        assert typing.get_type_hints(function)["bench"] == Callable[..., BenchResult] | None


def test_a_trial_holds_the_typed_result_and_the_store_gets_its_json():
    assert typing.get_type_hints(Trial)["result"] == BenchResult | None
    result = BenchResult.failure("error", "boom", env={"device": "cpu"})
    data = Trial("t1", "k.py", "x", 0.0, state="error", result=result).to_dict()
    assert data["result"] == result.to_json()
    json.dumps(data)  # nothing but JSON reaches the store


def test_no_event_carries_a_result():
    """The front ends read a result from the trial the store holds, typed; an event only names the trial."""
    for kind in events.Event.__subclasses__():
        assert "result" not in {f.name for f in dataclasses.fields(kind)}, kind.__name__


def reads_by_key(node: ast.AST, attribute: str = "result") -> bool:
    """`x.result[...]`, `x.result.get(...)` or `(x.result or {})`: a record read as a dict."""
    def is_record(n: ast.AST) -> bool:
        return isinstance(n, ast.Attribute) and n.attr == attribute

    if isinstance(node, ast.Subscript) and is_record(node.value):
        return True
    if isinstance(node, ast.Attribute) and node.attr == "get" and is_record(node.value):
        return True
    return (isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and is_record(node.values[0])
            and isinstance(node.values[-1], ast.Dict))


def test_nothing_outside_the_runner_reads_a_trials_result_by_key():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "runner" in path.relative_to(PACKAGE).parts:
            continue  # the child's side builds the JSON the engine reads
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if reads_by_key(node):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, f"a result read as a dict: {found}"


FRONT_ENDS = [path for path in sorted(PACKAGE.rglob("*.py"))
              if path.relative_to(PACKAGE).parts[0] in ("tui", "agent", "cli", "demo", "render.py")]


def verdict_names(tree: ast.AST) -> set[str]:
    """The names a loop or comprehension binds to a trial's (or a report's) verdicts, one at a time, directly
    or through a name given the list (`verdicts = trial.verdicts or []`)."""
    def verdicts(node: ast.AST, lists: set[str]) -> bool:
        node = node.values[0] if isinstance(node, ast.BoolOp) else node
        return ((isinstance(node, ast.Attribute) and node.attr == "verdicts")
                or (isinstance(node, ast.Name) and node.id in lists))

    lists = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and verdicts(node.value, set())
             for target in node.targets if isinstance(target, ast.Name)}
    return {node.target.id for node in ast.walk(tree)
            if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name)
            and verdicts(node.iter, lists)}


def reads_a_name_by_key(node: ast.AST, names: set[str]) -> bool:
    """`v["id"]` or `v.get("id")` of one of `names` (bound to a verdict, to a job's options)."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Name) and node.value.id in names
    return (isinstance(node, ast.Attribute) and node.attr == "get" and isinstance(node.value, ast.Name)
            and node.value.id in names)


def test_a_trial_holds_typed_verdicts_and_decision_and_the_store_gets_the_same_json(tmp_path):
    """A stored trial reads back with `Verdict`s and a `Decision`, and writes back the very bytes it was read
    from: fa11b31's store, one of its trials given the verdicts a GPU recording holds."""
    assert typing.get_type_hints(Trial)["verdicts"] == list[Verdict]
    assert typing.get_type_hints(Trial)["decision"] == Decision | None
    root = tmp_path / "kb_add"
    shutil.copytree(GOLDEN / "store", root / ".trialtui")
    db = json.loads((root / ".trialtui" / "trials.json").read_text())
    recorded = json.loads((PACKAGE.parent / "sample_kernels" / "softmax" / "recorded" / "v3.json").read_text())
    assert recorded["verdicts"]
    db["trials"]["1"]["verdicts"] = recorded["verdicts"]
    (root / ".trialtui" / "trials.json").write_text(json.dumps(db))
    store = Store.open(root, writer=False)
    try:
        found = store.trials()
    finally:
        store.close()
    assert found[0].verdicts and all(isinstance(v, Verdict) for t in found for v in t.verdicts)
    assert all(isinstance(t.decision, Decision) for t in found)
    for trial in found:
        doc = db["trials"][trial.id[1:]]
        assert json.dumps(trial.to_dict()) == json.dumps(doc)
        assert Trial.from_dict(json.loads(json.dumps(trial.to_dict()))) == trial


def test_a_stored_verdict_without_a_key_or_with_one_more_still_reads():
    """What a dict reader's `.get` tolerated, the type tolerates: a missing key reads as "", an unknown one is
    dropped."""
    trial = Trial.from_dict({"id": "t1", "file": "k.py", "sha256": "x", "created": 0.0,
                             "verdicts": [{"id": "spills", "severity": "error", "extra": 1}],
                             "decision": {"action": "fix", "reason": "r"}})
    assert trial.verdicts == [Verdict("spills", "error", "", "", "", "")]
    assert trial.decision == Decision("fix", "r")


def test_no_front_end_reads_a_verdict_or_a_decision_by_key():
    found = []
    for path in FRONT_ENDS:
        tree = ast.parse(path.read_text(), str(path))
        names = verdict_names(tree)
        for node in ast.walk(tree):
            if reads_by_key(node, "decision") or reads_a_name_by_key(node, names):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert FRONT_ENDS and not found, f"a verdict or decision read as a dict: {found}"


def _shape(value: Any) -> Any:
    """Keys and value types, not values: what a reader of the JSON relies on."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value[:1]]
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


@pytest.mark.slow
def test_a_cpu_bench_returns_the_typed_result_in_fa11b31s_shape(tmp_path):
    root = tmp_path / "kb_add"
    shutil.copytree(GOLDEN / "problem", root)
    result = LocalExecutor.bench(load_problem(root), root / "add.py", device="cpu")
    assert isinstance(result, BenchResult) and result.state == "correct", result.message
    now, was = result.to_json(), json.loads((GOLDEN / "bench_correct.json").read_text())
    # phases_s names this run's steps, which the timing work changes; each is a number of seconds
    assert all(isinstance(v, (int, float)) for v in now.pop("phases_s").values())
    was.pop("phases_s")
    # the machine's CUDA_VISIBLE_DEVICES: a string where it is set (make.sh set it empty), else null
    assert all(isinstance(r["env"].pop("visible_devices"), (str, type(None))) for r in (now, was))
    assert _shape(now) == _shape(was)


def test_the_read_only_mapping_view_is_the_json_key_for_key():
    """benches/ read a result by key: the view gives exactly to_json's keys, order and values (a null read
    with the result stays a null), and a key the JSON lacks is missing, not None."""
    data = {"version": 1, "state": "error", "message": "boom", "timing": None, "plugin": {"x": 1}}
    result = BenchResult.from_json(data).without("message")
    assert dict(result) == result.to_json() == {"version": 1, "state": "error", "timing": None, "plugin": {"x": 1}}
    assert list(result) == ["version", "state", "timing", "plugin"] and len(result) == 4
    assert result["timing"] is None and result["plugin"] == {"x": 1} and result.get("message") is None
    with pytest.raises(KeyError):
        result["speedup"]
    assert dict(BenchResult(state="ok", dtype="fp16")) == {"state": "ok", "version": 1, "dtype": "fp16"}


# A remote job's options: built typed here, read typed there, never a dict read by key on either side.

class Recording(RemoteExecutor):
    """A remote executor whose far side records each job and answers that it cannot run it."""

    scheme = "recording"

    def __init__(self) -> None:
        super().__init__(parse_target("recording://x"), ExecutorSettings(), "cpu")
        self.jobs: list[JobData] = []

    def open(self) -> list[Slot]:
        return self.slots

    def describe(self) -> str:
        return "recording x"

    def run(self, job: JobData, *, on_progress: Any, handle: Any) -> dict[str, Any]:
        self.jobs.append(JobData.from_dict(json.loads(json.dumps(job.to_dict()))))  # as the far side reads it
        return {"error": "not here"}


def test_each_remote_job_crosses_with_its_kinds_typed_options(tmp_path):
    assert typing.get_type_hints(JobData)["options"] is JobOptions
    root = shutil.copytree(GOLDEN / "problem", tmp_path / "kb_add")
    problem, kernel = load_problem(root), root / "add.py"
    executor = Recording()
    executor.bench(problem, kernel, seeds=2, env={"CUDA_VISIBLE_DEVICES": "1"}, name="add.py",
                   log_path=problem.state_dir / "logs" / "t1.log")
    executor.validate(problem, kernel, arch=["sm_90"], name="add.py")
    executor.profile(problem, kernel, name="t1")
    executor.analyze(problem, gpu="NVIDIA H200", use_cache=False)
    bench, validate, profile, analyze = (job.options for job in executor.jobs)
    assert bench == BenchOptions(device="cpu", log="logs/t1.log", seeds=2, env={"CUDA_VISIBLE_DEVICES": "1"},
                                 name="add.py", timeout_s=problem.config.bench_timeout_s)
    assert validate == ValidateOptions(arch=["sm_90"], name="add.py", timeout_s=problem.config.validate_timeout_s)
    assert profile == ProfileOptions(name="t1")
    assert analyze == AnalyzeOptions(gpu="NVIDIA H200")
    assert [job.kind for job in executor.jobs] == ["bench", "validate", "profile", "analyze"]
    assert set(bench.to_wire()) == {"device", "log", "seeds", "baseline_us", "use_cache", "cuda_graph", "env",
                                    "name", "timeout_s", "sandbox"}  # model and heldout only when set


@pytest.mark.parametrize("change, why", [
    ({"colour": "red"}, "unknown key(s) in the bench job's options: colour"),
    ({"seeds": "5"}, "bench job's options key 'seeds': '5' is not"),
    ({"env": {"A": 1}}, "bench job's options key 'env'"),
    ({"log": None}, "bench job's options key 'log'"),
    ({"log": "../../.ssh/authorized_keys"}, "bad log path"),
    ({"log": "/etc/passwd"}, "bad log path"),
])
def test_a_job_whose_options_do_not_fit_their_type_is_refused_by_name(change, why):
    job = JobData("kb_add", BenchOptions(device="cuda", log="logs/t1.log", timeout_s=60.0)).to_dict()
    with pytest.raises(ValueError, match=re.escape(why)):
        JobData.from_dict({**job, "options": {**job["options"], **change}})
    del job["options"]["log"]
    with pytest.raises(ValueError, match="the bench job's options lacks log"):
        JobData.from_dict(job)


def options_names(tree: ast.AST) -> set[str]:
    """Names given a job's options (`o = job.options`)."""
    return {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Attribute) and node.value.attr == "options"
            for target in node.targets if isinstance(target, ast.Name)}


def test_no_executor_reads_a_jobs_options_by_key():
    found = []
    for path in sorted((PACKAGE / "engine" / "executors").glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        names = options_names(tree)
        for node in ast.walk(tree):
            if reads_by_key(node, "options") or reads_a_name_by_key(node, names):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, f"a job's options read as a dict: {found}"


EXECUTORS = [Executor, LocalExecutor, RemoteExecutor, SshExecutor, RayExecutor]


@pytest.mark.parametrize("method", ["bench", "validate", "profile", "analyze"])
def test_every_executors_job_methods_name_their_options(method):
    """No `**options` handed up a layer: the seam declares each keyword, its docstring says what each is,
    and every executor takes at least those, with the same defaults."""
    declared = {p.name: p for p in inspect.signature(getattr(Executor, method)).parameters.values()
                if p.kind is inspect.Parameter.KEYWORD_ONLY}
    doc = getattr(Executor, method).__doc__
    assert declared and all(f"{name}:" in doc for name in declared), doc
    for kind in EXECUTORS:
        params = inspect.signature(getattr(kind, method)).parameters
        assert not any(p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in params.values()), kind.__name__
        for name, p in declared.items():
            assert name in params and params[name].kind is p.KEYWORD_ONLY, (kind.__name__, name)
            assert params[name].default == p.default, (kind.__name__, name)
