"""Where the problem's own check judges values (GPU MODE's check_implementation) and trialtui.toml sets no tolerance,
what an agent and a person read names that check, not trialtui's unused fp32 tolerances, and the dtype is the
inputs' own (generate_input's), not trialtui.toml's default."""

from __future__ import annotations

from conftest import as_result, write_problem
from test_bench_job import GM_REFERENCE, GM_TASK
from rich.style import Style
from rich.table import Table

from trialtui.agent.views import problem_view
from trialtui.core.config import Config
from trialtui.core.model import Trial
from trialtui.core.problem_dir import load_problem
from trialtui.tui.widgets.metrics_grid import MetricsGrid

MACHINE = {"runs_jobs": True, "gpu": False, "stop_when": None}


def test_an_agent_reads_the_judge_and_the_inputs_dtype_of_a_gpu_mode_problem(tmp_path):
    root = write_problem(tmp_path / "gm", reference=GM_REFERENCE)
    (root / "task.yml").write_text(GM_TASK)
    problem = load_problem(root)
    view = problem_view(problem, [], "cpu", MACHINE)
    assert view["tolerances"] == {"judged_by": "reference.py's check_implementation"}
    assert view["dtype"] == "as generate_input makes the inputs"
    ran = Trial("t1", "cand.py", "", 0.0, "correct", result=as_result({"state": "correct", "dtype": "float16"}))
    assert problem_view(problem, [ran], "cpu", MACHINE)["dtype"] == "float16"
    kb = load_problem(write_problem(tmp_path / "kb", config='dtype = "bfloat16"\natol = 0.05\n'))
    view = problem_view(kb, [], "cpu", MACHINE)
    assert view["dtype"] == "bfloat16" and view["tolerances"] == {"atol": 0.05, "rtol": 0.01}


def test_the_correctness_row_names_who_judged_the_values():
    def row(correctness):
        trial = Trial("t1", "cand.py", "", 0.0, "correct",
                      result=as_result({"state": "correct", "correctness": {"passed": True, "seeds": 2, **correctness}}))
        grid = Table()
        grid.add_column()
        grid.add_column()
        MetricsGrid(lambda var, **extra: Style(), "eager", Config())._correctness_rows(grid, trial)
        return str(grid.columns[1]._cells[0])

    assert "(judged by reference.py's check_implementation)" in row({"judged_by": "check_implementation"})
    assert "(atol 0.0001, rtol 0.0001)" in row({})
