"""A new user's first hour with the CLI (an audit's findings): counts below their minimum refused, --json
that stays JSON when a path is wrong, GPU MODE folders used where they are, hints that survive a copy
into a shell, and `trials` that refuses a directory that is no problem."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from types import SimpleNamespace

import click
import pytest
from click.testing import CliRunner

from conftest import KB_GOOD, as_result, write_problem

from trialtui.cli import cli
from trialtui.cli.demo import demo
from trialtui.cli.mcp import mcp
from trialtui.cli.refusal import JsonCommand
from trialtui.cli.serve import serve
from trialtui.cli.trials import trials
from trialtui.core.problem_dir import load_problem
from trialtui.core.store import Store

PMPP = Path(__file__).parent / "fixtures" / "gpumode" / "problems" / "pmpp_v2"
CPU_CORRECT = {"version": 1, "state": "correct", "correctness": {"passed": True, "seeds": 1},
               "timing": {"median_us": 900.0, "label": "CPU, interpreted — not a GPU timing"},
               "speedup": None, "flags": [], "env": {"device": "cpu"}}

for command in (trials, demo, serve, mcp):  # as main() registers them
    cli.add_command(command)


def every_command(group: click.Group = cli, path: tuple[str, ...] = ()):
    for name, command in group.commands.items():
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from every_command(command, (*path, name))


def one_json(output: str) -> dict:
    value = json.loads(output)
    assert isinstance(value, dict)
    return value


@pytest.fixture
def no_bench(monkeypatch):
    """A bench that must not run: a value the command refuses never reaches it."""
    def refuse(*args, **kwargs):
        raise AssertionError("bench ran")
    monkeypatch.setattr("trialtui.engine.bench.bench_file", refuse)


def test_every_number_option_has_a_lower_bound():
    """`--seeds -3` passed over no seeds and `--seeds 0` ran the default 5: a count has a minimum."""
    unbounded = [(path, p.name) for path, command in every_command() for p in command.params
                 if p.type in (click.INT, click.FLOAT)]
    assert unbounded == []


@pytest.mark.parametrize("option, value", [("--seeds", "-3"), ("--seeds", "0"), ("--baseline-us", "0"),
                                           ("--baseline-us", "-1.5")])
def test_bench_refuses_a_count_below_its_minimum(tmp_path, no_bench, option, value):
    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})
    out = CliRunner().invoke(cli, ["bench", str(root / "kernel.py"), option, value])
    assert out.exit_code == 2 and f"Invalid value for '{option}'" in out.output and "not in the range" in out.output
    under_json = CliRunner().invoke(cli, ["bench", str(root / "kernel.py"), option, value, "--json"])
    assert under_json.exit_code == 2 and "not in the range" in one_json(under_json.output)["message"]


@pytest.mark.parametrize("args", [["bench", "nonexist.py"], ["validate", "nonexist.py"], ["profile", "nonexist.py"],
                                  ["analyze", "nonexist"], ["bench"], ["trials", "status", "--dir", "nonexist"],
                                  ["trials", "show", "t1", "--dir", "nonexist"], ["trials", "import", "--format", "hf",
                                                                                  "nonexist"]])
def test_a_missing_path_under_json_is_one_json_object_with_exit_2(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(cli, [*args, "--json"])
    body = one_json(out.output)
    assert out.exit_code == 2 and body["state"] == "refused" and body["exit_code"] == 2
    assert "does not exist" in body["message"] or "Missing argument" in body["message"]
    plain = CliRunner().invoke(cli, args)  # without --json, click's usage error as before
    assert plain.exit_code == 2 and "Usage: " in plain.output


def test_every_command_with_json_keeps_usage_errors_json():
    loose = [path for path, command in every_command() if any(p.name == "as_json" for p in command.params)
             and not isinstance(command, JsonCommand)]
    assert loose == []


def gpumode_task(tmp_path: Path, name: str = "vectoradd_py") -> Path:
    """A GPU MODE task folder beside the utils.py its task.yml names (`../utils.py`)."""
    shutil.copyfile(PMPP / "utils.py", tmp_path / "utils.py")
    return Path(shutil.copytree(PMPP / name, tmp_path / name, ignore=shutil.ignore_patterns("solutions")))


def test_init_from_a_gpumode_reference_says_its_folder_is_the_problem(tmp_path):
    (tmp_path / "my tasks").mkdir()
    task = gpumode_task(tmp_path / "my tasks")
    out = CliRunner().invoke(cli, ["init", str(tmp_path / "new"), "--from", str(task / "reference.py")])
    assert out.exit_code == 2
    assert "is a GPU MODE problem file, which `init --from` cannot wrap" in out.output
    assert f"its folder is a problem directory already: `trialtui {shlex.quote(str(task))}`" in out.output
    assert f"`trialtui bench {shlex.quote(str(task / 'submission.py'))}` checks one once" in out.output
    assert not (tmp_path / "new").exists()


def test_init_from_a_gpumode_reference_whose_folder_is_incomplete_says_what_it_lacks(tmp_path):
    task = Path(shutil.copytree(PMPP / "vectoradd_py", tmp_path / "vectoradd_py"))
    out = CliRunner().invoke(cli, ["init", str(tmp_path / "new"), "--from", str(task / "reference.py")])
    assert out.exit_code == 2 and "which is not a problem directory yet: task.yml lists ../utils.py" in out.output


def test_utils_beside_the_reference_stands_for_the_path_task_yml_names(tmp_path):
    """A task folder copied alone with its ../utils.py put beside the reference: that file is the support module
    (copied beside the candidates and imported from its known-good text), not a candidate."""
    task = Path(shutil.copytree(PMPP / "vectoradd_py", tmp_path / "vectoradd_py", ignore=shutil.ignore_patterns("solutions")))
    shutil.copyfile(PMPP / "utils.py", task / "utils.py")  # beside the reference, not at ../utils.py
    problem = load_problem(task)
    assert task / "utils.py" in problem.support_files and task / "utils.py" not in problem.candidates()
    out = CliRunner().invoke(cli, ["validate", str(task / "submission.py")])
    assert out.exit_code == 0, out.output


def test_printed_commands_quote_paths_with_spaces(tmp_path, monkeypatch):
    root = write_problem(tmp_path / "with space" / "my prob", files={"ok kernel.py": KB_GOOD})
    monkeypatch.setattr("trialtui.engine.bench.bench_file", lambda *a, **k: as_result({"state": "correct"}))
    bench = CliRunner().invoke(cli, ["bench", str(root / "ok kernel.py")])
    assert bench.exit_code == 0 and f"`trialtui {shlex.quote(str(root))}` records every save" in bench.output
    made = tmp_path / "with space" / "my relu"
    init = CliRunner().invoke(cli, ["init", str(made)])
    assert init.exit_code == 0 and f"next: cd {shlex.quote(str(made))} && trialtui" in init.output
    kernels = tmp_path / "hf out"
    (kernels / "my kernel").mkdir(parents=True)
    (kernels / "my kernel" / "state.json").write_text("{}")
    imported = CliRunner().invoke(cli, ["trials", "import", "--format", "hf", str(kernels), "--dir", str(root)])
    assert f"pass one of: {shlex.quote(str(kernels / 'my kernel'))}" in imported.output


def test_the_demos_next_commands_quote_paths_with_spaces(tmp_path, monkeypatch, capsys):
    from trialtui.cli import demo as cli_demo

    async def played(*args, **kwargs):
        return []

    async def agent(*args, **kwargs):
        return 0

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("trialtui.agent.script.play", agent)
    plan = SimpleNamespace(root=tmp_path / "demo dir" / "relu", story=SimpleNamespace(problem="relu"), recordings=None)
    fake = SimpleNamespace(describe_mode=lambda mode: mode, play_all=played)
    cli_demo._headless(fake, [plan], "replay", tmp_path / "demo dir", speed=0, finalize=False, record_dir=None,
                       jobs=1, gpus=["0"], progress=False)
    cli_demo._agent(fake, plan, "replay")
    said = capsys.readouterr().out
    assert "next: trialtui trials status --dir 'demo dir/relu'" in said and "      trialtui 'demo dir/relu'" in said
    assert "watch it live from another terminal: trialtui 'demo dir/relu'" in said


@pytest.mark.parametrize("args", [["status"], ["best"], ["show", "t1"], ["diff", "t1"], ["export", "--format", "md"],
                                  ["note", "t1", "x"], ["branch", "t1"], ["rerun", "t1"], ["finalize"], ["doctor"],
                                  ["import", "--format", "hf", "."]])
def test_trials_refuses_a_directory_that_is_no_problem_as_watch_does(tmp_path, args):
    stray = tmp_path / "main"
    stray.mkdir()
    out = CliRunner().invoke(cli, ["trials", *args, "--dir", str(stray)])
    assert out.exit_code == 2, out.output
    assert f"trialtui: no reference.py in {stray}" in out.output and "Trial tree" not in out.output
    assert not (stray / ".trialtui").exists()
    (stray / "k.py").write_text("x = 1\n")
    bench = CliRunner().invoke(cli, ["bench", str(stray / "k.py")])  # the refusal of bench, watch and the TUI
    assert out.output == bench.output


def test_trials_status_under_json_refuses_a_directory_that_is_no_problem(tmp_path):
    out = CliRunner().invoke(cli, ["trials", "status", str(tmp_path), "--json"])
    assert out.exit_code == 2 and one_json(out.output)["message"].startswith(f"no reference.py in {tmp_path}")


def test_trials_status_still_reads_a_problem_whose_reference_no_longer_loads(tmp_path):
    root = write_problem(tmp_path / "prob", reference="def broken(:\n", files={"kernel.py": KB_GOOD})
    out = CliRunner().invoke(cli, ["trials", "status", "--dir", str(root)])
    assert out.exit_code == 0 and "Trial tree: prob" in out.output


def test_export_md_says_a_cpu_only_trial_was_not_timed(tmp_path):
    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})
    with Store.open(root, writer=True) as store:
        for i in range(2):
            store.record("kernel.py", f"# v{i}\n")
            store.update(f"t{i + 1}", state="correct", result=as_result(CPU_CORRECT))
    out = CliRunner().invoke(cli, ["trials", "export", "--format", "md", "--dir", str(root)])
    assert out.exit_code == 0
    rows = [line for line in out.output.splitlines() if line.startswith(("| t1 ", "| t2 "))]
    assert len(rows) == 2 and all("| correct on CPU, not timed |" in row for row in rows)


def test_the_demo_says_a_finalized_kernel_that_fails_held_out_cases_is_no_clean_win(tmp_path):
    """Read from the report card finalize writes (its generalization as core/generalization.py gives it: `passed`
    is a count there, `fails` the verdict); the matmul story's v9 fails 6 of 10 held-out cases."""
    import json

    from trialtui.cli.demo import unclean
    from trialtui.core.generalization import CaseOutcome, Generalization, Outcome

    def card(*outcomes: Outcome) -> str:
        case = SimpleNamespace(label="in_features=211", to_dict=lambda: {"sizes": {"in_features": 211}})
        held = Generalization([CaseOutcome(case, o, "TMA needs 16-byte aligned rows" if o is Outcome.FAILED else "")
                               for o in outcomes])
        return json.dumps({"generalizes": held.line(), "generalization": held.to_dict()})

    report = tmp_path / "final" / "REPORT.md"
    report.parent.mkdir()
    (report.parent / "report.json").write_text(card(*[Outcome.PASSED] * 4, *[Outcome.FAILED] * 6))
    assert unclean(report) == ("generalizes: 4 of 10 held-out cases; fails at in_features=211 (TMA needs 16-byte "
                               "aligned rows)")
    (report.parent / "report.json").write_text(card(*[Outcome.PASSED] * 8))
    assert unclean(report) is None and unclean(tmp_path / "nowhere" / "REPORT.md") is None


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="a machine without CUDA is the case")
def test_a_gpu_bench_asked_for_where_there_is_no_cuda_is_not_labelled_a_cpu_run(tmp_path):
    """`bench --device cuda` on a CPU-only machine fails, and its header says no GPU was reached, not "CPU (Triton
    interpreter)" beside a number-less verdict, as if it had run there."""
    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})
    out = CliRunner().invoke(cli, ["bench", str(root / "kernel.py"), "--device", "cuda"])
    assert out.exit_code == 2 and out.output.startswith("ERROR  [no GPU reached (--device cuda) · "), out.output
    assert "CUDA is not available" in out.output and "Triton interpreter" not in out.output
    answer = json.loads(CliRunner().invoke(cli, ["bench", str(root / "kernel.py"), "--device", "cuda", "--json"]).output)
    assert answer["provenance"]["gpu"] is None  # was "cuda": no GPU measured anything


