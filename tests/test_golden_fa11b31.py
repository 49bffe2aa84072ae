"""What main at fa11b31 wrote still reads back the same and is answered in the same JSON (issue 35): its
store, `trials status|best|show --json`, `bench --json` and the MCP tools' answers, in
tests/fixtures/golden/fa11b31/ (its README says how they were made). Nothing here runs a job: the
store is read, and what the CLI and the MCP views answer from it is compared."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from trialtui.agent import views
from trialtui.cli.commands import cli
from trialtui.cli.trials import trials
from trialtui.core.problem_dir import load_problem
from trialtui.core.result import check_result
from trialtui.core.store import Store

GOLDEN = Path(__file__).parent / "fixtures" / "golden" / "fa11b31"
# The problem directory was a fresh temporary one: every path that names it is volatile.
WAS_ROOT = (GOLDEN / "problem_dir.txt").read_text().strip()
TRIAL_IDS = ("t1", "t2", "t3", "t4", "t5")


def golden(name: str) -> Any:
    return json.loads((GOLDEN / name).read_text())


def rooted(value: Any, root: Path) -> Any:
    """`value` with the problem directory's path, then's or now's, written as <root>: the one normalisation
    an answer read from the store needs (the store itself keeps the paths of fa11b31's run)."""
    if isinstance(value, str):
        return value.replace(WAS_ROOT, "<root>").replace(str(root), "<root>")
    if isinstance(value, dict):
        return {k: rooted(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [rooted(v, root) for v in value]
    return value


def timed(value: dict[str, Any], *keys: str) -> dict[str, Any]:
    """`value` with its `keys` checked to be numbers and written as <ms>: how long a check took this time."""
    assert all(isinstance(value[k], (int, float)) for k in keys), value
    return {**value, **{k: "<ms>" for k in keys}}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The problem directory fa11b31 ran in, with the store its headless run left."""
    where = tmp_path / "kb_add"
    shutil.copytree(GOLDEN / "problem", where)
    shutil.copytree(GOLDEN / "store", where / ".trialtui")
    return where


def test_every_trial_of_a_fa11b31_store_reads_back_the_same(root):
    written = golden("store/trials.json")["trials"]
    store = Store.open(root, writer=False)
    try:
        found = store.trials()
    finally:
        store.close()
    assert [t.id for t in found] == [doc["id"] for doc in written.values()] == list(TRIAL_IDS)
    for trial, doc in zip(found, written.values()):
        assert trial.state == doc["state"]
        assert trial.to_dict() == doc  # the result whole, and every other field


def test_a_fa11b31_store_written_again_keeps_every_other_record(root):
    written = golden("store/trials.json")["trials"]
    store = Store.open(root)
    try:
        store.update("t1", note="read back")
    finally:
        store.close()
    store = Store.open(root, writer=False)
    try:
        now = {t.id: t.to_dict() for t in store.trials()}
    finally:
        store.close()
    for doc in written.values():
        assert now[doc["id"]] == ({**doc, "note": "read back"} if doc["id"] == "t1" else doc)


@pytest.mark.parametrize("args, name", [
    (["trials", "status", "--json"], "trials_status.json"),
    (["trials", "best", "--json"], "trials_best.json"),
    *((["trials", "show", t, "--json"], f"trials_show_{t}.json") for t in TRIAL_IDS),
    (["validate", "add.py", "--json", "--no-compile"], "validate.json"),
    (["bench", "broken.py", "--json", "--device", "cpu"], "bench_invalid.json"),  # the static stage: no job
    (["bench", "cuda_add.py", "--json", "--device", "cpu"], "bench_needs_gpu.json"),  # refused before a job
])
def test_the_cli_answers_a_fa11b31_store_in_the_same_json(root, monkeypatch, args, name):
    monkeypatch.chdir(root)
    out = CliRunner().invoke(trials, args[1:]) if args[0] == "trials" else CliRunner().invoke(cli, args)
    assert out.exception is None or isinstance(out.exception, SystemExit), out.output
    now, was = json.loads(out.output), golden(name)
    if name == "validate.json":  # run now, not read from the store: its stages' times are this run's
        now, was = timed(now, "static_ms", "elapsed_ms"), timed(was, "static_ms", "elapsed_ms")
    assert rooted(now, root) == rooted(was, root)


@pytest.mark.parametrize("name", ["bench_correct.json", "bench_incorrect.json", "bench_invalid.json",
                                  "bench_needs_gpu.json"])
def test_fa11b31_bench_results_still_pass_the_schema(name):
    assert check_result(golden(name)) == golden(name)


def test_the_mcp_tools_answer_a_fa11b31_store_in_the_same_json(root):
    problem = load_problem(root)
    machine = views.machine_view("cpu", None)  # fa11b31's server ran where jobs run: torch and triton there
    store = Store.open(root, writer=False)
    try:
        trials, heads = store.trials(), store.heads
    finally:
        store.close()
    answers = {
        "problem": views.problem_view(problem, trials, "cpu", machine),
        "tree": views.tree_view(problem, trials, heads),
        "best": views.best_view(problem, trials, machine),
        **{f"result_{t.id}": views.result_view(problem, t, trials, machine, done=True) for t in trials},
    }
    for name, answer in answers.items():
        was = golden(f"mcp/{name}.json")
        assert not was["is_error"]
        assert rooted(answer, root) == rooted(was["structured"], root), name
