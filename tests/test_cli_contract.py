"""The CLI contract (issue 13.9): bench's exit status is its verdict, and every command with --json
prints exactly one JSON object, also when it refuses; the CPU-only and flagged trees explained."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import as_result

from trialtui.cli import cli
from trialtui.cli.trials import trials
from trialtui.core.store import Store
from trialtui.core.profile_report import ProfileReport

PROBLEMS = Path(__file__).parent / "problems"
SIDE_STREAM = json.loads((Path(__file__).parent / "fixtures" / "gpu" / "bad_side_stream.json").read_text())
CPU_CORRECT = {"version": 1, "state": "correct", "correctness": {"passed": True, "seeds": 1},
               "timing": {"median_us": 900.0, "label": "CPU, interpreted — not a GPU timing"},
               "speedup": None, "flags": [], "env": {"device": "cpu"}}


@pytest.fixture
def kb(tmp_path) -> Path:
    return Path(shutil.copytree(PROBLEMS / "kb_add", tmp_path / "kb_add"))


def one_json(output: str) -> dict:
    """The whole of stdout is one JSON object."""
    value = json.loads(output)
    assert isinstance(value, dict)
    return value


@pytest.mark.parametrize("state, code", [("correct", 0), ("incorrect", 1), ("error", 2), ("timeout", 2)])
def test_bench_exit_status_is_its_verdict(kb, monkeypatch, state, code):
    monkeypatch.setattr("trialtui.engine.bench.bench_file", lambda *a, **k: as_result({"state": state, "message": "m"}))
    run = CliRunner().invoke(cli, ["bench", str(kb / "add.py"), "--json"])
    assert run.exit_code == code and one_json(run.output)["state"] == state


def test_bench_on_several_gpus_exits_with_the_worst_verdict(kb, monkeypatch):
    states = iter(["correct", "incorrect"])
    monkeypatch.setattr("trialtui.engine.bench.bench_file", lambda *a, **k: as_result({"state": next(states)}))
    monkeypatch.setattr("trialtui.engine.lanes.visible_gpus", lambda: ["0", "1"])
    run = CliRunner().invoke(cli, ["bench", str(kb / "add.py"), "--json", "--all-gpus"])
    assert run.exit_code == 1 and set(one_json(run.output)) == {"gpu0", "gpu1"}


def test_bench_help_documents_the_exit_status():
    text = " ".join(CliRunner().invoke(cli, ["bench", "--help"]).output.split())
    assert "Exit status: 0 correct, 1 incorrect, 2 error, timeout or invalid" in text


def test_readme_command_table_names_init_open_and_the_exit_status():
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    table = readme[readme.index("## Commands"):readme.index("## Keys")]
    assert "`trialtui init DIR" in table and "`trialtui open [DIR]" in table
    assert "exit 0 correct, 1 incorrect, 2 error, timeout or invalid" in table


def refusals(tmp_path: Path) -> list[tuple[list[str], int, str]]:
    """(arguments, exit status, fragment of the message) for each command's refusal path."""
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "k.py").write_text("x = 1\n")
    empty = tmp_path / "kb_add"
    return [
        (["bench", str(stray / "k.py"), "--json"], 2, "reference.py"),
        (["validate", str(stray / "k.py"), "--json"], 2, "reference.py"),
        (["analyze", str(stray), "--json"], 2, "reference.py"),
        (["profile", str(stray / "k.py"), "--json"], 2, "reference.py"),
        (["watch", str(stray), "--headless", "--json", "--once"], 2, "no problem in"),
        (["trials", "best", "--json", "--dir", str(empty)], 1, ""),
        (["trials", "finalize", "--json", "--dir", str(empty)], 1, "nothing to finalize: no correct trial yet"),
        (["trials", "show", "t9", "--json", "--dir", str(empty)], 1, "t9"),
        (["trials", "branch", "t9", "--json", "--dir", str(empty)], 1, "t9"),
        (["trials", "import", "--format", "hf", str(stray), "--json", "--dir", str(empty)], 1, "state.json"),
    ]


def test_every_json_command_prints_one_json_object_when_it_refuses(kb, tmp_path):
    from trialtui.cli.demo import demo

    cli.add_command(trials)
    cli.add_command(demo)
    for args, code, fragment in refusals(tmp_path):
        run = CliRunner().invoke(cli, args)
        assert run.exit_code == code, (args, run.output)
        body = one_json(run.output)
        if args[:2] == ["trials", "best"]:
            assert body == {"best": None, "reason": "no correct trial yet"}
            continue
        assert body["state"] == "refused" and fragment in body["message"], (args, body)


