"""Problem directories in both forms, their configs, candidates and clear messages when they don't fit."""

import pytest

from trialtui.core.config import ConfigError, parse_config
from trialtui.core.problem import ProblemError
from trialtui.core.problem_dir import load_problem

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
        ({"target_speedup": -1.5}, "target_speedup must be a positive number"),
        ({"sol_target": 0}, "sol_target must be a fraction of speed-of-light"),
    ],
)
def test_bad_config_values_name_the_key(data, match):
    with pytest.raises(ConfigError, match=match):
        parse_config(data)


def test_every_unknown_config_key_is_named_with_the_key_it_is_closest_to():
    with pytest.raises(ConfigError) as caught:
        parse_config({"seed": 3, "max_trial": 10, "colour": 1, "watch": {"quiet": 100}})
    assert str(caught.value) == "unknown key in [watch]: 'quiet' (did you mean 'quiet_ms'?)"
    with pytest.raises(ConfigError) as caught:
        parse_config({"seed": 3, "max_trial": 10, "colour": 1})
    assert str(caught.value) == ("unknown keys in trialtui.toml: 'colour', 'max_trial' (did you mean 'max_trials'?), "
                                 "'seed' (did you mean 'seeds'?)")


def test_init_scaffolds_a_problem_that_loads(tmp_path):
    from trialtui.core.scaffold import ScaffoldError, scaffold

    written = scaffold(tmp_path / "new")
    assert {p.name for p in written} == {"reference.py", "kernel.py", "trialtui.toml"}
    p = load_problem(tmp_path / "new")
    assert p.test_cases == [{"batch_size": 64, "dim": 64}]
    with pytest.raises(ScaffoldError, match="already has"):
        scaffold(tmp_path / "new")


# --- KernelBench sizes as the files write them (issue 13, item 8) ---------------------------------

SIZES_REFERENCE = '''
import torch
import torch.nn as nn

batch_size = 16
in_features = out_features = 64
D, H, W = (8, 16, 16)
bias_shape = (out_features, 1, 1)
double = 2 * in_features
mode = "fan_in"


class Model(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return self.linear(x) + self.bias.view(1, -1)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, bias_shape]
'''


def test_chained_unpacked_and_tuple_constants_are_sizes():
    import ast

    from trialtui.core.problem import literal_sizes, size_constants

    tree = ast.parse(SIZES_REFERENCE)
    assert size_constants(tree) == {"batch_size": 16, "in_features": 64, "out_features": 64, "D": 8, "H": 16,
                                    "W": 16, "bias_shape": (64, 1, 1), "double": 128}
    assert size_constants(tree, {"out_features": 7, "in_features": 5})["bias_shape"] == (7, 1, 1)
    assert size_constants(tree, {"in_features": 5})["double"] == 10
    assert set(literal_sizes(tree)) == {"batch_size", "in_features", "out_features", "D", "H", "W"}


def test_a_name_rebound_to_something_else_is_no_longer_a_size():
    import ast

    from trialtui.core.problem import size_constants

    assert "n" not in size_constants(ast.parse("n = 4\nn = 'four'\n"))
    assert size_constants(ast.parse("h = 8\nn = 4\nn += h\n"), {"h": 1})["n"] == 5  # as the child re-runs it


def test_overrides_of_chained_and_tuple_sizes_load(tmp_path):
    root = write_problem(tmp_path / "p", reference=SIZES_REFERENCE,
                         config="[test_sizes]\nout_features = 8\nH = 4\nbias_shape = [8, 1, 1]\n")
    assert load_problem(root).test_cases == [{"out_features": 8, "H": 4, "bias_shape": [8, 1, 1]}]


@pytest.mark.parametrize("config, match", [
    ("[test_sizes]\nmode = 3\n", "defines but not as a size constant"),
    ("[test_sizes]\nModel = 3\n", "defines but not as a size constant"),
    ("[test_sizes]\nbias_shape = 3\n", "bias_shape is a list of 3 numbers"),
    ("[test_sizes]\nbatch_size = [1, 2]\n", "batch_size is a number"),
    ("[test_sizes]\nbatch_size = 'big'\n", "batch_size is a number"),
])
def test_overrides_that_are_not_sizes_are_refused_with_the_reason(tmp_path, config, match):
    root = write_problem(tmp_path / "p", reference=SIZES_REFERENCE, config=config)
    with pytest.raises(ProblemError, match=match):
        load_problem(root)


def test_init_from_a_kernelbench_file_writes_a_candidate_that_runs(tmp_path):
    """`super(Model, self).__init__()` must become `super(ModelNew, self)`; derived sizes follow."""
    torch = pytest.importorskip("torch")
    from trialtui.core.scaffold import scaffold
    from trialtui.runner.loader import Reference, load_module

    source = tmp_path / "76_Gemm_Add_ReLU.py"
    source.write_text(SIZES_REFERENCE)
    scaffold(tmp_path / "new", from_file=source)
    written = (tmp_path / "new" / "kernel.py").read_text()
    assert "super(ModelNew, self)" in written and "class ModelNew(nn.Module)" in written
    problem = load_problem(tmp_path / "new")
    case = problem.test_cases[0]
    assert "bias_shape" not in case  # derived: it follows out_features instead of being frozen
    reference = Reference(problem.job_spec(), "cpu")
    model = reference.model(case, 0)
    candidate = load_module(tmp_path / "new" / "kernel.py", "scaffolded_candidate").ModelNew(
        *reference.init_inputs(case))
    candidate.load_state_dict(model.state_dict())
    inputs = reference.make_inputs(case, 0)
    with torch.no_grad():
        assert torch.equal(candidate(*inputs), model(*inputs))
