"""The executor seam without a network: targets, the job as data, where the far side may write, what comes
back, and how a laptop install without torch says that jobs need the runner."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from trialtui.core import plugins
from trialtui.core.config import ConfigError, ExecutorSettings, parse_config
from trialtui.core.executor import ExecutorError, JobData, Slot, model_speedups, parse_target, ran_on
from trialtui.core.install import install_command
from trialtui.core.job_options import BenchOptions
from trialtui.core.problem_dir import load_problem
from trialtui.engine.executors import executor_for
from trialtui.engine.executors.host import Workspace
from trialtui.engine.executors.local import LocalExecutor
from trialtui.engine.executors.remote import RemoteExecutor, pack

from conftest import KB_GOOD, as_result, write_problem

BENCH = BenchOptions(device="cpu", log="logs/x.log", timeout_s=60.0)


@pytest.mark.parametrize("text, scheme, user, host, port", [
    (None, "local", None, None, None),
    ("local", "local", None, None, None),
    ("ssh://alice@gpu-box", "ssh", "alice", "gpu-box", None),
    ("ssh://alice@10.0.0.5:2222", "ssh", "alice", "10.0.0.5", 2222),
    ("ssh://gpu-box", "ssh", None, "gpu-box", None),
    ("ray://head:10001", "ray", None, None, None),
])
def test_executor_targets_parse(text, scheme, user, host, port):
    target = parse_target(text)
    assert (target.scheme, target.user, target.host, target.port) == (scheme, user, host, port)


@pytest.mark.parametrize("text", ["gpu-box", "ssh://", "ssh://alice:secret@box", "ssh://box/path", "ssh://box:99999", "ray://"])
def test_a_bad_target_is_refused_saying_the_forms(text):
    with pytest.raises(ExecutorError):
        parse_target(text)


def test_an_unknown_scheme_lists_the_known_executors():
    with pytest.raises(ExecutorError, match="known: local, ray, ssh"):
        executor_for("modal://x")


def test_a_third_party_executor_is_found_by_its_scheme(monkeypatch):
    class Elsewhere(LocalExecutor):
        scheme = "elsewhere"

        def describe(self) -> str:
            return "elsewhere"

    monkeypatch.setitem(plugins._builtin["trialtui.executors"], "elsewhere", Elsewhere)
    assert isinstance(executor_for("elsewhere://pool"), Elsewhere)


def test_executor_table_in_trialtui_toml():
    cfg = parse_config({"executor": {"url": "ssh://a@b", "python": "/opt/venv/bin/python", "models": "every"}})
    assert cfg.executor == ExecutorSettings(url="ssh://a@b", python="/opt/venv/bin/python", models="every")
    with pytest.raises(ConfigError, match="unknown key"):
        parse_config({"executor": {"host": "b"}})
    with pytest.raises(ConfigError, match="models"):
        parse_config({"executor": {"models": "all"}})


def test_a_job_round_trips_as_json_and_bad_paths_are_refused():
    job = JobData("prob", BenchOptions(device="cpu", log="logs/x.log", timeout_s=60.0, seeds=3),
                  {"reference.py": b"x = 1\n", "../utils.py": b"\x00\xff"}, None, {"baselines.json": b"{}"})
    again = JobData.from_dict(json.loads(json.dumps(job.to_dict())))
    assert again == job and again.digest() == job.digest()
    for bad in ("/etc/passwd", "a/../../b", "", "a//b", "./a"):
        data = {**job.to_dict(), "files": {bad: ""}}
        with pytest.raises(ValueError, match="bad path"):
            JobData.from_dict(data)
    with pytest.raises(ValueError, match="problem name"):
        JobData.from_dict({**job.to_dict(), "problem": ".."})
    with pytest.raises(ValueError, match="version"):
        JobData.from_dict({**job.to_dict(), "version": 99})


def test_the_far_side_lays_out_a_problem_with_files_beside_it(tmp_path):
    """A GPU MODE task keeps ../utils.py next to the problem: it travels and lands beside the root there."""
    root = write_problem(tmp_path / "home" / "prob", files={"kernel.py": KB_GOOD, "notes.txt": "n"})
    (tmp_path / "home" / "utils.py").write_text("HELPER = 1\n")
    problem = load_problem(root)
    problem.support_files.append((tmp_path / "home" / "utils.py").resolve())
    job = pack(problem, root / "kernel.py", BENCH)
    assert {"reference.py", "notes.txt", "kernel.py", "../utils.py"} <= set(job.files)
    there, candidate = Workspace(tmp_path / "far").materialize(JobData.from_dict(job.to_dict()))
    assert candidate == there.root / "kernel.py" and candidate.read_text() == KB_GOOD
    assert (there.root.parent / "utils.py").read_text() == "HELPER = 1\n"
    assert (tmp_path / "far") in there.root.parents


def test_other_candidates_stay_home(tmp_path):
    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD, "other.py": KB_GOOD + "\n# other\n"})
    job = pack(load_problem(root), root / "kernel.py", BENCH)
    assert "other.py" not in job.files and "kernel.py" in job.files


class Canned(RemoteExecutor):
    """A remote executor whose far side answers with a canned outcome."""

    scheme = "canned"

    def __init__(self, outcome):
        super().__init__(parse_target("canned://x"), ExecutorSettings(), "cpu")
        self.outcome = outcome

    def open(self):
        self.slots = [Slot("x:cpu", None)]
        return self.slots

    def describe(self):
        return "canned x"

    def run(self, job, *, on_progress, handle):
        return self.outcome


def test_what_comes_back_lands_only_in_logs_and_profiles_with_paths_made_local(tmp_path):
    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})
    problem = load_problem(root)
    from trialtui.core.executor import encode

    body = {"available": True, "source": "ncu", "report": "/far/prob/.trialtui/profiles/t1.ncu-rep"}
    outcome = {"result": body, "root": "/far/prob", "files": {
        "profiles/t1.ncu-rep": encode(b"report"), "logs/profile-t1-ncu.log": encode(b"log"),
        "trials.json": encode(b"{}"), "../../evil.py": encode(b"x"), "snapshots/x.py": encode(b"x")}}
    got = Canned(outcome).profile(problem, root / "kernel.py", name="t1")
    state = problem.state_dir
    assert got["report"] == str(root / ".trialtui" / "profiles" / "t1.ncu-rep")
    assert (state / "profiles" / "t1.ncu-rep").read_bytes() == b"report"
    assert (state / "logs" / "profile-t1-ncu.log").read_bytes() == b"log"
    assert not (state / "trials.json").exists() and not (state / "snapshots").exists()
    assert not (tmp_path / "evil.py").exists() and not (root.parent.parent / "evil.py").exists()


def test_a_malformed_remote_result_is_an_error_naming_the_executor(tmp_path):
    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})
    result = Canned({"result": {"version": 1, "state": "correct", "speedup": "fast"}, "root": "/far", "files": {}}).bench(
        load_problem(root), root / "kernel.py").to_json()
    assert result["state"] == "error" and "malformed result from canned x" in result["message"]


def test_where_a_trial_ran_reads_as_host_gpu_and_executor():
    assert ran_on(as_result({"state": "correct", **{"env": {"device": "cuda", "gpu": "NVIDIA H200"}}})) == ""  # this machine's: nothing to add
    assert ran_on(as_result({"state": "correct", **{"env": {"device": "cuda", "gpu": "NVIDIA H200", "host": "box", "executor": "ssh://a@box"}}})) == \
        "box · NVIDIA H200 (ssh://a@box)"
    result = {"models": {"H200": {"state": "correct", "speedup": {"eager": 1.31}},
                         "A100": {"state": "error", "speedup": None}}}
    assert model_speedups(as_result({"state": "correct", **result}), "eager") == "H200 1.31× · A100 error"


LAPTOP = textwrap.dedent("""
    import asyncio, sys
    for name in ("torch", "triton", "numpy"):
        sys.modules[name] = None  # a laptop install: none of them can be imported
    from pathlib import Path
    from trialtui.core.problem_dir import load_problem
    from trialtui.tui.app import make_app

    async def main():
        app = make_app(load_problem(Path(sys.argv[1])))
        async with app.run_test(size=(140, 40)) as pilot:
            for _ in range(600):
                await pilot.pause(0.1)
                trial = app.trials.get("t2")
                if trial is not None and trial.state_enum.is_final and trial.decision is not None:
                    break
            t2 = app.trials["t2"]
            print("TREE", app.tree.plain_lines())
            print("T2", t2.state, t2.result.message)
            print("DECISION", t2.decision.action, t2.decision.reason)
            print("FINDINGS", [e["code"] for e in t2.validation["errors"]])
            print("HEADER", app._where()[0])
        print("LOADED", [n for n in ("torch", "triton", "numpy") if sys.modules.get(n) is not None])

    asyncio.run(main())