def test_calibrate_refuses_without_a_gpu_as_one_json_object(monkeypatch):
    monkeypatch.setattr("trialtui.cli.commands.detect", lambda: "cpu")
    run = CliRunner().invoke(cli, ["calibrate", "--json"])
    assert run.exit_code == 1 and "has none" in one_json(run.output)["message"]
    plain = CliRunner().invoke(cli, ["calibrate"])
    assert plain.exit_code == 1 and "trialtui: calibrate measures a GPU" in plain.output


def test_profile_of_an_incorrect_kernel_refuses_as_one_json_object(kb, monkeypatch):
    monkeypatch.setattr("trialtui.engine.profile.profile_candidate",
                        lambda *a, **k: ProfileReport(state="incorrect", message="0.4% of values differ", env=None))
    run = CliRunner().invoke(cli, ["profile", str(kb / "add.py"), "--json"])
    assert run.exit_code == 1 and "only a correct kernel is profiled" in one_json(run.output)["message"]


def test_an_unknown_architecture_is_named_with_the_known_ones(kb):
    run = CliRunner().invoke(cli, ["validate", str(kb / "add.py"), "--json", "--arch", "sm_999", "--no-compile"])
    message = one_json(run.output)["errors"][0]["message"]
    assert run.exit_code == 1 and message.startswith("unknown architecture sm_999 (known: ") and "sm_90" in message


def test_a_cpu_only_tree_explains_that_best_and_finalize_need_a_gpu_timing(kb):
    with Store.open(kb, writer=True) as store:
        for i in range(3):
            store.record("add.py", f"# v{i}\n")
            store.update(f"t{i + 1}", state="correct", result=as_result(CPU_CORRECT))
    status = CliRunner().invoke(trials, ["status", "--dir", str(kb)]).output
    assert "Budget: 0/30 GPU trials" in status
    assert "Best: none — no trial can be best: t1, t2, t3 are correct on CPU, not timed" in status
    assert "[+] t1 add.py: correct on CPU, not timed" in status
    best = CliRunner().invoke(trials, ["best", "--dir", str(kb)])
    assert best.exit_code == 1 and "a best needs a GPU timing" in best.output
    final = CliRunner().invoke(trials, ["finalize", "--json", "--dir", str(kb)])
    assert final.exit_code == 1 and "t1, t2, t3 are correct on CPU" in one_json(final.output)["message"]
    rows = one_json(CliRunner().invoke(trials, ["status", "--json", "--dir", str(kb)]).output)
    assert rows["budget"]["used"] == 0 and all(r["correct_on_cpu"] for r in rows["trials"])


def test_a_flagged_trial_is_shown_as_never_best_and_is_never_finalized(kb):
    with Store.open(kb, writer=True) as store:
        store.record("add.py", "# flagged\n")
        store.update("t1", state="correct", result=as_result(SIDE_STREAM))
    status = CliRunner().invoke(trials, ["status", "--dir", str(kb)]).output
    assert "Best: none — no trial can be best: t1 is flagged (side-stream" in status
    assert "FLAGGED, never best: side-stream, suspicious" in status
    show = CliRunner().invoke(trials, ["show", "t1", "--dir", str(kb)]).output
    assert "never best: side-stream: GPU kernels ran 3747.1 µs" in show
    final = CliRunner().invoke(trials, ["finalize", "t1", "--dir", str(kb)])
    assert final.exit_code == 1 and "t1 is never finalized: side-stream" in final.output


@pytest.mark.slow
def test_profile_without_a_gpu_gives_labelled_analytic_verdicts(kb, monkeypatch):
    monkeypatch.setattr("trialtui.engine.profile.detect_device", lambda: "cpu")
    run = CliRunner().invoke(cli, ["profile", str(kb / "add.py")])
    assert run.exit_code == 0, run.output
    assert run.output.startswith("ANALYTIC VERDICTS for NVIDIA H200 — analytic, no GPU on this machine")
    assert "roofline: memory-bound at bench sizes" in run.output
    body = one_json(CliRunner().invoke(cli, ["profile", str(kb / "add.py"), "--json"]).output)
    assert body["analytic"] is True and body["median_us"] is None and body["roofline"]["bound"] == "memory"
