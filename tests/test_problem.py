"""Problem directories in both forms, their configs, candidates and clear messages when they don't fit."""

import pytest

from trialtui.core.config import ConfigError, parse_config
from trialtui.core.problem import ProblemError, load_problem

from conftest import KB_GOOD, write_problem
from test_bench_job import GM_REFERENCE, GM_TASK


def test_kernelbench_problem_with_size_overrides(tmp_path):
    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD, "_scratch.py": "", "other.py": ""},
                         config="dtype = 'bf16'\n[test_sizes]\ndim = 16\n[bench_sizes]\nbatch_size = 4096\ndim = 8192\n")
    p = load_problem(root)
    assert p.form == "kernelbench" and p.entry_point == "ModelNew"
    assert p.config.dtype == "bfloat16" and p.config.tolerance == (1e-2, 1e-2)
    assert p.test_cases == [{"dim": 16}]
    assert p.bench_cases == [{"batch_size": 4096, "dim": 8192}]
    assert [c.name for c in p.candidates()] == ["kernel.py", "other.py"]


def test_sizes_the_reference_does_not_define_are_refused(tmp_path):
    root = write_problem(tmp_path / "p", config="[bench_sizes]\nseq_len = 4\n")
    with pytest.raises(ProblemError, match="seq_len"):
        load_problem(root)


def test_gpumode_problem_reads_task_yml(tmp_path):
    root = write_problem(tmp_path / "gm", reference=GM_REFERENCE)
    (root / "task.yml").write_text(GM_TASK)
    p = load_problem(root)
    assert p.form == "gpumode" and p.entry_point == "custom_kernel"
    assert p.test_cases == [{"rows": 4, "cols": 33, "seed": 1}]
    assert p.bench_cases == [{"rows": 4096, "cols": 4096, "seed": 2}]


def test_gpumode_without_task_yml_says_so(tmp_path):
    root = write_problem(tmp_path / "gm", reference=GM_REFERENCE)
    with pytest.raises(ProblemError, match="task.yml is missing"):
        load_problem(root)


def test_reference_without_get_inputs_names_what_is_missing(tmp_path):
    root = write_problem(tmp_path / "p", reference="class Model: pass\ndef get_init_inputs(): return []\n")
    with pytest.raises(ProblemError, match="missing get_inputs"):
        load_problem(root)


def test_directory_without_reference_explains_the_layout(tmp_path):
    with pytest.raises(ProblemError, match="trialtui init"):
        load_problem(tmp_path)


def test_exclude_patterns_and_private_names_are_not_candidates(tmp_path):
    root = write_problem(tmp_path / "p", files={"a.py": "", "scratch_1.py": "", ".hidden.py": ""},
                         config="exclude = ['scratch_*.py']\n")
    assert [c.name for c in load_problem(root).candidates()] == ["a.py"]


@pytest.mark.parametrize(
    "data, match",
    [
        ({"dtype": "fp8"}, "dtype"),
        ({"seeds": 0}, "seeds"),
        ({"baselines": ["triton"]}, "baselines"),
        ({"colour": 1}, "unknown key"),
        ({"profile": {"when": "sometimes"}}, "profile.when"),
        ({"arch": "hopper"}, "arch"),
    ],
)
def test_bad_config_values_name_the_key(data, match):
    with pytest.raises(ConfigError, match=match):
        parse_config(data)


def test_init_scaffolds_a_problem_that_loads(tmp_path):
    from trialtui.core.scaffold import ScaffoldError, scaffold

    written = scaffold(tmp_path / "new")
    assert {p.name for p in written} == {"reference.py", "kernel.py", "trialtui.toml"}
    p = load_problem(tmp_path / "new")
    assert p.test_cases == [{"batch_size": 64, "dim": 64}]
    with pytest.raises(ScaffoldError, match="already has"):
        scaffold(tmp_path / "new")