""")


@pytest.mark.slow
def test_a_laptop_install_opens_the_tui_reads_the_tree_and_says_why_jobs_do_not_run(tmp_path):
    from trialtui.core.store import Store

    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})
    store = Store.open(root, writer=True)
    _, trial = store.record("kernel.py", KB_GOOD)
    store.update(trial.id, state="correct", result=as_result({"state": "correct", "env": {"device": "cpu"}}))
    store.close()
    (root / "kernel.py").write_text(KB_GOOD + "\n# a save on the laptop\n")
    out = subprocess.run([sys.executable, "-c", LAPTOP, str(root)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "LOADED []" in out.stdout
    assert "t1" in out.stdout.split("TREE", 1)[1].split("\n", 1)[0]
    assert "T2 error jobs cannot run on this machine: torch and triton and numpy are not installed here" in out.stdout
    assert f"{install_command('runner')}" in out.stdout and "--executor ssh://" in out.stdout
    # the machine's state, not the kernel's: nothing to fix, the whole message, an honest header
    decision = out.stdout.split("DECISION ", 1)[1].split("\n", 1)[0]
    assert decision.startswith("install Cannot run here: t2 was not judged") and "crashed" not in decision
    assert "torch and triton and numpy are not installed here;" in decision
    assert "nothing is wrong with the candidate" in decision and "re-run it [r]" in decision
    assert "FINDINGS ['needs-runner']" in out.stdout
    assert f"HEADER CPU · jobs cannot run: no runner ({install_command('runner')})" in out.stdout


def test_validate_on_a_laptop_says_the_machine_cannot_run_jobs_not_that_the_candidate_crashed(tmp_path):
    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})
    code = ("import sys\nfor name in ('torch', 'triton', 'numpy'):\n    sys.modules[name] = None\n"
            "sys.argv = ['trialtui', 'validate', sys.argv[1]]\nfrom trialtui.cli import main\nmain()\n")
    out = subprocess.run([sys.executable, "-c", code, str(root / "kernel.py")], capture_output=True, text=True,
                         timeout=300)
    assert out.stdout.startswith("kernel.py: NOT CHECKED: this machine cannot run jobs"), out.stdout + out.stderr
    assert "[needs-runner]" in out.stdout and "native code" not in out.stdout


def test_remote_baselines_are_cached_here_per_gpu_model(tmp_path):
    from trialtui.core.baselines import BaselineCache
    from trialtui.engine.bench import baseline_key

    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})
    problem = load_problem(root)
    for gpu, eager_us in (("NVIDIA H200", 100.0), ("NVIDIA A100", 180.0)):
        result = {"version": 1, "state": "correct", "correctness": {"passed": True}, "timing": {"median_us": 80.0},
                  "baselines": {"eager": {"median_us": eager_us}}, "speedup": {"eager": eager_us / 80.0}, "flags": [],
                  "env": {"device": "cuda", "gpu": gpu, "host": "box"}}
        Canned({"result": result, "root": "/far", "files": {}}).bench(problem, root / "kernel.py")
    cache = BaselineCache(problem.state_dir)
    entries = cache._load().values()
    assert sorted((e["env"]["gpu"], e["stats"]["median_us"]) for e in entries) == [("NVIDIA A100", 180.0), ("NVIDIA H200", 100.0)]
    assert cache.lookup(baseline_key(problem, problem.bench_cases[0], False))  # what the next job shows meanwhile


def test_install_commands_name_this_checkout_and_work_when_pasted(tmp_path):
    """trialtui is not on PyPI: `pip install 'trialtui[runner]'` finds nothing. The command names the checkout this
    process runs from (pip takes a path with extras), and on another host says to run it in a checkout there."""
    from trialtui.core.install import CHECKOUT

    assert install_command("runner") == f"pip install -e '{CHECKOUT}[runner]'"
    assert (CHECKOUT / "pyproject.toml").is_file()
    assert install_command("runner", here=False) == "pip install -e '.[runner]' in a trialtui checkout"
