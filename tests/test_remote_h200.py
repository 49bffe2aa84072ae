"""Issue 37, part 1, on the H200: the SSH executor against the local one on the same GPU, as
benches/gpu_remote.py measured it there (its remote.json, kept in tests/fixtures/gpu/h200-<date>/).

The run: an SSH server on 127.0.0.1 inside the GPU machine (asyncssh's); `trialtui bench`, `trialtui
watch` and `trialtui trials rerun` through it against the local `trialtui bench`; the profile job through
it; the connection cut mid-job; the TUI with the SSH executor. Skipped until that file is there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "gpu"
FOUND = sorted(FIXTURES.glob("h200-*/remote.json"))
PATH = FOUND[-1] if FOUND else None
TOLERANCE = 0.03
REMOTE = ("ssh_bench", "watch", "rerun")

pytestmark = pytest.mark.skipif(PATH is None, reason="no H200 run of benches/gpu_remote.py kept yet "
                                                    "(tests/fixtures/gpu/h200-<date>/remote.json)")


@pytest.fixture(scope="module")
def run() -> dict:
    return json.loads(PATH.read_text())


def result(run: dict, step: str) -> dict:
    found = (run["steps"].get(step) or {}).get("result")
    assert found, f"{step}: no result in {PATH} ({run['steps'].get(step)})"
    return found


def test_it_ran_on_an_h200_inside_its_budget_and_every_check_passed(run):
    assert run["env"]["device"] == "cuda" and "H200" in (run["env"]["gpu"] or ""), run["env"]
    assert run["wall_s"] <= run["budget_s"], f"{run['wall_s']} s against a budget of {run['budget_s']} s"
    assert not run["missing"], f"required steps not done: {run['missing']}"
    assert not run["failed"], {name: run["checks"][name] for name in run["failed"]}
    assert run["passed"]


@pytest.mark.parametrize("step", REMOTE)
def test_bench_watch_and_rerun_through_ssh_give_the_local_verdict_and_number(run, step):
    here, there = result(run, "local"), result(run, step)
    assert here["state"] == there["state"] == "correct", (here["message"], there["message"])
    assert set(here["flags"]) - {"tie"} == set(there["flags"]) - {"tie"}
    assert here["env"]["device"] == there["env"]["device"] == "cuda"
    ratio = there["median_us"] / here["median_us"]
    assert abs(ratio - 1) <= TOLERANCE, f"{step}: {there['median_us']:.1f} µs against local {here['median_us']:.1f} µs"
    for kind, speed in here["speedup"].items():
        assert abs(there["speedup"][kind] / speed - 1) <= TOLERANCE, (kind, speed, there["speedup"][kind])


@pytest.mark.parametrize("step", REMOTE)
def test_each_remote_result_names_the_host_its_gpu_and_the_executor(run, step):
    env = result(run, step)["env"]
    assert env["executor"] == run["server"]["url"]
    assert env["host"] == run["env"]["host"]
    assert env["gpu"] == run["env"]["gpu"]  # the GPU's name as read on the host


def test_the_host_said_which_gpus_it_has(run):
    hello = run["steps"]["profile"]["hello"]
    assert hello["device"] == "cuda" and hello["gpus"], hello
    assert all("H200" in g["name"] for g in hello["gpus"])
    assert all(slot.startswith("127.0.0.1:gpu") for slot in run["steps"]["profile"]["slots"])


def test_a_profile_comes_back_through_ssh(run):
    step = run["steps"]["profile"]
    assert step["profile"]["available"], step["profile"]
    assert step["profile"]["source"] in ("ncu", "activity"), step["profile"]  # measured there, not the analytic fallback
    assert any("profile-remote-check" in path for path in step["files_landed"]), step["files_landed"]


def test_a_cut_connection_gives_interrupted_then_a_result(run):
    step = run["steps"]["cut"]
    assert step["cut_happened"]
    states = step["states"]
    assert "interrupted" in states and states.index("interrupted") < len(states) - 1, states
    assert states[-1] == "correct" and step["result"]["state"] == "correct"
    assert step["reconnections"] == 1
    assert step["first_host_swept"]
    here = result(run, "local")["median_us"]
    assert abs(step["result"]["median_us"] / here - 1) <= TOLERANCE


def test_the_tui_names_the_host(run):
    step = run["steps"]["tui"]
    url = run["server"]["url"]
    assert step["where"] in step["status_bar"] and "127.0.0.1" in step["status_bar"], step["status_bar"]
    assert f"ran on {run['env']['host']} · {run['env']['gpu']} ({url})" in (step["ran_on_line"] or ""), step["ran_on_line"]


def test_a_cancel_through_ssh_cancels(run):
    step = run["steps"].get("cancel") or {}
    if "skipped" in step:
        pytest.skip(f"the cancel step did not run: {step['skipped']}")
    assert step["state"] == "cancelled", step


def test_ray_ran_or_the_run_says_why_not(run):
    ray = run.get("ray") or {}
    if ray.get("ran"):
        here, there = result(run, "local"), result(run, "ray")
        assert there["state"] == "correct" and abs(there["median_us"] / here["median_us"] - 1) <= TOLERANCE
    else:
        assert "64 MiB" in ray.get("why", ""), ray