def test_a_mistyped_command_is_named_as_one_not_as_a_missing_directory(tmp_path, monkeypatch):
    """`trialtui bnch k.py` was `open bnch k.py`: "Directory 'bnch' does not exist". A word that names no path
    but is close to a command gets click's suggestion; an existing directory of that name still opens."""
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(cli, ["bnch", "addrelu/kernel.py"])
    assert out.exit_code == 2 and "No such command 'bnch'. Did you mean 'bench'?" in out.output
    assert "Directory" not in out.output
    elsewhere = CliRunner().invoke(cli, ["softmax"])  # like no command: a directory meant, and missing
    assert elsewhere.exit_code == 2 and "Directory 'softmax' does not exist" in elsewhere.output
    (tmp_path / "bnch").mkdir()
    there = CliRunner().invoke(cli, ["bnch"])
    assert there.exit_code == 2 and f"no reference.py in {tmp_path / 'bnch'}" in there.output


@pytest.mark.parametrize("command", ["analyze", "profile"])
def test_an_unknown_gpu_name_is_refused_with_the_known_ones(tmp_path, monkeypatch, command):
    """`analyze --gpu foo` dropped the floor line and `profile --gpu foo` printed "foo's roofline" with none."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no GPU calibrated here
    monkeypatch.setattr("trialtui.engine.profile.analyze", lambda *a, **k: pytest.fail("analyzed"))
    monkeypatch.setattr("trialtui.engine.profile.profile_candidate", lambda *a, **k: pytest.fail("profiled"))
    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})
    where = str(root if command == "analyze" else root / "kernel.py")
    out = CliRunner().invoke(cli, [command, where, "--gpu", "foo"])
    assert out.exit_code == 2 and "Invalid value for '--gpu': no ceilings for 'foo'; known GPUs: " in out.output
    assert "NVIDIA H100 SXM" in out.output and "NVIDIA GeForce RTX 4090" in out.output
    under_json = CliRunner().invoke(cli, [command, where, "--gpu", "foo", "--json"])
    assert under_json.exit_code == 2 and "no ceilings for 'foo'" in one_json(under_json.output)["message"]
    from trialtui.cli.commands import known_gpu

    assert [known_gpu(None, None, name) for name in ("H100", "RTX 4090")] == ["H100", "RTX 4090"]


def test_validate_names_the_log_its_hint_points_to(tmp_path):
    """A candidate that raises at import: "the log has the traceback" came with no path but under --json."""
    root = write_problem(tmp_path / "prob", files={"raises.py": KB_GOOD + "\nraise RuntimeError('boom at import')\n"})
    out = CliRunner().invoke(cli, ["validate", str(root / "raises.py")])
    log = root / ".trialtui" / "logs" / "validate-raises.log"
    assert out.exit_code == 1 and "the log has the traceback" in out.output
    assert f"  log: {log}\n" in out.output and "boom at import" in log.read_text()


def test_readme_says_what_a_candidate_may_import_where_it_describes_one():
    """The static check refuses any import but these: a new user reads so before writing a candidate."""
    from trialtui.core.static_checks import ALLOWED_PACKAGES

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    section = readme[readme.index("## The problem directory"):]
    section = section[:section.index("\n## ", 1)]
    said = "may import only the standard library, torch, triton and numpy"
    assert said in " ".join(section.split()) and sorted(ALLOWED_PACKAGES) == ["numpy", "torch", "triton"]
